"""Hostile cases: what a user who tries to break pwormhole finds, and the one answer each must get.

Every case here failed once (a wrong answer, lost data, a traceback, memory without bound) and
has a test that fails on that code. To add a case: a test named by what must hold, a docstring
saying what happened before, and the smallest run that shows it (the helpers below run the CLI
in-process: ``one_line_error`` for input mistakes, exit 2 with one line).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tracemalloc
from pathlib import Path

import numpy as np
import pytest
from helpers import DATA, MPIEXEC, ROOT, needs_mpi, one_line_error, run_cli

from pwormhole import api
from pwormhole.errors import InputError
from pwormhole.report.page import write_report

INCAST = DATA / "incast"
# 8 hosts send 1 MB each to host 0 under PFC (0.2 ms): a flow run with no training outputs
FLOW_RUN = ["run", "--mode", "packet", "--topology", INCAST / "star9_topology.txt", "--flows",
            INCAST / "incast8_flows.txt", "--config", INCAST / "pfc_config.txt", "--no-progress"]
GPT = ["run", "--model", "gpt-350m", "--gpus", "16", "--tp", "8", "--layers", "1", "--no-progress"]
FIRST_RUN_ONLY = ("collectives.csv", "timeline.csv", "per_layer.csv", "link_util.csv", "qlen.txt", "windows.npz")




def summary(out: Path) -> dict:
    return json.loads((out / "summary.json").read_text())


# -- one folder, one run ------------------------------------------------------------------

@pytest.fixture
def reused(tmp_path, capsys):
    """A GPT run with the monitors and a window record in ``X``, then an incast flow run with a
    report into the same ``X``: ``(X, stderr of the second run)``."""
    x = tmp_path / "X"
    assert run_cli(capsys, *GPT, "--monitor", "--record-windows", "--out", x)[0] == 0
    assert all((x / n).exists() for n in FIRST_RUN_ONLY)
    rc, _, err = run_cli(capsys, *FLOW_RUN, "--report", "--out", x)
    assert rc == 0, err
    return x, err


def test_a_second_run_into_one_folder_leaves_nothing_of_the_first(reused, capsys):
    """Before, the flow run left the GPT run's collectives, timeline, link and queue monitors and
    window record in place (naming only the files it replaced), and its report showed them."""
    x, err = reused
    assert sorted(p.name for p in x.iterdir()) == ["fct.txt", "pfc.txt", "report.html", "summary.json"]
    warnings = [ln for ln in err.splitlines() if "earlier run" in ln]
    assert warnings == [f"pwormhole: warning: {x} held an earlier run's outputs: replacing fct.txt, pfc.txt, "
                        "summary.json; removed collectives.csv, link_util.csv, per_layer.csv, qlen.txt, timeline.csv, "
                        "windows.npz (not written by this run)"]
    page = (x / "report.html").read_text()
    assert "gpt-350m" not in page and "it0." not in page and "no link_util.csv here" in page
    res = api.load(str(x))
    assert res.collectives == [] and res.timeline == [] and res.summary["scenario"] == "incast8_flows"
    one_line_error(capsys, ["partition", "--from-run", x, "--parts", "2"], "holds no windows.npz")


def test_a_file_of_another_run_is_refused_by_report_load_and_partition(reused, tmp_path, capsys):
    """A run file put back by hand (or left by an older pwormhole) is not shown as this run's."""
    x, _ = reused
    other = tmp_path / "other"
    assert run_cli(capsys, *GPT, "--record-windows", "--out", other)[0] == 0
    (x / "collectives.csv").write_bytes((other / "collectives.csv").read_bytes())
    with pytest.raises(InputError, match="collectives.csv here is not an output of the run in summary.json"):
        api.load(str(x))
    one_line_error(capsys, ["report", x], "collectives.csv here is not an output of the run")
    (x / "collectives.csv").unlink()
    (x / "windows.npz").write_bytes((other / "windows.npz").read_bytes())
    one_line_error(capsys, ["partition", "--from-run", x, "--parts", "2"], "windows.npz is not of the run")
    one_line_error(capsys, ["scale", "--predict", "2", "--from-run", x, "--out", tmp_path / "p"],
                   "windows.npz is not of the run")


def test_compare_json_names_the_runs_it_compares(tmp_path, capsys):
    """A compare folder whose packet/ run was replaced afterwards: its compare.json is refused."""
    c = tmp_path / "c"
    assert run_cli(capsys, "compare", *GPT[1:], "--out", c)[0] == 0
    assert json.loads((c / "compare.json").read_text())["runs"]["packet"] == summary(c / "packet")["run_id"]
    assert run_cli(capsys, *GPT, "--mode", "packet", "--out", c / "packet")[0] == 0
    one_line_error(capsys, ["report", c], "compare.json is not the comparison of the runs in packet/ and wormhole/")
    assert run_cli(capsys, *GPT, "--out", c)[0] == 0  # a run into the compare folder: compare.json goes
    assert not (c / "compare.json").exists() and not (c / "fct_error_cdf.png").exists()
    write_report(str(c))


def test_every_name_an_option_writes_is_checked_before_simulating(tmp_path, capsys):
    """Before, ``FCT_OUTPUT_FILE windows.npz`` with ``--record-windows`` lost the completions (exit 0),
    and ``--memo-cache OUT/report.html --report`` lost the cache."""
    cfg = tmp_path / "c.txt"
    cfg.write_text("CC_MODE 1\nFCT_OUTPUT_FILE windows.npz\n")
    one_line_error(capsys, [*FLOW_RUN[:-3], "--config", cfg, "--record-windows", "--out", tmp_path / "a"],
                   f"{cfg}:2:", "'windows.npz' is the name of pwormhole's own windows.npz")
    for name, extra in (("report.html", ["--report"]), ("collectives.csv", []), ("prediction.csv", [])):
        one_line_error(capsys, [*GPT, *extra, "--memo-cache", tmp_path / "b" / name, "--out", tmp_path / "b"],
                       f"--memo-cache '{tmp_path / 'b' / name}' is the name of an output of pwormhole")
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()


# -- link failures in training runs -------------------------------------------------------------

def test_link_down_fires_in_a_training_run(tmp_path, capsys):
    """GPU 0's NVLink (GPU 0 - NVSwitch 16) fails 20 us into the iteration: its TP flows move to the
    NIC and the iteration takes longer. Before, ``LINK_DOWN 20 0 16`` meant 2 s + 20 us, after a
    training iteration that lasts 0.3 ms: the intact fabric's answer, with no word."""
    intact = tmp_path / "intact"
    cfg = tmp_path / "c.txt"
    cfg.write_text("CC_MODE 1\nENABLE_QCN 0\n")
    assert run_cli(capsys, *GPT, "--config", cfg, "--out", intact)[0] == 0
    down = tmp_path / "down.txt"
    down.write_text("CC_MODE 1\nENABLE_QCN 0\nLINK_DOWN 20 0 16\n")
    rc, _, err = run_cli(capsys, *GPT, "--config", down, "--out", tmp_path / "down")
    assert rc == 0 and "warning" not in err.replace("ran their NVLink flows as packets", ""), err
    s = summary(tmp_path / "down")
    assert s["link_failures"] == [{"at_ns": 20_000, "a": 0, "b": 16, "applied": True}]
    assert s["iteration_time_ns"] > summary(intact)["iteration_time_ns"] * 1.01
    rc, _, err = run_cli(capsys, *GPT, "--config", cfg, "--link-down", "20us:0-16", "--out", tmp_path / "opt")
    assert rc == 0 and (tmp_path / "opt" / "fct.txt").read_bytes() == (tmp_path / "down" / "fct.txt").read_bytes()


def test_link_down_option_repeats_and_a_late_failure_is_said(tmp_path, capsys):
    rc, _, err = run_cli(capsys, *GPT, "--link-down", "20us:0-16", "--link-down", "5s:1-16", "--out", tmp_path)
    assert rc == 0
    s = summary(tmp_path)
    assert [f["applied"] for f in s["link_failures"]] == [True, False]
    late = [ln for ln in err.splitlines() if "came after the run ended" in ln]
    assert len(late) == 1 and "link 1-16 at 5.000 s" in late[0] and "1 of 2 link failures" in late[0]
    one_line_error(capsys, [*GPT, "--link-down", "20us:0-0", "--out", tmp_path / "x"], "connects a node to itself")
    one_line_error(capsys, [*GPT, "--link-down", "20us", "--out", tmp_path / "x"], "expected TIME:A-B")
    one_line_error(capsys, [*GPT, "--link-down", "20us:0-5", "--out", tmp_path / "x"],
                   "--link-down 20us:0-5: no link joins nodes 0 and 5")


# -- memo caches edited within the old bounds --------------------------------------------------

STAR = "7 1 6\n6\n" + "".join(f"{h} 6 100Gbps 1us 0\n" for h in range(6))
INCASTS = "4\n0 2 3 100 6000000 0\n1 2 3 100 6000000 0\n3 5 3 100 6000000 0.003\n4 5 3 100 6000000 0.003\n"


def test_a_memo_entry_outside_its_groups_physics_is_dropped(tmp_path, capsys):
    """Two identical 2-to-1 incasts: the second replays the first's recording. An entry edited to a
    5 ms settling time (the transient lasts microseconds), a 4 Gb/s goodput and a 1 Gb/s pacing rate
    passed the old, scenario-wide bounds and moved the FCTs; it is dropped, and the run's answer is
    that of a run without it."""
    (tmp_path / "star.txt").write_text(STAR)
    (tmp_path / "incasts.txt").write_text(INCASTS)
    args = ["run", "--topology", tmp_path / "star.txt", "--flows", tmp_path / "incasts.txt", "--cc", "dcqcn",
            "--no-progress"]
    assert run_cli(capsys, *args, "--memo-cache", tmp_path / "m.json", "--out", tmp_path / "rec")[0] == 0
    cache = json.loads((tmp_path / "m.json").read_text())
    (entry,) = cache["entries"]
    for edit in ({"convergence_ps": 5 * 10**9}, {"goodput": 0.0005, "rate_bps": 10**9}):
        edited = json.loads(json.dumps(cache))
        e = edited["entries"][0]
        if "convergence_ps" in edit:
            e.update(edit)
        else:
            e["flows"]["0"].update(edit)
        (tmp_path / "bad.json").write_text(json.dumps(edited))
        rc, _, err = run_cli(capsys, *args, "--memo-cache", tmp_path / "bad.json", "--out", tmp_path / "bad")
        assert rc == 0 and "dropped 1 of 1 entries (1 malformed or outside this scenario's bounds)" in err, err
        assert (tmp_path / "bad" / "fct.txt").read_bytes() == (tmp_path / "rec" / "fct.txt").read_bytes()
    assert entry["convergence_ps"] < 10**8  # the real transient: tens of microseconds


# -- the API takes typed values ------------------------------------------------------------------

@pytest.mark.parametrize("kw, message", [
    ({"report": "--mode=packet"}, "simulate(): report must be True or False, not str '--mode=packet'"),
    ({"plot": "--cc=hpcc"}, "simulate(): plot must be True or False, not str '--cc=hpcc'"),
    ({"gpus": "16"}, "simulate(): gpus must be an int, not str '16'"),
    ({"layers": True}, "simulate(): layers must be an int, not bool True"),
    ({"theta": "0.1"}, "simulate(): theta must be a number, not str '0.1'"),
    ({"out": ["a"]}, "simulate(): out must be a string or a path, not list ['a']"),
    ({"until": [1]}, "simulate(): until must be a string or a number, not list [1]"),
])
def test_api_refuses_a_value_of_another_type(tmp_path, kw, message):
    """Before, ``report="--mode=packet"`` ran packet mode and ``plot="--cc=hpcc"`` ran HPCC: the string
    given to an on/off option became another option."""
    with pytest.raises(InputError) as e:
        api.simulate(**{"model": "gpt-350m", "gpus": 16, "tp": 8, "layers": 1, "out": str(tmp_path / "o"), **kw})
    assert str(e.value) == message
    assert not (tmp_path / "o").exists()


def test_api_value_that_looks_like_an_option_is_a_value(tmp_path):
    with pytest.raises(InputError, match="unknown model '--mode=packet'"):
        api.simulate(model="--mode=packet", gpus=16, out=str(tmp_path / "o"))


# -- exit 4, not 2, when outputs cannot be written with --report --------------------------------

def test_unwritable_outputs_with_report_exit_4_and_are_listed(tmp_path, monkeypatch, capsys):
    """The output folder turns read-only mid-run: every write fails. Before, with --report, the
    report's reading of the missing summary.json exited 2 and the write failures were never shown."""
    from pwormhole.outfiles import PartFile

    class ReadOnly:
        """A file whose writes fail (its folder turned read-only after it was opened)."""

        def __init__(self, fh):
            self.fh = fh

        def write(self, data):
            raise PermissionError(13, "Permission denied")

        def writelines(self, lines):
            self.write("")

        def __getattr__(self, name):
            return getattr(self.fh, name)

    opened = PartFile.__init__

    def init(self, path, binary=False):
        opened(self, path, binary)
        self.fh = ReadOnly(self.fh)

    monkeypatch.setattr(PartFile, "__init__", init)
    rc, _, err = run_cli(capsys, *FLOW_RUN, "--report", "--out", tmp_path)
    lines = err.strip().splitlines()
    assert rc == 4 and len(lines) == 1, err
    for name in ("fct.txt", "pfc.txt", "summary.json"):
        assert f"cannot write {tmp_path / name}: Permission denied" in lines[0]
    assert "report.html not written" in lines[0]


# -- memory without an up-front bound: refused in under a second -----------------------------------

def _refused_fast(capsys, args, *needles) -> None:
    """Refused before allocating: the refusal's Python allocations stay under 100 MB at their peak
    (before, each case grew to gigabytes)."""
    tracemalloc.start()
    try:
        one_line_error(capsys, args, *needles)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 100 * 2**20, peak


@pytest.mark.parametrize("spec, needle", [
    ("fat-tree:k=1000", "fat-tree k=1000 has 251,250,000 nodes"),
    ("rail-optimized:gpus=1000000", "rail-optimized of 1000000 GPUs has 1,125,016 nodes"),
    ("leaf-spine:hosts=100000000,leaves=2,spines=2", "leaf-spine of 100000000 hosts has 100,000,004 nodes"),
    ("rail-optimized:gpus=16,spines=1000000", "1,000,026 nodes and 8,000,032 links, over the limit"),
])
def test_builders_refuse_sizes_over_the_node_limit(tmp_path, capsys, spec, needle):
    _refused_fast(capsys, ["run", "--topology", spec, "--flows", INCAST / "incast8_flows.txt", "--out", tmp_path],
                  needle, "over the limit of 200,000 nodes")


def test_a_billion_gpus_and_many_micro_batches_are_refused_before_building(tmp_path, capsys):
    _refused_fast(capsys, ["run", "--model", "gpt-350m", "--gpus", "1000000000", "--out", tmp_path],
                  "DAG ops per iteration, over the limit of 10,000,000")
    _refused_fast(capsys, [*GPT, "--ga", "100000", "--out", tmp_path],
                  "gpt-350m on 16 GPUs with ga 100000 and 1 layers has over 105,600,000 DAG ops",
                  "over the limit of 10,000,000")
    _refused_fast(capsys, [*GPT[:-3], "--ga", "100000", "--out", tmp_path], "ga 100000 and 24 layers has over")
    _refused_fast(capsys, [*GPT, "--iterations", "10000", "--out", tmp_path], "10000 iterations of 1,168 DAG ops",
                  "over the limit of 10,000,000")


def test_gen_flows_refuses_more_flows_than_it_can_hold(tmp_path, capsys):
    args = ["gen-flows", "--cdf", DATA / "traffic_gen" / "FbHdp_distribution.txt", "--topology",
            DATA / "hpcc" / "mix" / "fat.txt", "--out", tmp_path / "f.txt"]
    _refused_fast(capsys, [*args, "--load", "0.5", "--duration", "1s"], "about 16,608,433 flows expected",
                  "over the limit of 2,000,000")
    _refused_fast(capsys, [*args, "--load", "1e9", "--duration", "10us"], "over the limit of 2,000,000")
    assert not (tmp_path / "f.txt").exists()


def test_monitors_at_one_ns_are_refused_with_the_size(tmp_path, capsys):
    """Before: ~4 GB of memory per simulated ms, and a 611 MB link_util.csv for 0.3 ms."""
    _refused_fast(capsys, [*GPT, "--monitor", "--link-interval", "1ns", "--monitor-interval", "1ns", "--out",
                           tmp_path / "o"], "link_util.csv could grow to 2.7 GB", "192 link directions",
                  "a --link-interval of 3.000 ns or more")
    assert not (tmp_path / "o").exists()
    rc, _, err = run_cli(capsys, *GPT, "--monitor", "--link-interval", "1ns", "--monitor-interval", "1ns",
                         "--monitor-limit", "4GB", "--until", "20us", "--out", tmp_path / "o")
    assert rc == 0, err


# -- tracebacks where one line is promised --------------------------------------------------------

@pytest.fixture
def record(tmp_path, capsys):
    """A recorded run's folder and its window record's arrays."""
    rec = tmp_path / "rec"
    assert run_cli(capsys, *GPT, "--record-windows", "--out", rec)[0] == 0
    with np.load(rec / "windows.npz") as z:
        return rec, {k: z[k] for k in z.files}


@pytest.mark.parametrize("name, value, needle", [
    ("unit_s", "nan", "holds a value outside 0..1e+07 s"),
    ("boundary_s", "inf", "holds a value outside"),
    ("unit_s", "-1", "holds a value outside"),
    ("writer_s", "1e300", "holds a value outside"),
    ("events", 2**62, "holds a value outside 0..1099511627776"),
    ("events", -5, "holds a value outside"),
    ("unit_s", "text", "holds <U4 values, not numbers"),
    ("window_ps", "vector", "is not one positive integer"),
    ("window_ps", -1, "is not one positive integer"),
    ("events", "none", "holds 0 windows"),
    ("t_end_ps", "backwards", "goes back in time"),
])
def test_crafted_window_records_are_one_line_errors(record, tmp_path, capsys, name, value, needle):
    """Before: tracebacks (NaN, 2^62 events, text, a vector window_ps, zero windows) and negative or
    infinite predicted walls with exit 0."""
    rec, arrays = record
    a = dict(arrays)
    if value == "text":
        a[name] = np.full(a[name].shape, "text")
    elif value == "vector":
        a[name] = np.array([1000, 2000])
    elif value == "none":
        a = {**a, **{k: a[k][:0] for k in ("events", "unit_s", "boundary_s", "t_end_ps", "writer_s", "local_s")}}
    elif value == "backwards":
        a[name] = a[name][::-1].copy()
    elif isinstance(value, str):
        v = a[name].astype(np.float64)
        v.flat[0] = float(value)
        a[name] = v
    elif a[name].ndim:
        v = a[name].copy()
        v.flat[0] = value
        a[name] = v
    else:
        a[name] = np.int64(value)
    np.savez(rec / "windows.npz", **a)
    for args in (["partition", "--from-run", rec, "--parts", "2"],
                 ["scale", "--predict", "2,4", "--from-run", rec, "--out", tmp_path / "p"]):
        one_line_error(capsys, args, f"{rec / 'windows.npz'}:", needle)


def test_crafted_output_folders_are_one_line_errors(tmp_path, capsys):
    """``report`` / ``load()`` of an fct.txt with a 24-digit number, a text ``pfc_pauses``, a
    summary.json nested 200,000 deep: before, tracebacks."""
    x = tmp_path / "x"
    assert run_cli(capsys, *FLOW_RUN, "--out", x)[0] == 0
    good = (x / "fct.txt").read_text()
    parts = good.splitlines()[0].split()
    parts[6] = "123456789012345678901234"
    (x / "fct.txt").write_text(" ".join(parts) + "\n" + good)
    one_line_error(capsys, ["report", x], f"{x / 'fct.txt'}:1:", "outside the 64-bit integers")
    with pytest.raises(InputError, match="outside the 64-bit integers"):
        api.load(str(x))
    (x / "fct.txt").write_text(good)
    s = summary(x)
    (x / "summary.json").write_text(json.dumps({**s, "pfc_pauses": "many"}))
    one_line_error(capsys, ["report", x], "summary key 'pfc_pauses' is not an integer: 'many'")
    (x / "summary.json").write_text("[" * 200_000 + "]" * 200_000)
    one_line_error(capsys, ["report", x], f"{x / 'summary.json'}:", "nested too deep")


@pytest.mark.parametrize("config, needle", [
    ("QLEN_MON_FILE q.txt\nQLEN_MON_START 0\nQLEN_MON_END 100000000000000000000000\n",
     "out of range 0..4611686018427387"),
    ("QLEN_MON_FILE q.txt\nQLEN_MON_END 1e23\n", "QLEN_MON_END value (ns) '1e23' is not an integer"),
    ("L2_CHUNK_SIZE 1000000000000000000000000\n", "out of range 0..1099511627776"),
    ("BUFFER_SIZE 100000000000000\n", "out of range ..1048576"),
    ("MIN_RATE 500Gbps\n", "MIN_RATE 500Gbps is above the line rate of the slowest NIC (100Gbps: link "),
    ("RATE_AI 1e999Gbps\n", "is over the limit of 1000Tbps"),
])
def test_config_values_past_what_a_run_can_hold(tmp_path, capsys, config, needle):
    (tmp_path / "c.txt").write_text("CC_MODE 1\n" + config)
    one_line_error(capsys, [*FLOW_RUN[:-3], "--config", tmp_path / "c.txt", "--out", tmp_path / "o"],
                   str(tmp_path / "c.txt"), needle)
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("args, needle", [
    (["--monitor", "--monitor-interval", "1e999s"], "--monitor-interval: time '1e999s' is past the limit"),
    (["--sample", "1e999s"], "--sample: time '1e999s' is past the limit"),
    (["--until", "1e999s"], "--until: time '1e999s' is past the limit"),
])
def test_times_past_any_run_are_refused(tmp_path, capsys, args, needle):
    one_line_error(capsys, [*GPT, *args, "--out", tmp_path / "o"], needle)


def test_huge_values_in_inputs_are_one_line_errors(tmp_path, capsys):
    one_line_error(capsys, ["run", "--topology", "rail-optimized:gpus=16,nic=1e999Gbps", "--flows",
                            INCAST / "incast8_flows.txt", "--out", tmp_path / "o"], "over the limit of 1000Tbps")
    (tmp_path / "t.txt").write_text("3 1 2\n2\n0 2 100Gbps 1us 0\n1 2 100Gbps 1us 0\n")
    (tmp_path / "f.txt").write_text("1\n0 1 3 100 1000000000000000000000000000 2\n")
    one_line_error(capsys, ["run", "--topology", tmp_path / "t.txt", "--flows", tmp_path / "f.txt", "--out",
                            tmp_path / "o"], f"{tmp_path / 'f.txt'}:2:", "size of flow 1")


def test_scale_predict_into_an_unwritable_folder(record, tmp_path, capsys):
    rec, _ = record
    (tmp_path / "file").write_text("")
    one_line_error(capsys, ["scale", "--predict", "2", "--from-run", rec, "--out", tmp_path / "file" / "p"],
                   "cannot write output folder")


def test_a_long_sample_period_is_said(tmp_path, capsys):
    """``--sample 1s`` on a 0.3 ms run: Wormhole takes no sample. Before, not a word."""
    rc, _, err = run_cli(capsys, *GPT, "--sample", "1s", "--out", tmp_path)
    assert rc == 0 and "--sample 1.000 s is not shorter than the" in err and summary(tmp_path)["skips"] == 0


def test_the_command_line_files_win_over_the_configs(tmp_path, capsys):
    """``--config`` with ``--topology``/``--flows``: its TOPOLOGY_FILE and FLOW_FILE are not read.
    Before, a config naming files that are not there was refused."""
    (tmp_path / "c.txt").write_text("CC_MODE 1\nTOPOLOGY_FILE nowhere/t.txt\nFLOW_FILE nowhere/f.txt\nHAS_WIN 0\n"
                                    "BUFFER_SIZE 1\n")
    rc, _, err = run_cli(capsys, *FLOW_RUN[:-3], "--config", tmp_path / "c.txt", "--out", tmp_path / "o")
    assert rc == 0, err
    assert summary(tmp_path / "o")["inputs"]["flow_file"] == str(INCAST / "incast8_flows.txt")


@needs_mpi
def test_a_plan_cutting_a_server_under_mpi_is_one_line(tmp_path, capsys):
    """Before: two ``rank R:`` lines and two MPI Abort lines."""
    rec = tmp_path / "rec"
    assert run_cli(capsys, *GPT, "--record-windows", "--out", rec)[0] == 0
    assert run_cli(capsys, "partition", "--from-run", rec, "--parts", "2", "--save", tmp_path / "plan.json")[0] == 0
    plan = json.loads((tmp_path / "plan.json").read_text())
    plan["owner"][0] = 1 - plan["owner"][0]  # GPU 0 away from its server
    (tmp_path / "bad.json").write_text(json.dumps(plan))
    r = subprocess.run([MPIEXEC, "-n", "2", sys.executable, "-m", "pwormhole", *map(str, GPT), "--plan",
                        tmp_path / "bad.json", "--out", tmp_path / "o"], capture_output=True, text=True,
                       timeout=300, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert r.returncode == 2
    assert r.stderr.strip().splitlines() == [
        "pwormhole: error: LP assignment cuts NVLink 0-16 (to an NVSwitch); keep each server in one LP"]
    assert not (tmp_path / "o").exists()


def test_a_link_rate_without_a_unit_is_named_with_its_link(tmp_path, capsys):
    """'100' is 100 bps (as ns-3 reads it): the MIN_RATE check names the link and the file."""
    topo = tmp_path / "t.txt"
    topo.write_text("3 1 2\n2\n0 2 100 0.001ms 0\n1 2 100Gbps 0.001ms 0\n")
    flows = tmp_path / "f.txt"
    flows.write_text("1\n0 1 3 100 100000 0\n")
    one_line_error(capsys, ["run", "--topology", topo, "--flows", flows, "--out", tmp_path / "o"],
                   f"(100bps: link 0-2 of {topo}; a rate without a unit is in bits per second")
    assert not (tmp_path / "o").exists()


def test_a_record_of_a_run_stopped_early_is_said_to_be_one(tmp_path, capsys):
    """partition --from-run and scale --predict of a run stopped by --until planned from its part
    without a word: a warning line says so."""
    rec = tmp_path / "rec"
    assert run_cli(capsys, *GPT, "--record-windows", "--until", "20us", "--out", rec)[0] == 0
    rc, out, err = run_cli(capsys, "partition", "--from-run", rec, "--parts", "2")
    assert rc == 0 and "parts 2" in out
    assert err.startswith(f"pwormhole: warning: the run in {rec} stopped before its end (its --until or a stop): "
                          "windows.npz is of its first ") and err.strip().endswith(" windows only")
