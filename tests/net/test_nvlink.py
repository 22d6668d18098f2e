"""NVLink in packet mode: no end-to-end congestion control (line rate, PFC backpressure at
the NVSwitch, no ECN, no INT), and ``nvlink_cc="nic"`` (the NIC's CC also on NVLink)."""

import pytest
from helpers import config, flows_of

from pwormhole.accel.config import AccelConfig
from pwormhole.config import LinkDown
from pwormhole.errors import InputError
from pwormhole.net.build import Network
from pwormhole.run import Run
from pwormhole.scenario import Scenario, topology_from_arg, training_scenario
from pwormhole.topology.model import Link, Topology
from pwormhole.topology.routing import adjacency, next_hops, nic_switch
from pwormhole.workload.models import build_model

G = 10**9
NVLINK_BPS = 2_880_000_000_000  # the rail-optimized server's default NVLink rate
DELAY_PS = 25_000  # its NVLink delay (host -> NVSwitch and NVSwitch -> host)


def tx_ps(wire_bytes: int) -> int:
    """Serialization at the NVLink rate, rounded up to a ps (as ports do)."""
    return -(-wire_bytes * 8_000_000_000_000 // NVLINK_BPS)


def packet_run(specs, cc: str, nvlink_cc: str = "none"):
    topo = topology_from_arg("rail-optimized:gpus=8")
    cfg = config(cc, nvlink_cc=nvlink_cc)
    cfg.fill_k_maps({ln.rate_bps for ln in topo.links})
    r = Run(Scenario("t", topo, flows_of(specs), cfg)).run()
    return r, [r.finish_ps[i] - r.start_ps[i] for i in range(len(specs))]


@pytest.mark.parametrize("cc", ["dcqcn", "hpcc"])
def test_one_nvlink_flow_at_line_rate(cc):
    """262,144 bytes from GPU 0 to GPU 1: 262 packets of 1,048 wire bytes (48-byte header, no
    INT header even under HPCC) back to back, the last of 192 bytes waits at the NVSwitch for
    the one before it, then the 60-byte ACK (no INT) comes back over both hops."""
    r, (fct,) = packet_run([(0, 1, 262_144, 0)], cc)
    full, last, ack = tx_ps(1048), tx_ps(192), tx_ps(60)
    last_leaves_nvswitch = DELAY_PS + 263 * full  # right behind packet 262, which left at 262 x full
    at_dst = last_leaves_nvswitch + last + DELAY_PS
    assert fct == at_dst + 2 * (ack + DELAY_PS) == 866_724
    c = r.counters()
    assert c["ecn_marks"] == c["cnps"] == c["drops"] == c["pfc_pauses"] == 0


@pytest.mark.parametrize("cc", ["dcqcn", "hpcc"])
def test_ring_step_on_nvlink(cc):
    """A TP ring step over 8 GPUs (each sends 262,144 bytes to the next): each NIC port to the
    NVSwitch also carries the 60-byte ACKs of the flow it receives, so every flow takes 262
    full packets plus 262 ACKs of the neighbour's flow on its first hop, then the lone flow's
    tail: the same FCT for all 8, under either CC."""
    _, fcts = packet_run([(i, (i + 1) % 8, 262_144, 0) for i in range(8)], cc)
    full, last, ack = tx_ps(1048), tx_ps(192), tx_ps(60)
    by_hand = 262 * (full + ack) + DELAY_PS + full + last + DELAY_PS + 2 * (ack + DELAY_PS)
    assert len(set(fcts)) == 1
    assert abs(fcts[0] - by_hand) <= 2 * full  # where the last ACKs fall among the data packets
    assert fcts[0] == 907_472


@pytest.mark.parametrize("cc", ["dcqcn", "hpcc"])
def test_incast_on_one_nvswitch_shares_the_port_without_loss(cc):
    """7-to-1 incast of 8 MB each into GPU 0: 56 MB do not fit the NVSwitch's 32 MiB buffer,
    so it pauses its ingress ports (PFC) instead of dropping; every flow gets a seventh of the
    port and ends within 20 packet times of the port's drain time (56,000 packets of 1,048
    bytes: 163.072 us), plus the last packet's hop and its ACK's way back."""
    r, fcts = packet_run([(i, 0, 8_000_000, 0) for i in range(1, 8)], cc)
    full = tx_ps(1048)
    drain_ps = 56_000 * full
    assert drain_ps == 163_072_000
    for fct in fcts:
        assert drain_ps - 20 * full < fct < drain_ps + DELAY_PS + 2 * (tx_ps(60) + DELAY_PS) + 20 * full
    c = r.counters()
    assert c["drops"] == c["lost_packets"] == c["ecn_marks"] == c["cnps"] == 0
    assert c["pfc_pauses"] > 0 and c["bytes_delivered"] == 56_000_000


def test_nic_cc_on_nvlink_is_kept_as_an_option():
    """``nvlink_cc="nic"``: HPCC's INT headers and window also on NVLink (SimAI's choice): the
    lone flow carries 42 more header bytes per packet and the incast shares unevenly."""
    _, (lone,) = packet_run([(0, 1, 262_144, 0)], "hpcc", "nic")
    assert lone == 936_659  # 90-byte headers: 262 x tx(1090) + ... (vs 866,724 without CC)
    _, fcts = packet_run([(i, 0, 8_000_000, 0) for i in range(1, 8)], "hpcc", "nic")
    assert max(fcts) - min(fcts) > 50_000_000  # HPCC's windows, not fair shares
    _, same = packet_run([(i, 0, 8_000_000, 0) for i in range(1, 8)], "dcqcn", "nic")
    assert max(same) - min(same) < 100_000  # DCQCN never marked: the window keeps the queue short


@pytest.mark.parametrize("cc", ["dcqcn", "hpcc"])
def test_nvlink_down_moves_its_flows_to_the_nic_cc(cc):
    """GPU 0's NVLink fails 2 us into a 4 MB flow to GPU 1 (``LINK_DOWN``): the QP moves to the
    NIC port and from then on runs the NIC's CC (window, INT header under HPCC); Wormhole mode
    (NVLink as packets: rates do not model failures) lets it join the NIC groups and agrees
    with packet mode."""
    topo = topology_from_arg("rail-optimized:gpus=8")
    cfg = config(cc, link_down=(LinkDown(2_000_000, 0, 8, "LINK_DOWN"),))  # host 0 - its NVSwitch (node 8)
    cfg.fill_k_maps({ln.rate_bps for ln in topo.links})
    flows = flows_of([(0, 1, 4_000_000, 0)])
    mid = Run(Scenario("t", topo, flows, cfg)).run(until_ps=4_000_000)
    qp = mid.net.nodes[0].sqp[0]
    assert qp.port.peer.node_id == 9 and not qp.port.cc_off  # the NIC's leaf switch
    assert (qp.dcqcn, qp.hpcc) == ((True, False) if cc == "dcqcn" else (False, True))
    assert qp.hdr_bytes == mid.net.nodes[0].hdr_bytes and qp.win_bytes > 0
    assert qp.max_rate_bps == qp.port.rate_bps == 200_000_000_000  # the NIC's line rate, not NVLink's
    ref = Run(Scenario("t", topo, flows, cfg)).run()
    fast = Run(Scenario("t", topo, flows, cfg), accel=AccelConfig()).run()
    assert fast.accel.nvlink_model == "packets" and not fast.accel.ungrouped
    assert ref.complete and fast.complete
    a, b = ref.finish_ps[0] - ref.start_ps[0], fast.finish_ps[0] - fast.start_ps[0]
    assert abs(b - a) / a < 0.01


def test_nvlink_flags_one_answer_per_host_pair():
    """A flow is on NVLink when both its hosts are in one server (gpt-350m, TP 8 x DP 2 on two
    servers of 8 GPUs: the TP rings inside them, the DP rings across); decided per host pair, the
    same as flow by flow."""
    scn = training_scenario(build_model("gpt-350m", 16, tp=8, layers=1), topology_from_arg("rail-optimized:gpus=16"))
    net = Network(scn.topology, scn.flows, scn.config, dag=scn.dag)
    flags = net.nvlink_flags()
    server = {h: g // 8 for h, g in scn.dag.gpu_of_host.items()}
    assert flags == [server[f.src] == server[f.dst] for f in scn.flows]
    assert 0 < sum(flags) < len(flags)
    assert net.nvlink_flags(scn.host_pairs()) == flags


def test_a_gpu_stores_the_routes_to_its_nvswitch_peers_only():
    """Every GPU of 4 servers x 8 sends to every other (2 NVSwitches a server): each GPU's table holds
    its 7 NVSwitch peers' routes (both NVSwitches), every other destination leaves by its NIC (a
    miss), and every node's ports toward every GPU are those of the topology's ECMP next hops."""
    topo = topology_from_arg("rail-optimized:gpus=32,nvswitches=2")
    gpus = list(range(32))
    flows = flows_of([(a, b, 1000, 0) for a in gpus for b in gpus if a != b])
    cfg = config("dcqcn")
    cfg.fill_k_maps({ln.rate_bps for ln in topo.links})
    net = Network(topo, flows, cfg)
    adj = adjacency(topo)
    for dst in gpus:
        hops = next_hops(topo, adj, dst)
        for u, ks in hops.items():
            assert net.nodes[u].routes[dst] == [net.nodes[u].ports[k] for k in ks], (u, dst)
            assert net.hop_choices(u, dst) is not None and list(net.hop_choices(u, dst)) == net.nodes[u].routes[dst]
    for g in gpus:
        routes = net.nodes[g].routes
        assert sorted(routes) == [h for h in gpus if h != g and h // 8 == g // 8]
        assert [p.peer.node_id for p in routes[(g + 8) % 32]] == [nic_switch(topo, adj, g)]


def test_a_gpu_cut_from_its_nic_switch_reaches_its_nvswitch_peers_only():
    """GPU 0's NIC link (to its rail switch) fails on 2 servers x 8 GPUs: its table becomes a full one
    again, its NVSwitch peers keep their NVLink route, every other GPU is dropped (no route, no
    choice), and every other node's routes stay those of the topology without the link; a GPU with
    no path to a host at all is refused at build."""
    topo = topology_from_arg("rail-optimized:gpus=16")
    cfg = config("dcqcn")
    cfg.fill_k_maps({ln.rate_bps for ln in topo.links})
    gpus = list(range(16))
    net = Network(topo, flows_of([(a, b, 1000, 0) for a in gpus for b in gpus if a != b]), cfg)
    adj = adjacency(topo)
    rail = nic_switch(topo, adj, 0)
    assert net.fail_link(0, rail, 0)
    down = {li for li, ln in enumerate(topo.links) if {ln.a, ln.b} == {0, rail}}
    for dst in gpus:
        hops = next_hops(topo, adj, dst, down)
        for u in range(topo.n_nodes):
            if u != dst:
                want = [net.nodes[u].ports[k] for k in hops[u]] if hops.get(u) else None
                assert net.hop_choices(u, dst) == want, (u, dst)
    assert [net._reaches(0, g) for g in gpus[1:]] == [g < 8 for g in gpus[1:]]
    assert net.hop_choices(0, 9) is None and net.nodes[0].routes[9] is net.nodes[0].routes.drop
    assert net.no_path == {f.flow_id for f in net.flows if 0 in (f.src, f.dst) and max(f.src, f.dst) >= 8}
    # GPUs 0 and 1 share NVSwitch 4 and 2 and 3 NVSwitch 5; the NICs of 0, 2 and 3 on switch 6, GPU 1's
    # on switch 7, which nothing else reaches: 1 talks to 0 only
    links = [Link(g, 6, 100 * G, 1000 * 1000) for g in (0, 2, 3)] + [Link(1, 7, 100 * G, 1000 * 1000)]
    island = Topology(8, frozenset({4, 5, 6, 7}), links + [Link(g, 4 + g // 2, 900 * G, 25_000) for g in range(4)],
                      nvswitches=frozenset({4, 5}), gpus_per_server=2)
    cfg.fill_k_maps({ln.rate_bps for ln in island.links})
    assert Network(island, flows_of([(1, 0, 1000, 0), (0, 1, 1000, 0)]), cfg).hop_choices(1, 0)
    with pytest.raises(InputError, match="unreachable"):
        Network(island, flows_of([(1, 0, 1000, 0), (2, 1, 1000, 0)]), cfg)
