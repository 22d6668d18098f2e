#!/usr/bin/env python3
"""How much of a packet run any per-flow fast-forward at a constant rate could skip: an upper bound
(a benchmark, not a test).

One packet-mode run of a scenario, with every sender's QP sampled each ``--sample`` (a stand-in
boundary hook, :class:`Sampler`, in place of Wormhole): each flow's acknowledged bytes over time.
Then, per flow alone, a freeze is played as Wormhole would play it with an oracle for its end:
once the flow's goodput over the last ``span`` agrees between its two halves to ``theta``, it is
frozen at the mean of the two and kept frozen for as long as the bytes that rate predicts stay
within ``budget`` (a fraction of the bytes the flow sends in the run) of what the packet run
acknowledged; then it learns again over a new span. A freeze shorter than 8 samples is not made.

This bounds every design that fast-forwards flows at constant rates within that byte error: it
leaves out every coupling between flows (a flow is frozen whatever its neighbours do) and every
wake's cost, and ends each freeze exactly when its error would pass the budget. The share of the
run's packet events such freezes skip is estimated as the skipped bytes weighted by each flow's
ports (data and ACK hops: the events its bytes make); the events ratio at most ``1 / (1 - share)``.
A second share ends each freeze also at the first start of another flow crossing one of the flow's
ports (data or ACK), as a frozen conflict group wakes before a flow joins it.

    python3 bench/steady_bound.py [--sample 1us] [--spans 5us,10us,20us,40us] [--thetas 0.005,0.05]
        [--budgets 0.005,0.02] [--label NAME] [--out bench-out/steady_bound] -- RUN_ARGS...

``RUN_ARGS``: options of ``pwormhole run`` (``--mode`` is set to packet; ``--until`` is kept).
Rows are appended to ``<out>/results.md`` and ``results.jsonl``.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from results_log import ResultsLog

from pwormhole.commands import cli
from pwormhole.engine.lp import INF_PS
from pwormhole.options import prepare_run
from pwormhole.run import Run
from pwormhole.units import parse_time_ps

ROOT = Path(__file__).resolve().parents[1]
MIN_FREEZE_SAMPLES = 8  # Wormhole makes no freeze shorter than 8 windows (accel.wormhole min_skip_ps)


class Sampler:
    """A boundary hook (``sync.windows.BoundaryHook``, and what ``Run.run`` asks of its accelerator)
    that changes nothing: every ``sample_ps`` it records each sending QP's ``(t_ps, una_bytes)``."""

    def __init__(self, run: Run, sample_ps: int):
        self.run = run
        self.sample_ps = sample_ps
        self.next_ps = 0
        self.trace: dict[int, list[tuple[int, int]]] = {}

    def local_report(self, t: int):
        for lp in self.run.lps:
            lp.flow_start_log.clear()
        if t >= self.next_ps:
            self.next_ps = t + self.sample_ps
            net = self.run.net
            for f in net.flows:
                qp = net.sender_qp(f.flow_id)
                if qp is not None and not qp.done:
                    self.trace.setdefault(f.flow_id, []).append((t, qp.snapshot(t).una_bytes))
        return [], None

    @staticmethod
    def merge_reports(reports):
        return reports[0]

    def on_boundary(self, t: int, done, report) -> None:
        pass

    def next_wake_ps(self) -> int:
        return INF_PS

    def take_heaps_changed(self) -> bool:
        return False

    def quiet_until_ps(self) -> int:
        return self.next_ps

    def settle(self, t: int) -> None:
        pass


def skippable_bytes(una: np.ndarray, half: int, theta: float, budget_bytes: float,
                    stops: np.ndarray | None = None) -> float:
    """Bytes of one flow's trace (acknowledged bytes at equal steps) that oracle-ended freezes skip:
    learn over ``2 x half`` steps (halves agreeing to ``theta``), freeze at their mean goodput, end
    before the prediction is ``budget_bytes`` off (and, given ``stops``, sorted step indices, at
    the first stop after the freeze), learn again."""
    n, i, skipped = len(una), 2 * half, 0.0
    while i < n - 1:
        g1 = (una[i - half] - una[i - 2 * half]) / half
        g2 = (una[i] - una[i - half]) / half
        rate = (g1 + g2) / 2
        if rate <= 0 or abs(g2 - g1) > theta * rate:
            i += 1
            continue
        steps = np.arange(1, n - i)
        off = np.abs(una[i + 1:] - una[i] - rate * steps) > budget_bytes
        end = i + (int(np.argmax(off)) if off.any() else n - 1 - i)  # the last step within the budget
        if stops is not None:
            k = int(np.searchsorted(stops, i, side="right"))
            if k < len(stops) and stops[k] - 1 < end:
                end = int(stops[k]) - 1
        if end - i >= MIN_FREEZE_SAMPLES:
            skipped += una[end] - una[i]
            i = end + 2 * half
        else:
            i += 1
    return skipped


def ratio_of(share: float) -> float:
    """The events ratio a skipped ``share`` allows."""
    return 1 / (1 - share) if share < 1 else float("inf")


def main() -> int:
    argv = sys.argv[1:]
    run_args = argv[argv.index("--") + 1:] if "--" in argv else []
    own = argv[:argv.index("--")] if "--" in argv else argv
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sample", default="1us", help="sampling period (default 1us)")
    ap.add_argument("--spans", default="5us,10us,20us,40us", help="learning spans (two halves each)")
    ap.add_argument("--thetas", default="0.005,0.05", help="agreement of the halves' goodputs")
    ap.add_argument("--budgets", default="0.005,0.02", help="byte error of one freeze, of the flow's bytes")
    ap.add_argument("--label", default="", help="the row's name (default: the run arguments)")
    ap.add_argument("--out", default=str(ROOT / "bench-out" / "steady_bound"))
    a = ap.parse_args(own)
    sample_ps = parse_time_ps(a.sample)
    words = ["run", *run_args, "--mode", "packet", "--no-progress"]
    with tempfile.TemporaryDirectory() as tmp:
        args = cli.build_parser("run").parse_args([*words, "--out", tmp])
        args.argv = words
        prep = prepare_run(cli._options(args))
        run = Run(prep.scenario, seed=prep.settings.seed)
        hook = Sampler(run, sample_ps)
        run.accel = hook  # (a packet-mode run with a hook that only looks)
        cpu0 = time.process_time()
        run.run(prep.settings.until_ps)
        cpu_s = time.process_time() - cpu0
    net = run.net
    traces = {fid: np.array([u for _, u in tr], dtype=np.float64) for fid, tr in hook.trace.items() if len(tr) > 1}
    ports = {fid: set(net.path_of(fid)) | set(net.path_of(fid, acks=True)) for fid in traces}
    weight = {fid: len(net.path_of(fid)) + len(net.path_of(fid, acks=True)) for fid in traces}
    starts_on: dict = {}
    for f in net.flows:
        if f.flow_id not in net.no_path:
            for p in set(net.path_of(f.flow_id)) | set(net.path_of(f.flow_id, acks=True)):
                starts_on.setdefault(p, []).append((f.start_ps, f.flow_id))
    stops = {}  # per flow: the sample steps at which another flow starts on one of its ports
    for fid in traces:
        t0 = hook.trace[fid][0][0]
        times = sorted({st for p in ports[fid] for st, other in starts_on[p] if other != fid and st > t0})
        stops[fid] = (np.array(times, dtype=np.int64) - t0 + sample_ps - 1) // sample_ps
    total = sum(weight[fid] * tr[-1] for fid, tr in traces.items())
    label = a.label or " ".join(run_args)
    log = ResultsLog(Path(a.out), "| row | span | theta | budget | skippable share | events ratio at most | "
                                  "ending also at starts on its ports |\n|---|---|---|---|---|---|---|")
    print(f"{label}: {run.events:,} packet events, {cpu_s:.1f} s, {len(traces)} flows sampled", flush=True)
    for span in a.spans.split(","):
        half = max(1, parse_time_ps(span) // sample_ps // 2)
        for theta in (float(x) for x in a.thetas.split(",")):
            for budget in (float(x) for x in a.budgets.split(",")):
                skipped = sum(weight[fid] * skippable_bytes(tr, half, theta, budget * tr[-1])
                              for fid, tr in traces.items())
                woken = sum(weight[fid] * skippable_bytes(tr, half, theta, budget * tr[-1], stops[fid])
                            for fid, tr in traces.items())
                share = skipped / total if total else 0.0
                share_w = woken / total if total else 0.0
                log.add(f"| {label} | {span} | {theta} | {budget:.1%} | {share:.3f} | {ratio_of(share):.2f}x | "
                        f"{share_w:.3f}, {ratio_of(share_w):.2f}x |",
                        {"row": label, "span": span, "theta": theta, "budget": budget, "share": share,
                         "ratio": ratio_of(share), "share_woken_at_starts": share_w, "events": run.events,
                         "cpu_s": cpu_s, "sample": a.sample})
    return 0


if __name__ == "__main__":
    sys.exit(main())
