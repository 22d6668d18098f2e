"""``pwormhole scale``: the speedup-scaling study of a scenario over rank counts and modes.

Runs ``pwormhole run`` with the same scenario arguments (those after ``--``)
once per mode and rank count, locally (``mpiexec -n R``, or plain Python for
one rank; ``--launcher srun`` inside a Slurm allocation) or as Slurm jobs
(``--slurm``: one sbatch script per run under ``OUT/slurm/``, submitted with
``sbatch --parsable``, waited for by polling ``squeue``). Each run writes its
outputs to ``OUT/<mode>/ranks<R>/``; the study writes:

* ``scaling.csv``, one row per run, columns :data:`COLUMNS`:

  - ``wall_s``, ``cpu_s``, ``sync_wall_s``, ``events``: from the run's ``summary.json``
    (``cpu_s``: CPU time of the simulation summed over the ranks, below ``ranks x wall_s``
    when the ranks waited for a core or for each other; ``sync_wall_s`` is the time spent
    in the MPI exchange; 0 for one rank);
  - ``speedup`` = ``wall_s(packet, 1 rank) / wall_s(mode, R)``: every run
    against the one reference, the plain packet-level run on one rank;
  - ``efficiency`` = ``(wall_s(mode, 1 rank) / wall_s(mode, R)) / R``: the
    parallel efficiency of the mode against itself on one rank (1.0 = linear
    scaling; above 1.0 is warned about: other load on the machine slowed the
    1-rank run);
  - ``identical``: ``fct.txt`` byte-identical to the same mode's 1-rank run
    (the parallel engine must not change the answer);
  - ``max_rel_fct_diff``: ``max |fct - fct_ref| / fct_ref`` over the flows,
    matched by ``(sip, dip, sport, dport)``, against the packet 1-rank run
    (0 for packet runs; the accuracy of an accelerated mode); ``inf`` when
    the two runs did not finish the same set of flows;
  - ``status`` (``ok`` or ``failed``) and ``error`` (the run's error line).

  Rank count 1 and the packet mode are always run, added when missing: they
  are the bases of the definitions above.
* ``scaling.png``: speedup against ranks (log2 axis), one line per mode,
  with the ideal linear line (needs matplotlib; skipped with a warning).

Prints one line per finished run. Exit status 0 when every run succeeded and
every ``identical`` holds, 1 otherwise.

    pwormhole scale --ranks 1,2,4 --modes packet,wormhole --out DIR -- --hpcc-config X
    pwormhole scale --predict 4,8,16,32 --from-run RUN_DIR --out DIR   (nothing run: a prediction,
        :mod:`pwormhole.partition.record`, from a run made with 'run --record-windows')
    python -m pwormhole.commands.scale ...   (the same, without the pwormhole command)
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import math
import os
import shlex
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field

from ..config import RUN_MODES
from ..errors import InputError
from ..outfiles import PLOT_INSTALL, atomic, matplotlib_installed, save_figure
from ..partition.plan import make_plan_from_record
from ..partition.record import EXCHANGE_US, load_of_run, predict
from ..report.summary import write_csv_atomic
from ..report.writer import claim, prepare_out_dir
from .cli import main as cli_main

COLUMNS = ("mode", "ranks", "status", "wall_s", "cpu_s", "sync_wall_s", "events", "speedup", "efficiency",
           "identical", "max_rel_fct_diff", "out", "error")
PREDICTION_COLUMNS = ("ranks", "wall_s", "speedup", "compute_s", "boundary_s", "imbalance")
REFERENCE_MODE = "packet"
OWN_FLAGS = ("--out", "--mode", "--lps", "--plan")  # set per run by scale
DESCRIPTION = ("Run a scenario at each rank count and mode (locally or as Slurm jobs); write scaling.csv and "
               "scaling.png and check every run's fct.txt. Scenario arguments of 'pwormhole run' go after '--'.")


@dataclass
class Run:
    """One run of the study and, once it ended, its outcome."""
    mode: str
    ranks: int
    out: str
    status: str = "pending"
    error: str = ""
    summary: dict = field(default_factory=dict)
    fct: bytes | None = None
    row: dict = field(default_factory=dict)


def add_parser(subparsers) -> argparse.ArgumentParser:
    """Add the ``scale`` subcommand to ``pwormhole``'s subparsers."""
    p = subparsers.add_parser(
        "scale", help="speedup-scaling study: run a scenario over rank counts and modes",
        description=DESCRIPTION)
    _add_arguments(p)
    p.set_defaults(func=main)
    return p


def _add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--ranks", default="1,2,4", help="comma-separated rank counts (default 1,2,4; 1 is always run)")
    p.add_argument("--modes", default="packet", help="comma-separated modes (default packet; packet is always run)")
    p.add_argument("--out", metavar="DIR", default="pwormhole-out/scale",
                   help="study folder (default pwormhole-out/scale)")
    p.add_argument("--launcher", choices=("mpiexec", "srun"), default="mpiexec",
                   help="local launcher of multi-rank runs: mpiexec (next to this Python) or srun (inside a Slurm "
                        "allocation, with --mpi=$PWORMHOLE_SRUN_MPI, default pmi2)")
    p.add_argument("--mpiexec", metavar="PATH", help="mpiexec to use (default: next to this Python, else on PATH)")
    p.add_argument("--slurm", action="store_true", help="submit every run as a Slurm job instead of running it here")
    p.add_argument("--sbatch-arg", action="append", default=[], metavar="ARG",
                   help="extra sbatch option for --slurm, repeatable (e.g. --sbatch-arg=--partition=debug "
                        "--sbatch-arg=--time=00:30:00)")
    p.add_argument("--shared", action="store_true",
                   help="with --slurm: do not ask for --exclusive nodes (timings then share the nodes with other jobs)")
    p.add_argument("--timeout", type=float, default=3600.0,
                   help="seconds: the limit of each local run, or of the wait for all Slurm jobs (default 3600)")
    p.add_argument("--poll", type=float, default=2.0, help="seconds between squeue polls (default 2)")
    p.add_argument("--predict", metavar="R1,R2,...",
                   help="run nothing: predict the wall time at these rank counts from one recorded run "
                        "(--from-run), each with the plan 'partition --from-run' makes; writes prediction.csv")
    p.add_argument("--from-run", metavar="OUT_DIR", help="with --predict: a run made with 'run --record-windows'")
    p.add_argument("--exchange-us", type=float, default=EXCHANGE_US,
                   help=f"with --predict: one window's exchange at 2 ranks, in us (default {EXCHANGE_US:g}, "
                        "measured here by bench/boundary.py; it grows as log2 of the ranks)")
    p.add_argument("run_args", nargs="*", metavar="RUN_ARG", help="after '--': arguments of 'pwormhole run'")


def _parse_list(text: str, what: str) -> list[str]:
    items = [x.strip() for x in text.split(",") if x.strip()]
    if not items:
        raise InputError(f"--{what} is empty")
    return items


def _plan(args) -> tuple[list[str], list[int], list[str]]:
    modes = list(dict.fromkeys(_parse_list(args.modes, "modes")))
    for m in modes:
        if m not in RUN_MODES:
            raise InputError(f"--modes: {m!r} is not a mode of 'pwormhole run' ({', '.join(RUN_MODES)})")
    if REFERENCE_MODE not in modes:
        modes.insert(0, REFERENCE_MODE)
    ranks = []
    for x in _parse_list(args.ranks, "ranks"):
        try:
            r = int(x)
        except ValueError:
            raise InputError(f"--ranks: {x!r} is not an integer") from None
        if r < 1:
            raise InputError(f"--ranks: {r} must be >= 1")
        ranks.append(r)
    ranks = sorted(set(ranks) | {1})
    run_args = list(args.run_args)
    if run_args and run_args[0] == "--":
        run_args = run_args[1:]
    for a in run_args:
        if a.split("=", 1)[0] in OWN_FLAGS:
            raise InputError(f"{a.split('=', 1)[0]} is set by 'scale' for each run; leave it out of the run arguments")
        if a == "--dry-run":
            raise InputError("scale runs the scenario: leave --dry-run out of the run arguments")
    if args.timeout <= 0:
        raise InputError(f"--timeout must be > 0, got {args.timeout}")
    return modes, ranks, run_args


def _run_command(run: Run, run_args: list[str]) -> list[str]:
    return [sys.executable, "-m", "pwormhole", "run", *run_args, "--mode", run.mode, "--out", run.out, "--no-progress"]


def _find_mpiexec(explicit: str | None) -> str:
    if explicit:
        return explicit
    found = shutil.which("mpiexec", path=os.path.dirname(sys.executable)) or shutil.which("mpiexec")
    if not found:
        raise InputError("no mpiexec next to this Python nor on PATH: pip install -e '.[mpi]' (the mpich wheel "
                         "brings it), or give --mpiexec PATH")
    return found


def _error_line(text: str) -> str:
    """The most telling line of a failed run's output: its last 'error' line, else its last line."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    for ln in reversed(lines):
        if "error" in ln.lower():
            return ln
    return lines[-1] if lines else "no output"


def _collect(run: Run, rc: int | None, output: str) -> None:
    """Read a finished run's summary and fct file; mark it ok or failed."""
    summary = os.path.join(run.out, "summary.json")
    fct = os.path.join(run.out, "fct.txt")
    if rc not in (0, None):
        run.status, run.error = "failed", f"exit status {rc}: {_error_line(output)}"
        return
    try:
        with open(summary) as fh:
            run.summary = json.load(fh)
        with open(fct, "rb") as fh:
            run.fct = fh.read()
    except (OSError, ValueError) as e:
        run.status = "failed"
        run.error = f"no results ({e.__class__.__name__}: {e}); {_error_line(output)}"
        return
    run.status = "ok"


def _progress(run: Run, done: int, total: int) -> None:
    if run.status == "ok":
        s = run.summary
        print(f"[{done}/{total}] {run.mode} ranks {run.ranks}: ok  wall {s.get('wall_s', 0):.2f} s  "
              f"sync {s.get('sync_wall_s', 0.0):.2f} s  events {s.get('events', 0)}", flush=True)
    else:
        print(f"[{done}/{total}] {run.mode} ranks {run.ranks}: FAILED  {run.error}", flush=True)


def _run_local(runs: list[Run], run_args: list[str], args) -> None:
    mpiexec = None
    for i, run in enumerate(runs, 1):
        print(f"[{i}/{len(runs)}] {run.mode} ranks {run.ranks}: running into {run.out}", flush=True)
        cmd = _run_command(run, run_args)
        if run.ranks > 1:
            if args.launcher == "srun":
                cmd = ["srun", f"--mpi={os.environ.get('PWORMHOLE_SRUN_MPI', 'pmi2')}", "-n", str(run.ranks), *cmd]
            else:
                mpiexec = mpiexec or _find_mpiexec(args.mpiexec)
                cmd = [mpiexec, "-n", str(run.ranks), *cmd]
        try:
            p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=args.timeout)
            rc, output = p.returncode, p.stdout
        except subprocess.TimeoutExpired as e:
            rc, output = -1, f"error: timed out after {args.timeout:g} s\n"
            out = e.stdout.decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or "")
            output = out + output
        except OSError as e:
            rc, output = -1, f"error: cannot start {cmd[0]}: {e}"
        with atomic(os.path.join(args.out, "logs", f"{run.mode}-ranks{run.ranks}.log")) as fh:
            fh.write(" ".join(shlex.quote(c) for c in cmd) + "\n" + output)
        _collect(run, rc, output)
        _progress(run, i, len(runs))


def sbatch_script(run: Run, run_args: list[str], log: str, sbatch_args: list[str], exclusive: bool = True) -> str:
    """The sbatch script of one run of the study (``--exclusive``: no other job on its nodes skews the timing)."""
    cmd = " ".join(shlex.quote(c) for c in _run_command(run, run_args))
    lines = ["#!/usr/bin/env bash",
             f"#SBATCH --job-name=pw-{run.mode}-r{run.ranks}",
             f"#SBATCH --ntasks={run.ranks}",
             f"#SBATCH --output={log}",
             f"#SBATCH --chdir={os.getcwd()}"]
    if exclusive:
        lines.append("#SBATCH --exclusive")
    lines += [f"#SBATCH {a}" for a in sbatch_args]
    lines += ["# written by 'pwormhole scale --slurm'; PWORMHOLE_SRUN_MPI=pmix for a site MPI built with PMIx",
              "set -euo pipefail",
              f'exec srun --mpi="${{PWORMHOLE_SRUN_MPI:-pmi2}}" -n {run.ranks} {cmd}', ""]
    return "\n".join(lines)


def _squeue_active(ids: list[str]) -> set[str]:
    """The job ids among ``ids`` that Slurm still lists (pending, running, completing)."""
    p = subprocess.run(["squeue", "-h", "-o", "%i", "-j", ",".join(ids)], capture_output=True, text=True, timeout=60)
    if p.returncode == 0:
        return {ln.strip() for ln in p.stdout.split()} & set(ids)
    if "invalid job id" in p.stderr.lower():  # some ids already purged: ask one by one
        if len(ids) == 1:
            return set()
        return set().union(*(_squeue_active([i]) for i in ids))
    raise InputError(f"squeue failed: {p.stderr.strip() or p.returncode}")


def _run_slurm(runs: list[Run], run_args: list[str], args) -> None:
    for tool in ("sbatch", "squeue"):
        if not shutil.which(tool):
            raise InputError(f"--slurm needs '{tool}' on PATH (a Slurm client)")
    folder = os.path.join(args.out, "slurm")
    jobs: dict[str, Run] = {}
    logs: dict[str, str] = {}
    for run in runs:
        base = os.path.join(folder, f"{run.mode}-ranks{run.ranks}")
        log = base + ".log"
        with atomic(base + ".sbatch") as fh:
            fh.write(sbatch_script(run, run_args, log, args.sbatch_arg, not args.shared))
        p = subprocess.run(["sbatch", "--parsable", base + ".sbatch"], capture_output=True, text=True, timeout=120)
        if p.returncode != 0:
            run.status, run.error = "failed", f"sbatch: {_error_line(p.stderr or p.stdout)}"
            continue
        job = p.stdout.strip().split(";")[0]
        jobs[job], logs[job] = run, log
        print(f"submitted {run.mode} ranks {run.ranks}: job {job}", flush=True)
    done = sum(r.status == "failed" for r in runs)
    for r in runs:
        if r.status == "failed":
            _progress(r, done, len(runs))
    pending = list(jobs)
    deadline = time.monotonic() + args.timeout
    while pending:
        active = _squeue_active(pending)
        for job in [j for j in pending if j not in active]:
            pending.remove(job)
            try:
                with open(logs[job], errors="replace") as fh:
                    output = fh.read()
            except OSError:
                output = f"error: no log {logs[job]}"
            _collect(jobs[job], None, output)
            done += 1
            _progress(jobs[job], done, len(runs))
        if not pending:
            break
        if time.monotonic() > deadline:
            subprocess.run(["scancel", *pending], capture_output=True, timeout=60)
            for job in pending:
                run = jobs[job]
                run.status = "failed"
                run.error = f"job {job} still queued or running after {args.timeout:g} s; cancelled"
                done += 1
                _progress(run, done, len(runs))
            break
        time.sleep(args.poll)


def _fct_by_flow(data: bytes) -> dict[tuple, int]:
    out = {}
    for line in data.decode().splitlines():
        f = line.split()
        if len(f) >= 7:
            out[tuple(f[:4])] = int(f[6])
    return out


def max_rel_fct_diff(a: bytes, ref: bytes) -> float:
    """``max |fct - fct_ref| / fct_ref`` over flows matched by (sip, dip, sport, dport); inf if the sets differ."""
    fa, fr = _fct_by_flow(a), _fct_by_flow(ref)
    if fa.keys() != fr.keys():
        return math.inf
    return max((abs(fa[k] - fr[k]) / fr[k] for k in fr if fr[k] > 0), default=0.0)


def _rows(runs: list[Run]) -> list[dict]:
    by = {(r.mode, r.ranks): r for r in runs}
    ref = by.get((REFERENCE_MODE, 1))
    ref_wall = ref.summary.get("wall_s") if ref and ref.status == "ok" else None
    ref_fct = ref.fct if ref and ref.status == "ok" else None  # a run "ok" has read its fct file
    rows = []
    for r in runs:
        row: dict[str, object] = dict.fromkeys(COLUMNS, "")
        row.update(mode=r.mode, ranks=r.ranks, status=r.status, out=r.out, error=r.error)
        if r.status == "ok":
            s = r.summary
            wall = float(s["wall_s"])
            row.update(wall_s=f"{wall:.6f}", sync_wall_s=f"{float(s.get('sync_wall_s', 0.0)):.6f}",
                       events=s.get("events", ""), cpu_s=f"{float(s['cpu_s']):.6f}" if "cpu_s" in s else "")
            if ref_wall:
                row["speedup"] = f"{ref_wall / wall:.6f}"
            base = by.get((r.mode, 1))
            if base and base.status == "ok":
                row["efficiency"] = f"{float(base.summary['wall_s']) / wall / r.ranks:.6f}"
                row["identical"] = base.fct == r.fct
            if ref_fct is not None and r.fct is not None:
                row["max_rel_fct_diff"] = f"{max_rel_fct_diff(r.fct, ref_fct):.6g}"
        r.row = row
        rows.append(row)
    return rows


def efficiency_warnings(rows: list[dict]) -> list[str]:
    """One line per run whose parallel efficiency exceeds 1.0 (faster than linear: its 1-rank base
    was slowed by other load on the machine, or the runs did not get a core per rank)."""
    out = []
    for r in rows:
        if r["status"] == "ok" and r["efficiency"] != "" and float(r["efficiency"]) > 1.0:
            base = next(b for b in rows if b["mode"] == r["mode"] and b["ranks"] == 1)
            out.append(f"{r['mode']} on {r['ranks']} ranks has efficiency {float(r['efficiency']):.3f} > 1.0: "
                       f"its 1-rank run (wall {float(base['wall_s']):.3f} s, CPU {_cpu(base)}) was likely slowed by "
                       f"other load on the machine; the timings of this study are not reliable")
    return out


def _cpu(row: dict) -> str:
    return f"{float(row['cpu_s']):.3f} s" if row.get("cpu_s") else "unknown"


def write_csv(path: str, rows: list[dict]) -> None:
    write_csv_atomic(path, COLUMNS, rows)


def plot(path: str, rows: list[dict], title: str) -> bool:
    """``scaling.png``: speedup against ranks, one line per mode. False when matplotlib is missing."""
    if not matplotlib_installed():
        return False
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4.2))
    all_ranks = sorted({int(r["ranks"]) for r in rows})
    for mode in dict.fromkeys(r["mode"] for r in rows):
        pts = sorted((int(r["ranks"]), float(r["speedup"])) for r in rows if r["mode"] == mode and r["speedup"] != "")
        if pts:
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=mode)
    ax.plot(all_ranks, all_ranks, linestyle="--", color="grey", linewidth=1, label="ideal (linear)")
    ax.set_xscale("log", base=2)
    ax.set_xticks(all_ranks)
    ax.set_xticklabels([str(r) for r in all_ranks])
    ax.set_xlabel("MPI ranks")
    ax.set_ylabel("speedup over packet mode on 1 rank")
    ax.set_title(title)
    ax.grid(True, alpha=0.3)
    ax.legend()
    fig.tight_layout()
    save_figure(fig, path)
    return True


def predict_main(args) -> int:
    """``--predict``: the predicted wall time and speedup at each rank count (1 added), from the
    recorded run ``--from-run``, each with its own plan balanced from the record."""
    if not args.from_run:
        raise InputError("--predict needs --from-run OUT_DIR (a run made with 'run --record-windows')")
    if args.run_args:
        raise InputError("--predict runs nothing: leave out the run arguments")
    if args.exchange_us < 0:
        raise InputError(f"--exchange-us must be >= 0, got {args.exchange_us:g}")
    ranks = sorted({_rank_count(x) for x in _parse_list(args.predict, "predict")} | {1})
    out = os.path.abspath(args.out)
    rec = load_of_run(args.from_run)
    if ranks[-1] > rec.n_units:
        raise InputError(f"--predict: {ranks[-1]} ranks for a run of {rec.n_units} indivisible units: "
                         f"use at most {rec.n_units}")
    prepare_out_dir(out)
    rows = []
    base = None
    for r in ranks:
        plan = make_plan_from_record(rec, r)
        owner_unit = [0] * rec.n_units
        for node, u in enumerate(rec.unit):
            owner_unit[int(u)] = plan.owner[node]
        pr = predict(rec, owner_unit, r, args.exchange_us)
        base = base if base is not None else pr.wall_s
        rows.append({"ranks": r, "wall_s": round(pr.wall_s, 4), "speedup": round(base / pr.wall_s, 3),
                     "compute_s": round(pr.compute_s, 4), "boundary_s": round(pr.boundary_s, 4),
                     "imbalance": round(pr.imbalance, 4)})
        print(f"ranks {r:4d}  predicted wall {pr.wall_s:8.3f} s  speedup {base / pr.wall_s:6.2f}x  busiest rank "
              f"{pr.compute_s:.3f} s  boundaries {pr.boundary_s:.3f} s  imbalance {pr.imbalance * 100:.1f}%",
              flush=True)
    claim(out, ["prediction.csv"])
    write_csv_atomic(os.path.join(out, "prediction.csv"), PREDICTION_COLUMNS, rows)
    print(f"prediction of {rec.windows} windows and {rec.n_units} units in {out}/prediction.csv (CPU seconds of "
          f"the recorded run: a machine shared with other work runs slower)")
    return 0


def _rank_count(x: str) -> int:
    try:
        r = int(x)
    except ValueError:
        raise InputError(f"--predict: {x!r} is not an integer") from None
    if r < 1:
        raise InputError(f"--predict: {r} must be >= 1")
    return r


def main(args) -> int:
    """Run the study described by parsed ``args`` (see :func:`add_parser`); 0 when all is well."""
    if args.predict:
        return predict_main(args)
    modes, ranks, run_args = _plan(args)
    out = os.path.abspath(args.out)
    args.out = out
    for mode in modes:  # the run arguments, checked by a dry run in each mode before anything
        try:
            with contextlib.redirect_stdout(io.StringIO()):
                code = cli_main(["run", *run_args, "--mode", mode, "--dry-run", "--out", out])
        except SystemExit as e:  # (argparse's way out for an unknown option)
            code = e.code if isinstance(e.code, int) else 2
        if code:
            return code  # (its one-line error said why)
    prepare_out_dir(out)
    claim(out, ["scaling.csv", "scaling.png"])
    os.makedirs(os.path.join(out, "slurm" if args.slurm else "logs"), exist_ok=True)
    runs = [Run(m, r, os.path.join(out, m, f"ranks{r}")) for m in modes for r in ranks]
    for run in runs:  # stale results of an earlier study must not pass for this one's
        for name in ("summary.json", "fct.txt"):
            try:
                os.remove(os.path.join(run.out, name))
            except FileNotFoundError:
                pass
    print(f"scale: {len(runs)} runs (modes {','.join(modes)}; ranks {','.join(map(str, ranks))}) in {out}/",
          flush=True)
    if args.slurm:
        _run_slurm(runs, run_args, args)
    else:
        _run_local(runs, run_args, args)
    rows = _rows(runs)
    write_csv(os.path.join(out, "scaling.csv"), rows)
    scenario = next((r.summary.get("scenario") for r in runs if r.summary.get("scenario")), "scenario")
    if not plot(os.path.join(out, "scaling.png"), rows, f"pwormhole scaling: {scenario}"):
        print(f"scale: warning: matplotlib is not installed ({PLOT_INSTALL}); scaling.png not written",
              file=sys.stderr)
    _report(rows)
    print(f"study in {out}/ (scaling.csv, scaling.png, <mode>/ranks<R>/)")
    failed = [r for r in rows if r["status"] != "ok"]
    differ = [r for r in rows if r["identical"] is False]
    return 1 if failed or differ else 0


def _same(identical) -> str:
    """The console's word for ``identical`` (the mode's own 1-rank run is the reference)."""
    return {True: "identical", False: "DIFFERS"}.get(identical, "-")


def _percent(rel: str) -> str:
    """``max_rel_fct_diff`` (a fraction, against packet mode on one rank) in percent."""
    return f"{float(rel) * 100:.3f}%" if rel not in ("", None) else "-"


def _report(rows: list[dict]) -> None:
    print(f"{'mode':<10} {'ranks':>5} {'wall_s':>9} {'cpu_s':>9} {'sync_s':>8} {'speedup':>8} {'effic.':>7} "
          "fct.txt vs 1 rank  max FCT error vs packet on 1 rank")
    for r in rows:
        if r["status"] != "ok":
            print(f"{r['mode']:<10} {r['ranks']:>5} FAILED: {r['error']}")
            continue
        print(f"{r['mode']:<10} {r['ranks']:>5} {float(r['wall_s']):9.3f} {float(r['cpu_s'] or 'nan'):9.3f} "
              f"{float(r['sync_wall_s']):8.3f} {float(r['speedup'] or 'nan'):8.3f} "
              f"{float(r['efficiency'] or 'nan'):7.3f} {_same(r['identical']):<17}  {_percent(r['max_rel_fct_diff'])}")
    for w in efficiency_warnings(rows):
        print(f"scale: warning: {w}", file=sys.stderr)
    for r in rows:
        if r["identical"] is False:
            print(f"MISMATCH: {r['mode']} on {r['ranks']} ranks: fct.txt differs from {r['mode']} on 1 rank "
                  f"({r['out']}/fct.txt; max relative FCT difference vs packet/1 rank {r['max_rel_fct_diff']})")


def cli(argv: list[str] | None = None) -> int:
    """``pwormhole scale ARGS`` (``python -m pwormhole.commands.scale ARGS``, as a batch job runs it):
    the command line's exit statuses and messages (:func:`pwormhole.commands.cli.main`)."""
    return cli_main(["scale", *(sys.argv[1:] if argv is None else argv)])


if __name__ == "__main__":
    sys.exit(cli())
