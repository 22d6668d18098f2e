#!/usr/bin/env python3
"""pwormhole's packet mode against HPCC's ns-3, judged by ns-3's own spread (a benchmark).

For each scenario both simulators run K times under perturbations that should not matter, and
pwormhole's first run is compared per flow with ns-3's first run, beside ns-3's own spread (the
largest deviation of ns-3's runs 2..K from its run 1) and pwormhole's own spread:

* ``s3_dcqcn``: HPCC's 100-flow DCQCN incast (``tests/data/hpcc/reference/s3_dcqcn``); run i is
  ns-3 under ``NS_GLOBAL_VALUE=RngRun=i`` (its ECN marking draws) and pwormhole under
  ``--seed i``, i = 1..K;
* ``s3_hpcc``: the same topology and flows under HPCC (``CC_MODE 3``, the rest of the config as
  ``s1_hpcc``'s); HPCC draws no random number that matters (ns-3 marks ECN but HPCC ignores the
  marks; ``RngRun`` changes no byte), so run 1 is the plain scenario and runs 2..K are perturbed
  as ``pwormhole compare --spread`` perturbs: every flow start moved by a uniform draw in
  +-2.5 ns (seeded by the run; written with 0.1 ns digits, ns-3 floors them to whole ns) and
  ``RATE_AI`` +0.5% (odd runs) or -0.5% (even runs), the same folders for both simulators;
* ``s1_hpcc``: two 200 MB HPCC flows into one host, perturbed as ``s3_hpcc``.

Metrics of a run B against a run A (flows matched on sip dip sport dport): per-flow
``|fct_B - fct_A| / fct_A`` mean, p99 (linear interpolation) and max; the signed shift of the
FCT distribution's median and p99; per size class the signed shift of the class's mean FCT and
of its last completion; the signed shift of the last completion (as a fraction of the
reference's span from the first start). A second table gives each metric's median and largest
value over every pair of runs of ns-3, of pwormhole, and of one of each (K(K-1)/2, K(K-1)/2 and
K^2 pairs): where pwormhole against ns-3 is as far as ns-3 against itself, the two cannot be told
apart on the scenario. A pooled table gives each class's mean FCT over all K
runs of each simulator with the range of the runs.

    python bench/ns3_spread.py --ns3 PATH/TO/third [--k 5] [--only s1_hpcc,s3_dcqcn,s3_hpcc]
                               [--out bench-out/ns3_spread] [--ns3-time]

``third`` is HPCC's ns-3 program, built as ``shared/tools/hpcc_ns3/README.md`` says. Runs are
sequential; each run's folder (config, flows, ``fct.txt``) stays under ``--out``; the tables
are printed and written to ``<out>/summary.md``.
"""

from __future__ import annotations

import argparse
import itertools
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
REF = ROOT / "tests" / "data" / "hpcc" / "reference"
FILES = ("config.txt", "flow.txt", "topology.txt", "trace.txt")


def scenario_folder(name: str, dst: Path) -> None:
    """Write scenario ``name``'s inputs into ``dst``."""
    src = REF / ("s3_dcqcn" if name == "s3_hpcc" else name)
    dst.mkdir(parents=True, exist_ok=True)
    for f in FILES:
        shutil.copy(src / f, dst / f)
    if name == "s3_hpcc":
        cfg = (dst / "config.txt").read_text()
        (dst / "config.txt").write_text(re.sub(r"^CC_MODE \d+", "CC_MODE 3", cfg, flags=re.M))


def perturb(folder: Path, i: int) -> None:
    """Move each flow start by U(-2.5, 2.5) ns (seed i) and RATE_AI by +-0.5% (odd / even i)."""
    rng = random.Random(i)
    lines = (folder / "flow.txt").read_text().split("\n")
    n = int(lines[0])
    rows = []
    for line in lines[1:1 + n]:
        p = line.split()
        rows.append((round(float(p[5]) * 1e9, 1) + round(rng.uniform(-2.5, 2.5), 1), p))
    rows.sort(key=lambda r: r[0])  # ns-3 reads the flows in start order
    (folder / "flow.txt").write_text("\n".join([str(n)] + [" ".join(p[:5] + [f"{t / 1e9:.10f}"]) for t, p in rows])
                                     + "\n")
    cfg = (folder / "config.txt").read_text()
    m = re.search(r"^RATE_AI (\d+(?:\.\d+)?)Mb/s", cfg, re.M)
    ai = float(m.group(1)) * (1.005 if i % 2 else 0.995)
    (folder / "config.txt").write_text(cfg[:m.start()] + f"RATE_AI {ai:g}Mb/s" + cfg[m.end():])


def load(path: Path) -> dict:
    rows = {}
    for line in path.read_text().splitlines():
        p = line.split()
        if len(p) >= 7:
            rows[(p[0], p[1], p[2], p[3])] = (int(p[4]), int(p[5]), int(p[6]))
    return rows


def pct(xs: list, q: float) -> float:
    xs = sorted(xs)
    k = (len(xs) - 1) * q
    lo = int(k)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)


def metrics(a: dict, b: dict) -> dict:
    keys = sorted(a)
    if set(a) != set(b):
        raise SystemExit(f"the runs finished different flows ({len(a)} and {len(b)})")
    errs = [abs(b[k][2] - a[k][2]) / a[k][2] for k in keys]
    fa, fb = [a[k][2] for k in keys], [b[k][2] for k in keys]
    start = min(a[k][1] for k in keys)
    m = {"mean": sum(errs) / len(errs), "p99": pct(errs, 0.99), "max": max(errs),
         "p50 shift": pct(fb, 0.5) / pct(fa, 0.5) - 1, "p99 shift": pct(fb, 0.99) / pct(fa, 0.99) - 1}
    for s in sorted({a[k][0] for k in keys}):
        ks = [k for k in keys if a[k][0] == s]
        m[f"{s / 1e6:g} MB mean"] = sum(b[k][2] for k in ks) / sum(a[k][2] for k in ks) - 1
        la = max(a[k][1] + a[k][2] for k in ks)
        m[f"{s / 1e6:g} MB last"] = (max(b[k][1] + b[k][2] for k in ks) - la) / (la - start)
    la = max(a[k][1] + a[k][2] for k in keys)
    m["last completion"] = (max(b[k][1] + b[k][2] for k in keys) - la) / (la - start)
    return m


def spread(runs: list) -> dict:
    out: dict = {}
    for r in runs[1:]:
        for k, v in metrics(runs[0], r).items():
            out[k] = max(out.get(k, 0.0), abs(v))
    return out


PAIR_METRICS = ("mean", "p99", "max", "p50 shift", "p99 shift", "last completion")


def table(name: str, ns3: list, pw: list) -> str:
    m, sn, sp = metrics(ns3[0], pw[0]), spread(ns3), spread(pw)
    lines = [f"### {name}", "",
             "| metric | pwormhole run 1 vs ns-3 run 1 | ns-3's own spread | pwormhole's own spread |"
             " within ns-3's spread |", "|---|---|---|---|---|"]
    for k, v in m.items():
        signed = k not in ("mean", "p99", "max")
        lines.append(f"| {k} | {v * 100:+.2f}% | {sn[k] * 100:.2f}% | {sp[k] * 100:.2f}% | "
                     f"{'yes' if abs(v) <= sn[k] else 'no'} |" if signed else
                     f"| {k} | {v * 100:.2f}% | {sn[k] * 100:.2f}% | {sp[k] * 100:.2f}% | "
                     f"{'yes' if v <= sn[k] else 'no'} |")
    lines += ["", "Every pair of runs (median / largest over the pairs): ns-3 against ns-3, pwormhole against",
              "pwormhole, pwormhole against ns-3:", "",
              "| metric | ns-3 pairs | pwormhole pairs | pwormhole-ns-3 pairs |", "|---|---|---|---|"]
    pairs = (list(itertools.combinations(ns3, 2)), list(itertools.combinations(pw, 2)),
             [(a, b) for a in ns3 for b in pw])
    for k in PAIR_METRICS:
        cells = []
        for group in pairs:
            v = sorted(abs(metrics(a, b)[k]) for a, b in group)
            cells.append(f"{statistics.median(v) * 100:.2f}% / {v[-1] * 100:.2f}%")
        lines.append(f"| {k} | {' | '.join(cells)} |")
    lines += ["", "| class | ns-3 mean FCT over the runs (range), ms | pwormhole (range), ms | pwormhole vs ns-3 |",
              "|---|---|---|---|"]
    for label, fn in pooled(ns3, pw):
        lines.append(f"| {label} | {fn} |")
    return "\n".join(lines) + "\n"


def pooled(ns3: list, pw: list):
    def per_class(runs):
        out: dict = {}
        for r in runs:
            start = min(v[1] for v in r.values())
            for s in sorted({v[0] for v in r.values()}):
                f = [v[2] for v in r.values() if v[0] == s]
                out.setdefault(f"{s / 1e6:g} MB", []).append(sum(f) / len(f) / 1e6)
            out.setdefault("last completion", []).append((max(v[1] + v[2] for v in r.values()) - start) / 1e6)
        return out
    a, b = per_class(ns3), per_class(pw)
    for k in a:
        ma, mb = sum(a[k]) / len(a[k]), sum(b[k]) / len(b[k])
        yield k, (f"{ma:.3f} ({min(a[k]):.3f}-{max(a[k]):.3f}) | {mb:.3f} ({min(b[k]):.3f}-{max(b[k]):.3f}) | "
                  f"{(mb / ma - 1) * 100:+.2f}%")


def run_ns3(third: str, folder: Path, rng_run: int) -> dict:
    env = dict(os.environ, NS_GLOBAL_VALUE=f"RngRun={rng_run}")
    r = subprocess.run([third, "config.txt"], cwd=folder, env=env, capture_output=True, text=True)
    if r.returncode:
        raise SystemExit(f"ns-3 failed in {folder}: {r.stderr[-500:]}")
    return load(folder / "fct.txt")


def run_pw(folder: Path, seed: int, ns3_time: bool) -> dict:
    out = folder / "pwormhole"
    r = subprocess.run([sys.executable, "-m", "pwormhole", "run", "--hpcc-config", str(folder / "config.txt"),
                        "--mode", "packet", "--seed", str(seed), "--out", str(out), "--no-progress"]
                       + ["--ns3-time"] * ns3_time,
                       capture_output=True, text=True, cwd=ROOT)
    if r.returncode:
        raise SystemExit(f"pwormhole failed in {folder}: {r.stderr[-500:]}")
    return load(out / "fct.txt")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ns3", required=True, help="HPCC ns-3's third program")
    ap.add_argument("--k", type=int, default=5, help="runs per simulator and scenario (default 5)")
    ap.add_argument("--only", default="s3_dcqcn,s3_hpcc,s1_hpcc")
    ap.add_argument("--out", type=Path, default=ROOT / "bench-out" / "ns3_spread")
    ap.add_argument("--ns3-time", action="store_true",
                    help="run pwormhole with --ns3-time (ns-3's whole-ns serialization and pacing)")
    a = ap.parse_args()
    third = str(Path(a.ns3).resolve())
    parts = []
    for name in a.only.split(","):
        ns3, pw = [], []
        for i in range(1, a.k + 1):
            d = a.out / name / f"run{i}"
            if d.exists():
                shutil.rmtree(d)
            scenario_folder(name, d)
            if name == "s3_dcqcn":
                ns3.append(run_ns3(third, d, i))
                pw.append(run_pw(d, i, a.ns3_time))
            else:
                if i > 1:
                    perturb(d, i - 1)
                ns3.append(run_ns3(third, d, 1))
                pw.append(run_pw(d, 1, a.ns3_time))
            print(f"{name} run {i} done", file=sys.stderr)
        parts.append(table(name, ns3, pw))
        print(parts[-1])
    (a.out / "summary.md").write_text("\n".join(parts))
    return 0


if __name__ == "__main__":
    sys.exit(main())
