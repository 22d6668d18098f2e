"""MPI transport of the window loop (:mod:`pwormhole.sync.windows`); mpi4py is imported only here.

One rank runs one LP. After each window ``[kL, (k+1)L)`` the ranks make one
exchange (``alltoall``; between two ranks ``allgather``): to every peer a rank sends the events
bound for that peer's nodes (with their original keys; packets as integer
arrays, :mod:`.codec`; node objects travel as node ids), its minimum next event time (its heap and everything it sends:
all known before the exchange, so the global minimum needs no second
collective), the flow completions and DAG op records of the window, its
acceleration report and, to rank 0, its PFC records, and the signal it
received (:mod:`pwormhole.sync.interrupt`).
Every rank then knows the same completions and the same next window,
so all take the same decisions; empty windows are skipped by jumping to the
window of the global minimum. Termination: every flow finished, or no event
before the stop time on any rank (nothing can be in flight: in-flight
packets are events in some rank's heap or in the exchange itself), or a
signal on any rank (every rank raises the same exception at that boundary).
"""

from __future__ import annotations

import os
import pickle
import time

import numpy as np

from ..lp.engine import INF_PS
from . import interrupt
from .codec import pack_events, unpack_events
from .windows import Exchanged

FLUSH_WINDOWS = 64  # windows between two hand-ons of the held completions and op records

LAUNCHER_ENV = ("PMI_SIZE", "PMI_RANK", "OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "MPI_LOCALNRANKS", "HYDRA_CONTROL_FD")


def launched_under_mpi() -> bool:
    """True when an MPI launcher (mpiexec/mpirun/srun with PMI) started this process."""
    return any(k in os.environ for k in LAUNCHER_ENV)


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
        from ..errors import InputError
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
    (MPICH's ``MPI_Abort`` returns before the launcher ends the processes)."""
    comm.Abort(code)
    os._exit(code)


class MpiTransport:
    """One LP per rank (``lp``, on ``comm``); ``nodes``: every node by id (events travel with node ids).

    :meth:`exchange` is the window's one collective (``alltoall``, ``allgather`` for two ranks); the ranks'
    acceleration reports are merged with ``merge_reports`` (every rank then
    holds the same). :meth:`next_min` adds an ``allreduce`` only when the
    boundary put events back. ``sync_s``: seconds spent in collectives.

    Completions and op records stay on the rank where they happened and travel as counts; every
    ``FLUSH_WINDOWS`` windows, and at :meth:`close`, each rank sends its held records (int64
    arrays) to every rank and their ``fct.txt`` lines (``format_finished``, made here) to rank 0,
    and every rank hands them on merged in ``(finish_ps, flow id)`` order. ``tracked(flow id)``
    (None: no flow) names the completions the boundary hook needs at once: these also travel
    in their window.
    """

    def __init__(self, lp, comm, nodes, merge_reports=None, format_finished=None, tracked=None):
        self.lp = lp
        self.comm = comm
        self.nodes = nodes
        self.merge_reports = merge_reports
        self.format_finished = format_finished  # completions -> their output lines (sent to rank 0)
        self.tracked = tracked
        self.sync_s = 0.0
        self.windows = 0
        self.held_fin: list = []  # this rank's completions not yet handed on
        self.held_ops: list = []

    def ready(self) -> float:
        """Wait until every rank has built its part (a barrier); returns the seconds waited."""
        t0 = time.perf_counter()
        self.comm.Barrier()
        return time.perf_counter() - t0

    def first_min(self) -> int:
        return self._allreduce_min(self.lp.next_time())

    def run_until(self, t_end: int) -> None:
        self.lp.run_until(t_end)

    def exchange(self, t_end: int, report) -> Exchanged:
        """To every peer: the events bound for its nodes, this rank's minimum next event time (its
        heap and everything it sends), the window's counts of completions and op records, the
        completions the hook tracks, its report and its signal (and every ``FLUSH_WINDOWS``
        windows the held records); to rank 0 also its PFC records (and the held records' lines).
        A rank's own part is used as it is (nothing of it is serialized); what every peer gets
        alike is pickled once."""
        lp = self.lp
        comm = self.comm
        size = comm.size
        me = comm.rank
        local_min = lp.next_time()
        rep = report(t_end) if report is not None else None
        out: list = [None] * size
        for peer, box in lp.outboxes.items():
            if box:
                for ev in box:
                    if ev[0] < local_min:
                        local_min = ev[0]
                out[peer] = pack_events(box)
                box.clear()
        fin = lp.finished
        n_fin = len(fin)
        tracked: list = []
        if n_fin:
            if self.tracked is not None:
                is_tracked = self.tracked
                tracked = [rec for rec in fin if is_tracked(rec[0])]
            self.held_fin.extend(fin)
            fin.clear()
        n_ops = len(lp.op_log)
        if n_ops:
            self.held_ops.extend(lp.op_log)
            lp.op_log.clear()
        pfc = lp.pfc_log[:]
        lp.pfc_log.clear()
        sig = interrupt.pending()
        self.windows += 1
        batch, lines = self._batch() if self.windows % FLUSH_WINDOWS == 0 else (None, None)
        mine = (local_min, tracked, n_fin, n_ops, rep, sig, batch)
        return self._swap(out, mine, pfc, lines, report is not None)

    def _swap(self, out: list, mine: tuple, pfc: list, lines: list | None, with_report: bool) -> Exchanged:
        """The window's collective and what every rank makes of it (see :meth:`exchange`)."""
        comm = self.comm
        size = comm.size
        me = comm.rank
        common = pickle.dumps(mine, pickle.HIGHEST_PROTOCOL)
        payload = [None if p == me else (out[p], (pfc, lines) if p == 0 else None, common) for p in range(size)]
        t0 = time.perf_counter()
        if size == 2:  # what each sends the other, gathered: a third of alltoall's cost (sizes, then alltoallv)
            peer = 1 - me
            got: list = [None, None]
            got[peer] = pickle.loads(comm.allgather(pickle.dumps(payload[peer], pickle.HIGHEST_PROTOCOL))[peer])
        else:
            got = comm.alltoall(payload)
        self.sync_s += time.perf_counter() - t0
        heap = self.lp.heap
        nodes = self.nodes
        t_min = INF_PS
        sig = mine[5]
        recs: list = pfc[:] if me == 0 else []
        tracked: list = []
        n_fin = n_ops = 0
        reps = []
        batches = []
        peer_lines = []  # rank 0: the lines of the other ranks' held completions, in rank order
        for p in range(size):
            if p == me:
                peer_min, peer_tracked, peer_fin, peer_ops, peer_rep, peer_sig, peer_batch = mine
            else:
                evs, to_rank0, peer_common = got[p]
                peer_min, peer_tracked, peer_fin, peer_ops, peer_rep, peer_sig, peer_batch = pickle.loads(peer_common)
                if evs is not None:
                    unpack_events(evs[0], evs[1], evs[2], nodes, heap)
                if to_rank0 is not None:
                    recs.extend(to_rank0[0])
                    if to_rank0[1] is not None:
                        peer_lines.append(to_rank0[1])
            reps.append(peer_rep)
            if peer_sig > sig:
                sig = peer_sig
            if peer_min < t_min:
                t_min = peer_min
            if peer_tracked:
                tracked.extend(peer_tracked)
            n_fin += peer_fin
            n_ops += peer_ops
            if peer_batch is not None:
                batches.append(peer_batch)
        if len(tracked) > 1:
            tracked.sort(key=_by_finish)
        recs.sort()
        done, out_lines, ops = self._merge(batches, peer_lines, lines) if batches else ([], None, [])
        merged = self.merge_reports(reps) if with_report else None
        return Exchanged(t_min, done, recs, ops, merged, sig, out_lines, tracked, (n_fin, n_ops))

    def close(self) -> Exchanged | None:
        """Every rank leaves the loop here: the records still held, handed on (one ``allgather``)."""
        interrupt.settle()  # only matched collectives follow
        batch, lines = self._batch()
        t0 = time.perf_counter()
        got = self.comm.allgather((batch, lines if self.comm.rank != 0 else None))
        self.sync_s += time.perf_counter() - t0
        done, out_lines, ops = self._merge([b for b, _ in got], [ln for _, ln in got[1:]], lines)
        return Exchanged(INF_PS, done, [], ops, None, 0, out_lines, [], (0, 0))

    def next_min(self, got: Exchanged, put_back: bool) -> int:
        """The exchanged minimum; a new one (``allreduce``) when the boundary put events back
        (a link failure; woken groups, which also kick ports)."""
        if not put_back:
            return got.next_ps
        lp = self.lp
        mine = lp.next_time()
        for box in lp.outboxes.values():
            for ev in box:
                if ev[0] < mine:
                    mine = ev[0]
        return self._allreduce_min(mine)

    def _allreduce_min(self, value: int) -> int:
        t0 = time.perf_counter()
        got = self.comm.allreduce(value, op=_min_op())
        self.sync_s += time.perf_counter() - t0
        return got

    def _batch(self) -> tuple[tuple, list | None]:
        """The held records as int64 arrays ``(completions, op records)``, and the completions' lines."""
        fin = self.held_fin
        fmt = self.format_finished
        lines = fmt(fin) if fmt is not None and fin else []
        batch = (np.array(fin, dtype=np.int64).reshape(-1, 3), np.array(self.held_ops, dtype=np.int64).reshape(-1, 3))
        self.held_fin = []
        self.held_ops = []
        return batch, lines

    def _merge(self, batches: list, peer_lines: list, my_lines) -> tuple[list, list | None, list]:
        """Every rank's held records (``batches``, in rank order) merged in order; on rank 0 with
        a formatter the lines too (``peer_lines``: ranks 1.. in order, ``my_lines``: its own)."""
        fin = np.concatenate([b[0] for b in batches])
        order = np.lexsort((fin[:, 0], fin[:, 1]))
        done = list(map(tuple, fin[order].tolist()))
        out_lines = None
        if self.comm.rank == 0 and self.format_finished is not None:
            every = list(my_lines or [])
            for ln in peer_lines:
                every.extend(ln)
            out_lines = [every[i] for i in order.tolist()]
        ops = np.concatenate([b[1] for b in batches])
        ops = list(map(tuple, ops[np.lexsort((ops[:, 2], ops[:, 1], ops[:, 0]))].tolist()))
        return done, out_lines, ops
def _by_finish(rec):
    return rec[1], rec[0]


def _min_op():
    from mpi4py import MPI
    return MPI.MIN


def allreduce_sum(comm, value):
    from mpi4py import MPI
    return comm.allreduce(value, op=MPI.SUM)

