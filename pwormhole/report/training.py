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

from ..outfiles import save_figure
from ..units import PS_PER_NS, axis_time_unit
from ..workload.collectives import BUS_FACTOR
from ..workload.dag import OP_COMPUTE, OP_FLOW, Dag
from .summary import write_csv_atomic


def op_intervals(dag: Dag, op_times: dict, flow_start: dict, flow_finish: dict) -> list:
    """Per op, ``(start_ps, end_ps)``, or None when it did not end."""
    out: list = []
    get = op_times.get
    for op, (kind, arg) in enumerate(zip(dag.kind, dag.arg)):
        if kind == OP_FLOW:
            out.append((flow_start[arg], flow_finish[arg]) if arg in flow_finish else None)
        else:
            out.append(get(op))
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


def training_report(dag: Dag, op_times: dict, flow_start: dict, flow_finish: dict) -> dict:
    """Iteration times, collective rows and per-GPU breakdown of a finished (or stopped) run.

    Returns a dict with ``iterations`` (list of ns), ``collectives`` (list of
    row dicts), ``gpus`` (list of per-GPU dicts) and ``intervals`` (per GPU:
    ``compute`` and ``comm`` interval lists in ps, for plots).
    """
    ends = [0] * dag.iterations
    gpu_of = dag.gpu_of_host
    n_gpus = len(gpu_of) or len(set(dag.host))
    compute_iv: dict[int, list] = {}
    ivs = op_intervals(dag, op_times, flow_start, flow_finish)
    for op, iv in enumerate(ivs):
        if iv is None:
            continue
        it = dag.iteration_of[op]
        if iv[1] > ends[it]:
            ends[it] = iv[1]
        if dag.kind[op] == OP_COMPUTE and iv[1] > iv[0]:
            compute_iv.setdefault(dag.host[op], []).append(iv)
    iterations = []
    prev = 0
    for e in ends:
        iterations.append(max(0, (e - prev + 500) // 1000))
        prev = max(prev, e)
    rows = []
    comm_iv: dict[int, list] = {}
    for c in dag.collectives:
        starts: dict[int, int] = {}
        t0 = None
        for op in range(c.first_op, c.last_op):
            iv = ivs[op]
            if iv is None:
                continue
            h = dag.host[op]
            if h not in starts or iv[0] < starts[h]:
                starts[h] = iv[0]
            if t0 is None or iv[0] < t0:
                t0 = iv[0]
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
