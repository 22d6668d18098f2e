"""MPI transport of the window loop (:mod:`pwormhole.sync.windows`); mpi4py is imported only here.

One rank runs one LP. After each window (:mod:`.windows`) the ranks make one
exchange (the sizes, then ``Alltoallv``; between two ranks ``Allgatherv``) of one int64 buffer per
peer, no pickles: to every peer a rank sends the events
bound for that peer's nodes (with their original keys; packets as integer
arrays, :mod:`.codec`; node objects travel as node ids), its minimum next event time and horizon (its heap
and everything it sends: all known before the exchange, so the global ones need no second
collective), the counts of the window's flow completions and DAG op records and the
completions the acceleration tracks, its acceleration report and, to rank 0, its PFC
records (and, every ``FLUSH_WINDOWS`` windows or ``FLUSH_S`` seconds, its held completions and
op records with their ``fct.txt`` lines), and the signal it received (:mod:`pwormhole.sync.interrupt`).
Every rank then knows the same tracked completions and the same next window,
so all take the same decisions; empty windows are skipped by jumping to the
window of the global minimum. Termination: every flow finished, or no event
before the stop time on any rank (nothing can be in flight: in-flight
packets are events in some rank's heap or in the exchange itself), or a
signal on any rank (every rank raises the same exception at that boundary).
"""

from __future__ import annotations

import os
import sys
import time
from itertools import chain

import numpy as np

from ..engine.lp import INF_PS
from ..errors import InputError
from . import interrupt
from .codec import earliest, pack_events, unpack_events
from .launcher import launched_under_mpi
from .windows import Exchanged, by_finish

FLUSH_WINDOWS = 64  # windows between two hand-ons of the held completions and op records, at most
ABORT_GRACE_S = 0.5  # seconds a failing rank's message has to reach the launcher before MPI_Abort
FLUSH_S = 1.0  # seconds (rank 0's clock) between two hand-ons, at most (one window more)
_NO_ROWS = np.zeros((0, 3), dtype=np.int64)
_NO_INTS = np.zeros(0, dtype=np.int64)
# what a wire message's report holds (flags): a report, its samples, a third part of two lists of pairs
REP_SENT, REP_SAMPLES, REP_PAIRS = 1, 2, 4

def _slurm_step_tasks() -> int:
    """Tasks of the Slurm job step this process belongs to (0 outside an ``srun`` step).

    ``SLURM_STEP_NUM_TASKS`` is set by ``srun`` for its tasks; a batch script
    (``sbatch``) or an ``salloc`` shell has ``SLURM_NTASKS`` of the whole
    allocation but no step variables, and there a single process is legitimate
    (``python -m pwormhole run`` or ``mpiexec`` typed inside the allocation), so
    ``SLURM_NTASKS`` counts only inside a step (``SLURM_STEPID`` set).
    """
    env = os.environ
    if "SLURM_PROCID" not in env:
        return 0
    raw = env.get("SLURM_STEP_NUM_TASKS")
    if raw is None and ("SLURM_STEPID" in env or "SLURM_STEP_ID" in env):
        raw = env.get("SLURM_NTASKS")
    try:
        return int(raw) if raw is not None else 0
    except ValueError:
        return 0


def check_launch(size: int | None = None) -> None:
    """Refuse a plain ``srun -n N`` that started N independent single-rank runs.

    Without a PMI plugin (``srun --mpi=none``, the default on many sites)
    ``srun -n N python -m pwormhole run`` starts N processes that each see an
    MPI world of size 1: N full copies of the simulation writing the same
    files. Detected when Slurm says this step has more than one task while MPI
    says size 1 (``size``, or ``MPI.COMM_WORLD.size`` when an MPI launcher's
    variables are present; mpi4py is imported only then) or when no launcher
    variables are present at all. Raises :class:`~pwormhole.errors.InputError`
    naming the fix.
    """
    tasks = _slurm_step_tasks()
    if tasks <= 1:
        return
    if size is None and launched_under_mpi():
        try:
            from mpi4py import MPI
        except ImportError:
            size = 1
        else:
            size = MPI.COMM_WORLD.size
    if size is None or size == 1:
        raise InputError(
            f"Slurm started {tasks} tasks but MPI sees 1 rank in each (srun without a PMI plugin runs "
            f"{tasks} independent copies); launch with 'srun --mpi=pmi2 ...' (the mpich wheel; "
            f"'--mpi=pmix' for a site MPI built with PMIx) or with 'mpiexec -n {tasks} ...' inside the allocation")


def world():
    """``MPI.COMM_WORLD`` when launched under MPI with more than one rank, else None."""
    check_launch()
    if not launched_under_mpi():
        return None
    try:
        from mpi4py import MPI
    except ImportError:
        return None
    comm = MPI.COMM_WORLD
    return comm if comm.size > 1 else None


def abort(comm, code: int) -> None:
    """End every rank now (used when one rank fails mid-run); never returns
    (MPICH's ``MPI_Abort`` returns before the launcher ends the processes). The launcher forwards a rank's
    stderr on its own time and ``MPI_Abort`` can end it first: the rank's message gets ``ABORT_GRACE_S``."""
    try:
        sys.stderr.flush()
    except Exception:  # noqa: BLE001 - a closed or missing stream must not keep the ranks alive
        pass
    time.sleep(ABORT_GRACE_S)
    comm.Abort(code)
    os._exit(code)


class MpiTransport:
    """One LP per rank (``lp``, on ``comm``); ``nodes``: every node by id (events travel with node ids).

    :meth:`exchange` is the window's one exchange (``Alltoallv``, ``Allgatherv`` for two ranks); the ranks'
    acceleration reports are merged with ``merge_reports`` (every rank then
    holds the same). :meth:`next_min` adds an ``Allgather`` only when the
    boundary put events back or took some out. ``sync_s``: seconds spent in collectives.

    Completions and op records stay on the rank where they happened; only their counts travel
    every window, with the completions the boundary hook needs at once (``tracked(completions)``: those
    of them, in their order; None: none). Every ``FLUSH_WINDOWS`` windows, or sooner when ``FLUSH_S`` seconds passed on
    rank 0 (which says so in the exchange: all ranks hand on at the next window), each rank sends
    the records it held (int64 arrays) and their ``fct.txt`` lines (``format_finished``, made where
    the flows finished) to rank 0, which hands them on in ``(finish_ps, flow id)`` order; at :meth:`close` rank 0 gets
    the rest and every other rank every record of the run (as int64 arrays).
    """

    def __init__(self, lp, comm, nodes, merge_reports=None, format_finished=None, tracked=None, make_sample=tuple):
        self.lp = lp
        self.make_sample = make_sample  # a sample's integers -> the sample a report holds
        self.comm = comm
        self.nodes = nodes
        self.merge_reports = merge_reports
        self.format_finished = format_finished  # completions -> one line each, ending in its only newline
        self.tracked = tracked
        self.sync_s = 0.0
        self.flush_now = False  # rank 0 said so at the last exchange
        self.flushed = (0, time.perf_counter())  # rank 0: window count and clock at the last hand-on
        self.windows = 0
        self.held_fin: list = []  # this rank's completions since the last hand-on
        self.held_ops: list = []
        self.sent_fin: list = []  # int64 arrays of those handed on (every rank gets them at the end)
        self.sent_ops: list = []

    def ready(self) -> float:
        """Wait until every rank has built its part (a barrier); returns the seconds waited."""
        t0 = time.perf_counter()
        self.comm.Barrier()
        return time.perf_counter() - t0

    def first_min(self) -> tuple[int, int]:
        """``(earliest event time, horizon)`` of every rank."""
        return self._min_pair(self.lp.next_time(), self.lp.horizon_ps())

    def run_until(self, t_end_ps: int) -> None:
        self.lp.run_until(t_end_ps)

    def run_quiet(self, t_end_ps: int, window_ps: int, limit_ps: int) -> tuple[int, int]:
        """One window: the other ranks' events decide whether the next is quiet."""
        self.lp.run_until(t_end_ps)
        return t_end_ps, 1

    def exchange(self, t_end_ps: int, report) -> Exchanged:
        """To every peer: the events bound for its nodes, this rank's minimum next event time and
        horizon (its heap and everything it sends, each event with the lead its receiver will see),
        the window's counts of completions and op records, the completions the hook tracks, its
        report and its signal; to rank 0 also its PFC records
        (and every ``FLUSH_WINDOWS`` windows the held records and lines). A rank's own part is
        used as it is; what every peer gets alike is encoded once (int64 sections, no pickles)."""
        lp = self.lp
        comm = self.comm
        size = comm.size
        me = comm.rank
        local_min, local_hz = _pending(lp)
        rep = report(t_end_ps) if report is not None else None
        out: list = [None] * size
        for peer, box in lp.outboxes.items():
            if box:
                out[peer] = pack_events(box)
                box.clear()
        fin = lp.finished
        n_fin = len(fin)
        tracked: list = []
        if n_fin:
            if self.tracked is not None:
                tracked = self.tracked(fin)
            self.held_fin.extend(fin)
            fin.clear()
        n_ops = len(lp.op_log)
        if n_ops:
            self.held_ops.extend(lp.op_log)
            lp.op_log.clear()
        pfc = lp.pfc_log[:]
        lp.pfc_log.clear()
        self.windows += 1
        batch = self._batch() if self.flush_now else None
        flush_next = False
        if me == 0:
            if batch is not None:
                self.flushed = (self.windows, time.perf_counter())
            flush_next = (self.windows - self.flushed[0] >= FLUSH_WINDOWS - 1
                          or time.perf_counter() - self.flushed[1] >= FLUSH_S)
        mine = (local_min, local_hz, tracked, n_fin, n_ops, rep, interrupt.pending(), flush_next)
        common = _common_sections(mine)  # what every peer gets alike
        to0 = _to0_sections(pfc, batch) if me != 0 else []
        sends = [[] if p == me else _event_sections(out[p]) + common + (to0 if p == 0 else [])
                 for p in range(size)]
        t0 = time.perf_counter()
        got = self._collective(sends)
        self.sync_s += time.perf_counter() - t0
        parts: list = [None if g is None else _decode(g, self.make_sample) for g in got]
        heap = lp.heap
        nodes = self.nodes
        t_min = hz_min = INF_PS
        sig = 0
        recs: list = pfc if me == 0 else []
        tracked_all: list = []
        n_fin = n_ops = 0
        reps = []
        batches = []  # rank 0: every rank's held records, in rank order
        for p in range(size):
            if p == me:
                peer_min, peer_hz, peer_tracked, peer_fin, peer_ops, peer_rep, peer_sig, peer_flush = mine
                if batch is not None and me == 0:
                    batches.append(batch)
            else:
                evs, peer_to0, (peer_min, peer_hz, peer_tracked, peer_fin, peer_ops, peer_rep, peer_sig,
                                peer_flush) = parts[p]
                if evs is not None:
                    unpack_events(evs[0], evs[1], [], nodes, heap)
                    for t_ps, key, kind, node_id, arg in evs[2]:
                        heap.push(t_ps, key, kind, nodes[node_id], arg)
                if peer_to0 is not None:
                    recs.extend(peer_to0[0])
                    if peer_to0[1] is not None:
                        batches.append(peer_to0[1])
            if p == 0:
                self.flush_now = peer_flush
            reps.append(peer_rep)
            if peer_sig > sig:
                sig = peer_sig
            if peer_min < t_min:
                t_min = peer_min
            if peer_hz < hz_min:
                hz_min = peer_hz
            if peer_tracked:
                tracked_all.extend(peer_tracked)
            n_fin += peer_fin
            n_ops += peer_ops
        if len(tracked_all) > 1:
            tracked_all.sort(key=by_finish)
        if len(recs) > 1:
            recs.sort()
        done, lines, ops = self._merge(batches) if batches else (_NO_ROWS, None, _NO_ROWS)
        merged = self.merge_reports(reps) if report is not None else None
        return Exchanged(t_min, done, recs, ops, merged, sig, lines, tracked_all, (n_fin, n_ops), hz_min)

    def close(self) -> Exchanged | None:
        """Every rank leaves the loop here: rank 0 gets the records still held, the other ranks
        every record of the run (int64 arrays), in one ``Allgatherv``."""
        interrupt.settle()  # only matched collectives follow
        comm = self.comm
        new_fin, new_ops, lines = self._batch()
        fin_all = np.concatenate(self.sent_fin)
        ops_all = np.concatenate(self.sent_ops)
        mine = _sections(fin_all.ravel(), ops_all.ravel(), np.array([len(new_fin), len(new_ops)], dtype=np.int64))
        if comm.rank != 0:
            mine += _text_section(lines)
        t0 = time.perf_counter()
        got = _allgatherv(comm, mine)
        self.sync_s += time.perf_counter() - t0
        every = []
        for p, g in enumerate(got):
            w = _Reader(g)
            fin, ops, counts = w.rows(3), w.rows(3), w.take()
            every.append((fin, ops, int(counts[0]), int(counts[1]), w.text() if p != 0 else None))
        if comm.rank != 0:
            return Exchanged(INF_PS, np.concatenate([e[0] for e in every]), [],
                             np.concatenate([e[1] for e in every]), None, 0, None, [], (0, 0))
        batches = [(new_fin, new_ops, lines)]
        for fin, ops, n_fin, n_ops, peer_lines in every[1:]:
            batches.append((fin[len(fin) - n_fin:], ops[len(ops) - n_ops:], peer_lines))
        done, out_lines, ops = self._merge(batches)
        return Exchanged(INF_PS, done, [], ops, None, 0, out_lines, [], (0, 0))

    def next_min(self, got: Exchanged, put_back: bool) -> tuple[int, int]:
        """The exchanged minimum and horizon; new ones (``Allgather``) when the boundary put events
        back or took some out (a link failure; woken groups, which also kick ports; frozen groups)."""
        if not put_back and got.horizon_ps is not None:
            return got.next_ps, got.horizon_ps
        return self._min_pair(*_pending(self.lp))

    def last_event_ps(self) -> int:
        """Time of the last event any rank ran (-1: none; every rank calls it)."""
        return int(self._allgather(self.lp.heap.last_ps)[:, 0].max())

    def _min_pair(self, t_ps: int, horizon_ps: int) -> tuple[int, int]:
        """The least of every rank's ``t_ps`` and of every rank's ``horizon_ps``."""
        got = self._allgather(t_ps, horizon_ps)
        return int(got[:, 0].min()), int(got[:, 1].min())

    def _allgather(self, *values: int) -> np.ndarray:
        """Every rank's ``values`` as int64 rows, one a rank (one ``Allgather``, its seconds in ``sync_s``)."""
        mine = np.array(values, dtype=np.int64)
        got = np.empty((self.comm.size, len(values)), dtype=np.int64)
        t0 = time.perf_counter()
        self.comm.Allgather(mine, got)
        self.sync_s += time.perf_counter() - t0
        return got

    def _collective(self, sends: list) -> list:
        """The window's exchange: ``sends[p]``, int64 sections for rank ``p`` (empty for this rank),
        sent as one buffer each; returns what every peer sent this rank (None for this rank), as views
        of one receive buffer. Two ranks: the sizes, then ``Allgatherv`` (each rank sends its one
        peer's part; not a sendrecv, which the stop watchdog cannot interrupt:
        ``test_stuck_rank_does_not_hang_the_job``); more: the sizes by ``Alltoall``, then ``Alltoallv``."""
        comm = self.comm
        me = comm.rank
        if comm.size == 2:
            got = _allgatherv(comm, sends[1 - me])
            got[me] = None
            return got
        send_counts = np.array([sum(len(a) for a in part) for part in sends], dtype=np.int64)
        recv_counts = np.empty(comm.size, dtype=np.int64)
        comm.Alltoall(send_counts, recv_counts)
        send = np.concatenate([a for part in sends for a in part]) if send_counts.any() else _NO_INTS
        recv = np.empty(int(recv_counts.sum()), dtype=np.int64)
        comm.Alltoallv([send, send_counts.tolist()], [recv, recv_counts.tolist()])
        return _split(recv, recv_counts, me)

    def _batch(self) -> tuple:
        """The held records as int64 arrays ``(completions, op records)`` (kept: every rank gets
        them at the end) and the completions' lines (each ends with a newline; on ranks other than 0 joined
        in one string, which travels as its UTF-8 bytes)."""
        fin = self.held_fin
        fmt = self.format_finished
        lines = fmt(fin) if fmt is not None and fin else []
        if self.comm.rank != 0:
            lines = "".join(lines)
        fin_rows = _rows(fin)
        op_rows = _rows(self.held_ops)
        self.sent_fin.append(fin_rows)
        self.sent_ops.append(op_rows)
        self.held_fin = []
        self.held_ops = []
        return fin_rows, op_rows, lines

    def _merge(self, batches: list) -> tuple[np.ndarray, list | None, np.ndarray]:
        """Rank 0: every rank's batch ``(completions, op records, lines)``, in rank order, merged:
        completions by ``(finish_ps, flow id)`` with their lines, op records sorted (int64 rows)."""
        fin = np.concatenate([b[0] for b in batches])
        order = np.lexsort((fin[:, 0], fin[:, 1]))
        every: list = []
        for b in batches:
            every.extend(b[2].splitlines(keepends=True) if isinstance(b[2], str) else b[2])
        if self.format_finished is not None and len(every) != len(fin):
            raise RuntimeError(f"{len(every)} fct.txt lines for {len(fin)} completions (a line break inside a line)")
        lines = [every[i] for i in order.tolist()] if self.format_finished is not None else None
        ops = np.concatenate([b[1] for b in batches])
        return fin[order], lines, ops[np.lexsort((ops[:, 2], ops[:, 1], ops[:, 0]))]


def _pending(lp) -> tuple[int, int]:
    """``(earliest time, horizon)`` of what rank ``lp`` holds: its heap and its outboxes (each event
    with the lead its receiver will see)."""
    t_min, horizon = lp.next_time(), lp.horizon_ps()
    for box in lp.outboxes.values():
        if box:
            t_min, horizon = earliest(box, t_min, horizon, lp.lead)
    return t_min, horizon


def _sections(*arrays: np.ndarray) -> list:
    """Int64 arrays as wire sections: each its length, then its integers."""
    out = []
    for a in arrays:
        out.append(np.array([len(a)], dtype=np.int64))
        out.append(a)
    return out


def _ints(values) -> np.ndarray:
    """An iterable of integers as an int64 array."""
    return np.fromiter(values, dtype=np.int64)


def _text_section(text: str) -> list:
    """``text`` as a wire section: its UTF-8 length in bytes, then the bytes, zero-padded to whole int64s."""
    raw = text.encode()
    pad = -len(raw) % 8
    return _sections(np.frombuffer(raw + bytes(pad), dtype=np.int64)) + [np.array([len(raw)], dtype=np.int64)]


class _Reader:
    """Reads wire sections, in order, from a received int64 array (views of it, no copies)."""

    def __init__(self, ints: np.ndarray):
        self.ints = ints
        self.at = 0

    def take(self) -> np.ndarray:
        n = int(self.ints[self.at])
        a = self.ints[self.at + 1:self.at + 1 + n]
        self.at += 1 + n
        return a

    def rows(self, width: int) -> np.ndarray:
        return self.take().reshape(-1, width)

    def tuples(self, width: int) -> list:
        return [tuple(r) for r in self.take().reshape(-1, width).tolist()]

    def text(self) -> str:
        raw = self.take().tobytes()
        n = int(self.ints[self.at])
        self.at += 1
        return raw[:n].decode()


def _event_sections(packed) -> list:
    """Sections of events bound for one peer, ``pack_events``' ``(rows, hops, others)`` (None: none):
    the packet rows and INT hops as they are, the other events as rows ``(t_ps, key, kind, node id, arg)``
    (a DAG message's argument is an op id)."""
    if packed is None:
        return _sections(_NO_INTS, _NO_INTS, _NO_INTS)
    rows, hops, others = packed
    return _sections(np.frombuffer(rows, dtype=np.int64), np.frombuffer(hops, dtype=np.int64),
                     _ints(chain.from_iterable(others)))


def _common_sections(mine: tuple) -> list:
    """Sections of what a rank sends every peer alike: its minimum and horizon, counts, signal, flush
    flag and report flags (one section), the tracked completions, and its report: flow ids started,
    samples (a flow id and a sample's 8 integers each) and, when the report has one, a third part of
    two lists of integer pairs (Wormhole's carried ring steps: starts and receipts)."""
    local_min, local_hz, tracked, n_fin, n_ops, rep, sig, flush_next = mine
    flags = 0
    if rep is not None:
        flags = REP_SENT | (REP_SAMPLES if rep[1] is not None else 0) | (REP_PAIRS if len(rep) > 2 else 0)
    head = np.array([local_min, local_hz, n_fin, n_ops, sig, 1 if flush_next else 0, flags], dtype=np.int64)
    started = _ints(rep[0]) if rep is not None and rep[0] else _NO_INTS
    samples = _ints(chain.from_iterable((fid, *sample.fields()) for fid, sample in rep[1])) \
        if flags & REP_SAMPLES and rep[1] else _NO_INTS
    out = _sections(head, _ints(chain.from_iterable(tracked)) if tracked else _NO_INTS, started, samples)
    if flags & REP_PAIRS:
        out += _sections(*(_ints(chain.from_iterable(pairs)) if pairs else _NO_INTS for pairs in rep[2]))
    return out


def _to0_sections(pfc: list, batch) -> list:
    """Sections only rank 0 gets: PFC records, then the held records and their lines (``batch``, or
    None: not this window)."""
    pfc_ints = _ints(chain.from_iterable(pfc)) if pfc else _NO_INTS
    if batch is None:
        return _sections(pfc_ints, _NO_INTS)
    fin_rows, op_rows, lines = batch
    return _sections(pfc_ints, np.ones(1, dtype=np.int64), fin_rows.ravel(), op_rows.ravel()) + _text_section(lines)


def _decode(ints: np.ndarray, make_sample) -> tuple:
    """A peer's message as the exchange reads it: ``(events or None, (pfc, batch) or None, mine)``;
    ``make_sample``: a sample's integers (a list) -> the sample the report holds."""
    w = _Reader(ints)
    rows, hops = w.take(), w.take()
    others = w.tuples(5)
    # (memoryviews: their items are Python ints, as packets' fields must be in the pure-Python codec)
    evs = (rows.data, hops.data, others) if len(rows) or others else None
    local_min, local_hz, n_fin, n_ops, sig, flush_next, flags = w.take().tolist()
    tracked = w.tuples(3)
    started = w.take().tolist()
    sample_rows = w.take().reshape(-1, 9).tolist()
    rep = None
    if flags & REP_SENT:
        samples = [(r[0], make_sample(r[1:])) for r in sample_rows] if flags & REP_SAMPLES else None
        rep = (started, samples, (w.tuples(2), w.tuples(2))) if flags & REP_PAIRS else (started, samples)
    mine = (local_min, local_hz, tracked, n_fin, n_ops, rep, sig, flush_next != 0)
    to0 = None
    if w.at < len(ints):
        pfc = w.tuples(5)
        batch = None
        if len(w.take()):
            fin_rows, op_rows = w.rows(3), w.rows(3)
            batch = (fin_rows, op_rows, w.text())
        to0 = (pfc, batch)
    return evs, to0, mine


def _allgatherv(comm, sections: list) -> list:
    """Every rank's int64 ``sections`` as one array each (views of one receive buffer): the sizes by
    ``Allgather``, then ``Allgatherv``."""
    send = np.concatenate(sections) if sections else _NO_INTS
    counts = np.empty(comm.size, dtype=np.int64)
    comm.Allgather(np.array([len(send)], dtype=np.int64), counts)
    recv = np.empty(int(counts.sum()), dtype=np.int64)
    comm.Allgatherv(send, [recv, counts.tolist()])
    return _split(recv, counts, -1)


def _split(recv: np.ndarray, counts: np.ndarray, me: int) -> list:
    """``recv`` cut into each rank's part by ``counts`` (None for rank ``me``)."""
    parts: list = []
    at = 0
    for p, n in enumerate(counts.tolist()):
        parts.append(None if p == me else recv[at:at + n])
        at += n
    return parts


def _rows(records: list) -> np.ndarray:
    """Records of three integers as an int64 array of rows."""
    return np.fromiter(chain.from_iterable(records), dtype=np.int64, count=3 * len(records)).reshape(-1, 3)


def allreduce_sum(comm, value):
    from mpi4py import MPI
    return comm.allreduce(value, op=MPI.SUM)

