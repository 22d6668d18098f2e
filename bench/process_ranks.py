#!/usr/bin/env python3
"""The whole process at 1 rank and at N ranks, in interleaved rounds (a benchmark, not a test).

Each round runs ``pwormhole run RUN_ARGS`` once at 1 rank and once under ``mpiexec -n N`` (the
run's own METIS plan), for this checkout's Python and, with ``--against PYTHON``, for another
checkout's virtual environment (its ``mpiexec`` beside it), in turn. Prints per run the process
wall (launcher included), the simulation's ``wall_s`` and the 1-minute load average before it;
then per code the medians, the median of the per-round speedups and whether every ``fct.txt``
equals the first one. Exit 1 if any ``fct.txt`` differs.

    python3 bench/process_ranks.py [--ranks 2] [--rounds 3] [--against /path/.venv/bin/python] \\
        [--out DIR] -- RUN_ARGS...
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def one(python: str, ranks: int, args: list[str], out: Path) -> dict:
    """One whole run: ``{"wall_s", "sim_s", "load"}``."""
    cmd = [python, "-m", "pwormhole", "run", *args, "--out", str(out), "--no-progress"]
    if ranks > 1:
        cmd = [shutil.which("mpiexec", path=str(Path(python).parent)) or "mpiexec", "-n", str(ranks)] + cmd
    load = os.getloadavg()[0]
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall_s = time.perf_counter() - t0
    sim_s = json.loads((out / "summary.json").read_text())["wall_s"]
    return {"wall_s": wall_s, "sim_s": sim_s, "load": load}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ranks", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--against", metavar="PYTHON", help="another checkout's venv Python, measured in turn")
    ap.add_argument("--out", help="folder for the runs' outputs (default: a temporary one)")
    ap.add_argument("run_args", nargs="*")
    a = ap.parse_args()
    pythons = {"this code": sys.executable}
    if a.against:
        pythons[a.against] = a.against
    base = Path(a.out) if a.out else Path(tempfile.mkdtemp(prefix="process-ranks-"))
    got: dict = {name: {1: [], a.ranks: []} for name in pythons}
    reference = None
    same = True
    for k in range(a.rounds):
        for name, python in pythons.items():
            for ranks in (1, a.ranks):
                out = base / f"{len(got[name][ranks])}-{list(pythons).index(name)}-{ranks}"
                r = one(python, ranks, a.run_args, out)
                fct = (out / "fct.txt").read_bytes()
                reference = fct if reference is None else reference
                r["same"] = fct == reference
                same = same and r["same"]
                got[name][ranks].append(r)
                print(f"round {k + 1}, {name}, {ranks} rank{'s' if ranks > 1 else ''}: process {r['wall_s']:.2f} s, "
                      f"simulation {r['sim_s']:.2f} s, load {r['load']:.2f}, fct.txt "
                      f"{'same' if r['same'] else 'DIFFERS'}", flush=True)
    for name in pythons:
        one_rank, many = got[name][1], got[name][a.ranks]
        ratios = [x["wall_s"] / y["wall_s"] for x, y in zip(one_rank, many)]
        sim_ratios = [x["sim_s"] / y["sim_s"] for x, y in zip(one_rank, many)]
        print(f"{name}: process median 1 rank {statistics.median(x['wall_s'] for x in one_rank):.2f} s, "
              f"{a.ranks} ranks {statistics.median(x['wall_s'] for x in many):.2f} s, speedup median of rounds "
              f"{statistics.median(ratios):.2f}x ({min(ratios):.2f}-{max(ratios):.2f}); simulation median 1 rank "
              f"{statistics.median(x['sim_s'] for x in one_rank):.2f} s, {a.ranks} ranks "
              f"{statistics.median(x['sim_s'] for x in many):.2f} s, {statistics.median(sim_ratios):.2f}x")
    print("every fct.txt the same" if same else "fct.txt DIFFERS")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
