"""The Python API: run a scenario from a notebook or a script and read its results.

    from pwormhole.api import simulate, load
    res = simulate(model="gpt-350m", gpus=16, tp=8, layers=2, dist_opt=True, out="out/nb")
    res.summary["iteration_time_ns"]         # summary.json as a dict
    res.fcts.fct_ns, res.fcts.size_bytes     # fct.txt as numpy columns
    res.collectives[0]["busbw_gbps"]         # collectives.csv rows (training runs)
    res.report()                             # writes report.html, returns its path
    load("out/nb")                           # the same Result of a finished run's folder

Keyword arguments are the options of ``pwormhole run`` with ``_`` for ``-``
(``dist_opt=True`` is ``--dist-opt``, ``hpcc_config="mix/config.txt"`` is
``--hpcc-config``): the run is the one the command would make, with the same
checks; a wrong value or an unknown option raises
:class:`~pwormhole.errors.InputError` with the command's one-line message.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os

from .commands import cli
from .errors import InputError
from .outfiles import discard_out_dir
from .report.outdir import RunFiles, read_run
from .report.page import write_report
from .run import simulate as run_scenario


class Result(RunFiles):
    """The outputs of one run (:class:`~pwormhole.report.outdir.RunFiles`: None where the run
    wrote no such file), its CSV numbers as int or float."""

    __slots__ = ()

    @property
    def out_dir(self) -> str:
        return self.folder

    def report(self) -> str:
        """Write ``report.html`` in ``out_dir``; returns its path."""
        return write_report(self.folder)


def _run_options() -> dict[str, argparse.Action]:
    """The options of ``pwormhole run`` by flag."""
    sub = next(a for a in cli.build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return sub.choices["run"]._option_string_actions


def run_argv(**options) -> list[str]:
    """The ``pwormhole run`` command line of ``options``: an on/off option takes True, False or None
    (``name=True`` is the flag ``--name``), a whole-number one an int, a number a float or int,
    the others a string, a path or a number (a repeatable one also a list of them); None leaves an option
    out. A value that starts with ``-`` is joined to its flag (``--name=-x``): no value is read as an option.
    InputError, worded for Python, for an unknown option or a value of another type."""
    actions = _run_options()
    argv = ["run"]
    for name, value in options.items():
        flag = "--" + name.replace("_", "-")
        action = actions.get(flag)
        if action is None or flag == "--help":
            raise InputError(f"simulate() got an unexpected keyword argument {name!r}")
        if value is None or value is False:
            if value is False and action.nargs != 0:
                raise InputError(f"simulate(): {name} takes a value, not False (None leaves it out)")
            continue
        if action.nargs == 0:
            if value is not True:
                raise InputError(f"simulate(): {name} must be True or False, not {type(value).__name__} {value!r}")
            argv.append(flag)
            continue
        values = list(value) if isinstance(value, (list, tuple)) and isinstance(action, argparse._AppendAction) \
            else [value]
        for v in values:
            if action.type is int:
                ok = type(v) is int
                kind = "an int"
            elif action.type is float:
                ok = type(v) in (int, float)
                kind = "a number"
            else:
                ok = isinstance(v, (str, os.PathLike)) or type(v) in (int, float)
                kind = "a string, a path or a number"
            if not ok:
                raise InputError(f"simulate(): {name} must be {kind}, not {type(v).__name__} {v!r}")
            text = str(os.fspath(v) if isinstance(v, os.PathLike) else v)
            argv += [f"{flag}={text}"] if text.startswith("-") else [flag, text]  # never read as an option
    return argv


def simulate(progress: bool = False, quiet: bool = True, **options) -> Result:
    """Run the scenario ``options`` describe (see the module docstring) and return its results;
    ``quiet=False`` prints the readable summary, ``progress=True`` shows the progress bar."""
    argv = run_argv(**options)
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err):
            args = cli.build_parser().parse_args(argv)
    except SystemExit:
        raise InputError(err.getvalue().strip().splitlines()[-1]) from None
    args.argv = argv
    try:
        scn, out, until_ps, owner, accel = cli._run_setup(args, None)
        run_scenario(scn, out, until_ps=until_ps, seed=args.seed, n_lps=args.lps, owner=owner, progress=progress,
                     quiet=quiet, plot=args.plot, accel=accel, memo_cache=args.memo_cache,
                     report=args.report)
    except InputError:
        discard_out_dir(getattr(args, "made_out", None))
        raise
    return load(out)


def _number(text: str):
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def _typed(rows: list[dict] | None) -> list[dict] | None:
    """CSV rows with their numbers as int or float."""
    return None if rows is None else [{k: _number(v) for k, v in r.items()} for r in rows]


def load(out_dir: str) -> Result:
    """The results of the run in ``out_dir`` (its ``summary.json`` must be there); CSV rows as
    dicts with numbers as int or float."""
    r = read_run(out_dir)
    return Result(out_dir, r.summary, r.fcts, r.pfc, _typed(r.collectives), _typed(r.timeline))
