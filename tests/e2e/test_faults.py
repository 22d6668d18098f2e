"""Inputs that made HPCC ns-3 / SimAI / ASTRA-sim users see hangs,
crashes, silent wrong answers or memory blow-ups. Each case asserts the right
value (a hand-computed time, a count, a conservation law) or a clear one-line
error; inputs are generated here, scaled down where the case allows.
"""

from __future__ import annotations

import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import tracemalloc
from fractions import Fraction
from pathlib import Path

import pytest
from helpers import G100, ROOT, US, config, flows_of, run, star_topo
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pwormhole import compiled
from pwormhole.engine.events import EventQueue
from pwormhole.errors import InputError
from pwormhole.inputs.hpcc_config import read_hpcc_config
from pwormhole.net import cc
from pwormhole.net.build import Network
from pwormhole.net.device import ECMP_MIX
from pwormhole.net.host import SendQP
from pwormhole.net.switch import Switch
from pwormhole.run import Run
from pwormhole.scenario import Scenario, from_hpcc_config, number_sports
from pwormhole.simulate import simulate
from pwormhole.standalone import StandaloneFct
from pwormhole.topology.hpcc import read_hpcc_topology
from pwormhole.topology.model import Link, Topology
from pwormhole.workload.flows import Flow
from pwormhole.workload.hpcc_flows import read_hpcc_flows, read_hpcc_trace

MIX = ROOT / "tests" / "data" / "hpcc" / "mix"  # byte copies of HPCC's simulation/mix (test_readers checks)

DATA_WIRE = 1048  # 1000 B payload + 48 B headers (DCQCN, no INT)
TX_1000 = 83_840  # ps to serialize DATA_WIRE at 100 Gbps
ACK_TX = 4_800  # ps for a 60 B ACK at 100 Gbps


def _drained(r) -> None:
    """A finished lossless run leaves every switch buffer empty and no priority paused."""
    for nd in r.net.nodes:
        for p in nd.ports:
            assert not any(p.paused)
        if nd.is_switch:
            assert nd.shared_used == 0 and nd.used_bytes == 0


# -- unwritable --out ---------------------------------------------------------

@pytest.mark.parametrize("where", ["under_file", "is_file", "proc"])
def test_unwritable_out_is_one_line_exit_2_before_simulating(tmp_path, where):
    blocker = tmp_path / "regular-file"
    blocker.write_text("x")
    out = {"under_file": str(blocker / "out"), "is_file": str(blocker), "proc": "/proc/pwormhole-x/out"}[where]
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    p = subprocess.run([sys.executable, "-m", "pwormhole", "run", "--out", out, "--no-progress"],
                       cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert p.returncode == 2
    lines = p.stderr.splitlines()
    assert len(lines) == 1, p.stderr
    assert lines[0].startswith("pwormhole: error: cannot write output folder "), lines[0]
    assert repr(out) in lines[0]
    assert "Traceback" not in p.stderr
    assert p.stdout == ""  # no summary: nothing was simulated
    assert blocker.read_text() == "x"


# -- two priorities on one NIC, incast on one ------------------------------------

def test_pfc_pauses_only_the_incast_priority(monkeypatch):
    # Hosts 1..8 send 1 MB on pg 3 into host 0 (1 MiB switch buffer: PFC
    # engages); host 1 also sends 1 MB on pg 1 to idle host 9 over the same NIC.
    if compiled.engine() == "compiled":  # a compiled class takes no spy: check the same model, pure
        name = f"{__file__}::test_pfc_pauses_only_the_incast_priority"
        r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", name],
                           env={**os.environ, "PWORMHOLE_PURE": "1"}, capture_output=True, text=True)
        assert r.returncode == 0 and "1 passed" in r.stdout, r.stdout
        return
    frames = []
    send_pfc = Switch.send_pfc

    def spy(self, port, qi, pause, t):
        frames.append((t, self.node_id, port.peer.node_id, qi, pause))
        return send_pfc(self, port, qi, pause, t)

    monkeypatch.setattr(Switch, "send_pfc", spy)

    def scenario(bystander_pg):
        flows = [Flow(i, s, 0, 3, 100, 1_000_000, 0) for i, s in enumerate(range(1, 9))]
        flows.append(Flow(8, 1, 9, bystander_pg, 100, 1_000_000, 0))
        cfg = config("dcqcn", buffer_size_bytes=2**20)
        return Scenario("pg", star_topo(10), number_sports(flows), cfg)

    scn = scenario(1)
    recs = []
    r = Run(scn).run(on_pfc=recs.extend)
    c = r.counters()
    assert r.complete and c["drops"] == 0
    pauses = [f for f in frames if f[4]]
    assert len(pauses) == c["pfc_pauses"] == sum(1 for x in recs if x[4] == 1) > 0  # 480 pauses
    assert {f[3] for f in frames} == {3}  # every pause and resume names the incast priority
    assert {f[2] for f in pauses} == set(range(1, 9))  # every incast sender, host 1 included, was paused
    assert any(x[1] == 1 and x[4] == 1 for x in recs)  # host 1's NIC received pauses
    standalone = StandaloneFct(r.net).all_ns(scn.flows)[8]  # alone: 86,971 ns (HPCC's formula: 88,000)
    fct = r.finish_ps[8] // 1000  # the flow starts at 0
    # host 1's pg-3 QP gets at most 1/8 of the bottleneck, so the pg-1 flow keeps >= 7/8 of line rate
    assert standalone <= fct <= standalone * 8 / 7 * 1.02, (fct, standalone)  # 100,318 ns
    incast_fct = min(r.finish_ps[i] for i in range(8)) // 1000
    assert incast_fct > 7 * standalone  # the incast shares 100 Gbps eight ways (~662 us)
    _drained(r)

    # control: the same bystander on the incast's priority is stuck behind the pauses
    same = Run(scenario(3)).run()
    assert same.complete
    assert same.finish_ps[8] // 1000 > 3 * fct  # 408,312 ns


# -- 4,000 hosts on one switch, one 2-byte flow; memory linear --------------------

def test_4000_hosts_one_tiny_flow_exact_and_linear_memory():
    n = 4000
    tracemalloc.start()
    try:
        scn = Scenario("big", star_topo(n), flows_of([(0, n - 1, 2, 0)]), config("dcqcn"))
        r = Run(scn)
        built, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    per_node = built / (n + 1)
    assert per_node < 32_000, per_node  # measured ~14 kB (mostly the switch port's 8 queues and each node's RNG)
    r.run()
    assert r.complete
    # 50 B on the wire (2 + 48): 4,000 ps per hop; ACK 60 B: 4,800 ps per hop; 1 us links
    assert r.finish_ps[0] == 2 * (4_000 + US) + 2 * (ACK_TX + US) == 4_017_600


@pytest.mark.slow
def test_route_tables_do_not_grow_as_hosts_times_destinations():
    # 500 hosts, 500 flows to distinct destinations: a route table on every host
    # would hold 250,000 entries (~60 kB per flow); single-port hosts store none.
    n = 500
    rng = random.Random(3)
    dsts = rng.sample(range(n), n)
    specs = [((d + 1) % n, d, 1000, 0) for d in dsts]
    base_scn = Scenario("b", star_topo(n), flows_of(specs[:1]), config("dcqcn"))
    scn = Scenario("f", star_topo(n), flows_of(specs), config("dcqcn"))
    sizes = []
    for s in (base_scn, scn):
        tracemalloc.start()
        try:
            net = Network(s.topology, s.flows, s.config)
            sizes.append(tracemalloc.get_traced_memory()[0])
        finally:
            tracemalloc.stop()
    per_flow = (sizes[1] - sizes[0]) / (len(specs) - 1)
    assert per_flow < 4_000, per_flow  # measured ~700 B
    assert all(len(nd.routes) == 0 for nd in net.nodes if not nd.is_switch)
    assert len(net.nodes[n].routes) == n


# -- 255-to-1 incast, DCQCN, PFC ----------------------------------------------------

def test_255_to_1_incast_pfc_no_drops_bytes_conserved():
    n, size = 255, 20_000
    cfg = config("dcqcn", has_win=False, buffer_size_bytes=12 * 2**20)
    scn = Scenario("incast", star_topo(n + 1), flows_of([(s, 0, size, 0) for s in range(1, n + 1)]), cfg)
    recs = []
    r = Run(scn).run(on_pfc=recs.extend)
    c = r.counters()
    assert r.complete
    assert c["drops"] == 0 and c["lost_packets"] == 0 and c["retransmitted_bytes"] == 0
    assert c["pfc_pauses"] == sum(1 for x in recs if x[4] == 1) >= n  # 255: each sender's ingress once
    assert {x[1] for x in recs if x[4] == 1} == set(range(1, n + 1))  # every sender was paused
    assert c["bytes_sent"] == c["bytes_delivered"] == n * size
    assert all(r.net.nodes[0].rx[f][0] == size for f in range(n))
    # the bottleneck never idles: the last byte lands after all 5,100 packets' serialization
    last = max(r.finish_ps.values())
    ideal = n * size // 1000 * TX_1000
    assert ideal < last < ideal * 1.01, (last, ideal)  # 431,677,440 ps vs 427,584,000
    _drained(r)


# -- ~1,000 small flows, 9 ToRs x 16 hosts, 10G/40G, 8 MB buffers ------------------

def _nine_tors():
    g10, g40 = 10 * 10**9, 40 * 10**9
    n_tor, per, n_spine = 9, 16, 4
    h = n_tor * per
    tors = list(range(h, h + n_tor))
    spines = list(range(h + n_tor, h + n_tor + n_spine))
    links = [Link(x, tors[x // per], g10, US) for x in range(h)]
    links += [Link(t, s, g40, US) for t in tors for s in spines]
    return Topology(h + n_tor + n_spine, frozenset(tors + spines), links), h


@pytest.mark.slow
def test_thousand_small_flows_incast_across_nine_tors():
    topo, h = _nine_tors()
    rng = random.Random(5)
    specs = [(rng.randrange(1, h), 0, 8_000, rng.randrange(0, 100) * 10 * 1000) for _ in range(1000)]
    cfg = config("dcqcn", buffer_size_bytes=8 * 2**20)
    # HPCC's config K maps list 25/50/100G only: a clear error, not a KeyError mid-run
    with pytest.raises(InputError, match=r"no KMIN_MAP entry for 10Gbps"):
        run(topo, specs, cfg)
    for rate, kmin in ((10 * 10**9, 40_000), (40 * 10**9, 160_000)):
        cfg.kmin_map_bytes[rate], cfg.kmax_map_bytes[rate], cfg.pmax_map[rate] = kmin, 4 * kmin, 0.2
    r = run(topo, specs, cfg)
    c = r.counters()
    assert r.complete and len(r.finish_ps) == 1000
    assert c["drops"] == 0 and c["lost_packets"] == 0
    assert c["pfc_pauses"] > 0  # PFC did engage (148 pauses)
    assert c["bytes_sent"] == c["bytes_delivered"] == 8_000_000
    # host 0's 10G downlink is the bottleneck and stays busy: 8,000 packets of 1,048 B
    ideal = 8000 * DATA_WIRE * 8 * 10**12 // (10 * 10**9)
    assert ideal < max(r.finish_ps.values()) < ideal * 1.005
    _drained(r)


# -- HPCC with L2_ACK_INTERVAL 20000 ----------------------------------------------

def test_hpcc_alone_flow_not_multiple_of_ack_interval_exact():
    # 999 B: never reaches the 20,000 B milestone; the end of the message is acked.
    cfg = config("hpcc", l2_ack_interval=20_000, l2_chunk_size=0)
    r = run(star_topo(2), [(0, 1, 999, 0)], cfg)
    assert r.complete
    # data 999 + 48 + 42 INT = 1,089 B: 87,120 ps per hop; ACK 88 B: 7,040 ps per hop
    assert r.finish_ps[0] == 2 * (87_120 + US) + 2 * (7_040 + US)


@pytest.mark.parametrize("delay_ps,chunk", [(US, 4000), (US, 0), (100_000, 0)])
def test_hpcc_large_ack_interval_never_stalls(delay_ps, chunk):
    # Window-bound senders (VAR_WIN shrinks the window with the rate; with 100 ns
    # links the BDP, 7 kB, is below the interval from the start): before the
    # window floor (cc.min_window_bytes) 2-3 of these 34 flows stalled for ever.
    rng = random.Random(1)
    sizes = [rng.choice([20_000, 40_000, 60_000]) + rng.choice([0, 1, 999, 1000, 7777]) for _ in range(30)]
    sizes += [1_000_000] * 4
    specs = [(i + 1, 0, s, rng.randrange(0, 50) * US) for i, s in enumerate(sizes)]
    cfg = config("hpcc", l2_ack_interval=20_000, l2_chunk_size=chunk)
    assert cc.min_window_bytes(cfg) == (4000 if chunk else 20_000)
    r = run(star_topo(len(sizes) + 1, delay=delay_ps), specs, cfg, until_ps=50 * 10**9)
    assert r.complete, f"{len(sizes) - len(r.finish_ps)} flows stalled"
    c = r.counters()
    assert c["bytes_sent"] == c["bytes_delivered"] == sum(sizes)
    assert all(r.net.nodes[0].rx[f][0] == s for f, s in enumerate(sizes))


def test_min_window_is_one_byte_with_hpcc_defaults():
    cfg, _ = read_hpcc_config(MIX / "config.txt")  # L2_ACK_INTERVAL 1, L2_CHUNK_SIZE 4000
    assert cc.min_window_bytes(cfg) == 1  # ns-3's own floor: the reference runs are unchanged
    assert cc.min_window_bytes(config("hpcc", l2_ack_interval=20_000, l2_chunk_size=2500)) == 5000  # lcm(2500, 1000)
    assert cc.min_window_bytes(config("hpcc", l2_ack_interval=1, l2_back_to_zero=True)) == 4001


# -- 10-to-1 incast under DCQCN: ECN marks and CNPs --------------------------------

def test_ten_to_one_dcqcn_marks_and_cnps(tmp_path):
    cfg = config("dcqcn", has_win=False)
    scn = Scenario("ten", star_topo(11), flows_of([(s, 0, 1_000_000, 0) for s in range(1, 11)]), cfg)
    summary = simulate(scn, str(tmp_path), quiet=True)
    on_disk = json.loads((tmp_path / "summary.json").read_text())
    assert on_disk["complete"] and on_disk["flows_finished"] == 10
    assert on_disk["ecn_marks"] > 0 and on_disk["cnps"] > 0
    assert on_disk["ecn_marks"] == summary["ecn_marks"] and on_disk["cnps"] == summary["cnps"]
    # every data packet is acked (L2_ACK_INTERVAL 1) and echoes its mark; only a mark on a
    # flow's last packet is not counted, as that ACK completes the QP (4,336 marks, 4,335 CNPs)
    assert on_disk["ecn_marks"] - 10 <= on_disk["cnps"] <= on_disk["ecn_marks"]
    r = Run(scn).run()
    assert all(r.net.nodes[s].cnps_rx > 0 for s in range(1, 11))  # each sender was told
    assert r.counters()["cnps"] == on_disk["cnps"]


# -- DCQCN reaction to a CNP: order of alpha update and rate cut ---------------------

def _dcqcn_qp():
    cfg = config("dcqcn")
    net = Network(star_topo(2), flows_of([(0, 1, 10_000_000, 0)]), cfg)
    host = net.nodes[0]
    host.heap = EventQueue()
    flow = net.flows[0]
    rtt, win = net.qp_window(flow)
    qp = SendQP(flow, host, host.ports[0], G100, win, rtt, cfg, host.hdr_bytes)
    return cfg, host, qp


def _run_timers(host, until_ps):
    while host.heap.next_time() <= until_ps:
        t, _, _, _, arg = host.heap.pop()
        host.on_timer(arg, t)


@pytest.mark.parametrize("second_cnp", [False, True])
def test_dcqcn_cnp_order(second_cnp):
    cfg, host, qp = _dcqcn_qp()
    g = Fraction(1, 256)
    assert cfg.ewma_gain == float(g) and cfg.rate_on_first_cnp == 1.0
    t0 = 10 * US
    cc.dcqcn_on_cnp(qp, host, t0)
    # first CNP: alpha = 1, both timers armed, rate = target = 1.0 x rate (no cut yet)
    assert qp.rate_bps == qp.target_rate_bps == G100 and qp.alpha == 1.0
    assert sorted(ev[0] for ev in host.heap.events()) == [t0 + US, t0 + 4 * US + 1000]
    alpha = Fraction(1)
    for k in range(1, 5):  # alpha timer every 1 us; a CNP at t0 + 2.5 us sets the bit for the 3 us update
        if second_cnp and k == 3:
            cc.dcqcn_on_cnp(qp, host, t0 + 2 * US + US // 2)
            assert qp.rate_bps == G100  # a later CNP changes nothing at once
        _run_timers(host, t0 + k * US)
        alpha = (1 - g) * alpha + (g if second_cnp and k == 3 else 0)
        assert Fraction(qp.alpha) == alpha
    assert qp.rate_bps == G100  # the 4 us alpha update ran; the decrease (1 ns later) not yet
    _run_timers(host, t0 + 4 * US + 1000)
    expected = int(G100 * (1 - alpha / 2))  # floor, as ns-3's DataRate * double truncates
    assert qp.rate_bps == expected
    assert expected == (50_582_134_712 if second_cnp else 50_776_684_272)
    assert qp.target_rate_bps == G100  # not clamped at stage 0 (CLAMP_TARGET_RATE 0)
    assert qp.rp_stage == 0 and not qp.decrease_cnp
    # no further CNP: the next decrease check changes nothing, alpha keeps decaying
    _run_timers(host, t0 + 8 * US + 1000)
    assert qp.rate_bps == expected
    assert qp.alpha == pytest.approx(float(alpha * (1 - g) ** 4), rel=1e-15)
    # RP timer (900 us after the cut): fast recovery halfway to the target, then active increase
    t_cut = t0 + 4 * US + 1000
    _run_timers(host, t_cut + cfg.rp_timer_ps)
    fr = expected // 2 + G100 // 2
    assert qp.rate_bps == fr and qp.rp_stage == 1
    _run_timers(host, t_cut + 2 * cfg.rp_timer_ps)
    assert qp.target_rate_bps == G100  # + RATE_AI, capped at line rate
    assert qp.rate_bps == fr // 2 + G100 // 2 and qp.rp_stage == 2


# -- ECMP on HPCC's fat tree: spread over core links, no polarization -----------------

def _fat_permutation():
    topo = read_hpcc_topology(MIX / "fat.txt")
    hosts = topo.hosts
    rng = random.Random(1)
    perm = hosts[:]
    while True:
        rng.shuffle(perm)
        if all(a != b for a, b in zip(hosts, perm)):
            break
    flows = number_sports([Flow(i, s, d, 3, 100, 1000, 0) for i, (s, d) in enumerate(zip(hosts, perm))])
    cfg = config("dcqcn")
    g400 = 400 * 10**9
    cfg.kmin_map_bytes[g400], cfg.kmax_map_bytes[g400], cfg.pmax_map[g400] = 1_600_000, 6_400_000, 0.2
    return topo, flows, cfg


def _tiers(topo):
    sw = topo.switches
    tor = {v for ln in topo.links for u, v in ((ln.a, ln.b), (ln.b, ln.a)) if u not in sw and v in sw}
    agg = {v for ln in topo.links for u, v in ((ln.a, ln.b), (ln.b, ln.a)) if u in tor and v in sw and v not in tor}
    return tor, agg, set(sw) - tor - agg


def _walk(net, src, dst, h):
    """Directed links ``(a, b)`` a packet of hash ``h`` takes, following each node's pick_port."""
    node, hops = net.nodes[src], []
    while node.node_id != dst:
        p = node.pick_port(dst, h)
        hops.append((node.node_id, p.peer.node_id))
        node = p.peer
    return hops


def test_ecmp_spreads_permutation_over_core_links():
    topo, flows, cfg = _fat_permutation()
    tor, agg, core = _tiers(topo)
    assert (len(tor), len(agg), len(core)) == (20, 20, 16)
    core_links = [(a, b) for ln in topo.links for a, b in ((ln.a, ln.b), (ln.b, ln.a))
                  if (a in agg and b in core) or (a in core and b in agg)]
    assert len(core_links) == 160
    net = Network(topo, flows, cfg, seed=1)

    def loads():
        data, ack = {}, {}
        for f in flows:
            h = net.nodes[f.src].flow_hash[f.flow_id]
            for hop in _walk(net, f.src, f.dst, h):
                data[hop] = data.get(hop, 0) + 1
            for hop in _walk(net, f.dst, f.src, h):  # the receiver acks with the flow's hash
                ack[hop] = ack.get(hop, 0) + 1
        vals = [data.get(lk, 0) for lk in core_links]
        mean = sum(vals) / len(vals)
        ups = [data.get(lk, 0) for lk in core_links if lk[0] in agg]
        cv = (sum((v - mean) ** 2 for v in vals) / len(vals)) ** 0.5 / mean
        return data, ack, max(vals), mean, sum(1 for v in ups if v) / len(ups), cv

    data, ack, mx, mean, used, cv = loads()
    assert mean == 3.4125  # 273 inter-pod flows x 2 core hops / 160 core links
    # independent hashing = balls in bins: Poisson(3.41) has cv 0.54; over 30 seeds we
    # measure max/mean 2.1-3.3, cv 0.48-0.62, uplinks used 92-99% (with Python's
    # hash((h, salt)), correlated across tiers: max/mean 2.8-5.5, cv 0.63-0.86, 76-91%)
    assert mx / mean < 3.5, (mx, mean)  # seed 1: 11 / 3.41 = 3.22
    assert cv < 0.65, cv
    assert used >= 0.9, used  # seed 1: 78 of 80 agg->core uplinks carry a flow

    # the port counters agree: one-packet flows, bytes per core port = data x 1048 + ACKs x 60
    r = Run(Scenario("fat", topo, flows, cfg), seed=1).run()
    assert r.complete
    for a, b in core_links:
        port = next(p for p in r.net.nodes[a].ports if p.peer.node_id == b)
        assert port.tx_bytes == data.get((a, b), 0) * DATA_WIRE + ack.get((a, b), 0) * 60

    # control: one salt for every switch polarizes the tiers: a flow that hashed to
    # aggregation switch i of its pod takes core uplink i there, 1 of 4 uplinks used
    for nd in net.nodes:
        nd.salt = 12345
    _, _, mx_same, mean_same, used_same, _ = loads()
    assert used_same == 0.25
    assert mx_same / mean_same > 5.0  # 19 / 3.41 = 5.57


def test_ecmp_choices_of_two_switches_are_independent():
    # One flow hash, two switches' salts: the joint choice (mod 4) must be ~uniform
    # over the 16 cells (it was concentrated on 4-8 cells with hash((h, salt))).
    topo, flows, cfg = _fat_permutation()
    net = Network(topo, flows, cfg, seed=1)
    tor, agg, _ = _tiers(topo)
    rng = random.Random(2)
    hs = [rng.getrandbits(63) for _ in range(8000)]
    for a, b in ((min(tor), min(agg)), (min(agg), max(agg)), (max(tor), min(tor))):
        sa, sb = net.nodes[a].salt, net.nodes[b].salt
        cells = {}
        for h in hs:
            k = (((h ^ sa) * ECMP_MIX) >> 40) % 4, (((h ^ sb) * ECMP_MIX) >> 40) % 4
            cells[k] = cells.get(k, 0) + 1
        assert len(cells) == 16 and all(350 < v < 650 for v in cells.values()), (a, b, cells)  # 500 expected


# -- one host fans out to 128 -------------------------------------------------------

@pytest.mark.parametrize("cc_name,tx,ack_tx", [("dcqcn", TX_1000, ACK_TX), ("hpcc", 87_200, 7_040)])
def test_fan_out_to_128_one_packet_flows_exact(cc_name, tx, ack_tx):
    n = 128
    r = run(star_topo(n + 1), [(0, d, 1000, 0) for d in range(1, n + 1)], config(cc_name))
    c = r.counters()
    assert r.complete and c["bytes_sent"] == c["bytes_delivered"] == n * 1000
    # the NIC sends flow k's packet k-th (round robin); each goes out on its own
    # downlink, and the ACKs (one every tx) never queue at host 0's downlink
    for k in range(n):
        assert r.finish_ps[k] == (k + 2) * tx + 4 * US + 2 * ack_tx


# -- random link errors: go-back-N recovers everything -------------------------------

@pytest.mark.parametrize("cc_name", ["dcqcn", "hpcc"])
def test_link_errors_recovered_by_go_back_n(cc_name):
    topo = Topology(6, frozenset({4, 5}), [Link(0, 4, G100, US), Link(1, 4, G100, US), Link(4, 5, G100, US),
                                           Link(5, 2, G100, US), Link(5, 3, G100, US)])
    specs = [(0, 2, 2_000_000, 0), (1, 3, 2_000_000, 0), (2, 0, 1_000_000, 10 * US), (3, 1, 500_000, 0),
             (0, 3, 77_777, 5 * US)]
    r = run(topo, specs, config(cc_name, error_rate_per_link=0.001))
    c = r.counters()
    assert r.complete
    assert c["lost_packets"] > 10  # 39 (dcqcn) / 38 (hpcc) of ~5,600 data packets + their ACKs
    assert c["retransmitted_bytes"] > 0 and c["nacks"] > 0
    assert c["drops"] == 0
    assert c["bytes_sent"] == c["bytes_delivered"] == sum(s[2] for s in specs)
    for fid, (_src, dst, size, _) in enumerate(specs):
        assert r.net.nodes[dst].rx[fid][0] == size


# -- mutated HPCC files: parse, or one-line InputError naming the file ----------------

NASTY = ["", "-1", "0", "1", "-0", "+3", "7", "8", "1e309", "nan", "inf", "1e-400", "abc", "1.5",
         "99999999999999999999999", "100Gbps", "0Gbps", "-5Gbps", "0.001ms", "0.0001ps", "1.2.3", "0x10",
         "1_000", "\u0663", "\u00bd", "Gbps", "{", "}", "#", "\x00", "\ufeff", "\u00e9", "65536", "376",
         "2000000000", "CC_MODE", "KMAX_MAP", "TOPOLOGY_FILE", "mix/fat.txt", "/nonexistent", "\x85", "\u2028"]
_TOKEN = st.one_of(st.sampled_from(NASTY), st.text(max_size=8))
_TEXTS: dict[str, str] = {}


def _original(name: str) -> str:
    if name not in _TEXTS:
        _TEXTS[name] = (MIX / name).read_text(encoding="utf-8", errors="replace")
    return _TEXTS[name]


def _mutate(data, text: str) -> str:
    """Truncations and token edits (replace, delete, insert, duplicate, odd whitespace)."""
    for _ in range(data.draw(st.integers(1, 4), label="ops")):
        kind = data.draw(st.sampled_from(["trunc", "replace", "replace", "delete", "insert", "dup", "space"]))
        if kind == "trunc":
            text = text[:data.draw(st.integers(0, len(text)))]
            continue
        parts = re.split(r"(\s+)", text)
        idx = [i for i, p in enumerate(parts) if p and not p.isspace()]
        if not idx:
            continue
        # half the edits hit the head of the file (counts, ids), where most checks are
        i = data.draw(st.sampled_from(idx[:30] if data.draw(st.booleans()) else idx))
        if kind == "replace":
            parts[i] = data.draw(_TOKEN)
        elif kind == "delete":
            parts[i] = ""
        elif kind == "insert":
            parts[i] += " " + data.draw(_TOKEN)
        elif kind == "dup":
            parts[i] += "\n" + parts[i]
        else:
            parts[i] = data.draw(st.sampled_from(["\r", "\t", "\x0b", "\x0c", "\x1c", "\u3000", "\n\n"])) + parts[i]
        text = "".join(parts)
    return text


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8", errors="surrogatepass", newline="") as fh:
        fh.write(text)
    return path


def _parses_or_one_line(fn, path: Path) -> None:
    try:
        fn(path)
    except InputError as e:
        msg = str(e)
        assert "\n" not in msg and "\r" not in msg, repr(msg)
        assert msg.startswith(str(path)), msg


_FUZZ = settings(max_examples=60, deadline=None, derandomize=True,
                 suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


@_FUZZ
@given(data=st.data())
def test_fuzz_topology_reader(tmp_path, data):
    name = data.draw(st.sampled_from(["topology.txt", "fat.txt", "ali_32host_10rack.txt"]))
    p = _write(Path(tempfile.mkdtemp(dir=tmp_path)) / name, _mutate(data, _original(name)))
    _parses_or_one_line(read_hpcc_topology, p)


@_FUZZ
@given(data=st.data())
def test_fuzz_flow_and_trace_readers(tmp_path, data):
    topo = read_hpcc_topology(MIX / "topology.txt")
    name = data.draw(st.sampled_from(["flow.txt", "trace.txt"]))
    p = _write(Path(tempfile.mkdtemp(dir=tmp_path)) / name, _mutate(data, _original(name)))
    if name == "flow.txt":
        _parses_or_one_line(lambda q: read_hpcc_flows(q, topo), p)
    else:
        _parses_or_one_line(lambda q: read_hpcc_trace(q, topo.n_nodes), p)


@_FUZZ
@given(data=st.data())
def test_fuzz_config_reader_and_scenario(tmp_path, data):
    name = data.draw(st.sampled_from(["config.txt", "config_doc.txt"]))
    root = Path(tempfile.mkdtemp(dir=tmp_path))
    (root / "mix").mkdir()
    for f in ("topology.txt", "flow.txt", "trace.txt"):
        shutil.copy(MIX / f, root / "mix" / f)
    p = _write(root / "mix" / name, _mutate(data, _original(name)))
    _parses_or_one_line(read_hpcc_config, p)
    try:  # the whole HPCC pipeline: config, then the files it names, then the K-map check
        from_hpcc_config(str(p))
    except InputError as e:
        assert "\n" not in str(e) and str(e).startswith(str(root)), str(e)


SIMAI_DATA = ROOT / "tests" / "data"
SIMAI_WORKLOADS = ["simai/simai/example/microAllReduce.txt", "simai/simai/pr_examples/workload_gpt7b_64g.txt",
                   "simai/aicb/simAI/model_workload/L7B-M1-C04_Llama7B_megatron_tp2_pp1_mbs1_A100.txt"]
SIMAI_TOPOS = ["simai_topo/Rail_Opti_SingleToR_16g_8gps_200Gbps_H20", "simai_topo/Spectrum-X_16g_8gps_100Gbps_A100"]


@_FUZZ
@given(data=st.data())
def test_fuzz_simai_readers(tmp_path, data):
    """Case 15 for SimAI inputs: mutated workloads and topologies parse or fail with one line naming the file."""
    from pwormhole.topology.simai import read_simai_topology
    from pwormhole.workload.simai import read_simai_workload

    rel = data.draw(st.sampled_from(SIMAI_WORKLOADS + SIMAI_TOPOS))
    text = (SIMAI_DATA / rel).read_text(encoding="utf-8", errors="surrogateescape")
    p = _write(Path(tempfile.mkdtemp(dir=tmp_path)) / Path(rel).name, _mutate(data, text))
    _parses_or_one_line(read_simai_topology if rel.startswith("simai_topo") else read_simai_workload, p)
