#!/usr/bin/env python3
"""Wormhole against packet mode on random small scenarios (a benchmark, not a test).

The bench rows of ``bench/wormhole.py`` are training iterations on rail-optimized fabrics;
this script looks elsewhere: each scenario ``i`` (drawn from ``random.Random(i)``) is a
fat-tree k=4 or an 8-host leaf-spine (1 or 2 spines, oversubscription 1 or 2), one of the
implemented congestion controls (DCQCN, HPCC, TIMELY, DCTCP, equally likely; scenarios drawn
before TIMELY and DCTCP existed chose DCQCN 2/3, HPCC 1/3), with (60%) or without windows,
and 3-8 flows of 2, 5, 10 or 20 MB, 40% of them into one host, two thirds starting at 0 and
the rest within 400 us. Each runs in packet mode with seeds 1 and 2, and in Wormhole mode
with seed 1.

Per scenario: mean and max per-flow FCT error of Wormhole against packet seed 1, the same
for packet seed 2 against seed 1 (the seed moves the ECMP hashes and ECN marking draws:
where that changes FCTs, the scenario is sensitive to which paths and marks it gets, and
Wormhole's error there must be read against it), events ratio, skips and memo hits.

    python3 bench/random_small.py [--first 0] [--count 40] [--cc timely,dctcp] [--no-early] [--out DIR]

``--cc`` runs only the scenarios (of the ``--count`` from ``--first``) that drew one of those CCs.

Rows are appended to ``<out>/results.md`` as each scenario finishes (``results.jsonl`` too),
then a summary by congestion control.
"""

from __future__ import annotations

import argparse
import math
import random
import sys
from pathlib import Path

import numpy as np
from results_log import ResultsLog

from pwormhole.accel.memo import MemoCache
from pwormhole.accel.wormhole import AccelConfig
from pwormhole.config import CC_BY_NAME, ModelConfig
from pwormhole.run import Run
from pwormhole.scenario import Scenario, number_sports
from pwormhole.topology.builders import fat_tree, leaf_spine
from pwormhole.workload.flows import Flow

ROOT = Path(__file__).resolve().parents[1]

US = 1_000_000
HEADER = ("| # | cc | window | fabric | flows | Wormhole FCT err mean | max | packet seed 2 vs 1: mean | max | "
          "events ratio | skips | memo hit/miss |\n|---|---|---|---|---|---|---|---|---|---|---|---|")


def draw(i: int):
    """``(cc, has_win, topology, [(src, dst, size_bytes, start_ps)])`` of scenario ``i``."""
    rng = random.Random(i)
    cc = rng.choice(sorted(CC_BY_NAME))
    has_win = rng.random() < 0.6
    if rng.random() < 0.5:
        topo = leaf_spine(8, 2, rng.choice([1, 2]), oversubscription=rng.choice([1.0, 2.0]))
        hosts = list(range(8))
    else:
        topo = fat_tree(4)
        hosts = list(range(16))
    specs = []
    for _ in range(rng.randint(3, 8)):
        src, dst = rng.sample(hosts, 2)
        if rng.random() < 0.4:  # some incast
            dst = hosts[0] if src != hosts[0] else hosts[1]
        start = rng.choice([0, 0, rng.randrange(400) * US + rng.randrange(1000) * 1000])
        specs.append((src, dst, rng.choice([2, 5, 10, 20]) * 10**6, start))
    return cc, has_win, topo, specs


def config(cc: str, has_win: bool) -> ModelConfig:
    cfg = ModelConfig(cc_mode=CC_BY_NAME[cc], has_win=has_win)
    for r in (200 * 10**9, 400 * 10**9):  # leaf-spine uplinks (ns-3's maps stop at 100 Gb/s)
        cfg.kmin_map_bytes[r] = r // 10**9 * 4000
        cfg.kmax_map_bytes[r] = r // 10**9 * 16000
        cfg.pmax_map[r] = 0.2
    return cfg


def scenario(i: int) -> Scenario:
    cc, has_win, topo, specs = draw(i)
    flows = number_sports([Flow(k, s, d, 3, 100, size, start) for k, (s, d, size, start) in enumerate(specs)])
    return Scenario(f"random-{i}", topo, flows, config(cc, has_win))


def errors(ref, run) -> np.ndarray:
    return np.array([abs((run.finish_ps[f] - run.start_ps[f]) - (ref.finish_ps[f] - ref.start_ps[f]))
                     / (ref.finish_ps[f] - ref.start_ps[f]) for f in ref.finish_ps if f in run.finish_ps])


def one(i: int, early: bool = True, follow: bool = False, successors: bool = True) -> dict:
    cc, has_win, topo, specs = draw(i)
    ref = Run(scenario(i), 1).run()
    other = Run(scenario(i), 2).run()
    accel = AccelConfig(early=early, follow=follow, successors=successors)
    wh = Run(scenario(i), 1, accel=accel, memo=MemoCache(f"random-{i}")).run()
    e, s = errors(ref, wh), errors(ref, other)
    return {"i": i, "cc": cc, "has_win": has_win, "fabric": topo.name, "flows": len(specs),
            "complete": len(wh.finish_ps) == len(ref.finish_ps) == len(specs),
            "mean_fct_error": float(e.mean()), "max_fct_error": float(e.max()),
            "seed2_mean_fct_change": float(s.mean()), "seed2_max_fct_change": float(s.max()),
            "speedup_events": ref.events / wh.events, "skips": wh.accel.skips,
            "memo_hits": wh.accel.memo_hits, "memo_misses": wh.accel.memo_misses}


def md(r: dict) -> str:
    def pct(v):
        return f"{v * 100:.2f}%"
    return (f"| {r['i']} | {r['cc']} | {'yes' if r['has_win'] else 'no'} | {r['fabric']} | {r['flows']} | "
            f"{pct(r['mean_fct_error'])} | {pct(r['max_fct_error'])} | {pct(r['seed2_mean_fct_change'])} | "
            f"{pct(r['seed2_max_fct_change'])} | {r['speedup_events']:.1f}x | {r['skips']} | "
            f"{r['memo_hits']}/{r['memo_misses']} |" + ("" if r["complete"] else " INCOMPLETE"))


def summary(rows: list) -> str:
    out = ["", "| cc | scenarios | mean of per-scenario mean errors | scenarios with mean > 1% | with max > 2% | "
           "events ratio (geometric mean) |", "|---|---|---|---|---|---|"]
    for cc in sorted(CC_BY_NAME):
        v = [r for r in rows if r["cc"] == cc]
        if not v:
            continue
        geo = math.exp(sum(math.log(r["speedup_events"]) for r in v) / len(v))
        out.append(f"| {cc} | {len(v)} | {sum(r['mean_fct_error'] for r in v) / len(v) * 100:.2f}% | "
                   f"{sum(r['mean_fct_error'] > 0.01 for r in v)} | {sum(r['max_fct_error'] > 0.02 for r in v)} | "
                   f"{geo:.2f}x |")
    return "\n".join(out)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--first", type=int, default=0, help="first scenario number")
    ap.add_argument("--count", type=int, default=40, help="number of scenarios")
    ap.add_argument("--cc", default=",".join(sorted(CC_BY_NAME)), help="comma-separated CCs to run (default: all)")
    ap.add_argument("--no-early", action="store_true", help="Wormhole without HPCC's early freeze (AccelConfig.early)")
    ap.add_argument("--follow", action="store_true", help="Wormhole with followers (AccelConfig.follow)")
    ap.add_argument("--no-successors", action="store_true",
                    help="Wormhole without ring steps taking their predecessors' steady state (AccelConfig.successors)")
    ap.add_argument("--out", default=str(ROOT / "bench-out" / "random_small"))
    a = ap.parse_args()
    if a.count < 1:
        ap.error("--count must be at least 1")
    ccs = set(a.cc.split(","))
    if not ccs <= set(CC_BY_NAME):
        ap.error(f"--cc: choose among {', '.join(sorted(CC_BY_NAME))}")
    log = ResultsLog(a.out, HEADER)
    rows = []
    for i in range(a.first, a.first + a.count):
        if draw(i)[0] not in ccs:
            continue
        r = one(i, not a.no_early, a.follow, not a.no_successors)
        rows.append(r)
        log.add(md(r), r)
    log.add(summary(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
