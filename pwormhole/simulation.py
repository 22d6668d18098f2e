"""Run one scenario in packet mode and write its outputs under ``out_dir``.

Outputs: ``fct.txt`` and ``pfc.txt`` (HPCC formats, written incrementally as
``*.part`` and renamed when the run ends), ``summary.json`` (keys in
:mod:`pwormhole.report.summary`). Flow completions and PFC records are
collected at window boundaries, in ``(time, flow id)`` order, so the files
are the same whatever the number of LPs.
"""

from __future__ import annotations

import os
import time

from .errors import InputError
from .lp.engine import LogicalProcess
from .net.build import Network
from .report.fct import IncrementalFile, fct_line, pfc_line
from .report.summary import percentiles, readable, write_json_atomic
from .scenario import Scenario
from .sync.local import run_windows
from .units import format_time

PROGRESS_AFTER_S = 2.0


def prepare_out_dir(out_dir: str) -> None:
    """Create ``out_dir`` and check it is writable, before any simulation (InputError otherwise)."""
    try:
        os.makedirs(out_dir, exist_ok=True)
        probe = os.path.join(out_dir, ".pwormhole-write-test")
        with open(probe, "w") as fh:
            fh.write("ok")
        os.remove(probe)
    except OSError as e:
        raise InputError(f"cannot write output folder {out_dir!r}: {e.strerror or e}") from None


class _Progress:
    """tqdm bar over simulated time, shown only when the run lasts more than a few seconds."""

    def __init__(self, stop_ps: int, enabled: bool | None):
        self.enabled = enabled
        self.bar = None
        self.t0 = time.monotonic()
        self.stop_ps = stop_ps
        self.last = 0.0

    def update(self, t_ps: int, events: int) -> None:
        if self.enabled is False:
            return
        now = time.monotonic()
        if now - self.last < 0.5:
            return
        self.last = now
        if self.bar is None:
            if now - self.t0 < PROGRESS_AFTER_S:
                return
            from tqdm import tqdm
            self.bar = tqdm(total=self.stop_ps / 1e6, unit="us sim", dynamic_ncols=True,
                            disable=None if self.enabled is None else False, leave=False,
                            bar_format="{l_bar}{bar}| {n:.0f}/{total:.0f} us sim [{elapsed}{postfix}]")
        self.bar.n = t_ps / 1e6
        self.bar.set_postfix_str(f"{events / (now - self.t0):,.0f} events/s", refresh=True)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def simulate(scn: Scenario, out_dir: str, until_ps: int | None = None, seed: int = 1, n_lps: int = 1,
             owner: list[int] | None = None, progress: bool | None = None, quiet: bool = False) -> dict:
    """Simulate ``scn`` in packet mode; returns the summary dict (also written as JSON).

    Args:
        scn: the scenario.
        out_dir: output folder (created; must be writable).
        until_ps: stop time (default: the config's ``SIMULATOR_STOP_TIME``).
        seed: seed of the per-node random streams.
        n_lps: number of in-process logical processes (the answer does not depend on it).
        owner: node id -> LP index (default: round robin by node id when ``n_lps > 1``).
        progress: show a progress bar (None: only on a terminal, after a few seconds).
        quiet: do not print the readable summary.

    Raises:
        InputError: unwritable output folder or an inconsistent scenario.
    """
    prepare_out_dir(out_dir)
    cfg = scn.config
    stop_ps = until_ps if until_ps is not None else cfg.simulator_stop_ps
    net = Network(scn.topology, scn.flows, cfg, seed)
    standalone = [net.standalone_fct_ns(f) for f in scn.flows]
    if owner is None:
        owner = [0] * scn.topology.n_nodes if n_lps == 1 else [n % n_lps for n in range(scn.topology.n_nodes)]
    initial = net.initial_events()
    lps = [LogicalProcess(i, [nd for nd in net.nodes if owner[nd.node_id] == i], initial, owner) for i in range(n_lps)]
    finished_by_lp = [[] for _ in lps]
    pfc_by_lp = [[] for _ in lps]
    for i, lp in enumerate(lps):
        for nd in lp.nodes:
            nd.pfc_log = pfc_by_lp[i]
            if not nd.is_switch:
                nd.finished = finished_by_lp[i]

    fct_path = os.path.join(out_dir, cfg.fct_output_name)
    pfc_path = os.path.join(out_dir, cfg.pfc_output_name)
    fct_file = IncrementalFile(fct_path)
    pfc_file = IncrementalFile(pfc_path)
    n_flows = len(scn.flows)
    fcts_ns: list[int] = []
    slowdowns: list[float] = []
    last_finish = [0]
    bar = _Progress(stop_ps, progress)
    wall0 = time.perf_counter()

    def on_boundary(t_ps: int) -> bool:
        done = []
        for lst in finished_by_lp:
            if lst:
                done.extend(lst)
                lst.clear()
        if done:
            done.sort(key=lambda r: (r[1], r[0]))
            lines = []
            for fid, t_fin in done:
                f = scn.flows[fid]
                lines.append(fct_line(f, t_fin, standalone[fid]))
                fct_ns = (t_fin - f.start_ps + 500) // 1000
                fcts_ns.append(fct_ns)
                slowdowns.append(fct_ns / standalone[fid] if standalone[fid] else 1.0)
                last_finish[0] = max(last_finish[0], t_fin)
            fct_file.write_lines(lines)
        recs = []
        for lst in pfc_by_lp:
            if lst:
                recs.extend(lst)
                lst.clear()
        if recs:
            recs.sort()
            pfc_file.write_lines(pfc_line(r) for r in recs)
        bar.update(t_ps, sum(lp.events for lp in lps))
        return len(fcts_ns) == n_flows

    complete = False
    try:
        t_end, windows = run_windows(lps, net.window_ps, stop_ps, on_boundary)
        complete = len(fcts_ns) == n_flows
    finally:
        bar.close()
        wall = time.perf_counter() - wall0
        fct_file.commit()
        pfc_file.commit()
    events = sum(lp.events for lp in lps)
    hosts = [nd for nd in net.nodes if not nd.is_switch]
    switches = [nd for nd in net.nodes if nd.is_switch]
    summary = {
        "mode": "packet",
        "ranks": n_lps,
        "scenario": scn.name,
        "cc": cfg.cc_name,
        "seed": seed,
        "complete": complete,
        "sim_time_ps": last_finish[0] if complete else t_end,
        "wall_s": wall,
        "events": events,
        "events_per_s": events / wall if wall > 0 else 0.0,
        "windows": windows,
        "window_ps": net.window_ps,
        "flows": n_flows,
        "flows_finished": len(fcts_ns),
        "fct_ns": percentiles(fcts_ns),
        "slowdown": {k: v for k, v in percentiles(slowdowns).items() if k != "max"},
        "bytes_sent": sum(h.bytes_sent for h in hosts),
        "bytes_delivered": sum(h.bytes_delivered for h in hosts),
        "drops": sum(nd.drops for nd in net.nodes),
        "lost_packets": sum(nd.lost for nd in net.nodes),
        "pfc_pauses": sum(s.pfc_pauses_sent for s in switches),
        "ecn_marks": sum(s.ecn_marks for s in switches),
        "cnps": sum(h.cnps_rx for h in hosts),
        "nacks": sum(h.nacks_tx for h in hosts),
        "retransmitted_bytes": sum(h.retx_bytes for h in hosts),
    }
    write_json_atomic(os.path.join(out_dir, "summary.json"), summary)
    if not quiet:
        print(readable(summary))
        if not complete:
            print(f"stopped at {format_time(summary['sim_time_ps'])} with "
                  f"{n_flows - len(fcts_ns)} flows unfinished")
    return summary

