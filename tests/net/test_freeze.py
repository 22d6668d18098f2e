"""``net.freeze.take_events``: the events a frozen group takes out of the queue, and those it leaves."""

from helpers import US, config, flows_of, star_topo

from pwormhole.net.freeze import route_path, take_events
from pwormhole.net.packet import EV_ARRIVE_HOST, EV_ARRIVE_SWITCH, EV_NIC_WAKE, EV_TIMER, EV_TX_DONE, EV_WIRE, T_PFC
from pwormhole.run import Run
from pwormhole.scenario import Scenario


def test_take_events_takes_the_group_ports_and_flows_events_and_unwires():
    """An 8-to-1 incast with PFC mid-flight: the events ``take_events`` takes are exactly those
    of the ports and flows given (by the rule written out here), the rest stay pending, and
    none is lost (packets on wires become arrival events)."""
    cfg = config(enable_qcn=False, buffer_size_bytes=1_000_000)
    scn = Scenario("t", star_topo(9), flows_of([(s, 0, 2_000_000, 0) for s in range(1, 9)]), cfg)
    sim = Run(scn, 1, 1, None)
    sim.run(until_ps=20 * US)
    nodes, heap = sim.net.nodes, sim.lps[0].heap
    on_wires = [pkt for ev in heap.events() if ev[2] == EV_WIRE for pkt in ev[3].wire]
    wired = len(on_wires)
    assert any(pkt.kind == T_PFC for pkt in on_wires)
    before = sum(ev[2] != EV_WIRE for ev in heap.events()) + wired
    flows = {1, 2}
    ports: set = set()
    for f in flows:
        h = nodes[f + 1].flow_hash[f]
        ports |= set(route_path(nodes, f + 1, 0, h)) | set(route_path(nodes, 0, f + 1, h))

    def owned(ev):
        kind, target, arg = ev[2], ev[3], ev[4]
        if kind in (EV_TX_DONE, EV_NIC_WAKE):
            return target in ports
        if kind in (EV_ARRIVE_HOST, EV_ARRIVE_SWITCH):
            return target.ports[arg.inport] in ports if arg.kind == T_PFC else arg.fid in flows
        return kind == EV_TIMER and arg[0].fid in flows

    taken = take_events(heap, ports, flows)
    kept = heap.events()
    assert taken and all(owned(ev) for ev in taken) and not any(owned(ev) for ev in kept)
    assert any(ev[2] != EV_TIMER for ev in taken)
    assert any(ev[2] == EV_ARRIVE_HOST and ev[4].kind == T_PFC for ev in taken)
    assert len(taken) + len(kept) == before and not any(ev[2] == EV_WIRE for ev in kept)
