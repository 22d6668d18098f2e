"""A run's work per window and per unit (``windows.npz``), and what it predicts for a plan.

A run with ``--record-windows`` runs one in-process LP per indivisible unit of the window
grid (:mod:`.grid`; the answer does not depend on it) and records, per window, each unit's
events and seconds, the seconds of the boundary (the in-process exchange and the boundary
hook, the output writer's included) and, apart, those of making the ``fct.txt`` lines (under
MPI each rank makes the lines of the flows that finish on it) and those Wormhole spends on the
LPs' heaps when groups freeze and wake (each rank on its own). For a plan (unit -> rank) the
wall time at ``R`` ranks is predicted as

    sum over windows of the busiest rank's seconds  +  windows x (hook + exchange(R))

where each rank's seconds include ``1/R`` of the lines' and of the heaps' seconds and the packing
and unpacking of the events it sends other ranks and receives from them (recorded per window and
pair of units; ``SEND_US`` and ``RECV_US`` an event), the hook
(completions, acceleration decisions, the rest of the writer) runs on every rank, and
``exchange(R)`` is the window's exchange (packing, the collective, unpacking): ``exchange_us``
at 2 ranks (an ``allgather``), growing as ``log2(R)`` (MPICH's small-message all-to-all, used from
3 ranks on, takes ``log2 R`` rounds), 0 on one rank. The heaps' seconds are shared equally: a
rank's share really follows the size of its heap, and a group's ports are held and released on
every rank.

:func:`plan_owner` balances that sum: METIS on the units' recorded seconds, then moves and
swaps of whole units between ranks while the predicted busiest-rank sum falls (windows where
different units are busy, e.g. pipeline stages, end up spread over the ranks).
"""

from __future__ import annotations

import math
import time
import zipfile
from collections.abc import Callable
from typing import NamedTuple

import numpy as np

from ..errors import InputError
from ..outfiles import atomic

RECORD_NAME = "windows.npz"
EXCHANGE_US = 65.0  # a window's exchange at 2 ranks (packing, collective, unpacking; not the fct lines), measured
SEND_US = 0.2  # an event sent to another rank: packed and pickled (sync/codec.py; measured, eleventh session)
RECV_US = 0.3  # an event received from another rank: unpickled, unpacked and pushed on the heap (the same)
REFINE_PASSES = 50  # passes of moves and swaps at most
_ARRAYS = ("t_end_ps", "events", "unit_s", "boundary_s", "unit", "links", "window_ps")  # writer_s, local_s: optional


class WindowRecord(NamedTuple):
    """Per window ``w`` and unit ``u``: ``events[w, u]``, ``unit_s[w, u]`` (seconds in the unit's
    events), ``boundary_s[w]`` (seconds at the boundary, the lines' and the heaps' left out), ``t_end_ps[w]``,
    ``writer_s[w]`` (seconds making ``fct.txt`` lines at the boundary), ``local_s[w]`` (seconds of the
    boundary on the LPs' heaps: Wormhole's freezes and wakes; None: not recorded); ``unit[node]``;
    ``links`` rows ``(a, b, delay_ps)``; ``window_ps``; ``sent`` rows ``(w, from unit, to unit, events)``: the
    events one unit's LP sent another's in window ``w`` (None: not recorded)."""
    t_end_ps: np.ndarray
    events: np.ndarray
    unit_s: np.ndarray
    boundary_s: np.ndarray
    unit: np.ndarray
    links: np.ndarray
    window_ps: int
    writer_s: np.ndarray
    local_s: np.ndarray | None = None
    sent: np.ndarray | None = None

    @property
    def n_units(self) -> int:
        return int(self.events.shape[1])

    @property
    def windows(self) -> int:
        return int(self.events.shape[0])

    def save(self, path: str) -> None:
        """As ``.npz`` (written as ``PATH.part`` and renamed; OutputError on a write error)."""
        with atomic(path, binary=True) as fh:
            np.savez_compressed(fh, t_end_ps=self.t_end_ps, events=self.events, unit_s=self.unit_s,
                                boundary_s=self.boundary_s, unit=self.unit, links=self.links,
                                window_ps=np.int64(self.window_ps), writer_s=self.writer_s,
                                local_s=self.local_s if self.local_s is not None else np.zeros(self.windows),
                                sent=self.sent if self.sent is not None else np.zeros((0, 4), dtype=np.int64))

    @staticmethod
    def load(path: str) -> WindowRecord:
        """Read a record; InputError naming the file when it cannot be read or is not one."""
        try:
            with np.load(path, allow_pickle=False) as z:
                missing = [k for k in _ARRAYS if k not in z.files]
                if missing:
                    raise InputError(f"not a window record ({RECORD_NAME} of 'run --record-windows'): "
                                     f"no {missing[0]!r}", path)
                zeros = np.zeros(z["boundary_s"].shape)
                rec = WindowRecord(z["t_end_ps"], z["events"], z["unit_s"], z["boundary_s"], z["unit"], z["links"],
                                   int(z["window_ps"]), z["writer_s"] if "writer_s" in z.files else zeros,
                                   z["local_s"] if "local_s" in z.files else zeros,
                                   z["sent"] if "sent" in z.files else np.zeros((0, 4), dtype=np.int64))
        except (OSError, ValueError, zipfile.BadZipFile, EOFError) as e:
            raise InputError(f"cannot read window record: {getattr(e, 'strerror', None) or e}", path) from None
        w, u = rec.events.shape if rec.events.ndim == 2 else (-1, -1)
        if (w < 0 or rec.unit_s.shape != (w, u) or rec.boundary_s.shape != (w,) or rec.t_end_ps.shape != (w,)
                or rec.writer_s.shape != (w,) or rec.local_s is None or rec.local_s.shape != (w,)
                or rec.unit.ndim != 1 or (rec.unit.size and (rec.unit.min() < 0 or rec.unit.max() >= u))
                or rec.links.ndim != 2 or rec.links.shape[1] != 3
                or rec.sent is None or rec.sent.ndim != 2 or rec.sent.shape[1] != 4
                or (rec.sent.size and (rec.sent.min() < 0 or rec.sent[:, 0].max() >= w or rec.sent[:, 1:3].max() >= u))
                or (rec.links.size and (rec.links[:, :2].min() < 0 or rec.links[:, :2].max() >= rec.unit.size))):
            raise InputError("window record arrays do not fit together (a damaged file?)", path)
        return rec


class Recorder:
    """Collects a :class:`WindowRecord` during a run (fed by the in-process transport)."""

    def __init__(self, n_units: int):
        self.n_units = n_units
        self.t_end_ps: list[int] = []
        self.events: list[list[int]] = []
        self.unit_s: list[list[float]] = []
        self.boundary_s: list[float] = []
        self.writer_s: list[float] = []
        self.local_s: list[float] = []
        self.sent: list[tuple[int, int, int, int]] = []
        self._writer_pending = 0.0
        self.local_clock: Callable[[], float] | None = None  # seconds on the LPs' heaps so far (Wormhole's)
        self._local_seen = 0.0

    def window(self, t_end_ps: int, events: list[int], seconds: list[float]) -> None:
        self.t_end_ps.append(t_end_ps)
        self.events.append(events)
        self.unit_s.append(seconds)

    def crossing(self, from_unit: int, to_unit: int, events: int) -> None:
        """Events the LP of ``from_unit`` sent that of ``to_unit`` in the last window."""
        self.sent.append((len(self.t_end_ps) - 1, from_unit, to_unit, events))

    def timed(self, make_lines):
        """``make_lines`` (the writer's ``fct_lines``) with its CPU seconds recorded."""
        clock = time.thread_time

        def timed_lines(records) -> list[str]:
            t0 = clock()
            lines = make_lines(records)
            self._writer_pending += clock() - t0
            return lines
        return timed_lines

    def boundary(self, seconds: float) -> None:
        """Seconds of the boundary of the last window (its exchange, hook, writer, next minimum)."""
        local = 0.0
        if self.local_clock is not None:
            now = self.local_clock()
            local, self._local_seen = now - self._local_seen, now
        if len(self.boundary_s) < len(self.t_end_ps):
            writer = min(self._writer_pending, seconds)
            local = min(local, seconds - writer)
            self.boundary_s.append(seconds - writer - local)
            self.writer_s.append(writer)
            self.local_s.append(local)
        self._writer_pending = 0.0

    def finish(self, unit: list[int], links, window_ps: int) -> WindowRecord:
        """The record (``links``: ``(a, b, delay_ps)`` rows)."""
        w = len(self.t_end_ps)
        self.boundary_s += [0.0] * (w - len(self.boundary_s))
        self.writer_s += [0.0] * (w - len(self.writer_s))
        self.local_s += [0.0] * (w - len(self.local_s))
        return WindowRecord(np.array(self.t_end_ps, dtype=np.int64),
                            np.array(self.events, dtype=np.int64).reshape(w, self.n_units),
                            np.array(self.unit_s, dtype=np.float64).reshape(w, self.n_units),
                            np.array(self.boundary_s, dtype=np.float64), np.array(unit, dtype=np.int64),
                            np.array(links, dtype=np.int64).reshape(-1, 3), window_ps,
                            np.array(self.writer_s, dtype=np.float64), np.array(self.local_s, dtype=np.float64),
                            np.array(self.sent, dtype=np.int64).reshape(-1, 4))


class Prediction(NamedTuple):
    """The predicted wall time of a plan at ``ranks`` ranks (seconds) and its parts."""
    ranks: int
    wall_s: float
    compute_s: float  # sum over windows of the busiest rank's seconds
    boundary_s: float  # windows x (hook + exchange)
    imbalance: float  # busiest rank's total seconds / mean - 1


def exchange_s(ranks: int, exchange_us: float = EXCHANGE_US) -> float:
    """One window's exchange at ``ranks`` ranks (seconds)."""
    return 0.0 if ranks <= 1 else exchange_us * 1e-6 * math.log2(ranks)


def rank_loads(rec: WindowRecord, owner_unit, ranks: int) -> np.ndarray:
    """``load[w, r]``: seconds of rank ``r``'s units in window ``w``, its share of the lines' and
    of the heaps' seconds, and the packing and unpacking of the events it sends other ranks and
    receives from them (``SEND_US``, ``RECV_US`` each)."""
    owner = np.asarray(owner_unit)
    onehot = np.zeros((rec.n_units, ranks))
    onehot[np.arange(rec.n_units), owner] = 1.0
    shared = rec.writer_s if rec.local_s is None else rec.writer_s + rec.local_s
    load = rec.unit_s @ onehot + shared[:, None] / ranks
    if rec.sent is not None and len(rec.sent):
        w, a, b, n = rec.sent.T
        cross = owner[a] != owner[b]
        np.add.at(load, (w[cross], owner[a][cross]), n[cross] * SEND_US * 1e-6)
        np.add.at(load, (w[cross], owner[b][cross]), n[cross] * RECV_US * 1e-6)
    return load


def predict(rec: WindowRecord, owner_unit, ranks: int, exchange_us: float = EXCHANGE_US) -> Prediction:
    """The wall time of plan ``owner_unit`` (unit -> rank) at ``ranks`` ranks (module docstring)."""
    load = rank_loads(rec, owner_unit, ranks)
    compute = float(load.max(axis=1).sum())
    hook = float(rec.boundary_s.mean()) if rec.windows else 0.0
    boundary = rec.windows * (hook + exchange_s(ranks, exchange_us))
    tot = load.sum(axis=0)
    imb = float(tot.max() / tot.mean() - 1) if tot.mean() > 0 else 0.0
    return Prediction(ranks, compute + boundary, compute, boundary, imb)


def refine(rec: WindowRecord, owner_unit: list[int], ranks: int) -> list[int]:
    """Moves of one unit to another rank, and swaps of two units, while the sum over windows
    of the busiest rank's seconds falls (first-improvement passes; no rank is left empty)."""
    owner = list(owner_unit)
    s = rec.unit_s
    load = rank_loads(rec, owner, ranks)

    def cost(lo):
        return float(lo.max(axis=1).sum())

    best = cost(load)
    for _ in range(REFINE_PASSES):
        improved = False
        counts = np.bincount(np.asarray(owner), minlength=ranks)
        for u in range(rec.n_units):
            a = owner[u]
            if counts[a] <= 1 or not s[:, u].any():
                continue
            for b in range(ranks):
                if b == a:
                    continue
                lo = load.copy()
                lo[:, a] -= s[:, u]
                lo[:, b] += s[:, u]
                c = cost(lo)
                if c < best * (1 - 1e-9):
                    best, load, owner[u] = c, lo, b
                    counts[a] -= 1
                    counts[b] += 1
                    improved = True
                    break
        for u in range(rec.n_units):
            for v in range(u + 1, rec.n_units):
                a, b = owner[u], owner[v]
                if a == b or not (s[:, u].any() or s[:, v].any()):
                    continue
                d = s[:, u] - s[:, v]
                lo = load.copy()
                lo[:, a] -= d
                lo[:, b] += d
                c = cost(lo)
                if c < best * (1 - 1e-9):
                    best, load = c, lo
                    owner[u], owner[v] = b, a
                    improved = True
        if not improved:
            break
    return owner
