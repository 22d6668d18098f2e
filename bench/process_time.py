#!/usr/bin/env python3
"""The whole process of the default run against its simulation, and the start-up (a benchmark, not a test).

The default run (``pwormhole run``: GPT-7B, 64 GPUs, Wormhole, writes ``report.html``) is held to at
most twice its simulation's CPU (``cpu_s`` of its ``summary.json``) for the whole process, report
included, and ``pwormhole --help`` to under 0.3 s. Measured:

* ``--runs N`` (5): N runs of ``pwormhole run --out TMP --no-progress``, each a process of its own:
  its CPU (user + system, of the child), wall and ``cpu_s``; medians, and whole CPU / ``cpu_s``;
* ``--help-runs N`` (9): ``pwormhole --help``, CPU and wall;
* ``--phases N`` (0): N runs under ``bench/process_phases.py``, which times the process's parts
  (imports, scenario and DAG, network, Wormhole set-up, standalone FCTs, simulation, summary,
  report; ``time.process_time``); the median of each part.

``--against DIR`` measures the code of another checkout too (``git worktree`` or ``git archive`` of a
commit, with the compiled modules and ``_compiled.json`` copied in when the engine is the same), run
by this Python, its runs interleaved with this code's: on a shared machine compare the medians.

    python bench/process_time.py [--runs 5] [--help-runs 9] [--phases 3] [--against DIR] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
PHASES = ROOT / "bench" / "process_phases.py"
WHOLE_OVER_SIM_LIMIT = 2.0
HELP_WALL_LIMIT_S = 0.3
# runs pwormhole (-m) or a script from the checkout in argv[1], not the installed (editable) one
BOOT = ("import runpy, sys\n"
        "sys.meta_path[:] = [f for f in sys.meta_path if 'editable' not in repr(f)]\n"
        "sys.path.insert(0, sys.argv[1])\n"
        "if sys.argv[2] == '-m':\n"
        "    sys.argv = sys.argv[3:]\n"
        "    runpy.run_module(sys.argv[0], run_name='__main__', alter_sys=True)\n"
        "else:\n"
        "    sys.argv = sys.argv[2:]\n"
        "    runpy.run_path(sys.argv[0], run_name='__main__')\n")


def command(tree: str | None, target: list[str]) -> list[str]:
    """``target`` (``-m pwormhole ...`` or ``SCRIPT ...``) run by this Python on the code of ``tree``
    (None: the installed code)."""
    return [sys.executable, *target] if tree is None else [sys.executable, "-c", BOOT, tree, *target]


def timed(cmd: list[str]) -> tuple[float, float, subprocess.CompletedProcess]:
    """``(CPU s of the child, wall s, result)`` of one run of ``cmd``."""
    t0, c0 = time.perf_counter(), os.times()
    r = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
    c1 = os.times()
    return (c1.children_user - c0.children_user + c1.children_system - c0.children_system,
            time.perf_counter() - t0, r)


def default_runs(n: int, tree: str | None) -> dict:
    cpu, wall, sim = [], [], []
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(n):
            out = Path(tmp) / f"run{i}"
            c, w, r = timed(command(tree, ["-m", "pwormhole", "run", "--out", str(out), "--no-progress"]))
            if r.returncode != 0:
                raise SystemExit(f"pwormhole run failed: {r.stderr[-2000:]}")
            cpu.append(c)
            wall.append(w)
            sim.append(json.loads((out / "summary.json").read_text())["cpu_s"])
            print(f"{tree or 'this code'}: run {i + 1}: process CPU {c:.2f} s, wall {w:.2f} s, simulation cpu_s "
                  f"{sim[-1]:.2f} s", flush=True)
    ratios = [c / s for c, s in zip(cpu, sim)]
    return {"process_cpu_s": statistics.median(cpu), "wall_s": statistics.median(wall),
            "sim_cpu_s": statistics.median(sim), "whole_over_sim": statistics.median(ratios)}


def help_runs(n: int, tree: str | None) -> dict:
    cpu, wall = [], []
    for _ in range(n):
        c, w, r = timed(command(tree, ["-m", "pwormhole", "--help"]))
        cpu.append(c)
        wall.append(w)
    return {"help_cpu_s": statistics.median(cpu), "help_wall_s": statistics.median(wall)}


def phase_runs(n: int, tree: str | None) -> dict:
    """The median CPU seconds of each part over ``n`` runs of bench/process_phases.py."""
    got: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(n):
            r = subprocess.run(command(tree, [str(PHASES), str(Path(tmp) / f"p{i}")]), capture_output=True,
                               text=True, cwd=ROOT)
            if r.returncode != 0:
                raise SystemExit(f"process_phases.py failed: {r.stderr[-2000:]}")
            for part, s in json.loads(r.stdout.strip().splitlines()[-1]).items():
                got.setdefault(part, []).append(s)
    return {part: statistics.median(v) for part, v in got.items()}


def interleaved(measure, n: int, trees: list[str | None]) -> list[dict]:
    """``measure(1, tree)`` ``n`` times per tree, the trees in turn; per tree the median of each figure."""
    runs: list[list[dict]] = [[] for _ in trees]
    for _ in range(n):
        for k, tree in enumerate(trees):
            runs[k].append(measure(1, tree))
    return [{key: statistics.median(r[key] for r in rs) for key in rs[0]} for rs in runs]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5, help="default runs, each its own process (default 5)")
    ap.add_argument("--help-runs", type=int, default=9, help="runs of pwormhole --help (default 9)")
    ap.add_argument("--phases", type=int, default=0, help="runs timed part by part (default 0)")
    ap.add_argument("--against", metavar="DIR", help="also measure the code of this checkout, interleaved")
    ap.add_argument("--json", metavar="FILE", help="also write the figures as JSON")
    a = ap.parse_args()
    trees: list[str | None] = [None] + ([str(Path(a.against).resolve())] if a.against else [])
    names = ["this code"] + ([a.against] if a.against else [])
    out: dict = {name: {} for name in names}
    if a.runs:
        for name, got in zip(names, interleaved(default_runs, a.runs, trees)):
            out[name].update(got)
            print(f"{name}: default run (median of {a.runs}): process CPU {got['process_cpu_s']:.2f} s, wall "
                  f"{got['wall_s']:.2f} s, simulation {got['sim_cpu_s']:.2f} s: whole / simulation "
                  f"{got['whole_over_sim']:.2f}x (limit {WHOLE_OVER_SIM_LIMIT:g}x)")
    if a.help_runs:
        for name, got in zip(names, interleaved(help_runs, a.help_runs, trees)):
            out[name].update(got)
            print(f"{name}: pwormhole --help (median of {a.help_runs}): CPU {got['help_cpu_s']:.3f} s, wall "
                  f"{got['help_wall_s']:.3f} s (limit {HELP_WALL_LIMIT_S:g} s wall)")
    if a.phases:
        parts = interleaved(phase_runs, a.phases, trees)
        print(f"\nparts of the default run (CPU s, median of {a.phases}): " + " | ".join(names))
        for part in parts[0]:
            print(f"  {part:<44}" + "".join(f" {p.get(part, 0.0):7.3f}" for p in parts))
        for name, p in zip(names, parts):
            out[name]["phases_cpu_s"] = p
    if a.json:
        Path(a.json).parent.mkdir(parents=True, exist_ok=True)
        Path(a.json).write_text(json.dumps(out, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
