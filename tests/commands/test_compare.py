"""``pwormhole compare``: the packet run against the Wormhole run, its errors and speedups."""

import json
import subprocess
import sys

import pytest
from helpers import ROOT


@pytest.mark.slow
def test_compare_writes_errors_and_speedups(tmp_path):
    r = subprocess.run([sys.executable, "-m", "pwormhole", "compare", "--scenario", "fat-tree-mix", "--out", tmp_path,
                        "--no-progress"], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert r.returncode == 0, r.stderr
    c = json.loads((tmp_path / "compare.json").read_text())
    for key in ("mean_fct_error", "p99_fct_error", "max_fct_error", "iteration_time_error", "collective_time_error",
                "speedup_wall", "speedup_events", "skipped_time_fraction", "memo_hits", "memo_misses"):
        assert key in c
    assert c["flows_compared"] == c["flows"] == 56 and c["complete"]
    assert c["mean_fct_error"] < 0.01 and c["speedup_events"] >= 1
    assert abs(c["fct_p50_shift"]) <= c["max_fct_error"] and abs(c["fct_p99_shift"]) <= c["max_fct_error"]
    assert c["iteration_time_error"] is None  # a flow list has no iterations
    assert (tmp_path / "fct_error_cdf.png").read_bytes()[:4] == b"\x89PNG"
    assert "FCT error mean" in r.stdout and "FCT distribution shift p50 / p99" in r.stdout


def test_compare_says_which_run_is_going(tmp_path):
    """Each run of a compare is announced as it starts (stderr), with the folder it writes; with
    --no-progress nothing is."""
    inc = ROOT / "tests" / "data" / "incast"
    args = [sys.executable, "-m", "pwormhole", "compare", "--topology", inc / "star9_topology.txt", "--flows",
            inc / "incast8_flows.txt", "--config", inc / "pfc_config.txt", "--spread", "2"]
    r = subprocess.run([*args, "--out", tmp_path / "a"], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert r.returncode == 0, r.stderr
    said = [ln for ln in r.stderr.splitlines() if ln.startswith("compare: ")]
    assert said == [f"compare: run 1 of 4: packet mode into {tmp_path / 'a' / 'packet'}",
                    f"compare: run 2 of 4: Wormhole mode into {tmp_path / 'a' / 'wormhole'}",
                    f"compare: runs 3-4 of 4: 2 perturbed packet runs at once into {tmp_path / 'a' / 'spread'}"]
    r = subprocess.run([*args, "--out", tmp_path / "b", "--no-progress"], capture_output=True, text=True, cwd=ROOT,
                       timeout=300)
    assert r.returncode == 0 and "compare: " not in r.stderr, r.stderr


def test_a_compare_of_no_finished_flow_gives_no_error_figure(tmp_path):
    """Runs stopped before any flow finished (--until 0): no FCT error is measured, so none is
    given as 0% (null in compare.json, '-' in the table), and the table says the runs are
    incomplete."""
    inc = ROOT / "tests" / "data" / "incast"
    r = subprocess.run([sys.executable, "-m", "pwormhole", "compare", "--topology", inc / "star9_topology.txt",
                        "--flows", inc / "incast8_flows.txt", "--until", "0", "--out", tmp_path, "--no-progress"],
                       capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert r.returncode == 0, r.stderr
    c = json.loads((tmp_path / "compare.json").read_text())
    assert c["flows_compared"] == 0 and not c["complete"]
    assert c["mean_fct_error"] is c["p99_fct_error"] is c["max_fct_error"] is None
    lines = r.stdout.splitlines()
    assert "flows compared                    0 / 8  (INCOMPLETE: a run stopped before every flow finished)" in lines
    assert "FCT error mean / p99 / max        - / - / -" in lines
