"""What acceleration needs of a network's pending events to freeze and wake a conflict group:
the events of a set of ports and flows taken out of a heap (:func:`take_events`), packets moved
by a fast-forward (:func:`shift_packets`), the timers of flows whose packets drain
(:func:`take_timers`), a flow's path as its packets take it
(:func:`route_path`), and wires turned into events of their own (:func:`unwire`, also before a
link failure edits a heap). Compiled with the engine; nothing here decides when to freeze.
"""

from __future__ import annotations

from ..engine.events import EventFilter
from . import cc
from .packet import EV_ARRIVE_HOST, EV_ARRIVE_SWITCH, EV_NIC_WAKE, EV_TIMER, EV_TX_DONE, EV_WIRE, T_PFC

_NONE: frozenset = frozenset()


def unwire(heap) -> None:
    """Give every packet on a wire of ``heap``'s ports (an EventQueue) its own arrival event
    (the form in which whoever scans or edits the pending events finds them); the wires empty.
    :func:`take_events` of no port and no flow."""
    take_events(heap, _NONE, _NONE)


class GroupEvents(EventFilter):
    """The pending events of a set of ``ports`` (Port) and ``flows`` (flow ids): the ports'
    serializer and NIC wakes, the flows' packets and timers, and PFC frames arriving at the
    ports; also every wire's first-packet event (:func:`take_events` unwires them)."""

    __slots__ = ("ports", "flows")

    def __init__(self, ports, flows) -> None:
        self.ports = ports
        self.flows = flows

    def owns(self, kind: int, target, arg) -> bool:
        if kind == EV_TX_DONE or kind == EV_NIC_WAKE:
            return target in self.ports
        if kind == EV_ARRIVE_HOST or kind == EV_ARRIVE_SWITCH:
            pkt = arg
            if pkt.kind == T_PFC:
                return target.ports[pkt.inport] in self.ports
            return pkt.fid in self.flows
        if kind == EV_TIMER:
            return arg[0].fid in self.flows
        return kind == EV_WIRE


class FlowTimers(EventFilter):
    """The pending QP timers (DCQCN's, the RTO) of a set of ``flows`` (flow ids)."""

    __slots__ = ("flows",)

    def __init__(self, flows) -> None:
        self.flows = flows

    def owns(self, kind: int, target, arg) -> bool:
        return kind == EV_TIMER and arg[0].fid in self.flows


def take_timers(heap, flows) -> list:
    """Take out of ``heap`` (an EventQueue) the pending QP timers of ``flows`` (:class:`FlowTimers`)
    and return them; their packets stay pending."""
    return heap.take(FlowTimers(flows))


def route_path(nodes, src: int, dst: int, h: int) -> list:
    """The egress ports a packet of ECMP hash ``h`` crosses from node ``src`` to ``dst``
    (the choices the per-packet path makes)."""
    node = nodes[src]
    out = []
    while node.node_id != dst:
        port = node.pick_port(dst, h)
        out.append(port)
        node = port.peer
        if len(out) > 64:
            raise RuntimeError(f"routing loop from {src} to {dst}")
    return out


def shift_packets(packets: list, advance_bytes: dict, d_ps: int, stamped: bool, hop_adv_bytes: dict) -> None:
    """Packets of flows fast-forwarded by ``d_ps`` (a wake): each but PFC frames moves by its flow's
    ``advance_bytes``, its send time by ``d_ps`` when ``stamped`` (TIMELY), and each list of INT records,
    once, to ``d_ps`` later with its hops ``hop_adv_bytes[fid]`` bytes further (:func:`cc.hpcc_shift_int`)."""
    seen_int: set = set()
    for pkt in packets:
        if pkt.kind == T_PFC:
            continue
        fid = pkt.fid
        pkt.seq += advance_bytes.get(fid, 0)
        if stamped:  # its send time: it was sent d later in the skipped run
            pkt.sent_ps += d_ps
        hops = pkt.int_hops
        if hops and id(hops) not in seen_int:
            seen_int.add(id(hops))
            hops[:] = cc.hpcc_shift_int(hops, d_ps, hop_adv_bytes[fid])


def take_events(heap, ports, flows) -> list:
    """Take out of ``heap`` (an EventQueue) the pending events of ``ports`` and ``flows``
    (:class:`GroupEvents`) and return them (in no particular order); the others stay pending.
    Packets on wires get arrival events of their own, taken or left pending by the same rule."""
    owner = GroupEvents(ports, flows)
    out = []
    for ev in heap.take(owner):
        if ev[2] != EV_WIRE:
            out.append(ev)
            continue
        port = ev[3]
        kind = port.arrive_kind
        for pkt in port.wire:
            if owner.owns(kind, port.peer, pkt):
                out.append((pkt.arrive_ps, pkt.arrive_key, kind, port.peer, pkt))
            else:
                heap.push(pkt.arrive_ps, pkt.arrive_key, kind, port.peer, pkt)
        port.wire.clear()
    return out
