"""``pwormhole compare``: packet mode (the reference) against Wormhole mode on one scenario.

Runs both modes (:func:`pwormhole.simulate.simulate`) and writes under ``out``:
``packet/`` and ``wormhole/`` (each run's usual outputs), ``compare.json``
and ``fct_error_cdf.png`` (:mod:`pwormhole.report.compare`); prints a table. With
``spread=K`` it also runs ``K`` packet runs under perturbations that should not matter
(:func:`perturbed`) into ``spread/run<i>/``, in parallel processes, and judges each of Wormhole's
errors against the packet run's own spread (:mod:`pwormhole.report.spread`, the fidelity rule).
"""

from __future__ import annotations

import multiprocessing
import os
import random
import sys

from ..errors import InputError
from ..outfiles import PLOT_INSTALL, REPORT_NAME
from ..report.compare import collective_times, compare_dirs, plot_cdf, table
from ..report.spread import Verdict, collective_spread, judge, passes, spread_of
from ..report.spread import table as spread_table
from ..report.summary import write_json_atomic
from ..report.writer import check_outputs, claim, prepare_out_dir
from ..simulate import simulate
from ..workload.dag import OP_COMPUTE

SPREAD_JITTER_PS = 5_000  # compute ops (or a flow list's starts) move by up to +-2.5 ns
SPREAD_CC_STEP = 0.005  # the CC's additive step (RATE_AI) moves by +-0.5%
SPREAD_FOLDER = "spread"


def perturbed(scn, run: int, jitter_ps: int = SPREAD_JITTER_PS):
    """``scn`` as packet run ``run`` (1..K) of the spread has it: every compute op's duration (a flow
    list: every flow's start) moved by a uniform draw in ``[-jitter_ps/2, +jitter_ps/2]`` (clipped at
    0) seeded by ``run``, and ``RATE_AI`` moved by +0.5% (odd runs) or -0.5% (even runs); the run
    also takes another seed of the per-node random streams (ECN marks, ECMP salts)."""
    rng = random.Random(run)
    half = jitter_ps // 2
    if scn.dag is not None:
        dag = scn.dag
        for op in range(len(dag)):
            if dag.kind[op] == OP_COMPUTE and dag.arg[op] > 0:
                dag.arg[op] = max(0, dag.arg[op] + rng.randrange(jitter_ps + 1) - half)
    else:
        scn.flows = [f._replace(start_ps=max(0, f.start_ps + rng.randrange(jitter_ps + 1) - half)) for f in scn.flows]
    cfg = scn.config
    cfg.rate_ai_bps = max(1, round(cfg.rate_ai_bps * (1 + SPREAD_CC_STEP * (1 if run % 2 else -1))))
    return scn


def compare(scn_factory, out: str, accel, until_ps=None, seed: int = 1, n_lps: int = 1, memo_cache=None,
            first=None, quiet: bool = False, report: bool = False, spread: int = 0,
            spread_jitter_ps: int = SPREAD_JITTER_PS, progress: bool | None = False) -> dict:
    """Run ``scn_factory()`` in both modes under ``out`` and write the comparison; returns it
    (``first``: the scenario of the packet run, when already built; ``report``: ``report.html`` will
    be written too; ``spread``: perturbed packet runs to judge the errors against, :func:`perturbed`;
    ``progress``: each run's bar, as ``run`` shows it, and a line as each run starts).
    ``compare.json`` names the runs it compares by their ``run_id``."""
    if spread < 0:
        raise InputError(f"--spread must be >= 0, got {spread}")
    prepare_out_dir(out)
    check_outputs(out, [], None, memo_cache)
    claim(out, ["compare.json", "fct_error_cdf.png"] + ([REPORT_NAME] if report else []), memo_cache)
    pdir, wdir = os.path.join(out, "packet"), os.path.join(out, "wormhole")
    runs = 2 + spread
    if progress is not False:
        print(f"compare: run 1 of {runs}: packet mode into {pdir}", file=sys.stderr, flush=True)
    ps = simulate(first if first is not None else scn_factory(), pdir, until_ps=until_ps, seed=seed, n_lps=n_lps,
                  quiet=True, progress=progress)
    if progress is not False:
        print(f"compare: run 2 of {runs}: Wormhole mode into {wdir}", file=sys.stderr, flush=True)
    ws = simulate(scn_factory(), wdir, until_ps=until_ps, seed=seed, n_lps=n_lps, quiet=True, accel=accel,
                  memo_cache=memo_cache, progress=progress)
    result, err = compare_dirs(pdir, wdir, ps, ws)
    result["runs"] = {"packet": ps["run_id"], "wormhole": ws["run_id"]}
    if spread:
        if progress is not False:
            print(f"compare: runs 3-{runs} of {runs}: {spread} perturbed packet runs at once into "
                  f"{os.path.join(out, 'spread')}", file=sys.stderr, flush=True)
        result["spread"] = _spread(scn_factory, out, pdir, wdir, result, spread, spread_jitter_ps, until_ps, seed,
                                   n_lps)
    write_json_atomic(os.path.join(out, "compare.json"), result)
    if not plot_cdf(os.path.join(out, "fct_error_cdf.png"), err, ps["scenario"]):
        print(f"pwormhole: warning: matplotlib is not installed ({PLOT_INSTALL}); fct_error_cdf.png not written",
              file=sys.stderr)
    if not quiet:
        print(table(result))
        if spread:
            print(spread_report(result["spread"]))
    return result


def spread_report(sp: dict) -> str:
    """The readable verdicts of a comparison's ``spread`` (``compare.json``)."""
    verdicts = {m: Verdict(**v) for m, v in sp["metrics"].items()}
    coll = sp["collectives"]
    lines = [f"against the packet run's own spread ({sp['runs']} perturbed runs: compute +-{sp['jitter_ps'] / 2e3:g} "
             f"ns, RATE_AI +-{sp['cc_step'] * 100:g}%, other seeds):", spread_table(verdicts)]
    if coll["count"]:
        lines.append(f"collectives: {coll['outside_spread']} of {coll['count']} outside the spread, "
                     f"{coll['over_limit']} over 0.1%")
    lines.append("fidelity rule: " + ("passes" if sp["passes"] else "FAILS"))
    return "\n".join(lines)


def _spread(scn_factory, out: str, pdir: str, wdir: str, result: dict, k: int, jitter_ps: int, until_ps, seed: int,
            n_lps: int) -> dict:
    """The ``k`` perturbed packet runs (parallel processes) and the verdicts of ``result``'s metrics."""
    runs = [os.path.join(out, SPREAD_FOLDER, f"run{i}") for i in range(1, k + 1)]

    def job(i: int) -> None:
        simulate(perturbed(scn_factory(), i, jitter_ps), runs[i - 1], until_ps=until_ps, seed=seed + i,
                 n_lps=n_lps, quiet=True)

    failed = run_in_processes([lambda i=i: job(i) for i in range(1, k + 1)])
    if failed:
        i, why = failed[0]
        raise RuntimeError(f"perturbed packet run {i + 1} of --spread failed: {why}")
    comparisons = [compare_dirs(pdir, r)[0] for r in runs]
    spread = spread_of(comparisons)
    verdicts = judge(result, spread)
    ref_c = collective_times(os.path.join(pdir, "collectives.csv"))
    coll = collective_spread(ref_c, collective_times(os.path.join(wdir, "collectives.csv")),
                             [collective_times(os.path.join(r, "collectives.csv")) for r in runs])
    ok = passes(verdicts) and coll["over_limit"] == 0
    return {"runs": k, "jitter_ps": jitter_ps, "cc_step": SPREAD_CC_STEP, "folders": [os.path.relpath(r, out)
                                                                                     for r in runs],
            "metrics": {m: v.as_dict() for m, v in verdicts.items()}, "collectives": coll, "passes": ok,
            "perturbed": comparisons}


def run_in_processes(jobs, workers: int | None = None) -> list[tuple[int, str]]:
    """Run each job (a callable) in a forked process, at most ``workers`` at once (default: the CPUs);
    returns ``(job index, why)`` of the jobs that failed, in order."""
    ctx = multiprocessing.get_context("fork")
    workers = max(1, min(len(jobs), workers or os.cpu_count() or 1))
    pending = list(enumerate(jobs))
    running: list = []
    failed = []
    while pending or running:
        while pending and len(running) < workers:
            i, job = pending.pop(0)
            reader, writer = ctx.Pipe(duplex=False)
            proc = ctx.Process(target=_child, args=(job, writer))
            proc.start()
            writer.close()
            running.append((i, proc, reader))
        i, proc, reader = running.pop(0)
        try:
            why = reader.recv()
        except EOFError:  # it ended without a word (killed)
            why = None
        proc.join()
        if proc.exitcode != 0 or why:
            failed.append((i, why or f"exit {proc.exitcode}"))
    return sorted(failed)


def _child(job, writer) -> None:
    """A forked job: runs it, sends its error (or an empty string) back, and exits."""
    try:
        job()
        writer.send("")
    except BaseException as e:  # noqa: BLE001 - reported to the parent, one line
        writer.send(f"{type(e).__name__}: {e}" if not isinstance(e, InputError) else str(e))
    finally:
        sys.stdout.flush()
