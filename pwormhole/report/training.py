"""Reports of a workload-DAG run: iteration times, collectives, per-GPU breakdown.

Definitions:

* iteration ``k`` ends when the last op of that iteration ends on any GPU;
  its time is the end minus the end of iteration ``k-1`` (0 for the first);
* a collective instance starts when its first flow or mark starts and ends
  when its last member is done; algorithm bandwidth = S / time, bus bandwidth
  = algorithm bandwidth x the nccl-tests factor (``2(N-1)/N`` for
  all-reduce, ``(N-1)/N`` for all-gather, reduce-scatter and all-to-all);
* per GPU: ``compute_ns`` = time its compute stream is busy;
  ``comm_ns`` = time during which at least one of its collectives is in
  progress (from its first op in it to its done mark); ``exposed_comm_ns`` =
  the part of ``comm_ns`` not overlapped by compute.
"""

from __future__ import annotations

import numpy as np

from ..outfiles import save_figure
from ..units import PS_PER_NS, axis_time_unit
from ..workload.collectives import BUS_FACTOR
from ..workload.dag import OP_COMPUTE, OP_FLOW, Dag
from .summary import write_csv_atomic


class OpTimes:
    """Per op of a run's DAG, as int64 arrays: ``start_ps`` (-1: not started; a flow from its start,
    a compute op or mark from ``op_times``) and ``end_ps`` (-1: not ended); and the DAG's ``kind``,
    ``host`` and ``collective`` (the index of the collective whose ops it is in, -1: none) as arrays."""

    def __init__(self, dag: Dag, op_times: dict, flow_start: dict, flow_finish: dict):
        n = len(dag)
        self.start_ps = np.full(n, -1, dtype=np.int64)
        self.end_ps = np.full(n, -1, dtype=np.int64)
        self.kind = np.array(dag.kind, dtype=np.int8)
        self.host = np.array(dag.host, dtype=np.int64)
        self.collective = np.full(n, -1, dtype=np.int64)
        for ci, c in enumerate(dag.collectives):
            self.collective[c.first_op:c.last_op] = ci
        if op_times:
            ops = np.fromiter(op_times, np.int64, len(op_times))
            span = np.array(list(op_times.values()), dtype=np.int64).reshape(-1, 2)
            mine = self.kind[ops] != OP_FLOW  # (a flow's times are its own)
            self.start_ps[ops[mine]] = span[mine, 0]
            self.end_ps[ops[mine]] = span[mine, 1]
        flow_op = np.array(dag.flow_op, dtype=np.int64)
        for of_flow, column in ((flow_start, self.start_ps), (flow_finish, self.end_ps)):
            if of_flow:
                n_flows = len(of_flow)
                column[flow_op[np.fromiter(of_flow, np.int64, n_flows)]] = np.fromiter(of_flow.values(), np.int64,
                                                                                        n_flows)

    def first_in_collectives(self, dag: Dag, ended: bool, leave_out=()) -> list[dict[int, tuple[int, int]]]:
        """Per collective, per host: ``(start_ps, op)`` of the earliest op of the collective on the host
        (the lower op id among equal starts) among those that ``ended`` (else those that started),
        ``leave_out`` (op ids) aside."""
        take = (self.collective >= 0) & ((self.end_ps if ended else self.start_ps) >= 0)
        if len(leave_out):
            take[np.asarray(leave_out, dtype=np.int64)] = False
        ops = np.nonzero(take)[0]
        out: list[dict[int, tuple[int, int]]] = [{} for _ in dag.collectives]
        if not len(ops):
            return out
        host = self.host[ops]
        coll = self.collective[ops]
        start = self.start_ps[ops]
        order = np.lexsort((ops, start, host, coll))
        coll, host, start, ops = coll[order], host[order], start[order], ops[order]
        first = np.ones(len(ops), dtype=bool)
        first[1:] = (coll[1:] != coll[:-1]) | (host[1:] != host[:-1])
        for ci, h, t, op in zip(coll[first].tolist(), host[first].tolist(), start[first].tolist(),
                                ops[first].tolist()):
            out[ci][h] = (t, op)
        return out


def _union(intervals: list[tuple[int, int]]) -> list[tuple[int, int]]:
    out: list[list[int]] = []
    for a, b in sorted(intervals):
        if out and a <= out[-1][1]:
            if b > out[-1][1]:
                out[-1][1] = b
        else:
            out.append([a, b])
    return [(a, b) for a, b in out]


def _length(iv) -> int:
    return sum(b - a for a, b in iv)


def _overlap(a_iv, b_iv) -> int:
    """Total length of the intersection of two sorted disjoint interval lists."""
    i = j = total = 0
    while i < len(a_iv) and j < len(b_iv):
        lo = max(a_iv[i][0], b_iv[j][0])
        hi = min(a_iv[i][1], b_iv[j][1])
        if hi > lo:
            total += hi - lo
        if a_iv[i][1] < b_iv[j][1]:
            i += 1
        else:
            j += 1
    return total


def training_report(dag: Dag, op_times: dict, flow_start: dict, flow_finish: dict,
                    times: OpTimes | None = None) -> dict:
    """Iteration times, collective rows and per-GPU breakdown of a finished (or stopped) run
    (``times``: its :class:`OpTimes`, when made already).

    Returns a dict with ``iterations`` (list of ns), ``collectives`` (list of
    row dicts), ``gpus`` (list of per-GPU dicts) and ``intervals`` (per GPU:
    ``compute`` and ``comm`` interval lists in ps, for plots).
    """
    gpu_of = dag.gpu_of_host
    n_gpus = len(gpu_of) or len(set(dag.host))
    compute_iv: dict[int, list] = {}
    times = times or OpTimes(dag, op_times, flow_start, flow_finish)
    ended = times.end_ps >= 0
    last = np.zeros(dag.iterations, dtype=np.int64)  # each iteration's last end (0: none ended)
    np.maximum.at(last, np.asarray(dag.iteration_of, dtype=np.int64)[ended], times.end_ps[ended])
    ends = last.tolist()
    busy = np.nonzero((times.kind == OP_COMPUTE) & ended & (times.end_ps > times.start_ps))[0]
    for op, t0, t1 in zip(busy.tolist(), times.start_ps[busy].tolist(), times.end_ps[busy].tolist()):
        compute_iv.setdefault(dag.host[op], []).append((t0, t1))
    iterations = []
    prev = 0
    for e in ends:
        iterations.append(max(0, (e - prev + 500) // 1000))
        prev = max(prev, e)
    rows = []
    comm_iv: dict[int, list] = {}
    firsts = times.first_in_collectives(dag, ended=True)
    for c, first in zip(dag.collectives, firsts):
        starts = {h: t for h, (t, _) in first.items()}
        t0 = min(starts.values()) if starts else None
        got = [op_times.get(d) for d in c.done_ops]
        done = [d for d in got if d is not None]
        if t0 is None or len(done) < len(got):
            continue
        t1 = max(d[1] for d in done)
        for d_op, d in zip(c.done_ops, done):
            h = dag.host[d_op]
            if d[1] > starts.get(h, d[1]):
                comm_iv.setdefault(h, []).append((starts[h], d[1]))
        n = len(c.group)
        dt = t1 - t0
        algbw = c.size_bytes * 8 / (dt / 1e12) / 1e9 if dt > 0 else 0.0
        rows.append({"name": c.name, "kind": c.kind, "iteration": c.iteration, "members": n,
                     "size_bytes": c.size_bytes, "start_ns": t0 // 1000, "end_ns": t1 // 1000,
                     "time_ns": (dt + 500) // 1000, "algbw_gbps": round(algbw, 3),
                     "busbw_gbps": round(algbw * BUS_FACTOR[c.kind](n) if n > 1 else 0.0, 3)})
    gpus = []
    intervals = {}
    for h, g in sorted(gpu_of.items(), key=lambda kv: kv[1]):
        cu = _union(compute_iv.get(h, []))
        mu = _union(comm_iv.get(h, []))
        comm = _length(mu)
        gpus.append({"gpu": g, "host": h, "compute_ns": _length(cu) // 1000, "comm_ns": comm // 1000,
                     "exposed_comm_ns": (comm - _overlap(cu, mu)) // 1000})
        intervals[g] = {"compute": cu, "comm": mu}
    return {"iterations": iterations, "collectives": rows, "gpus": gpus, "intervals": intervals,
            "n_gpus": n_gpus}


COLLECTIVE_COLUMNS = ("name", "kind", "iteration", "members", "size_bytes", "start_ns", "end_ns", "time_ns",
                      "algbw_gbps", "busbw_gbps")


def write_collectives_csv(path: str, rows: list[dict]) -> None:
    """``collectives.csv``: one row per collective instance (columns :data:`COLLECTIVE_COLUMNS`), atomically."""
    write_csv_atomic(path, COLLECTIVE_COLUMNS, rows)


TIMELINE_COLUMNS = ("gpu", "kind", "start_ns", "end_ns")


def write_timeline_csv(path: str, report: dict) -> None:
    """``timeline.csv``: per GPU, the intervals its compute stream is busy (``compute``) and those with
    at least one of its collectives in progress (``comm``), atomically."""
    rows = [{"gpu": g, "kind": kind, "start_ns": a // 1000, "end_ns": b // 1000}
            for g in sorted(report["intervals"]) for kind in ("compute", "comm")
            for a, b in report["intervals"][g][kind]]
    write_csv_atomic(path, TIMELINE_COLUMNS, rows)


def plot_timeline(path: str, report: dict, title: str = "", max_gpus: int = 64) -> None:
    """Per-GPU Gantt chart (compute and communication intervals) to a PNG."""
    import matplotlib  # heavy (~1 s): loaded only when a plot is drawn
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    gpus = sorted(report["intervals"])[:max_gpus]
    end_ns = max((iv[kind][-1][1] for iv in report["intervals"].values() for kind in ("compute", "comm")
                  if iv[kind]), default=0) / PS_PER_NS
    unit, ns = axis_time_unit(end_ns)
    per = ns * PS_PER_NS  # ps per axis unit
    fig, ax = plt.subplots(figsize=(10, 1.2 + 0.25 * len(gpus)))
    for row, g in enumerate(gpus):
        iv = report["intervals"][g]
        ax.broken_barh([(a / per, (b - a) / per) for a, b in iv["compute"]], (row - 0.4, 0.38),
                       color="tab:blue", label="compute" if row == 0 else None)
        ax.broken_barh([(a / per, (b - a) / per) for a, b in iv["comm"]], (row + 0.02, 0.38),
                       color="tab:orange", label="communication" if row == 0 else None)
    ax.set_xlim(0, max(end_ns, 1) / ns * 1.02)
    ax.set_yticks(range(len(gpus)))
    ax.set_yticklabels([f"GPU {g}" for g in gpus], fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel(f"simulated time ({unit})")
    ax.set_title(title or "per-GPU timeline", loc="right")
    ax.legend(loc="lower left", bbox_to_anchor=(0, 1.0), ncol=2, fontsize=8, frameon=False)  # above the bars
    fig.tight_layout()
    save_figure(fig, path)
