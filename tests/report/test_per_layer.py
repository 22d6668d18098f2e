"""``per_layer.csv`` (report/per_layer.py): compute, exposed and total communication time per pipeline
stage and layer line, in microseconds, on runs whose times are known by hand."""

import csv
import signal

import pytest
from helpers import ROOT

from pwormhole.commands.cli import main
from pwormhole.report.per_layer import _Run
from pwormhole.scenario import topology_from_arg, training_scenario
from pwormhole.simulate import simulate
from pwormhole.workload.dag import Collective, Dag
from pwormhole.workload.simai import read_simai_workload

# 4 GPUs, TP 2 inside each 2-GPU server, DP 2 across the servers (200 Gbps NICs): layer a's forward
# all-reduces 1 MB over TP (blocking), layer b's weight gradient 2 MB over DP (in the background,
# behind a's input- and weight-gradient compute, 20 + 30 us)
TP_DP = """HYBRID_TRANSFORMER_FWD_IN_BCKWD model_parallel_NPU_group: 2 ep: 1 pp: 1 vpp: 1 ga: 1 all_gpus: 4 pp_comm: 0
2
a -1 10000 ALLREDUCE 1000000 20000 NONE 0 30000 NONE 0 0
b -1 40000 NONE 0 50000 NONE 0 60000 ALLREDUCE 2000000 0
"""


def rows_of(path):
    return list(csv.DictReader(open(path)))


def us(row, col):
    return round(float(row[col]) * 1000)  # ns


def test_exposed_communication_of_a_blocking_and_a_background_collective(tmp_path):
    """a's TP all-reduce blocks: all of its time is exposed. b's DP all-reduce overlaps a's 50 us of
    backward compute: exposed = its time - 50 us. Compute and exposed add up to the iteration."""
    wl = tmp_path / "w.txt"
    wl.write_text(TP_DP)
    scn = training_scenario(read_simai_workload(wl), topology_from_arg("rail-optimized:gpus=4,gpus_per_server=2"))
    s = simulate(scn, str(tmp_path / "o"), quiet=True)
    coll = {r["name"]: int(r["time_ns"]) for r in rows_of(tmp_path / "o" / "collectives.csv")}
    tp, dp = coll["it0.a.fwd.tp0"], coll["it0.b.wg.dp0"]
    a, b = rows_of(tmp_path / "o" / "per_layer.csv")
    assert (a["stage"], a["layer"], a["name"], b["layer"], b["name"]) == ("0", "0", "a", "1", "b")
    assert [us(a, f"{p}_compute_us") for p in ("fwd", "ig", "wg")] == [10_000, 20_000, 30_000]
    assert [us(b, f"{p}_compute_us") for p in ("fwd", "ig", "wg")] == [40_000, 50_000, 60_000]
    assert abs(us(a, "fwd_exposed_comm_us") - tp) <= 1 and abs(us(a, "fwd_comm_us") - tp) <= 1
    assert abs(us(b, "wg_comm_us") - dp) <= 1 and dp > 50_000
    assert abs(us(b, "wg_exposed_comm_us") - (dp - 50_000)) <= 1
    assert [us(r, c) for r in (a, b) for c in ("ig_exposed_comm_us", "ig_comm_us")] == [0] * 4
    assert us(a, "wg_exposed_comm_us") == us(b, "fwd_exposed_comm_us") == 0
    total = sum(us(r, f"{p}_{k}_us") for r in (a, b) for p in ("fwd", "ig", "wg") for k in ("compute", "exposed_comm"))
    assert abs(total - s["iteration_time_ns"]) <= 2
    assert "per_layer.csv" in s["outputs"]


def test_pipeline_waits_are_a_row_of_each_stage(tmp_path):
    """The 7-line, ga-2, pp-2 file of tests/workload/test_micro_batches.py: stage 1 waits 51 us + d for
    micro-batch 0's activations and 7 us for micro-batch 1's (its micro-batch 0 forward ends 7 us
    before stage 0 sends micro-batch 1); stage 0 waits from its forward end (109 us) until stage 1's
    gradients arrive. Per line, compute is the file's on both stages."""
    lines = ["grad_norm -1 1000 NONE 0 2000 NONE 0 3000 NONE 0 0",
             "embedding -1 10000 NONE 0 20000 NONE 0 30000 NONE 0 0",
             "block -1 40000 NONE 0 50000 NONE 0 60000 NONE 0 0",
             "embedding -1 10000 NONE 0 20000 NONE 0 31000 NONE 0 0",
             "block -1 40000 NONE 0 50000 NONE 0 60000 NONE 0 0",
             "optimizer -1 5000 NONE 0 6000 NONE 0 7000 NONE 0 0",
             "optimizer -1 3000 NONE 0 4000 NONE 0 1000 NONE 0 0"]
    wl = tmp_path / "mb.txt"
    wl.write_text("HYBRID_TRANSFORMER_FWD_IN_BCKWD model_parallel_NPU_group: 1 pp: 2 ga: 2 all_gpus: 2 pp_comm: 1000\n"
                  f"{len(lines)}\n" + "\n".join(lines) + "\n")
    out = tmp_path / "o"
    assert main(["run", "--workload", str(wl), "--topology", "rail-optimized:gpus=8", "--out", str(out),
                 "--no-progress"]) == 0
    rows = rows_of(out / "per_layer.csv")
    expected = []
    for s in ("0", "1"):
        expected += [(s, str(i), ln.split()[0]) for i, ln in enumerate(lines)] + [(s, "", "pipeline")]
    assert [(r["stage"], r["layer"], r["name"]) for r in rows] == expected
    for s in (0, 1):
        body = rows[8 * s:8 * s + 7]
        assert [[us(r, f"{p}_compute_us") for p in ("fwd", "ig", "wg")] for r in body] == [
            [int(x) for x in (ln.split()[2], ln.split()[5], ln.split()[8])] for ln in lines]
    timeline = rows_of(out / "timeline.csv")
    comp = {g: [(int(r["start_ns"]), int(r["end_ns"])) for r in timeline if r["gpu"] == g and r["kind"] == "compute"]
            for g in ("0", "1")}
    d = comp["1"][0][0] - 51_000
    pipe0, pipe1 = rows[7], rows[15]
    assert abs(us(pipe1, "fwd_exposed_comm_us") - (51_000 + d + 7_000)) <= 1
    assert abs(us(pipe0, "ig_exposed_comm_us") - (comp["0"][1][0] - 109_000)) <= 1
    assert us(pipe0, "fwd_exposed_comm_us") == us(pipe1, "wg_exposed_comm_us") == 0
    assert 0 < us(pipe0, "fwd_comm_us") < 1_000  # two 1000-byte sends over NVLink


def test_no_per_layer_csv_without_layers(tmp_path):
    """A Chakra trace has collectives but no layer list: no per_layer.csv."""
    chakra = ROOT / "tests" / "data" / "chakra"
    out = tmp_path / "c"
    assert main(["run", "--workload", str(chakra / "all_reduce_8npus_1MB"), "--topology",
                 str(chakra / "8_nodes_1_switch_topology.txt"), "--out", str(out), "--no-progress"]) == 0
    assert (out / "collectives.csv").exists() and not (out / "per_layer.csv").exists()


def test_a_wait_on_a_step_acknowledged_after_the_next_step_started_ends():
    """GPU 0 waits in [10, 400) ns for a flow of a collective (its last byte arrived at 400 ns, its ACK
    at 500 ns); GPU 0's own first flow in that collective started at 400 ns, released by that same
    flow. The walk charges the whole span to the collective once and ends (it went round from the
    collective to itself before, forever, growing its list until the process ran out of memory)."""
    dag = Dag()
    compute = dag.compute(0, 10)
    received = dag.flow(1, 0, 1000)
    sent = dag.flow(0, 1, 1000, [received])
    done = dag.mark(0, [received, sent])
    dag.collectives.append(Collective("c", "allreduce", [0, 1], 1000, [done], received, done + 1))
    dag.compute(0, 10, [received])
    op_times = {compute: (0, 10), done: (500, 900)}
    walk = _Run(dag, op_times, {0: 0, 1: 400}, {0: 500, 1: 900})
    before = signal.signal(signal.SIGALRM, lambda *_: pytest.fail("the walk did not end"))
    signal.alarm(2)
    try:
        assert walk.waits(0, [received], 10, 400) == [(0, 390)]
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, before)
