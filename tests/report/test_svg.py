"""The report's SVG figures: ticks of given ranges, a CDF's points, the per-GPU breakdown, and the
axes of the figures (time from the traffic's start, in one unit), read back from the SVG text."""

from __future__ import annotations

import re

import numpy as np
import pytest

from pwormhole.report import analysis, charts, svg
from pwormhole.report.analysis import TimelineRow
from pwormhole.topology.builders import fat_tree, rail_optimized
from pwormhole.units import axis_time_unit


def texts(svg_text: str) -> list[tuple[float, float, str]]:
    """``(x, y, text)`` of every ``<text>`` element."""
    return [(float(x), float(y), t) for x, y, t in re.findall(r'<text x="([-\d.]+)" y="([-\d.]+)"[^>]*>([^<]*)</text>',
                                                              svg_text)]


def frame(svg_text: str) -> tuple[float, float, float, float]:
    """``(left, top, width, height)`` of the plot area (its frame: the rect drawn without fill)."""
    x, y, w, h = re.search(r'<rect x="([\d.]+)" y="([\d.]+)" width="([\d.]+)" height="([\d.]+)" fill="none" '
                           r'stroke="#222"', svg_text).groups()
    return float(x), float(y), float(w), float(h)


def x_labels(svg_text: str) -> list[tuple[float, str]]:
    """The x axis's tick labels: text centred just below the frame, left to right."""
    left, top, _, h = frame(svg_text)
    found = re.findall(r'<text x="([-\d.]+)" y="([-\d.]+)" text-anchor="middle">([^<]*)</text>', svg_text)
    return sorted((float(x), t) for x, y, t in found if top + h < float(y) < top + h + 20)


# --------------------------------------------------------------------------- ticks


def test_linear_ticks_of_given_ranges():
    assert svg.linear_ticks(0, 132.9) == [0, 25, 50, 75, 100, 125]  # step 2.5 x 10: 132.9 / 6 = 22.2
    assert svg.linear_ticks(6.416, 6.421) == [6.416, 6.417, 6.418, 6.419, 6.42, 6.421]
    assert svg.linear_ticks(-3, 17) == [0, 5, 10, 15]  # 20 / 6 = 3.3: step 5, multiples within only
    assert svg.linear_ticks(0.0001, 0.00095) == [0.0002, 0.0004, 0.0006, 0.0008]
    assert svg.nice_range(0, 321.3) == (0, 400) and svg.nice_range(1.0451, 1.0459) == (1.045, 1.046)
    assert svg.nice_range(5, 5) == (5, 10)  # an empty range: one step


def test_log_ticks_label_decades_or_1_2_5_never_minor_labels():
    ticks, labels, minor = svg.log_ticks(1, 1e5)
    assert labels == ["1", "10", "100", "1,000", "10,000", "100,000"] and minor[:3] == [2, 3, 4] and 50 in minor
    # a short log range (0.6-11 ms, the NIC FCTs): 1, 2, 5 x 10^k labelled, no minor labels to overlap
    assert svg.log_ticks(0.6, 11) == ([1, 2, 5, 10], ["1", "2", "5", "10"], [])
    # within one 1-2-5 step: linear ticks, labelled with the step's digits
    assert svg.log_ticks(6.416, 6.421)[1] == ["6.416", "6.417", "6.418", "6.419", "6.420", "6.421"]
    assert svg.log_ticks(1e-12, 1e6)[1][:3] == ["1e-12", "1e-10", "1e-8"]  # 19 decades: every other one


def test_tick_labels_have_the_step_digits_and_do_not_overlap():
    assert [svg.format_tick(v, s) for v, s in ((0.75, 0.25), (1, 0.2), (12500, 2500), (1.0452, 0.0002))] == \
        ["0.75", "1.0", "12,500", "1.0452"]
    assert [svg.format_tick(v) for v in (1e-5, 1000, 0.5, 0.02, 2e7)] == ["1e-5", "1,000", "0.5", "0.02", "2e7"]
    # "1,000" is ~33 px wide at 11 px: centres 10 px apart overlap, 40 px apart do not
    assert svg.thin([0, 10, 20, 40], ["1,000"] * 4) == [True, False, False, True]


def test_axis_maps_linear_log_and_rows():
    assert svg.Axis(0, 10).frac(2.5) == 0.25
    assert svg.Axis(1, 100, log=True).frac(10) == pytest.approx(0.5)
    assert svg.Axis(-0.5, 3.5, invert=True).frac(0) == pytest.approx(0.875)  # row 0 at the top
    with pytest.raises(ValueError, match="log axis"):
        svg.Axis(0, 10, log=True)


# --------------------------------------------------------------------------- data


def test_cdf_points_exact_for_few_values_quantiles_for_many():
    x, y = svg.cdf_points([3, 1, 2, 2])
    assert x.tolist() == [1, 2, 3] and y.tolist() == [0.25, 0.75, 1.0]
    x, y = svg.cdf_points(np.arange(1, 1001), max_points=100)  # 1..1000: the k/100 quantiles, 10, 20, ...
    assert len(x) == 100 and x[:3].tolist() == [10, 20, 30] and y[:3].tolist() == [0.01, 0.02, 0.03]
    assert x[-1] == 1000 and y[-1] == 1.0
    x, y = svg.cdf_points([5] * 999 + [7])  # ties: F at each drawn point is the exact fraction
    assert x.tolist() == [5, 7] and y.tolist() == [0.999, 1.0]


def test_quantiles_are_numpys_inverted_cdf():
    v = np.random.default_rng(1).exponential(size=357)
    f = np.linspace(0, 1, 41)
    assert svg.quantiles(v, f).tolist() == np.quantile(v, f, method="inverted_cdf").tolist()


def test_gpu_times_add_up_to_the_iteration():
    # GPU 0 computes 60 of 100 ns and communicates 50, 30 of them under compute: 20 exposed, 20 idle
    # (stacking the 30 overlapped ns on compute made a bar of 110 ns, taller than the iteration)
    gpus = [{"gpu": 0, "host": 0, "compute_ns": 60, "comm_ns": 50, "exposed_comm_ns": 20},
            {"gpu": 1, "host": 1, "compute_ns": 100, "comm_ns": 0, "exposed_comm_ns": 0}]
    times = analysis.gpu_times(gpus, 100)
    assert [(t.compute_ns, t.exposed_ns, t.idle_ns) for t in times] == [(60, 20, 20), (100, 0, 0)]
    assert all(t.compute_ns + t.exposed_ns + t.idle_ns == 100 for t in times)
    page = charts.gpu_breakdown(times)
    top = frame(page)[1]
    bars: dict = {}  # bar x -> {colour: height}, the legend's boxes (above the frame) left out
    for x, y, hh, fill in re.findall(r'<rect x="([\d.]+)" y="([\d.]+)" width="[\d.]+" height="([\d.]+)" '
                                     r'fill="(#\w+)"/>', page):
        if float(y) >= top:
            bars.setdefault(x, {})[fill] = float(hh)
    (g0, g1) = bars.values()
    assert set(g0) == {charts.COMPUTE, charts.EXPOSED, charts.IDLE} and set(g1) == {charts.COMPUTE}
    assert g0[charts.COMPUTE] / g1[charts.COMPUTE] == pytest.approx(0.6, abs=0.01)
    assert sum(g0.values()) == pytest.approx(g1[charts.COMPUTE], abs=0.2)  # both bars as tall as the iteration


def test_time_unit_by_range():
    assert axis_time_unit(999_999) == ("us", 1000) and axis_time_unit(132_916_383) == ("ms", 10**6)


def test_roles_as_the_topology_knows_them():
    r = rail_optimized(2).roles()  # GPUs 0-15, NVSwitches 16-17, rail leaves 18-25, spines 26-33
    assert (r[0], r[16], r[18], r[26]) == ("GPU", "NVSwitch", "ToR", "spine")
    f = fat_tree(4).roles()  # hosts 0-15, then edge, aggregation and core switches
    assert {f.count(k) for k in ("host", "ToR", "spine", "core")} == {16, 8, 4} and f.count("core") == 4


# --------------------------------------------------------------------------- the figures' axes


def test_timeline_starts_at_zero_in_one_unit():
    rows = [TimelineRow("GPU 0", [(0, 40_000_000)], [(40_000_000, 132_916_383)], [(40_000_000, 132_916_383)])]
    page = charts.timeline(rows)
    left = frame(page)[0]
    labels = x_labels(page)
    assert labels[0] == (pytest.approx(left, abs=0.2), "0")  # x starts at 0, no legend bar before it
    assert [t for _, t in labels] == ["0", "25", "50", "75", "100", "125"]
    assert "simulated time (ms)" in page


def test_pauses_binned_from_the_traffic_start():
    t = 2_000_000_000 + np.arange(0, 100_000, 1000)  # HPCC's flows start at 2 s
    edges = np.linspace(2_000_000_000, 2_000_099_000, 51)
    page = charts.pauses(edges, {3: np.histogram(t, edges)[0]}, {3: "ToR 3"}, 2_000_000_000)
    labels = [s for _, s in x_labels(page)]
    assert labels[0] == "0" and labels[-1] == "80" and "since the traffic's start (us)" in page
    assert "ToR 3" in page and "2,000" not in page


def test_link_chart_time_since_the_traffic_start():
    t = 2_000_000_000 + 10_000 * np.arange(1000)  # 10 us intervals over 10 ms from 2 s
    page = charts.link_chart(t, [("ToR 0 -> host 1", np.full(1000, 0.95))], 10_000, 2_000_000_000)
    assert [s for _, s in x_labels(page)] == ["0", "2", "4", "6", "8", "10"]
    assert "since the traffic's start (ms)" in page and "ToR 0 -&gt; host 1" in page and "2,000" not in page


def test_fct_cdf_log_only_over_a_decade():
    narrow = charts.time_cdf(np.array([6416, 6419, 6421]), "FCT")  # NVLink flows: 6.416-6.421 us
    assert [s for _, s in x_labels(narrow)][:2] == ["6.416", "6.417"] and "FCT (us)" in narrow
    wide = charts.time_cdf(np.array([700_000, 1_400_000, 8_700_000, 9_431_207]), "FCT")  # NIC flows, ms
    assert [s for _, s in x_labels(wide)] == ["1", "2", "5", "10"] and "FCT (ms)" in wide
    many = charts.time_cdf(np.random.default_rng(2).integers(1000, 10**7, 50_000), "FCT")
    path = re.search(r'<path d="(M[^"]+)" stroke="#1f77b4"', many).group(1)
    assert path.count("V") <= svg.MAX_CDF_POINTS + 1  # from at most a few hundred quantiles
