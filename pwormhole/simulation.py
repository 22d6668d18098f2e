"""Run one scenario in packet mode and write its outputs under ``out_dir``.

Outputs: ``fct.txt`` and ``pfc.txt`` (HPCC formats, written incrementally as
``*.part`` and renamed when the run ends), ``summary.json`` (keys in
:mod:`pwormhole.report.summary`), all by :mod:`pwormhole.outfiles`. Flow
completions and PFC records are collected at window boundaries, in ``(time,
flow id)`` order, so the files are the same whatever the number of LPs.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from itertools import chain

from .errors import InputError, OutputError, StuckError, Terminated
from .lp.engine import INF_PS, LogicalProcess
from .net.build import Network
from .outfiles import check_file_writable, check_output_name, create_fresh, existing
from .report.fct import IncrementalFile, fct_line, pfc_line
from .report.summary import percentiles, readable, write_json_atomic
from .scenario import Scenario
from .standalone import StandaloneFct
from .sync.local import run_windows
from .units import format_time

PROGRESS_AFTER_S = 2.0


def prepare_out_dir(out_dir: str) -> None:
    """Create ``out_dir`` and check it is writable, before any simulation (InputError otherwise)."""
    try:
        os.makedirs(out_dir, exist_ok=True)
        probe = os.path.join(out_dir, f".pwormhole-write-test-{os.getpid()}")
        os.close(create_fresh(probe))
        os.remove(probe)
    except OSError as e:
        raise InputError(f"cannot write output folder {out_dir!r}: {e.strerror or e}") from None


def output_names(scn: Scenario, plot: bool = False) -> list[str]:
    """The files :func:`simulate` writes in its output folder."""
    names = [scn.config.fct_output_name, scn.config.pfc_output_name, "summary.json"]
    if scn.dag is not None and (scn.dag.collectives or scn.dag.gpu_of_host):
        names.append("collectives.csv")
        if plot:
            names.append("timeline.png")
    return names


def _same_file(a: str, b: str) -> bool:
    """``a`` and ``b`` name one file (their folders resolved, their last parts not followed)."""
    def norm(p):
        p = os.path.abspath(p)
        return os.path.join(os.path.realpath(os.path.dirname(p)), os.path.basename(p))
    return norm(a) == norm(b)


def check_outputs(out_dir: str, names: list[str], source: str | None = None, memo_cache: str | None = None) -> None:
    """Before simulating: the output ``names`` (the first two from the config
    ``source``) are plain distinct names, none is a folder in ``out_dir``, a
    ``memo_cache`` can be written and is none of them (InputError otherwise);
    a warning names the existing files that the run will replace."""
    for name in names[:2]:
        why = check_output_name(name)
        if why:
            raise InputError(f"output file name {name!r} {why}", source)
    if names[0] == names[1]:
        raise InputError(f"the FCT and PFC output files have the same name {names[0]!r}", source)
    for name in names:
        if os.path.isdir(os.path.join(out_dir, name)):
            raise InputError(f"cannot write {os.path.join(out_dir, name)}: it is a folder")
    if memo_cache:
        check_file_writable(memo_cache, "--memo-cache")
        for name in names:
            for p in (os.path.join(out_dir, name), os.path.join(out_dir, name + ".part")):
                if _same_file(memo_cache, p) or _same_file(memo_cache + ".part", p):
                    raise InputError(f"--memo-cache {memo_cache!r} is the run's output {p}; give another file")
    replaced = existing(out_dir, names)
    if replaced:
        print(f"pwormhole: warning: replacing existing files in {out_dir}: {', '.join(replaced)}", file=sys.stderr)


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


class PacketRun:
    """One packet-mode run of a scenario, window by window.

    Build it (errors in the scenario are raised here, before any event), then
    :meth:`run`. Completed flows are handed to ``on_flows(records)`` at window
    boundaries as ``(flow_id, finish_ps, start_ps)`` sorted by ``(finish_ps,
    flow_id)``, PFC records to ``on_pfc(records)``.

    Attributes after :meth:`run`: ``finish_ps`` (flow id -> finish time),
    ``start_ps`` (flow id -> start time), ``op_times`` (DAG compute/mark op
    id -> ``(start_ps, end_ps)``), ``complete``, ``t_end_ps``, ``windows``,
    ``wall_s``, ``events``, ``net``.
    """

    def __init__(self, scn: Scenario, seed: int = 1, n_lps: int = 1, owner: list[int] | None = None, comm=None,
                 accel=None, memo=None):
        self.scn = scn
        self.net = Network(scn.topology, scn.flows, scn.config, seed, scn.dag)
        n = scn.topology.n_nodes
        if comm is not None:
            n_lps = comm.size
        if owner is None:  # round robin over units (partition/plan.py), so short links are never cut
            if n_lps == 1:
                owner = [0] * n
            else:
                from .partition.plan import units_of
                owner = [u % n_lps for u in units_of(scn.topology)]
        self.owner = owner
        for ln in scn.topology.links:  # invariant 3: a cut link must be at least one window long
            if owner[ln.a] != owner[ln.b] and ln.delay_ps < self.net.window_ps:
                raise InputError(f"LP assignment cuts link {ln.a}-{ln.b} ({ln.delay_ps} ps), shorter than the "
                                 f"window ({self.net.window_ps} ps); keep its ends in one LP")
        initial = self.net.initial_events()
        self.comm = comm
        ids = [comm.rank] if comm is not None else range(n_lps)
        self.lps = [LogicalProcess(i, [nd for nd in self.net.nodes if owner[nd.node_id] == i], initial, owner)
                    for i in ids]
        self.n_lps = n_lps if comm is None else comm.size
        self.accel = None
        if accel is not None:
            from .accel.wormhole import Wormhole
            self.accel = Wormhole(self.net, self.lps, accel, memo, owner)
        self.sync_wall_s = 0.0
        self.finish_ps: dict[int, int] = {}
        self.start_ps: dict[int, int] = {}
        self.op_times: dict[int, tuple[int, int]] = {}
        dag = scn.dag
        self.n_ops = 0 if dag is None else len(dag) - len(dag.flows)  # ops logged besides flows
        self.complete = False
        self.stuck = None  # a report dict when the run could not make progress
        self.stall_ps = 20 * 10**9  # 20 ms simulated without a delivered byte while flows are active
        self.stall_check_ps = 10**9
        self._hosts = [nd for nd in self.net.nodes if not nd.is_switch]
        self._local_ids = {nd.node_id for lp in self.lps for nd in lp.nodes}
        self.t_end_ps = 0
        self.windows = 0
        self.wall_s = 0.0

    @property
    def events(self) -> int:
        return sum(lp.events for lp in self.lps)

    def run(self, until_ps: int | None = None, on_flows=None, on_pfc=None, progress: bool | None = False) -> "PacketRun":
        stop_ps = until_ps if until_ps is not None else self.scn.config.simulator_stop_ps
        n_flows = len(self.scn.flows)
        n_ops = self.n_ops
        finish = self.finish_ps
        start = self.start_ps
        op_times = self.op_times
        bar = _Progress(stop_ps, progress)
        accel = self.accel
        lps = self.lps
        failures = [f for f in self.net.failures if f[0] < stop_ps]  # (t_ps, a, b): boundaries of their own

        def on_boundary(t_ps: int, done, recs, op_recs, accel_report=None) -> bool:
            self.t_end_ps = t_ps  # kept if the run is interrupted
            if done:
                for fid, t_fin, t_start in done:
                    finish[fid] = t_fin
                    start[fid] = t_start
                if on_flows:
                    on_flows(done)
            if recs and on_pfc:
                on_pfc(recs)
            for op, t0, t1 in op_recs:
                op_times[op] = (t0, t1)
            if accel is not None:
                if accel_report is None:  # in-process LPs: every LP's report is here
                    accel_report = accel.local_report(t_ps)
                accel.on_boundary(t_ps, done, accel_report)
            else:
                for lp in lps:
                    lp.started.clear()
            while failures and failures[0][0] <= t_ps:
                self._link_down(t_ps, *failures.pop(0)[1:])
            bar.update(t_ps, self.events)
            return len(finish) == n_flows and len(op_times) == n_ops

        wall0 = time.perf_counter()
        watch = self.comm is None  # under MPI only the empty-heap case is detected (byte counters are per rank)
        check = {"next": self.stall_check_ps, "last": None, "since": 0}

        def on_boundary_watch(t_ps: int, done, recs, op_recs) -> bool:
            if on_boundary(t_ps, done, recs, op_recs, None):
                return True
            if watch and t_ps >= check["next"]:
                check["next"] = t_ps + self.stall_check_ps
                mark = self._progress_mark()
                if mark != check["last"] or (accel is not None and accel.next_wake_ps() < INF_PS):
                    # progress, or a group fast-forwarded (its bytes move at its wake)
                    check["last"], check["since"] = mark, t_ps
                elif t_ps - check["since"] >= self.stall_ps and self._active_flows():
                    self.stuck = self._stuck_report(t_ps, f"no byte delivered for {format_time(t_ps - check['since'])}")
                    return True
            return False

        try:
            if self.comm is None:
                self.t_end_ps, self.windows = run_windows(self.lps, self.net.window_ps, stop_ps, on_boundary_watch,
                                                          accel.next_wake_ps if accel is not None else None,
                                                          [f[0] for f in failures])
            else:
                from .sync.mpi import run_windows_mpi
                self.t_end_ps, self.windows, self.sync_wall_s = run_windows_mpi(
                    self.lps[0], self.comm, self.net.nodes, self.net.window_ps, stop_ps, on_boundary, accel,
                    [f[0] for f in failures])
        finally:
            bar.close()
            self.wall_s = time.perf_counter() - wall0
        self.complete = len(finish) == n_flows and len(op_times) == n_ops
        if not self.complete and accel is not None:
            accel.settle(self.t_end_ps)  # fast-forwarded bytes, counted up to the stop
        cut_off = sorted(f for f in self.net.no_path if f not in finish)
        if not self.complete and self.stuck is None and cut_off:
            down = "; ".join(f"link {a}-{b} down at {t / 10**6:.3f} us" for t, a, b, _ in self.net.failed)
            ids = ", ".join(map(str, cut_off[:10])) + (f" (+{len(cut_off) - 10} more)" if len(cut_off) > 10 else "")
            self.stuck = self._stuck_report(self.t_end_ps, f"no path left for flow {ids} ({down})")
        if not self.complete and self.stuck is None and self.t_end_ps < stop_ps:
            self.stuck = self._stuck_report(self.t_end_ps, "no event left to simulate")
        return self

    def _link_down(self, t_ps: int, a: int, b: int) -> None:
        """Fail link ``a``-``b`` at boundary ``t_ps`` on this process's LPs; under Wormhole
        every frozen group wakes first and the groups follow the new routes."""
        if self.accel is not None:
            self.accel.reroute(t_ps, lambda: self.net.fail_link(a, b, t_ps))
        else:
            self.net.fail_link(a, b, t_ps)

    # -- progress watchdog -------------------------------------------------------------
    def _progress_mark(self):
        return (sum(h.bytes_delivered for h in self._hosts), len(self.finish_ps), len(self.op_times))

    def _active_flows(self) -> list:
        """``(flow id, src, dst, acked bytes, size)`` of flows started and not finished (this process's hosts;
        for ``--fluid-nvlink`` flows, the bytes sent by their rate so far)."""
        out = []
        for h in self._hosts:
            for fid, qp in chain(h.sqp.items(), h.parked.items()):
                out.append((fid, qp.host.node_id, qp.dst, qp.snd_una, qp.size))
        if self.accel is not None:  # --fluid-nvlink flows have no QP: bytes sent so far, by their rate
            for dom in self.accel.fluid_domains.values():
                for fid in list(dom.active) + list(dom.start_ps):
                    f = self.scn.flows[fid]
                    if f.src in self._local_ids:
                        out.append((fid, f.src, f.dst, dom.sent_bytes(fid, self.t_end_ps), f.size_bytes))
        return sorted(out)

    def _stuck_report(self, t_ps: int, why: str) -> dict:
        paused = []
        for nd in self.net.nodes:
            for p in nd.ports:
                prios = [q for q, on in enumerate(p.paused) if on]
                if prios:
                    paused.append({"node": nd.node_id, "port": p.idx + 1, "priorities": prios})
        flows = [{"flow": f, "src": s, "dst": d, "acked_bytes": a, "size_bytes": z}
                 for f, s, d, a, z in self._active_flows()]
        return {"at_ps": t_ps, "reason": why, "flows": flows, "paused_ports": paused}

    def last_end_ps(self) -> int:
        """The latest flow completion or DAG op end (0 when nothing ended)."""
        ends = list(self.finish_ps.values()) + [e for _, e in self.op_times.values()]
        return max(ends) if ends else 0

    def counters(self) -> dict:
        """Totals over all nodes (see :mod:`pwormhole.report.summary`)."""
        nodes = self.net.nodes
        hosts = [nd for nd in nodes if not nd.is_switch]
        switches = [nd for nd in nodes if nd.is_switch]
        return {
            "bytes_sent": sum(h.bytes_sent for h in hosts),
            "bytes_delivered": sum(h.bytes_delivered for h in hosts),
            "drops": sum(nd.drops for nd in nodes),
            "lost_packets": sum(nd.lost for nd in nodes),
            "pfc_pauses": sum(s.pfc_pauses_sent for s in switches),
            "ecn_marks": sum(s.ecn_marks for s in switches),
            "cnps": sum(h.cnps_rx for h in hosts),
            "nacks": sum(h.nacks_tx for h in hosts),
            "retransmitted_bytes": sum(h.retx_bytes for h in hosts),
        }


def simulate(scn: Scenario, out_dir: str, until_ps: int | None = None, seed: int = 1, n_lps: int = 1,
             owner: list[int] | None = None, progress: bool | None = False, quiet: bool = False, comm=None,
             plot: bool = False, accel=None, memo_cache: str | None = None) -> dict:
    """Simulate ``scn`` in packet mode and write ``fct.txt``, ``pfc.txt`` and
    ``summary.json`` under ``out_dir``; returns the summary dict.

    Args:
        scn: the scenario.
        out_dir: output folder (created; must be writable, checked before simulating).
        until_ps: stop time (default: the config's ``SIMULATOR_STOP_TIME``).
        seed: seed of the per-node random streams.
        n_lps: number of in-process logical processes (the answer does not depend on it).
        owner: node id -> LP index (default: a METIS plan when there is more than one LP).
        progress: show a progress bar (None: only on a terminal, after a few seconds).
        quiet: do not print the readable summary.
        comm: an MPI communicator (one LP per rank; rank 0 writes the files).
        plot: with a workload DAG, also write ``timeline.png`` (per-GPU Gantt chart).
        accel: an :class:`~pwormhole.accel.wormhole.AccelConfig` for Wormhole
            mode (None: packet mode, the reference).
        memo_cache: a memo cache file to load before and save after the run
            (Wormhole mode with memoization).

    With a workload DAG (training jobs) the run also writes ``collectives.csv``
    and adds ``iterations`` (ns), ``iteration_time_ns`` (the last one),
    ``collectives`` {count, total_time_ns} and ``gpus`` (per-GPU compute,
    communication and exposed communication, ns) to the summary
    (:mod:`pwormhole.report.training`).

    Output names are checked before simulating (:func:`check_outputs`).
    ``summary.json`` is written before the optional outputs (``collectives.csv``,
    ``timeline.png``, the memo cache); a write error does not stop the run nor
    the other outputs: the file stays as ``NAME.part`` and ``summary.json``
    lists the errors known when it is written in ``output_errors``.

    Raises:
        InputError: unwritable output folder, clashing output names or an inconsistent scenario.
        OutputError: an output could not be written (after everything else was).
    """
    rank0 = comm is None or comm.rank == 0
    if accel is None or not accel.memo:
        memo_cache = None
    if rank0:
        prepare_out_dir(out_dir)
        check_outputs(out_dir, output_names(scn, plot), scn.config.source, memo_cache)
    parts = comm.size if comm is not None else n_lps
    plan = None
    if owner is None and parts > 1:
        from .partition.plan import make_plan
        plan = make_plan(scn.topology, parts, scn.flows, scn.config.packet_payload_bytes) if rank0 else None
        idle = plan.warning("ranks" if comm is not None else "LPs") if rank0 else None
        if idle:
            print(f"pwormhole: warning: {idle}", file=sys.stderr)
        if comm is not None:
            plan = comm.bcast(plan, root=0)
        owner = plan.owner
    cfg = scn.config
    memo = None
    if accel is not None and accel.memo:
        from .accel.memo import MemoCache, MemoLimits, config_fingerprint
        fp = config_fingerprint(cfg, accel)
        memo = (MemoCache.load(memo_cache, fp, lambda m: print(f"pwormhole: warning: {m}", file=sys.stderr),
                               MemoLimits.of(scn))
                if memo_cache else MemoCache(fp))
    sim = PacketRun(scn, seed, n_lps, owner, comm, accel, memo)
    standalone = StandaloneFct(sim.net).all_ns(scn.flows)
    fct_file = pfc_file = None
    if rank0:
        fct_file = IncrementalFile(os.path.join(out_dir, cfg.fct_output_name))
        pfc_file = IncrementalFile(os.path.join(out_dir, cfg.pfc_output_name))
    fcts_ns: list[int] = []
    slowdowns: list[float] = []
    writing = threading.Lock()  # whole lines only, also when the MPI stop watchdog ends the job (another thread)

    def on_flows(done):
        lines = []
        for fid, t_fin, t_start in done:
            f = scn.flows[fid]
            lines.append(fct_line(f, t_fin, standalone[fid], t_start))
            fct_ns = (t_fin - t_start + 500) // 1000
            fcts_ns.append(fct_ns)
            slowdowns.append(fct_ns / standalone[fid] if standalone[fid] else 1.0)
        if fct_file:
            with writing:
                fct_file.write_lines(lines)

    def on_pfc(recs):
        if pfc_file:
            with writing:
                pfc_file.write_lines(pfc_line(r) for r in recs)

    if comm is not None and rank0:
        from .sync import interrupt

        def write_partial(signum: int, reason: str) -> None:
            """Rank 0's summary when the ranks cannot stop together (the watchdog's thread, just before it ends
            every rank): the completions up to the last boundary, no counters (they are per rank);
            ``fct.txt.part`` and ``pfc.txt.part`` stay as written."""
            if not writing.acquire(timeout=2):  # never released: the job ends next
                return
            write_json_atomic(os.path.join(out_dir, "summary.json"), {
                "mode": "packet" if accel is None else "wormhole", "ranks": comm.size, "scenario": scn.name,
                "cc": cfg.cc_name, "seed": seed, "complete": False, "sim_time_ps": sim.t_end_ps,
                "flows": len(scn.flows), "flows_finished": len(fcts_ns), "fct_ns": percentiles(fcts_ns),
                "slowdown": {k: v for k, v in percentiles(slowdowns).items() if k != "max"},
                "interrupted": signal.Signals(signum).name, "aborted": reason})

        interrupt.set_partial_writer(write_partial)

    interrupted = None
    try:
        sim.run(until_ps, on_flows, on_pfc, progress if rank0 else False)
    except (KeyboardInterrupt, Terminated) as e:
        interrupted = e  # write what we have, then let the CLI exit 130 / 143
    except BaseException:
        if rank0:  # a failed run: its files stay as .part
            with writing:
                fct_file.close_partial()
                pfc_file.close_partial()
        raise
    write_errors: list[str] = []  # one line per output not written (a write error does not stop the run)
    if rank0:
        with writing:
            write_errors += [f.error for f in (fct_file, pfc_file) if not f.commit()]
    counters = sim.counters()
    events_by_rank = [lp.events for lp in sim.lps]
    sync_by_rank = [sim.sync_wall_s]
    if comm is not None:
        from .sync.mpi import allreduce_sum
        counters = {k: allreduce_sum(comm, v) for k, v in counters.items()}
        events_by_rank = comm.allgather(sim.lps[0].events)
        sync_by_rank = comm.allgather(sim.sync_wall_s)
    events = sum(events_by_rank)
    summary = {
        "mode": "packet" if accel is None else "wormhole",
        "ranks": sim.n_lps,
        "scenario": scn.name,
        "cc": cfg.cc_name,
        "seed": seed,
        "complete": sim.complete,
        "sim_time_ps": sim.last_end_ps() if sim.complete else sim.t_end_ps,
        "wall_s": sim.wall_s,
        "events": events,
        "events_per_s": events / sim.wall_s if sim.wall_s > 0 else 0.0,
        "windows": sim.windows,
        "window_ps": sim.net.window_ps,
        "sync_wall_s": max(sync_by_rank),
        "events_by_rank": events_by_rank,
        "flows": len(scn.flows),
        "flows_finished": len(fcts_ns),
        "fct_ns": percentiles(fcts_ns),
        "slowdown": {k: v for k, v in percentiles(slowdowns).items() if k != "max"},
        **counters,
    }
    if sim.accel is not None:
        st = sim.accel.stats()
        shared = st["fluid_shared_flows"]  # this rank's domains
        if comm is not None:
            from .sync.mpi import allreduce_sum
            shared = allreduce_sum(comm, shared)
        if shared and rank0:
            print(f"pwormhole: warning: --fluid-nvlink: {shared} NVLink flows shared a port with another flow's "
                  "data; their FCTs are approximate (max-min rates, not DCQCN's unequal shares: 1.9% to 23% per flow "
                  "on small patterns; TP rings and symmetric patterns on one NVSwitch are within 0.4%)", file=sys.stderr)
        flow_time = sum(sim.finish_ps[f] - sim.start_ps[f] for f in sim.finish_ps) or 1
        summary.update({"skips": st["skips"], "skipped_time_fraction": min(1.0, st["skipped_flow_ps"] / flow_time),
                        "memo_hits": st["memo_hits"], "memo_misses": st["memo_misses"],
                        "memo_entries": st["memo_entries"], "memo_bytes": st["memo_bytes"],
                        "wakes_interrupted": st["wakes_interrupted"],
                        "fluid_flows": sum(1 for f in sim.finish_ps if f in sim.accel.fluid_fids),
                        "fluid_shared_flows": shared,
                        "accel": {"theta": sim.accel.theta, "window_samples": sim.accel.samples,
                                  "sample_ps": sim.accel.sample_ps, "min_span_packets": sim.accel.min_span_bytes,
                                  "margin_rtts": accel.margin_rtts, "skip": accel.skip, "memo": accel.memo,
                                  "fluid_nvlink": accel.fluid_nvlink}})
    report = None
    if scn.dag is not None and (scn.dag.collectives or scn.dag.gpu_of_host):  # a training job or a Chakra trace
        from .report.training import training_report
        report = training_report(scn.dag, sim.op_times, sim.start_ps, sim.finish_ps)
        summary["iterations"] = report["iterations"] if sim.complete else []
        summary["iteration_time_ns"] = report["iterations"][-1] if sim.complete else None
        summary["collectives"] = {"count": len(report["collectives"]),
                                  "total_time_ns": sum(r["time_ns"] for r in report["collectives"])}
        summary["gpus"] = report["gpus"]
    if plan is not None:
        summary["partition"] = {"edge_cut_bytes": plan.edge_cut_bytes, "imbalance": plan.imbalance,
                                "cut_links": len(plan.cut_links)}
    if interrupted is not None:
        summary["complete"] = False
        summary["interrupted"] = "SIGTERM" if isinstance(interrupted, Terminated) else "SIGINT"
    if sim.stuck is not None:
        if comm is not None:  # every rank stops at the same boundary; each knows its own flows and ports
            parts = comm.allgather((sim.stuck["flows"], sim.stuck["paused_ports"]))
            sim.stuck["flows"] = sorted((f for fl, _ in parts for f in fl), key=lambda f: f["flow"])
            sim.stuck["paused_ports"] = sorted((p for _, pp in parts for p in pp),
                                               key=lambda p: (p["node"], p["port"]))
        summary["stuck"] = sim.stuck
    if write_errors:
        summary["output_errors"] = list(write_errors)
    if rank0:
        def attempt(write, *args):  # write what we can: a failed output does not stop the others
            try:
                write(*args)
            except OutputError as e:
                write_errors.append(str(e))

        attempt(write_json_atomic, os.path.join(out_dir, "summary.json"), summary)  # first: the main result
        if report is not None:
            from .report.training import plot_timeline, write_collectives_csv
            attempt(write_collectives_csv, os.path.join(out_dir, "collectives.csv"), report["collectives"])
            if plot:
                attempt(plot_timeline, os.path.join(out_dir, "timeline.png"), report, scn.name)
        if memo is not None and memo_cache:
            attempt(memo.save, memo_cache)
        if not quiet:
            print(readable(summary))
            if summary["ranks"] > 1:
                print(("rank" if comm is not None else "LP  ") + "  events      share")
                for r, ev in enumerate(events_by_rank):
                    print(f"{r:4d}  {ev:10d}  {ev / events * 100 if events else 0:5.1f}%")
            if not sim.complete:
                print(f"stopped at {format_time(summary['sim_time_ps'])} with "
                      f"{len(scn.flows) - len(fcts_ns)} flows unfinished")
    if write_errors:
        write_error = OutputError("; ".join(write_errors))
        if interrupted is not None or sim.stuck is not None:  # their exit status wins; the error is still said
            print(f"pwormhole: error: {write_error}", file=sys.stderr)
    if interrupted is not None:
        raise interrupted
    if sim.stuck is not None:
        st = sim.stuck
        fl = ", ".join(f"{f['flow']} ({f['src']}->{f['dst']}, {f['acked_bytes']}/{f['size_bytes']} B)"
                       for f in st["flows"][:10]) or "none started"
        pp = ", ".join(f"node {p['node']} port {p['port']} prio {p['priorities']}"
                       for p in st["paused_ports"][:10]) or "none"
        more = "" if len(st["flows"]) <= 10 else f" (+{len(st['flows']) - 10} more)"
        raise StuckError(f"no progress at {format_time(st['at_ps'])}: {st['reason']}; stuck flows: {fl}{more}; "
                         f"paused ports: {pp}; partial outputs kept in {out_dir}")
    if write_errors:
        raise write_error
    return summary
