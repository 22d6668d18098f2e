#!/usr/bin/env python3
"""The machine's own ceiling for 2 ranks: one run alone against two of the same run at once.

Each round runs ``pwormhole run ARGS`` alone, then twice at the same time, and prints how much
more work two busy cores do than one (2 x alone / the slower of the two). Two ranks of one run
cannot beat what two independent runs get from the machine (shared caches and memory bandwidth).
A benchmark, not a test; run it alone on the machine.

    python3 bench/two_at_once.py [--rounds 5] -- RUN_ARGS...
    (default RUN_ARGS: the 64-GPU GPT-7B dist-opt DCQCN iteration, Wormhole mode)
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

GPT7B_64 = ["--model", "gpt-7b", "--gpus", "64", "--tp", "8", "--pp", "2", "--dist-opt",
            "--topology", "rail-optimized:gpus=64", "--cc", "dcqcn"]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("run_args", nargs="*")
    a = ap.parse_args()
    run_args = a.run_args or GPT7B_64

    def start(out: Path) -> subprocess.Popen:
        return subprocess.Popen([sys.executable, "-m", "pwormhole", "run", *run_args, "--out", str(out),
                                 "--no-progress"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def wall(out: Path) -> float:
        return json.loads((out / "summary.json").read_text())["wall_s"]

    gains = []
    with tempfile.TemporaryDirectory() as tmp:
        alone, first, second = Path(tmp) / "alone", Path(tmp) / "first", Path(tmp) / "second"
        for r in range(a.rounds):
            if start(alone).wait() != 0:
                return 1
            pair = [start(first), start(second)]
            if any(p.wait() != 0 for p in pair):
                return 1
            slower = max(wall(first), wall(second))
            gains.append(2 * wall(alone) / slower)
            print(f"round {r + 1}: alone {wall(alone):.3f} s, two at once {wall(first):.3f} / {wall(second):.3f} s: "
                  f"two cores do {gains[-1]:.2f}x the work of one", flush=True)
    print(f"median of rounds: {statistics.median(gains):.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
