#!/usr/bin/env python3
"""Where Wormhole's packet-level cost per NIC flow goes, against a saved packet reference
(a benchmark, not a test).

Runs one ``bench/paper.py`` row or ``bench/wormhole.py`` scenario in Wormhole mode (the packet
reference is run once into ``--ref`` and reused: ``fct.txt``, ``summary.json``,
``collectives.csv``), prints the events ratio, the per-flow FCT error (mean / p99 / max), the
iteration-time error and the CPU seconds of the Wormhole run, and splits the data packets the
NIC flows sent as packets into phases (from wrappers around ``Wormhole``'s decisions; sent
positions are sampled, so a phase is exact to the packets in flight):

* ``before sampling``: sent before the flow's first sample;
* ``settling``: from then until ``SETTLE_RTTS`` path RTTs after its group's newest flow;
* ``rate wait``: from then until the goodput span the first steady decision used began;
* ``span``: the goodput span, to the freeze;
* ``to early freeze``: before a first freeze made early (HPCC's fluid steady state);
* ``memo``: before a memo jump (the lookup) and the refill after it;
* ``between skips``: after a wake, until the next freeze;
* ``after wake``: after the last wake, to the end;
* ``never frozen``: flows that were never frozen.

    python3 bench/flow_cost.py --row gpt7b-64-dopt --layers 2 --cc hpcc [--ref DIR] [--out DIR]
    python3 bench/flow_cost.py --row gpt7b-16-hpcc-s2048 [--no-early] [--verbose]
    python3 bench/flow_cost.py --row gpt13b-128-dopt --layers 4,8,16 --fit 40   # a ladder, fitted
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from bisect import bisect_left, bisect_right
from pathlib import Path

from paper import CONFIGS, factory
from wormhole import ROOT, SCENARIOS

from pwormhole.accel import wormhole as wh_mod
from pwormhole.accel.config import SETTLE_RTTS, AccelConfig
from pwormhole.report.compare import compare_dirs
from pwormhole.simulate import simulate

PHASES = ("before sampling", "settling", "rate wait", "span", "to early freeze", "memo", "between skips", "after wake",
          "never frozen")


class Profile:
    """Per NIC flow: sent bytes at each phase's end, from the Wormhole hook's own calls."""

    def __init__(self) -> None:
        self.first: dict = {}  # fid -> (first sample sent, settle sent, span start sent, freeze sent) or "memo"
        self.pos_after_wake: dict = {}  # fid -> sent position after its latest wake
        self.between: dict = {}  # fid -> bytes sent between a wake and a later freeze
        self.memo_bytes: dict = {}  # fid -> bytes sent before a memo jump / during its refill
        self.size: dict = {}
        self.after_memo: set = set()
        self.woke_by: dict = {}  # fid -> why its group last woke: "join" or "planned"
        self.between_by: dict = {}  # wake reason -> bytes sent between skips after it
        self.wakes: list = []  # (t, flows, interrupted, memo, frozen ps)
        self.early_bytes: dict = {}  # fid -> sent at its first freeze, an early one
        self.spans: dict = {}  # fid -> span start (sent bytes) of its latest steady decision

    def install(self) -> None:
        W = wh_mod.Wormhole
        prof = self
        orig_goodput, orig_freeze, orig_wake, orig_started = wh_mod.goodput, W._freeze, W._wake, W._flow_started

        def _flow_started(self, fid, t):
            orig_started(self, fid, t)
            if fid in self.flows:
                prof.size[fid] = self.flows[fid].size

        def _goodput(fs, since, newest, need, theta, min_span_packets):
            gp = orig_goodput(fs, since, newest, need, theta, min_span_packets)
            if gp is not None:
                q = fs.samples
                n = len(q)
                b1 = q[-1].una_bytes
                settled = max(since, newest + int(SETTLE_RTTS * fs.path_rtt_ps))
                j = min(n - need, bisect_right(q, b1 - min_span_packets * fs.mtu, key=lambda x: x.una_bytes) - 1)
                lo = bisect_left(q, True, key=lambda x: x.t_ps >= settled)
                prof.spans[fs.fid] = (q[0].sent_bytes, q[min(lo, n - 1)].sent_bytes, q[j].sent_bytes)
            return gp

        def _freeze(self, g, t, wake_ps, gps, memo=None, una0=None, inflight0=None):
            orig_freeze(self, g, t, wake_ps, gps, memo, una0, inflight0)
            fz = g.frozen
            for fid in g.flows:
                sent = fz.una0[fid] + fz.inflight0[fid]
                if fid not in prof.first:
                    if memo is not None:
                        prof.first[fid] = "memo"
                        prof.memo_bytes[fid] = prof.memo_bytes.get(fid, 0) + sent
                    elif fid not in prof.spans:  # an early freeze (HPCC's fluid steady state)
                        prof.first[fid] = "early"
                        prof.early_bytes[fid] = sent
                    else:
                        s0, s1, s2 = prof.spans[fid]
                        prof.first[fid] = (s0, max(s0, s1), max(s0, s1, s2), sent)
                else:
                    d = max(0, sent - prof.pos_after_wake.get(fid, sent))
                    key = prof.memo_bytes if fid in prof.after_memo else prof.between
                    key[fid] = key.get(fid, 0) + d
                    if key is prof.between:
                        r = prof.woke_by.get(fid, "?")
                        prof.between_by[r] = prof.between_by.get(r, 0) + d
                prof.after_memo.discard(fid)

        def _wake(self, g, t):
            fz = g.frozen
            adv = orig_wake(self, g, t)
            for fid in g.flows:
                prof.pos_after_wake[fid] = fz.una0[fid] + fz.inflight0[fid] + max(0, adv.get(fid, 0))
                if fz.memo is not None:
                    prof.after_memo.add(fid)
                prof.woke_by[fid] = "join" if t < fz.wake_ps else "planned"
            prof.wakes.append((t, len(g.flows), t < fz.wake_ps, fz.memo is not None, t - fz.t0))
            return adv

        wh_mod.goodput, W._freeze, W._wake, W._flow_started = _goodput, _freeze, _wake, _flow_started
        W._probe_fails = lambda self, g: False  # every check in full: each steady span is seen

    def phases(self, nic_sizes: dict, mtu: int) -> dict:
        """Packets per phase over the NIC flows (``nic_sizes``: flow id -> bytes)."""
        out = dict.fromkeys(PHASES, 0)
        for fid, size in nic_sizes.items():
            f = self.first.get(fid)
            if f is None:
                out["never frozen"] += size
                continue
            out["to early freeze"] += self.early_bytes.get(fid, 0)
            if f not in ("memo", "early"):
                s0, s1, s2, s3 = f
                out["before sampling"] += s0
                out["settling"] += s1 - s0
                out["rate wait"] += s2 - s1
                out["span"] += s3 - s2
            out["memo"] += self.memo_bytes.get(fid, 0)
            out["between skips"] += self.between.get(fid, 0)
            out["after wake"] += max(0, size - self.pos_after_wake.get(fid, size))
        return {k: v / mtu for k, v in out.items()}


def shift(v) -> str:
    """A signed FCT quantile shift in percent (``-``: no flow in both runs)."""
    return "-" if v is None else f"{v * 100:+.2f}%"


def measure(row: str, layers: int, cc: str, ref_arg, out: str, early: bool, prof, follow: bool = False,
            memo: bool = True, successors: bool = True, ring_steps: bool = True) -> dict:
    """Wormhole run of one row (its packet reference run once into the ref folder and reused) against
    that reference: the comparison, the Wormhole run's CPU seconds, the reference's, and the scenario."""
    if row in CONFIGS:
        make = factory(row, layers, cc)
        ref = Path(ref_arg or ROOT / "bench-out" / f"ref-{row}-L{layers}-{cc}")
    else:
        make = SCENARIOS[row][1]
        ref = Path(ref_arg or ROOT / "bench-out" / f"ref-{row}")
    if not (ref / "summary.json").exists():
        simulate(make(), str(ref), quiet=True)
    ps = json.loads((ref / "summary.json").read_text())
    if prof is not None:
        prof.install()
    scn = make()
    c0 = time.process_time()
    accel = AccelConfig(early=early, follow=follow, memo=memo, successors=successors, ring_steps=ring_steps)
    ws = simulate(scn, out, quiet=True, accel=accel)
    cpu = time.process_time() - c0
    r, _ = compare_dirs(str(ref), out, ps, ws)
    r.update(layers=layers, cpu_s=cpu, packet_events=ps["events"], wormhole_events=ws["events"],
             packet_cpu_s=ps.get("cpu_s"), packet_events_est=ws.get("packet_events_est"), scenario=scn)
    return r


def fit_line(xs: list, ys: list) -> tuple:
    """Least-squares ``(a, b)`` of ``y = a + b x`` (``(y, 0)`` from one point)."""
    n = len(xs)
    if n == 1:
        return float(ys[0]), 0.0
    mx, my = sum(xs) / n, sum(ys) / n
    b = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)
    return my - b * mx, b


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--row", default="gpt7b-64-dopt", help="a bench/paper.py row (" + ", ".join(CONFIGS)
                    + ") or a bench/wormhole.py scenario")
    ap.add_argument("--layers", default="2", help="layer count, or several (a ladder: one table row each, "
                    "no phases)")
    ap.add_argument("--fit", type=int, help="with a ladder: fit packet and Wormhole events as a + b x layers "
                    "and print the ratio they give at this layer count (an estimate)")
    ap.add_argument("--cc", default="hpcc")
    ap.add_argument("--ref", help="packet reference folder (run once when missing; one layer count only)")
    ap.add_argument("--out", default=str(ROOT / "bench-out" / "flow_cost"))
    ap.add_argument("--no-early", action="store_true", help="without HPCC's early freeze (AccelConfig.early)")
    ap.add_argument("--follow", action="store_true", help="with followers (AccelConfig.follow)")
    ap.add_argument("--no-successors", action="store_true", help="without ring steps taking their predecessors' "
                    "steady state (AccelConfig.successors)")
    ap.add_argument("--no-memo", action="store_true", help="without memoization (AccelConfig.memo)")
    ap.add_argument("--no-ring-steps", action="store_true", help="without lock-step ring steps carried from "
                    "templates (AccelConfig.ring_steps)")
    ap.add_argument("--verbose", action="store_true")
    a = ap.parse_args()
    ladder = [int(x) for x in a.layers.split(",")]
    if len(ladder) > 1:
        if a.ref:
            ap.error("--ref takes one layer count")
        print("| row | layers | packet events | Wormhole events | ratio | FCT err mean / p99 / max | "
              "FCT p50 / p99 shift | iteration err | CPU s (Wormhole / packet) |\n" + "|---" * 9 + "|")
        rows = []
        for n in ladder:
            r = measure(a.row, n, a.cc, None, f"{a.out}-L{n}", not a.no_early, None, a.follow, not a.no_memo,
                        not a.no_successors, not a.no_ring_steps)
            rows.append(r)
            pcpu = f"{r['packet_cpu_s']:.0f}" if r["packet_cpu_s"] else "-"
            errs = " / ".join(f"{r[k] * 100:.3f}%" for k in ("mean_fct_error", "p99_fct_error", "max_fct_error"))
            print(f"| {a.row} | {n} | {r['packet_events']:,} | {r['wormhole_events']:,} | {r['speedup_events']:.1f}x | "
                  f"{errs} | {shift(r['fct_p50_shift'])} / {shift(r['fct_p99_shift'])} | "
                  f"{r['iteration_time_error'] * 100:+.3f}% | {r['cpu_s']:.1f} / {pcpu} |", flush=True)
        if a.fit:
            xs = [r["layers"] for r in rows]
            pa, pb = fit_line(xs, [r["packet_events"] for r in rows])
            wa, wb = fit_line(xs, [r["wormhole_events"] for r in rows])
            p, w = pa + pb * a.fit, wa + wb * a.fit
            print(f"fit: packet events {pa:,.0f} + {pb:,.0f} x layers; Wormhole events {wa:,.0f} + {wb:,.0f} x layers; "
                  f"at {a.fit} layers (an estimate): packet {p:,.0f}, Wormhole {w:,.0f}, ratio ~{p / w:,.0f}x")
        return 0
    prof = Profile()
    r = measure(a.row, ladder[0], a.cc, a.ref, a.out, not a.no_early, prof, a.follow, not a.no_memo,
                not a.no_successors, not a.no_ring_steps)
    scn = r["scenario"]
    nic = prof.size
    mtu = scn.config.packet_payload_bytes
    print(f"events {r['wormhole_events']:,} (packet {r['packet_events']:,}): {r['speedup_events']:.2f}x; "
          f"FCT err mean {r['mean_fct_error'] * 100:.3f}% p99 {r['p99_fct_error'] * 100:.3f}% "
          f"max {r['max_fct_error'] * 100:.3f}%; FCT p50 / p99 shift {shift(r['fct_p50_shift'])} / "
          f"{shift(r['fct_p99_shift'])}; iteration {r['iteration_time_error'] * 100:.3f}%; "
          f"CPU {r['cpu_s']:.1f} s; memo {r['memo_hits']}/{r['memo_misses']}, follows {r['memo_follows']} "
          f"({r['memo_follows_steady']} steady)")
    ph = prof.phases(nic, mtu)
    total = sum(ph.values()) or 1
    print(f"NIC flows: {len(nic)}; packets sent as packets per flow, by phase:")
    for k, v in ph.items():
        print(f"  {k:16s} {v / max(1, len(nic)):9.1f}  ({v / total * 100:.1f}%)")
    if a.verbose:
        per_flow = {k: round(v / mtu / len(nic), 1) for k, v in prof.between_by.items()}
        print("between skips by the wake before:", per_flow)
        for w in prof.wakes:
            print("wake", w)
    return 0


if __name__ == "__main__":
    sys.exit(main())
