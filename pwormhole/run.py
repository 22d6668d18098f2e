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

import time
from collections.abc import Callable
from itertools import chain
from typing import Any

import numpy as np

from .accel.wormhole import Wormhole
from .engine.lp import INF_PS, LogicalProcess
from .gcpause import cyclic_gc_paused
from .net.build import Network
from .net.dispatch import handler_table
from .partition.grid import WindowGrid, check_cut_links, round_robin_owner
from .report import stuck as stuck_text
from .report.monitor import (
    MonitorData,
    MonitoredLP,
    window_of,
)
from .report.monitor import merge as merge_monitors
from .scenario import Scenario
from .sync.local import LocalTransport
from .sync.mpi import MpiTransport
from .sync.windows import Transport, run_windows

PROGRESS_AFTER_S = 2.0
def expected_end_ps(scn: Scenario, standalone_ns: list[int]) -> int:
    """When a run of ``scn`` is expected to end, were no flow slowed by another: the last flow list
    start plus its standalone FCT, or a workload DAG's critical path with standalone flow times."""
    if scn.dag is not None:
        return scn.dag.critical_path_ps([ns * 1000 for ns in standalone_ns])
    return max((f.start_ps + ns * 1000 for f, ns in zip(scn.flows, standalone_ns)), default=0)


class _Progress:
    """tqdm bar over simulated time up to ``total_ps`` (the expected end, or a function giving it when
    the bar is first shown; raised to the time reached when the run goes past it), shown only when
    the run lasts more than a few seconds."""

    def __init__(self, total_ps: int | Callable[[], int], enabled: bool | None):
        self.enabled = enabled
        self.bar: Any = None  # a tqdm bar once shown (tqdm ships no types)
        self.t0 = time.monotonic()
        self.total_of = total_ps if callable(total_ps) else None
        self.total_ps = 1 if callable(total_ps) else max(1, total_ps)
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
            from tqdm import tqdm  # (loaded only for a bar: most runs end before one shows)

            if self.total_of is not None:
                self.total_ps = max(1, self.total_of())
            self.bar = tqdm(total=self.total_ps / 1e6, unit="us sim", dynamic_ncols=True,
                            disable=None if self.enabled is None else False, leave=False,
                            bar_format="{l_bar}{bar}| {n:.0f}/{total:.0f} us sim "
                                       "[{elapsed}, ~{remaining} left{postfix}]")
        if t_ps > self.total_ps:  # slower than expected (contention): the bar ends at the time reached
            self.total_ps = t_ps
            self.bar.total = t_ps / 1e6
        self.bar.n = t_ps / 1e6
        self.bar.set_postfix_str(f"{events / (now - self.t0):,.0f} events/s", refresh=True)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


class _Records:
    """The records a run's boundaries hand on (:class:`~pwormhole.sync.windows.Exchanged`): completions
    into ``run.finish_ps`` and ``run.start_ps``, op records into ``run.op_times``, both to the outputs'
    ``on_flows`` and ``on_pfc`` too. Under MPI completions and op records come in batches as int64 rows
    (on ranks other than 0 all of them at the end): kept as rows, into the dicts only by
    :meth:`settle`, off every window's path."""

    def __init__(self, run: Run, on_flows, on_pfc):
        self.finish, self.start, self.op_times = run.finish_ps, run.start_ps, run.op_times
        self.on_flows, self.on_pfc = on_flows, on_pfc
        self.rows: tuple[list, list] = ([], [])  # int64 rows of completions and of op records
        self.n_flows, self.n_ops = len(run.scn.flows), run.n_ops
        self.n_finished = self.n_ops_done = 0  # so far, all ranks

    def take(self, got) -> None:
        """The records of one boundary (and the rest held back, when the loop ends)."""
        done = got.finished
        if isinstance(done, np.ndarray):  # (under MPI) int64 rows
            if len(done):
                self.rows[0].append(done)
        elif done:
            finish, start = self.finish, self.start
            for fid, t_fin, t_start in done:
                finish[fid] = t_fin
                start[fid] = t_start
        if len(done) and self.on_flows:
            if got.lines is None:
                self.on_flows(done)
            else:
                self.on_flows(done, got.lines)
        if got.pfc and self.on_pfc:
            self.on_pfc(got.pfc)
        ops = got.ops
        if isinstance(ops, np.ndarray):
            if len(ops):
                self.rows[1].append(ops)
        else:
            for op, t0, t1 in ops:
                self.op_times[op] = (t0, t1)
        n_fin, n_op = got.counts if got.counts is not None else (len(got.finished), len(got.ops))
        self.n_finished += n_fin
        self.n_ops_done += n_op

    def all_done(self) -> bool:
        """Every flow finished and every DAG op logged, on every rank."""
        return self.n_finished == self.n_flows and self.n_ops_done == self.n_ops

    def settle(self) -> None:
        """The rows kept into the dicts (after the loop)."""
        for done in self.rows[0]:
            fids = done[:, 0].tolist()
            self.finish.update(zip(fids, done[:, 1].tolist()))
            self.start.update(zip(fids, done[:, 2].tolist()))
        for ops in self.rows[1]:
            self.op_times.update(zip(ops[:, 0].tolist(), zip(ops[:, 1].tolist(), ops[:, 2].tolist())))


class _StallWatchdog:
    """Stops a run that makes no progress: ``run.stall_ps`` of simulated time without a byte delivered, a
    flow finished or an op logged while flows are active (a frozen group's bytes count at its wake),
    looked at every ``run.stall_check_ps``; it then leaves a stuck report in ``run.stuck``."""

    def __init__(self, run: Run):
        self.run = run
        self.next_look_ps = run.stall_check_ps
        self.last_mark: tuple[int, int, int] | None = None  # progress seen last, and since when
        self.since_ps = 0

    def stuck(self, t_ps: int) -> bool:
        """Whether the run is stuck at boundary ``t_ps`` (its report then in ``run.stuck``)."""
        run = self.run
        if t_ps < self.next_look_ps:
            return False
        self.next_look_ps = t_ps + run.stall_check_ps
        mark = run._progress_mark()
        if mark != self.last_mark or (run.accel is not None and run.accel.next_wake_ps() < INF_PS):
            self.last_mark, self.since_ps = mark, t_ps
        elif t_ps - self.since_ps >= run.stall_ps and run._active_flows():
            run.stuck = run._stuck_report(t_ps, stuck_text.no_byte_reason(t_ps - self.since_ps))
            return True
        return False


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
                            self._tracked(), Wormhole.sample_of)

    def _tracked(self):
        """Completions -> those the boundary hook must see at once, in their order (under Wormhole,
        of every flow whose start it was told of: all but the NVLink flows completed by rates); None: none."""
        if self.accel is None:
            return None
        handed_of = {}  # NVLink flow by rates sent from here -> its domain's flows handed over to packets
        for lp in self.lps:
            for nd in lp.nodes:
                for fid, model in (getattr(nd, "flow_models", None) or {}).items():
                    packet_fids = getattr(model, "packet_fids", None)  # (the ring-step model's are all tracked)
                    if packet_fids is not None:
                        handed_of[fid] = packet_fids
        handed = handed_of.get

        def tracked(records: list) -> list:
            return [rec for rec in records if (h := handed(rec[0])) is None or rec[0] in h]
        return tracked

    def run(self, until_ps: int | None = None, on_flows=None, on_pfc=None, progress: bool | None = False,
            expected_ps: int | Callable[[], int] | None = None) -> Run:
        """Run to the end or ``until_ps``; ``progress``: show a bar (None: on a terminal) up to
        ``expected_ps`` (the expected end, or a function giving it, called only if the bar shows;
        default the stop time). At each boundary, in this order:
        the records (:class:`_Records`), acceleration, link failures, progress, the end test, then
        the stall watchdog (:class:`_StallWatchdog`, in-process LPs)."""
        stop_ps = until_ps if until_ps is not None else self.scn.config.simulator_stop_ps
        if self.comm is not None and self.comm.rank != 0:
            on_flows = None  # the outputs are rank 0's; the others get every completion at the end
        records = _Records(self, on_flows, on_pfc)
        bar = _Progress((lambda: min(stop_ps, expected_ps() or stop_ps)) if callable(expected_ps)
                        else min(stop_ps, expected_ps or stop_ps), progress)
        accel = self.accel
        lps = self.lps
        failures = [f for f in self.net.failures if f[0] < stop_ps]  # (t_ps, a, b): boundaries of their own
        watchdog = _StallWatchdog(self) if self.comm is None else None  # (under MPI byte counters are per rank)

        def on_boundary(t_ps: int, got) -> bool:
            self.t_end_ps = t_ps  # kept if the run is interrupted
            records.take(got)
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
            if records.all_done():
                return True
            return watchdog is not None and watchdog.stuck(t_ps)

        def quiet_until() -> int:
            """The first boundary ``on_boundary`` must see though nothing reached it: the watchdog's next
            look, or the acceleration hook's next sample."""
            q = watchdog.next_look_ps if watchdog is not None else INF_PS
            return min(q, accel.quiet_until_ps()) if accel is not None else q

        transport = self._transport()
        self.ready_wait_s = transport.ready()  # ranks finish building at different times: not the run's
        wall0, cpu0 = time.perf_counter(), time.process_time()
        try:
            with cyclic_gc_paused():
                self.t_end_ps, self.windows = run_windows(transport, self.window_ps, stop_ps, on_boundary,
                                                          accel, [f[0] for f in failures], records.take,
                                                          quiet_until)
            self.sync_wall_s = transport.sync_s
        except BaseException:  # interrupted: where the last window run whole ended (maybe past a boundary)
            self.t_end_ps = max([self.t_end_ps] + [lp.quiet_end_ps for lp in lps])
            raise
        finally:
            records.settle()
            bar.close()
            self.wall_s = time.perf_counter() - wall0
            self.cpu_s = time.process_time() - cpu0
        finish = self.finish_ps
        self.complete = len(finish) == len(self.scn.flows) and len(self.op_times) == self.n_ops
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
