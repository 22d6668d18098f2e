"""Training iterations: SimAI/AICB workloads and built-in models on GPU fabrics."""

import json
import subprocess
import sys

import pytest
from helpers import ROOT

from pwormhole.errors import InputError
from pwormhole.run import Run
from pwormhole.scenario import topology_from_arg, training_scenario
from pwormhole.simulate import simulate
from pwormhole.topology.simai import read_simai_topology
from pwormhole.workload.dag import OP_FLOW
from pwormhole.workload.models import build_model, per_gpu_bytes
from pwormhole.workload.simai import read_simai_workload
from pwormhole.workload.training import build_training_dag

SIMAI = ROOT / "tests" / "data" / "simai"
TOPO16 = ROOT / "tests" / "data" / "simai_topo" / "Rail_Opti_SingleToR_16g_8gps_200Gbps_H20"


def simai_file(name):
    hits = sorted(SIMAI.rglob(name))
    assert hits, name
    return hits[0]


@pytest.mark.slow
def test_micro_allreduce_on_simai_rail_topology(tmp_path):
    """TP groups of 8 GPUs (the 2 NVSwitches are not GPUs), over NVLink; one iteration reported."""
    topo = read_simai_topology(TOPO16)
    spec = read_simai_workload(simai_file("microAllReduce.txt"))
    assert (spec.tp, spec.all_gpus) == (8, 8)
    scn = training_scenario(spec, topo)
    s = simulate(scn, str(tmp_path), quiet=True)
    assert s["complete"] and len(s["iterations"]) == 1 and s["iterations"][0] > 0
    rows = (tmp_path / "collectives.csv").read_text().splitlines()[1:]
    assert len(rows) == 2 and all(r.split(",")[3] == "8" for r in rows)  # two all-reduces of 8 members
    # every flow stays inside server 0 and goes over its NVSwitch (node 16)
    nv = min(topo.nvswitches)
    assert {f.src for f in scn.flows} == set(range(8))
    net = Run(scn).net
    assert all(net.nodes[f.src].routes[f.dst][0].peer.node_id == nv for f in scn.flows)
    # ring all-reduce bytes: 2 x 7 steps of S/8 per member, for S = 16 MiB and 64 MiB
    assert s["bytes_delivered"] == 8 * 14 * (16777216 // 8 + 67108864 // 8)


def test_workload_larger_than_topology_is_refused():
    spec = read_simai_workload(simai_file("workload_gpt7b_64g.txt"))
    with pytest.raises(InputError, match="needs 64 GPUs but the topology has only 16"):
        training_scenario(spec, read_simai_topology(TOPO16))


def test_pipeline_dp_groups_and_bytes_match_closed_form():
    """A built-in GPT with TP 2, DP 2, PP 2 and two micro-batches: the DAG's per-GPU
    bytes equal the closed-form volume, and DP groups pair GPUs of the same stage."""
    spec = build_model("gpt-350m", 8, tp=2, pp=2, layers=2, seq_len=256, ga=2)
    assert spec.dp == 2
    dag = build_training_dag(spec, list(range(8)))
    expected = per_gpu_bytes(spec)
    assert dag.bytes_sent_by_host() == expected
    dp_pairs = {tuple(c.group) for c in dag.collectives if c.name.endswith(".dp0") or ".dp" in c.name}
    assert (0, 2) in dp_pairs and (4, 6) in dp_pairs  # gpu = t + tp*(d + dp*p)
    pp_flows = {(f.src, f.dst) for op, f in zip(dag.flow_op, dag.flows) if ".pp_" in dag.label[op]}
    assert pp_flows == {(g, g + 4) for g in range(4)} | {(g + 4, g) for g in range(4)}


def test_moe_alltoall_bytes_match_closed_form():
    spec = build_model("moe-8x7b", 8, tp=2, ep=2, layers=1, seq_len=128)
    dag = build_training_dag(spec, list(range(8)))
    assert dag.bytes_sent_by_host() == per_gpu_bytes(spec)
    assert any(c.kind == "alltoall" and len(c.group) == 2 for c in dag.collectives)


def test_distributed_optimizer_one_reduce_scatter_and_one_all_gather():
    """--dist-opt: no per-layer DP all-reduce; one reduce-scatter of the stage's gradients
    (ceil(P/tp)*2 bytes per layer block, by hand) after the last backward op and one
    all-gather of the parameters after the update; DAG bytes = closed form; both
    collectives finish inside the iteration, the all-gather last."""
    spec = build_model("gpt-350m", 8, tp=2, pp=2, layers=2, seq_len=128, ga=2, dist_opt=True)
    h = 1024
    p_attn, p_mlp = 4 * h * h + 4 * h + 2 * h, 2 * h * 4 * h + 4 * h + h + 2 * h
    stage = 1 * (-(-p_attn // 2) + -(-p_mlp // 2)) * 2  # one layer per stage, tp 2, BF16
    rs = [(ly.name, ly.weight_grad) for ly in spec.layers if ly.weight_grad.comm != "NONE"]
    assert [(n, w.comm, w.group, w.size_bytes) for n, w in rs] == [
        ("mb1.layer0.attention", "REDUCESCATTER", "dp", stage)]
    assert (spec.param_allgather.comm, spec.param_allgather.group, spec.param_allgather.size_bytes) == (
        "ALLGATHER", "dp", stage)
    dag = build_training_dag(spec, list(range(8)))
    assert dag.bytes_sent_by_host() == per_gpu_bytes(spec)
    kinds = sorted(c.kind for c in dag.collectives if ".dp" in c.name)
    assert kinds == ["allgather"] * 4 + ["reducescatter"] * 4  # 2 stages x 2 DP groups each
    with pytest.raises(InputError, match="dense models only"):
        build_model("moe-8x7b", 8, tp=2, ep=2, layers=1, dist_opt=True)


def test_zero3_gathers_each_layer_twice_and_reduce_scatters_once():
    """--zero 3, GPT-350M, TP 2, DP 2, 2 layers, 2 micro-batches: each layer's TP shard of
    parameters (ceil(P_attn/2) + ceil(P_mlp/2) = 6,298,112 params, 12,596,224 bytes, by hand) is
    all-gathered over DP before every forward and every backward of the layer, its gradients
    reduce-scattered once, after the last micro-batch's weight gradients; no DP all-reduce. In the
    DAG of one DP group, per layer and micro-batch: gather, forward, ..., re-gather, backward, and
    on the last micro-batch the reduce-scatter after the layer's backward."""
    spec = build_model("gpt-350m", 4, tp=2, layers=2, seq_len=128, ga=2, zero=3)
    h = 1024
    p_attn, p_mlp = 4 * h * h + 4 * h + 2 * h, 2 * h * 4 * h + 4 * h + h + 2 * h
    shard = (-(-p_attn // 2) + -(-p_mlp // 2)) * 2
    assert shard == 12_596_224
    comms = [(ly.name, col, ph.comm, ph.group, ph.size_bytes) for ly in spec.layers
             for col, ph in (("fwd", ly.forward), ("ig", ly.input_grad), ("wg", ly.weight_grad))
             if ph.group in ("dp", "none") and ph.comm != "NONE"]
    assert comms == [(f"mb{m}.layer{i}.{line}", col, kind, "dp", shard)
                     for m in (0, 1) for i in (0, 1)
                     for line, col, kind in (("zero_gather", "fwd", "ALLGATHER"),)
                     + ((("zero_gather", "wg", "REDUCESCATTER"),) if m == 1 else ())
                     + (("zero_regather", "ig", "ALLGATHER"),)]
    dag = build_training_dag(spec, list(range(4)))
    assert dag.bytes_sent_by_host() == per_gpu_bytes(spec)
    # one member sends (N-1) ceil(S/N) per all-gather and reduce-scatter: 2 x 2 x 2 gathers, 2 reduce-scatters
    dp_bytes = (8 + 2) * (shard // 2)
    tp_bytes = 2 * 2 * 2 * 2 * 2 * (-(-(128 * h * 2) // 2))  # mb x layers x blocks x (fwd, ig) all-reduces of S_act
    assert per_gpu_bytes(spec)[0] == dp_bytes + tp_bytes
    # (the forward passes of both micro-batches, then their backward passes, as training.py runs them)
    order = [c.name.split(".", 1)[1].rsplit(".", 2)[0] for c in dag.collectives if c.name.endswith(".dp0")]
    assert order == ["mb0.layer0.zero_gather", "mb0.layer1.zero_gather", "mb1.layer0.zero_gather",
                     "mb1.layer1.zero_gather", "mb0.layer1.zero_regather", "mb0.layer0.zero_regather",
                     "mb1.layer1.zero_regather", "mb1.layer1.zero_gather", "mb1.layer0.zero_regather",
                     "mb1.layer0.zero_gather"]
    for bad, msg in (({"zero": 2}, "only ZeRO stage 3"), ({"zero": 3, "dist_opt": True}, "give one")):
        with pytest.raises(InputError, match=msg):
            build_model("gpt-350m", 4, tp=2, layers=2, **bad)
    with pytest.raises(InputError, match="dense models only"):
        build_model("moe-8x7b", 8, tp=2, ep=2, layers=1, zero=3)


@pytest.mark.slow
def test_zero3_runs(tmp_path):
    """The same job on two 2-GPU servers, packet mode: every forward of a layer starts after its
    gather ended (the gather blocks); layer 1's reduce-scatter does not block: it runs beside
    layer 0's re-gather on the same ring, both starting at once and each taking twice a gather
    alone within 2% (562.2 us against 283.1 us); the iteration ends after the last reduce-scatter."""
    spec = build_model("gpt-350m", 4, tp=2, layers=2, seq_len=128, ga=2, zero=3)
    topo = topology_from_arg("rail-optimized:gpus=4,gpus_per_server=2")
    s = simulate(training_scenario(spec, topo), str(tmp_path), quiet=True)
    rows = {r.split(",")[0]: r.split(",") for r in (tmp_path / "collectives.csv").read_text().splitlines()[1:]}
    g0 = rows["it0.mb0.layer0.zero_gather.fwd.dp0"]
    a0 = rows["it0.mb0.layer0.attention.fwd.tp0"]
    assert (g0[1], int(g0[3]), int(g0[4]), int(g0[5])) == ("allgather", 2, 12_596_224, 0)
    assert int(a0[5]) > int(g0[6])  # the attention's forward compute, then its all-reduce, after the gather
    rs = [rows[f"it0.mb1.layer{i}.zero_gather.wg.dp0"] for i in (1, 0)]
    regather0 = rows["it0.mb1.layer0.zero_regather.ig.dp0"]
    alone = int(g0[7])
    assert rs[0][5] == regather0[5]  # (both wait only for layer 1's weight gradients)
    assert abs(int(rs[0][7]) - 2 * alone) < 0.02 * alone and abs(int(regather0[7]) - 2 * alone) < 0.02 * alone
    assert s["complete"] and s["iterations"][0] >= max(int(r[6]) for r in rs)


@pytest.mark.slow
def test_distributed_optimizer_runs(tmp_path):
    """TP 2, PP 2, DP 2, two micro-batches: in each DP group the reduce-scatter starts after
    the group's last pipeline backward flow and ends before its all-gather starts; the
    iteration ends with the last all-gather."""
    spec = build_model("gpt-350m", 8, tp=2, pp=2, layers=2, seq_len=128, ga=2, dist_opt=True)
    topo = topology_from_arg("rail-optimized:gpus=8,gpus_per_server=4")
    s = simulate(training_scenario(spec, topo), str(tmp_path), quiet=True)
    rows = [r.split(",") for r in (tmp_path / "collectives.csv").read_text().splitlines()[1:]]
    names = [r[0] for r in rows]
    assert len(set(names)) == len(names)  # one name per collective instance (pipeline sends name their GPU)
    assert "it0.mb1.pp_bwd.s1.gpu4" in names
    dp = {}
    for r in rows:
        if ".dp" in r[0]:
            dp.setdefault(r[0].rsplit(".", 1)[1], {})[r[1]] = (int(r[5]), int(r[6]))
    assert sorted(dp) == ["dp0", "dp1", "dp4", "dp5"] and all(len(v) == 2 for v in dp.values())
    pp_bwd_end = max(int(r[6]) for r in rows if "pp_bwd" in r[0])
    for grp, v in dp.items():
        assert v["reducescatter"][1] <= v["allgather"][0], grp
    assert min(v["reducescatter"][0] for g, v in dp.items() if g in ("dp0", "dp1")) >= pp_bwd_end  # stage 0 last
    assert s["complete"] and abs(s["iterations"][0] - max(v["allgather"][1] for v in dp.values())) <= 1


@pytest.fixture(scope="module")
def small_training():
    spec = build_model("gpt-350m", 8, tp=4, layers=1, seq_len=128)
    topo = topology_from_arg("rail-optimized:gpus=8,gpus_per_server=4")
    return lambda: training_scenario(spec, topo, iterations=2)


@pytest.mark.slow
def test_training_iterations_identical_on_any_lp_count(small_training):
    ref = Run(small_training()).run()
    assert ref.complete
    for n in (2, 3):
        r = Run(small_training(), n_lps=n).run()
        assert (r.finish_ps, r.start_ps, r.op_times) == (ref.finish_ps, ref.start_ps, ref.op_times)


@pytest.mark.slow
def test_second_iteration_starts_after_the_first(small_training):
    scn = small_training()
    r = Run(scn).run()
    dag = scn.dag
    end0 = max(t1 for op, (t0, t1) in r.op_times.items() if dag.iteration_of[op] == 0)
    first1 = min(r.start_ps[dag.arg[op]] for op in range(len(dag))
                 if dag.iteration_of[op] == 1 and dag.kind[op] == OP_FLOW)
    assert first1 >= end0 - 10**9  # iteration 1 of each GPU starts after its own update; iterations barely overlap
    assert first1 > 0


def cli(*args, timeout=300):
    return subprocess.run([sys.executable, "-m", "pwormhole", *map(str, args)], capture_output=True, text=True,
                          cwd=ROOT, timeout=timeout)


@pytest.mark.slow
def test_cli_default_is_one_gpt_iteration(tmp_path):
    """The default: one GPT-7B iteration on 64 GPUs (TP 8, PP 2, DP 4, distributed optimizer), where
    Wormhole fast-forwards the DP reduce-scatters and all-gathers; its report is written."""
    r = cli("run", "--out", tmp_path, "--no-progress", "--plot")
    assert r.returncode == 0, r.stderr
    s = json.loads((tmp_path / "summary.json").read_text())
    assert s["scenario"] == "gpt-7b-64gpu" and s["mode"] == "wormhole" and s["cc"] == "dcqcn"
    assert s["complete"] and len(s["iterations"]) == 1 and s["iteration_time_ns"] == s["iterations"][0]
    rows = (tmp_path / "collectives.csv").read_text().splitlines()
    assert len(rows) - 1 == s["collectives"]["count"] > 0
    kinds = {r.split(",")[1] for r in rows[1:]}
    assert {"reducescatter", "allgather"} <= kinds  # the distributed optimizer's DP collectives
    assert len(s["gpus"]) == 64 and all(g["compute_ns"] > 0 for g in s["gpus"])
    assert all(0 <= g["exposed_comm_ns"] <= g["comm_ns"] for g in s["gpus"])
    assert (tmp_path / "timeline.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # Wormhole does its job: most flow-time skipped, the events stand for far more packet-level ones
    assert s["skips"] > 0 and s["skipped_time_fraction"] > 0.5
    assert s["packet_events_est"] > 100 * s["events"]
    assert "iteration time" in r.stdout and "packet-level events" in r.stdout
    assert "report.html" in r.stdout and (tmp_path / "report.html").stat().st_size > 10_000


def test_cli_aicb_workload_scaled_down(tmp_path):
    """GPT-13B from AICB: the whole file builds its DAG; the run keeps its first layers
    (the second holds 3.2 GB collectives, hours of packets: see bench/)."""
    wl = simai_file("G13B-M1-C01_GPT13B_megatron_tp8_pp1_mbs1_A100.txt")
    spec = read_simai_workload(wl)
    dag = build_training_dag(spec, list(range(8)))
    assert len(spec.layers) == 92 and all(len(c.group) == 8 for c in dag.collectives)
    r = cli("run", "--workload", wl, "--layers", "1", "--topology", "rail-optimized:gpus=8", "--out", tmp_path,
            "--no-progress")
    assert r.returncode == 0, r.stderr
    assert "BROADCAST" in r.stderr  # an unknown type is a warning naming the line, never silently nothing
    s = json.loads((tmp_path / "summary.json").read_text())
    assert s["complete"] and s["iterations"][0] > 0


@pytest.mark.slow
def test_cli_training_errors(tmp_path):
    r = cli("run", "--model", "gpt-7b", "--gpus", "16", "--tp", "3", "--out", tmp_path)
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "Traceback" not in r.stderr
    r = cli("run", "--tp", "2", "--out", tmp_path)
    assert r.returncode == 2 and "--tp needs --model" in r.stderr
    r = cli("run", "--dist-opt", "--out", tmp_path)
    assert r.returncode == 2 and "--dist-opt needs --model" in r.stderr
    r = cli("run", "--workload", simai_file("microAllReduce.txt"), "--dist-opt", "--out", tmp_path)
    assert r.returncode == 2 and "--dist-opt applies to --model only" in r.stderr
    r = cli("run", "--model", "gpt-9b", "--out", tmp_path)
    assert r.returncode == 2 and "unknown model 'gpt-9b'" in r.stderr
    r = cli("run", "--model", "gpt-7b", "--gpus", "8", "--cc", "hpcc", "--config", "x.txt", "--out", tmp_path)
    assert r.returncode == 2 and "--cc and --config" in r.stderr
    r = cli("run", "--model", "gpt-7b", "--gpus", "64", "--tp", "8", "--topology", "rail-optimized:gpus=16",
            "--out", tmp_path)
    assert r.returncode == 2 and "needs 64 GPUs but the topology has only 16" in r.stderr
    r = cli("run", "--model", "gpt-7b", "--topology", "rail-optimized:gpus=16,bogus=1", "--out", tmp_path)
    assert r.returncode == 2 and "unknown key(s) bogus" in r.stderr
