#!/usr/bin/env python3
"""Sensitivity of Wormhole's speed and error to its parameters (a benchmark, not a test).

For one scenario (a name from ``bench/wormhole.py``), runs packet mode once
and then Wormhole mode once per setting, all in this process, and compares
each Wormhole run with that one packet run exactly as
:func:`pwormhole.commands.compare.compare` does (per-flow FCT error, iteration
time error, wall and events ratios). Settings (``--sweep``):

* ``theta``: 0.005, 0.01, 0.02, 0.05, 0.1, 0.2 (other fields at their defaults);
* ``window``: ``samples`` = 4, 8, 16 (0, the default, picks by CC);
* ``span``: ``min_span_packets`` = 50, 100, 150, 500, 1000 (0, the default, picks by CC;
  a value set here also turns off the shorter span for flows held at the line rate);
* ``margin``: ``margin_rtts`` = 1, 2, 4;
* ``ablation``: skip only (no memo), memo only (no skip), both.

``--no-memo`` runs every setting of the other sweeps with memoization off
(skip only), to see fast-forwarding's own trade-off.

Rows are appended to ``<out>/sensitivity.md`` as each run finishes.

    python3 bench/sensitivity.py --scenario gpt7b-16-dcqcn --sweep theta,window,ablation
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
from pathlib import Path

import numpy as np
from wormhole import ACCEL_OVERRIDES, SCENARIOS

from pwormhole.accel.wormhole import AccelConfig
from pwormhole.report.compare import fct_errors, read_fct
from pwormhole.simulate import simulate

ROOT = Path(__file__).resolve().parents[1]

SWEEPS = {
    "theta": [("theta", v) for v in (0.005, 0.01, 0.02, 0.05, 0.1, 0.2)],
    "window": [("samples", v) for v in (4, 8, 16)],
    "span": [("min_span_packets", v) for v in (50, 100, 150, 500, 1000)],
    "margin": [("margin_rtts", v) for v in (1, 2, 4)],
    "ablation": [("ablation", "skip only"), ("ablation", "memo only"), ("ablation", "both")],
}
HEADER = ("| scenario | setting | FCT err mean | FCT err p99 | iter err | speedup wall | events ratio | "
          "skipped flow-time | skips | memo hit/miss |\n|---|---|---|---|---|---|---|---|---|---|")


def pct(v) -> str:
    return "-" if v is None else f"{v * 100:.2f}%"


def config(field: str, value, scenario: str = "") -> AccelConfig:
    cfg = AccelConfig(**ACCEL_OVERRIDES.get(scenario, {}))  # the *-fluid rows: --fluid-nvlink
    if field == "ablation":
        cfg.skip = value != "memo only"
        cfg.memo = value != "skip only"
    else:
        cfg = dataclasses.replace(cfg, **{field: value})
    return cfg


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scenario", default="gpt7b-16-dcqcn", choices=list(SCENARIOS))
    ap.add_argument("--sweep", default="theta,window,ablation", help="comma-separated: " + ", ".join(SWEEPS))
    ap.add_argument("--values", help="override the swept values, e.g. 0.05,0.1 (one sweep only)")
    ap.add_argument("--base", default="", help="fields set for every setting, e.g. theta=0.02,min_span_packets=100")
    ap.add_argument("--no-memo", action="store_true", help="every setting without memoization (skip only)")
    ap.add_argument("--out", default=str(ROOT / "bench-out" / "sensitivity"))
    a = ap.parse_args()
    settings = []
    for s in a.sweep.split(","):
        if s not in SWEEPS:
            ap.error(f"unknown sweep {s!r}")
        if a.values:
            field = SWEEPS[s][0][0]
            conv = float if field == "theta" else int
            settings += [(field, conv(v)) for v in a.values.split(",")]
        else:
            settings += SWEEPS[s]
    name, factory = a.scenario, SCENARIOS[a.scenario][1]
    out = Path(a.out) / (name + ("-nomemo" if a.no_memo else "") + (f"-{a.base}" if a.base else ""))
    out.mkdir(parents=True, exist_ok=True)
    res = Path(a.out) / "sensitivity.md"
    if not res.exists():
        res.write_text(HEADER + "\n")
    ps = simulate(factory(), str(out / "packet"), quiet=True)
    ref = read_fct(os.path.join(out, "packet", "fct.txt"))
    print(f"{name}: packet {ps['wall_s']:.1f} s, {ps['events']} events")
    print(HEADER)
    for field, value in settings:
        cfg = config(field, value, name)
        for kv in filter(None, a.base.split(",")):
            k, v = kv.split("=")
            if k != field:
                setattr(cfg, k, type(getattr(cfg, k))(float(v) if k == "theta" else int(v)))
        if a.no_memo:
            cfg.memo = False
        wdir = out / f"{field}-{value}".replace(" ", "_")
        ws = simulate(factory(), str(wdir), quiet=True, accel=cfg)
        err = fct_errors(ref, read_fct(os.path.join(wdir, "fct.txt")))
        it = None
        if ps.get("iteration_time_ns") and ws.get("iteration_time_ns") is not None:
            it = abs(ws["iteration_time_ns"] - ps["iteration_time_ns"]) / ps["iteration_time_ns"]
        setting = value if field == "ablation" else f"{field}={value}"
        if a.base:
            setting += f" [{a.base}]"
        if a.no_memo and field != "ablation":
            setting += " (no memo)"
        line = (f"| {name} | {setting} | {pct(float(err.mean()) if err.size else 0.0)} | "
                f"{pct(float(np.quantile(err, 0.99, method='inverted_cdf')) if err.size else 0.0)} | {pct(it)} | "
                f"{ps['wall_s'] / ws['wall_s']:.2f}x | {ps['events'] / max(1, ws['events']):.2f}x | "
                f"{ws.get('skipped_time_fraction', 0.0) * 100:.1f}% | {ws.get('skips', 0)} | "
                f"{ws.get('memo_hits', 0)}/{ws.get('memo_misses', 0)} |")
        print(line, flush=True)
        with open(res, "a") as fh:
            fh.write(line + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
