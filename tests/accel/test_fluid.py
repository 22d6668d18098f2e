"""NVLink flows by rates in Wormhole mode (pwormhole/accel/fluid.py) against packet mode."""

import subprocess
import sys
from types import SimpleNamespace

import pytest
from helpers import config, flows_of

from pwormhole.accel.nvlink import nvlink_flows
from pwormhole.accel.solvers import max_min
from pwormhole.accel.wormhole import AccelConfig
from pwormhole.config import ModelConfig
from pwormhole.errors import InputError
from pwormhole.run import Run
from pwormhole.scenario import Scenario, from_dag, topology_from_arg, training_scenario
from pwormhole.simulate import simulate
from pwormhole.topology.model import Link, Topology
from pwormhole.workload.dag import Dag
from pwormhole.workload.models import build_model

FLUID = AccelConfig()  # the default: NVLink flows by rates wherever they hold
M = 1_000_000


def server(cc="dcqcn", **kw):
    topo = topology_from_arg("rail-optimized:gpus=8")
    cfg = config(cc, **kw)
    cfg.fill_k_maps({ln.rate_bps for ln in topo.links})
    return topo, cfg


def fcts(run, n):
    return [run.finish_ps[i] - run.start_ps[i] for i in range(n)]


PATTERNS = {
    "lone": [(0, 1, 262144, 0)],
    "ring": [(i, (i + 1) % 8, 262144, 0) for i in range(8)],
    "ring-4MB": [(i, (i + 1) % 8, 4 * M, 0) for i in range(8)],
    "incast": [(i, 0, M, 0) for i in range(1, 8)],
    "alltoall": [(i, j, 262144, 0) for i in range(8) for j in range(8) if i != j],
    # max-min, not equal shares: 4 -> 5 is alone on its ports and runs at the line rate
    "incast-and-pair": [(1, 0, M, 0), (2, 0, M, 0), (3, 0, M, 0), (4, 5, M, 0)],
    # GPU 1 also sends to GPU 7: its NIC port splits evenly, so GPU 0's port is fed unevenly
    # (not max-min): handed over to packets at the start
    "incast-and-fork": [(i, 0, 8 * M, 0) for i in range(1, 7)] + [(1, 7, 8 * M, 0)],
    # 3 -> 4 arrives at the line rate where 0 -> 4 arrives at half (GPU 0 also feeds 0 -> 1)
    "staggered": [(i, (i + 1) % 8, 2 * M, i * 300_000) for i in range(8)] + [(0, 4, 2 * M, 100_000)],
    # GPU 1 receives from 0 and sends to 2 and 3: 0 -> 1 is not held back by GPU 1's port (it only
    # carries its ACKs, which a NIC sends first), but it floods the port into GPU 1, where the
    # ACKs of 1 -> 2 and 1 -> 3 then queue: handed over
    "receive-and-fork": [(0, 1, M, 0), (1, 2, M, 0), (1, 3, M, 0)],
}
HANDED_OVER = {"incast-and-fork": 7, "staggered": 9, "receive-and-fork": 3}  # flows finished by packets


@pytest.mark.parametrize("cc", ["dcqcn", "hpcc"])
@pytest.mark.parametrize("pattern", list(PATTERNS))
def test_nvlink_flows_by_rates_match_packets(pattern, cc):
    """Flows inside one server's NVSwitch, by rates, against the same flows packet by
    packet (NVLink without end-to-end CC, the default, under either NIC CC): a lone flow
    (866.7 ns for 262 KB), a TP ring step (907.5 ns: each port also carries the reverse
    flow's ACKs), a 4 MB ring, a 7-to-1 incast and an all-to-all by rates; two patterns
    whose packets do not share max-min fairly are handed over to packets, and exact."""
    specs = PATTERNS[pattern]
    topo, cfg = server(cc)
    ref = Run(Scenario("t", topo, flows_of(specs), cfg)).run()
    fast = Run(Scenario("t", topo, flows_of(specs), cfg), accel=FLUID).run()
    assert fast.accel.nvlink_model == "rates" and len(fast.accel.fluid_fids) == len(specs)
    handed = sum(len(d.packet_fids) for d in fast.accel.fluid_domains.values())
    assert handed == HANDED_OVER.get(pattern, 0)
    if not handed:
        assert fast.events <= 5 * len(specs) and ref.events > 500 * len(specs)
    for a, b in zip(fcts(ref, len(specs)), fcts(fast, len(specs))):
        assert abs(b - a) / a < 0.005
    if pattern == "ring":
        # by hand: 263 packets, 262144 + 263 x 48 wire bytes, each data packet followed on its
        # ports by a 60-byte ACK of the reverse flow: 274768 x 1108/1048 bytes at 2880 Gb/s =
        # 806.94 ns; + 25 ns + the last 192-byte packet at the NVSwitch (0.53 ns) + 25 ns;
        # the ACK back: 2 x (0.17 + 25 ns): 907.81 ns (packets: 907.47)
        assert abs(fcts(fast, 1)[0] - 907_810) < 20
        assert abs(fcts(ref, 1)[0] - 907_470) < 20
    c = fast.counters()
    assert c["bytes_sent"] == c["bytes_delivered"] == sum(s[2] for s in specs)
    assert fast.accel.stats()["fluid_shared_flows"] == 0  # counted under --nvlink-cc nic only
    if handed:  # the hand-over is the same with the NIC switches in another LP
        two = Run(Scenario("t", topo, flows_of(specs), cfg), accel=FLUID, n_lps=2).run()
        assert two.finish_ps == fast.finish_ps


@pytest.mark.parametrize("nvswitches,pattern,handed", [(2, "ring", 8), (4, "stride", 8), (2, "incast", 0),
                                                      (4, "incast", 0)])
def test_several_nvswitches(nvswitches, pattern, handed):
    """With several NVSwitches per server, ECMP may send a flow's data and the ACKs its host
    returns over different NVSwitches: a NIC port then feeds its NVSwitch at the line rate and
    the port out of it, which also carries another flow's ACKs, builds a queue those ACKs wait
    in. There the server runs as packets (exact); an incast keeps its rates."""
    specs = {"ring": [(i, (i + 1) % 8, 262144, 0) for i in range(8)],
             "stride": [(i, (i + 2) % 8, M, 0) for i in range(8)],
             "incast": [(i, 0, M, 0) for i in range(1, 8)]}[pattern]
    topo = topology_from_arg(f"rail-optimized:gpus=8,nvswitches={nvswitches}")
    cfg = config("hpcc")
    cfg.fill_k_maps({ln.rate_bps for ln in topo.links})
    ref = Run(Scenario("t", topo, flows_of(specs), cfg)).run()
    fast = Run(Scenario("t", topo, flows_of(specs), cfg), accel=FLUID).run()
    assert sum(len(d.packet_fids) for d in fast.accel.fluid_domains.values()) == handed
    for a, b in zip(fcts(ref, len(specs)), fcts(fast, len(specs))):
        assert abs(b - a) / a < 0.005


def test_rates_under_nic_cc_are_opt_in_and_flagged():
    """``nvlink_cc="nic"`` (DCQCN also on NVLink): rates only when asked (``nvlink="fluid"``),
    never handed over, and the flows sharing a port counted as approximate."""
    specs = PATTERNS["incast-and-pair"]
    topo, cfg = server(nvlink_cc="nic")
    auto = Run(Scenario("t", topo, flows_of(specs), cfg), accel=FLUID)
    assert auto.accel.nvlink_model == "packets" and "opt in" in auto.accel.nvlink_packets_why
    fast = Run(Scenario("t", topo, flows_of(specs), cfg), accel=AccelConfig(nvlink="fluid")).run()
    assert fast.accel.nvlink_model == "rates" and fast.accel.stats()["fluid_shared_flows"] == 3


def gpt16(**kw):
    spec = build_model("gpt-350m", 16, tp=8, layers=1, seq_len=256)
    return training_scenario(spec, topology_from_arg("rail-optimized:gpus=16"), ModelConfig(cc_mode=1, **kw))


@pytest.mark.slow
def test_fluid_nvlink_gpt_iteration_and_lp_counts():
    """A GPT-350M layer on 16 GPUs (896 TP ring-step flows of 64 KB on NVLink): every
    flow within 1% of packet mode, the iteration within 0.3%, the NIC flows still
    packet by packet, and the same answer on 1 and 2 LPs."""
    ref = Run(gpt16()).run()
    fast = Run(gpt16(), accel=FLUID).run()
    two = Run(gpt16(), accel=FLUID, n_lps=2).run()
    fluid = fast.accel.fluid_fids
    assert len(fluid) == 896 and len(ref.finish_ps) == len(fast.finish_ps) == 960
    for f, end in ref.finish_ps.items():
        a, b = end - ref.start_ps[f], fast.finish_ps[f] - fast.start_ps[f]
        assert abs(b - a) / a < 0.01
    it_ref, it_fast = max(ref.finish_ps.values()), max(fast.finish_ps.values())
    assert abs(it_fast - it_ref) / it_ref < 0.003
    assert fast.events < ref.events / 3
    assert two.finish_ps == fast.finish_ps and two.start_ps == fast.start_ps


def test_rates_refused_where_they_do_not_hold():
    """``nvlink="fluid"`` is refused (``auto`` falls back to packets, saying why) under HPCC
    with the NIC's CC on NVLink and on a lossy NVLink; no LP assignment may split a server."""
    one = flows_of([(0, 1, 262144, 0)])
    for cc, kw, why in (("hpcc", {"nvlink_cc": "nic"}, "HPCC also runs on NVLink"),
                        ("dcqcn", {"nvlink_cc": "nic", "enable_pfc": False}, "can lose packets"),
                        ("dcqcn", {"error_rate_per_link": 1e-6}, "can lose packets")):
        topo, cfg = server(cc, **kw)
        with pytest.raises(InputError, match=why):
            Run(Scenario("t", topo, one, cfg), accel=AccelConfig(nvlink="fluid"))
        auto = Run(Scenario("t", topo, one, cfg), accel=FLUID)
        assert auto.accel.nvlink_model == "packets" and auto.accel.nvlink_packets_why
    topo, cfg = server(enable_pfc=False)  # NIC switches lossy; NVLink without CC stays lossless
    assert Run(Scenario("t", topo, one, cfg), accel=FLUID).accel.nvlink_model == "rates"
    # one NVSwitch (8) and 8 GPUs, nothing else: the window is the NVLink delay, so a plan may cut it
    nvl = Topology(9, frozenset({8}), [Link(h, 8, 2880 * 10**9, 25_000) for h in range(8)], nvswitches=frozenset({8}))
    cfg = config()
    cfg.fill_k_maps({2880 * 10**9})
    scn = Scenario("t", nvl, one, cfg)
    with pytest.raises(InputError, match="keep each server in one LP"):
        Run(scn, n_lps=2, owner=[0, 1, 0, 1, 0, 1, 0, 1, 0], accel=FLUID)
    assert Run(scn, n_lps=2, owner=[0] * 8 + [0], accel=FLUID).run().accel.nvlink_model == "rates"


def test_nvlink_flag_needs_wormhole_mode(tmp_path):
    for flag in (["--nvlink", "packet"], ["--fluid-nvlink"]):
        p = subprocess.run([sys.executable, "-m", "pwormhole", "run", "--mode", "packet", *flag,
                            "--out", str(tmp_path / "o")], capture_output=True, text=True)
        assert p.returncode == 2 and "--nvlink applies to --mode wormhole only" in p.stderr
        assert "Traceback" not in p.stderr


def test_fluid_flows_in_progress_are_reported():
    """A run stopped at 5 us lists the fluid flows still sending (the stuck report uses
    this list): 5 us x 2880 Gb/s x 1000/1108 (payload of each data packet plus the
    reverse ACK on its port) = 1.6245 MB sent of 4 MB."""
    topo, cfg = server()
    run = Run(Scenario("t", topo, flows_of([(i, (i + 1) % 8, 4_000_000, 0) for i in range(8)]), cfg),
                    accel=FLUID).run(until_ps=5_000_000)
    active = run._active_flows()
    assert not run.complete and [a[0] for a in active] == list(range(8))
    assert all(abs(a[3] - 1_624_500) < 1_000 and a[4] == 4_000_000 for a in active)


def test_max_min_serves_acks_first():
    """Port A (a NIC port, 100 bytes/ps) carries the data of flows 2 and 3 and flow 1's ACKs
    (0.05 bytes per data byte); port B (200 bytes/ps) flow 1's data. Flow 1 is bounded by B
    alone (200), its ACKs take 10 of A, flows 2 and 3 share the other 90 (45 each); filling with
    the ACKs as ordinary users held flow 1 at A's level (48.8)."""
    class port:  # noqa: N801 - a NIC port as max_min reads it (hashable, as ports are)
        def __init__(self, bytes_per_ps):
            self.rate_bps = bytes_per_ps * 8 * 10**12
            self.node = SimpleNamespace(is_switch=False)

    a, b = port(100), port(200)
    rate = max_min({a: [2, 3], b: [1]}, {a: [(1, 0.05)]}, [1, 2, 3])
    assert rate[1] == pytest.approx(200) and rate[2] == rate[3] == pytest.approx(45)
    assert max_min({a: [2, 3]}, {}, [2, 3]) == {2: pytest.approx(50), 3: pytest.approx(50)}


def test_a_ring_step_with_one_late_start_runs_as_packets():
    """GPU 0 starts its ring step 31 ns late: until it does, GPU 1 has no ACKs to send, its
    flow runs at the line rate, and the NVSwitch port into GPU 2 (which also carries GPU 2's
    ACKs) gets 4.6% more than it can carry. Packets do not share that max-min: the server is
    handed over (all 8 flows), and its FCTs are the packets' (bench/RESULTS.md: tolerating the
    few hundred bytes this queues was tried and moved FCTs far more than it saved)."""
    specs = [(i, (i + 1) % 8, 262144, 31_000 if i == 0 else 0) for i in range(8)]
    topo, cfg = server("hpcc")
    ref = Run(Scenario("t", topo, flows_of(specs), cfg)).run()
    fast = Run(Scenario("t", topo, flows_of(specs), cfg), accel=FLUID).run()
    assert sum(len(d.packet_fids) for d in fast.accel.fluid_domains.values()) == 8
    for a, b in zip(fcts(ref, len(specs)), fcts(fast, len(specs))):
        assert abs(b - a) / a < 0.005


def test_a_server_handed_over_to_packets_is_said(tmp_path, capsys):
    """The late ring step above, run to its outputs: the summary says which servers ran their NVLink
    flows as packets and from when (the 7 flows started at 0 ns), and so does one warning."""
    specs = [(i, (i + 1) % 8, 262144, 31_000 if i == 0 else 0) for i in range(8)]
    topo, cfg = server("hpcc")
    s = simulate(Scenario("t", topo, flows_of(specs), cfg), str(tmp_path), accel=FLUID, quiet=True)
    assert s["nvlink_servers_by_packets"] == 1 and s["nvlink_by_packets_from_ns"] == 0
    assert s["nvlink_packet_flows"] == 8 and s["fluid_flows"] == 0
    warned = [ln for ln in capsys.readouterr().err.splitlines() if "NVLink flows as packets" in ln]
    assert warned == ["pwormhole: warning: 1 of 1 servers ran their NVLink flows as packets, the first from 0.000 "
                      "ms on: a collective's flows there would not share the NVSwitch ports max-min (as when its "
                      "members start apart); exact, but Wormhole skips none of those packets (8 NVLink flows)"]


def _nvlink_flows_per_flow(net, domain: dict) -> tuple[dict, list]:
    """The rule of ``nvlink_flows``, flow by flow from each flow's own ECMP path (the reference);
    ``domain``: NVSwitch -> its server's anchor."""
    inside, odd = {}, []
    for f in net.flows:
        legs = [net.path_of(f.flow_id), net.path_of(f.flow_id, acks=True)]
        crossed = {p.node.node_id for leg in legs for p in leg if p.node.node_id in domain}
        if not crossed:
            continue
        anchors = {domain[n] for n in crossed}
        if len(anchors) != 1 or any(len(leg) != 2 for leg in legs):
            odd.append(f.flow_id)
        else:
            inside[f.flow_id] = anchors.pop()
    return inside, odd


def test_nvlink_flows_by_pair_as_flow_by_flow():
    """``nvlink_flows`` decides a pair's flows together from the route tables (every ECMP choice), as
    each flow's own path would. Host 0 on NVSwitch 4, host 1 on NVSwitch 5, host 2 on both (linked
    to each other: one server, anchor 4); every host also on switch 6. Flows 0 <-> 2 and 2 <-> 1 cross
    one NVSwitch each way; 0 <-> 1 share none and take the fabric, as 0 <-> 3."""
    rate, nv_rate = 100 * 10**9, 2400 * 10**9
    links = [Link(0, 4, nv_rate, 1_000), Link(1, 5, nv_rate, 1_000), Link(4, 5, nv_rate, 1_000),
             Link(2, 4, nv_rate, 1_000), Link(2, 5, nv_rate, 1_000)]
    links += [Link(h, 6, rate, 1_000) for h in range(4)]
    topo = Topology(7, frozenset({4, 5, 6}), links, nvswitches=frozenset({4, 5}))
    cfg = config()
    cfg.fill_k_maps({rate, nv_rate})
    pairs = [(0, 1), (1, 0), (0, 2), (2, 0), (2, 1), (1, 2), (0, 3)]
    flows = flows_of([(s, d, 10_000, 0) for _ in range(8) for s, d in pairs])
    net = Run(Scenario("t", topo, flows, cfg)).net
    inside, odd = _nvlink_flows_per_flow(net, {4: 4, 5: 4})
    assert nvlink_flows(net) == (inside, odd)
    assert inside == {f.flow_id: 4 for f in flows if 2 in (f.src, f.dst)} and odd == []


def test_flows_on_one_connection_leave_in_order_by_rates_too():
    """Two flows queued on one NVLink connection (``fifo_after``): the second sends from the first's
    last byte, by rates as by packets (no hand-over: only one flow sends at a time), its FCT from 0."""
    topo, cfg = server()
    dag = Dag()
    a = dag.flow(0, 1, 300_000)
    dag.flow(0, 1, 300_000, fifo_after=dag.arg[a])
    ref = Run(from_dag("t", topo, dag, cfg)).run()
    fast = Run(from_dag("t", topo, dag, cfg), accel=FLUID).run()
    assert not any(d.packet_fids for d in fast.accel.fluid_domains.values())
    assert fast.start_ps == ref.start_ps == {0: 0, 1: 0}
    first, second = ref.finish_ps[0], ref.finish_ps[1]
    assert abs(fast.finish_ps[0] - first) < first // 1000 and abs(fast.finish_ps[1] - second) < second // 1000
    # the second flow's 300 packets follow the first's at the line rate (1,048 wire bytes at 2,880 Gb/s)
    tx = 1048 * 8 * 10**12 / 2880e9
    assert abs((second - first) - 300 * tx) < 2 * tx
