"""``trace.json`` (``run --trace``, report/trace.py): Chrome's Trace Event Format, bounded before
simulating, one of the run's outputs."""

import json
import subprocess
import sys

import pytest
from helpers import DATA, MPIEXEC, needs_mpi

from pwormhole.commands.cli import main
from pwormhole.report.trace import trace_bound_bytes
from pwormhole.scenario import topology_from_arg, training_scenario
from pwormhole.workload.simai import read_simai_workload

# 4 GPUs, TP 2 inside each 2-GPU server, DP 2 across them: a 1 MB TP all-reduce after layer a's
# forward (blocking), a 2 MB DP all-reduce after layer b's weight gradient (in the background)
TP_DP = """HYBRID_TRANSFORMER_FWD_IN_BCKWD model_parallel_NPU_group: 2 ep: 1 pp: 1 vpp: 1 ga: 1 all_gpus: 4 pp_comm: 0
2
a -1 10000 ALLREDUCE 1000000 20000 NONE 0 30000 NONE 0 0
b -1 40000 NONE 0 50000 NONE 0 60000 ALLREDUCE 2000000 0
"""
TOPO = "rail-optimized:gpus=4,gpus_per_server=2"
INCAST = DATA / "incast"


def cli(capsys, *args):
    rc = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return rc, out, err


def run_traced(tmp_path, capsys, *extra):
    wl = tmp_path / "w.txt"
    wl.write_text(TP_DP)
    out = tmp_path / "o"
    rc, _, err = cli(capsys, "run", "--workload", wl, "--topology", TOPO, "--out", out, "--no-progress", *extra)
    return rc, err, wl, out


def test_trace_of_a_training_run(tmp_path, capsys):
    """Per GPU: 6 compute ops at the times of timeline.csv (a.fwd 0-10 us, then b.fwd after the TP
    all-reduce, ...) and its 2 collectives; per sending host its flows: each ring all-reduce of 2
    members is 2 steps of 2 flows, TP ones over NVLink, DP ones through the NICs; the flows' bytes
    are every byte delivered."""
    rc, err, wl, out = run_traced(tmp_path, capsys, "--trace")
    assert rc == 0, err
    summary = json.loads((out / "summary.json").read_text())
    raw = (out / "trace.json").read_text()
    trace = json.loads(raw)
    assert trace["otherData"] == {"scenario": "w", "run_id": summary["run_id"]}
    assert "trace.json" in summary["outputs"]
    ev = [e for e in trace["traceEvents"] if e["ph"] == "X"]
    names = {e["pid"]: e["args"]["name"] for e in trace["traceEvents"] if e["name"] == "process_name"}
    assert [names[g] for g in range(4)] == ["GPU 0", "GPU 1", "GPU 2", "GPU 3"]
    assert sorted(v for k, v in names.items() if k >= 4) == [f"NIC of GPU {g} (node {g})" for g in range(4)]
    tp_end = next(int(r.split(",")[6]) for r in (out / "collectives.csv").read_text().splitlines()
                  if r.startswith("it0.a.fwd.tp0"))
    for g in range(4):
        comp = [(e["name"], e["ts"], e["dur"]) for e in ev if e["pid"] == g and e["cat"] == "compute"]
        assert [(n, d) for n, _, d in comp] == [("it0.a.fwd", 10.0), ("it0.b.fwd", 40.0), ("it0.b.ig", 50.0),
                                                ("it0.b.wg", 60.0), ("it0.a.ig", 20.0), ("it0.a.wg", 30.0)]
        assert comp[0][1] == 0 and abs(comp[1][1] * 1000 - tp_end) < 1  # (us; the csv's ns are rounded down)
        assert all(abs(comp[i][1] - (comp[i - 1][1] + comp[i - 1][2])) < 1e-6 for i in range(2, 6))
        coll = [e for e in ev if e["pid"] == g and e["cat"] == "allreduce"]
        assert [e["name"][:8] for e in coll] == ["it0.a.fw", "it0.b.wg"] and {e["tid"] for e in coll} == {1}
    flows = [e for e in ev if e["cat"] in ("nic", "nvlink")]
    assert sorted((e["cat"], e["args"]["size_bytes"]) for e in flows) == sorted(
        [("nvlink", 500_000)] * 8 + [("nic", 1_000_000)] * 8)
    assert sum(e["args"]["size_bytes"] for e in flows) == summary["bytes_delivered"]
    fct = sorted(int(ln.split()[6]) for ln in (out / "fct.txt").read_text().splitlines())
    assert sorted(e["args"]["fct_ns"] for e in flows) == fct
    assert len(raw) <= trace_bound_bytes(training_scenario(read_simai_workload(wl), topology_from_arg(TOPO)))


def test_a_trace_past_its_limit_is_refused_before_simulating(tmp_path, capsys):
    rc, err, _, out = run_traced(tmp_path, capsys, "--trace", "--trace-limit", "10kB")
    assert rc == 2 and err.startswith("pwormhole: error: trace.json could grow to ") and len(err.splitlines()) == 1
    assert "over the limit of 0 MB: a larger --trace-limit, or fewer --layers or --iterations" in err
    assert not out.exists()
    rc, _, err = cli(capsys, "run", "--model", "gpt-350m", "--gpus", "16", "--trace-limit", "1GB", "--out", out)
    assert (rc, err) == (2, "pwormhole: error: --trace-limit needs --trace\n")
    with pytest.raises(SystemExit) as e:  # (argparse: compare has no --trace)
        main(["compare", "--model", "gpt-350m", "--gpus", "16", "--trace", "--out", str(out)])
    assert e.value.code == 2 and "unrecognized arguments: --trace" in capsys.readouterr().err


def test_a_later_run_without_trace_removes_it(tmp_path, capsys):
    rc, _, _, out = run_traced(tmp_path, capsys, "--trace")
    assert rc == 0 and (out / "trace.json").exists()
    rc, err, _, out = run_traced(tmp_path, capsys)
    assert rc == 0 and not (out / "trace.json").exists()
    assert "removed trace.json (not written by this run)" in err


def test_trace_of_a_flow_list_has_nic_processes_only(tmp_path, capsys):
    """8 hosts send 1 MB each to host 0 at once: 8 NIC processes, one flow each."""
    out = tmp_path / "f"
    rc, _, err = cli(capsys, "run", "--mode", "packet", "--topology", INCAST / "star9_topology.txt", "--flows",
                     INCAST / "incast8_flows.txt", "--config", INCAST / "pfc_config.txt", "--trace", "--out", out,
                     "--no-progress")
    assert rc == 0, err
    trace = json.loads((out / "trace.json").read_text())
    names = sorted(e["args"]["name"] for e in trace["traceEvents"] if e["name"] == "process_name")
    assert names == [f"NIC of node {h}" for h in range(1, 9)]
    flows = [e for e in trace["traceEvents"] if e["ph"] == "X"]
    assert len(flows) == 8 and {e["cat"] for e in flows} == {"nic"} and {e["ts"] for e in flows} == {0}
    assert {e["args"]["dst"] for e in flows} == {0} and {e["args"]["size_bytes"] for e in flows} == {1_000_000}


@pytest.mark.slow
@needs_mpi
def test_trace_and_per_layer_are_the_same_on_two_ranks(tmp_path, capsys):
    rc, err, wl, out = run_traced(tmp_path, capsys, "--trace")
    assert rc == 0, err
    two = tmp_path / "two"
    r = subprocess.run([MPIEXEC, "-n", "2", sys.executable, "-m", "pwormhole", "run", "--workload", str(wl),
                        "--topology", TOPO, "--out", str(two), "--no-progress", "--trace", "--report"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    events = [json.loads((d / "trace.json").read_text())["traceEvents"] for d in (out, two)]
    assert events[0] == events[1]
    assert (out / "per_layer.csv").read_bytes() == (two / "per_layer.csv").read_bytes()
    # rank 0 drew report.html from the FCT columns it held, every rank's flows among them
    written = (two / "report.html").read_bytes()
    (two / "report.html").unlink()
    assert main(["report", str(two)]) == 0 and (two / "report.html").read_bytes() == written
