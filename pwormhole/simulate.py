"""Simulate a scenario and write its outputs: :func:`simulate` plans the LPs
(:mod:`pwormhole.partition`), loads the memo cache, builds a :class:`~pwormhole.run.Run`, runs it
with a :class:`~pwormhole.report.writer.RunWriter` as its output hooks, reduces the counters over the
ranks and writes the summary (:mod:`pwormhole.report.summary`), the monitors and the report.
Set-up mistakes are agreed on by every MPI rank before the run starts.
"""

from __future__ import annotations

import os
import secrets
import signal
import sys
from dataclasses import dataclass

import numpy as np

from . import compiled
from .accel.config import HPCC_CROWDED_NIC, AccelConfig
from .accel.memo import MemoCache, MemoLimits, config_fingerprint
from .config import CC_HPCC
from .errors import AgreedInputError, InputError, OutputError, StuckError, Terminated
from .gcpause import cyclic_gc_paused
from .outfiles import RECORD_NAME, REPORT_NAME
from .partition.grid import WindowGrid
from .partition.plan import PartitionPlan, make_plan
from .partition.record import Recorder
from .report import stuck as stuck_text
from .report.dryrun import packet_events_estimate as scenario_packet_events
from .report.monitor import (
    LINK_UTIL_NAME,
    MonitorData,
    link_util_bound_bytes,
    monitor_summary,
    write_link_util,
    write_qlen,
)
from .report.page import write_report
from .report.per_layer import per_layer_rows
from .report.summary import (
    accel_summary,
    fct_summary,
    fct_summary_by_link,
    inputs_summary,
    packet_events_estimate,
    rank_table,
    readable,
    run_summary,
    training_summary,
)
from .report.trace import DEFAULT_TRACE_LIMIT_BYTES, TRACE_NAME, check_trace_size, write_trace
from .report.training import OpTimes, training_report
from .report.writer import RunWriter, check_outputs, claim, output_names, prepare_out_dir
from .run import Run, expected_end_ps
from .scenario import Scenario
from .standalone import StandaloneFct
from .sync import interrupt
from .sync.mpi import allreduce_sum
from .units import format_time
from .workload.flows import traffic_start_ps

FLUID_SHARED_WARNING = ("--nvlink fluid with --nvlink-cc nic: {} NVLink flows shared a port with another flow's "
                        "data; their FCTs are approximate (max-min rates, not DCQCN's unequal shares: 1.9% to 23% "
                        "per flow on small patterns; TP rings and symmetric patterns on one NVSwitch are within 0.4%)")

HANDED_OVER_WARNING = ("{} of {} servers ran their NVLink flows as packets, the first from {:.3f} ms on: a "
                       "collective's flows there would not share the NVSwitch ports max-min (as when its members "
                       "start apart); exact, but Wormhole skips none of those packets ({} NVLink flows)")

PFC_STARVED_FRACTION = 0.25
PFC_STARVED_WARNING = ("{} switches keep under a quarter of their buffer shared: switch {} holds {:.1f} MB of PFC "
                       "headroom and reserve for its {} ports of its {:.0f} MB (3 x rate x delay a port, as HPCC's "
                       "third.cc); their ports pause their peers at short queues (at every packet with nothing left); "
                       "set BUFFER_SIZE {} or more in a --config file for a quarter of it shared")

CROWDED_NIC_WARNING = ("HPCC: {} flows were fast-forwarded while {} or more flows left their NIC; there the packet "
                       "run's own per-flow FCTs move far under changes that should not matter (on the per-layer "
                       "GPT-7B iteration, 82% at p99 for a 1% change of HPCC's additive step: bench/RESULTS.md, "
                       "'Overlapping rings under HPCC'): read the FCT distribution and the iteration time, and "
                       "judge this scenario's per-flow errors against its own spread with "
                       "'pwormhole compare --spread 3'")


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


@dataclass
class RunSettings:
    """How to run a scenario (:func:`simulate`): what :func:`pwormhole.options.prepare_run` makes of a
    run's options.

    Attributes:
        until_ps: stop time (None: the config's ``SIMULATOR_STOP_TIME``).
        seed: seed of the per-node random streams.
        n_lps: number of in-process logical processes (the answer does not depend on it).
        owner: node id -> LP index (None: a METIS plan when there is more than one LP).
        accel: an :class:`~pwormhole.accel.wormhole.AccelConfig` for Wormhole
            mode (None: packet mode, the reference).
        memo_cache: a memo cache file to load before and save after the run
            (Wormhole mode with memoization).
        record_windows: run one in-process LP per indivisible unit and write
            ``windows.npz`` (:mod:`pwormhole.partition.record`; not under MPI).
        plot: with a workload DAG, also write ``timeline.png`` (per-GPU Gantt chart).
        report: also write ``report.html`` (:mod:`pwormhole.report.page`), last.
        progress: show a progress bar (None: only on a terminal, after a few seconds).
        quiet: do not print the readable summary.
        trace: also write ``trace.json`` (:mod:`pwormhole.report.trace`), refused before simulating
            when it could pass ``trace_limit_bytes``.
    """
    until_ps: int | None = None
    seed: int = 1
    n_lps: int = 1
    owner: list[int] | None = None
    accel: AccelConfig | None = None
    memo_cache: str | None = None
    record_windows: bool = False
    plot: bool = False
    report: bool = False
    progress: bool | None = False
    quiet: bool = False
    trace: bool = False
    trace_limit_bytes: int = DEFAULT_TRACE_LIMIT_BYTES


def simulate(scn: Scenario, out_dir: str, settings: RunSettings | None = None, comm=None, **fields) -> dict:
    """Simulate ``scn`` as ``settings`` say (or :class:`RunSettings` of the keyword ``fields``) and
    write ``fct.txt``, ``pfc.txt`` and ``summary.json`` under ``out_dir`` (created; must be writable,
    checked before simulating); ``comm``: an MPI communicator (one LP per rank; rank 0 writes the
    files). Returns the summary dict.

    With a workload DAG (training jobs) the run also writes ``collectives.csv`` and ``timeline.csv``
    (and ``per_layer.csv`` for a training spec: :mod:`pwormhole.report.per_layer`) and adds
    ``iterations`` (ns), ``iteration_time_ns`` (the last one),
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
    with cyclic_gc_paused():
        return _simulate(scn, out_dir, settings, comm, fields)


def _simulate(scn: Scenario, out_dir: str, settings: RunSettings | None, comm, fields: dict) -> dict:
    if settings is None:
        settings = RunSettings(**fields)
    elif fields:
        raise TypeError("simulate() takes a RunSettings or its fields as keywords, not both")
    until_ps, seed, n_lps, owner, accel = (settings.until_ps, settings.seed, settings.n_lps, settings.owner,
                                           settings.accel)
    memo_cache, record_windows, plot, report = (settings.memo_cache, settings.record_windows, settings.plot,
                                                settings.report)
    progress, quiet = settings.progress, settings.quiet
    rank0 = comm is None or comm.rank == 0
    if accel is None or not accel.memo:
        memo_cache = None
    if record_windows and comm is not None:
        raise InputError("--record-windows runs in one process (one LP per unit); run it without mpiexec")
    names = output_names(scn, plot, record_windows, report, settings.trace)
    err = None
    if rank0:
        try:
            prepare_out_dir(out_dir)
            check_outputs(out_dir, names, scn.config.source, memo_cache, scn.input_files())
            if settings.trace:
                check_trace_size(scn, settings.trace_limit_bytes)
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
        standalone_ns = StandaloneFct(sim.net).all_ns(scn.flows, scn.flow_columns(), scn.host_pairs())
        nvlink = sim.net.nvlink_flags(scn.host_pairs())  # (the routes before any link failure)
        starved = sim.net.pfc_starved(PFC_STARVED_FRACTION)
        if starved and rank0:
            node, ports, held, buf = starved[0]
            enough = -(-int(held / (1 - PFC_STARVED_FRACTION)) // 2**20) + 1  # (a quarter shared, in whole MB)
            text = PFC_STARVED_WARNING.format(len(starved), node, held / 2**20, ports, buf / 2**20, enough)
            print(f"pwormhole: warning: {text}", file=sys.stderr)
        show = progress if rank0 else False
        sample_ps = accel.sample_ps if accel is not None else 0  # (--sample; 0: the window)
        sampled = sample_ps > 0
        # (the progress bar alone asks for it only if it shows: most runs end first)
        expected = (expected_end_ps(scn, standalone_ns) if sim.monitor_window is not None or sampled else None)
        if sim.monitor_window is not None and expected is not None:
            _check_monitor_size(sim, expected)
        span_ps = (expected or 0) - traffic_start_ps(scn.flows, scn.dag)
        if sampled and rank0 and sample_ps >= span_ps:
            print(f"pwormhole: warning: --sample {format_time(sample_ps)} is not shorter than the "
                  f"{format_time(span_ps)} the run is expected to last: Wormhole takes at most one sample and "
                  "fast-forwards nothing", file=sys.stderr)
    except InputError as e:
        err = e
    _agree(comm, err)
    writer = RunWriter(scn, out_dir, standalone_ns, rank0)
    run_id = secrets.token_hex(8) if rank0 else ""  # binds the folder's files to this run's summary.json
    head = {"mode": "packet" if accel is None else "wormhole", "ranks": comm.size if comm is not None else 1,
            "lps": sim.n_lps, "scenario": scn.name,
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
        sim.run(until_ps, writer.on_flows, writer.on_pfc, show,
                expected if expected is not None or show is False else lambda: expected_end_ps(scn, standalone_ns))
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
    summary, training, events_by_rank = _summarize(sim, writer, head, accel, plan, interrupted, nvlink)
    if monitors is not None and sim.monitor_window is not None:
        summary["monitors"] = monitor_summary(sim.monitor_window, monitors)
    if rank0:
        writer.finish(summary, training, plot, memo, memo_cache)
        if monitors is not None:
            _write_monitors(sim, monitors, writer, out_dir)
        if settings.trace:
            try:
                write_trace(os.path.join(out_dir, TRACE_NAME), scn, sim.op_times, sim.start_ps, sim.finish_ps, nvlink,
                            run_id)
            except OutputError as e:
                writer.errors.append(str(e))
        if report and writer.errors:
            writer.errors.append(f"{os.path.join(out_dir, REPORT_NAME)} not written: the run's outputs are not "
                                 "all there")
        elif report:
            try:
                write_report(out_dir, scn.topology, writer.fcts())
            except OutputError as e:
                writer.errors.append(str(e))
            except InputError as e:  # the run's own files refused by the report: said, the run's exit kept
                writer.errors.append(f"{os.path.join(out_dir, REPORT_NAME)} not written: {e}")
        if not quiet:
            print(readable(summary))
            if summary["lps"] > 1:
                print(rank_table(events_by_rank, comm is not None))
            if not sim.complete:
                first_ps = traffic_start_ps(scn.flows, scn.dag)
                before = (f" (before the first flow starts at {format_time(first_ps)}: the stop time is absolute, "
                          "as HPCC's SIMULATOR_STOP_TIME)" if summary["sim_time_ps"] <= first_ps else "")
                print(f"stopped at {format_time(summary['sim_time_ps'])} with "
                      f"{len(scn.flows) - len(writer.fcts_ns)} flows unfinished{before}")
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


def _summarize(sim: Run, writer: RunWriter, head: dict, accel, plan, interrupted, nvlink: list[bool]):
    """``(summary, training report or None, events by rank)`` of a run that ended (``nvlink``: per flow,
    whether it runs inside a server); under MPI the counters are reduced over the ranks (the same
    collectives on every rank, in this order)."""
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
    summary.update(fct_summary_by_link(nvlink, writer.fids, writer.fcts_ns, writer.slowdowns))
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
        finish = sim.finish_ps
        flow_time = (sum(finish.values()) - sum(map(sim.start_ps.__getitem__, finish))) or 1
        rated = wh.fluid_fids & finish.keys()  # (finished, by rates or handed over)
        summary.update(accel_summary(st, accel, wh.theta, wh.samples, wh.sample_ps, wh.min_span_packets, flow_time,
                                     len(rated) - handed, shared,
                                     handed, wh.nvlink_model, wh.nvlink_packets_why))
        if handed_at:
            summary["nvlink_servers_by_packets"] = len(handed_at)
            summary["nvlink_by_packets_from_ns"] = min(handed_at) // 1000
        if wh.cc_limits:
            summary["accel_cc_limits"] = wh.cc_limits
        sizes = scn.flow_columns().size_bytes
        rated_bytes = int(sizes[np.fromiter(rated, np.int64, len(rated))].sum()) - handed_bytes
        summary.update(packet_events_estimate(summary, st["skipped_bytes"] + rated_bytes + st["ring_steps_bytes"],
                                              scenario_packet_events(scn), int(sizes.sum())))
    training = None
    if scn.dag is not None and (scn.dag.collectives or scn.dag.gpu_of_host):  # a training job or a Chakra trace
        times = OpTimes(scn.dag, sim.op_times, sim.start_ps, sim.finish_ps)
        training = training_report(scn.dag, sim.op_times, sim.start_ps, sim.finish_ps, times)
        summary.update(training_summary(training, sim.complete))
        if scn.spec is not None and rank0:
            training["per_layer"] = per_layer_rows(scn.dag, scn.spec, sim.op_times, sim.start_ps, sim.finish_ps,
                                                   times)
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
