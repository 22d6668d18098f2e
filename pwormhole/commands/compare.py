"""``pwormhole compare``: packet mode (the reference) against Wormhole mode on one scenario.

Runs both modes (:func:`pwormhole.run.simulate`) and writes under ``out``:
``packet/`` and ``wormhole/`` (each run's usual outputs), ``compare.json``
and ``fct_error_cdf.png`` (:mod:`pwormhole.report.compare`); prints a table.
"""

from __future__ import annotations

import os

from ..outfiles import REPORT_NAME
from ..report.compare import compare_dirs, plot_cdf, table
from ..report.summary import write_json_atomic
from ..report.writer import check_outputs, claim, prepare_out_dir
from ..simulate import simulate


def compare(scn_factory, out: str, accel, until_ps=None, seed: int = 1, n_lps: int = 1, memo_cache=None,
            first=None, quiet: bool = False, report: bool = False) -> dict:
    """Run ``scn_factory()`` in both modes under ``out`` and write the comparison; returns it
    (``first``: the scenario of the packet run, when already built; ``report``: ``report.html`` will
    be written too). ``compare.json`` names the two runs it compares by their ``run_id``."""
    prepare_out_dir(out)
    check_outputs(out, [], None, memo_cache)
    claim(out, ["compare.json", "fct_error_cdf.png"] + ([REPORT_NAME] if report else []), memo_cache)
    pdir, wdir = os.path.join(out, "packet"), os.path.join(out, "wormhole")
    ps = simulate(first if first is not None else scn_factory(), pdir, until_ps=until_ps, seed=seed, n_lps=n_lps,
                  quiet=True)
    ws = simulate(scn_factory(), wdir, until_ps=until_ps, seed=seed, n_lps=n_lps, quiet=True, accel=accel,
                  memo_cache=memo_cache)
    result, err = compare_dirs(pdir, wdir, ps, ws)
    result["runs"] = {"packet": ps["run_id"], "wormhole": ws["run_id"]}
    write_json_atomic(os.path.join(out, "compare.json"), result)
    plot_cdf(os.path.join(out, "fct_error_cdf.png"), err, ps["scenario"])
    if not quiet:
        print(table(result))
    return result
