"""Errors judged against the packet run's own spread (``compare --spread``, pwormhole.report.spread)."""

from __future__ import annotations

import json
from pathlib import Path

from helpers import G100, US, config, flows_of, star_topo

from pwormhole.accel.wormhole import AccelConfig
from pwormhole.commands import cli
from pwormhole.commands.compare import SPREAD_CC_STEP, compare, perturbed, run_in_processes
from pwormhole.report.compare import compare_dirs
from pwormhole.report.spread import judge, passes, spread_of, table, verdict
from pwormhole.scenario import Scenario
from pwormhole.simulate import simulate
from pwormhole.topology.model import Link, Topology


def _apart():
    """Two 20 MB DCQCN flows between distinct hosts of a star: nothing shared, nothing to move them."""
    return Scenario("apart", star_topo(4), flows_of([(0, 1, 20_000_000, 0), (2, 3, 20_000_000, 0)]), config())


def _incast(rate_bps: int = G100):
    """Four 2 MB DCQCN flows into host 0 of a star with links of ``rate_bps``."""
    topo = Topology(6, frozenset({5}), [Link(h, 5, rate_bps, US) for h in range(5)])
    cfg = config()
    cfg.fill_k_maps({rate_bps})  # (ECN thresholds for the rate, scaled from HPCC's)
    return Scenario("incast", topo, flows_of([(s, 0, 2_000_000, 0) for s in range(1, 5)]), cfg)


def test_perturbed_runs_move_compute_or_starts_the_cc_step_and_the_seed():
    scn = perturbed(_incast(), 1, 5_000)
    assert all(0 <= f.start_ps <= 2_500 for f in scn.flows) and any(f.start_ps for f in scn.flows)
    assert scn.config.rate_ai_bps == round(config().rate_ai_bps * (1 + SPREAD_CC_STEP))
    assert perturbed(_incast(), 2, 5_000).config.rate_ai_bps == round(config().rate_ai_bps * (1 - SPREAD_CC_STEP))


def test_a_well_conditioned_scenario_has_no_spread_and_wormhole_passes(tmp_path, capsys):
    """Flows that share nothing: the perturbed packet runs give the same FCTs (spread 0 within 0.01%),
    and Wormhole's errors pass the rule."""
    r = compare(_apart, str(tmp_path / "c"), AccelConfig(), spread=2, quiet=True)
    sp = r["spread"]
    assert sp["runs"] == 2 and len(sp["perturbed"]) == 2
    for m in ("mean_fct_error", "p99_fct_error", "max_fct_error"):
        assert sp["metrics"][m]["spread"] < 1e-4, (m, sp["metrics"][m])
    assert sp["metrics"]["mean_fct_error"]["passes"] and sp["passes"]
    saved = json.loads((tmp_path / "c" / "compare.json").read_text())
    assert saved["spread"]["metrics"] == sp["metrics"]
    assert sorted(p.name for p in (tmp_path / "c" / "spread").iterdir()) == ["run1", "run2"]


def test_a_rate_change_that_matters_is_outside_the_spread(tmp_path):
    """Against the packet run of a 4-to-1 incast, its own perturbed runs move its FCTs little; a run on
    links 10% slower moves every flow by about 10%: outside the spread, and the rule fails."""
    ref, slower = tmp_path / "ref", tmp_path / "slower"
    simulate(_incast(), str(ref), quiet=True)
    simulate(_incast(90 * 10**9), str(slower), quiet=True)
    runs = [tmp_path / f"p{i}" for i in (1, 2, 3)]
    for i, folder in enumerate(runs, 1):
        simulate(perturbed(_incast(), i), str(folder), seed=1 + i, quiet=True)
    spread = spread_of([compare_dirs(str(ref), str(r))[0] for r in runs])
    assert spread["mean_fct_error"] < 0.02
    c, _ = compare_dirs(str(ref), str(slower))
    v = judge(c, spread)
    assert 0.09 < v["mean_fct_error"].error < 0.12 and not v["mean_fct_error"].within_spread
    assert not v["mean_fct_error"].passes and not passes(v)
    assert not v["fct_p99_shift"].within_spread and not v["fct_p99_shift"].passes


def test_the_rule_of_each_metric():
    assert verdict("mean_fct_error", 0.009, 0.0).passes and not verdict("mean_fct_error", 0.011, 0.5).passes
    assert verdict("p99_fct_error", 0.05, 0.04).passes  # over 3%, but within 1.5x the spread
    assert not verdict("p99_fct_error", 0.07, 0.04).passes  # over 3% and over 1.5x the spread
    assert verdict("iteration_time_error", 0.0009, 0.0).passes and not verdict("iteration_time_error", 0.002, 1).passes
    assert verdict("max_fct_error", 0.5, 0.1).passes is None  # no rule: beside the spread only
    assert verdict("fct_p50_shift", None, 0.1) .error is None
    # the table says which half of the rule a metric passed by
    lines = table({"p99_fct_error": verdict("p99_fct_error", 0.05, 0.04),
                   "fct_p99_shift": verdict("fct_p99_shift", 0.024, 0.01),
                   "mean_fct_error": verdict("mean_fct_error", 0.011, 0.5)}).splitlines()
    assert lines[1].endswith("outside (1.2x)      passes (within 1.5x the spread)")
    assert lines[2].endswith("outside (2.4x)      passes (under 3%)") and lines[3].endswith("FAILS")


def test_jobs_in_processes_report_failures():
    def boom():
        raise ValueError("no")

    assert run_in_processes([lambda: None, boom, lambda: None], workers=2) == [(1, "ValueError: no")]


def test_compare_spread_option_and_its_report(tmp_path, capsys):
    out = tmp_path / "c"
    rc = cli.main(["compare", "--model", "gpt-350m", "--gpus", "16", "--tp", "8", "--layers", "1", "--spread", "2",
                   "--report", "--out", str(out), "--no-progress"])
    text = capsys.readouterr().out
    assert rc == 0
    assert "against the packet run's own spread (2 perturbed runs" in text and "fidelity rule: " in text
    page = (out / "report.html").read_text()
    assert "Against the packet run&#x27;s own spread" in page or "Against the packet run's own spread" in page
    assert Path(out / "spread" / "run2" / "fct.txt").is_file()
    assert cli.main(["compare", "--spread", "-1", "--out", str(tmp_path / "x")]) == 2
