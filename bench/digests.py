#!/usr/bin/env python3
"""Output digests of a fixed set of runs, to check that a refactor changes no answer.

Each case is a ``pwormhole run`` command line (the CLI is the interface a refactor
keeps). For each, the SHA-256 of ``fct.txt``, ``pfc.txt`` and ``collectives.csv``
and of ``summary.json`` without its wall-clock keys are recorded.

    python3 bench/digests.py --record bench-out/digests.json [--only NAME,...]
    python3 bench/digests.py --check bench-out/digests.json   # exit 1 on any difference

Progress and results are printed as each case finishes.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data"
BIN = Path(sys.executable).parent
MPIEXEC = shutil.which("mpiexec", path=str(BIN)) or shutil.which("mpiexec")
# not the answer (the window count: how the run was cut, which the answer does not depend on)
# (run_id binds the folder's files to one run; outputs: the files the options asked for)
WALL_KEYS = {"engine", "inputs", "cpu_s", "wall_s", "events_per_s", "sync_wall_s", "ready_wait_s", "windows", "run_id",
             "outputs"}
FILES = ("fct.txt", "pfc.txt", "collectives.csv")

GPT = ["--model", "gpt-350m", "--gpus", "16", "--tp", "8", "--layers", "1"]
GPT7B = ["--model", "gpt-7b", "--gpus", "16", "--tp", "8", "--layers", "2", "--dist-opt"]
MOE = ["--model", "moe-8x7b", "--gpus", "16", "--tp", "8", "--ep", "2", "--layers", "1"]
S2 = DATA / "hpcc" / "reference" / "s2_dcqcn"
S3 = ["--hpcc-config", str(DATA / "hpcc" / "reference" / "s3_dcqcn" / "config.txt")]
FAT = ["--scenario", "fat-tree-mix"]


def incast_files(d: Path) -> list[str]:
    """An 8-to-1 incast of 2 MB flows on one switch with a 1 MB buffer and no ECN: PFC pauses."""
    hosts = 9
    (d / "topo.txt").write_text(f"{hosts + 1} 1 {hosts}\n{hosts}\n"
                                + "".join(f"{h} {hosts} 100Gbps 0.001ms 0\n" for h in range(hosts)))
    (d / "flow.txt").write_text("8\n" + "".join(f"{s} 0 3 100 2000000 0\n" for s in range(1, 9)))
    (d / "config.txt").write_text("CC_MODE 1\nENABLE_QCN 0\nBUFFER_SIZE 1\n")
    return ["--topology", str(d / "topo.txt"), "--flows", str(d / "flow.txt"), "--config", str(d / "config.txt")]


def link_down_files(d: Path) -> list[str]:
    """A k=4 fat tree, permutation h -> h+4 of 1 MB flows, one core link failing mid-run."""
    (d / "perm.txt").write_text("16\n" + "".join(f"{h} {(h + 4) % 16} 3 100 1000000 2\n" for h in range(16)))
    (d / "down.txt").write_text("CC_MODE 1\nLINK_DOWN 133 29 34\n")
    return ["--topology", "fat-tree:k=4", "--flows", str(d / "perm.txt"), "--config", str(d / "down.txt")]


def cases(tmp: Path) -> dict:
    """name -> (ranks, run arguments)."""
    incast = incast_files(tmp)
    down = link_down_files(tmp)
    out = {}
    for mode in ("packet", "wormhole"):
        out[f"gpt350m-16-dcqcn-{mode}"] = (1, GPT + ["--mode", mode])
        out[f"gpt350m-16-hpcc-{mode}"] = (1, GPT + ["--cc", "hpcc", "--mode", mode])
        out[f"moe-16-ep2-{mode}"] = (1, MOE + ["--mode", mode])
        out[f"s3-incast-{mode}"] = (1, S3 + ["--mode", mode])
        out[f"fat-tree-mix-{mode}"] = (1, FAT + ["--mode", mode])
        out[f"pfc-incast-{mode}"] = (1, incast + ["--mode", mode])
        out[f"link-down-{mode}"] = (1, down + ["--mode", mode])
        out[f"s2-until-{mode}"] = (1, ["--topology", str(S2 / "topology.txt"), "--flows", str(S2 / "flow.txt"),
                                       "--config", str(S2 / "config.txt"), "--until", "2.002", "--mode", mode])
    out["gpt7b-dopt-16-dcqcn-wormhole"] = (1, GPT7B)
    out["gpt7b-dopt-16-dcqcn-fluid"] = (1, GPT7B + ["--fluid-nvlink"])
    out["moe-16-ep2-hpcc-wormhole"] = (1, MOE + ["--cc", "hpcc"])
    out["gpt350m-16-dcqcn-wormhole-3lps"] = (1, GPT + ["--lps", "3"])
    out["gpt350m-16-dcqcn-wormhole-mpi2"] = (2, GPT)
    return out


def digest(folder: Path) -> dict:
    got = {}
    for name in FILES:
        p = folder / name
        got[name] = hashlib.sha256(p.read_bytes()).hexdigest() if p.exists() else None
    summary = json.loads((folder / "summary.json").read_text())
    kept = {k: v for k, v in summary.items() if k not in WALL_KEYS}
    got["summary.json"] = hashlib.sha256(json.dumps(kept, sort_keys=True).encode()).hexdigest()
    return got


def run_case(ranks: int, args: list[str], out: Path) -> tuple[int, str]:
    cmd = [str(BIN / "pwormhole"), "run", *args, "--out", str(out), "--no-progress"]
    if ranks > 1:
        if not MPIEXEC:
            return -1, "no mpiexec"
        cmd = [MPIEXEC, "-n", str(ranks), *cmd]
    r = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
    return r.returncode, r.stderr.strip().splitlines()[-1] if r.stderr.strip() else ""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument("--record", metavar="FILE")
    g.add_argument("--check", metavar="FILE")
    ap.add_argument("--only", help="comma-separated case names")
    a = ap.parse_args()
    want = json.loads(Path(a.check).read_text()) if a.check else {}
    got: dict = {}
    bad = 0
    with tempfile.TemporaryDirectory() as tmpd:
        tmp = Path(tmpd)
        todo = cases(tmp)
        if a.only:
            todo = {k: v for k, v in todo.items() if k in a.only.split(",")}
        for name, (ranks, args) in todo.items():
            t0 = time.monotonic()
            rc, err = run_case(ranks, args, tmp / name)
            if rc not in (0, 3):
                print(f"{name}: exit {rc}: {err}", flush=True)
                bad += 1
                continue
            got[name] = dict(digest(tmp / name), exit=rc)
            same = "" if not a.check else (" same" if want.get(name) == got[name] else " DIFFERENT")
            bad += same == " DIFFERENT"
            print(f"{name}: exit {rc}, {time.monotonic() - t0:.1f} s{same}", flush=True)
            if a.record:
                os.makedirs(Path(a.record).parent, exist_ok=True)
                Path(a.record).write_text(json.dumps(got, indent=1, sort_keys=True) + "\n")
    print(f"{len(got)} cases, {bad} different or failed")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
