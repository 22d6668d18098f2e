#!/usr/bin/env python3
"""Instructions of the window loop alone, per rank (a benchmark, not a test).

Runs ``pwormhole run ARGS`` under callgrind at 1 rank and at ``--ranks`` ranks (``mpiexec``),
collecting only inside the window loop (``run_windows``): set-up, outputs after the loop and the
launcher are left out. Prints per rank the loop's instructions, those inside MPI calls (MPICH
polls while it waits, so they count waiting, not work) and the rest, and the busiest rank's rest
against the 1-rank loop: the speed-up the ranks would give with no waiting and no contention
between cores. Instruction counts do not drift with the machine's speed; a ``memcpy`` byte
counts as about one instruction, so copies weigh more here than in seconds.

Needs valgrind, its ``callgrind.h`` and gcc (a 10-line helper is compiled into a temporary
folder: callgrind starts and stops collecting through client requests). Takes minutes.

    python3 bench/loop_instructions.py [--ranks 2] [--plan PLAN] [--keep DIR] -- RUN_ARGS...

``--keep DIR`` keeps the callgrind dumps (``one.cg.1``, ``many.cg.RANK.1``) for ``callgrind_annotate``.
Under MPI the held ``fct.txt`` lines are handed on every 64 windows only (not also after a second
of rank 0's clock, which callgrind slows), so that the counts do not depend on the machine's speed.
"""

from __future__ import annotations

import argparse
import ctypes
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
HELPER = """#include <valgrind/callgrind.h>
void loop_start(void) { CALLGRIND_ZERO_STATS; CALLGRIND_START_INSTRUMENTATION; CALLGRIND_TOGGLE_COLLECT; }
void loop_stop(void) { CALLGRIND_TOGGLE_COLLECT; CALLGRIND_DUMP_STATS_AT("loop"); CALLGRIND_STOP_INSTRUMENTATION; }
"""
MPI_CALLS = ("PMPI_Allgather", "PMPI_Barrier", "PMPI_Allreduce", "PMPI_Alltoall")


def child(lib: str, argv: list[str]) -> int:
    """One process: the CLI, callgrind collecting inside ``run_windows`` only."""
    from pwormhole import run as run_module
    from pwormhole.commands import cli
    from pwormhole.sync import mpi

    mpi.FLUSH_S = float("inf")  # hand-ons every FLUSH_WINDOWS windows only, whatever the speed
    helper = ctypes.CDLL(lib)
    loop = run_module.run_windows

    def collected(*args, **kwargs):
        helper.loop_start()
        try:
            return loop(*args, **kwargs)
        finally:
            helper.loop_stop()

    run_module.run_windows = collected
    return cli.main(argv)


def loop_counts(path: str) -> tuple[int, int]:
    """``(instructions, of which inside MPI calls)`` of a callgrind dump."""
    total = int(re.search(r"^summary: (\d+)", Path(path).read_text(), re.M).group(1))
    listing = subprocess.run(["callgrind_annotate", "--inclusive=yes", "--threshold=100", path],
                             capture_output=True, text=True, check=True).stdout
    in_mpi = 0
    for line in listing.splitlines():
        m = re.match(r"\s*([\d,]+) \(.*\)\s+\S+:(PMPI_\w+) ", line)
        if m and m.group(2).startswith(MPI_CALLS):
            in_mpi += int(m.group(1).replace(",", ""))
    return total, in_mpi


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ranks", type=int, default=2)
    ap.add_argument("--plan", help="plan of the ranks (partition --from-run); default: the run's own")
    ap.add_argument("--keep", help="folder to keep the callgrind dumps in")
    ap.add_argument("run_args", nargs="*")
    a = ap.parse_args()
    for tool in ("valgrind", "callgrind_annotate", "gcc"):
        if shutil.which(tool) is None:
            print(f"loop_instructions: {tool} not found", file=sys.stderr)
            return 2
    with tempfile.TemporaryDirectory() as tmp:
        lib = str(Path(tmp) / "libloop.so")
        (Path(tmp) / "loop.c").write_text(HELPER)
        subprocess.run(["gcc", "-O2", "-shared", "-fPIC", "-o", lib, str(Path(tmp) / "loop.c")], check=True)
        dumps = Path(a.keep) if a.keep else Path(tmp)
        dumps.mkdir(parents=True, exist_ok=True)
        vg = ["valgrind", "--tool=callgrind", "--collect-atstart=no", "--instr-atstart=no"]
        env = dict(os.environ, PYTHONHASHSEED="0")

        def cmd(out: str, dump: Path) -> list[str]:
            return vg + [f"--callgrind-out-file={dump}", sys.executable, __file__, "--child", lib, "run",
                         *a.run_args, "--no-progress", "--out", out]

        def run(argv: list[str]) -> bool:
            got = subprocess.run(argv, env=env, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                 text=True)
            if got.returncode != 0:
                print(f"loop_instructions: the run failed (exit {got.returncode}):", file=sys.stderr)
                print("\n".join(got.stderr.splitlines()[-15:]), file=sys.stderr)
            return got.returncode == 0

        one = dumps / "one.cg"
        many = dumps / "many.cg.%q{PMI_RANK}"
        mpiexec = shutil.which("mpiexec", path=str(BIN)) or "mpiexec"
        if not run(cmd(str(Path(tmp) / "one"), one)) or not run(
                [mpiexec, "-n", str(a.ranks)] + cmd(str(Path(tmp) / "many"), many)
                + (["--plan", a.plan] if a.plan else [])):
            return 1
        base, _ = loop_counts(f"{one}.1")
        print(f"1 rank: loop {base / 1e9:.3f} G instructions")
        busiest = 0
        for r in range(a.ranks):
            total, in_mpi = loop_counts(str(many).replace("%q{PMI_RANK}", str(r)) + ".1")
            if in_mpi == 0:
                print(f"loop_instructions: no instructions found in MPI calls on rank {r} (symbols of libmpi?)",
                      file=sys.stderr)
            busiest = max(busiest, total - in_mpi)
            print(f"{a.ranks} ranks, rank {r}: loop {total / 1e9:.3f} G, in MPI calls {in_mpi / 1e9:.3f} G, "
                  f"the rest {(total - in_mpi) / 1e9:.3f} G ({(total - in_mpi) / base:.1%} of the 1-rank loop)")
        print(f"busiest rank's rest: {busiest / base:.1%} of the 1-rank loop; {base / busiest:.2f}x by instruction "
              "count, with no waiting and no contention")
    return 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        sys.exit(child(sys.argv[2], sys.argv[3:]))
    sys.exit(main())
