"""Packet-level engine: hand-computed timings, fairness, PFC, loss, conservation, determinism."""

import math

import pytest
from helpers import G100, US, config, flows_of, line_topo, run, star_topo
from hypothesis import given
from hypothesis import strategies as st

from pwormhole.net import device
from pwormhole.net.build import Network
from pwormhole.net.device import node_rng, ns3_tx_ps
from pwormhole.run import Run
from pwormhole.scenario import Scenario
from pwormhole.topology.model import Link, Topology
from pwormhole.units import serialization_ps


def test_serialization_formula():
    assert serialization_ps(1048, G100) == 83_840
    assert serialization_ps(1, 3) == -(-8 * 10**12 // 3)  # ceil


def ns3_reference_ps(size_bytes, rate_bps):
    """ns-3's Seconds(DataRate::CalculateTxTime(bytes)) in Python integers: the double's fraction
    truncated to 64 bits (int64x64_t(double)), times 10^9, integer part (Time(int64x64_t))."""
    d = size_bytes * 8 / rate_bps
    hi = math.floor(d)
    a = (hi << 64) + int((d - hi) * 2**64)
    return (a * 10**9 >> 64) * 1000


def test_ns3_serialization_is_whole_ns_rounded_down():
    assert ns3_tx_ps(1048, G100) == 83_000  # 83.84 ns
    assert ns3_tx_ps(1090, G100) == 87_000  # 87.2 ns
    assert ns3_tx_ps(60, G100) == 4_000  # 4.8 ns
    # a whole number of ns is usually 1 ns short in ns-3: 8e-8 as a double is below 80 ns
    assert ns3_tx_ps(1000, G100) == 79_000
    assert ns3_tx_ps(1000, 50 * 10**9) == 159_000
    assert ns3_tx_ps(12_825, 25 * 10**9) == 4_104_000  # exact there (checked against ns-3 itself)


@given(st.integers(1, 20_000), st.integers(10**6, 4 * 10**11))
def test_ns3_serialization_matches_ns3s_arithmetic(size_bytes, rate_bps):
    assert ns3_tx_ps(size_bytes, rate_bps) == ns3_reference_ps(size_bytes, rate_bps)


def test_three_hop_flow_exact_in_ns3_time():
    # as below with ns-3's whole ns: data 83 ns per hop, ACK 4 ns (60 B at 100 Gb/s: 4.8 ns)
    r = run(line_topo(), [(0, 1, 10_000, 0)], config("dcqcn", ns3_time=True))
    assert r.finish_ps[0] == 12 * 83_000 + 3 * US + 3 * (4_000 + US)


def test_one_packet_one_link_exact():
    # host 0 -- host 1, one 1000-byte packet under DCQCN (no INT):
    # data 1048 wire bytes: 83,840 ps + 1 us; ACK 60 bytes: 4,800 ps + 1 us.
    topo = Topology(2, frozenset(), [Link(0, 1, G100, US)])
    r = run(topo, [(0, 1, 1000, 5 * US)], config("dcqcn"))
    assert r.complete
    assert r.finish_ps[0] - 5 * US == (83_840 + US) + (4_800 + US)


def test_three_hop_flow_exact_dcqcn():
    # 10 packets back to back over 3 store-and-forward hops with no queueing:
    # the last packet arrives at 10*tx + 2*tx + 3 us, its ACK takes 3 * (4,800 + 1 us).
    r = run(line_topo(), [(0, 1, 10_000, 0)], config("dcqcn"))
    tx = 83_840
    assert r.finish_ps[0] == 12 * tx + 3 * US + 3 * (4_800 + US)


def test_three_hop_flow_exact_hpcc():
    # HPCC adds 42 INT bytes to data (1090 B: 87,200 ps) and ACKs are 88 B (7,040 ps).
    r = run(line_topo(), [(0, 1, 10_000, 0)], config("hpcc"))
    tx = 87_200
    assert r.finish_ps[0] == 12 * tx + 3 * US + 3 * (7_040 + US)


@pytest.mark.parametrize("cc,var_win", [("dcqcn", True), ("hpcc", False)])
def test_two_flows_reach_fair_shares(cc, var_win):
    # flow 0 starts alone, flow 1 joins 300 us later; over [1.5 ms, 2.5 ms]
    # DCQCN gives each half of the 100 Gbps bottleneck (host 2's downlink) within 5%.
    # HPCC scales both rates by one factor per update and only RATE_AI pulls them
    # together, so two periodic senders lock into a split set by their phase (42.2 /
    # 45.0 Gbps here, 46.0 / 41.2 with flow 1 7 ns later; HPCC's own ns-3 finishes its
    # S1 pair 1 ms apart, bench/RESULTS.md): it holds the port at U_TARGET instead,
    # 0.95 x 100 Gbps x 1000 / 1090 payload = 87.16 Gbps, and starves neither flow.
    topo = star_topo(3)
    specs = [(0, 2, 50_000_000, 0), (1, 2, 50_000_000, 300 * US)]
    cfg = config(cc, var_win=var_win)
    t1, t2 = 1500 * US, 2500 * US
    a = run(topo, specs, cfg, until_ps=t1)
    b = run(topo, specs, cfg, until_ps=t2)
    got = []
    for fid in (0, 1):
        rx1 = a.net.nodes[2].rx[fid][0]
        rx2 = b.net.nodes[2].rx[fid][0]
        got.append((rx2 - rx1) * 8 / ((t2 - t1) / 1e12))
    mean = sum(got) / 2
    if cc == "dcqcn":
        assert abs(got[0] - got[1]) / mean < 0.05, got
    else:
        assert abs(sum(got) - 0.95 * G100 * 1000 / 1090) < 0.005 * G100, got  # 87.256 Gbps
        assert abs(got[0] - got[1]) / mean < 0.1, got
    # together they keep the bottleneck busy (payload share of the wire is 0.954 / 0.917)
    assert sum(got) > 0.85 * G100


def _incast(cfg, buffer_bytes, n=8):
    cfg.buffer_size_bytes = buffer_bytes
    topo = star_topo(n + 1)
    specs = [(s, 0, 2_000_000, 0) for s in range(1, n + 1)]
    return run(topo, specs, cfg)


def test_incast_with_pfc_drops_nothing_and_pauses():
    cfg = config("dcqcn", has_win=False)
    r = _incast(cfg, 1 * 2**20)
    c = r.counters()
    assert r.complete
    assert c["drops"] == 0 and c["lost_packets"] == 0
    assert c["pfc_pauses"] > 0
    assert c["bytes_sent"] == c["bytes_delivered"] == 8 * 2_000_000
    # the pauses were received by senders (hosts 1..8), never by the receiver
    recs = []
    scn = Scenario("t", star_topo(9), flows_of([(s, 0, 2_000_000, 0) for s in range(1, 9)]), cfg)
    Run(scn).run(on_pfc=recs.extend)
    paused = {rec[1] for rec in recs if rec[4] == 1}
    assert paused and paused <= set(range(1, 9))
    assert sum(1 for rec in recs if rec[4] == 1) == c["pfc_pauses"]
    _assert_buffers_drained(r)


def _assert_buffers_drained(r):
    """After a complete run every switch counter is back to zero and every pause was lifted."""
    for sw in (nd for nd in r.net.nodes if nd.is_switch):
        assert sw.shared_used == 0 and sw.used_bytes == 0
        for p in sw.ports:
            assert p.qbytes == 0 and not any(p.qs)
            assert list(p.in_bytes) == list(p.hdrm_bytes) == list(p.eg_bytes) == [0] * 8
            assert not any(p.pfc_sent)
    for nd in r.net.nodes:
        for p in nd.ports:
            assert not any(p.paused)


def test_incast_without_pfc_counts_drops_and_recovers():
    cfg = config("dcqcn", has_win=False, enable_pfc=False)
    r = _incast(cfg, 200_000)
    c = r.counters()
    assert c["drops"] > 0
    assert r.complete, "go-back-N must recover every drop"
    assert c["bytes_delivered"] == 8 * 2_000_000
    assert c["retransmitted_bytes"] > 0
    _assert_buffers_drained(r)


def test_conservation_on_fat_tree_mix():
    from pwormhole.run import Run
    from pwormhole.scenario import fat_tree_mix_scenario
    scn = fat_tree_mix_scenario()
    r = Run(scn).run()
    c = r.counters()
    assert r.complete
    total = sum(f.size_bytes for f in scn.flows)
    assert c["bytes_sent"] == c["bytes_delivered"] == total
    for f in scn.flows:
        assert r.net.nodes[f.dst].rx[f.flow_id][0] == f.size_bytes
    _assert_buffers_drained(r)


@pytest.mark.slow
@pytest.mark.parametrize("n_lps", [2, 3])
def test_same_answer_on_any_number_of_lps(n_lps):
    from pwormhole.run import Run
    from pwormhole.scenario import fat_tree_mix_scenario
    one = Run(fat_tree_mix_scenario()).run()
    many = Run(fat_tree_mix_scenario(), n_lps=n_lps).run()
    assert one.finish_ps == many.finish_ps
    assert one.events == many.events


def test_handler_objects_and_plain_methods_give_one_answer(monkeypatch):
    """The compiled engine's NetHandler table and the pure engine's unbound methods run the
    same events (on a fat tree with PFC, ECN and ECMP) to the same finish times."""
    from pwormhole import run as run_module
    from pwormhole.net import dispatch
    from pwormhole.run import Run
    from pwormhole.scenario import fat_tree_mix_scenario
    runs = {}
    for objects in (True, False):
        table = dispatch.handler_table(objects=objects)
        assert all(isinstance(h, dispatch.NetHandler) == objects for h in table if h is not None)
        monkeypatch.setattr(run_module, "handler_table", lambda table=table: table)
        runs[objects] = Run(fat_tree_mix_scenario()).run()
    with_objects, plain = runs[True], runs[False]
    assert with_objects.complete and plain.complete
    assert with_objects.finish_ps == plain.finish_ps and with_objects.events == plain.events > 10_000


def test_ecmp_index_is_the_big_integer_formula():
    """ecmp_index (by 32-bit halves) against (((h ^ salt) * ECMP_MIX) >> 40) % n."""
    import random

    from pwormhole.net.device import ECMP_MIX, ecmp_index
    rng = random.Random(3)
    edges = [0, 1, (1 << 32) - 1, 1 << 32, (1 << 63) - 1]
    cases = [(h, s, n) for h in edges for s in edges[:-1] + [(1 << 62) - 1] for n in (1, 2, 3, 4, 7, 64)]
    cases += [(rng.getrandbits(63), rng.getrandbits(62), rng.randint(1, 1024)) for _ in range(20_000)]
    for h, s, n in cases:
        assert ecmp_index(h, s, n) == (((h ^ s) * ECMP_MIX) >> 40) % n, (h, s, n)
    assert ecmp_index(0x1234_5678_9ABC_DEF0, 0x0FED_CBA9_8765_4321, 5) == 0


def test_switches_whose_pfc_headroom_leaves_little_shared_buffer_are_named():
    """A 100 Gb/s port with 1 us of cable holds 3 x rate x delay = 37,500 bytes of PFC headroom
    (HPCC's third.cc) and 4 KB of reserve: a 64-port star keeps 2,662,144 bytes, so with a 3 MB
    buffer it keeps under a quarter shared (named), with 32 MB it does not; without PFC nothing
    is named."""
    scn = Scenario("t", star_topo(64), flows_of([(0, 1, 1000, 0)]), config(buffer_size_bytes=3 * 2**20))
    net = Run(scn).net
    assert net.pfc_starved(0.25) == [(64, 64, 64 * (37_500 + 4096), 3 * 2**20)]
    assert Run(Scenario("t", star_topo(64), flows_of([(0, 1, 1000, 0)]), config())).net.pfc_starved(0.25) == []
    scn = Scenario("t", star_topo(64), flows_of([(0, 1, 1000, 0)]),
                   config(buffer_size_bytes=3 * 2**20, enable_pfc=False))
    assert Run(scn).net.pfc_starved(0.25) == []


def test_flow_ids_must_be_their_positions():
    """The network keeps one list of flow hashes indexed by flow id: a flow list whose ids are not its
    positions is refused, naming the first flow out of place."""
    flows = flows_of([(0, 1, 1000, 0), (1, 0, 1000, 0)])
    with pytest.raises(ValueError, match="flow 1 has id 5"):
        Network(star_topo(2), [flows[0], flows[1]._replace(flow_id=5)], config())


def test_node_salt_and_draws_come_from_its_stream(monkeypatch):
    """A node's ECMP salt is the first 62 bits of its random stream (seeded from the run's seed and
    its id; kept for the process's other networks) and its draws (ECN marking between the
    thresholds, link errors) the numbers after them; the stream is made at the first draw."""
    topo = star_topo(3)
    cfg = config()
    cfg.fill_k_maps({ln.rate_bps for ln in topo.links})
    a = Network(topo, [], cfg, seed=7)
    monkeypatch.setattr(device, "_SALTS", {})  # (the second network's salts made afresh)
    b = Network(topo, [], cfg, seed=7)
    for node in a.nodes:
        ref = node_rng(7, node.node_id)
        assert node.salt == ref.getrandbits(62) == b.nodes[node.node_id].salt
        assert node.rng is None
        assert [node.draw() for _ in range(3)] == [ref.random() for _ in range(3)]
    assert a.nodes[0].salt != Network(topo, [], cfg, seed=8).nodes[0].salt
