"""The window loop of docs/design.md invariant 3, over a transport.

With ``L`` the window, every LP processes its events with ``t < t_end``, ``t_end`` a multiple
of ``L``; then, at the boundary, in this order: the transport exchanges what the LPs produced
(outboxes, each event keeping its key; the minimum next event time and horizon; flow
completions, PFC and op records; acceleration reports; a signal), the boundary hook runs, and
the next window is found. A window ends at the grid line after the global *horizon*: the
earliest time a pending event can lead to one that another LP or the boundary hook sees
(``LogicalProcess.horizon_ps``; with a workload DAG, compute ops and flows carried by a flow
model lead to one no sooner than the DAG allows, so their stretches run as one window;
otherwise the horizon is the next event time and a window is one grid cell; when no pending
event leads to one at all, a window is one grid cell too, so the run ends where it did). Empty windows are
skipped, and a window ends before a frozen group's wake. Keys are deterministic, cross-LP events land
in a later window, and the horizon depends on the events alone, so the result does not depend
on the number of LPs.

Transports (:class:`Transport`): :class:`pwormhole.sync.local.LocalTransport` (N LPs in one
process) and :class:`pwormhole.sync.mpi.MpiTransport` (one LP per rank, one collective per window
in the common case). Under MPI the completions and op records reach the outputs in batches; only
their counts, and the completions the boundary hook tracks, travel every window. Acceleration
takes part in the loop through :class:`BoundaryHook`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple, Protocol

import numpy as np

from ..engine.lp import INF_PS, next_due_ps
from . import interrupt


class Exchanged(NamedTuple):
    """What every LP knows after a window's exchange."""
    next_ps: int  # global minimum next event time, before the boundary hook
    # (flow id, finish_ps, start_ps) handed to the outputs now, sorted by (finish_ps, flow id); under MPI as
    # int64 rows, in batches on rank 0, and on the other ranks every completion at the end, unsorted (likewise ops)
    finished: list | np.ndarray
    pfc: list  # PFC records, sorted (under MPI: rank 0's list; empty on the others)
    ops: list | np.ndarray  # (op id, start_ps, end_ps) of DAG ops handed on now, sorted
    report: object  # acceleration report of every LP (None without acceleration)
    signal: int  # the highest signal recorded on any rank (0: none)
    lines: list | None = None  # output lines of ``finished``, in its order, made where each flow finished (MPI)
    tracked: list | None = None  # the window's completions the boundary hook needs now, sorted (None: ``finished``)
    counts: tuple[int, int] | None = None  # the window's completions and op records (None: len of finished, ops)
    horizon_ps: int | None = None  # global horizon before the boundary hook (None: not exchanged)


class Transport(Protocol):
    """How the LPs of a run meet at window boundaries (in one process or over MPI ranks)."""

    sync_s: float  # seconds spent exchanging (collectives)

    def ready(self) -> float:
        """Every rank is built (the run's clock starts after it); returns the seconds waited."""

    def first_min(self) -> tuple[int, int]:
        """``(earliest pending event time, horizon)`` over every LP."""

    def run_until(self, t_end_ps: int) -> None:
        """Run every local LP's events before ``t_end_ps``."""

    def run_quiet(self, t_end_ps: int, window_ps: int, limit_ps: int) -> tuple[int, int]:
        """:meth:`run_until`, then, where it can, the next windows before ``limit_ps`` while nothing in them
        reaches the boundary; returns ``(end of the last window run, windows run)``."""

    def exchange(self, t_end_ps: int, report: Callable[[int], object] | None) -> Exchanged:
        """Deliver what the LPs produced; the window's records and every LP's ``report(t_end_ps)``."""

    def next_min(self, got: Exchanged, put_back: bool) -> tuple[int, int]:
        """``(earliest pending event time, horizon)`` after the boundary hook (``put_back``: it put events
        back or took some out, so the exchanged minimum may be stale)."""

    def last_event_ps(self) -> int:
        """The time of the last event any LP ran (every rank calls it when nothing is left)."""

    def close(self) -> Exchanged | None:
        """The end of the loop: the records still held back, or None."""


class BoundaryHook(Protocol):
    """What acceleration contributes to the loop (:class:`~pwormhole.accel.wormhole.Wormhole`): its local
    report travels in each exchange, its frozen groups' wakes count as pending events, and a wake or a
    freeze at a boundary changes the LPs' heaps."""

    def local_report(self, t_ps: int) -> object:
        """What this process contributes at boundary ``t_ps`` (merged over LPs and ranks by the transport)."""

    def next_wake_ps(self) -> int:
        """The earliest wake of a frozen group (the same on every rank; ``INF_PS``: none)."""

    def take_heaps_changed(self) -> bool:
        """Whether a wake or freeze put events back or took some out since the last call."""


def by_finish(rec) -> tuple[int, int]:
    """Sort key of a completion ``(flow id, finish_ps, start_ps)``: ``(finish_ps, flow id)``."""
    return rec[1], rec[0]


def run_windows(transport: Transport, window_ps: int, stop_ps: int, on_boundary: Callable[[int, Exchanged], bool],
                accel: BoundaryHook | None = None, cut_ps=(), on_rest: Callable[[Exchanged], None] | None = None,
                quiet_until: Callable[[], int] | None = None) -> tuple[int, int]:
    """Run window by window until no event is left before ``stop_ps`` or
    ``on_boundary(t_boundary_ps, exchanged)`` returns True.

    ``accel`` (optional, a :class:`BoundaryHook`): its ``local_report`` travels in the exchange, its
    frozen groups' wakes count as pending events, and a wake or freeze at a boundary puts events back
    or takes some out. ``cut_ps``: times that must be boundaries (a
    link failure): the window holding one ends there (shorter windows keep the
    conservative rule), and the boundary puts events back.

    A signal recorded on any rank stops every rank at the same boundary, after
    that window's hook: :func:`~pwormhole.sync.interrupt.exception_for` it is raised.
    ``on_rest(exchanged)``: gets the records the transport still held back when the loop ends.
    ``quiet_until()`` (optional): the first boundary at which ``on_boundary`` and the acceleration hook
    must run even when nothing reached it (nothing finished, started or logged); windows that end
    before it, and before a cut, a wake and ``stop_ps``, may run without a boundary
    (``transport.run_quiet``), as they would change nothing there.

    Returns ``(end, number of windows run)``: ``end`` is the last boundary, or ``stop_ps``, or, when no
    event is left, where one grid cell a window would have ended: the grid line after the last event
    run, or the last boundary such a loop reaches too (a wake; a link failure with events still pending).
    """
    report = accel.local_report if accel is not None else None
    cuts = sorted(set(cut_ps))
    windows = 0
    t_end = 0
    t_floor = 0  # the last boundary a loop of one grid cell a window would reach too
    wake_ps = INF_PS
    t_min, horizon = transport.first_min()
    while True:
        if accel is not None:
            wake_ps = accel.next_wake_ps()  # a frozen group's wake (same on every rank)
            t_min = next_due_ps(t_min, wake_ps)
            horizon = next_due_ps(horizon, wake_ps)
        if t_min >= stop_ps or t_min >= INF_PS:
            end = stop_ps
            if t_min >= INF_PS:  # nothing left: where one grid cell a window would have ended
                last = transport.last_event_ps()
                end = min(t_end, stop_ps, max(t_floor, (last // window_ps + 1) * window_ps))
            _close(transport, on_rest)
            return end, windows
        if horizon >= INF_PS:  # nothing pending leads to an event others see: a grid cell at a time, so that
            horizon = t_min  # the run ends (and a stuck run stops) at the cell of its last event, as before
        t_end = (horizon // window_ps + 1) * window_ps  # (horizon >= t_min)
        cut = bool(cuts) and cuts[0] <= t_end
        if cut:
            t_end = cuts.pop(0)
        if t_end > stop_ps:
            t_end = stop_ps
        limit = t_end if cut or quiet_until is None else min(quiet_until(), wake_ps, stop_ps, *cuts[:1])
        t_end, n = transport.run_quiet(t_end, window_ps, limit)  # (a limit of t_end: that window alone)
        got = transport.exchange(t_end, report)
        windows += n
        if got.next_ps < t_end:  # an event crossed into a window already run: the answer would be wrong
            raise RuntimeError(f"an event at {got.next_ps} ps reached an LP after its window ended at {t_end} ps "
                               "(a lead or cut link shorter than assumed)")
        if (cut and got.next_ps < INF_PS) or wake_ps <= t_end:
            t_floor = t_end  # a failure with events still pending, or a wake: reached cell by cell too
        if on_boundary(t_end, got):
            _close(transport, on_rest)
            return t_end, windows
        if got.signal:  # some rank was signalled: every rank stops here
            _close(transport, on_rest)
            raise interrupt.exception_for(got.signal)
        changed = accel is not None and accel.take_heaps_changed()  # (the same on every rank)
        put_back = cut or changed
        t_min, horizon = transport.next_min(got, put_back)


def _close(transport: Transport, on_rest) -> None:
    rest = transport.close()
    if rest is not None and on_rest is not None:
        on_rest(rest)
