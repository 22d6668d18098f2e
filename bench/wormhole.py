#!/usr/bin/env python3
"""Wormhole acceleration against packet mode (a benchmark, not a test).

Runs :func:`pwormhole.commands.compare.compare` (packet mode, then Wormhole
mode, in the same process) on:

* one GPT-7B iteration, 1 layer, TP 8 (one server: TP all-reduces on
  NVLink), sequence 256 (small activations), so the data-parallel gradient
  all-reduces, whose rings run along the rails through the NICs, carry 80-85%
  of the bytes; on rail-optimized fabrics of 16, 32 and 64 GPUs, under DCQCN
  and under HPCC;
* the same GPT-7B with 2 layers and Megatron's distributed optimizer
  (``dist_opt``: one reduce-scatter of the gradients and one all-gather of the
  parameters over DP per iteration, as SimAI's ``workload_gpt7b_64g.txt`` has
  it), so the DP ring steps are 8x longer flows, on 16, 32 and 64 GPUs, DCQCN
  (and on 32 and 64 GPUs under HPCC);
* one GPT-175B layer with the distributed optimizer on 16 GPUs (226 MB DP
  flows; NVLink carries 9% of the bytes instead of 14-23%);
* ``*-s2048`` (``--nvlink`` runs these and the MoE rows): GPT-7B, 2 layers at sequence
  2048 (2 MB TP ring steps: NVLink carries most bytes), TP8 and PP 2 from 32 GPUs
  (TP8-DP4-PP2 on 64), per-layer DP all-reduces or the distributed optimizer, on 16, 32
  and 64 GPUs, under DCQCN and HPCC; ``*-nvpkt``: the 64-GPU distributed-optimizer rows
  with ``--nvlink packet`` (NVLink packet by packet inside Wormhole mode);
* what-ifs, ``whatif-*-notp``: the 64-GPU GPT rows with their TP all-reduces
  removed (compute kept), i.e. Wormhole on the NIC traffic alone: what the
  events ratio would be if NVLink steps cost nothing; and GPT-7B TP8 DP4 PP2
  (4 layers, sequence 2048) under HPCC the same way, whose per-flow FCTs are
  ill-conditioned (bench/RESULTS.md, "Overlapping rings under HPCC");
* one Mixtral 8x7B (``moe-8x7b``) iteration, 1 layer, TP 8 EP 2 on 16 GPUs,
  so the expert all-to-alls cross the NICs, under DCQCN and under HPCC;
* HPCC's S3 real input (100-flow DCQCN incast, ``tests/data/hpcc/reference/s3_dcqcn``);

NVLink runs no end-to-end CC (the default ``nvlink_cc``) in both modes; Wormhole mode gives
NVLink flows rates (``--nvlink auto``, :mod:`pwormhole.accel.fluid`).

For each it prints a markdown row: flows, mean and p99 per-flow FCT error,
iteration time error, wall speedup (same process), events ratio, skipped
flow-time fraction, memo hits/misses, and the share of bytes over NVLink with
``1 / share`` (:func:`nvlink_byte_share`). Rows are appended to
``<out>/results.md`` as each comparison finishes, and every comparison keeps
its folder (``packet/``, ``wormhole/``, ``compare.json``) under ``<out>``.

    python3 bench/wormhole.py [--quick] [--only NAME[,NAME]] [--out bench-out/wormhole]

``--quick`` runs the 16-GPU GPT (DCQCN) and S3 only. The accelerator code
changes often: each row records the AccelConfig it ran with (results.jsonl).
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from pathlib import Path

from results_log import ResultsLog

from pwormhole.accel.wormhole import AccelConfig
from pwormhole.commands.compare import compare
from pwormhole.config import ModelConfig
from pwormhole.scenario import from_hpcc_config, topology_from_arg, training_scenario
from pwormhole.workload.models import build_model
from pwormhole.workload.simai import Phase

ROOT = Path(__file__).resolve().parents[1]

S3 = ROOT / "tests" / "data" / "hpcc" / "reference" / "s3_dcqcn" / "config.txt"
CC = {"dcqcn": 1, "hpcc": 3}


def without_tp_collectives(spec):
    """``spec`` with its forward and input-gradient TP collectives (the all-reduces over
    NVLink) removed and their compute kept: a what-if that shows Wormhole on the NIC
    traffic alone (not a training workload)."""
    def drop(ph):
        return Phase(ph.compute_ns, "NONE", "none", 0) if ph.group == "tp" else ph

    spec.layers = [dataclasses.replace(ly, forward=drop(ly.forward), input_grad=drop(ly.input_grad))
                   for ly in spec.layers]
    return spec


def gpt(gpus: int, cc: str, layers: int = 1, model: str = "gpt-7b", tp: int = 8, seq_len: int = 256,
        dist_opt: bool = False, no_tp: bool = False, pp: int = 1, nvlink_cc: str = "none", zero: int = 0):
    def make():
        spec = build_model(model, gpus, tp=tp, pp=pp, layers=layers, seq_len=seq_len, dist_opt=dist_opt, zero=zero)
        if no_tp:
            spec = without_tp_collectives(spec)
        topo = topology_from_arg(f"rail-optimized:gpus={gpus}")
        return training_scenario(spec, topo, ModelConfig(cc_mode=CC[cc], nvlink_cc=nvlink_cc))
    return make


def moe(gpus: int = 16, ep: int = 2, tp: int = 8, layers: int = 1, cc: str = "dcqcn", seq_len: int = 256,
        pp: int = 1, no_tp: bool = False):
    def make():
        spec = build_model("moe-8x7b", gpus, tp=tp, pp=pp, ep=ep, layers=layers, seq_len=seq_len)
        if no_tp:
            spec = without_tp_collectives(spec)
        topo = topology_from_arg(f"rail-optimized:gpus={gpus}")
        return training_scenario(spec, topo, ModelConfig(cc_mode=CC[cc]))
    return make


def s3():
    return from_hpcc_config(str(S3))


# name -> (description, factory)
SCENARIOS = {
    "gpt7b-16-dcqcn": ("GPT-7B 1 layer, TP8, seq 256, 16 GPUs, DCQCN", gpt(16, "dcqcn")),
    "gpt7b-32-dcqcn": ("GPT-7B 1 layer, TP8, seq 256, 32 GPUs, DCQCN", gpt(32, "dcqcn")),
    "gpt7b-64-dcqcn": ("GPT-7B 1 layer, TP8, seq 256, 64 GPUs, DCQCN", gpt(64, "dcqcn")),
    "gpt7b-16-hpcc": ("GPT-7B 1 layer, TP8, seq 256, 16 GPUs, HPCC", gpt(16, "hpcc")),
    "gpt7b-32-hpcc": ("GPT-7B 1 layer, TP8, seq 256, 32 GPUs, HPCC", gpt(32, "hpcc")),
    "gpt7b-64-hpcc": ("GPT-7B 1 layer, TP8, seq 256, 64 GPUs, HPCC", gpt(64, "hpcc")),
    "gpt7b-dopt-16-dcqcn": ("GPT-7B 2 layers, distributed optimizer (one DP reduce-scatter + all-gather), TP8, "
                            "seq 256, 16 GPUs, DCQCN", gpt(16, "dcqcn", layers=2, dist_opt=True)),
    "gpt7b-dopt-32-dcqcn": ("same, 32 GPUs", gpt(32, "dcqcn", layers=2, dist_opt=True)),
    "gpt7b-dopt-64-dcqcn": ("same, 64 GPUs", gpt(64, "dcqcn", layers=2, dist_opt=True)),
    "gpt175b-dopt-16-dcqcn": ("GPT-175B 1 layer, distributed optimizer, TP8, seq 256, 16 GPUs, DCQCN (NVLink "
                              "share 9%)", gpt(16, "dcqcn", model="gpt-175b", dist_opt=True)),
    "whatif-gpt7b-64-dcqcn-notp": ("what-if: gpt7b-64-dcqcn without its TP all-reduces (NIC traffic only)",
                                   gpt(64, "dcqcn", no_tp=True)),
    "whatif-gpt7b-dopt-64-dcqcn-notp": ("what-if: gpt7b-dopt-64-dcqcn without its TP all-reduces (NIC traffic only)",
                                        gpt(64, "dcqcn", layers=2, dist_opt=True, no_tp=True)),
    "whatif-gpt7b-pp2-64-hpcc-s2048-notp": ("what-if: GPT-7B TP8 DP4 PP2, 4 layers, seq 2048, 64 GPUs, HPCC, without "
                                            "its TP all-reduces (up to five DP all-reduces share each ring's NICs)",
                                            gpt(64, "hpcc", layers=4, seq_len=2048, no_tp=True, pp=2)),
    "gpt7b-dopt-32-hpcc": ("gpt7b-dopt-32-dcqcn under HPCC", gpt(32, "hpcc", layers=2, dist_opt=True)),
    "gpt7b-dopt-64-hpcc": ("gpt7b-dopt-64-dcqcn under HPCC", gpt(64, "hpcc", layers=2, dist_opt=True)),
    "moe-16-ep2": ("Mixtral 8x7B 1 layer, TP8 EP2 (all-to-all across servers), seq 256, 16 GPUs, DCQCN", moe(16, 2)),
    "moe-16-ep2-hpcc": ("moe-16-ep2 under HPCC", moe(16, 2, cc="hpcc")),
    "s3-incast": ("HPCC S3: 100-flow DCQCN incast (real input)", s3),
}
# GPT-7B at sequence 2048 (2 MB TP ring steps), 2 layers, PP 2 from 32 GPUs (TP8-DP4-PP2 on 64), per-layer
# DP all-reduces or the distributed optimizer, under both CCs: the NVLink rows of the NVLink issue
for _g in (16, 32, 64):
    for _cc in ("dcqcn", "hpcc"):
        _pp = 2 if _g >= 32 else 1
        SCENARIOS[f"gpt7b-{_g}-{_cc}-s2048"] = (
            f"GPT-7B 2 layers, TP8 PP{_pp}, seq 2048, per-layer DP all-reduces, {_g} GPUs, {_cc.upper()}",
            gpt(_g, _cc, layers=2, seq_len=2048, pp=_pp))
        SCENARIOS[f"gpt7b-dopt-{_g}-{_cc}-s2048"] = (
            f"GPT-7B 2 layers, TP8 PP{_pp}, seq 2048, distributed optimizer, {_g} GPUs, {_cc.upper()}",
            gpt(_g, _cc, layers=2, seq_len=2048, pp=_pp, dist_opt=True))
# Wormhole with NVLink packet by packet (--nvlink packet): what the rates save
for _n in ("gpt7b-dopt-64-dcqcn-s2048", "gpt7b-dopt-64-hpcc-s2048"):
    SCENARIOS[_n + "-nvpkt"] = (SCENARIOS[_n][0] + "; --nvlink packet", SCENARIOS[_n][1])
ACCEL_OVERRIDES = {_n + "-nvpkt": {"nvlink": "packet"} for _n in ("gpt7b-dopt-64-dcqcn-s2048",
                                                                   "gpt7b-dopt-64-hpcc-s2048")}
NVLINK_ROWS = [n for n in SCENARIOS if n.endswith("-s2048") and n.startswith("gpt7b-")] + ["moe-16-ep2",
                                                                                             "moe-16-ep2-hpcc"]
QUICK = ["gpt7b-16-dcqcn", "s3-incast"]

HEADER = ("| scenario | flows | FCT err mean | FCT err p99 | iter err | speedup wall | events ratio | "
          "skipped flow-time | memo hit/miss | wall pkt / wh | NVLink bytes (1 / share) |\n"
          "|---|---|---|---|---|---|---|---|---|---|---|")


def pct(v) -> str:
    return "-" if v is None else f"{v * 100:.2f}%"


def row(name: str, r: dict) -> str:
    return (f"| {name} | {r['flows_compared']}/{r['flows']} | {pct(r['mean_fct_error'])} | {pct(r['p99_fct_error'])} | "
            f"{pct(r['iteration_time_error'])} | {r['speedup_wall']:.2f}x | {r['speedup_events']:.2f}x | "
            f"{r['skipped_time_fraction'] * 100:.1f}% | {r['memo_hits']}/{r['memo_misses']} | "
            f"{r['packet_wall_s']:.1f} s / {r['wormhole_wall_s']:.1f} s | "
            f"{cap(r.get('nvlink_byte_share', 0), r.get('nvlink_model') == 'rates')} |")


def cap(share: float, fluid: bool = False) -> str:
    if not share:
        return "-"
    return f"{share * 100:.0f}% (by rates)" if fluid else f"{share * 100:.0f}% ({1 / share:.1f}x)"


def nvlink_byte_share(scn) -> float:
    """Fraction of the scenario's flow bytes that travel over an NVSwitch. Fast-forwarding
    never skips them (a TP ring step lasts less than the minimum skip), and packet events
    per byte are about equal on both kinds of path, so 1 / share bounded the events ratio
    until memo hits replayed part of those steps (a hit needs only the pipeline, 4 packets
    and one RTT of data left after the jump, no longer two convergence times); it still
    tells how much of the work is NVLink."""
    from pwormhole.run import Run
    nvs = set(getattr(scn.topology, "nvswitches", ()) or ())
    if not nvs:
        return 0.0
    nodes = Run(scn).net.nodes
    total = sum(f.size_bytes for f in scn.flows)
    nv = sum(f.size_bytes for f in scn.flows if nodes[f.src].routes[f.dst][0].peer.node_id in nvs)
    return nv / total if total else 0.0


def run_one(name: str, factory, out: Path, cfg: AccelConfig) -> dict:
    t = time.time()
    scn = factory()
    share = nvlink_byte_share(scn)
    r = compare(factory, str(out / name), cfg, quiet=True)
    r["nvlink_byte_share"] = share
    r["bench_wall_s"] = time.time() - t
    r["accel"] = dataclasses.asdict(cfg.resolved(scn.config.cc_mode == 3))  # the values in effect, not the 0s
    return r


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="16-GPU GPT (DCQCN) and S3 only")
    ap.add_argument("--nvlink", action="store_true", help="the NVLink rows (sequence 2048, both CCs; MoE)")
    ap.add_argument("--only", help="comma-separated scenario names: " + ", ".join(SCENARIOS))
    ap.add_argument("--out", default=str(ROOT / "bench-out" / "wormhole"))
    a = ap.parse_args()
    names = a.only.split(",") if a.only else (QUICK if a.quick else NVLINK_ROWS if a.nvlink else list(SCENARIOS))
    for n in names:
        if n not in SCENARIOS:
            ap.error(f"unknown scenario {n!r}")
    cfg = AccelConfig()
    print(f"AccelConfig: {cfg}")
    log = ResultsLog(a.out, HEADER)
    for n in names:
        r = run_one(n, SCENARIOS[n][1], log.out, dataclasses.replace(cfg, **ACCEL_OVERRIDES.get(n, {})))
        log.add(row(n, r), {"name": n, **r})
    return 0


if __name__ == "__main__":
    sys.exit(main())
