"""The Python API: run a scenario from a notebook or a script and read its results.

    from pwormhole.api import simulate, load
    res = simulate(model="gpt-350m", gpus=16, tp=8, layers=2, dist_opt=True, out="out/nb")
    res.summary["iteration_time_ns"]         # summary.json as a dict
    res.fcts.fct_ns, res.fcts.size_bytes     # fct.txt as numpy columns
    res.collectives[0]["busbw_gbps"]         # collectives.csv rows (training runs)
    res.report()                             # writes report.html, returns its path
    res.flows_frame()                        # fct.txt as a pandas DataFrame (pandas installed)
    res.link_util(), res.qlen()              # the monitors' files (run with --monitor)
    load("out/nb")                           # the same Result of a finished run's folder

Keyword arguments are the options of ``pwormhole run`` with ``_`` for ``-``
(``dist_opt=True`` is ``--dist-opt``, ``hpcc_config="mix/config.txt"`` is
``--hpcc-config``), the fields of :class:`~pwormhole.options.RunOptions` (which
``simulate`` also takes whole): the run is the one the command would make, with the
same checks; a value of another type, an unknown option or a wrong value raises
:class:`~pwormhole.errors.InputError` with a one-line message.
"""

from __future__ import annotations

import dataclasses
import os

import numpy as np

from .errors import InputError
from .options import RunOptions, prepare_run
from .outfiles import discard_out_dir
from .report.monitor_read import LinkUtil, QlenHist, read_link_util, read_qlen
from .report.outdir import RunFiles, nvlink_mask, read_run
from .report.page import write_report
from .simulate import simulate as run_scenario

FLOW_COLUMNS = ("src", "dst", "size_bytes", "start_ns", "fct_ns", "standalone_ns", "slowdown", "nvlink")


class Result(RunFiles):
    """The outputs of one run (:class:`~pwormhole.report.outdir.RunFiles`: None where the run
    wrote no such file), its CSV numbers as int or float."""

    __slots__ = ()

    @property
    def out_dir(self) -> str:
        return self.folder

    def __repr__(self) -> str:
        """One line (the fields hold every flow, collective and timeline row: printed whole, a
        training run's fills a notebook)."""
        s = self.summary
        parts = [f"out_dir={self.folder!r}", f"scenario={s.get('scenario')!r}", f"mode={s.get('mode')!r}",
                 f"flows_finished={s.get('flows_finished')}"]
        if s.get("iteration_time_ns") is not None:
            parts.append(f"iteration_time_ns={s['iteration_time_ns']}")
        for name in ("collectives", "timeline"):
            rows = getattr(self, name)
            if rows is not None:
                parts.append(f"{name}=<{len(rows)} rows>")
        return f"Result({', '.join(parts)})"

    def report(self) -> str:
        """Write ``report.html`` in ``out_dir``; returns its path."""
        return write_report(self.folder)

    def flow_columns(self) -> dict[str, np.ndarray]:
        """The finished flows as columns (:data:`FLOW_COLUMNS`; one entry per ``fct.txt`` line):
        ``src``/``dst`` node ids, times in ns, ``slowdown`` = FCT / standalone FCT, ``nvlink``
        true for a flow inside a server (over NVLink), false for one through the NICs."""
        f = self.fcts
        if f is None or f.src is None or f.dst is None:
            return {c: np.zeros(0, dtype=bool if c == "nvlink" else np.int64) for c in FLOW_COLUMNS}
        gps = (self.summary.get("inputs") or {}).get("gpus_per_server") or 0
        inside = nvlink_mask(f, gps)
        return {"src": f.src, "dst": f.dst, "size_bytes": f.size_bytes, "start_ns": f.start_ns, "fct_ns": f.fct_ns,
                "standalone_ns": f.standalone_ns, "slowdown": f.fct_ns / np.maximum(f.standalone_ns, 1),
                "nvlink": inside if inside is not None else np.zeros(len(f.fct_ns), dtype=bool)}

    def flows_frame(self):
        """:meth:`flow_columns` as a ``pandas.DataFrame``. pandas is an optional dependency
        (``pip install 'pwormhole[pandas]'``), imported here only; InputError without it."""
        try:
            import pandas as pd
        except ImportError:
            raise InputError("flows_frame() needs pandas: pip install 'pwormhole[pandas]' "
                             "(flow_columns() gives the same columns as numpy arrays)") from None
        return pd.DataFrame(self.flow_columns())

    def link_util(self) -> LinkUtil | None:
        """``link_util.csv`` by column (None: the run had no ``--monitor``)."""
        path = os.path.join(self.folder, "link_util.csv")
        return read_link_util(path) if os.path.exists(path) else None

    def qlen(self) -> QlenHist | None:
        """The last block of ``qlen.txt``: per switch port, samples per KB of queue (None: no monitor)."""
        path = os.path.join(self.folder, "qlen.txt")
        return read_qlen(path) if os.path.exists(path) else None


def simulate(options: RunOptions | None = None, /, *, progress: bool = False, quiet: bool = True,
             **keywords) -> Result:
    """Run the scenario that ``options`` (a :class:`~pwormhole.options.RunOptions`) or the keyword
    arguments describe (see the module docstring) and return its results; ``quiet=False`` prints the
    readable summary, ``progress=True`` shows the progress bar. A keyword argument of another type
    than its option's, or an unknown one, is an :class:`~pwormhole.errors.InputError`."""
    if options is not None and keywords:
        raise InputError("simulate() takes a RunOptions or keyword arguments, not both")
    if options is not None and not isinstance(options, RunOptions):
        raise InputError(f"simulate() takes a RunOptions as its one positional argument, not "
                         f"{type(options).__name__} {str(options)[:40]!r}")
    # (a RunOptions made by hand has its fields checked as keyword arguments are)
    opts = RunOptions.of_keywords("simulate()", **(options.given() if options is not None else keywords))
    prep = prepare_run(opts)
    try:
        run_scenario(prep.scenario, prep.out, dataclasses.replace(prep.settings, progress=progress, quiet=quiet,
                                                                  report=opts.report))
    except InputError:
        discard_out_dir(prep.made_out)
        raise
    return load(prep.out)


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
    if not isinstance(out_dir, (str, os.PathLike)):
        raise InputError(f"load() takes an output folder's path, not {type(out_dir).__name__} {out_dir!r}")
    r = read_run(os.fspath(out_dir))
    training = "iteration_time_ns" in r.summary  # a flow list has no collectives or timeline: empty, not None
    empty: list[dict] | None = [] if not training else None
    return Result(out_dir, r.summary, r.fcts, r.pfc, _typed(r.collectives) or empty, _typed(r.timeline) or empty)
