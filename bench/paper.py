#!/usr/bin/env python3
"""The Wormhole paper's configurations (NSDI 2026, section 7) as bench rows (a benchmark, not a test).

Built-in generator, rail-optimized fabrics (8-GPU servers, 200 Gb/s NICs), sequence 2048,
micro-batch 1, TP included (``-notp``: TP collectives left out, as the paper runs them):

* ``gpt7b-64``: GPT-7B, 64 GPUs, TP8-DP4-PP2 (``-dopt``: distributed optimizer); ``gpt7b-256-dopt``,
  ``gpt7b-1024-dopt``, ``gpt7b-2048-dopt``: the same at DP 16, 64 and 128; ``gpt7b-64-zero3``: with
  ZeRO-3 / FSDP sharding (``--zero 3``) instead;
* ``moe-64``: Mixtral 8x7B, 64 GPUs, TP8-EP4-DP4-PP2;
* ``gpt13b-128``: GPT-13B, 128 GPUs, TP8-DP4-PP4;
* ``gpt22b-256``: GPT-22B, 256 GPUs, TP8-DP8-PP4;
* ``gpt175b-1024``: GPT-175B, 1024 GPUs, TP8-DP16-PP8.

Each row runs one layer count of the ladder (``--layers 2,4,8``, multiples of its PP; ``full``: the model's own)
under each CC (``--cc hpcc,dcqcn``). With ``--packet`` it runs ``compare`` (packet mode and
Wormhole mode, errors and events ratio); without, Wormhole mode alone (events, wall, peak
memory). Each run is a child process, so its peak memory (``ru_maxrss``) is its own. Rows
are appended to ``<out>/results.md`` and ``results.jsonl`` as each finishes.

    python3 bench/paper.py [--only NAME[,NAME]] [--layers 2,4|full] [--cc hpcc,dcqcn]
                           [--packet] [--out bench-out/paper]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import resource
import sys
import time
from pathlib import Path

from results_log import ResultsLog
from wormhole import ROOT, gpt, moe

from pwormhole.accel.config import AccelConfig
from pwormhole.commands.compare import compare
from pwormhole.simulate import simulate
from pwormhole.workload.models import MODELS

SEQ_LEN = 2048
# name -> (model, gpus, parallelism, distributed optimizer)
CONFIGS = {
    "gpt7b-64": ("gpt-7b", 64, {"tp": 8, "pp": 2}, False),
    "gpt7b-64-dopt": ("gpt-7b", 64, {"tp": 8, "pp": 2}, True),
    "gpt7b-256-dopt": ("gpt-7b", 256, {"tp": 8, "pp": 2}, True),  # DP 16
    "gpt7b-1024-dopt": ("gpt-7b", 1024, {"tp": 8, "pp": 2}, True),  # DP 64
    "gpt7b-2048-dopt": ("gpt-7b", 2048, {"tp": 8, "pp": 2}, True),  # DP 128
    "gpt7b-64-zero3": ("gpt-7b", 64, {"tp": 8, "pp": 2, "zero": 3}, False),  # ZeRO-3 / FSDP
    "moe-64": ("moe-8x7b", 64, {"tp": 8, "pp": 2, "ep": 4}, False),
    "gpt13b-128": ("gpt-13b", 128, {"tp": 8, "pp": 4}, False),
    "gpt13b-128-dopt": ("gpt-13b", 128, {"tp": 8, "pp": 4}, True),
    "gpt22b-256": ("gpt-22b", 256, {"tp": 8, "pp": 4}, False),
    "gpt22b-256-dopt": ("gpt-22b", 256, {"tp": 8, "pp": 4}, True),
    "gpt175b-1024": ("gpt-175b", 1024, {"tp": 8, "pp": 8}, False),
    "gpt175b-1024-dopt": ("gpt-175b", 1024, {"tp": 8, "pp": 8}, True),
}
for _n in list(CONFIGS):
    CONFIGS[_n + "-notp"] = CONFIGS[_n]

HEADER = ("| row | layers | CC | flows | events (Wormhole) | events ratio | FCT err mean / p99 | iter err | "
          "wall (Wormhole) | peak memory | NVLink by rates / packets |\n|---|---|---|---|---|---|---|---|---|---|---|")


def factory(name: str, layers: int, cc: str):
    """The scenario factory of row ``name`` (``bench/wormhole.py``'s builders)."""
    model, gpus, par, dopt = CONFIGS[name]
    no_tp = name.endswith("-notp")
    if par.get("ep"):
        return moe(gpus, par["ep"], par["tp"], layers, cc, SEQ_LEN, pp=par["pp"], no_tp=no_tp)
    return gpt(gpus, cc, layers, model, par["tp"], SEQ_LEN, dopt, no_tp, par["pp"], zero=par.get("zero", 0))


def one(name: str, layers: int, cc: str, packet: bool, out: Path, queue) -> None:
    """Child process: one row, put on ``queue`` with this process's peak memory (or the error)."""
    try:
        queue.put(_row(name, layers, cc, packet, out))
    except Exception as e:  # the parent prints it and goes on
        queue.put({"error": f"{type(e).__name__}: {e}"})


def _row(name: str, layers: int, cc: str, packet: bool, out: Path) -> dict:
    make = factory(name, layers, cc)
    folder = out / f"{name}-L{layers}-{cc}"
    t0 = time.time()
    if packet:
        r = compare(make, str(folder), AccelConfig(), quiet=True)
        ws = json.loads((folder / "wormhole" / "summary.json").read_text())
    else:
        ws = simulate(make(), str(folder / "wormhole"), quiet=True, accel=AccelConfig())
        r = {}
    r.update({"flows": ws["flows"], "wormhole_events": ws["events"], "wormhole_wall_s": ws["wall_s"],
              "fluid_flows": ws.get("fluid_flows", 0), "nvlink_packet_flows": ws.get("nvlink_packet_flows", 0),
              "complete": ws["complete"], "bench_wall_s": time.time() - t0,
              "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024})
    return r


def pct(v) -> str:
    return "-" if v is None else f"{v * 100:.2f}%"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", help="comma-separated rows: " + ", ".join(CONFIGS))
    ap.add_argument("--layers", default="2,4", help="layer counts, comma-separated, or full")
    ap.add_argument("--cc", default="hpcc,dcqcn")
    ap.add_argument("--packet", action="store_true", help="also the packet-mode reference (compare)")
    ap.add_argument("--out", default=str(ROOT / "bench-out" / "paper"))
    a = ap.parse_args()
    names = a.only.split(",") if a.only else list(CONFIGS)
    for n in names:
        if n not in CONFIGS:
            ap.error(f"unknown row {n!r}")
    log = ResultsLog(a.out, HEADER)
    out = log.out
    ctx = multiprocessing.get_context("fork")
    for n in names:
        for layers_arg in a.layers.split(","):
            layers = MODELS[CONFIGS[n][0]].n_layers if layers_arg == "full" else int(layers_arg)
            pp = CONFIGS[n][2]["pp"]
            if layers % pp:
                print(f"| {n} | {layers} | skipped: not a multiple of PP {pp} |", flush=True)
                continue
            for cc in a.cc.split(","):
                q = ctx.Queue()
                p = ctx.Process(target=one, args=(n, layers, cc, a.packet, out, q))
                p.start()
                r = q.get()
                p.join()
                if "error" in r:
                    print(f"| {n} | {layers} | {cc} | failed: {r['error']} |", flush=True)
                    continue
                ratio = f"{r['speedup_events']:.1f}x" if r.get("speedup_events") else "-"
                err = f"{pct(r.get('mean_fct_error'))} / {pct(r.get('p99_fct_error'))}" if a.packet else "-"
                line = (f"| {n} | {layers} | {cc} | {r['flows']} | {r['wormhole_events']:,} | {ratio} | {err} | "
                        f"{pct(r.get('iteration_time_error')) if a.packet else '-'} | {r['wormhole_wall_s']:.1f} s | "
                        f"{r['peak_rss_mib']:.0f} MiB | {r['fluid_flows']} / {r['nvlink_packet_flows']} |"
                        + ("" if r["complete"] else " INCOMPLETE"))
                log.add(line, {"name": n, "layers": layers, "cc": cc, **r})
    return 0


if __name__ == "__main__":
    sys.exit(main())
