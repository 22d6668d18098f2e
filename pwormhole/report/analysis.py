"""The numbers of a run report: FCT slowdown by flow size, PFC pauses over time, timeline rows.

Slowdown by flow size follows HPCC's ``analysis/fct_analysis.py``: slowdown =
FCT / standalone FCT, at least 1; flows sorted by size and cut into buckets of
``step_pct`` percent of the flows (``i*n//100`` to ``(i+step)*n//100``); per
bucket the largest size and the p50, p95 and p99 slowdowns, each the sorted
value at index ``int(len * p)`` (its ``get_pctl``). Unlike that script, every
flow is counted (it drops the last line of its input).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .outdir import Fcts, Pfc


class SizeBucket(NamedTuple):
    lo_pct: int
    hi_pct: int
    flows: int
    max_size_bytes: int
    p50: float
    p95: float
    p99: float


def _pctl(a: np.ndarray, p: float) -> float:
    return float(a[min(len(a) - 1, int(len(a) * p))])


def slowdowns(f: Fcts, at_least_one: bool = True) -> np.ndarray:
    """FCT / standalone FCT per flow (1 when the standalone FCT is 0), at least 1 as HPCC's
    ``fct_analysis.py`` takes it unless ``at_least_one`` is false (as ``summary.json`` does)."""
    ref = np.where(f.standalone_ns > 0, f.standalone_ns, 1)
    s = np.where(f.standalone_ns > 0, f.fct_ns / ref, 1.0)
    return np.maximum(s, 1.0) if at_least_one else s


def slowdown_by_size(f: Fcts, step_pct: int = 5) -> list[SizeBucket]:
    """The size-percentile buckets of ``fct_analysis.py`` (empty buckets left out)."""
    n = len(f.size_bytes)
    sd = slowdowns(f)
    order = np.lexsort((sd, f.size_bytes))  # by size, then slowdown (as `sort -n` on "size slowdown")
    size, sd = f.size_bytes[order], sd[order]
    out = []
    for lo in range(0, 100, step_pct):
        a, b = lo * n // 100, (lo + step_pct) * n // 100
        if b <= a:
            continue
        s = np.sort(sd[a:b])
        out.append(SizeBucket(lo, lo + step_pct, b - a, int(size[b - 1]), _pctl(s, 0.5), _pctl(s, 0.95),
                              _pctl(s, 0.99)))
    return out


def pause_counts(pfc: Pfc, start_ns: int, bins: int = 50,
                 top: int = 8) -> tuple[np.ndarray, dict[int, np.ndarray], int]:
    """PFC pause frames (kind 1) received per node over time: ``(bin edges in ns, node -> count per
    bin, nodes left out)``, the ``top`` nodes with the most pauses (switches before hosts at a tie).
    The bins run from ``start_ns`` (the traffic's start; the first pause when earlier) to the last pause."""
    pause = pfc.kind == 1
    t, nodes = pfc.time_ns[pause], pfc.node[pause]
    if not t.size:
        return np.array([start_ns, start_ns + 1]), {}, 0
    lo = min(start_ns, int(t.min()))
    edges = np.linspace(lo, max(lo + 1, int(t.max())), bins + 1)  # (the last bin holds its right edge)
    ids, counts = np.unique(nodes, return_counts=True)
    ranked = sorted(zip(ids.tolist(), counts.tolist()), key=lambda ic: (-ic[1], ic[0]))
    out = {i: np.histogram(t[nodes == i], edges)[0] for i, _ in ranked[:top]}
    return edges, out, max(0, len(ranked) - top)


def node_types(pfc: Pfc) -> dict[int, int]:
    """node -> node_type (1 switch, 0 host) as ``pfc.txt`` gives it."""
    return dict(zip(pfc.node.tolist(), pfc.node_type.tolist()))


class GpuTime(NamedTuple):
    """How one GPU spent the iterations: each ns is compute, exposed communication or idle."""
    gpu: int
    compute_ns: int
    exposed_ns: int  # communication not overlapped by compute
    idle_ns: int  # neither (the pipeline's bubble, waits)


def gpu_times(gpus: list[dict], total_ns: int) -> list[GpuTime]:
    """The summary's per-GPU ``gpus`` as parts of ``total_ns`` (the iterations, to the end of the last):
    compute + exposed communication + idle = ``total_ns`` (overlapped communication is inside compute)."""
    return [GpuTime(g["gpu"], g["compute_ns"], g["exposed_comm_ns"],
                    max(0, total_ns - g["compute_ns"] - g["exposed_comm_ns"])) for g in gpus]


class TimelineRow(NamedTuple):
    """One row of the report's timeline: a GPU, or a server's GPUs together (intervals in ns, merged)."""
    label: str
    compute: list[tuple[int, int]]
    comm: list[tuple[int, int]]
    exposed: list[tuple[int, int]]  # comm not overlapped by compute


def _merge(iv: list[tuple[int, int]]) -> list[tuple[int, int]]:
    out: list[list[int]] = []
    for a, b in sorted(iv):
        if out and a <= out[-1][1]:
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b])
    return [(a, b) for a, b in out]


def _minus(a_iv: list[tuple[int, int]], b_iv: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The parts of sorted disjoint ``a_iv`` outside sorted disjoint ``b_iv``."""
    out = []
    j = 0
    for a, b in a_iv:
        while j < len(b_iv) and b_iv[j][1] <= a:
            j += 1
        k = j
        cur = a
        while k < len(b_iv) and b_iv[k][0] < b:
            if b_iv[k][0] > cur:
                out.append((cur, b_iv[k][0]))
            cur = max(cur, b_iv[k][1])
            k += 1
        if cur < b:
            out.append((cur, b))
    return out


def timeline_rows(rows: list[dict], gpus_per_server: int, max_rows: int = 32) -> tuple[list[TimelineRow], str]:
    """Rows of ``timeline.csv`` as chart rows: one per GPU up to ``max_rows`` GPUs, else one per server
    (``gpus_per_server`` GPUs, 8 when unknown; its GPUs' intervals merged), else one per group of
    servers; returns the rows and what a row is."""
    by_gpu: dict[int, dict[str, list]] = {}
    for r in rows:
        by_gpu.setdefault(int(r["gpu"]), {"compute": [], "comm": []})[r["kind"]].append(
            (int(r["start_ns"]), int(r["end_ns"])))
    gpus = sorted(by_gpu)
    if not gpus:
        return [], "GPU"
    per = 1
    what = "GPU"
    if len(gpus) > max_rows:
        per = gpus_per_server if gpus_per_server > 0 else 8
        what = f"server ({per} GPUs)"
        while -(-len(gpus) // per) > max_rows:
            per *= 2
            what = f"group of {per} GPUs"
    out = []
    for k in range(0, len(gpus), per):
        members = gpus[k:k + per]
        comp = _merge([iv for g in members for iv in by_gpu[g]["compute"]])
        comm = _merge([iv for g in members for iv in by_gpu[g]["comm"]])
        label = f"GPU {members[0]}" if per == 1 else f"GPUs {members[0]}-{members[-1]}"
        out.append(TimelineRow(label, comp, comm, _minus(comm, comp)))
    return out, what
