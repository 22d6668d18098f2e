#!/usr/bin/env python3
"""How much does the packet-level answer itself move under sub-microsecond timing noise?
(a benchmark, not a test)

Wormhole's errors are measured against one packet run. Fast-forwarding and memo jumps
happen at window boundaries, so they shift some events by up to a window (1 us: a flow that
starts at a frozen port waits for the next boundary). Where the packet answer is sensitive
to such shifts, its per-flow FCTs are not a stable reference. This script measures that
sensitivity: it reruns the packet model with every compute op's duration changed by a
uniform jitter in ``[-J/2, +J/2]`` (``J`` = ``--jitter-ns``, one window by default; clipped
at 0), with ``RATE_AI`` moved by 0.5% and another seed, for a few seeds, and reports how far the
per-flow FCTs and the iteration time move, next to Wormhole's error on the unjittered scenario:
``pwormhole compare --spread`` (:func:`pwormhole.commands.compare.compare`) does the work.

Scenarios (GPT-7B, 1 layer, TP 8, sequence 2048, DCQCN, 16 GPUs, rail-optimized):

* ``rail-1nvs``: one NVSwitch per server (the bench fabric): a TP ring step has its own
  GPU-to-NVSwitch ports, so its flows never share a port;
* ``rail-2nvs``: two NVSwitches per server (``rail-optimized:gpus=16,nvswitches=2``): NVLink
  flows spread over them by ECMP, and which TP ring flows collide on a port depends on
  when each starts.

and GPT-7B TP 8, DP 4, PP 2, 4 layers, sequence 2048, HPCC, without its TP collectives
(``bench/wormhole.py``'s what-if), where up to five DP all-reduces share each ring's NICs and
HPCC's shares among them depend on their history:

* ``rings-hpcc-64``: on 64 GPUs;
* ``rings-hpcc-2rails``: the same traffic on 2 of the 8 rails (16 GPUs in 2-GPU servers
  carrying TP 8's sizes; the rails are independent copies once the TP collectives are gone).

    python3 bench/conditioning.py [--seeds 3] [--jitter-ns 1000] [--only rail-2nvs] [--out bench-out/conditioning]

With ``--row ROW --layers N`` (a ``bench/paper.py`` row) it measures a milder perturbation, the
size of one Wormhole boundary shift, against that row's saved packet reference (``--ref``, as
``bench/flow_cost.py`` writes it): per seed, one compute op drawn at random takes
``--shift-ns`` (default one window, 1 us) longer, and the packet run's per-flow FCTs and
iteration time are compared with the reference's. Where one such shift moves the per-flow p99
past a few percent, no accelerated run can be held to that p99 on the row.

    python3 bench/conditioning.py --row moe-64 --layers 4 --cc hpcc --ref bench-out/ref-moe-64-L4-hpcc --seeds 2

(rows go to ``bench-out/conditioning-rows`` unless ``--out`` says otherwise)

Rows are appended to ``<out>/results.md`` as each scenario finishes (``results.jsonl`` too).
"""

from __future__ import annotations

import argparse
import dataclasses
import random
import sys
import time
from pathlib import Path

from paper import CONFIGS, factory
from results_log import ResultsLog
from wormhole import CC, without_tp_collectives

from pwormhole.accel.wormhole import AccelConfig
from pwormhole.commands.compare import compare
from pwormhole.config import ModelConfig
from pwormhole.report.compare import compare_dirs
from pwormhole.scenario import topology_from_arg, training_scenario
from pwormhole.simulate import simulate
from pwormhole.workload.dag import OP_COMPUTE
from pwormhole.workload.models import build_model

ROOT = Path(__file__).resolve().parents[1]


def gpt7b_layer(topo_spec: str):
    """The GPT-7B layer (16 GPUs, DCQCN) on ``topo_spec``: a scenario factory."""
    def build():
        spec = build_model("gpt-7b", 16, tp=8, layers=1, seq_len=2048)
        return training_scenario(spec, topology_from_arg(topo_spec), ModelConfig(cc_mode=CC["dcqcn"]))
    return build


def overlapping_rings(rails: int):
    """GPT-7B TP8 DP4 PP2 (4 layers, sequence 2048, HPCC) without TP collectives on ``rails`` of
    the 8 rails of 64 GPUs: a scenario factory."""
    def build():
        spec = without_tp_collectives(build_model("gpt-7b", 64, tp=8, pp=2, layers=4, seq_len=2048))
        spec = dataclasses.replace(spec, tp=rails, all_gpus=8 * rails)  # TP8's sizes, one GPU per rail
        topo = topology_from_arg(f"rail-optimized:gpus={8 * rails},gpus_per_server={rails}")
        return training_scenario(spec, topo, ModelConfig(cc_mode=CC["hpcc"]))
    return build


SCENARIOS = {
    "rail-1nvs": gpt7b_layer("rail-optimized:gpus=16"),
    "rail-2nvs": gpt7b_layer("rail-optimized:gpus=16,nvswitches=2"),
    "rings-hpcc-2rails": overlapping_rings(2),
    "rings-hpcc-64": overlapping_rings(8),
}

HEADER = ("| scenario | jitter | per-flow FCT change mean | p99 | max | iteration change (range over seeds) | "
          "Wormhole: FCT err mean | p99 | iter err |\n|---|---|---|---|---|---|---|---|---|")


def one(name: str, build, seeds: int, jitter_ps: int, out: Path) -> dict:
    """``pwormhole compare --spread SEEDS --spread-jitter JITTER`` on the scenario: the packet run's own
    spread (:mod:`pwormhole.report.spread`) beside Wormhole's errors."""
    t = time.time()
    wh = compare(build, str(out / name), AccelConfig(), quiet=True, spread=seeds, spread_jitter_ps=jitter_ps)
    sp = wh["spread"]["metrics"]
    row = {"scenario": name, "jitter_ps": jitter_ps, "seeds": seeds,
           "fct_change_mean": sp["mean_fct_error"]["spread"], "fct_change_p99": sp["p99_fct_error"]["spread"],
           "fct_change_max": sp["max_fct_error"]["spread"],
           "iteration_change": [c["iteration_time_error"] or 0.0 for c in wh["spread"]["perturbed"]],
           "wormhole_mean_fct_error": wh["mean_fct_error"], "wormhole_p99_fct_error": wh["p99_fct_error"],
           "wormhole_iteration_time_error": wh["iteration_time_error"], "passes": wh["spread"]["passes"],
           "bench_wall_s": time.time() - t}
    return row


ROW_HEADER = ("| row | layers | CC | shift | seed: op shifted | per-flow FCT change mean | p99 | max | "
              "iteration change |\n|---|---|---|---|---|---|---|---|---|")


def shifted(scn, shift_ps: int, seed: int) -> int:
    """Make one compute op of ``scn`` (drawn with ``seed`` among those that take time) ``shift_ps``
    longer; returns its index."""
    dag = scn.dag
    ops = [op for op in range(len(dag)) if dag.kind[op] == OP_COMPUTE and dag.arg[op] > 0]
    op = random.Random(seed).choice(ops)
    dag.arg[op] += shift_ps
    return op


def row_floor(row: str, layers: int, cc: str, ref: Path, seed: int, shift_ps: int, out: Path) -> dict:
    """One shifted packet run of ``bench/paper.py`` row ``row`` against its saved reference ``ref``."""
    scn = factory(row, layers, cc)()
    op = shifted(scn, shift_ps, seed)
    run_dir = out / f"{row}-L{layers}-{cc}-shift{shift_ps}-seed{seed}"
    ws = simulate(scn, str(run_dir), quiet=True)
    c, _ = compare_dirs(str(ref), str(run_dir), ws=ws)
    return {"row": row, "layers": layers, "cc": cc, "shift_ps": shift_ps, "seed": seed, "op": op,
            "fct_change_mean": c["mean_fct_error"], "fct_change_p99": c["p99_fct_error"],
            "fct_change_max": c["max_fct_error"], "iteration_change": c["iteration_time_error"]}


def row_md(r: dict) -> str:
    return (f"| {r['row']} | {r['layers']} | {r['cc']} | +{r['shift_ps'] / 1e6:g} us on one op | {r['seed']}: "
            f"{r['op']} | {r['fct_change_mean'] * 100:.3f}% | {r['fct_change_p99'] * 100:.2f}% | "
            f"{r['fct_change_max'] * 100:.2f}% | {r['iteration_change'] * 100:.3f}% |")


def md(r: dict) -> str:
    def pct(v):
        return "-" if v is None else f"{v * 100:.2f}%"
    lo, hi = min(r["iteration_change"]), max(r["iteration_change"])
    return (f"| {r['scenario']} | +-{r['jitter_ps'] / 2e6:g} us x {r['seeds']} seeds | {pct(r['fct_change_mean'])} | "
            f"{pct(r['fct_change_p99'])} | {pct(r['fct_change_max'])} | {lo * 100:+.2f}% .. {hi * 100:+.2f}% | "
            f"{pct(r['wormhole_mean_fct_error'])} | {pct(r['wormhole_p99_fct_error'])} | "
            f"{pct(r['wormhole_iteration_time_error'])} |")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=3, help="jittered packet runs per scenario")
    ap.add_argument("--jitter-ns", type=int, default=1000, help="width of the uniform jitter (ns)")
    ap.add_argument("--only", help="comma-separated scenario names: " + ", ".join(SCENARIOS))
    ap.add_argument("--out", help="results folder (bench-out/conditioning; with --row: conditioning-rows)")
    ap.add_argument("--row", choices=sorted(CONFIGS), help="a bench/paper.py row, against its saved reference")
    ap.add_argument("--layers", type=int, default=2, help="with --row: its layer count")
    ap.add_argument("--cc", default="hpcc", choices=sorted(CC), help="with --row: congestion control")
    ap.add_argument("--ref", help="with --row: its packet reference folder (bench/flow_cost.py's)")
    ap.add_argument("--shift-ns", type=int, default=1000, help="with --row: how much longer one op takes (ns)")
    a = ap.parse_args()
    if a.row:
        ref = Path(a.ref or ROOT / "bench-out" / f"ref-{a.row}-L{a.layers}-{a.cc}")
        if not (ref / "summary.json").exists():
            ap.error(f"{ref}: no packet reference (run bench/flow_cost.py --row {a.row} --layers {a.layers} first)")
        if a.seeds < 1 or a.shift_ns < 1:
            ap.error("--seeds and --shift-ns must be at least 1")
        log = ResultsLog(a.out or ROOT / "bench-out" / "conditioning-rows", ROW_HEADER)
        for seed in range(1, a.seeds + 1):
            r = row_floor(a.row, a.layers, a.cc, ref, seed, a.shift_ns * 1000, log.out)
            log.add(row_md(r), r)
        return 0
    names = a.only.split(",") if a.only else list(SCENARIOS)
    for n in names:
        if n not in SCENARIOS:
            ap.error(f"unknown scenario {n!r}")
    if a.seeds < 1 or a.jitter_ns < 1:
        ap.error("--seeds and --jitter-ns must be at least 1")
    log = ResultsLog(a.out or ROOT / "bench-out" / "conditioning", HEADER)
    for n in names:
        r = one(n, SCENARIOS[n], a.seeds, a.jitter_ns * 1000, log.out)
        log.add(md(r), r)
    return 0


if __name__ == "__main__":
    sys.exit(main())
