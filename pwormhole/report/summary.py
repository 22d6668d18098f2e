"""``summary.json`` (a contract read by later tools) and the readable summary.

Keys: ``mode``, ``ranks`` (MPI processes; 1 without MPI), ``lps`` (logical processes: the
ranks, or ``--lps``/``--record-windows``'s in one process), ``sim_time_ps``, ``wall_s``, ``events``,
``events_per_s``, ``flows``, ``flows_finished``, ``fct_ns`` {mean, p50, p99,
max}, ``slowdown`` {mean, p50, p99} (FCT / standalone FCT), ``bytes_sent``
(unique payload bytes put on the wire by senders), ``bytes_delivered``
(payload bytes received in order), ``drops`` (buffer admission drops),
``pfc_pauses`` (PFC pause frames sent), plus ``complete``, ``windows``,
``window_ps``, ``ecn_marks``, ``cnps``, ``nacks``, ``lost_packets`` (link
errors), ``retransmitted_bytes``, ``scenario``, ``cc``, ``seed``, ``engine`` (``compiled`` or
``pure (why)``: :func:`pwormhole.compiled.engine`), ``inputs`` (:func:`inputs_summary`),
``cpu_s`` (CPU time of the run, summed over ranks), under MPI ``ready_wait_s`` (the longest
wait of a rank for the others' set-up, before ``wall_s`` starts); in Wormhole mode ``eventless_bytes``
and ``packet_events_est`` (:func:`packet_events_estimate`); for
training workloads also ``iterations``, ``iteration_time_ns``,
``collectives`` and ``gpus`` (see :mod:`pwormhole.report.training`);
``output_errors`` (one line per output file that could not be written) only
when there were some.
"""

from __future__ import annotations

import csv
import json

import numpy as np

from ..outfiles import atomic


def percentiles(values) -> dict:
    """mean, p50, p99, max of a sequence (nearest-rank percentiles); zeros when empty."""
    if not len(values):
        return {"mean": 0.0, "p50": 0.0, "p99": 0.0, "max": 0.0}
    a = np.sort(np.asarray(values, dtype=float))
    rank = lambda q: float(a[min(len(a) - 1, int(np.ceil(q * len(a))) - 1)])  # noqa: E731
    return {"mean": float(a.mean()), "p50": rank(0.50), "p99": rank(0.99), "max": float(a[-1])}


def fct_summary(flows: int, fcts_ns: list[int], slowdowns: list[float]) -> dict:
    """``flows``, ``flows_finished``, ``fct_ns`` and ``slowdown`` of a run."""
    return {"flows": flows, "flows_finished": len(fcts_ns), "fct_ns": percentiles(fcts_ns),
            "slowdown": {k: v for k, v in percentiles(slowdowns).items() if k != "max"}}


def fct_summary_by_link(nvlink: list[bool], fids: list[int], fcts_ns: list[int], slowdowns: list[float]) -> dict:
    """``nic`` and ``nvlink``: :func:`fct_summary` of the flows that cross the NICs' fabric and of those
    inside a server's NVSwitches (``nvlink[fid]``), apart; nothing when the run has no NVLink flow
    (a training run's FCT figures are otherwise those of its many NVLink flows)."""
    on_nvlink = np.asarray(nvlink, dtype=bool)
    if not on_nvlink.any():
        return {}
    of_finished = on_nvlink[np.asarray(fids, dtype=np.int64)]
    fcts, slowdowns_a = np.asarray(fcts_ns, dtype=np.int64), np.asarray(slowdowns, dtype=float)
    out = {}
    for name, want in (("nic", False), ("nvlink", True)):
        sel = of_finished == want
        out[name] = fct_summary(int(np.count_nonzero(on_nvlink == want)), fcts[sel], slowdowns_a[sel])
    return out


def inputs_summary(scn) -> dict:
    """``inputs``: what a run of scenario ``scn`` read: its command line, topology (file or builder)
    and size, config file, output file names."""
    t, c = scn.topology, scn.config
    return {"command": scn.command, "topology": t.source or t.name, "hosts": len(t.hosts),
            "switches": len(t.switches), "links": len(t.links), "gpus_per_server": t.gpus_per_server,
            "config": c.source, "flow_file": c.flow_file, "fct_file": c.fct_output_name,
            "pfc_file": c.pfc_output_name, "qlen_file": c.qlen_mon_file}


def run_summary(head: dict, sim_time_ps: int, wall_s: float, events_by_rank: list[int], windows: int,
                window_ps: int, sync_wall_s: float, fcts: dict, counters: dict) -> dict:
    """The summary of a run: ``head`` (``mode``, ``ranks``, ``scenario``, ``cc``, ``seed``,
    ``complete``), timing, ``fcts`` (:func:`fct_summary`) and the ``counters``."""
    events = sum(events_by_rank)
    return {
        **head,
        "sim_time_ps": sim_time_ps,
        "wall_s": wall_s,
        "events": events,
        "events_per_s": events / wall_s if wall_s > 0 else 0.0,
        "windows": windows,
        "window_ps": window_ps,
        "sync_wall_s": sync_wall_s,
        "events_by_rank": events_by_rank,
        **fcts,
        **counters,
    }


def accel_summary(stats: dict, accel, theta: float, samples: int, sample_ps: int, min_span_packets: int,
                  flow_time_ps: int, fluid_flows: int, fluid_shared_flows: int, nvlink_packet_flows: int,
                  nvlink_model: str, nvlink_packets_reason: str | None) -> dict:
    """The Wormhole keys: ``stats`` of the run, the settings ``accel`` and the resolved ones
    (``nvlink_model``: how NVLink flows ran, ``rates``, ``packets`` or ``none``; under ``rates``,
    ``fluid_flows`` finished by rates and ``nvlink_packet_flows`` by packets, in servers where
    the rates stopped holding; ``follow`` only where followers ran: HPCC, with memo and skips;
    ``memo_successors``: HPCC groups that took their last steady state again, a ring's next step,
    ``memo_successors_after_end`` of them after the whole step before it ended;
    ``successors`` only where that ran: HPCC, with memo and skips; with ``ring_steps``,
    ``ring_steps_carried`` flows carried without packets, ``ring_steps_handed_back`` of them
    handed back to packets)."""
    return {"skips": stats["skips"], "skipped_time_fraction": min(1.0, stats["skipped_flow_ps"] / flow_time_ps),
            "memo_hits": stats["memo_hits"], "memo_misses": stats["memo_misses"],
            "memo_follows": stats["memo_follows"], "memo_follows_steady": stats["memo_follows_steady"],
            "memo_successors": stats["memo_successors"],
            "memo_successors_after_end": stats["memo_successors_after_end"],
            "ring_steps_carried": stats["ring_steps_carried"],
            "ring_steps_handed_back": stats["ring_steps_handed_back"],
            "memo_entries": stats["memo_entries"], "memo_bytes": stats["memo_bytes"],
            "wakes_interrupted": stats["wakes_interrupted"], "part_skips": stats["part_skips"],
            "line_rate_freezes": stats["line_rate_freezes"],
            "hpcc_crowded_nic_flows": stats["hpcc_crowded_nic_flows"],
            "nvlink_model": nvlink_model,
            "nvlink_packets_reason": nvlink_packets_reason,
            "fluid_flows": fluid_flows,
            "nvlink_packet_flows": nvlink_packet_flows,
            "fluid_shared_flows": fluid_shared_flows,
            "accel": {"theta": theta, "window_samples": samples, "sample_ps": sample_ps,
                      "min_span_packets": min_span_packets, "margin_rtts": accel.margin_rtts, "skip": accel.skip,
                      "memo": accel.memo, "follow": accel.follow and stats["follow_on"],
                      "successors": accel.successors and stats["successors_on"],
                      "ring_steps": accel.ring_steps and stats["ring_steps_on"], "parts": accel.parts,
                      "line_rate": accel.line_rate, "nvlink": accel.nvlink}}


def packet_events_estimate(summary: dict, eventless_bytes: int, scenario_events: int, scenario_bytes: int) -> dict:
    """``eventless_bytes`` (payload a Wormhole run moved without events: fast-forwarded, replayed from
    the memo cache, or NVLink flows given rates) and ``packet_events_est``: the events a packet-level
    run would take, ``scenario_events`` (:func:`pwormhole.report.dryrun.packet_events_estimate`: per
    packet and hop of its path) for the share of the scenario's ``scenario_bytes`` this run sent
    (null when it sent nothing)."""
    est = None
    if summary["bytes_sent"] > 0 and scenario_bytes > 0:
        est = round(scenario_events * min(1.0, summary["bytes_sent"] / scenario_bytes))
    return {"eventless_bytes": eventless_bytes, "packet_events_est": est}


def training_summary(report: dict, complete: bool) -> dict:
    """The keys of a training workload (:func:`pwormhole.report.training.training_report`)."""
    return {"iterations": report["iterations"] if complete else [],
            "iteration_time_ns": report["iterations"][-1] if complete else None,
            "collectives": {"count": len(report["collectives"]),
                            "total_time_ns": sum(r["time_ns"] for r in report["collectives"])},
            "gpus": report["gpus"]}


def rank_table(events_by_rank: list[int], mpi: bool) -> str:
    """Events per rank (or LP) and their share."""
    events = sum(events_by_rank)
    lines = [("rank" if mpi else "LP  ") + "  events      share"]
    for r, ev in enumerate(events_by_rank):
        lines.append(f"{r:4d}  {ev:10d}  {ev / events * 100 if events else 0:5.1f}%")
    return "\n".join(lines)


def write_json_atomic(path: str, data: dict) -> None:
    """``data`` as indented JSON, written as ``PATH.part`` and renamed (OutputError on a write error)."""
    with atomic(path) as fh:
        json.dump(data, fh, indent=2, sort_keys=False)
        fh.write("\n")


def write_csv_atomic(path: str, columns, rows: list[dict]) -> None:
    """Rows as CSV with a header of ``columns`` (a key a row lacks: an empty cell; one it has beyond them:
    left out), written as ``PATH.part`` and renamed (OutputError on a write error)."""
    with atomic(path) as fh:
        w = csv.writer(fh)
        w.writerow(columns)
        w.writerows([[row.get(c, "") for c in columns] for row in rows])


def approx(n: float) -> str:
    """``n`` to about 2 significant digits in words: 20 million, 2.0 billion, 123 million."""
    for word, k in (("billion", 1e9), ("million", 1e6), ("thousand", 1e3)):
        if n >= k:
            return f"{n / k:.1f} {word}" if n < 10 * k else f"{n / k:,.0f} {word}"
    return f"{n:.0f}"


def readable(summary: dict) -> str:
    """A short human summary of a run."""
    f = summary["fct_ns"]
    s = summary["slowdown"]
    lines = [
        f"scenario {summary['scenario']}  mode {summary['mode']}  cc {summary['cc']}  ranks {summary['ranks']}"
        + (f"  LPs {summary['lps']}" if summary.get("lps", summary["ranks"]) != summary["ranks"] else "")
        + ("" if summary["complete"] else "  (INCOMPLETE)"),
        f"flows finished   {summary['flows_finished']} / {summary['flows']}",
        f"simulated time   {summary['sim_time_ps'] / 1e9:.6f} ms",
        f"FCT (us)         mean {f['mean'] / 1e3:.3f}  p50 {f['p50'] / 1e3:.3f}  p99 {f['p99'] / 1e3:.3f}  "
        f"max {f['max'] / 1e3:.3f}" if summary["flows_finished"] else "FCT              none finished",
        f"slowdown         mean {s['mean']:.3f}  p50 {s['p50']:.3f}  p99 {s['p99']:.3f}"
        if summary["flows_finished"] else "slowdown         none finished",
        f"bytes sent/delivered {summary['bytes_sent']} / {summary['bytes_delivered']}   drops {summary['drops']}   "
        f"PFC pauses {summary['pfc_pauses']}   ECN marks {summary['ecn_marks']}",
        f"wall {summary['wall_s']:.2f} s   events {summary['events']}   {summary['events_per_s']:.0f} events/s   "
        f"engine {summary.get('engine', '?')}",
    ]
    if summary["mode"] == "wormhole":
        line = (f"Wormhole         skips {summary.get('skips', 0)}  skipped flow-time "
                f"{summary.get('skipped_time_fraction', 0) * 100:.1f}%  memo hits/misses "
                f"{summary.get('memo_hits', 0)}/{summary.get('memo_misses', 0)}")
        if summary.get("ring_steps_carried"):
            line += f"  ring steps carried {summary['ring_steps_carried']}"
        if summary.get("nvlink_model") == "rates":
            line += (f"  NVLink flows by rates {summary.get('fluid_flows', 0)}, by packets "
                     f"{summary.get('nvlink_packet_flows', 0)}")
            if summary.get("fluid_shared_flows"):
                line += f" ({summary['fluid_shared_flows']} approximate: shared a port under --nvlink-cc nic)"
        elif summary.get("nvlink_model") == "packets":
            line += "  NVLink flows by packets" + (f" ({summary['nvlink_packets_reason']})"
                                                   if summary.get("nvlink_packets_reason") else "")
        lines.append(line)
        if summary.get("accel_cc_limits"):
            lines.append(f"Wormhole limits  {summary['accel_cc_limits']}")
        est = summary.get("packet_events_est")
        if est and est > 1.05 * summary["events"]:
            lines.append(f"events           {summary['events']:,} simulated stand for ~{approx(est)} packet-level "
                         f"events (estimate, ~{est / max(1, summary['events']):,.0f}x; "
                         f"{summary['eventless_bytes'] / 1e6:,.0f} MB moved without events)")
    at = next(i for i, line in enumerate(lines) if line.startswith("slowdown")) + 1
    for name, what in (("nvlink", "NVLink flows"), ("nic", "NIC flows")):
        part = summary.get(name)
        if part:
            pf, ps = part["fct_ns"], part["slowdown"]
            lines.insert(at, f"{what:<17}{part['flows_finished']} / {part['flows']}: " + (
                f"FCT (us) p50 {pf['p50'] / 1e3:.3f}  p99 {pf['p99'] / 1e3:.3f}  max {pf['max'] / 1e3:.3f}; "
                f"slowdown p50 {ps['p50']:.3f}  p99 {ps['p99']:.3f}" if part["flows_finished"] else "none finished"))
    if summary.get("iterations"):
        its = summary["iterations"]
        gpus = summary.get("gpus") or []
        lines.insert(3, "iteration time   " + ", ".join(f"{t / 1e6:.6f} ms" for t in its))
        if gpus:
            n = len(gpus)
            comp = sum(g["compute_ns"] for g in gpus) / n
            comm = sum(g["comm_ns"] for g in gpus) / n
            exp = sum(g["exposed_comm_ns"] for g in gpus) / n
            idle = max(0.0, sum(its) - comp - exp)  # waiting on others: the pipeline bubble
            whole = "iteration" if len(its) == 1 else f"{len(its)} iterations"
            lines.insert(4, f"per GPU (mean)   compute {comp / 1e6:.6f} ms + exposed communication "
                            f"{exp / 1e6:.6f} ms + idle {idle / 1e6:.6f} ms = {whole}  (communication in all "
                            f"{comm / 1e6:.6f} ms)")
        c = summary.get("collectives") or {}
        lines.insert(5, f"collectives      {c.get('count', 0)}")
    return "\n".join(lines)
