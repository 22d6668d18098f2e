"""The figures of a run report as inline SVG, written by :mod:`pwormhole.report.svg`.

Each function returns one ``<svg>`` element as a string. They are written directly rather
than by matplotlib: importing and drawing with it took about 1.4 s of CPU per report, twice the
default run's simulation, and the whole process of a run is held to twice its simulation
(matplotlib still draws the PNGs of ``--plot`` and ``scale``). Time axes run from the traffic's
start (0), in ms or us as the range needs (:func:`~pwormhole.units.axis_time_unit`).
"""

from __future__ import annotations

import numpy as np

from ..units import axis_time_unit
from .analysis import GpuTime, SizeBucket, TimelineRow
from .svg import PALETTE, Axis, Plot, cdf_points, colour_bar, nice_range, quantiles, reds, row

COMPUTE, COMM, EXPOSED, IDLE = PALETTE[0], PALETTE[1], PALETTE[3], "#c7c7c7"
BAND = PALETTE[7]
FRACTION_TICKS = [0.0, 0.2, 0.4, 0.6, 0.8, 1.0]
MIN_LOG_DECADES = 1.0  # a log x axis only over a factor of 10 or more: a shorter range reads better linear
BAND_POINTS = 201
BAR_HALF = 0.42  # half a bar's width, in bar positions


def _padded(lo: float, hi: float) -> tuple[float, float]:
    """``[lo, hi]`` with a margin of 4% of the span (of ``|lo|``, or 1, when the span is 0): data
    off the frame, ticks within."""
    pad = 0.04 * ((hi - lo) or abs(lo) or 1.0)
    return lo - pad, hi + pad


def _x_axis(lo: float, hi: float, logx: bool) -> Axis:
    """A data axis over ``[lo, hi]``: log when asked, positive and over at least a decade, else linear."""
    if logx and lo > 0 and np.log10(hi / lo) >= MIN_LOG_DECADES:
        return Axis(lo / 1.15, hi * 1.15, log=True)
    return Axis(*_padded(lo, hi))


def _fraction_axis() -> Axis:
    return Axis(0.0, 1.03, ticks=FRACTION_TICKS, labels=["0", "0.2", "0.4", "0.6", "0.8", "1.0"])


def cdf(values, xlabel: str, logx: bool = True, label: str | None = None, extra=()) -> str:
    """The CDF of ``values`` (and of each ``(values, label)`` in ``extra``), from at most
    :data:`~pwormhole.report.svg.MAX_CDF_POINTS` quantile points each."""
    sets = [(np.asarray(v, dtype=float), lab) for v, lab in ((values, label), *extra) if len(v)]
    lo = min((float(v.min()) for v, _ in sets), default=0.0)
    hi = max((float(v.max()) for v, _ in sets), default=1.0)
    p = Plot(_x_axis(lo, hi, logx), _fraction_axis(), xlabel, "fraction of flows", 640, 330)
    for i, (v, lab) in enumerate(sets):
        xs, ys = cdf_points(v)
        p.step(xs, ys, PALETTE[i % len(PALETTE)], lab, start_y=0.0)
    return p.svg()


def time_cdf(values_ns, what: str) -> str:
    """The CDF of durations ``values_ns`` (log x over a decade or more), in ms or us by their range."""
    v = np.asarray(values_ns, dtype=float)
    unit, ns = axis_time_unit(float(v.max()) if v.size else 0.0)
    return cdf(v / ns, f"{what} ({unit})")


def cdf_with_band(values, band: list, xlabel: str, label: str, band_label: str) -> str:
    """The CDF of ``values`` over a shaded band: at each fraction of flows, the least and the most of
    the ``band`` sets' quantiles (the packet run's own spread)."""
    sets = [np.asarray(b, dtype=float) for b in band if len(b)]
    v = np.asarray(values, dtype=float)
    every = [*sets, v] if v.size else sets
    lo = min((float(s.min()) for s in every), default=0.0)
    hi = max((float(s.max()) for s in every), default=1.0)
    p = Plot(Axis(*_padded(lo, hi)), _fraction_axis(), xlabel, "fraction of flows", 640, 330)
    if sets:
        frac = np.linspace(0, 1, BAND_POINTS)
        qs = np.array([quantiles(s, frac) for s in sets])
        p.band(frac, qs.min(axis=0), qs.max(axis=0), BAND, band_label)
    if v.size:
        xs, ys = cdf_points(v)
        p.step(xs, ys, EXPOSED, label, start_y=0.0)
    return p.svg()


def size_label(b: int) -> str:
    """A flow size in B, KB, MB or GB (3 digits)."""
    for unit, k in (("GB", 10**9), ("MB", 10**6), ("KB", 10**3)):
        if b >= k:
            return f"{b / k:.3g}{unit}"
    return f"{b}B"


def slowdown_by_size(buckets: list[SizeBucket]) -> str:
    """p50/p95/p99 slowdown per flow-size percentile bucket, against the bucket's largest size."""
    n = len(buckets)
    labels = [size_label(b.max_size_bytes) for b in buckets]
    x = Axis(-0.5, n - 0.5, ticks=list(range(n)), labels=labels)
    lo = min((b.p50 for b in buckets), default=1.0)
    hi = max((b.p99 for b in buckets), default=1.0)
    y = Axis(lo / 1.15, hi * 1.15, log=True) if hi > 10 * lo else Axis(*nice_range(*_padded(lo, hi)))
    rotate = max((len(s) for s in labels), default=0) * 6.6 + 6 > 560 / max(1, n)
    p = Plot(x, y, "flow size (largest in each bucket of flows sorted by size)", "FCT slowdown", 640, 340,
             x_label_rotate=rotate)
    for i, (key, marker) in enumerate((("p50", "o"), ("p95", "s"), ("p99", "^"))):
        p.line(range(n), [getattr(b, key) for b in buckets], PALETTE[i], key, marker=marker)
    return p.svg()


def _rows_axis(labels: list[str]) -> Axis:
    return Axis(-0.5, len(labels) - 0.5, ticks=list(range(len(labels))), labels=labels, invert=True, grid=False)


def timeline(rows: list[TimelineRow]) -> str:
    """Per row (a GPU or a group of them, labelled): compute, communication and exposed
    communication intervals over simulated time (from 0, in ms or us by the run's length)."""
    end_ns = max((iv[-1][1] for r in rows for iv in (r.compute, r.comm) if iv), default=0)
    unit, ns = axis_time_unit(end_ns)
    p = Plot(Axis(0.0, 1.02 * max(1, end_ns) / ns), _rows_axis([r.label for r in rows]), f"simulated time ({unit})",
             "", 1000, 70 + 24 * max(1, len(rows)))
    for color, name, y0, y1, key in ((COMPUTE, "compute", -0.42, -0.12, "compute"),
                                     (COMM, "communication", -0.1, 0.2, "comm"),
                                     (EXPOSED, "exposed communication", 0.22, 0.42, "exposed")):
        boxes = [(a / ns, b / ns, i + y0, i + y1) for i, r in enumerate(rows) for a, b in getattr(r, key)]
        p.rects(boxes, color, name)
    return p.svg()


def gpu_breakdown(times: list[GpuTime]) -> str:
    """Per GPU, stacked: compute, communication not overlapped by compute (exposed) and idle (the
    bubble), which add up to the iterations (:func:`~pwormhole.report.analysis.gpu_times`)."""
    n = len(times)
    top = max((t.compute_ns + t.exposed_ns + t.idle_ns for t in times), default=0)
    unit, ns = axis_time_unit(top)
    ticks = [int(t) for t in Axis(0, max(1, n - 1)).ticks if t == int(t)]
    x = Axis(-0.5, n - 0.5, ticks=ticks, labels=[str(times[t].gpu) for t in ticks], grid=False)
    p = Plot(x, Axis(*nice_range(0.0, top / ns)), "GPU", f"time ({unit})", 1000, 330)
    base = [0] * n
    for key, color, label in (("compute_ns", COMPUTE, "compute"), ("exposed_ns", EXPOSED, "exposed communication"),
                              ("idle_ns", IDLE, "idle (bubble)")):
        parts = [getattr(t, key) for t in times]
        p.rects([(i - BAR_HALF, i + BAR_HALF, base[i] / ns, (base[i] + v) / ns) for i, v in enumerate(parts)], color,
                label)
        base = [b + v for b, v in zip(base, parts)]
    return p.svg()


def pauses(edges_ns: np.ndarray, counts: dict[int, np.ndarray], labels: dict[int, str], start_ns: int) -> str:
    """PFC pause frames received per node (rows) and time bin (columns) as a heat map, time since
    ``start_ns`` (the traffic's start)."""
    nodes = list(counts)
    unit, ns = axis_time_unit(float(edges_ns[-1] - start_ns))
    e = (np.asarray(edges_ns, dtype=float) - start_ns) / ns
    vmax = max((int(c.max()) for c in counts.values()), default=1) or 1
    p = Plot(Axis(float(e[0]), float(e[-1])), _rows_axis([labels.get(n, f"node {n}") for n in nodes]),
             f"simulated time since the traffic's start ({unit})", "", 1000, max(160, 70 + 22 * len(nodes)),
             right_px=110)
    boxes = [(float(e[j]), float(e[j + 1]), i - 0.5, i + 0.5, reds(int(c) / vmax))
             for i, n in enumerate(nodes) for j, c in enumerate(counts[n]) if c]
    p.rects(boxes, reds(1.0))
    width_ns = float(edges_ns[1] - edges_ns[0]) if len(edges_ns) > 1 else 0.0
    colour_bar(p, vmax, f"pauses per {width_ns / ns:.3g} {unit}")
    return p.svg()


def scaling(rows: list[dict]) -> str:
    """Speedup (over packet mode on 1 rank) and parallel efficiency against ranks, one line per mode."""
    ranks = sorted({int(r["ranks"]) for r in rows})
    lo, hi = ranks[0] / 1.4, ranks[-1] * 1.4
    modes = list(dict.fromkeys(r["mode"] for r in rows))
    plots = []
    for key, ylabel in (("speedup", "speedup over packet mode, 1 rank"), ("efficiency", "parallel efficiency")):
        pts = {m: sorted((int(r["ranks"]), float(r[key])) for r in rows if r["mode"] == m and r.get(key))
               for m in modes}
        ys = [v for ps in pts.values() for _, v in ps] + ([lo, hi] if key == "speedup" else [1.0])
        x = Axis(lo, hi, log=True, ticks=[float(r) for r in ranks], labels=[str(r) for r in ranks])
        p = Plot(x, Axis(*nice_range(0.0, 1.05 * max(ys))), "MPI ranks", ylabel, 500, 330)  # points off the top
        for i, m in enumerate(modes):
            if pts[m]:
                p.line([a for a, _ in pts[m]], [b for _, b in pts[m]], PALETTE[i % len(PALETTE)], m, marker="o")
        if key == "speedup":
            p.line(ranks, ranks, PALETTE[7], "linear", width=1, dash=True)
        else:
            p.line([lo, hi], [1.0, 1.0], PALETTE[7], None, width=1, dash=True)
        plots.append(p)
    return row(plots)


def link_chart(t_ns: np.ndarray, series: list[tuple[str, np.ndarray]], interval_ns: int, start_ns: int) -> str:
    """Utilization per interval of each ``(label, utilization per interval)`` in ``series`` over the
    interval starts ``t_ns``, as steps, time since ``start_ns`` (the traffic's start)."""
    t_end = float(t_ns[-1] + interval_ns - start_ns) if t_ns.size else 1.0
    unit, ns = axis_time_unit(t_end)
    xs = np.append(t_ns, t_ns[-1] + interval_ns) - start_ns if t_ns.size else np.zeros(1)
    top = max([1.0, *(float(u.max()) for _, u in series if u.size)])
    p = Plot(Axis(min(0.0, float(xs[0]) / ns), 1.02 * t_end / ns), Axis(*nice_range(0.0, top * 1.02)),
             f"simulated time since the traffic's start ({unit})", f"utilization per {interval_ns / 1e3:g} us",
             1000, 360)
    for i, (label, u) in enumerate(series):
        p.step(xs / ns, np.append(u, u[-1] if u.size else 0.0), PALETTE[i % len(PALETTE)], label, width=1.2)
    return p.svg()


def queue_chart(series: list[tuple[str, np.ndarray]]) -> str:
    """Per ``(label, samples per KB bucket)``: the share of samples at or above each queue length."""
    top_kb = max((c.size for _, c in series), default=1)
    p = Plot(Axis(*nice_range(0.0, float(top_kb))), _fraction_axis(), "queue length (KB of 1000 bytes)",
             "share of samples at or above", 700, 330)
    for i, (label, c) in enumerate(series):
        above = 1 - np.cumsum(c) / c.sum()  # share of samples above each bucket
        p.step(np.arange(c.size + 1), np.concatenate(([1.0], above)), PALETTE[i % len(PALETTE)], label)
    return p.svg()
