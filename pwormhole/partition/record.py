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
import os
import sys
import time
import zipfile
from collections.abc import Callable
from typing import NamedTuple

import numpy as np

from ..errors import InputError
from ..inputs.tokens import read_json
from ..outfiles import RECORD_NAME, atomic

EXCHANGE_US = 65.0  # a window's exchange at 2 ranks (packing, collective, unpacking; not the fct lines), measured
SEND_US = 0.2  # an event sent to another rank: packed and pickled (sync/codec.py; measured)
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
    run_id: str = ""  # the run_id of the run's summary.json ("": not recorded)

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
                                sent=self.sent if self.sent is not None else np.zeros((0, 4), dtype=np.int64),
                                run_id=np.str_(self.run_id))

    @staticmethod
    def load(path: str) -> WindowRecord:
        """Read a record; InputError naming the file when it cannot be read or is not one (every array
        of the kind, shape, sign and size a run writes: :func:`_checked`)."""
        try:
            with np.load(path, allow_pickle=False) as z:
                missing = [k for k in _ARRAYS if k not in z.files]
                if missing:
                    raise InputError(f"not a window record ({RECORD_NAME} of 'run --record-windows'): "
                                     f"no {missing[0]!r}", path)
                arrays = {k: z[k] for k in z.files if k in (*_ARRAYS, "writer_s", "local_s", "sent", "run_id")}
        except (OSError, ValueError, zipfile.BadZipFile, EOFError) as e:
            raise InputError(f"cannot read window record: {getattr(e, 'strerror', None) or e}", path) from None
        return _checked(arrays, path)


def load_of_run(folder: str) -> WindowRecord:
    """The record of the run in ``folder``: its ``windows.npz``, refused (InputError) unless the
    folder's ``summary.json`` is that of the run that wrote it (same ``run_id``). A warning line says
    when that run stopped early: the record is of its part only."""
    path = os.path.join(folder, RECORD_NAME)
    if not os.path.isfile(path):
        raise InputError(f"{folder!r} holds no {RECORD_NAME}: record a run with 'pwormhole run --record-windows "
                         f"--out {folder}'")
    rec = WindowRecord.load(path)
    summary = read_json(os.path.join(folder, "summary.json"))
    outputs = summary.get("outputs")
    if (not rec.run_id or summary.get("run_id") != rec.run_id or not isinstance(outputs, list)
            or RECORD_NAME not in outputs):
        raise InputError(f"{RECORD_NAME} is not of the run in summary.json beside it (an earlier run's?): "
                         "record the run again", path)
    if summary.get("complete") is False:
        why = summary.get("interrupted") or "its --until or a stop"
        print(f"pwormhole: warning: the run in {folder} stopped before its end ({why}): {RECORD_NAME} is of its "
              f"first {len(rec.t_end_ps)} windows only", file=sys.stderr)
    return rec


# what a run can record: a window's events per unit, and seconds (well past any run)
MAX_RECORD_EVENTS = 2**40
MAX_RECORD_S = 1e7
MAX_RECORD_PS = 2**62


def _checked(z: dict, path: str) -> WindowRecord:
    """The record of the arrays ``z`` of a file, each checked for its kind (integers or finite floats),
    shape and bounds (InputError naming ``path`` and the array otherwise)."""
    def bad(name: str, why: str):
        return InputError(f"window record array {name!r} {why} (a damaged file?)", path)

    def ints(name: str, ndim: int, hi: int, cols: int | None = None) -> np.ndarray:
        a = z[name]
        if a.dtype.kind not in "iu":
            raise bad(name, f"holds {a.dtype} values, not integers")
        if a.ndim != ndim or (cols is not None and a.shape[1] != cols):
            raise bad(name, f"has the shape {a.shape}")
        if a.size and (a.min() < 0 or a.max() > hi):
            raise bad(name, f"holds a value outside 0..{hi}")
        return a.astype(np.int64)

    def seconds(name: str, shape: tuple) -> np.ndarray:
        if name not in z:
            return np.zeros(shape)
        a = z[name]
        if a.dtype.kind not in "iuf":
            raise bad(name, f"holds {a.dtype} values, not numbers")
        if a.shape != shape:
            raise bad(name, f"has the shape {a.shape}, not {shape}")
        a = a.astype(np.float64)
        if a.size and not (np.isfinite(a).all() and a.min() >= 0 and a.max() <= MAX_RECORD_S):
            raise bad(name, f"holds a value outside 0..{MAX_RECORD_S:g} s")
        return a

    events = ints("events", 2, MAX_RECORD_EVENTS)
    w, u = events.shape
    if w == 0 or u == 0:
        raise InputError(f"window record holds {w} windows of {u} units: nothing to plan from", path)
    t_end = ints("t_end_ps", 1, MAX_RECORD_PS)
    if t_end.shape != (w,):
        raise bad("t_end_ps", f"has the shape {t_end.shape}, not ({w},)")
    if (np.diff(t_end) < 0).any():
        raise bad("t_end_ps", "goes back in time")
    unit = ints("unit", 1, u - 1)
    links = ints("links", 2, MAX_RECORD_PS, cols=3)
    if links.size and links[:, :2].max() >= unit.size:
        raise bad("links", f"names a node outside 0..{unit.size - 1}")
    wps = z["window_ps"]
    if wps.dtype.kind not in "iu" or wps.ndim != 0 or not 0 < int(wps) <= MAX_RECORD_PS:
        raise bad("window_ps", f"is not one positive integer ({wps.dtype}, shape {wps.shape})")
    sent = ints("sent", 2, MAX_RECORD_EVENTS, cols=4) if "sent" in z else np.zeros((0, 4), dtype=np.int64)
    if sent.size and (sent[:, 0].max() >= w or sent[:, 1:3].max() >= u):
        raise bad("sent", f"names a window outside 0..{w - 1} or a unit outside 0..{u - 1}")
    run_id = z.get("run_id")
    if run_id is not None and (run_id.dtype.kind != "U" or run_id.ndim != 0):
        raise bad("run_id", "is not one string")
    return WindowRecord(t_end, events, seconds("unit_s", (w, u)), seconds("boundary_s", (w,)), unit, links,
                        int(wps), seconds("writer_s", (w,)), seconds("local_s", (w,)), sent,
                        str(run_id) if run_id is not None else "")


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

    def finish(self, unit: list[int], links, window_ps: int, run_id: str = "") -> WindowRecord:
        """The record (``links``: ``(a, b, delay_ps)`` rows; ``run_id``: that of the run's summary)."""
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
                            np.array(self.sent, dtype=np.int64).reshape(-1, 4), run_id)


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
