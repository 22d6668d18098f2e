"""In-process transport of the window loop (:mod:`pwormhole.sync.windows`): N LPs in one process.

At a boundary the outboxes are delivered into the peers' heaps (each event
keeps its key) and the LPs' records are merged in a fixed order, so the
result does not depend on the number of LPs. The global minimum and horizon are read
from the heaps after every boundary (they cost little here).
"""

from __future__ import annotations

import time

from ..engine.lp import LogicalProcess
from .windows import Exchanged, by_finish


def exchange(lps: list[LogicalProcess]) -> None:
    """Deliver every LP's outboxes into the peers' heaps."""
    for lp in lps:
        for peer, box in lp.outboxes.items():
            if box:
                heap = lps[peer].heap
                for ev in box:
                    heap.push(ev[0], ev[1], ev[2], ev[3], ev[4])
                box.clear()


def drain(lists, key=None) -> list:
    """Concatenate and clear per-LP record lists, sorted by ``key`` (same order on any LP count)."""
    out: list = []
    for lst in lists:
        if lst:
            out.extend(lst)
            lst.clear()
    if len(out) > 1:
        out.sort(key=key)
    return out


def drain_finished(lists) -> list:
    """Flow completions of all LPs, sorted by ``(finish_ps, flow id)``, lists cleared."""
    return drain(lists, by_finish)


class LocalTransport:
    """The LPs of this process (``lps[i].lp_id == i``); no signal travels (handlers raise at once).

    ``recorder`` (optional, a :class:`~pwormhole.partition.record.Recorder`): gets each
    window's events and CPU seconds per LP, the events each LP sent each other, and the CPU seconds
    of each boundary (from the end of a window's events to the start of the next window's, less the
    delivery between LPs)."""

    def __init__(self, lps: list[LogicalProcess], recorder=None):
        self.lps = lps
        self.sync_s = 0.0
        self.recorder = recorder
        self._events_end: float | None = None

    def ready(self) -> float:
        return 0.0  # the LPs of one process are built together

    def first_min(self) -> tuple[int, int]:
        """``(earliest event time, horizon)`` of the LPs."""
        lps = self.lps
        if len(lps) == 1:
            return lps[0].next_time(), lps[0].horizon_ps()
        return min(lp.next_time() for lp in lps), min(lp.horizon_ps() for lp in lps)

    def run_until(self, t_end_ps: int) -> None:
        rec = self.recorder
        if rec is None:
            for lp in self.lps:
                lp.run_until(t_end_ps)
            return
        clock = time.thread_time  # CPU seconds: a loaded machine does not count
        if self._events_end is not None:
            rec.boundary(clock() - self._events_end)
        events = []
        seconds = []
        for lp in self.lps:
            if lp.next_time() >= t_end_ps:  # idle in this window: no call, so no per-LP overhead recorded
                events.append(0)
                seconds.append(0.0)
                continue
            t0 = clock()
            events.append(lp.run_until(t_end_ps))
            seconds.append(clock() - t0)
        rec.window(t_end_ps, events, seconds)
        self._events_end = clock()

    def run_quiet(self, t_end_ps: int, window_ps: int, limit_ps: int) -> tuple[int, int]:
        """:meth:`run_until`, then, with one LP and no recorder, its next windows while nothing in them
        reaches the boundary (:meth:`~pwormhole.engine.lp.LogicalProcess.run_quiet`) and they end before
        ``limit_ps``. Returns ``(end of the last window run, windows run)``."""
        if len(self.lps) == 1 and self.recorder is None:
            return self.lps[0].run_quiet(t_end_ps, window_ps, limit_ps)
        self.run_until(t_end_ps)
        return t_end_ps, 1

    def exchange(self, t_end_ps: int, report) -> Exchanged:
        """Deliver the outboxes; the records of every LP, and ``report(t_end_ps)`` (all LPs at once)."""
        lps = self.lps
        t0 = time.thread_time() if self.recorder is not None else 0.0
        if len(lps) > 1:
            if self.recorder is not None:
                for lp in lps:
                    for peer, box in lp.outboxes.items():
                        if box:
                            self.recorder.crossing(lp.lp_id, peer, len(box))
            exchange(lps)
        next_ps = lps[0].next_time() if len(lps) == 1 else min(lp.next_time() for lp in lps)
        finished = drain_finished([lp.finished for lp in lps])
        pfc = drain([lp.pfc_log for lp in lps])
        ops = drain([lp.op_log for lp in lps])
        if self.recorder is not None and self._events_end is not None:
            self._events_end += time.thread_time() - t0  # delivery between LPs of one process: not a rank's work
        return Exchanged(next_ps, finished, pfc, ops, report(t_end_ps) if report is not None else None, 0)

    def next_min(self, got: Exchanged, put_back: bool) -> tuple[int, int]:
        return self.first_min()  # read after the boundary hook: exact whatever it did

    def last_event_ps(self) -> int:
        """Time of the last event any LP ran (-1: none)."""
        return max(lp.heap.last_ps for lp in self.lps)

    def close(self) -> None:
        """Nothing is held back here (every record was handed on at its boundary)."""
        if self.recorder is not None and self._events_end is not None:
            self.recorder.boundary(time.thread_time() - self._events_end)
