"""Conservative synchronization over MPI (mpi4py; the only module importing it).

One rank runs one LP. After each window ``[kL, (k+1)L)`` the ranks make one
collective exchange (``alltoall``): to every peer a rank sends the events
bound for that peer's nodes (with their original keys; node objects travel
as node ids), its minimum next event time (its heap and everything it sends:
all known before the exchange, so the global minimum needs no second
collective), the flow completions and DAG op records of the window and, to rank 0,
its PFC records, and the signal it received (:mod:`pwormhole.sync.interrupt`).
Every rank then knows the same completions and the same next window,
so all take the same decisions; empty windows are skipped by jumping to the
window of the global minimum. Termination: every flow finished, or no event
before the stop time on any rank (nothing can be in flight: in-flight
packets are events in some rank's heap or in the exchange itself), or a
signal on any rank (every rank raises the same exception at that boundary).
"""

from __future__ import annotations

import os
import time
from heapq import heappush

from ..lp.engine import INF_PS, next_due_ps
from . import interrupt

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


def run_windows_mpi(lp, comm, nodes, window_ps: int, stop_ps: int, on_boundary, accel=None,
                    cut_ps=()) -> tuple[int, int, float]:
    """The window loop of :func:`pwormhole.sync.local.run_windows` across MPI ranks.

    With Wormhole acceleration (``accel``), each rank's
    :meth:`~pwormhole.accel.wormhole.Wormhole.local_report` (flows started,
    samples of its senders) travels in the same exchange, and
    ``on_boundary`` receives every rank's reports merged, so all ranks take
    the same decisions; frozen groups' wake times count as pending events.
    ``cut_ps``: times that must be boundaries (as in ``run_windows``).

    A signal recorded on any rank (:func:`pwormhole.sync.interrupt.pending`)
    travels in the exchange; every rank handles that window's completions,
    then raises :func:`~pwormhole.sync.interrupt.exception_for` the highest
    signal number at the same boundary.

    Returns ``(last boundary, windows run, seconds spent in the exchange)``.
    """
    size = comm.size
    rank = comm.rank
    heap = lp.heap
    sync_s = 0.0
    t0 = time.perf_counter()
    t_min = comm.allreduce(lp.next_time(), op=_min_op())
    if accel is not None:
        t_min = next_due_ps(t_min, accel.next_wake_ps())
    sync_s += time.perf_counter() - t0
    windows = 0
    t_end = 0
    cuts = sorted(set(cut_ps))
    while True:
        if t_min >= stop_ps or t_min >= INF_PS:
            interrupt.settle()  # every rank leaves here: only matched collectives follow
            return (min(t_end, stop_ps) if t_min >= INF_PS else stop_ps), windows, sync_s
        t_end = (t_min // window_ps + 1) * window_ps
        cut = bool(cuts) and cuts[0] <= t_end
        if cut:
            t_end = cuts.pop(0)
        if t_end > stop_ps:
            t_end = stop_ps
        lp.run_until(t_end)
        local_min = lp.next_time()
        rep = accel.local_report(t_end) if accel is not None else None
        out = [[] for _ in range(size)]
        for peer, box in lp.outboxes.items():
            if box:
                evs = out[peer]
                for t, k, kind, target, arg in box:
                    evs.append((t, k, kind, target.node_id, arg))
                    if t < local_min:
                        local_min = t
                box.clear()
        fin = lp.finished[:]
        lp.finished.clear()
        pfc = lp.pfc_log[:]
        lp.pfc_log.clear()
        ops = lp.op_log[:]
        lp.op_log.clear()
        sig = interrupt.pending()
        payload = [(out[p], local_min, fin, pfc if p == 0 else None, ops, rep, sig) for p in range(size)]
        t0 = time.perf_counter()
        got = comm.alltoall(payload)
        sync_s += time.perf_counter() - t0
        t_min = INF_PS
        done = []
        recs = []
        op_recs = []
        reps = []
        for evs, peer_min, peer_fin, peer_pfc, peer_ops, peer_rep, peer_sig in got:
            reps.append(peer_rep)
            if peer_sig > sig:
                sig = peer_sig
            for t, k, kind, nid, arg in evs:
                heappush(heap, (t, k, kind, nodes[nid], arg))
            if peer_min < t_min:
                t_min = peer_min
            done.extend(peer_fin)
            if peer_pfc:
                recs.extend(peer_pfc)
            op_recs.extend(peer_ops)
        done.sort(key=lambda r: (r[1], r[0]))
        recs.sort()
        op_recs.sort()
        windows += 1
        merged = accel.merge_reports(reps) if accel is not None else None
        stop = on_boundary(t_end, done, recs if rank == 0 else [], op_recs, merged)
        if stop:
            interrupt.settle()
            return t_end, windows, sync_s
        if sig:  # some rank was signalled: every rank stops here
            interrupt.settle()
            raise interrupt.exception_for(sig)
        if cut or (accel is not None and accel.woke):
            # the boundary put events back (a link failure; woken groups, which also kick ports): the new
            # global minimum (``cut`` and ``woke`` are the same on every rank)
            if accel is not None:
                accel.woke = False
            mine = lp.next_time()
            for box in lp.outboxes.values():
                for ev in box:
                    if ev[0] < mine:
                        mine = ev[0]
            t0 = time.perf_counter()
            t_min = comm.allreduce(mine, op=_min_op())
            sync_s += time.perf_counter() - t0
        if accel is not None:
            t_min = next_due_ps(t_min, accel.next_wake_ps())  # a frozen group's wake (same value on every rank)


def _min_op():
    from mpi4py import MPI
    return MPI.MIN


def allreduce_sum(comm, value):
    from mpi4py import MPI
    return comm.allreduce(value, op=MPI.SUM)

