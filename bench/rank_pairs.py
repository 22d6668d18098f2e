#!/usr/bin/env python3
"""Ranks against one rank, measured in interleaved rounds and predicted (a benchmark, not a test).

For the scenario given after ``--`` (arguments of ``pwormhole run``): records its work per
window (``run --record-windows``) and makes the plan of each rank count from it (``partition
--from-run``), then runs ``--rounds`` rounds, each a record and its prediction (``scale
--predict``), one run at 1 rank and one at every rank count (``mpiexec -n R ... --plan``), in
turn: each prediction is set against the runs of its own round (the machine's speed drifts
between minutes). Prints the walls, the medians, the median of the per-round speedups (steadier
than the ratio of medians), the predictions and the median of their per-round errors, and
whether every ``fct.txt`` equals the 1-rank one. Exit 1 if any differs.

Measure alone on the machine: the ranks wait for each other at every window, so a core
taken by another job shows up as waiting.

    python3 bench/rank_pairs.py [--ranks 2] [--rounds 3] [--out DIR] -- --model gpt-7b --gpus 64 \\
        --tp 8 --pp 2 --dist-opt --topology rail-optimized:gpus=64 --cc dcqcn
"""

from __future__ import annotations

import argparse
import csv
import json
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

BIN = Path(sys.executable).parent
PWORMHOLE = [sys.executable, "-m", "pwormhole"]


def run(args: list[str], out: Path, ranks: int = 1, plan: Path | None = None) -> dict:
    cmd = PWORMHOLE + ["run", *args, "--out", str(out), "--no-progress"] + (["--plan", str(plan)] if plan else [])
    if ranks > 1:
        cmd = [shutil.which("mpiexec", path=str(BIN)) or "mpiexec", "-n", str(ranks)] + cmd
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return json.loads((out / "summary.json").read_text())


def predicted(rec: Path, ranks: list[int], dest: Path) -> dict[int, float]:
    """``scale --predict`` from the record in ``rec``: rank count -> wall seconds."""
    subprocess.run(PWORMHOLE + ["scale", "--predict", ",".join(map(str, ranks)), "--from-run", str(rec), "--out",
                                str(dest)], check=True, stdout=subprocess.DEVNULL)
    with open(dest / "prediction.csv") as fh:
        return {int(row["ranks"]): float(row["wall_s"]) for row in csv.DictReader(fh)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ranks", default="2", help="comma-separated rank counts above 1 (default 2)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--out", default="bench-out/rank-pairs")
    ap.add_argument("run_args", nargs="*")
    a = ap.parse_args()
    ranks = [int(x) for x in a.ranks.split(",")]
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    run(a.run_args + ["--record-windows"], out / "record")
    plans = {}
    for r in ranks:
        plans[r] = out / f"plan{r}.json"
        subprocess.run(PWORMHOLE + ["partition", "--parts", str(r), "--from-run", str(out / "record"), "--save",
                                    str(plans[r])], check=True, stdout=subprocess.DEVNULL)
    walls: dict[int, list[float]] = {r: [] for r in [1, *ranks]}
    preds: dict[int, list[float]] = {r: [] for r in [1, *ranks]}
    identical = True
    for k in range(a.rounds):
        rec = out / f"round{k}-record"
        run(a.run_args + ["--record-windows"], rec)
        for r, w in predicted(rec, ranks, out / f"round{k}-predict").items():
            preds[r].append(w)
        one = out / f"round{k}-1"
        walls[1].append(run(a.run_args, one)["wall_s"])
        ref = (one / "fct.txt").read_bytes()
        line = f"round {k + 1}: 1 rank {walls[1][-1]:.3f} s (predicted {preds[1][-1]:.3f})"
        for r in ranks:
            dest = out / f"round{k}-{r}"
            walls[r].append(run(a.run_args, dest, r, plans[r])["wall_s"])
            same = (dest / "fct.txt").read_bytes() == ref
            identical &= same
            flag = "" if same else ", DIFFERS"
            line += (f"  {r} ranks {walls[r][-1]:.3f} s ({walls[1][-1] / walls[r][-1]:.2f}x{flag}; predicted "
                     f"{preds[r][-1]:.3f})")
        print(line, flush=True)
    for r in [1, *ranks]:
        errors = [p / w - 1 for p, w in zip(preds[r], walls[r])]
        ratios = [w1 / wr for w1, wr in zip(walls[1], walls[r])]
        pred_ratios = [p1 / pr for p1, pr in zip(preds[1], preds[r])]
        print(f"{r} rank{'s' if r > 1 else ''}: median {statistics.median(walls[r]):.3f} s, speedup "
              f"{statistics.median(ratios):.2f}x (median of rounds); predicted median "
              f"{statistics.median(preds[r]):.3f} s ({statistics.median(pred_ratios):.2f}x), error against its round "
              f"{statistics.median(errors) * 100:+.0f}% (rounds {', '.join(f'{e * 100:+.0f}%' for e in errors)})")
    print("fct.txt identical at every rank count" if identical else "fct.txt DIFFERS")
    return 0 if identical else 1


if __name__ == "__main__":
    sys.exit(main())
