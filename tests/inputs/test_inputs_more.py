"""More inputs: HPCC traffic generator (gen-flows), htsim connection matrices and
fat-tree topologies, ASTRA-sim Chakra traces, and format detection.

Real files are copies in tests/data/{traffic_gen,htsim,chakra}/ (see SOURCES.md
there); malformed variants are written to ``tmp_path``.
"""

from __future__ import annotations

import argparse
import filecmp
import struct
from pathlib import Path

import pytest
from helpers import DATA, ROOT

from pwormhole.config import ModelConfig
from pwormhole.errors import InputError
from pwormhole.inputs.formats import (
    detect_flows_format,
    detect_topology_format,
    detect_workload_format,
    load_chakra,
    load_flows,
    load_topology,
)
from pwormhole.run import Run
from pwormhole.scenario import from_dag
from pwormhole.topology.builders import star
from pwormhole.topology.htsim import read_htsim_topology
from pwormhole.workload import gen_flows
from pwormhole.workload.chakra import find_rank_files, read_chakra, read_chakra_trace
from pwormhole.workload.dag import OP_COMPUTE, OP_FLOW, OP_MARK
from pwormhole.workload.gen_flows import generate_flows, read_cdf, write_hpcc_flows
from pwormhole.workload.hpcc_flows import read_hpcc_flows
from pwormhole.workload.htsim import UNBOUNDED_FLOW_BYTES, read_htsim_cm

TG = DATA / "traffic_gen"
HT = DATA / "htsim"
CM = HT / "connection_matrices"
TOPO = HT / "topologies"
CK = DATA / "chakra"
AR = CK / "all_reduce_8npus_1MB"
G = 10**9
US = 10**6
CDFS = {"WebSearch_distribution.txt": (12, 1_711_250.0), "FbHdp_distribution.txt": (20, 120_420.75),
        "AliStorage2019.txt": (9, 40_869.8), "GoogleRPC2008.txt": (843, 2_891.62)}


def err(exc) -> str:
    return str(exc.value)


def write(tmp_path: Path, name: str, text: str) -> str:
    p = tmp_path / name
    p.write_text(text)
    return str(p)


def test_copies_match_shared():
    shared = ROOT.parent / "shared" / "real_inputs"
    if not shared.is_dir():
        pytest.skip("shared/ not beside the repository")
    pairs = [(TG / n, shared / "hpcc" / "traffic_gen" / n) for n in CDFS]
    pairs += [(p, shared / "htsim" / "connection_matrices" / p.name) for p in CM.glob("*.cm")]
    pairs += [(p, shared / "htsim" / "topologies" / p.name) for p in TOPO.glob("*.topo")]
    pairs += [(p, shared / "astra-sim" / "chakra_et" / "all_reduce_8npus_1MB" / p.name) for p in AR.glob("*.et")]
    assert len(pairs) == 4 + 7 + 3 + 8
    for here, there in pairs:
        assert filecmp.cmp(here, there, shallow=False), here


# -- gen-flows ----------------------------------------------------------------------

@pytest.mark.parametrize("name", sorted(CDFS))
def test_read_cdf_real(name):
    cdf = read_cdf(TG / name)
    n, mean = CDFS[name]
    assert len(cdf.sizes) == n and cdf.percents[0] == 0 and cdf.percents[-1] == 100
    assert cdf.mean_bytes == pytest.approx(mean, rel=1e-6)
    assert cdf.value_at(0) == cdf.sizes[0] and cdf.value_at(100) == cdf.sizes[-1]


def test_cdf_interpolation():
    cdf = read_cdf(TG / "WebSearch_distribution.txt")  # 0 0 / 10000 15 / 20000 20 / ...
    assert cdf.value_at(7.5) == pytest.approx(5000)
    assert cdf.value_at(17.5) == pytest.approx(15000)


@pytest.mark.parametrize("name", sorted(CDFS))
def test_generated_load_and_mean_size(name):
    """Over ~50,000 flows the offered load and the mean size are within 2% of what was asked."""
    cdf = read_cdf(TG / name)
    topo = star(64)
    load, rate, n_target = 0.5, 100 * G, 50_000
    duration = int(n_target * cdf.mean_bytes * 8 * 10**12 / (64 * rate * load))
    flows = generate_flows(topo, cdf, load, duration, seed=3)
    assert abs(len(flows) - n_target) < 0.02 * n_target
    total = sum(f.size_bytes for f in flows)
    assert total / len(flows) == pytest.approx(cdf.mean_bytes, rel=0.02)
    assert total * 8 * 10**12 / (64 * rate * duration) == pytest.approx(load, rel=0.02)
    hosts = set(topo.hosts)
    assert all(f.src != f.dst and f.src in hosts and f.dst in hosts and 0 <= f.start_ps < duration for f in flows)
    assert [f.start_ps for f in flows] == sorted(f.start_ps for f in flows)
    assert [f.flow_id for f in flows] == list(range(len(flows)))
    assert all(f.size_bytes >= 1 and f.pg == 3 and f.dport == 100 for f in flows)
    # every host sends, and each source's flows are spread over the other hosts
    assert {f.src for f in flows} == hosts and len({f.dst for f in flows if f.src == 0}) > 50


def test_generation_is_seeded_and_uses_link_rates():
    cdf = read_cdf(TG / "AliStorage2019.txt")
    topo = read_htsim_topology(TOPO / "test.topo")  # 8 hosts at 200 Gbps
    a = generate_flows(topo, cdf, 0.4, 200 * US, seed=5)
    assert a == generate_flows(topo, cdf, 0.4, 200 * US, seed=5)
    assert a != generate_flows(topo, cdf, 0.4, 200 * US, seed=6)
    bytes_ = sum(f.size_bytes for f in a)
    load = bytes_ * 8 * 10**12 / (8 * 200 * G * 200 * US)
    assert 0.3 < load < 0.5  # ~1,000 flows: the 200 Gbps host links set the rate
    b = generate_flows(topo, cdf, 0.4, 200 * US, seed=5, host_rate_bps=100 * G, start_ps=2 * 10**12)
    assert len(b) < 0.6 * len(a) and min(f.start_ps for f in b) >= 2 * 10**12


def test_write_hpcc_flows_round_trip(tmp_path):
    cdf = read_cdf(TG / "FbHdp_distribution.txt")
    topo = star(16)
    flows = generate_flows(topo, cdf, 0.5, 100 * US, seed=1, start_ps=2 * 10**12)
    out = tmp_path / "flow.txt"
    write_hpcc_flows(out, flows)
    assert not (tmp_path / "flow.txt.part").exists()
    assert out.read_text().splitlines()[0] == str(len(flows))
    assert read_hpcc_flows(out, topo) == flows


@pytest.mark.parametrize("text,line,msg", [
    ("0 0\n100 50\n200 90\n", 3, "must end at 100 percent, found 90"),
    ("10 5\n100 100\n", 1, "must start at 0 percent, found '5'"),
    ("0 0\n100 60\n200 50\n300 100\n", 3, "cumulative percent '50' decreases (previous point: 60)"),
    ("0 0\n100 50\n100 70\n300 100\n", 3, "flow size '100' is not larger than the previous point's 100"),
    ("0 0\n100 50 7\n300 100\n", 2, "expected 'size_bytes cumulative_percent', found 3 values"),
    ("0 0\nabc 50\n300 100\n", 2, "flow size 'abc' is not a number"),
    ("0 0\n100 150\n", 2, "cumulative percent '150' is outside 0..100"),
    ("# only a comment\n0 0\n", 2, "a CDF needs at least two points"),
])
def test_read_cdf_errors(tmp_path, text, line, msg):
    p = write(tmp_path, "cdf.txt", text)
    with pytest.raises(InputError) as e:
        read_cdf(p)
    assert err(e).startswith(f"{p}:{line}: ") and msg in err(e)


def _gen_flows_cli(*argv) -> int:
    p = argparse.ArgumentParser(prog="pwormhole")
    sub = p.add_subparsers(dest="command", required=True)
    gen_flows.add_parser(sub)
    args = p.parse_args(["gen-flows", *argv])
    return args.func(args)


def test_gen_flows_command(tmp_path, capsys):
    out = tmp_path / "flows.txt"
    assert _gen_flows_cli("--cdf", str(TG / "WebSearch_distribution.txt"), "--load", "0.3", "--duration", "2ms",
                          "--hosts", "16", "--rate", "100Gbps", "--seed", "7", "--out", str(out)) == 0
    flows = read_hpcc_flows(out)
    assert flows and all(0 <= f.src < 16 and 0 <= f.dst < 16 for f in flows)
    assert f"wrote {len(flows)} flows" in capsys.readouterr().out
    out2 = tmp_path / "flows2.txt"
    _gen_flows_cli("--cdf", str(TG / "AliStorage2019.txt"), "--load", "0.5", "--duration", "50us",
                   "--topology", str(TOPO / "leaf_spine_tiny.topo"), "--out", str(out2))
    assert {f.src for f in read_hpcc_flows(out2)} <= set(range(32))
    for argv, msg in ((["--hosts", "4"], "--hosts needs --rate"), ([], "needs --topology FILE or --hosts N"),
                      (["--hosts", "4", "--rate", "1Gbps", "--duration", "3 parsecs"], "--duration"),
                      (["--hosts", "4", "--rate", "1Gbps", "--load", "0"], "load must be a positive number")):
        base = {"--cdf": str(TG / "AliStorage2019.txt"), "--load": "0.5", "--duration": "10us", "--out": str(out)}
        for k, v in zip(argv[::2], argv[1::2]):
            base[k] = v
        with pytest.raises(InputError) as e:
            _gen_flows_cli(*[x for kv in base.items() for x in kv])
        assert msg in err(e)


# -- htsim topologies ------------------------------------------------------------

def _degree(topo, node):
    return sum(1 for ln in topo.links if node in (ln.a, ln.b))


def test_htsim_leaf_spine_tiny():
    t = read_htsim_topology(TOPO / "leaf_spine_tiny.topo")
    # 32 hosts, 32/8 = 4 ToRs, 32*100/(100*4) = 8 uplinks over spines of down radix 4 -> 2 spines
    assert (t.n_nodes, len(t.hosts), len(t.switches), len(t.links)) == (38, 32, 6, 40)
    assert t.hosts == list(range(32)) and t.name == "leaf_spine_tiny"
    assert {(ln.rate_bps, ln.delay_ps) for ln in t.links} == {(100 * G, US)}
    assert [ln.b for ln in t.links[:32]] == [32 + h // 8 for h in range(32)]
    assert [_degree(t, s) for s in range(32, 38)] == [10, 10, 10, 10, 4, 4]


def test_htsim_three_tier_with_bundles():
    t = read_htsim_topology(TOPO / "test.topo")
    # 8 hosts, 2 pods of 2 ToRs; 2 aggs per pod; 8*200/100 = 16 agg uplinks / radix 4 = 4 cores, bundles of 2
    assert (t.n_nodes, len(t.hosts), len(t.links)) == (20, 8, 32)
    rates = [ln.rate_bps for ln in t.links]
    assert rates == [200 * G] * 16 + [100 * G] * 16
    tor_agg = [(ln.a, ln.b) for ln in t.links[8:16]]
    assert tor_agg == [(8, 12), (8, 13), (9, 12), (9, 13), (10, 14), (10, 15), (11, 14), (11, 15)]
    agg_core = [(ln.a, ln.b) for ln in t.links[16:]]
    assert agg_core[:4] == [(12, 16), (12, 16), (12, 18), (12, 18)]  # agg 0 -> cores 0, 2 (bundle 2)
    assert [_degree(t, c) for c in range(16, 20)] == [4, 4, 4, 4]


def test_htsim_fat_tree_1024():
    t = read_htsim_topology(TOPO / "fat_tree_1024.topo")
    assert (len(t.hosts), len(t.switches), len(t.links)) == (1024, 128 + 128 + 64, 3072)
    assert all(_degree(t, s) == 16 for s in range(1024, 1024 + 256)) and _degree(t, 1024 + 256) == 16


def test_htsim_switch_latency_is_split_over_links(tmp_path):
    text = (TOPO / "leaf_spine_tiny.topo").read_text().replace("Switch_Latency_ns 0", "Switch_Latency_ns 100", 1)
    t = read_htsim_topology(write(tmp_path, "lat.topo", text))
    assert t.links[0].delay_ps == US + 50_000 and t.links[-1].delay_ps == US + 50_000


@pytest.mark.parametrize("edit,line,msg", [
    (("Podsize 32\n", ""), 1, "missing pod size in header"),
    (("Radix_Up 2\n", "Radix_Up 2\nRadix_Up 2\n"), 9, "duplicate Radix_Up setting for tier 0 (first on line 8)"),
    (("Radix_Up 2\n", "Radix_Upp 2\n"), 8, "unknown key 'Radix_Upp'"),
    (("Radix_Up 2\n", "Radix_Up 4\n"), 8, "mismatch between ToR radix (8 down, 4 up) and oversubscription ratio of 4"),
    (("Tier 1\n", "Tier 2\n"), 13, "invalid tier 2: Tiers is 2"),
    (("Podsize 32\n", "Podsize 16\n"), 3, "a 2-tier topology needs Podsize equal to Nodes (32)"),
    (("Radix_Down 4\n", "Radix_Down 3\n"), 15, "8 ToR uplinks do not divide among 1 pod(s)"),
    (("Downlink_speed_Gbps 100\nRadix_Down 4\n", "Radix_Down 4\n"), 13, "missing Downlink_speed_Gbps for tier 1"),
    (("Radix_Down 8\n", "Radix_Down eight\n"), 7, "Radix_Down 'eight' is not a number"),
])
def test_htsim_topology_errors(tmp_path, edit, line, msg):
    text = (TOPO / "leaf_spine_tiny.topo").read_text()
    assert edit[0] in text
    p = write(tmp_path, "bad.topo", text.replace(edit[0], edit[1], 1))
    with pytest.raises(InputError) as e:
        read_htsim_topology(p)
    assert err(e).startswith(f"{p}:{line}: ") and msg in err(e)


def test_an_htsim_topology_with_an_unknown_header_key_is_named_as_htsims(tmp_path):
    """A bad key among the header's was 'unknown topology format' (detection gave up); the file is
    htsim's by its first line and Tiers, and the reader names the key and its line."""
    text = (TOPO / "leaf_spine_tiny.topo").read_text()
    lines = text.splitlines(keepends=True)
    at = next(i for i, ln in enumerate(lines) if ln.startswith("Podsize"))
    p = write(tmp_path, "unk.topo", "".join(lines[:at + 1] + ["Foo 3\n"] + lines[at + 1:]))
    assert detect_topology_format(p) == "htsim"
    with pytest.raises(InputError) as e:
        load_topology(p)
    assert err(e).startswith(f"{p}:{at + 2}: unknown key 'Foo'")


# -- htsim connection matrices ------------------------------------------------------

def test_htsim_cm_real_files():
    hosts = list(range(100, 228))  # htsim node i -> hosts[i]
    perm = read_htsim_cm(CM / "perm_16n_16c_2MB.cm", hosts)
    assert len(perm.flows) == 16 and len(perm) == 16
    assert sorted(f.src for f in perm.flows) == sorted(f.dst for f in perm.flows) == list(range(100, 116))
    assert (perm.flows[0].src, perm.flows[0].dst) == (107, 105) and perm.label[0] == "htsim:1"
    assert all(f.size_bytes == 2_000_000 for f in perm.flows)
    assert all(d == [] for d in perm.deps) and set(perm.not_before_ps) == {0}
    inc = read_htsim_cm(CM / "incast_128.cm", hosts)
    assert len(inc.flows) == 127 and {f.dst for f in inc.flows} == {133}
    oi = read_htsim_cm(CM / "outcast_incast.cm", hosts)
    assert [oi.label[oi.flow_op[i]] for i in range(21)] == [f"htsim:{k}" for k in range(1, 22)]
    assert sum(1 for f in oi.flows if f.src == 102) == 10
    assert len(read_htsim_cm(CM / "one.cm", hosts).flows) == 1
    assert len(read_htsim_cm(CM / "bidir.cm", hosts).flows) == 2
    big = read_htsim_cm(HT / "examples" / "permutation.cm", list(range(432)))
    assert len(big.flows) == 432 and {f.size_bytes for f in big.flows} == {UNBOUNDED_FLOW_BYTES}


TRIGGERS = """\
# a ring of three plus triggers of each kind
Nodes 6
Connections 8
Triggers 4
0->1 id 1 start 2.5 size 1000 send_done_trigger 1
1->2 id 2 trigger 1 size 2000 recv_done_trigger 2
0->3 id 3 trigger 1 size 3000 send_done_trigger 2
3->4 id 4 trigger 2 size 4000
5->4 id 5 start 0 size 1000 send_done_trigger 3
4->5 id 6 start 0 size 1000 send_done_trigger 3
2->0 id 7 trigger 3 size 500
2->1 id 8 trigger 4 size 0
trigger id 1 oneshot
trigger id 2 barrier count 2
trigger id 3 multishot
trigger id 4 multishot
"""


def test_htsim_triggers_map_to_dependencies(tmp_path):
    text = TRIGGERS.replace("Connections 8", "Connections 7").replace("2->1 id 8 trigger 4 size 0\n", "")
    p = write(tmp_path, "trig.cm", text)
    dag = read_htsim_cm(p, list(range(6)))
    op = {dag.label[o]: o for o in range(len(dag))}
    f = [dag.flows[dag.arg[op[f"htsim:{k}"]]] for k in range(1, 8)]
    assert [x.flow_id for x in f] == list(range(7))  # flow i = i-th connection line
    assert dag.not_before_ps[op["htsim:1"]] == 2_500_000
    # send_done of 0->1 seen at node 1 (its receiver): a mark on the sender waits for the ACK
    mark1 = op["htsim:1.send_done"]
    assert dag.kind[mark1] == OP_MARK and dag.host[mark1] == 0 and dag.deps[mark1] == [op["htsim:1"]]
    assert dag.deps[op["htsim:2"]] == [mark1]
    # ... and at node 0 (its sender): a direct dependency, satisfied on the ACK
    assert dag.deps[op["htsim:3"]] == [op["htsim:1"]]
    # barrier of 2 (recv_done of 1->2, send_done of 0->3) for 3->4: one join mark on node 3
    join = dag.deps[op["htsim:4"]]
    assert len(join) == 1 and dag.kind[join[0]] == OP_MARK and dag.host[join[0]] == 3
    # recv_done of 1->2: the flow itself; send_done of 0->3 happens at node 0: its sender's mark
    assert dag.deps[join[0]] == [op["htsim:2"], op["htsim:3.send_done"]]
    # multishot: its first target waits for the first activation in file order
    assert dag.deps[op["htsim:7"]] == [op["htsim:5.send_done"]]
    run = Run(from_dag("trig", star(6), dag, ModelConfig())).run()
    assert run.complete
    fin, st = run.finish_ps, run.start_ps
    assert st[0] == 2_500_000 and st[1] > fin[0] and st[2] >= fin[0] and st[3] > max(fin[1], fin[2])
    assert st[6] > fin[4]


def test_htsim_size_zero_runs_until_stop(tmp_path):
    dag = read_htsim_cm(write(tmp_path, "z.cm", "Nodes 2\nConnections 1\n0->1 start 0 size 0\n"), [0, 1])
    assert dag.flows[0].size_bytes == UNBOUNDED_FLOW_BYTES
    run = Run(from_dag("z", star(2), dag, ModelConfig())).run(until_ps=20 * US)
    assert not run.complete and run.finish_ps == {}


@pytest.mark.parametrize("edit,line,msg", [
    (("Connections 8", "Connections 9"), 3, "mismatch in connection count: Connections 9 but 8 connection lines"),
    (("Triggers 4", "Triggers 3"), 4, "mismatch in trigger count: Triggers 3 but 4 trigger lines"),
    (("start 2.5 size 1000", "start 2.5 size 1000 colour red"), 5, "unknown token 'colour'"),
    (("1->2 id 2 trigger 1", "1->2 id 2 start 0 trigger 1"), 6, "both start time and trigger specified"),
    (("2->0 id 7 trigger 3", "2->0 trigger 3"), 11, "is started by trigger 3 but has no 'id'"),
    (("0->3 id 3 trigger 1", "0->9 id 3 trigger 1"), 7, "destination node '9' is out of range 0..5"),
    (("trigger id 4 multishot\n", "trigger id 4\n"), 16, "trigger 4 with no kind"),
    (("trigger id 1 oneshot", "trigger id 1 oneshot\ntrigger id 1 barrier count 2"), 14, "trigger 1 defined twice"),
    (("size 1000 send_done_trigger 3\n4->5", "size 1000 send_done_trigger 9\n4->5"), 9, "trigger 9 (send_done_trigger"),
    (("id 3 trigger 1 size 3000 send_done_trigger 2", "id 3 trigger 1 size 3000 send_done_trigger 1"), 7,
     "oneshot trigger 1 is activated by 2 connections"),
    (("barrier count 2", "barrier count 3"), 14, "barrier trigger 2 needs 3 activations but only 2"),
    (("id 1 start 2.5 size 1000", "id 1 start 2.5 size -4"), 5, "size of connection 0->1 '-4' is out of range"),
    (("Nodes 6", "Nodes 6\nFailures 1"), 3, "link failures"),
])
def test_htsim_cm_errors(tmp_path, edit, line, msg):
    assert edit[0] in TRIGGERS
    p = write(tmp_path, "bad.cm", TRIGGERS.replace(edit[0], edit[1], 1))
    with pytest.raises(InputError) as e:
        read_htsim_cm(p, list(range(6)))
    assert err(e).startswith(f"{p}:{line}: ") and msg in err(e)


def test_htsim_cm_semantic_errors(tmp_path):
    p = write(tmp_path, "many.cm", "Nodes 8\nConnections 1\n0->7 start 0 size 1\n")
    with pytest.raises(InputError) as e:
        read_htsim_cm(p, list(range(4)))
    assert err(e) == f"{p}:1: Nodes 8 but the topology has only 4 hosts"
    cyc = ("Nodes 3\nConnections 3\nTriggers 2\n0->1 id 1 start 0 size 5\n1->2 id 2 trigger 1 size 5 "
           "send_done_trigger 2\n2->0 id 3 trigger 2 size 5 send_done_trigger 1\n"
           "trigger id 1 barrier count 1\ntrigger id 2 oneshot\n")
    p = write(tmp_path, "cyc.cm", cyc)
    with pytest.raises(InputError) as e:
        read_htsim_cm(p, list(range(3)))
    assert err(e).startswith(f"{p}:5: triggers wait on each other in a cycle")
    never = "Nodes 3\nConnections 1\nTriggers 1\n1->2 id 2 trigger 1 size 5\ntrigger id 1 oneshot\n"
    p = write(tmp_path, "never.cm", never)
    with pytest.raises(InputError) as e:
        read_htsim_cm(p, list(range(3)))
    assert err(e).startswith(f"{p}:4: trigger 1 is never activated")


# -- Chakra traces -----------------------------------------------------------------

def test_chakra_real_rank_file():
    tr = read_chakra_trace(AR / "all_reduce.3.et")
    assert tr.version == "0.0.4" and len(tr.nodes) == 1
    nd = tr.nodes[0]
    assert (nd.id, nd.name, nd.type_name) == (3, "all_reduce_8npus_1MB", "COMM_COLL_NODE")
    assert nd.attrs == {"is_cpu_op": False, "comm_type": 0, "comm_size": 1_048_576}
    assert find_rank_files(AR) == find_rank_files(AR / "all_reduce") == find_rank_files(f"{AR}/all_reduce.") \
        == find_rank_files(AR / "all_reduce.5.et")
    assert [Path(p).name for p in find_rank_files(AR)] == [f"all_reduce.{r}.et" for r in range(8)]


def test_chakra_all_reduce_dag():
    hosts = [10 + 2 * r for r in range(8)]
    dag = read_chakra(AR, hosts)
    assert len(dag.collectives) == 1
    c = dag.collectives[0]
    assert (c.kind, c.group, c.size_bytes, c.name) == ("allreduce", list(range(8)), 1_048_576, "all_reduce_8npus_1MB")
    assert len(dag.flows) == 8 * 14 and {f.size_bytes for f in dag.flows} == {131_072}  # 2(N-1) steps of S/N
    assert [dag.host[m] for m in c.done_ops] == hosts and dag.gpu_of_host == {h: r for r, h in enumerate(hosts)}


# a minimal protobuf writer for synthetic traces (et_def.proto field numbers)
def _varint(v: int) -> bytes:
    v &= (1 << 64) - 1
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        out.append(b | (0x80 if v else 0))
        if not v:
            return bytes(out)


def _ld(num: int, payload: bytes) -> bytes:
    return _varint(num << 3 | 2) + _varint(len(payload)) + payload


def _vi(num: int, v: int) -> bytes:
    return _varint(num << 3) + _varint(v)


def _attr(name: str, v) -> bytes:
    body = _ld(1, name.encode())
    if isinstance(v, bool):
        body += _vi(27, int(v))
    elif isinstance(v, int):
        body += _vi(9, v)
    elif isinstance(v, str):
        body += _ld(29, v.encode())
    else:
        body += _varint(3 << 3 | 1) + struct.pack("<d", v)
    return _ld(10, body)


def _node(nid, name, ntype, deps=(), data_deps=(), dur=0, **attrs) -> bytes:
    b = _vi(1, nid) + _ld(2, name.encode()) + _vi(3, ntype)
    if deps:
        b += _ld(4, b"".join(_varint(d) for d in deps))  # packed
    for d in data_deps:
        b += _vi(5, d)  # unpacked
    if dur:
        b += _vi(7, dur)
    b += _vi(6, 123)  # start_time_micros: read and ignored
    for k, v in attrs.items():
        b += _attr(k, v)
    return b


def _trace(dirpath: Path, name: str, per_rank: list[list[bytes]]) -> Path:
    dirpath.mkdir(exist_ok=True)
    for r, nodes in enumerate(per_rank):
        meta = _ld(1, b"0.0.4") + _ld(2, _ld(1, b"schema") + _ld(29, b"1.0.2-chakra.0.0.4"))
        data = _varint(len(meta)) + meta + b"".join(_varint(len(n)) + n for n in nodes)
        (dirpath / f"{name}.{r}.et").write_bytes(data)
    return dirpath / name


def _synthetic(r: int) -> list[bytes]:
    """Rank r of 4: compute, then send to r+1 / receive from r-1 (ranks 0..2 -> 1..3), then an all-gather
    of pg "tp" on ranks 0,1 or 2,3 ... here every rank runs pg "all" collectives too."""
    COMP, SEND, RECV, COLL = 4, 5, 6, 7
    nodes = [_node(100 + r, "fwd", COMP, dur=5 + r)]
    deps = [100 + r]
    if r < 3:
        nodes.append(_node(200 + r, "send", SEND, deps=[100 + r], comm_dst=r + 1, comm_size=4096, comm_tag=7))
        deps = [200 + r]
    if r > 0:
        nodes.append(_node(300 + r, "recv", RECV, data_deps=[100 + r], comm_src=r - 1, comm_size=4096, comm_tag=7))
        deps = deps + [300 + r]
    nodes.append(_node(400 + r, "ag", COLL, deps=deps, comm_type=2, comm_size=1000, pg_name="g" + str(r // 2)))
    nodes.append(_node(500 + r, "ar", COLL, deps=[400 + r], comm_type=0, comm_size=8000, is_cpu_op=False))
    nodes.append(_node(600 + r, "bar", COLL, deps=[500 + r], comm_type=9))
    return nodes


def test_chakra_synthetic_trace(tmp_path):
    prefix = _trace(tmp_path / "syn", "job", [_synthetic(r) for r in range(4)])
    dag = read_chakra(prefix, [0, 1, 2, 3])
    comp = [o for o in range(len(dag)) if dag.kind[o] == OP_COMPUTE]
    assert [(dag.host[o], dag.arg[o]) for o in comp] == [(r, (5 + r) * US) for r in range(4)]
    kinds = [(c.kind, c.group, c.size_bytes) for c in dag.collectives]
    assert kinds == [("allgather", [0, 1], 2000), ("allgather", [2, 3], 2000), ("allreduce", [0, 1, 2, 3], 8000),
                     ("barrier", [0, 1, 2, 3], 0)]
    p2p = [f for f in dag.flows if f.size_bytes == 4096]
    assert [(f.src, f.dst) for f in p2p] == [(0, 1), (1, 2), (2, 3)]
    # the send's flow waits for its compute; the receive mark waits for the flow and its own compute
    f01 = dag.flow_op[p2p[0].flow_id]
    assert dag.deps[f01] == [comp[0]]
    recv1 = [o for o in range(len(dag)) if dag.label[o] == "r1:recv"][0]
    assert dag.kind[recv1] == OP_MARK and dag.host[recv1] == 1 and sorted(dag.deps[recv1]) == sorted([f01, comp[1]])
    # all-gather members wait for the send (flow op, satisfied on ACK) and the receive mark
    ag = dag.collectives[0]
    first_ag = [o for o in range(ag.first_op, ag.last_op) if dag.kind[o] == OP_FLOW and dag.host[o] == 1][0]
    assert sorted(dag.deps[first_ag]) == sorted([dag.flow_op[p2p[1].flow_id], recv1])
    bar = dag.collectives[3]
    ar_done = dag.collectives[2].done_ops
    assert all(sorted(dag.deps[m]) == sorted(ar_done) for m in bar.done_ops)
    run = Run(from_dag("syn", star(4), dag, ModelConfig())).run()
    assert run.complete
    assert min(run.op_times[m][1] for m in bar.done_ops) >= max(run.op_times[m][1] for m in ar_done)


def test_a_broken_chakra_trace_is_detected_as_one(tmp_path):
    """A trace with a rank file missing, or a rank file that is no protobuf, was 'unknown workload
    format' (or 'no such file ... prefix'); it is Chakra's by its .et files, and the reader names
    the fault."""
    miss = tmp_path / "miss"
    miss.mkdir()
    for f in AR.glob("*.et"):
        if f.name != "all_reduce.3.et":
            (miss / f.name).write_bytes(f.read_bytes())
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "x.0.et").write_text("garbage\n")
    for path, msg in ((miss, "rank file(s) missing for rank(s) [3]"), (bad / "x", "not a Chakra trace"),
                      (bad / "x.0.et", "not a Chakra trace")):
        assert detect_workload_format(path) == "chakra"
        with pytest.raises(InputError) as e:
            load_chakra(path, star(8))
        assert msg in err(e), err(e)


def test_chakra_errors(tmp_path):
    good = [_synthetic(r) for r in range(4)]

    def bad(name, per_rank, msg, hosts=4):
        prefix = _trace(tmp_path / name, "job", per_rank)
        with pytest.raises(InputError) as e:
            read_chakra(prefix, list(range(hosts)))
        assert msg in err(e), err(e)
        return err(e)

    bad("few_hosts", good, "the trace has 4 ranks but the topology has only 3 GPUs", hosts=3)
    e = bad("sizes", good[:3] + [good[3][:-3] + [_node(403, "ag", 7, comm_type=2, comm_size=999, pg_name="g1")]
                                 + good[3][-2:]], "collective #1 of pg_name 'g1' differs between ranks")
    assert "job.3.et" in e
    bad("norecv", good[:1] + [[n for n in good[1] if b"recv" not in n]] + good[2:],
        "COMM_SEND node 200 ('send') of rank 0 (rank 0 -> rank 1, tag 7) has no matching COMM_RECV")
    bad("dep", [good[0][:1] + [_node(999, "x", 4, deps=[12345], dur=1)] + good[0][1:]] + good[1:],
        "node 999 ('x') depends on node 12345, which is not in the trace")
    bad("bcast", [[_node(1, "b", 7, comm_type=5, comm_size=8)] for _ in range(4)],
        "collective type BROADCAST is not supported")
    bad("count", [good[r] if r else good[r][:-1] for r in range(4)], "rank 0 has 1 collectives of the default group")
    prefix = _trace(tmp_path / "trunc", "job", good)
    data = Path(f"{prefix}.2.et").read_bytes()
    Path(f"{prefix}.2.et").write_bytes(data[:-5])
    with pytest.raises(InputError) as e:
        read_chakra(prefix, list(range(4)))
    assert err(e).startswith(f"{prefix}.2.et: not a Chakra trace: node record") and "runs past the end" in err(e)
    Path(f"{prefix}.2.et").unlink()
    with pytest.raises(InputError) as e:
        read_chakra(prefix, list(range(4)))
    assert "rank file(s) missing for rank(s) [2]" in err(e)


# -- format detection and dispatch ------------------------------------------------------

def test_detect_formats(tmp_path):
    assert detect_topology_format(TOPO / "test.topo") == "htsim"
    assert detect_topology_format(DATA / "hpcc" / "mix" / "topology.txt") == "hpcc"
    assert detect_topology_format(CK / "8_nodes_1_switch_topology.txt") == "hpcc"
    assert detect_topology_format(DATA / "simai_topo" / "Rail_Opti_SingleToR_16g_8gps_200Gbps_H20") == "simai"
    assert detect_flows_format(CM / "incast.cm") == "htsim"
    assert detect_flows_format(DATA / "hpcc" / "mix" / "flow.txt") == "hpcc"
    assert detect_workload_format(AR) == "chakra"
    assert detect_workload_format(AR / "all_reduce") == "chakra"
    assert detect_workload_format(AR / "all_reduce.0.et") == "chakra"
    assert detect_workload_format(DATA / "simai" / "simai" / "example" / "microAllReduce.txt") == "simai"
    with pytest.raises(InputError) as e:
        detect_topology_format(CM / "incast.cm")
    assert err(e).startswith(f"{CM / 'incast.cm'}:1: unknown topology format (tried hpcc")
    assert "simai" in err(e) and "htsim" in err(e) and "\n" not in err(e)
    with pytest.raises(InputError) as e:
        detect_flows_format(TOPO / "test.topo")
    assert "unknown flow file format (tried hpcc" in err(e) and "htsim" in err(e)
    with pytest.raises(InputError) as e:
        detect_topology_format(AR / "all_reduce.0.et")
    assert "binary file (tried hpcc, simai, htsim)" in err(e)
    with pytest.raises(InputError) as e:
        detect_workload_format(tmp_path / "nothing")
    assert "cannot open workload" in err(e)


def test_load_dispatch():
    topo = load_topology(TOPO / "leaf_spine_tiny.topo")
    flows, dag = load_flows(CM / "perm_16n_16c_2MB.cm", topo)
    assert dag is not None and flows is dag.flows and len(flows) == 16
    hp = load_topology(DATA / "hpcc" / "mix" / "topology.txt")
    flows, dag = load_flows(DATA / "hpcc" / "mix" / "flow.txt", hp)
    assert dag is None and len(flows) == 2
    assert load_topology(TOPO / "test.topo", fmt="htsim").n_nodes == 20
    with pytest.raises(InputError) as e:
        load_topology(TOPO / "test.topo", fmt="hpcc")  # forced: the HPCC reader's own error
    assert "node count" in err(e) and "'Nodes'" in err(e)
    with pytest.raises(InputError) as e:
        load_flows(CM / "one.cm", topo, fmt="ns3")
    assert "unknown flow file format 'ns3' (known: hpcc, htsim)" in err(e)


# -- packet-level runs ----------------------------------------------------------------

def _cfg(topo) -> ModelConfig:
    cfg = ModelConfig()
    cfg.fill_k_maps({ln.rate_bps for ln in topo.links})
    return cfg


def test_run_htsim_permutation_on_leaf_spine():
    """htsim's perm_16n_16c_2MB.cm over its leaf_spine_tiny.topo (4:1 oversubscribed ToRs)."""
    topo = load_topology(TOPO / "leaf_spine_tiny.topo")
    _, dag = load_flows(CM / "perm_16n_16c_2MB.cm", topo)
    run = Run(from_dag("perm", topo, dag, _cfg(topo))).run()
    assert run.complete and len(run.finish_ps) == 16
    # hosts 0-15 sit on ToRs 0 and 1; their flows to the other ToR share 2 x 100 Gbps uplinks, by ECMP:
    # between all on both uplinks and all on one
    per_tor = max(sum(1 for f in dag.flows if f.src // 8 == t and f.dst // 8 != t) for t in (0, 1))
    one_flow = 2_000_000 * 8 * 10**12 // (100 * G)
    assert per_tor == 4 and per_tor * one_flow // 2 < run.last_end_ps() < 1.1 * per_tor * one_flow + 20 * US
    print(f"perm_16n_16c_2MB on leaf_spine_tiny: last completion {run.last_end_ps() / US:.3f} us")


def test_run_chakra_all_reduce():
    """ASTRA-sim's 8-NPU 1 MiB all-reduce over its 8-node, one-switch ns-3 topology (400 Gbps, 500 ns)."""
    topo = load_topology(CK / "8_nodes_1_switch_topology.txt")
    dag = load_chakra(AR, topo)
    run = Run(from_dag("allreduce", topo, dag, _cfg(topo))).run()
    assert run.complete
    ideal = 2 * 7 * 131_072 * 8 * 10**12 // (400 * G)  # 14 ring steps of S/N at line rate
    t = max(run.op_times[m][1] for m in dag.collectives[0].done_ops)
    assert ideal < t < ideal + 14 * 5 * US
    print(f"Chakra all_reduce_8npus_1MB: all-reduce done at {t / US:.3f} us")
