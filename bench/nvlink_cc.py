#!/usr/bin/env python3
"""Packet mode with NVLink without end-to-end CC (the default) against ``--nvlink-cc nic``
(the NIC's CC also on NVLink queue pairs, as SimAI's ns-3): the iteration time of the
training rows of ``bench/wormhole.py`` (a benchmark, not a test).

The default run is read from ``<wormhole-out>/<row>/packet/summary.json`` when
``bench/wormhole.py`` left one there, else simulated; the ``nic`` run is always simulated
(under ``<out>/<row>``). One row per scenario goes to ``<out>/results.md`` (and
``results.jsonl``) as each finishes.

    python3 bench/nvlink_cc.py [--only NAME[,NAME]] [--out bench-out/nvlink-cc]
        [--wormhole-out bench-out/wormhole]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from results_log import ResultsLog
from wormhole import NVLINK_ROWS, ROOT, SCENARIOS

from pwormhole.simulate import simulate

HEADER = ("| scenario | iteration, NVLink without CC | iteration, NIC CC on NVLink | difference | "
          "PFC pauses (no CC / nic) | ECN marks (no CC / nic) |\n|---|---|---|---|---|---|")


def packet_summary(name: str, nvlink_cc: str, folder: Path) -> dict:
    """The packet-mode summary of row ``name`` with ``nvlink_cc`` (simulated into ``folder``)."""
    scn = SCENARIOS[name][1]()
    scn.config.nvlink_cc = nvlink_cc
    return simulate(scn, str(folder), quiet=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", help="comma-separated rows of bench/wormhole.py (default: its NVLink rows)")
    ap.add_argument("--out", default=str(ROOT / "bench-out" / "nvlink-cc"))
    ap.add_argument("--wormhole-out", default=str(ROOT / "bench-out" / "wormhole"))
    a = ap.parse_args()
    names = a.only.split(",") if a.only else NVLINK_ROWS
    for n in names:
        if n not in SCENARIOS:
            ap.error(f"unknown scenario {n!r}")
    log = ResultsLog(a.out, HEADER)
    out = log.out
    for n in names:
        t0 = time.time()
        done = Path(a.wormhole_out) / n / "packet" / "summary.json"
        if done.exists():
            none = json.loads(done.read_text())
        else:
            none = packet_summary(n, "none", out / n / "none")
        nic = packet_summary(n, "nic", out / n / "nic")
        a_ns, b_ns = none["iteration_time_ns"], nic["iteration_time_ns"]
        line = (f"| {n} | {a_ns / 1e3:.1f} us | {b_ns / 1e3:.1f} us | {(b_ns - a_ns) / a_ns * 100:+.2f}% | "
                f"{none['pfc_pauses']} / {nic['pfc_pauses']} | {none['ecn_marks']} / {nic['ecn_marks']} |")
        log.add(line, {"name": n, "iteration_ns": a_ns, "nic_iteration_ns": b_ns, "wall_s": time.time() - t0})
    return 0


if __name__ == "__main__":
    sys.exit(main())
