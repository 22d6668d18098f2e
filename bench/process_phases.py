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
import sys  # noqa: E402

from pwormhole import options, run, scenario, simulate, standalone  # noqa: E402
from pwormhole.accel import wormhole  # noqa: E402
from pwormhole.commands import cli  # noqa: E402
from pwormhole.report import page, writer  # noqa: E402

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


TOP = ("scenario (options.prepare_run)", "network build (Run.__init__)", "standalone FCTs (StandaloneFct.all_ns)",
       "simulation (Run.run)", "summary (simulate._summarize)", "outputs (RunWriter.finish)",
       "report.html (write_report)")
timer(options, "prepare_run", TOP[0])
timer(scenario, "build_training_dag", "  of which the training DAG")
timer(run.Run, "__init__", TOP[1])
timer(wormhole.Wormhole, "__init__", "  of which Wormhole's set-up")
timer(standalone.StandaloneFct, "all_ns", TOP[2])
timer(run.Run, "run", TOP[3])
timer(simulate, "_summarize", TOP[4])
timer(writer.RunWriter, "finish", TOP[5])
timer(simulate if hasattr(simulate, "write_report") else page, "write_report", TOP[6])


def report() -> None:
    whole = time.process_time()
    parts = {"interpreter start": CPU_AT_START_S, "imports": CPU_AFTER_IMPORTS_S - CPU_AT_START_S}
    for part in TOP:
        parts[part] = spent.get(part, 0.0)
        for sub in ("  of which the training DAG",) if part == TOP[0] else \
                ("  of which Wormhole's set-up",) if part == TOP[1] else ():
            parts[sub] = spent.get(sub, 0.0)
    parts["other"] = whole - sum(v for k, v in parts.items() if not k.startswith(" "))
    parts["whole process"] = whole
    print(json.dumps(parts), flush=True)


atexit.register(report)
sys.exit(cli.main(["run", "--out", sys.argv[1], "--no-progress", *sys.argv[2:]]))
