"""``pwormhole report``: the numbers it shows (hand-computed), the page it writes, its errors."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from helpers import ROOT

from pwormhole import run as run_mod
from pwormhole.api import load
from pwormhole.commands import cli as cli_mod
from pwormhole.commands import scale
from pwormhole.config import ModelConfig
from pwormhole.errors import InputError
from pwormhole.report import analysis
from pwormhole.report import page as page_mod
from pwormhole.report.compare import fct_errors, fct_quantile_shifts
from pwormhole.report.outdir import Fcts, Pfc, read_csv, read_fcts
from pwormhole.report.page import SECTIONS
from pwormhole.report.summary import percentiles, readable
from pwormhole.report.writer import RunWriter
from pwormhole.scenario import Scenario
from pwormhole.units import format_time
from pwormhole.workload.dag import Dag
from pwormhole.workload.flows import Flow, flow_columns

INCAST = ROOT / "tests" / "data" / "incast"
# 8 hosts send 1 MB each to host 0 through one switch with a 1 MB buffer: PFC pauses (about 0.3 s)
INCAST_ARGS = ["--topology", str(INCAST / "star9_topology.txt"), "--flows", str(INCAST / "incast8_flows.txt"),
               "--config", str(INCAST / "pfc_config.txt"), "--no-progress"]
SECTION_IDS = [sid for sid, _ in SECTIONS]


def cli(*args):
    return subprocess.run([sys.executable, "-m", "pwormhole", *map(str, args)], capture_output=True, text=True,
                          cwd=ROOT, timeout=300)


class PageFacts(HTMLParser):
    """The section ids, figures and every attribute that could fetch something, of a page."""

    def __init__(self):
        super().__init__()
        self.sections: list[str] = []
        self.svgs = 0
        self.fetching: list[tuple[str, str, str]] = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "section":
            self.sections.append(a.get("id"))
        if tag == "svg":
            self.svgs += 1
        if tag in ("script", "link", "img", "iframe", "object", "embed"):
            self.fetching.append((tag, "", ""))
        for k, v in attrs:
            if k in ("src", "href", "xlink:href", "action") and v and not v.startswith(("#", "data:")):
                self.fetching.append((tag, k, v))


def page_facts(path: Path) -> PageFacts:
    p = PageFacts()
    p.feed(path.read_text(encoding="utf-8"))
    return p


# --------------------------------------------------------------------------- numbers


def _fcts(sizes, fcts, standalone):
    n = len(sizes)
    return Fcts(np.array(sizes), np.zeros(n, dtype=np.int64), np.array(fcts), np.array(standalone))


def test_slowdown_by_size_as_hpcc_fct_analysis():
    # 40 flows: sizes 1..40 KB, slowdown (fct / standalone) = size index + 1 except two below 1 (clamped)
    sizes = [1000 * (i + 1) for i in range(40)]
    standalone = [100] * 40
    fcts = [100 * (i + 1) for i in range(40)]
    fcts[0], fcts[1] = 50, 90  # slowdowns 0.5 and 0.9 count as 1
    buckets = analysis.slowdown_by_size(_fcts(sizes, fcts, standalone), step_pct=10)
    assert len(buckets) == 10 and all(b.flows == 4 for b in buckets)
    b0 = buckets[0]  # flows 1..4: slowdowns 1, 1, 3, 4; get_pctl: index int(4 * p) -> 2, 3, 3
    assert (b0.lo_pct, b0.hi_pct, b0.max_size_bytes) == (0, 10, 4000)
    assert (b0.p50, b0.p95, b0.p99) == (3.0, 4.0, 4.0)
    b9 = buckets[9]  # flows 37..40
    assert (b9.max_size_bytes, b9.p50, b9.p95, b9.p99) == (40_000, 39.0, 40.0, 40.0)
    # fewer flows than buckets: the empty ones are left out, the slices are i*n//100..(i+step)*n//100
    few = analysis.slowdown_by_size(_fcts([5, 3, 9], [10, 30, 90], [10, 10, 10]), step_pct=5)
    assert [(b.lo_pct, b.flows, b.max_size_bytes, b.p50) for b in few] == [(30, 1, 3, 3.0), (65, 1, 5, 1.0),
                                                                            (95, 1, 9, 9.0)]


def test_pause_counts_per_node_and_bin():
    # node 7 (switch) pauses at 0, 10, 95 ns; node 2 (host) at 50 ns; resumes (kind 0) are not counted
    pfc = Pfc(np.array([0, 10, 50, 95, 96]), np.array([7, 7, 2, 7, 2]), np.array([1, 1, 0, 1, 0]),
              np.array([1, 1, 1, 1, 0]))
    edges, counts, left = analysis.pause_counts(pfc, 0, bins=2, top=1)
    assert list(counts) == [7] and counts[7].tolist() == [2, 1] and left == 1
    assert edges.tolist() == [0, 47.5, 95]  # from the traffic's start to the last pause (in the last bin)
    assert analysis.node_types(pfc) == {7: 1, 2: 0}
    # traffic from 2 s (HPCC's flows): the bins start there, not at 0
    late = pfc._replace(time_ns=pfc.time_ns + 2_000_000_000)
    edges, counts, _ = analysis.pause_counts(late, 2_000_000_000, bins=2, top=1)
    assert edges.tolist() == [2_000_000_000, 2_000_000_047.5, 2_000_000_095] and counts[7].tolist() == [2, 1]


def test_timeline_rows_per_gpu_and_per_server():
    def row(g, kind, a, b):
        return {"gpu": str(g), "kind": kind, "start_ns": str(a), "end_ns": str(b)}
    # GPU 0 computes 0-10 and 20-30, communicates 5-25: exposed 10-20; GPU 1 communicates 40-50 only
    rows = [row(0, "compute", 0, 10), row(0, "compute", 20, 30), row(0, "comm", 5, 25), row(1, "comm", 40, 50)]
    out, what = analysis.timeline_rows(rows, 8)
    assert what == "GPU" and [r.label for r in out] == ["GPU 0", "GPU 1"]
    assert out[0].exposed == [(10, 20)] and out[1].exposed == [(40, 50)] and out[1].compute == []
    # 40 GPUs > 32 rows: one row per server of 8, its GPUs' intervals merged
    many = [row(g, "compute", 10 * g, 10 * g + 15) for g in range(40)]
    out, what = analysis.timeline_rows(many, 8)
    assert what == "server (8 GPUs)" and len(out) == 5 and out[1].label == "GPUs 8-15"
    assert out[0].compute == [(0, 85)]  # 0-15, 10-25, ..., 70-85 overlap into one interval
    out, what = analysis.timeline_rows(many, 0, max_rows=2)  # unknown server size: 8, doubled to fit
    assert what == "group of 32 GPUs" and len(out) == 2


# --------------------------------------------------------------------------- the page


@pytest.mark.slow
def test_report_of_a_flow_run_has_every_section_and_fetches_nothing(tmp_path):
    out = tmp_path / "inc"
    r = cli("run", *INCAST_ARGS, "--out", out, "--report")
    assert r.returncode == 0, r.stderr
    assert f"open {out / 'report.html'}" in r.stdout
    s = json.loads((out / "summary.json").read_text())
    assert s["inputs"]["command"].startswith("pwormhole run --topology") and s["inputs"]["hosts"] == 9
    assert s["cpu_s"] > 0
    page = page_facts(out / "report.html")
    assert page.sections == SECTION_IDS
    assert page.fetching == [] and page.svgs == 3  # slowdown by size, FCT CDF, PFC pauses
    text = (out / "report.html").read_text()
    assert "Content-Security-Policy\" content=\"default-src 'none';" in text
    assert "not a training run" in text and "no link_util.csv here" in text and "no queue-length monitor" in text
    # the cards give summary.json's nearest-rank percentiles (of 8 flows, p50 is the 4th, not a mean of two)
    for card, want in (("FCT p50", format_time(int(s["fct_ns"]["p50"]) * 1000)),
                       ("FCT p99", format_time(int(s["fct_ns"]["p99"]) * 1000)),
                       ("slowdown p50", f"{s['slowdown']['p50']:.3f}"),
                       ("slowdown p99", f"{s['slowdown']['p99']:.3f}")):
        assert f"<b>{want}</b><span>{card}</span>" in text, card
    pauses = sum(1 for ln in (out / "pfc.txt").read_text().splitlines() if ln.split()[4] == "1")
    assert pauses > 0
    per_node = [int(x) for x in _table_after(text, "pause frames received")]
    assert sum(per_node) == pauses
    # the report command writes the same page again from the files (the run drew it from the FCT
    # columns it held)
    written = (out / "report.html").read_bytes()
    (out / "report.html").unlink()
    r = cli("report", out)
    assert r.returncode == 0 and (out / "report.html").read_bytes() == written


def test_the_run_holds_the_fct_columns_it_writes(tmp_path):
    """The FCT columns a run holds (its report.html is drawn from them) are those its fct.txt reads
    back, for completions of this process (tuples) and of other ranks (int64 rows), node 300 too."""
    flows = [Flow(0, 1, 2, 3, 100, 1000, -1, 10000), Flow(1, 300, 2, 3, 100, 2500, -1, 10001),
             Flow(2, 2, 1, 3, 100, 7, -1, 10002)]
    scn = SimpleNamespace(flows=flows, config=ModelConfig(), flow_columns=lambda: flow_columns(flows))
    writer = RunWriter(scn, str(tmp_path), [900, 2000, 5], True)
    writer.on_flows([(1, 9_876_543, 1_234_567)])
    writer.on_flows(np.array([[0, 5_000_499, 2_000], [2, 70_000, 69_999]], dtype=np.int64))
    writer.commit()
    held, read = writer.fcts(), read_fcts(str(tmp_path / "fct.txt"))
    assert [a.tolist() for a in held] == [a.tolist() for a in read]
    assert held.start_ns.tolist() == [1234, 2, 69] and held.fct_ns.tolist() == [8642, 4998, 0]
    assert held.src.tolist() == [300, 1, 2]


def test_the_slowdown_cards_are_the_summarys_below_one_too():
    """Flows faster than their standalone FCT: the cards give the slowdowns ``summary.json`` gives
    (0.600 at p50 of 0.5, 0.6, 9), not floored at 1 as the by-size chart takes them."""
    f = Fcts(np.array([1000, 2000, 3000]), np.zeros(3, np.int64), np.array([50, 60, 900]), np.array([100, 100, 100]))
    html = page_mod._fct_part(f, "")
    want = percentiles([0.5, 0.6, 9.0])
    assert f"<b>{want['p50']:.3f}</b><span>slowdown p50</span>" in html and want["p50"] == 0.6
    assert f"<b>{want['p99']:.3f}</b><span>slowdown p99</span>" in html


def _table_after(text: str, header: str) -> list[str]:
    """The last column of the rows of the table whose header ends with ``header``."""
    part = text[text.index(header):]
    part = part[:part.index("</table>")]
    return [cell.split("</td>")[0] for cell in part.split("<td>")[1:]][1::2]


def test_report_of_compare_and_scaling_folders(tmp_path):
    out = tmp_path / "cmp"
    r = cli("compare", *INCAST_ARGS, "--out", out, "--report")
    assert r.returncode == 0, r.stderr
    c = json.loads((out / "compare.json").read_text())
    text = (out / "report.html").read_text()
    assert page_facts(out / "report.html").sections == SECTION_IDS
    assert f"{c['flows_compared']} / {c['flows']}" in text and "error CDF over 8 flows" in text
    assert "no compare.json" not in text
    # a scaling study's folder: its table, figure and the warning of an efficiency above 1
    study = tmp_path / "study"
    study.mkdir()
    rows = [{"mode": "packet", "ranks": 1, "status": "ok", "wall_s": "10.0", "cpu_s": "9.9", "sync_wall_s": "0",
             "events": 100, "speedup": "1.0", "efficiency": "1.0", "identical": True, "max_rel_fct_diff": "0",
             "out": "x", "error": ""},
            {"mode": "packet", "ranks": 2, "status": "ok", "wall_s": "4.0", "cpu_s": "8.0", "sync_wall_s": "0.1",
             "events": 100, "speedup": "2.5", "efficiency": "1.25", "identical": True, "max_rel_fct_diff": "0",
             "out": "y", "error": ""}]
    scale.write_csv(str(study / "scaling.csv"), rows)
    assert cli_mod.main(["report", str(study)]) == 0
    text = (study / "report.html").read_text()
    assert page_facts(study / "report.html").sections == SECTION_IDS
    assert "efficiency above 1.0 for packet on 2 ranks" in text and "no summary.json" not in text


def test_report_errors_are_one_line(tmp_path, capsys):
    assert cli_mod.main(["report", str(tmp_path / "nowhere")]) == 2
    assert capsys.readouterr().err.strip() == f"pwormhole: error: output folder '{tmp_path / 'nowhere'}' does not exist"
    assert cli_mod.main(["report", str(tmp_path)]) == 2
    assert "holds no summary.json, compare.json nor scaling.csv" in capsys.readouterr().err
    (tmp_path / "summary.json").write_text('{"mode": "packet",\n oops}')
    assert cli_mod.main(["report", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"{tmp_path / 'summary.json'}:2" in err[0] and "not valid JSON" in err[0]
    (tmp_path / "summary.json").write_text('{"mode": "packet"}')
    assert cli_mod.main(["report", str(tmp_path)]) == 2
    assert "names no 'outputs' and 'run_id'" in capsys.readouterr().err
    (tmp_path / "summary.json").write_text('{"mode": "packet", "run_id": "1", "outputs": ["fct.txt", "summary.json"]}')
    (tmp_path / "fct.txt").write_text("0b000101 0b000201 10000 100 1000 0 5000 4000\n0b000101 0b000201 x\n")
    assert cli_mod.main(["report", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"{tmp_path / 'fct.txt'}:2" in err[0] and "3 columns, expected 8" in err[0]
    assert not (tmp_path / "report.html").exists()


def test_fct_file_read_at_once_or_line_by_line_gives_the_same(tmp_path):
    """A regular fct.txt is converted column by column; any other (a blank line, extra columns) line by
    line, with the same values; a bad value is named with its line either way."""
    lines = ["0b000101 0b000201 10000 100 1000 0 5000 4000", "0b010001 0b000301 10001 100 2000 7 6000 -4"]
    p = tmp_path / "fct.txt"
    p.write_text("\n".join(lines) + "\n")
    f = read_fcts(str(p))
    assert f.src.tolist() == [1, 256] and f.dst.tolist() == [2, 3] and f.standalone_ns.tolist() == [4000, -4]
    for other in ("\n\n".join(lines), lines[0] + " 99\n" + lines[1], " \n".join(lines)):
        p.write_text(other)
        assert [a.tolist() for a in read_fcts(str(p))] == [a.tolist() for a in f]
    for bad, why in (("7x", "not an integer"), ("-9223372036854775808", "outside the 64-bit integers"),
                     ("9223372036854775808", "outside the 64-bit integers")):
        p.write_text(lines[0] + "\n" + lines[1].replace("6000", bad) + "\n")
        with pytest.raises(InputError, match=f"fct.txt:2: fct.txt line has a value (that is )?{why}"):
            read_fcts(str(p))


def test_report_of_a_run_where_no_flow_finished(tmp_path):
    out = tmp_path / "early"
    r = cli("run", *INCAST_ARGS, "--out", out, "--until", "1us", "--report", "--mode", "packet")
    assert r.returncode == 0, r.stderr  # stopped where asked, and says so
    assert "FCT              none finished" in r.stdout and "(INCOMPLETE)" in r.stdout
    text = (out / "report.html").read_text()
    assert "FCT: none finished" in text and "INCOMPLETE run" in text


def test_scaling_csv_has_cpu_time_and_warns_above_linear(capsys):
    def row(ranks, wall, cpu, status="ok"):
        return scale.Run("packet", ranks, f"o{ranks}", status=status,
                         summary={"wall_s": wall, "cpu_s": cpu, "events": 10}, fct=b"")
    rows = scale._rows([row(1, 10.0, 6.0), row(2, 4.0, 7.9)])
    assert rows[0]["cpu_s"] == "6.000000" and rows[1]["efficiency"] == "1.250000"
    assert scale.efficiency_warnings(rows) == [
        "packet on 2 ranks has efficiency 1.250 > 1.0: its 1-rank run (wall 10.000 s, CPU 6.000 s) was likely "
        "slowed by other load on the machine; the timings of this study are not reliable"]
    scale._report(rows)
    assert "scale: warning: packet on 2 ranks has efficiency 1.250" in capsys.readouterr().err
    assert scale.efficiency_warnings(scale._rows([row(1, 10.0, 9.9), row(2, 5.5, 10.5)])) == []


def test_expected_end_is_the_critical_path_or_last_flow(monkeypatch):
    # flows: the end is the last standalone end (500 us + 200 us), not the last start (600 us + 7 us)
    flows = [Flow(0, 1, 0, 3, 100, 10_000, 0), Flow(1, 2, 0, 3, 100, 10_000, 600_000_000),
             Flow(2, 3, 0, 3, 100, 1_000, 500_000_000)]
    scn = Scenario("x", None, flows, None)  # type: ignore[arg-type]
    assert run_mod.expected_end_ps(scn, [5_000, 7_000, 200_000]) == 700_000_000
    # a DAG: compute 5 us -> flow (standalone 2 us) -> compute 3 us; beside it compute 9 us
    dag = Dag()
    c0 = dag.compute(1, 5_000_000)
    f = dag.flow(1, 2, 1000, deps=[c0])
    dag.compute(2, 3_000_000, deps=[f])
    dag.compute(3, 9_000_000)
    assert dag.critical_path_ps([2_000_000]) == 10_000_000
    assert run_mod.expected_end_ps(Scenario("d", None, dag.flows, None, dag=dag), [2_000]) == 10_000_000  # type: ignore[arg-type]
    # the bar's total is the expected end, raised to the time reached when the run goes past it
    monkeypatch.setattr(run_mod, "PROGRESS_AFTER_S", 0.0)
    bar = run_mod._Progress(700_000_000, True)
    bar.last = -1.0
    bar.update(350_000_000, 10)
    assert bar.bar.total == 700.0 and bar.bar.n == 350.0
    bar.last = -1.0
    bar.update(900_000_000, 20)
    assert bar.bar.total == 900.0 and bar.bar.n == 900.0
    bar.close()
    # given as a function, the expected end is asked for once, when the bar first shows
    asked = []
    bar = run_mod._Progress(lambda: asked.append(1) or 700_000_000, True)
    assert not asked
    bar.last = -1.0
    bar.update(350_000_000, 10)
    bar.last = -1.0
    bar.update(360_000_000, 11)
    assert asked == [1] and bar.bar.total == 700.0 and bar.bar.n == 360.0
    bar.close()


def test_timeline_csv_matches_the_summary(tmp_path):
    r = cli("run", "--model", "gpt-350m", "--gpus", "16", "--tp", "8", "--layers", "2", "--dist-opt",
            "--out", tmp_path, "--no-progress")
    assert r.returncode == 0, r.stderr
    s = json.loads((tmp_path / "summary.json").read_text())
    with open(tmp_path / "timeline.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    for g in s["gpus"]:
        comp = sum(int(r["end_ns"]) - int(r["start_ns"]) for r in rows
                   if int(r["gpu"]) == g["gpu"] and r["kind"] == "compute")
        comm = sum(int(r["end_ns"]) - int(r["start_ns"]) for r in rows
                   if int(r["gpu"]) == g["gpu"] and r["kind"] == "comm")
        n = sum(1 for r in rows if int(r["gpu"]) == g["gpu"])
        assert abs(comp - g["compute_ns"]) <= n and abs(comm - g["comm_ns"]) <= n  # ns rounding per interval


def test_fct_quantile_shifts_compare_the_distributions_not_the_flows():
    """Four flows that swap their FCTs: every flow is far off (per-flow errors 300%, 50%, 33%, 75%)
    and the FCT distribution is the same; the same flows 10% slower shift both quantiles by +10%."""
    ref = {"a": 100, "b": 200, "c": 300, "d": 400}
    swapped = {"a": 400, "b": 300, "c": 200, "d": 100}
    assert [round(e, 4) for e in fct_errors(ref, swapped)] == [3.0, 0.5, 0.3333, 0.75]
    assert fct_quantile_shifts(ref, swapped) == {0.5: 0.0, 0.99: 0.0}
    slower = {k: v * 11 // 10 for k, v in ref.items()}
    assert {q: round(v, 6) for q, v in fct_quantile_shifts(ref, slower).items()} == {0.5: 0.1, 0.99: 0.1}
    assert fct_quantile_shifts(ref, {"e": 5}) == {}  # no flow in both
    # 100 flows of 1..100 us, the two longest twice as long: the median holds, the 99th percentile
    # (99 us, the 99th of 100) moves to 198 us, the mean by 3.9%
    many = {i: i * 1000 for i in range(1, 101)}
    tail = {i: v * 2 if i >= 99 else v for i, v in many.items()}
    assert fct_quantile_shifts(many, tail) == {0.5: 0.0, 0.99: 1.0}


def test_console_gives_compute_exposed_communication_and_idle_adding_to_the_iteration():
    """Two GPUs of a 10 ms iteration: compute 3 and 5 ms, exposed communication 4 and 2 ms
    (communication 6 and 2 ms): per GPU 4 + 3 + 3 (idle, the pipeline bubble) = 10 ms."""
    stats = {"mean": 1000, "p50": 1000, "p99": 1000, "max": 1000}
    summary = {"scenario": "s", "mode": "packet", "cc": "dcqcn", "ranks": 1, "complete": True, "flows": 1,
               "flows_finished": 1, "sim_time_ps": 10**10, "fct_ns": stats, "slowdown": {"mean": 1.0, "p50": 1.0,
               "p99": 1.0}, "bytes_sent": 1, "bytes_delivered": 1, "drops": 0, "pfc_pauses": 0, "ecn_marks": 0,
               "wall_s": 0.1, "events": 10, "events_per_s": 100, "iterations": [10_000_000],
               "gpus": [{"compute_ns": 3_000_000, "comm_ns": 6_000_000, "exposed_comm_ns": 4_000_000},
                        {"compute_ns": 5_000_000, "comm_ns": 2_000_000, "exposed_comm_ns": 2_000_000}],
               "collectives": {"count": 2}}
    assert ("per GPU (mean)   compute 4.000000 ms + exposed communication 3.000000 ms + idle 3.000000 ms = "
            "iteration  (communication in all 4.000000 ms)") in readable(summary).splitlines()
    # two iterations of 10 and 12 ms: the parts add up to both
    summary["iterations"] = [10_000_000, 12_000_000]
    assert ("per GPU (mean)   compute 4.000000 ms + exposed communication 3.000000 ms + idle 15.000000 ms = "
            "2 iterations  (communication in all 4.000000 ms)") in readable(summary).splitlines()


@pytest.mark.parametrize("text", ["a,b,c\n1,2,3\n\n4,5\n6,7,8,9\n", "a,b\n", "", "\n1,2\n", 'x,y\n"1,2",3\r\n'])
def test_read_csv_gives_what_dictreader_gives(tmp_path, text):
    """Empty lines skipped, a short row's cells None, a long row's extras under None, quoted commas kept."""
    path = tmp_path / "t.csv"
    path.write_text(text, newline="")
    with open(path, newline="") as fh:
        assert read_csv(str(path)) == list(csv.DictReader(fh))


def test_a_training_run_stopped_early_has_its_report(tmp_path):
    """A training run stopped by --until writes null iteration time and packet-event estimate; its
    report is written (the run's exit stays 0) and 'report' reads the folder again (both refused the
    nulls before: exit 2)."""
    out = tmp_path / "u"
    r = cli("run", "--model", "gpt-350m", "--gpus", "16", "--tp", "8", "--layers", "1", "--until", "10us",
            "--report", "--out", out, "--no-progress")
    assert r.returncode == 0, r.stderr
    s = json.loads((out / "summary.json").read_text())
    assert s["complete"] is False and s["iteration_time_ns"] is None and s["packet_events_est"] is None
    written = (out / "report.html").read_bytes()
    (out / "report.html").unlink()
    r = cli("report", out)
    assert r.returncode == 0, r.stderr
    assert (out / "report.html").read_bytes() == written


def test_hand_edited_csv_rows_are_one_line_errors(tmp_path):
    """A collectives.csv or timeline.csv cell that is no number, or a row of another length, gave a
    traceback from the page (or a TypeError from api.load): one line naming the file, line and value."""
    out = tmp_path / "r"
    r = cli("run", "--model", "gpt-350m", "--gpus", "16", "--tp", "8", "--layers", "1", "--out", out, "--no-progress")
    assert r.returncode == 0, r.stderr
    good = {n: (out / n).read_bytes() for n in ("collectives.csv", "timeline.csv")}

    def edited(name, row, edit):
        lines = good[name].decode().split("\r\n")
        lines[row] = edit(lines[row])
        (out / name).write_bytes("\r\n".join(lines).encode())

    cases = (("collectives.csv", 1, lambda ln: ",".join(ln.split(",")[:4] + ["abc"] + ln.split(",")[5:]),
              "collectives.csv:2: size_bytes 'abc' is not an integer"),
             ("collectives.csv", 2, lambda ln: ln + ",9",
              "collectives.csv:3: a row of 11 cells where the header has 10"),
             ("timeline.csv", 1, lambda ln: ",".join(ln.split(",")[:3] + ["nan"]),
              "timeline.csv:2: end_ns 'nan' is not"),
             ("timeline.csv", 2, lambda ln: ln.rsplit(",", 1)[0],
              "timeline.csv:3: a row of 3 cells where the header has 4"))
    for name, row, edit, message in cases:
        edited(name, row, edit)
        r = cli("report", out)
        assert r.returncode == 2 and "Traceback" not in r.stderr and message in r.stderr, r.stderr
        with pytest.raises(InputError, match=message.split(":", 2)[2].strip()[:20]):
            load(str(out))
        (out / name).write_bytes(good[name])
    # an emptied fct.txt, or a folder in its place, under a summary of 960 finished flows
    fct = (out / "fct.txt").read_bytes()
    (out / "fct.txt").write_bytes(b"")
    r = cli("report", out)
    assert r.returncode == 2 and f"{out / 'fct.txt'}: holds 0 flows where summary.json says 960 finished" in r.stderr
    (out / "fct.txt").unlink()
    (out / "fct.txt").mkdir()
    r = cli("report", out)
    assert r.returncode == 2 and f"{out / 'fct.txt'}: is not a file" in r.stderr
    (out / "fct.txt").rmdir()
    (out / "fct.txt").write_bytes(fct)
    assert cli("report", out).returncode == 0
