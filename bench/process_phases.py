#!/usr/bin/env python3
"""One default run (``pwormhole run --out OUT --no-progress``) with CPU timers on its parts; prints
them as a JSON object on its last line (``bench/process_time.py --phases`` runs it).

    python bench/process_phases.py OUT [RUN_ARGS...]

``RUN_ARGS``: options of ``pwormhole run`` (default: none, the default run); under ``mpiexec`` each
rank prints its own object.

Its imports are timed from here, so they stand before the timers: the interpreter's start is the
CPU at the first line, the imports the CPU after those a run makes before its work (``report.page``
included, which the run imports before writing the page).
"""

import time

CPU_AT_START_S = time.process_time()

import atexit  # noqa: E402 (timed: after the start's CPU is read)
import json  # noqa: E402
import os  # noqa: E402
import sys  # noqa: E402

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # as the console script (cli.entry) sets it

from pwormhole import options, run, scenario, simulate, standalone  # noqa: E402
from pwormhole.accel import fluid, wormhole  # noqa: E402
from pwormhole.commands import cli  # noqa: E402
from pwormhole.net import build, dagrun  # noqa: E402
from pwormhole.report import page, writer  # noqa: E402
from pwormhole.sync import mpi  # noqa: E402

CPU_AFTER_IMPORTS_S = time.process_time()
spent: dict[str, float] = {}


def timer(owner, name: str, part: str) -> None:
    """Add the CPU of every call of ``owner.name`` to ``spent[part]``."""
    f = getattr(owner, name)

    def timed(*args, **kwargs):
        t0 = time.process_time()
        try:
            return f(*args, **kwargs)
        finally:
            spent[part] = spent.get(part, 0.0) + time.process_time() - t0
    setattr(owner, name, timed)


TOP = ("scenario (options.prepare_run)", "METIS plan (simulate._plan_owner; under MPI)",
       "network build (Run.__init__)", "standalone FCTs (StandaloneFct.all_ns)",
       "waiting for the other ranks (MpiTransport.ready)", "simulation (Run.run)", "summary (simulate._summarize)",
       "outputs (RunWriter.finish)", "report.html (write_report)")
SUBS = {TOP[0]: ("  of which the training DAG",),
        TOP[2]: ("  of which the network (Network.__init__)", "  of which its DAG tables (DagRuntime.__init__)",
                 "  of which Wormhole's set-up", "  of which NVLink flows (nvlink.nvlink_flows)")}
timer(options, "prepare_run", TOP[0])
timer(scenario, "build_training_dag", SUBS[TOP[0]][0])
timer(simulate, "_plan_owner", TOP[1])
timer(run.Run, "__init__", TOP[2])
timer(build.Network, "__init__", SUBS[TOP[2]][0])
timer(dagrun.DagRuntime, "__init__", SUBS[TOP[2]][1])
timer(wormhole.Wormhole, "__init__", SUBS[TOP[2]][2])
timer(fluid, "nvlink_flows", SUBS[TOP[2]][3])
timer(standalone.StandaloneFct, "all_ns", TOP[3])
timer(mpi.MpiTransport, "ready", TOP[4])
timer(run.Run, "run", TOP[5])
timer(simulate, "_summarize", TOP[6])
timer(writer.RunWriter, "finish", TOP[7])
timer(simulate if hasattr(simulate, "write_report") else page, "write_report", TOP[8])


def report() -> None:
    whole = time.process_time()
    parts = {"interpreter start": CPU_AT_START_S, "imports": CPU_AFTER_IMPORTS_S - CPU_AT_START_S}
    for part in TOP:
        parts[part] = spent.get(part, 0.0)
        for sub in SUBS.get(part, ()):
            parts[sub] = spent.get(sub, 0.0)
    parts["other"] = whole - sum(v for k, v in parts.items() if not k.startswith(" "))
    parts["whole process"] = whole
    print(json.dumps(parts), flush=True)


atexit.register(report)
sys.exit(cli.main(["run", "--out", sys.argv[1], "--no-progress", *sys.argv[2:]]))
