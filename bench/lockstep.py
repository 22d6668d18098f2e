#!/usr/bin/env python3
"""Wormhole against packet mode on a `bench/paper.py` row whose identical rails are put out of
lockstep: some GPUs' first compute op takes a few ns longer (a benchmark, not a test).

The packet run of the perturbed row is made once into ``--ref`` (default
``bench-out/lockstep-ROW-LN-CC-GPUS-DELAY``) and reused; the Wormhole run is compared with it
(events ratio, per-flow FCT error mean / p99 / max, iteration error), and the packet run with
the unperturbed reference given by ``--base`` (how much the delay moves packet mode itself).

    python3 bench/lockstep.py --row gpt7b-64-notp --layers 2 --gpus 8 --delay-ns 31 \\
        --base bench-out/ref-gpt7b-64-notp-L2-hpcc [--no-memo] [--follow]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from paper import CONFIGS, factory
from wormhole import ROOT

from pwormhole.accel.config import AccelConfig
from pwormhole.report.compare import compare_dirs
from pwormhole.simulate import simulate
from pwormhole.workload.dag import OP_COMPUTE


def perturbed(row: str, layers: int, cc: str, gpus: list[int], delay_ps: int):
    """The row's scenario with ``delay_ps`` more on the first compute op of each GPU in ``gpus``."""
    scn = factory(row, layers, cc)()
    dag = scn.dag
    host_of = {g: h for h, g in dag.gpu_of_host.items()}
    for gpu in gpus:
        op = next(i for i, (k, h) in enumerate(zip(dag.kind, dag.host)) if k == OP_COMPUTE and h == host_of[gpu])
        dag.arg[op] += delay_ps
    return scn


def against(ref: Path, out: Path) -> dict:
    return compare_dirs(str(ref), str(out))[0]


def line(r: dict) -> str:
    errs = " / ".join(f"{r[k] * 100:.3f}%" for k in ("mean_fct_error", "p99_fct_error", "max_fct_error"))
    return f"{r['speedup_events']:.2f}x, {errs}, iteration {r['iteration_time_error'] * 100:+.3f}%"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--row", default="gpt7b-64-notp", choices=sorted(CONFIGS))
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--cc", default="hpcc", choices=["dcqcn", "hpcc"])
    ap.add_argument("--gpus", default="8", help="comma-separated GPU ranks whose first compute op is delayed")
    ap.add_argument("--delay-ns", type=float, default=31.0)
    ap.add_argument("--ref", help="packet run of the perturbed row (made once when missing)")
    ap.add_argument("--base", help="packet run of the row itself (to show how much the delay moves it)")
    ap.add_argument("--out", default=str(ROOT / "bench-out" / "lockstep-wormhole"))
    ap.add_argument("--no-memo", action="store_true")
    ap.add_argument("--follow", action="store_true")
    a = ap.parse_args()
    gpus = [int(x) for x in a.gpus.split(",")]
    delay_ps = round(a.delay_ns * 1000)
    name = f"lockstep-{a.row}-L{a.layers}-{a.cc}-{a.gpus.replace(',', '_')}-{delay_ps}"
    ref = Path(a.ref or ROOT / "bench-out" / name)
    if not (ref / "summary.json").exists():
        simulate(perturbed(a.row, a.layers, a.cc, gpus, delay_ps), str(ref), quiet=True)
    if a.base:
        print(f"packet, perturbed against the row: {line(against(Path(a.base), ref))}")
    simulate(perturbed(a.row, a.layers, a.cc, gpus, delay_ps), a.out, quiet=True,
             accel=AccelConfig(memo=not a.no_memo, follow=a.follow))
    r = against(ref, Path(a.out))
    print(f"Wormhole against the perturbed packet run: {line(r)}; memo {r['memo_hits']}/{r['memo_misses']}, "
          f"follows {r['memo_follows']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
