#!/usr/bin/env python3
"""Start-up time and memory per node and per flow (a benchmark, not a test).

Build cost must grow linearly with the topology and with the
flow list. Measured with ``tracemalloc`` (Python allocations that are still
alive after the build, i.e. what the run keeps) and ``time.perf_counter``
(start-up without tracemalloc, which slows allocation down):

* **per node**: a star of N hosts on one switch (100 Gbps, 1 us) with a single
  2-byte flow, N in ``--nodes``; and k-ary fat-trees (``--fat-k``);
* **per flow**: a star of ``--flow-hosts`` hosts with F flows between random
  host pairs (so nearly every host is some flow's destination), F in
  ``--flows``; bytes per flow = (memory(F) - memory(1 flow)) / (F - 1);
* with ``--run``, the peak during a run of the flow lists (1 packet per flow):
  what in-flight state (QPs, receiver state, packets, events) adds per flow.

Prints a table and, with ``--json``, one JSON object per measurement.

    python bench/memory.py [--nodes 500 1000 2000 4000] [--fat-k 4 8 16]
                           [--flow-hosts 1000] [--flows 1000 2000 4000 8000] [--run] [--json]
"""

from __future__ import annotations

import argparse
import gc
import json
import random
import sys
import time
import tracemalloc
from pathlib import Path

from pwormhole.config import CC_DCQCN, ModelConfig
from pwormhole.run import Run
from pwormhole.scenario import Scenario, number_sports
from pwormhole.topology.builders import fat_tree, star
from pwormhole.workload.flows import Flow

ROOT = Path(__file__).resolve().parents[1]


def _flows(pairs, size=2):
    return number_sports([Flow(i, s, d, 3, 100, size, 0) for i, (s, d) in enumerate(pairs)])


def _measure(topo, pairs, size=2, run=False) -> dict:
    """Build (and optionally run) once untraced for time, once traced for memory."""
    scn = Scenario("mem", topo, _flows(pairs, size), ModelConfig(cc_mode=CC_DCQCN))
    gc.collect()
    t0 = time.perf_counter()
    sim = Run(scn)
    build_s = time.perf_counter() - t0
    del sim
    gc.collect()
    tracemalloc.start()
    try:
        sim = Run(scn)
        built, _ = tracemalloc.get_traced_memory()
        peak = None
        if run:
            tracemalloc.reset_peak()
            sim.run()
            _, peak = tracemalloc.get_traced_memory()
            assert sim.complete
    finally:
        tracemalloc.stop()
    return {"nodes": topo.n_nodes, "flows": len(pairs), "build_s": build_s, "built_bytes": built,
            "run_peak_bytes": peak}


def per_node(sizes, ks) -> list[dict]:
    out = []
    for n in sizes:
        m = _measure(star(n), [(0, n - 1)])
        m.update(kind="star", per_node_bytes=m["built_bytes"] / m["nodes"], per_node_us=m["build_s"] / m["nodes"] * 1e6)
        out.append(m)
    for k in ks:
        topo = fat_tree(k)
        hosts = topo.hosts
        m = _measure(topo, [(hosts[0], hosts[-1])])
        m.update(kind=f"fat-tree k={k}", per_node_bytes=m["built_bytes"] / m["nodes"],
                 per_node_us=m["build_s"] / m["nodes"] * 1e6)
        out.append(m)
    return out


def per_flow(hosts, counts, run) -> list[dict]:
    topo = star(hosts)
    rng = random.Random(1)
    pairs = [tuple(rng.sample(range(hosts), 2)) for _ in range(max(counts))]
    base = _measure(topo, pairs[:1], 1000, run)
    out = []
    for f in counts:
        m = _measure(topo, pairs[:f], 1000, run)
        m.update(kind=f"star {hosts} hosts", distinct_dsts=len({d for _, d in pairs[:f]}),
                 per_flow_bytes=(m["built_bytes"] - base["built_bytes"]) / (f - 1),
                 per_flow_us=(m["build_s"] - base["build_s"]) / (f - 1) * 1e6)
        if run:
            m["run_per_flow_bytes"] = (m["run_peak_bytes"] - base["run_peak_bytes"]) / (f - 1)
        out.append(m)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, nargs="*", default=[500, 1000, 2000, 4000])
    ap.add_argument("--fat-k", type=int, nargs="*", default=[4, 8, 16])
    ap.add_argument("--flow-hosts", type=int, default=1000)
    ap.add_argument("--flows", type=int, nargs="*", default=[1000, 2000, 4000, 8000])
    ap.add_argument("--run", action="store_true", help="also measure the peak during a run (1 packet per flow)")
    ap.add_argument("--json", action="store_true", help="one JSON object per measurement")
    a = ap.parse_args()
    nodes = per_node(a.nodes, a.fat_k)
    flows = per_flow(a.flow_hosts, a.flows, a.run) if a.flows else []
    if a.json:
        for m in nodes + flows:
            print(json.dumps(m))
        return 0
    print("per node (one 2-byte flow)")
    print(f"{'topology':>16} {'nodes':>7} {'build s':>8} {'us/node':>8} {'MB':>8} {'bytes/node':>11}")
    for m in nodes:
        name = m["kind"] if m["kind"] != "star" else f"star {m['nodes'] - 1}"
        print(f"{name:>16} {m['nodes']:7d} {m['build_s']:8.3f} {m['per_node_us']:8.1f} "
              f"{m['built_bytes'] / 1e6:8.1f} {m['per_node_bytes']:11,.0f}")
    if flows:
        print(f"\nper flow ({flows[0]['kind']}, random host pairs, 1000 B each)")
        extra = f" {'run B/flow':>11}" if a.run else ""
        print(f"{'flows':>7} {'dsts':>6} {'build s':>8} {'us/flow':>8} {'MB':>8} {'bytes/flow':>11}{extra}")
        for m in flows:
            tail = f" {m['run_per_flow_bytes']:11,.0f}" if a.run else ""
            print(f"{m['flows']:7d} {m['distinct_dsts']:6d} {m['build_s']:8.3f} {m['per_flow_us']:8.1f} "
                  f"{m['built_bytes'] / 1e6:8.1f} {m['per_flow_bytes']:11,.0f}{tail}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
