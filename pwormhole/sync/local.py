"""Conservative synchronization of N logical processes inside one process.

The window grid of DESIGN.md invariant 3: with ``L`` the window, every LP
processes its events with ``t < (k+1)L``; then, at the boundary, the outboxes
are delivered (each event keeps its key) and the boundary hook runs. Empty
windows are skipped by jumping to the window holding the global minimum next
event time. Because keys are deterministic and cross-LP packets always land
in a later window, the result does not depend on the number of LPs.
"""

from __future__ import annotations

from heapq import heappush

from ..lp.engine import INF_PS, LogicalProcess, next_due_ps


def exchange(lps: list[LogicalProcess]) -> None:
    """Deliver every LP's outboxes into the peers' heaps."""
    for lp in lps:
        for peer, box in lp.outboxes.items():
            if box:
                heap = lps[peer].heap
                for ev in box:
                    heappush(heap, ev)
                box.clear()


def drain(lists) -> list:
    """Concatenate and clear per-LP record lists, sorted (same order on any LP count)."""
    out = [r for lst in lists for r in lst]
    for lst in lists:
        lst.clear()
    out.sort()
    return out


def drain_finished(lists) -> list:
    """Flow completions of all LPs, sorted by ``(finish_ps, flow id)``, lists cleared."""
    out = [r for lst in lists for r in lst]
    for lst in lists:
        lst.clear()
    out.sort(key=lambda r: (r[1], r[0]))
    return out


def run_windows(lps: list[LogicalProcess], window_ps: int, stop_ps: int, on_boundary,
                next_wake=None, cut_ps=()) -> tuple[int, int]:
    """Run the LPs window by window until no event is left before ``stop_ps``
    or ``on_boundary(t_boundary_ps, finished, pfc_records, op_records)``
    returns True; ``finished`` holds the ``(flow id, finish_ps, start_ps)`` of
    the window sorted by ``(finish_ps, flow id)``, ``pfc_records`` the PFC
    records sorted, ``op_records`` the ``(op id, start_ps, end_ps)`` of DAG
    ops sorted.

    ``next_wake()`` (optional) gives the earliest boundary at which the
    acceleration must act although no event is due (a frozen group's wake).

    ``cut_ps``: times that must be boundaries (a link failure): the window
    holding one ends there (shorter windows keep the conservative rule).

    Returns ``(last boundary time, number of windows run)``.
    """
    windows = 0
    t_end = 0
    cuts = sorted(set(cut_ps))
    while True:
        t_min = min(lp.next_time() for lp in lps)
        if next_wake is not None:
            t_min = next_due_ps(t_min, next_wake())
        if t_min >= stop_ps or t_min >= INF_PS:
            return (min(t_end, stop_ps) if t_min >= INF_PS else stop_ps), windows
        t_end = (t_min // window_ps + 1) * window_ps
        if cuts and cuts[0] <= t_end:
            t_end = cuts.pop(0)
        if t_end > stop_ps:
            t_end = stop_ps
        for lp in lps:
            lp.run_until(t_end)
        if len(lps) > 1:
            exchange(lps)
        windows += 1
        if on_boundary(t_end, drain_finished([lp.finished for lp in lps]), drain([lp.pfc_log for lp in lps]),
                       drain([lp.op_log for lp in lps])):
            return t_end, windows
