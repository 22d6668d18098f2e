#!/usr/bin/env python3
"""Cost of one window boundary per rank under MPI (a benchmark, not a test).

Runs ``pwormhole run ARGS`` under ``mpiexec -n RANKS`` with the transport instrumented:
before each window's exchange every rank waits at a barrier (the time there is the
imbalance of the window's work, not boundary cost), then the exchange (packing, the
collective, unpacking, merging the reports) and the boundary hook (completions, the
acceleration decisions, up to the next window's events) are timed, in wall and in the
rank's CPU time (which leaves out the time another process held the core). Prints, per rank,
the mean per window of each part and the run's wall and CPU time.

    python3 bench/boundary.py [--ranks 2] -- RUN_ARGS...
    (default RUN_ARGS: the full 64-GPU GPT-7B dist-opt DCQCN iteration, Wormhole mode)

The collective is split in two: a barrier right before it (the wait for the other ranks'
packing: imbalance, not boundary cost) and the collective itself. A rank's own work at the
boundary is the rest (with the ``allreduce`` after a wake, which waits for the peers too); of
it, the ``fct.txt`` lines of its completions (made where the flows finished: output work a
1-rank run does too) and Wormhole's boundary hook are shown apart.

    python3 bench/boundary.py --floor [--ranks 2]
    (the exchange of a window with nothing in it, on a stub LP: the fixed cost per boundary)

The barriers add a few microseconds per window to the run; read ``wall`` of a plain run
for speed. ``CPU in all`` is each rank's CPU time in the window loop's parts; under
``taskset -c 0`` (the ranks share one core, taking turns) it is the work without the
contention of two busy cores, and the MPI calls' CPU is MPICH's polling while it waits.
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
GPT7B_64 = ["--model", "gpt-7b", "--gpus", "64", "--tp", "8", "--pp", "2", "--dist-opt",
            "--topology", "rail-optimized:gpus=64", "--cc", "dcqcn"]


def child(report: str, argv: list[str]) -> int:
    """One rank: the CLI with the transport timed; its figures written to ``report.RANK``."""
    from pwormhole.accel import wormhole
    from pwormhole.commands import cli
    from pwormhole.sync import mpi

    parts = {"wait_s": 0.0, "exchange_s": 0.0, "hook_s": 0.0, "exchange_cpu_s": 0.0, "hook_cpu_s": 0.0,
             "collective_s": 0.0, "peer_wait_s": 0.0, "lines_s": 0.0, "wormhole_s": 0.0,
             "events_cpu_s": 0.0, "mpi_cpu_s": 0.0, "wait_cpu_s": 0.0, "wormhole_cpu_s": 0.0, "windows": 0}
    state: dict = {"t_exchanged": None, "inside": False}  # inside: in the exchange or the hook after it
    cpu = time.thread_time
    orig_exchange = mpi.MpiTransport.exchange
    orig_run_quiet = mpi.MpiTransport.run_quiet
    orig_hook = wormhole.Wormhole.on_boundary

    class TimedComm:
        """The rank's communicator, with a timed barrier before each window's collective."""

        def __init__(self, comm):
            self.comm = comm

        def __getattr__(self, name):
            return getattr(self.comm, name)

        def _timed(self, fn, x):
            t0, c0 = time.perf_counter(), cpu()
            self.comm.Barrier()
            t1 = time.perf_counter()
            got = fn(x)
            parts["peer_wait_s"] += t1 - t0
            parts["collective_s"] += time.perf_counter() - t1
            # inside the exchange's or the hook's CPU (subtracted from them), or outside the loop
            parts["mpi_cpu_s" if state["inside"] else "wait_cpu_s"] += cpu() - c0
            return got

        def allgather(self, x):
            return self._timed(self.comm.allgather, x)

        def alltoall(self, x):
            return self._timed(self.comm.alltoall, x)

    def timed(key, fn):
        def call(*args):
            t0 = time.perf_counter()
            try:
                return fn(*args)
            finally:
                parts[key] += time.perf_counter() - t0
        return call

    def hook(self, t, done, report):
        c0 = cpu()
        try:
            return timed("wormhole_s", orig_hook)(self, t, done, report)
        finally:
            parts["wormhole_cpu_s"] += cpu() - c0

    def exchange(self, t_end, report_fn):
        if not isinstance(self.comm, TimedComm):
            self.comm = TimedComm(self.comm)
            if self.format_finished is not None:
                self.format_finished = timed("lines_s", self.format_finished)
        t0, c0 = time.perf_counter(), cpu()
        self.comm.Barrier()
        t1 = time.perf_counter()
        c1 = cpu()
        parts["wait_cpu_s"] += c1 - c0  # (outside the exchange's CPU: not subtracted from it)
        state["inside"] = True
        got = orig_exchange(self, t_end, report_fn)
        t2 = time.perf_counter()
        c2 = cpu()
        parts["wait_s"] += t1 - t0
        parts["exchange_s"] += t2 - t1
        parts["exchange_cpu_s"] += c2 - c1
        parts["windows"] += 1
        state["t_exchanged"] = (t2, c2)
        return got

    def run_quiet(self, t_end, window_ps, limit_ps):
        if state["t_exchanged"] is not None:
            t2, c2 = state["t_exchanged"]
            parts["hook_s"] += time.perf_counter() - t2
            parts["hook_cpu_s"] += cpu() - c2
            state["t_exchanged"] = None
        state["inside"] = False
        c0 = cpu()
        try:
            return orig_run_quiet(self, t_end, window_ps, limit_ps)
        finally:
            parts["events_cpu_s"] += cpu() - c0

    mpi.MpiTransport.exchange = exchange
    mpi.MpiTransport.run_quiet = run_quiet
    wormhole.Wormhole.on_boundary = hook
    rc = cli.main(argv)
    rank = os.environ.get("PMI_RANK", "0")
    ru = resource.getrusage(resource.RUSAGE_SELF)
    parts["cpu_s"] = ru.ru_utime + ru.ru_stime
    Path(f"{report}.{rank}").write_text(json.dumps(parts))
    return rc


def main() -> int:
    args = sys.argv[1:]
    ranks = 2
    want_floor = False
    while args[:1] in (["--floor"], ["--ranks"]):
        if args[0] == "--floor":
            want_floor, args = True, args[1:]
        else:
            ranks, args = int(args[1]), args[2:]
    if want_floor:
        return floor(ranks)
    if args[:1] == ["--"]:
        args = args[1:]
    run_args = args or GPT7B_64
    mpiexec = shutil.which("mpiexec", path=str(BIN)) or shutil.which("mpiexec")
    with tempfile.TemporaryDirectory() as tmp:
        report = str(Path(tmp) / "parts")
        out = str(Path(tmp) / "out")
        cmd = [mpiexec, "-n", str(ranks), sys.executable, __file__, "--child", report, "run", *run_args,
               "--out", out, "--no-progress"]
        t0 = time.time()
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, cwd=ROOT)
        total = time.time() - t0
        summary = json.loads((Path(out) / "summary.json").read_text())
        print(f"ranks {ranks}  wall {summary['wall_s']:.2f} s  sync {summary.get('sync_wall_s', 0):.2f} s  "
              f"windows {summary['windows']}  process {total:.1f} s  events by rank {summary['events_by_rank']}")
        for r in range(ranks):
            p = json.loads(Path(f"{report}.{r}").read_text())
            w = max(1, p["windows"])
            us = {k: p[k] / w * 1e6 for k in p if k.endswith("_s") and k != "cpu_s"}
            print(f"  rank {r}: per window, wall (CPU)  wait {us['wait_s']:7.1f} us  exchange {us['exchange_s']:6.1f}"
                  f" ({us['exchange_cpu_s']:5.1f}) us  hook {us['hook_s']:6.1f} ({us['hook_cpu_s']:5.1f}) us  boundary "
                  f"{us['exchange_s'] + us['hook_s']:6.1f} ({us['exchange_cpu_s'] + us['hook_cpu_s']:5.1f}) us"
                  f"   process CPU {p['cpu_s']:.1f} s")
            own = us["exchange_s"] - us["peer_wait_s"] - us["collective_s"] + us["hook_s"]
            print(f"          waiting for the peers' packing {us['peer_wait_s']:6.1f} us, the collective "
                  f"{us['collective_s']:5.1f} us; own work {own:6.1f} us, of which fct.txt lines "
                  f"{us['lines_s']:5.1f} us and Wormhole's hook {us['wormhole_s']:5.1f} us")
            ms = {k: p[k] * 1e3 for k in ("events_cpu_s", "exchange_cpu_s", "hook_cpu_s", "mpi_cpu_s",
                                          "wait_cpu_s", "wormhole_cpu_s")}
            print(f"          CPU in all: events {ms['events_cpu_s']:6.1f} ms, boundary without MPI "
                  f"{ms['exchange_cpu_s'] + ms['hook_cpu_s'] - ms['mpi_cpu_s']:6.1f} ms (Wormhole's hook "
                  f"{ms['wormhole_cpu_s']:6.1f} ms), MPI calls (waits, collectives) "
                  f"{ms['mpi_cpu_s'] + ms['wait_cpu_s']:6.1f} ms")
    return 0


def floor(ranks: int, rounds: int = 20000) -> int:
    """The exchange of windows with nothing in them (a stub LP), ``rounds`` times on ``ranks`` ranks."""
    mpiexec = shutil.which("mpiexec", path=str(BIN)) or shutil.which("mpiexec")
    return subprocess.run([mpiexec, "-n", str(ranks), sys.executable, __file__, "--floor-child", str(rounds)],
                          cwd=ROOT).returncode


def floor_child(rounds: int) -> int:
    from types import SimpleNamespace

    from pwormhole.accel.sampling import merge_reports
    from pwormhole.sync.mpi import MpiTransport, world

    comm = world()  # (mpi4py is imported by pwormhole.sync.mpi alone)
    lp = SimpleNamespace(outboxes={p: [] for p in range(comm.size) if p != comm.rank}, finished=[], op_log=[],
                         pfc_log=[], heap=None, next_time=lambda: 10**12, horizon_ps=lambda: 10**12, lead=None)
    transport = MpiTransport(lp, comm, {}, merge_reports)

    def report(t):
        return [], []  # no flow started, no samples due

    for _ in range(rounds // 10):
        transport.exchange(0, report)
    comm.Barrier()
    t0 = time.perf_counter()
    for _ in range(rounds):
        transport.exchange(0, report)
    us = (time.perf_counter() - t0) / rounds * 1e6
    if comm.rank == 0:
        print(f"ranks {comm.size}: an empty window's exchange {us:.1f} us ({rounds} windows)")
    return 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        sys.exit(child(sys.argv[2], sys.argv[3:]))
    if sys.argv[1:2] == ["--floor-child"]:
        sys.exit(floor_child(int(sys.argv[2])))
    sys.exit(main())
