"""Parallel LPs: same answer on any LP count (in-process and mpiexec), plans, faults."""

import json
import subprocess
import sys
import time

import pytest
from helpers import MPIEXEC, ROOT, config, flows_of, needs_mpi, star_topo

from pwormhole.errors import InputError
from pwormhole.partition.plan import PartitionPlan, make_plan
from pwormhole.scenario import Scenario, fat_tree_mix_scenario
from pwormhole.simulate import simulate
from pwormhole.topology.hpcc import read_hpcc_topology

FAT = ROOT / "tests" / "data" / "hpcc" / "mix" / "fat.txt"


def incast_scenario():
    cfg = config("dcqcn", has_win=False)
    cfg.buffer_size_bytes = 2**20
    # 8 MB each without a window (HAS_WIN 0): ECN cuts them (CNPs) and PFC pauses them, and they
    # settle before their end (2 MB flows do not: no skip to check)
    return Scenario("incast", star_topo(9), flows_of([(s, 0, 8_000_000, 0) for s in range(1, 9)]), cfg)


SCENARIOS = {"fat_tree_mix": fat_tree_mix_scenario, "incast_pfc": incast_scenario}


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["packet", "wormhole"])
@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_fct_identical_for_1_2_3_lps(tmp_path, name, mode):
    from pwormhole.accel.wormhole import AccelConfig
    outs = []
    for n in (1, 2, 3):
        accel = AccelConfig(theta=0.3, min_span_packets=50) if mode == "wormhole" else None  # let short flows skip
        s = simulate(SCENARIOS[name](), str(tmp_path / f"lp{n}"), n_lps=n, quiet=True, accel=accel)
        assert s["complete"] and (s["ranks"], s["lps"]) == (1, n)
        counters = {k: s[k] for k in ("bytes_sent", "bytes_delivered", "drops", "pfc_pauses", "ecn_marks", "cnps",
                                      "nacks", "retransmitted_bytes", "events")}
        outs.append(((tmp_path / f"lp{n}" / "fct.txt").read_bytes(), (tmp_path / f"lp{n}" / "pfc.txt").read_bytes(),
                     counters))
        if mode == "wormhole":
            outs[-1] += ((s["skips"], s["memo_hits"], s["memo_misses"]),)
    assert outs[0] == outs[1] == outs[2]
    if name == "incast_pfc":
        assert outs[0][1] and outs[0][2]["cnps"] > 0, "the incast must exercise PFC and DCQCN's cuts"
    if mode == "wormhole" and name == "incast_pfc":  # (the mix's flows are too short to skip; see the pairs test)
        assert outs[0][3][0] > 0, "the wormhole variant must skip something"


@pytest.mark.slow
def test_rank_that_owns_nothing_works(tmp_path):
    scn = fat_tree_mix_scenario()
    owner = [0] * scn.topology.n_nodes  # LP 1 owns no node
    a = simulate(scn, str(tmp_path / "a"), quiet=True)
    b = simulate(fat_tree_mix_scenario(), str(tmp_path / "b"), n_lps=2, owner=owner, quiet=True)
    assert (tmp_path / "a" / "fct.txt").read_bytes() == (tmp_path / "b" / "fct.txt").read_bytes()
    assert b["events_by_rank"][1] == 0 and b["events"] == a["events"]


@pytest.mark.parametrize("parts", [2, 4, 8])
def test_partition_fat_tree_balanced(parts):
    plan = make_plan(read_hpcc_topology(FAT), parts)
    assert plan.imbalance <= 0.05
    assert sorted(set(plan.owner)) == list(range(parts))
    assert plan.cut_links and plan.lookahead_ps == 1_000_000
    # every cut link really joins two ranks
    assert all(plan.owner[a] != plan.owner[b] for a, b in plan.cut_links)


def test_partition_keeps_heavy_traffic_inside(tmp_path):
    scn = fat_tree_mix_scenario()
    plan = make_plan(scn.topology, 2, scn.flows)
    assert plan.edge_cut_bytes > 0 and plan.imbalance <= 0.15
    plan.to_json(str(tmp_path / "plan.json"))
    again = PartitionPlan.from_json(str(tmp_path / "plan.json"), scn.topology)
    assert again.owner == plan.owner
    with pytest.raises(InputError, match="nodes"):
        PartitionPlan.from_json(str(tmp_path / "plan.json"), star_topo(4))


def test_more_ranks_than_units_is_an_error():
    with pytest.raises(InputError, match="at most 5 ranks"):
        make_plan(star_topo(4), 6)


def test_partition_cli(tmp_path):
    r = subprocess.run([sys.executable, "-m", "pwormhole", "partition", "--parts", "4", "--topology", FAT,
                        "--save", tmp_path / "p.json"], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "edge cut 0 B (the given flows' bytes over cut links; 0 without a flow list)" in r.stdout
    assert "imbalance" in r.stdout
    assert json.loads((tmp_path / "p.json").read_text())["parts"] == 4


def test_partition_reads_topologies_as_run_does(tmp_path):
    """A builder spec and an htsim .topo (read as HPCC files before, with misleading errors); a
    topology beside --hpcc-config (silently the config's before) is refused."""
    def partition(*args):
        return subprocess.run([sys.executable, "-m", "pwormhole", "partition", "--parts", "2", *map(str, args)],
                              capture_output=True, text=True, cwd=ROOT, timeout=120)
    tiny = ROOT / "tests" / "data" / "htsim" / "topologies" / "leaf_spine_tiny.topo"
    for topo, nodes in (("fat-tree:k=4", 36), (tiny, None)):
        r = partition("--topology", topo)
        assert r.returncode == 0, r.stderr
        counted = sum(int(ln.split(":")[1].split()[0]) for ln in r.stdout.splitlines() if ln.strip().startswith("rank"))
        assert nodes is None or counted == nodes
    r = partition("--topology", FAT, "--hpcc-config", ROOT / "tests" / "data" / "hpcc" / "mix" / "config.txt")
    assert r.returncode == 2 and r.stderr.strip() == ("pwormhole: error: give either --hpcc-config or "
                                                      "--topology/--flows, not both")


def _mpirun(n, *args, env=None, timeout=180):
    import os
    e = dict(os.environ, **(env or {}))
    return subprocess.run([MPIEXEC, "-n", str(n), sys.executable, "-m", "pwormhole", "run", *map(str, args)],
                          capture_output=True, text=True, cwd=ROOT, timeout=timeout, env=e)


@pytest.mark.slow
@needs_mpi
def test_mpiexec_2_ranks_byte_identical(tmp_path):
    r1 = subprocess.run([sys.executable, "-m", "pwormhole", "run", "--mode", "packet", "--scenario", "fat-tree-mix",
                         "--out", tmp_path / "one", "--no-progress"],
                        capture_output=True, text=True, cwd=ROOT, timeout=180)
    assert r1.returncode == 0, r1.stderr
    r2 = _mpirun(2, "--scenario", "fat-tree-mix", "--out", tmp_path / "two", "--no-progress")
    assert r2.returncode == 0, r2.stderr
    assert (tmp_path / "one" / "fct.txt").read_bytes() == (tmp_path / "two" / "fct.txt").read_bytes()
    s = json.loads((tmp_path / "two" / "summary.json").read_text())
    assert s["ranks"] == 2 and len(s["events_by_rank"]) == 2 and all(e > 0 for e in s["events_by_rank"])
    assert s["events"] == json.loads((tmp_path / "one" / "summary.json").read_text())["events"]


@needs_mpi
def test_failing_rank_ends_the_whole_run(tmp_path):
    t0 = time.monotonic()
    r = _mpirun(2, "--scenario", "fat-tree-mix", "--out", tmp_path / "f", "--no-progress",
                env={"PWORMHOLE_FAIL_RANK": "1"}, timeout=60)
    assert time.monotonic() - t0 < 30
    assert r.returncode != 0
    assert "rank 1" in r.stderr and "injected failure" in r.stderr
    assert not (tmp_path / "f" / "fct.txt").exists()


def test_assignment_cutting_a_short_link_is_refused():
    from pwormhole.run import Run
    from pwormhole.topology.model import Link, Topology
    # two servers: GPU-like hosts joined to their switch by 25 ns links, switches by 1 us
    links = [Link(0, 2, 100 * 10**9, 25_000), Link(1, 3, 100 * 10**9, 25_000), Link(2, 3, 100 * 10**9, 1_000_000),
             Link(4, 2, 100 * 10**9, 1_000_000), Link(5, 3, 100 * 10**9, 1_000_000)]
    topo = Topology(6, frozenset({2, 3}), links)
    scn = Scenario("t", topo, flows_of([(0, 1, 10_000, 0)]), config("dcqcn"))
    with pytest.raises(InputError, match="shorter than the window"):
        Run(scn, n_lps=2, owner=[0, 0, 1, 1, 0, 1])
    plan = make_plan(topo, 2, scn.flows)
    assert plan.owner[0] == plan.owner[2] and plan.owner[1] == plan.owner[3]
    assert Run(scn, n_lps=2, owner=plan.owner).run().complete


PAIRS = ["--topology", "fat-tree:k=4", "--flows", ROOT / "tests" / "data" / "wormhole" / "fat_tree_pairs.txt"]
TRAINING = ["--model", "gpt-350m", "--gpus", "8", "--tp", "4", "--layers", "1", "--topology",
            "rail-optimized:gpus=8,gpus_per_server=4"]


INCAST = ["--topology", ROOT / "tests" / "data" / "incast" / "star9_topology.txt", "--flows",
          ROOT / "tests" / "data" / "incast" / "incast8_flows.txt", "--config",
          ROOT / "tests" / "data" / "incast" / "pfc_config.txt"]  # 8-to-1, 1 MB buffer: PFC pauses


@pytest.mark.slow
@needs_mpi
@pytest.mark.parametrize("name,args", [("pairs-wormhole", ["--mode", "wormhole", *PAIRS]),
                                       ("mix-wormhole", ["--mode", "wormhole", "--scenario", "fat-tree-mix"]),
                                       ("incast-packet", ["--mode", "packet", *INCAST]),
                                       ("incast-wormhole", ["--mode", "wormhole", *INCAST]),
                                       ("training-packet", ["--mode", "packet", *TRAINING]),
                                       ("training-wormhole", ["--mode", "wormhole", *TRAINING]),
                                       ("training-nvpkt", ["--mode", "wormhole", "--nvlink", "packet", *TRAINING]),
                                       ("training-nic-packet", ["--mode", "packet", "--nvlink-cc", "nic", *TRAINING])])
def test_mpiexec_identical_in_both_modes(tmp_path, name, args):
    """Wormhole decisions use replicated data only, so skips and memo hits are the same on any rank count."""
    one = subprocess.run([sys.executable, "-m", "pwormhole", "run", *map(str, args), "--out", tmp_path / "one",
                          "--no-progress"], capture_output=True, text=True, cwd=ROOT, timeout=180)
    assert one.returncode == 0, one.stderr
    three = subprocess.run([sys.executable, "-m", "pwormhole", "run", *map(str, args), "--lps", "3", "--out",
                            tmp_path / "three", "--no-progress"], capture_output=True, text=True, cwd=ROOT, timeout=180)
    assert three.returncode == 0, three.stderr
    two = _mpirun(2, *args, "--out", tmp_path / "two", "--no-progress")
    assert two.returncode == 0, two.stderr
    ref = (tmp_path / "one" / "fct.txt").read_bytes()
    assert ref and ref == (tmp_path / "two" / "fct.txt").read_bytes() == (tmp_path / "three" / "fct.txt").read_bytes()
    s1, s2 = (json.loads((tmp_path / d / "summary.json").read_text()) for d in ("one", "two"))
    assert s1["complete"] and s2["complete"] and s2["ranks"] == 2
    if "wormhole" in name:
        assert (s1["skips"], s1["memo_hits"], s1["memo_misses"]) == (s2["skips"], s2["memo_hits"], s2["memo_misses"])
    if name == "pairs-wormhole":
        assert s1["skips"] >= 2
    if name.startswith("incast"):
        assert s1["pfc_pauses"] > 0 and s1["drops"] == 0
        assert (tmp_path / "one" / "pfc.txt").read_bytes() == (tmp_path / "two" / "pfc.txt").read_bytes()
    if name == "training-wormhole":  # NVLink flows by rates (the default)
        assert s1["nvlink_model"] == s2["nvlink_model"] == "rates" and s1["fluid_flows"] == s2["fluid_flows"] > 0
    if name == "training-nvpkt":
        assert s1["nvlink_model"] == "packets" and s1["fluid_flows"] == 0
    if "training" in name:
        for d in ("two", "three"):
            one = (tmp_path / "one" / "collectives.csv").read_bytes()
            assert one == (tmp_path / d / "collectives.csv").read_bytes()


@pytest.mark.slow
@needs_mpi
def test_mpiexec_3_ranks_pfc_and_completions_reach_rank_0(tmp_path):
    """From three ranks the exchange is an ``Alltoallv`` of int64 buffers: the PFC records and the held
    completions of every rank reach rank 0, and the outputs are those of one rank."""
    one = subprocess.run([sys.executable, "-m", "pwormhole", "run", "--mode", "packet", *map(str, INCAST), "--out",
                          tmp_path / "one", "--no-progress"], capture_output=True, text=True, cwd=ROOT, timeout=180)
    assert one.returncode == 0, one.stderr
    three = _mpirun(3, "--mode", "packet", *INCAST, "--out", tmp_path / "three", "--no-progress")
    assert three.returncode == 0, three.stderr
    for name in ("fct.txt", "pfc.txt"):
        assert (tmp_path / "one" / name).read_bytes() == (tmp_path / "three" / name).read_bytes(), name
    s = json.loads((tmp_path / "three" / "summary.json").read_text())
    assert s["ranks"] == 3 and s["pfc_pauses"] > 0 and s["complete"]
    assert len((tmp_path / "one" / "fct.txt").read_text().splitlines()) == 8
