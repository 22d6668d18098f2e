#!/usr/bin/env python3
"""Wormhole where nothing settles: FbHdp traffic on HPCC's ``fat.txt`` (a benchmark, not a test).

Flows from ``pwormhole gen-flows`` (HPCC's FbHdp size distribution, 50% load, 200 us of arrivals,
seed 1) on the 320-host fat tree of ``tests/data/hpcc/mix/fat.txt``, under DCQCN: thousands of short
flows, so the conflict groups change at almost every boundary and few of them are ever steady.
Wormhole mode must then cost about what packet mode costs.

Each round runs ``pwormhole run`` in packet mode, then in Wormhole mode, each a child process;
it prints per round and as medians the events and the simulation CPU seconds (``cpu_s``) of
each and their ratio, and the per-flow FCT error (mean / p99) of Wormhole against packet mode.
Seconds drift on a shared machine; ``--instructions`` also counts each mode's instructions inside
the window loop under callgrind (as ``bench/loop_instructions.py`` does; minutes), which do not.
Rows are appended to ``<out>/results.md`` and ``results.jsonl``.

    python3 bench/unsettled.py [--rounds 3] [--until TIME] [--instructions] [--out bench-out/unsettled]
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
from pathlib import Path

from loop_instructions import HELPER, loop_counts
from results_log import ResultsLog

from pwormhole.report.compare import compare_dirs

ROOT = Path(__file__).resolve().parents[1]
TOPOLOGY = ROOT / "tests" / "data" / "hpcc" / "mix" / "fat.txt"
CDF = ROOT / "tests" / "data" / "traffic_gen" / "FbHdp_distribution.txt"
LOAD, DURATION, SEED = "0.5", "200us", "1"
CLI = [sys.executable, "-m", "pwormhole.cli"]

HEADER = ("| round | packet: events, CPU | Wormhole: events, CPU | CPU ratio | events ratio (packet / Wormhole) "
          "| FCT err mean / p99 |\n|---|---|---|---|---|---|")


def run_mode(flows: Path, mode: str, out: Path, until: str | None, launcher: list[str] = CLI) -> dict:
    """One ``pwormhole run`` of the flows in ``mode`` (``launcher``: the command before ``run``); its summary."""
    cmd = [*launcher, "run", "--topology", str(TOPOLOGY), "--flows", str(flows), "--cc", "dcqcn",
           "--mode", mode, "--out", str(out), "--no-progress"] + (["--until", until] if until else [])
    got = subprocess.run(cmd, cwd=ROOT, env=dict(os.environ, PYTHONHASHSEED="0"), stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, text=True)
    if got.returncode != 0:
        raise SystemExit(f"unsettled: {mode} run failed (exit {got.returncode}):\n{got.stderr[-2000:]}")
    return json.loads((out / "summary.json").read_text())


def loop_instructions(flows: Path, mode: str, out: Path, until: str | None, tmp: Path) -> int:
    """Instructions of the window loop (``run_windows``) of one run under callgrind."""
    lib = tmp / "libloop.so"
    if not lib.exists():
        (tmp / "loop.c").write_text(HELPER)
        subprocess.run(["gcc", "-O2", "-shared", "-fPIC", "-o", str(lib), str(tmp / "loop.c")], check=True)
    dump = tmp / f"{mode}.cg"
    run_mode(flows, mode, out, until, ["valgrind", "--tool=callgrind", "--collect-atstart=no", "--instr-atstart=no",
                                       f"--callgrind-out-file={dump}", sys.executable,
                                       str(ROOT / "bench" / "loop_instructions.py"), "--child", str(lib)])
    return loop_counts(f"{dump}.1")[0]  # the part dumped as the loop ends


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--until", help="stop both runs at this simulated time (e.g. 200us)")
    ap.add_argument("--instructions", action="store_true", help="also count the loops' instructions (callgrind)")
    ap.add_argument("--out", default=str(ROOT / "bench-out" / "unsettled"))
    a = ap.parse_args()
    log = ResultsLog(a.out, HEADER)
    flows = log.out / "fb.txt"
    subprocess.run([*CLI, "gen-flows", "--cdf", str(CDF), "--load", LOAD, "--duration", DURATION, "--topology",
                    str(TOPOLOGY), "--seed", SEED, "--out", str(flows)], cwd=ROOT, check=True)
    pdir, wdir = log.out / "packet", log.out / "wormhole"
    rows = []
    for r in range(1, a.rounds + 1):
        ps = run_mode(flows, "packet", pdir, a.until)
        ws = run_mode(flows, "wormhole", wdir, a.until)
        cmp, _ = compare_dirs(str(pdir), str(wdir), ps, ws)
        row = {"round": r, "until": a.until, "packet_events": ps["events"], "packet_cpu_s": ps["cpu_s"],
               "wormhole_events": ws["events"], "wormhole_cpu_s": ws["cpu_s"], "engine": ws["engine"],
               "mean_fct_error": cmp["mean_fct_error"], "p99_fct_error": cmp["p99_fct_error"],
               "skips": ws["skips"], "memo_hits": ws["memo_hits"], "memo_misses": ws["memo_misses"]}
        rows.append(row)
        log.add(line(str(r), row), row)
    med = {k: statistics.median(x[k] for x in rows) for k in ("packet_cpu_s", "wormhole_cpu_s")}
    log.add(line("median", {**rows[-1], **med}))
    if a.instructions:
        if shutil.which("valgrind") is None or shutil.which("gcc") is None:
            print("unsettled: --instructions needs valgrind and gcc", file=sys.stderr)
            return 2
        with tempfile.TemporaryDirectory() as tmp:
            counts = {m: loop_instructions(flows, m, log.out / f"{m}-cg", a.until, Path(tmp))
                      for m in ("packet", "wormhole")}
        pk, wh = counts["packet"], counts["wormhole"]
        log.add(f"| instructions of the window loop | {pk / 1e9:.3f} G | {wh / 1e9:.3f} G | {wh / pk:.3f}x | | |",
                {"instructions": counts, "until": a.until})
    return 0


def line(name: str, r: dict) -> str:
    def pct(v):
        return "-" if v is None else f"{v * 100:.3f}%"
    return (f"| {name} | {r['packet_events'] / 1e6:.2f} M, {r['packet_cpu_s']:.2f} s | "
            f"{r['wormhole_events'] / 1e6:.2f} M, {r['wormhole_cpu_s']:.2f} s | "
            f"{r['wormhole_cpu_s'] / r['packet_cpu_s']:.2f}x | {r['packet_events'] / r['wormhole_events']:.3f}x | "
            f"{pct(r['mean_fct_error'])} / {pct(r['p99_fct_error'])} |")


if __name__ == "__main__":
    sys.exit(main())
