#!/usr/bin/env python3
"""Parallel speedup of packet mode over MPI ranks (a benchmark, not a test).

Scenario: a k=8 fat-tree (128 hosts, 80 switches, 100 Gbps, 1 us links)
carrying a random permutation of 2 MB flows plus a 16-to-1 incast, DCQCN.
Runs it under ``mpiexec -n R`` for each R in ``--ranks`` (R = 1 without
mpiexec), checks every fct.txt is byte-identical, and prints a table with
wall time, time in synchronization, events and parallel speedup.

    python bench/scaling.py [--ranks 1,2] [--out bench-out/scaling]
"""

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
from pathlib import Path

from pwormhole.topology.builders import fat_tree

ROOT = Path(__file__).resolve().parents[1]


def write_inputs(folder: Path) -> Path:
    topo = fat_tree(8)
    folder.mkdir(parents=True, exist_ok=True)
    lines = [f"{topo.n_nodes} {len(topo.switches)} {len(topo.links)}", " ".join(map(str, sorted(topo.switches)))]
    lines += [f"{ln.a} {ln.b} 100Gbps 1000ns 0" for ln in topo.links]
    (folder / "topology.txt").write_text("\n".join(lines) + "\n")
    hosts = topo.hosts
    rng = random.Random(5)
    perm = hosts[:]
    rng.shuffle(perm)
    flows = [(s, d, 2_000_000) for s, d in zip(hosts, perm) if s != d]
    flows += [(s, hosts[0], 500_000) for s in hosts[1:17]]
    body = [f"{s} {d} 3 100 {size} 2.0" for s, d, size in flows]
    (folder / "flow.txt").write_text(f"{len(body)}\n" + "\n".join(body) + "\n")
    cfg = (ROOT / "tests" / "data" / "hpcc" / "reference" / "s2_dcqcn" / "config.txt").read_text()
    (folder / "config.txt").write_text(cfg)
    (folder / "trace.txt").write_text("0\n")
    return folder / "config.txt"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ranks", default="1,2")
    ap.add_argument("--out", default="bench-out/scaling")
    a = ap.parse_args()
    out = Path(a.out)
    cfg = write_inputs(out / "inputs")
    mpiexec = shutil.which("mpiexec", path=str(Path(sys.executable).parent)) or shutil.which("mpiexec")
    rows = []
    ref = None
    for r in [int(x) for x in a.ranks.split(",")]:
        dest = out / f"ranks{r}"
        cmd = [sys.executable, "-m", "pwormhole", "run", "--hpcc-config", str(cfg), "--out", str(dest), "--no-progress"]
        if r > 1:
            cmd = [mpiexec, "-n", str(r)] + cmd
        subprocess.run(cmd, check=True, cwd=ROOT, stdout=subprocess.DEVNULL, env=dict(os.environ))
        s = json.loads((dest / "summary.json").read_text())
        fct = (dest / "fct.txt").read_bytes()
        ref = ref or fct
        rows.append({"ranks": r, "wall_s": s["wall_s"], "sync_wall_s": s.get("sync_wall_s", 0.0),
                     "events": s["events"], "events_by_rank": s["events_by_rank"], "identical": fct == ref})
    base = rows[0]["wall_s"]
    print(f"{'ranks':>5} {'wall_s':>8} {'sync_s':>8} {'speedup':>8} {'events':>10} identical")
    for row in rows:
        row["speedup"] = base / row["wall_s"]
        print(f"{row['ranks']:5d} {row['wall_s']:8.2f} {row['sync_wall_s']:8.2f} {row['speedup']:8.2f} "
              f"{row['events']:10d} {row['identical']}")
    (out / "scaling.json").write_text(json.dumps(rows, indent=1) + "\n")
    return 0 if all(r["identical"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
