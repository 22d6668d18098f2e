#!/usr/bin/env python3
"""Packet-mode events per second on a fixed scenario (a benchmark, not a test).

Scenario: HPCC's reference S2 (two 200 MB DCQCN flows into one host through
one switch, 3.2 M events), or with ``--scenario s1`` the HPCC version, ``s3`` the
100-flow DCQCN incast, ``perm1024`` a random permutation of 1024 x 2 MB DCQCN flows
on htsim's 1024-host fat tree (``fat_tree_1024.topo``) for its first 200 us, or
``default`` the embedded fat-tree mix. ``--mode wormhole`` runs Wormhole instead of
packet mode. Prints one JSON line with events, the engine (compiled or pure), and
the medians over ``--repeat`` runs of the wall and CPU seconds of the simulation
(set-up excluded), events per wall second and per CPU second, and the process's
peak memory.

    python bench/events_per_s.py [--scenario s2|s1|s3|perm1024|default] [--mode packet|wormhole] [--repeat 3]
"""

import argparse
import gc
import json
import random
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

from pwormhole import compiled
from pwormhole.accel.config import AccelConfig
from pwormhole.run import Run
from pwormhole.scenario import fat_tree_mix_scenario, from_files, from_hpcc_config

ROOT = Path(__file__).resolve().parents[1]

REF = ROOT / "tests" / "data" / "hpcc" / "reference"
NAMES = {"s1": "s1_hpcc", "s2": "s2_dcqcn", "s3": "s3_dcqcn"}
FAT_TREE_1024 = ROOT.parent / "shared" / "real_inputs" / "htsim" / "topologies" / "fat_tree_1024.topo"
PERM_UNTIL_PS = 200_000_000  # 200 us


def perm1024(folder: Path):
    """A random permutation (seed 1, no host to itself) of 1024 x 2 MB flows at t = 0 on the 1024-host fat tree."""
    rng = random.Random(1)
    dst = list(range(1024))
    while any(d == h for h, d in enumerate(dst)):
        rng.shuffle(dst)
    flows = folder / "perm1024.txt"
    flows.write_text("1024\n" + "".join(f"{h} {d} 3 100 2000000 0\n" for h, d in enumerate(dst)))
    return from_files(str(FAT_TREE_1024), str(flows), cc="dcqcn")


def scenario(name: str, folder: Path):
    if name == "default":
        return fat_tree_mix_scenario()
    if name == "perm1024":
        return perm1024(folder)
    return from_hpcc_config(str(REF / NAMES[name] / "config.txt"))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scenario", default="s2", choices=["s1", "s2", "s3", "perm1024", "default"])
    ap.add_argument("--mode", default="packet", choices=["packet", "wormhole"])
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    walls, cpus = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(a.repeat):
            r = run = None
            gc.collect()  # the previous run's network (cycles: the run pauses the collector) goes first
            scn = scenario(a.scenario, Path(tmp))
            run = Run(scn, accel=AccelConfig() if a.mode == "wormhole" else None)
            w0, c0 = time.perf_counter(), time.process_time()
            r = run.run(PERM_UNTIL_PS if a.scenario == "perm1024" else None)
            walls.append(time.perf_counter() - w0)
            cpus.append(time.process_time() - c0)
    wall, cpu = statistics.median(walls), statistics.median(cpus)
    print(json.dumps({"scenario": a.scenario, "mode": a.mode, "engine": compiled.engine(), "events": r.events,
                      "wall_s_median": round(wall, 3), "cpu_s_median": round(cpu, 3),
                      "events_per_s": round(r.events / wall), "events_per_cpu_s": round(r.events / cpu),
                      "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024, "runs": a.repeat}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
