"""The composition root: build a run of a scenario from its settings, run it, hand its results to the outputs.

:func:`simulate` plans the LPs (:mod:`pwormhole.partition`), loads the memo
cache, builds a :class:`Run` (network, LPs, acceleration, window loop over a
transport), runs it with a :class:`~pwormhole.report.writer.RunWriter` as its
output hooks, reduces the counters over the ranks and writes the summary
(:mod:`pwormhole.report.summary`). Flow completions and PFC records are
collected at window boundaries, in ``(time, flow id)`` order, so the files are
the same whatever the number of LPs.
"""

from __future__ import annotations

import gc
import os
import secrets
import signal
import sys
import time
from collections.abc import Callable
from contextlib import contextmanager
from itertools import chain
from typing import Any

import numpy as np

from . import compiled
from .accel.config import HPCC_CROWDED_NIC
from .accel.memo import MemoCache, MemoLimits, config_fingerprint
from .accel.wormhole import Wormhole
from .config import CC_HPCC
from .engine.lp import INF_PS, LogicalProcess
from .errors import AgreedInputError, InputError, OutputError, StuckError, Terminated
from .net.build import Network
from .net.dispatch import handler_table
from .outfiles import RECORD_NAME, REPORT_NAME
from .partition.grid import WindowGrid, check_cut_links, round_robin_owner
from .partition.plan import PartitionPlan, make_plan
from .partition.record import Recorder
from .report import stuck as stuck_text
from .report.monitor import (
    LINK_UTIL_NAME,
    MonitorData,
    MonitoredLP,
    link_util_bound_bytes,
    monitor_summary,
    window_of,
    write_link_util,
    write_qlen,
)
from .report.monitor import merge as merge_monitors
from .report.summary import (
    accel_summary,
    fct_summary,
    inputs_summary,
    packet_events_estimate,
    rank_table,
    readable,
    run_summary,
    training_summary,
)
from .report.training import training_report
from .report.writer import RunWriter, check_outputs, claim, output_names, prepare_out_dir
from .scenario import Scenario
from .standalone import StandaloneFct
from .sync import interrupt
from .sync.local import LocalTransport
from .sync.mpi import MpiTransport, allreduce_sum
from .sync.windows import Transport, run_windows
from .units import format_time
from .workload.flows import traffic_start_ps

PROGRESS_AFTER_S = 2.0
FLUID_SHARED_WARNING = ("--nvlink fluid with --nvlink-cc nic: {} NVLink flows shared a port with another flow's "
                        "data; their FCTs are approximate (max-min rates, not DCQCN's unequal shares: 1.9% to 23% "
                        "per flow on small patterns; TP rings and symmetric patterns on one NVSwitch are within 0.4%)")

HANDED_OVER_WARNING = ("{} of {} servers ran their NVLink flows as packets, the first from {:.3f} ms on: a "
                       "collective's flows there would not share the NVSwitch ports max-min (as when its members "
                       "start apart); exact, but Wormhole skips none of those packets ({} NVLink flows)")

CROWDED_NIC_WARNING = ("HPCC: {} flows were fast-forwarded while {} or more flows left their NIC; the run's per-flow "
                       "FCTs may be far off packet mode (p99 64-111% measured with 3 or more DP rings on one NIC, "
                       "flows never fast-forwarded less; iteration times within 0.25%; a 1% change of one HPCC "
                       "constant moves the packet run about as far): for exact per-flow FCTs run --mode packet")


def expected_end_ps(scn: Scenario, standalone_ns: list[int]) -> int:
    """When a run of ``scn`` is expected to end, were no flow slowed by another: the last flow list
    start plus its standalone FCT, or a workload DAG's critical path with standalone flow times."""
    if scn.dag is not None:
        return scn.dag.critical_path_ps([ns * 1000 for ns in standalone_ns])
    return max((f.start_ps + ns * 1000 for f, ns in zip(scn.flows, standalone_ns)), default=0)


class _Progress:
    """tqdm bar over simulated time up to ``total_ps`` (the expected end; raised to the time reached
    when the run goes past it), shown only when the run lasts more than a few seconds."""

    def __init__(self, total_ps: int, enabled: bool | None):
        self.enabled = enabled
        self.bar: Any = None  # a tqdm bar once shown (tqdm ships no types)
        self.t0 = time.monotonic()
        self.total_ps = max(1, total_ps)
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
            self.bar = tqdm(total=self.total_ps / 1e6, unit="us sim", dynamic_ncols=True,
                            disable=None if self.enabled is None else False, leave=False,
                            bar_format="{l_bar}{bar}| {n:.0f}/{total:.0f} us sim [{elapsed}{postfix}]")
        if t_ps > self.total_ps:  # slower than expected (contention): the bar ends at the time reached
            self.total_ps = t_ps
            self.bar.total = t_ps / 1e6
        self.bar.n = t_ps / 1e6
        self.bar.set_postfix_str(f"{events / (now - self.t0):,.0f} events/s", refresh=True)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


@contextmanager
def _cyclic_gc_paused():
    """Python's cyclic garbage collector pauses while events run: packets and events are plain
    lists and tuples that form no cycles, yet its full passes walk every pending event; the
    cycles a run leaves (its network) are collected after it."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


class Run:
    """One run of a scenario, window by window: packet mode, or Wormhole mode with ``accel``
    (an :class:`~pwormhole.accel.wormhole.AccelConfig`; ``memo``: its memo cache).

    Build it (errors in the scenario are raised here, before any event), then
    :meth:`run`. ``owner``: node id -> LP (default: the units of the window
    ``grid`` dealt round robin); ``comm``: an MPI communicator (one LP per rank);
    ``grid``: the topology's window grid (default: computed here; a partition
    plan carries it); ``leads``: windows end at the horizon of :mod:`pwormhole.sync.windows` (False:
    each window is one grid cell; the same answer in packet mode).
    Completed flows are handed to ``on_flows(records)`` at window boundaries as
    ``(flow_id, finish_ps, start_ps)`` sorted by ``(finish_ps, flow_id)`` (under MPI, on rank 0
    only, every few windows as int64 rows, and with ``format_finished`` set as ``on_flows(records,
    lines)`` with their output lines), PFC records to ``on_pfc(records)``.

    Attributes after :meth:`run`: ``finish_ps`` (flow id -> finish time),
    ``start_ps`` (flow id -> start time), ``op_times`` (DAG compute/mark op
    id -> ``(start_ps, end_ps)``), ``complete``, ``stuck`` (a report dict of
    :mod:`pwormhole.report.stuck` when the run could not make progress),
    ``t_end_ps``, ``windows``, ``wall_s``, ``cpu_s`` (this process), ``sync_wall_s``, ``ready_wait_s`` (the
    wait for the other ranks' set-up, before the clock of ``wall_s`` starts), ``events``, ``net``.
    """

    def __init__(self, scn: Scenario, seed: int = 1, n_lps: int = 1, owner: list[int] | None = None, comm=None,
                 accel=None, memo=None, grid: WindowGrid | None = None, recorder=None, leads: bool = True):
        self.scn = scn
        self.recorder = recorder
        # completions -> their fct.txt lines, one each, ending in its only newline (under MPI each rank
        # makes those of its own)
        self.format_finished: Callable[[list], list[str]] | None = None
        grid = grid if grid is not None else WindowGrid(scn.topology)
        self.window_ps = grid.window_ps
        self.net = Network(scn.topology, scn.flows, scn.config, seed, scn.dag)
        if comm is not None:
            n_lps = comm.size
        if owner is None:
            owner = round_robin_owner(grid, n_lps)
        self.owner = owner
        check_cut_links(scn.topology, owner, grid.window_ps)
        initial = self.net.initial_events()
        self.comm = comm
        ids = [comm.rank] if comm is not None else range(n_lps)
        handlers = handler_table()
        # the monitors (qlen.txt, link_util.csv): their LPs sample their nodes as they run
        self.monitor_window = window_of(scn.config, min((f.start_ps for f in scn.flows if f.start_ps >= 0), default=0))
        mon = self.monitor_window
        self.lps = [LogicalProcess(i, [nd for nd in self.net.nodes if owner[nd.node_id] == i], initial, owner, handlers)
                    if mon is None else
                    MonitoredLP(i, [nd for nd in self.net.nodes if owner[nd.node_id] == i], initial, owner, handlers,
                                self.net.link_ports, mon)
                    for i in ids]
        self.samplers = [lp.sampler for lp in self.lps if isinstance(lp, MonitoredLP)]
        self._monitors_done = False
        self.n_lps = n_lps
        self.accel = Wormhole(self.net, self.lps, accel, self.window_ps, memo) if accel is not None else None
        if leads:  # the window loop's horizon (sync.windows); False: every window one grid cell
            lead = self.net.horizon_lead(self.accel.fluid_fids if self.accel is not None else ())
            for lp in self.lps:
                lp.lead = lead
        if self.accel is not None and mon is not None:
            self.accel.on_carried = self._carried
            for dom in self.accel.fluid_domains.values():
                dom.on_carried = self._carried
        self.sync_wall_s = 0.0
        self.finish_ps: dict[int, int] = {}
        self.start_ps: dict[int, int] = {}
        self.op_times: dict[int, tuple[int, int]] = {}
        dag = scn.dag
        self.n_ops = 0 if dag is None else len(dag) - len(dag.flows)  # ops logged besides flows
        self.complete = False
        self.stuck: dict | None = None
        self.stall_ps = 20 * 10**9  # 20 ms simulated without a delivered byte while flows are active
        self.stall_check_ps = 10**9
        self._hosts = [nd for nd in self.net.nodes if not nd.is_switch]
        self._local_ids = {nd.node_id for lp in self.lps for nd in lp.nodes}
        self.t_end_ps = 0
        self.failures_applied: list[tuple[int, int, int]] = []  # the link failures taken down, as net.failures
        self.windows = 0
        self.wall_s = 0.0
        self.cpu_s = 0.0
        self.ready_wait_s = 0.0

    @property
    def events(self) -> int:
        return sum(lp.events for lp in self.lps)

    def _transport(self) -> Transport:
        if self.comm is None:
            return LocalTransport(self.lps, self.recorder)
        return MpiTransport(self.lps[0], self.comm, self.net.nodes, Wormhole.merge_reports, self.format_finished,
                            self._tracked())

    def _tracked(self):
        """Completions -> those the boundary hook must see at once, in their order (under Wormhole,
        of every flow whose start it was told of: all but the NVLink flows completed by rates); None: none."""
        if self.accel is None:
            return None
        handed_of = {}  # NVLink flow by rates sent from here -> its domain's flows handed over to packets
        for lp in self.lps:
            for nd in lp.nodes:
                for fid, model in (getattr(nd, "flow_models", None) or {}).items():
                    handed_of[fid] = model.packet_fids
        handed = handed_of.get

        def tracked(records: list) -> list:
            return [rec for rec in records if (h := handed(rec[0])) is None or rec[0] in h]
        return tracked

    def run(self, until_ps: int | None = None, on_flows=None, on_pfc=None, progress: bool | None = False,
            expected_ps: int | None = None) -> Run:
        """Run to the end or ``until_ps``; ``progress``: show a bar (None: on a terminal) up to
        ``expected_ps`` (the expected end; default the stop time)."""
        stop_ps = until_ps if until_ps is not None else self.scn.config.simulator_stop_ps
        n_flows = len(self.scn.flows)
        n_ops = self.n_ops
        finish = self.finish_ps
        start = self.start_ps
        op_times = self.op_times
        bar = _Progress(min(stop_ps, expected_ps or stop_ps), progress)
        accel = self.accel
        lps = self.lps
        failures = [f for f in self.net.failures if f[0] < stop_ps]  # (t_ps, a, b): boundaries of their own
        watch = self.comm is None  # under MPI only the empty-heap case is detected (byte counters are per rank)
        # the stall watchdog: next boundary it looks at, progress mark seen last, and since when
        next_check_ps = self.stall_check_ps
        last_mark: tuple[int, int, int] | None = None
        since_ps = 0
        n_finished = n_ops_done = 0  # completions and op records so far (all ranks)

        if self.comm is not None and self.comm.rank != 0:
            on_flows = None  # the outputs are rank 0's; the others get every completion at the end

        rows: tuple[list, list] = ([], [])  # (under MPI) int64 rows of completions and op records, for after the loop

        def take_records(got) -> None:
            """Completions, PFC and op records handed on (under MPI, completions and op records in batches;
            on ranks other than 0, all at the end as int64 rows: into ``finish``, ``start`` and ``op_times``
            after the loop, off every window's path)."""
            done = got.finished
            if isinstance(done, np.ndarray):  # (under MPI) int64 rows
                if len(done):
                    rows[0].append(done)
            elif done:
                for fid, t_fin, t_start in done:
                    finish[fid] = t_fin
                    start[fid] = t_start
            if len(done) and on_flows:
                if got.lines is None:
                    on_flows(done)
                else:
                    on_flows(done, got.lines)
            if got.pfc and on_pfc:
                on_pfc(got.pfc)
            ops = got.ops
            if isinstance(ops, np.ndarray):
                if len(ops):
                    rows[1].append(ops)
            else:
                for op, t0, t1 in ops:
                    op_times[op] = (t0, t1)

        def on_boundary(t_ps: int, got) -> bool:
            """The boundary hooks, in order: completions, PFC and op records; acceleration;
            link failures; progress; then the stall watchdog (in-process LPs)."""
            nonlocal next_check_ps, last_mark, since_ps, n_finished, n_ops_done
            self.t_end_ps = t_ps  # kept if the run is interrupted
            take_records(got)
            n_fin, n_op = got.counts if got.counts is not None else (len(got.finished), len(got.ops))
            n_finished += n_fin
            n_ops_done += n_op
            if accel is not None:
                accel.on_boundary(t_ps, got.finished if got.tracked is None else got.tracked, got.report)
            else:
                for lp in lps:
                    lp.flow_start_log.clear()
            while failures and failures[0][0] <= t_ps:
                self.failures_applied.append(failures[0])
                self._link_down(t_ps, *failures.pop(0)[1:])
            if bar.enabled is not False:
                bar.update(t_ps, self.events)
            if n_finished == n_flows and n_ops_done == n_ops:
                return True
            if watch and t_ps >= next_check_ps:
                next_check_ps = t_ps + self.stall_check_ps
                mark = self._progress_mark()
                if mark != last_mark or (accel is not None and accel.next_wake_ps() < INF_PS):
                    # progress, or a group fast-forwarded (its bytes move at its wake)
                    last_mark, since_ps = mark, t_ps
                elif t_ps - since_ps >= self.stall_ps and self._active_flows():
                    self.stuck = self._stuck_report(t_ps, stuck_text.no_byte_reason(t_ps - since_ps))
                    return True
            return False

        def quiet_until() -> int:
            """The first boundary ``on_boundary`` must see though nothing reached it: the watchdog's next
            look, or the acceleration hook's next sample."""
            q = next_check_ps if watch else INF_PS
            return min(q, accel.quiet_until_ps()) if accel is not None else q

        transport = self._transport()
        self.ready_wait_s = transport.ready()  # ranks finish building at different times: not the run's
        wall0, cpu0 = time.perf_counter(), time.process_time()
        try:
            with _cyclic_gc_paused():
                self.t_end_ps, self.windows = run_windows(transport, self.window_ps, stop_ps, on_boundary,
                                                          accel, [f[0] for f in failures], take_records,
                                                          quiet_until)
            self.sync_wall_s = transport.sync_s
        except BaseException:  # interrupted: where the last window run whole ended (maybe past a boundary)
            self.t_end_ps = max([self.t_end_ps] + [lp.quiet_end_ps for lp in lps])
            raise
        finally:
            for done in rows[0]:
                fids = done[:, 0].tolist()
                finish.update(zip(fids, done[:, 1].tolist()))
                start.update(zip(fids, done[:, 2].tolist()))
            for ops in rows[1]:
                op_times.update(zip(ops[:, 0].tolist(), zip(ops[:, 1].tolist(), ops[:, 2].tolist())))
            bar.close()
            self.wall_s = time.perf_counter() - wall0
            self.cpu_s = time.process_time() - cpu0
        self.complete = len(finish) == n_flows and len(op_times) == n_ops
        # a configured window's samples go on to its end (ns-3's monitor keeps its run going), the rest holds
        self.finish_monitors(stop_ps if self.complete and self.monitor_window is not None
                             and self.monitor_window.last_k < INF_PS else self.t_end_ps)
        if not self.complete:
            if accel is not None:
                accel.settle(self.t_end_ps)  # fast-forwarded bytes, counted up to the stop
            cut_off = sorted(f for f in self.net.no_path if f not in finish)
            if self.stuck is None and cut_off:
                self.stuck = self._stuck_report(self.t_end_ps, stuck_text.no_path_reason(cut_off, self.net.failed))
            elif self.stuck is None and self.t_end_ps < stop_ps:
                self.stuck = self._stuck_report(self.t_end_ps, stuck_text.NO_EVENT)
        return self

    # -- monitors ------------------------------------------------------------------------
    def _carried(self, port_bytes: dict, t0_ps: int, d_ps: int, counted: bool = True) -> None:
        for sampler in self.samplers:
            sampler.carried(port_bytes, t0_ps, d_ps, counted)

    def finish_monitors(self, t_stop_ps: int) -> None:
        """Take the monitors' last samples at the run's end ``t_stop_ps`` (once)."""
        if self.monitor_window is not None and not self._monitors_done:
            self._monitors_done = True
            for sampler in self.samplers:
                sampler.finish(t_stop_ps)

    def monitor_data(self) -> MonitorData | None:
        """The monitors' samples of every LP (every rank's under MPI: a collective), None when off."""
        if self.monitor_window is None:
            return None
        self.finish_monitors(self.t_end_ps)  # (an interrupted run: to its last boundary)
        parts = [sampler.result() for sampler in self.samplers]
        if self.comm is not None:
            parts = [d for ds in self.comm.allgather(parts) for d in ds]
        return merge_monitors(parts)

    def _link_down(self, t_ps: int, a: int, b: int) -> None:
        """Fail link ``a``-``b`` at boundary ``t_ps`` on this process's LPs; under Wormhole
        every frozen group wakes first and the groups follow the new routes."""
        if self.accel is not None:
            self.accel.reroute(t_ps, lambda: self.net.fail_link(a, b, t_ps))
        else:
            self.net.fail_link(a, b, t_ps)

    # -- progress watchdog -------------------------------------------------------------
    def _progress_mark(self) -> tuple[int, int, int]:
        return (sum(h.bytes_delivered for h in self._hosts), len(self.finish_ps), len(self.op_times))

    def _active_flows(self) -> list:
        """``(flow id, src, dst, acked bytes, size)`` of flows started and not finished (this process's hosts;
        for NVLink flows given rates, the bytes sent by their rate so far)."""
        out = []
        for h in self._hosts:
            for fid, qp in chain(h.sqp.items(), h.parked.items()):
                out.append((fid, qp.host.node_id, qp.dst, qp.snd_una, qp.size))
        if self.accel is not None:  # NVLink flows given rates have no QP: bytes sent so far, by their rate
            for dom in self.accel.fluid_domains.values():
                for fid in list(dom.active) + list(dom.start_ps):
                    f = self.scn.flows[fid]
                    if f.src in self._local_ids:
                        out.append((fid, f.src, f.dst, dom.sent_bytes(fid, self.t_end_ps), f.size_bytes))
        return sorted(out)

    def _stuck_report(self, t_ps: int, why: str) -> dict:
        return stuck_text.stuck_report(t_ps, why, self.net.nodes, self._active_flows())

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


def _plan_owner(scn: Scenario, parts: int, comm, rank0: bool):
    """A METIS plan of ``parts`` LPs (rank 0 makes it and says when some LPs will be idle; every rank gets it)."""
    plan: PartitionPlan | None = None
    idle: str | None = None
    if rank0:
        plan = make_plan(scn.topology, parts, scn.flows, scn.config.packet_payload_bytes)
        idle = plan.warning("ranks" if comm is not None else "LPs")
    if idle:
        print(f"pwormhole: warning: {idle}", file=sys.stderr)
    if comm is not None:
        plan = comm.bcast(plan, root=0)
    return plan


def _load_memo(scn: Scenario, accel, memo_cache: str | None):
    """The memo cache of a Wormhole run with memoization (loaded from ``memo_cache`` when given), else None."""
    if accel is None or not accel.memo:
        return None
    fp = config_fingerprint(scn.config, accel)
    if not memo_cache:
        return MemoCache(fp)
    eff = accel.resolved(scn.config.cc_mode == CC_HPCC)
    limits = MemoLimits.of(scn, eff.samples, eff.sample_ps or WindowGrid(scn.topology).window_ps)
    return MemoCache.load(memo_cache, fp, lambda m: print(f"pwormhole: warning: {m}", file=sys.stderr), limits)


def simulate(scn: Scenario, out_dir: str, until_ps: int | None = None, seed: int = 1, n_lps: int = 1,
             owner: list[int] | None = None, progress: bool | None = False, quiet: bool = False, comm=None,
             plot: bool = False, accel=None, memo_cache: str | None = None, record_windows: bool = False,
             report: bool = False) -> dict:
    """Simulate ``scn`` and write ``fct.txt``, ``pfc.txt`` and ``summary.json``
    under ``out_dir``; returns the summary dict.

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
        record_windows: run one in-process LP per indivisible unit and write
            ``windows.npz`` (:mod:`pwormhole.partition.record`; not under MPI).
        report: also write ``report.html`` (:mod:`pwormhole.report.page`), last.

    With a workload DAG (training jobs) the run also writes ``collectives.csv``
    and adds ``iterations`` (ns), ``iteration_time_ns`` (the last one),
    ``collectives`` {count, total_time_ns} and ``gpus`` (per-GPU compute,
    communication and exposed communication, ns) to the summary
    (:mod:`pwormhole.report.training`).

    Output names are checked before simulating (:func:`~pwormhole.report.writer.check_outputs`).
    ``summary.json`` is written before the optional outputs (``collectives.csv``,
    ``timeline.png``, the memo cache); a write error does not stop the run nor
    the other outputs: the file stays as ``NAME.part`` and ``summary.json``
    lists the errors known when it is written in ``output_errors``.

    Raises:
        InputError: unwritable output folder, clashing output names or an inconsistent scenario.
        OutputError: an output could not be written (after everything else was).
        StuckError: the run could not make progress (after the outputs were written).
    """
    rank0 = comm is None or comm.rank == 0
    if accel is None or not accel.memo:
        memo_cache = None
    if record_windows and comm is not None:
        raise InputError("--record-windows runs in one process (one LP per unit); run it without mpiexec")
    names = output_names(scn, plot, record_windows, report)
    err = None
    if rank0:
        try:
            prepare_out_dir(out_dir)
            check_outputs(out_dir, names, scn.config.source, memo_cache)
        except InputError as e:
            err = e
    _agree(comm, err)  # (before the plan's broadcast)
    parts = comm.size if comm is not None else n_lps
    plan = None
    grid = None
    recorder = None
    if record_windows:
        grid = WindowGrid(scn.topology)
        n_lps = max(grid.unit) + 1 if grid.unit else 1
        owner = list(grid.unit)
        recorder = Recorder(n_lps)
    elif owner is None and parts > 1:
        plan = _plan_owner(scn, parts, comm, rank0)
        owner = plan.owner
        grid = plan.grid
    try:
        memo = _load_memo(scn, accel, memo_cache)
        sim = Run(scn, seed, n_lps, owner, comm, accel, memo, grid, recorder)
        standalone_ns = StandaloneFct(sim.net).all_ns(scn.flows)
        show = progress if rank0 else False
        sampled = accel is not None and accel.sample_ps > 0  # (--sample)
        expected = (expected_end_ps(scn, standalone_ns)
                    if show is not False or sim.monitor_window is not None or sampled else None)
        if sim.monitor_window is not None and expected is not None:
            _check_monitor_size(sim, expected)
        span_ps = (expected or 0) - traffic_start_ps(scn.flows, scn.dag)
        if sampled and rank0 and accel.sample_ps >= span_ps:
            print(f"pwormhole: warning: --sample {format_time(accel.sample_ps)} is not shorter than the "
                  f"{format_time(span_ps)} the run is expected to last: Wormhole takes at most one sample and "
                  "fast-forwards nothing", file=sys.stderr)
    except InputError as e:
        err = e
    _agree(comm, err)
    writer = RunWriter(scn, out_dir, standalone_ns, rank0)
    run_id = secrets.token_hex(8) if rank0 else ""  # binds the folder's files to this run's summary.json
    head = {"mode": "packet" if accel is None else "wormhole", "ranks": sim.n_lps, "scenario": scn.name,
            "cc": scn.config.cc_name, "nvlink_cc": scn.config.nvlink_cc, "seed": seed,
            "engine": compiled.engine(), "run_id": run_id, "outputs": names, "inputs": inputs_summary(scn)}
    if rank0:
        claim(out_dir, names, memo_cache)
    if comm is not None and rank0:
        _arm_partial_summary(sim, writer, head)
    interrupted = None
    try:
        sim.format_finished = writer.fct_lines  # under MPI each rank makes the lines of its completions
        if recorder is not None:  # the lines' seconds apart: shared by the ranks under MPI
            writer.fct_lines = recorder.timed(writer.fct_lines)  # type: ignore[method-assign]
            if sim.accel is not None:  # Wormhole's seconds on the heaps apart: each rank has its own
                wh = sim.accel
                recorder.local_clock = lambda: wh.lp_work_s
        sim.run(until_ps, writer.on_flows, writer.on_pfc, show, expected)
    except (KeyboardInterrupt, Terminated) as e:
        interrupted = e  # write what we have, then let the CLI exit 130 / 143
    except BaseException:
        writer.abandon()  # a failed run: its files stay as .part
        raise
    writer.commit()
    monitors = sim.monitor_data()
    if recorder is not None and grid is not None:
        try:
            recorder.finish(grid.unit, [(ln.a, ln.b, ln.delay_ps) for ln in scn.topology.links],
                            sim.window_ps, run_id).save(os.path.join(out_dir, RECORD_NAME))
        except OutputError as e:
            writer.errors.append(str(e))
    summary, training, events_by_rank = _summarize(sim, writer, head, accel, plan, interrupted)
    if monitors is not None and sim.monitor_window is not None:
        summary["monitors"] = monitor_summary(sim.monitor_window, monitors)
    if rank0:
        writer.finish(summary, training, plot, memo, memo_cache)
        if monitors is not None:
            _write_monitors(sim, monitors, writer, out_dir)
        if report and writer.errors:
            writer.errors.append(f"{os.path.join(out_dir, REPORT_NAME)} not written: the run's outputs are not "
                                 "all there")
        elif report:
            from .report.page import write_report  # matplotlib: loaded only when a report is asked for
            try:
                write_report(out_dir)
            except OutputError as e:
                writer.errors.append(str(e))
        if not quiet:
            print(readable(summary))
            if summary["ranks"] > 1:
                print(rank_table(events_by_rank, comm is not None))
            if not sim.complete:
                print(f"stopped at {format_time(summary['sim_time_ps'])} with "
                      f"{len(scn.flows) - len(writer.fcts_ns)} flows unfinished")
    _raise_outcome(writer.errors, interrupted, sim.stuck, out_dir)
    return summary


def _agree(comm, err: InputError | None) -> None:
    """Raise ``err``; under MPI, an :class:`AgreedInputError` on every rank when any rank has one (the
    first rank's message, naming the rank unless every rank found the same), else nothing."""
    if comm is None:
        if err is not None:
            raise err
        return
    failed = [(r, e) for r, e in enumerate(comm.allgather(None if err is None else str(err))) if e is not None]
    if failed:
        r, msg = failed[0]
        everywhere = len(failed) == comm.size and all(e == msg for _, e in failed)
        raise AgreedInputError(msg if everywhere else f"rank {r}: {msg}")


def _check_monitor_size(sim: Run, expected_ps: int) -> None:
    """InputError, before simulating, when ``link_util.csv`` could grow past the config's
    ``monitor_limit_bytes`` over the run's expected span (the standalone critical path: at least)."""
    cfg = sim.scn.config
    w = sim.monitor_window
    assert w is not None
    bound = link_util_bound_bytes(w, 2 * len(sim.scn.topology.links), expected_ps)
    if bound > cfg.monitor_limit_bytes:
        need_ps = -(-w.link_interval_ps * bound // cfg.monitor_limit_bytes)
        need_ps = -(-need_ps // w.interval_ps) * w.interval_ps  # a multiple of the sampling interval
        raise InputError(f"{LINK_UTIL_NAME} could grow to {bound / 1e9:,.1f} GB ({2 * len(sim.scn.topology.links)} "
                         f"link directions x a row per {format_time(w.link_interval_ps)} over the "
                         f"{format_time(expected_ps - w.start_ps)} the run is expected to last), over the limit of "
                         f"{cfg.monitor_limit_bytes / 1e9:g} GB: a --link-interval of {format_time(need_ps)} or "
                         "more, or a larger --monitor-limit")


def _write_monitors(sim: Run, data: MonitorData, writer: RunWriter, out_dir: str) -> None:
    """``qlen.txt`` and ``link_util.csv`` (:mod:`pwormhole.report.monitor`); a write error goes to the writer's."""
    w = sim.monitor_window
    assert w is not None
    if not data.samples:
        print(f"pwormhole: warning: the queue monitor took no sample: it starts at {format_time(w.start_ps)} "
              f"(QLEN_MON_START), at or after the run's end; {w.qlen_name} is empty", file=sys.stderr)
    for write, name in ((write_qlen, w.qlen_name), (write_link_util, LINK_UTIL_NAME)):
        try:
            write(os.path.join(out_dir, name), data, w)
        except OutputError as e:
            writer.errors.append(str(e))


def _arm_partial_summary(sim: Run, writer: RunWriter, head: dict) -> None:
    """Under MPI, rank 0's summary for the stop watchdog (:mod:`pwormhole.sync.interrupt`), when the
    ranks cannot stop together: the completions handed to rank 0 by then (up to the last batch:
    ``sync.mpi.FLUSH_WINDOWS`` windows or ``FLUSH_S`` seconds; the ranks' held ones are lost), no
    counters (they are per rank)."""
    def write_partial(signum: int, reason: str) -> None:
        writer.write_partial_summary({**head, "complete": False, "sim_time_ps": sim.t_end_ps,
                                      **fct_summary(len(sim.scn.flows), writer.fcts_ns, writer.slowdowns),
                                      "interrupted": signal.Signals(signum).name, "aborted": reason})

    interrupt.set_partial_writer(write_partial)


def _summarize(sim: Run, writer: RunWriter, head: dict, accel, plan, interrupted):
    """``(summary, training report or None, events by rank)`` of a run that ended; under MPI the
    counters are reduced over the ranks (the same collectives on every rank, in this order)."""
    scn = sim.scn
    comm = sim.comm
    rank0 = comm is None or comm.rank == 0
    counters = sim.counters()
    events_by_rank = [lp.events for lp in sim.lps]
    sync_by_rank = [sim.sync_wall_s]
    ready_s = sim.ready_wait_s
    cpu_s = sim.cpu_s
    if comm is not None:
        counters = {k: allreduce_sum(comm, v) for k, v in counters.items()}
        cpu_s = allreduce_sum(comm, cpu_s)
        events_by_rank = comm.allgather(sim.lps[0].events)
        sync_by_rank = comm.allgather(sim.sync_wall_s)
        ready_s = max(comm.allgather(sim.ready_wait_s))
    summary = run_summary({**head, "complete": sim.complete}, sim.last_end_ps() if sim.complete else sim.t_end_ps,
                          sim.wall_s, events_by_rank, sim.windows, sim.window_ps, max(sync_by_rank),
                          fct_summary(len(scn.flows), writer.fcts_ns, writer.slowdowns), counters)
    summary["cpu_s"] = cpu_s
    if comm is not None:
        summary["ready_wait_s"] = ready_s
    if sim.accel is not None:
        wh = sim.accel
        st = wh.stats()
        shared = st["fluid_shared_flows"]  # this rank's domains
        handed_fids = [f for d in wh.fluid_domains.values() for f in d.packet_fids if f in sim.finish_ps]
        handed = len(handed_fids)
        handed_bytes = sum(scn.flows[f].size_bytes for f in handed_fids)
        handed_at = [d.handed_ps for d in wh.fluid_domains.values() if d.handed_ps is not None]  # (its own rank's)
        if comm is not None:
            shared = allreduce_sum(comm, shared)
            handed = allreduce_sum(comm, handed)
            handed_bytes = allreduce_sum(comm, handed_bytes)
            handed_at = [t for part in comm.allgather(handed_at) for t in part]
        if shared and rank0:
            print(f"pwormhole: warning: {FLUID_SHARED_WARNING.format(shared)}", file=sys.stderr)
        if handed_at and rank0:
            print("pwormhole: warning: " + HANDED_OVER_WARNING.format(
                len(handed_at), len(wh.fluid_domains), min(handed_at) / 1e9, handed), file=sys.stderr)
        if st["hpcc_crowded_nic_flows"] and rank0:
            crowded = CROWDED_NIC_WARNING.format(st["hpcc_crowded_nic_flows"], HPCC_CROWDED_NIC)
            print(f"pwormhole: warning: {crowded}", file=sys.stderr)
        flow_time = sum(sim.finish_ps[f] - sim.start_ps[f] for f in sim.finish_ps) or 1
        summary.update(accel_summary(st, accel, wh.theta, wh.samples, wh.sample_ps, wh.min_span_packets, flow_time,
                                     sum(1 for f in sim.finish_ps if f in wh.fluid_fids) - handed, shared,
                                     handed, wh.nvlink_model, wh.nvlink_packets_why))
        if handed_at:
            summary["nvlink_servers_by_packets"] = len(handed_at)
            summary["nvlink_by_packets_from_ns"] = min(handed_at) // 1000
        if wh.cc_limits:
            summary["accel_cc_limits"] = wh.cc_limits
        rated_bytes = sum(scn.flows[f].size_bytes for f in sim.finish_ps if f in wh.fluid_fids) - handed_bytes
        summary.update(packet_events_estimate(summary, st["skipped_bytes"] + rated_bytes,
                                              scn.config.packet_payload_bytes))
    training = None
    if scn.dag is not None and (scn.dag.collectives or scn.dag.gpu_of_host):  # a training job or a Chakra trace
        training = training_report(scn.dag, sim.op_times, sim.start_ps, sim.finish_ps)
        summary.update(training_summary(training, sim.complete))
    if plan is not None:
        summary["partition"] = {"edge_cut_bytes": plan.edge_cut_bytes, "imbalance": plan.imbalance,
                                "cut_links": len(plan.cut_links)}
    if sim.net.failures:
        summary["link_failures"] = [{"at_ns": t // 1000, "a": a, "b": b, "applied": (t, a, b) in sim.failures_applied}
                                    for t, a, b in sim.net.failures]
        missed = [f for f in summary["link_failures"] if not f["applied"]]
        if missed and rank0 and interrupted is None and sim.stuck is None:
            print(f"pwormhole: warning: {len(missed)} of {len(sim.net.failures)} link failures came after the run "
                  f"ended at {format_time(summary['sim_time_ps'])} and were not applied (the first: link "
                  f"{missed[0]['a']}-{missed[0]['b']} at {format_time(missed[0]['at_ns'] * 1000)}); the answer is "
                  "the intact fabric's: give an earlier time (LINK_DOWN and --link-down count from the traffic's "
                  "start)", file=sys.stderr)
    if interrupted is not None:
        summary["complete"] = False
        summary["interrupted"] = "SIGTERM" if isinstance(interrupted, Terminated) else "SIGINT"
    if sim.stuck is not None:
        if comm is not None:  # every rank stops at the same boundary; each knows its own flows and ports
            stuck_text.merge_ranks(sim.stuck, comm.allgather((sim.stuck["flows"], sim.stuck["paused_ports"])))
        summary["stuck"] = sim.stuck
    if writer.errors:
        summary["output_errors"] = list(writer.errors)
    return summary, training, events_by_rank


def _raise_outcome(errors: list[str], interrupted, stuck: dict | None, out_dir: str) -> None:
    """The end of a run that is not a success: the signal first (KeyboardInterrupt, Terminated), then
    StuckError, then OutputError; a write error behind another outcome is printed."""
    write_error = OutputError("; ".join(errors)) if errors else None
    if write_error is not None and (interrupted is not None or stuck is not None):  # their exit status wins
        print(f"pwormhole: error: {write_error}", file=sys.stderr)
    if interrupted is not None:
        raise interrupted
    if stuck is not None:
        raise StuckError(stuck_text.stuck_message(stuck, out_dir))
    if write_error is not None:
        raise write_error
