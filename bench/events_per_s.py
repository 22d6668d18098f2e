#!/usr/bin/env python3
"""Packet-mode events per second on a fixed scenario (a benchmark, not a test).

Scenario: HPCC's reference S2 (two 200 MB DCQCN flows into one host through
one switch, 3.2 M events), or with ``--scenario s1`` the HPCC version, or
``--scenario default`` the embedded fat-tree mix. Prints one JSON line with
events, wall seconds and events/s (median of ``--repeat`` runs).

    python bench/events_per_s.py [--scenario s2|s1|s3|default] [--repeat 3]
"""

import argparse
import json
import statistics
import sys
from pathlib import Path

from pwormhole.run import Run
from pwormhole.scenario import fat_tree_mix_scenario, from_hpcc_config

ROOT = Path(__file__).resolve().parents[1]

REF = ROOT / "tests" / "data" / "hpcc" / "reference"
NAMES = {"s1": "s1_hpcc", "s2": "s2_dcqcn", "s3": "s3_dcqcn"}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scenario", default="s2", choices=["s1", "s2", "s3", "default"])
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    rates, walls = [], []
    for _ in range(a.repeat):
        scn = (fat_tree_mix_scenario() if a.scenario == "default"
               else from_hpcc_config(str(REF / NAMES[a.scenario] / "config.txt")))
        r = Run(scn).run()
        walls.append(r.wall_s)
        rates.append(r.events / r.wall_s)
    print(json.dumps({"scenario": a.scenario, "events": r.events, "wall_s_median": statistics.median(walls),
                      "events_per_s_median": statistics.median(rates), "runs": a.repeat}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
