#!/usr/bin/env python3
"""Ranks against one rank, measured in interleaved rounds and predicted (a benchmark, not a test).

For the scenario given after ``--`` (arguments of ``pwormhole run``): records its work per
window three times (``run --record-windows``; the record of median total is kept), makes the plan
of each rank count from it (``partition --from-run``), predicts the wall times (``scale
--predict``), then runs ``--rounds`` rounds, each one run at 1 rank and one at every rank count
(``mpiexec -n R ... --plan``), in turn. Prints the walls, the medians, the median of the
per-round speedups (steadier than the ratio of medians where the machine's speed drifts), the
predictions, and whether every ``fct.txt`` equals the 1-rank one. Exit 1 if any differs.

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

import numpy as np

BIN = Path(sys.executable).parent
PWORMHOLE = [sys.executable, "-m", "pwormhole"]


def run(args: list[str], out: Path, ranks: int = 1, plan: Path | None = None) -> dict:
    cmd = PWORMHOLE + ["run", *args, "--out", str(out), "--no-progress"] + (["--plan", str(plan)] if plan else [])
    if ranks > 1:
        cmd = [shutil.which("mpiexec", path=str(BIN)) or "mpiexec", "-n", str(ranks)] + cmd
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return json.loads((out / "summary.json").read_text())


def recorded_total(folder: Path) -> float:
    with np.load(folder / "windows.npz") as z:
        local = float(z["local_s"].sum()) if "local_s" in z.files else 0.0
        return float(z["unit_s"].sum() + z["boundary_s"].sum() + z["writer_s"].sum()) + local


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
    recs = [out / f"record{i}" for i in range(3)]
    for rec in recs:
        run(a.run_args + ["--record-windows"], rec)
    rec = sorted(recs, key=recorded_total)[1]
    plans = {}
    for r in ranks:
        plans[r] = out / f"plan{r}.json"
        subprocess.run(PWORMHOLE + ["partition", "--parts", str(r), "--from-run", str(rec), "--save", str(plans[r])],
                       check=True, stdout=subprocess.DEVNULL)
    subprocess.run(PWORMHOLE + ["scale", "--predict", ",".join(map(str, ranks)), "--from-run", str(rec), "--out",
                                str(out / "predict")], check=True, stdout=subprocess.DEVNULL)
    with open(out / "predict" / "prediction.csv") as fh:
        predicted = {int(row["ranks"]): float(row["wall_s"]) for row in csv.DictReader(fh)}
    walls: dict[int, list[float]] = {r: [] for r in [1, *ranks]}
    identical = True
    for k in range(a.rounds):
        one = out / f"round{k}-1"
        walls[1].append(run(a.run_args, one)["wall_s"])
        ref = (one / "fct.txt").read_bytes()
        line = f"round {k + 1}: 1 rank {walls[1][-1]:.3f} s"
        for r in ranks:
            dest = out / f"round{k}-{r}"
            walls[r].append(run(a.run_args, dest, r, plans[r])["wall_s"])
            same = (dest / "fct.txt").read_bytes() == ref
            identical &= same
            flag = "" if same else ", DIFFERS"
            line += f"  {r} ranks {walls[r][-1]:.3f} s ({walls[1][-1] / walls[r][-1]:.2f}x{flag})"
        print(line, flush=True)
    base = statistics.median(walls[1])
    print(f"1 rank: median {base:.3f} s, predicted {predicted[1]:.3f} s")
    for r in ranks:
        ratios = [w1 / wr for w1, wr in zip(walls[1], walls[r])]
        print(f"{r} ranks: median {statistics.median(walls[r]):.3f} s, speedup {statistics.median(ratios):.2f}x "
              f"(median of rounds), predicted {predicted[r]:.3f} s ({predicted[1] / predicted[r]:.2f}x)")
    print("fct.txt identical at every rank count" if identical else "fct.txt DIFFERS")
    return 0 if identical else 1


if __name__ == "__main__":
    sys.exit(main())
