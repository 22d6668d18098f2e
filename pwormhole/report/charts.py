"""The figures of a run report, drawn by matplotlib as inline SVG (text as paths: no fonts to fetch).

Each function returns one ``<svg>`` element as a string; ids inside it are
salted with a per-figure prefix so that several figures can share a page.
"""

from __future__ import annotations

import io
import itertools

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (after the backend is chosen)
import numpy as np  # noqa: E402

from .analysis import SizeBucket, TimelineRow  # noqa: E402

_salt = itertools.count()
COMPUTE, COMM, EXPOSED = "tab:blue", "tab:orange", "tab:red"


def to_svg(fig) -> str:
    """``fig`` as an ``<svg>`` element (the figure is closed)."""
    buf = io.StringIO()
    try:
        with matplotlib.rc_context({"svg.fonttype": "path", "svg.hashsalt": f"pw{next(_salt)}"}):
            fig.savefig(buf, format="svg", bbox_inches="tight")
    finally:
        plt.close(fig)
    text = buf.getvalue()
    return text[text.index("<svg"):]


def _legend_above(ax, ncol: int) -> None:
    """A legend above the plot area, never over the data."""
    ax.legend(loc="lower left", bbox_to_anchor=(0, 1.01), ncol=ncol, fontsize=8, frameon=False)


def cdf(values: np.ndarray, xlabel: str, logx: bool = True, label: str | None = None, extra=()) -> str:
    """A CDF of ``values`` (and of each ``(values, label)`` in ``extra``)."""
    fig, ax = plt.subplots(figsize=(6.4, 3.6))
    for v, lab in ((values, label), *extra):
        if len(v):
            x = np.sort(np.asarray(v, dtype=float))
            ax.step(x, np.arange(1, x.size + 1) / x.size, where="post", label=lab)
    if logx and len(values) and np.min(values) > 0:
        ax.set_xscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel("fraction of flows")
    ax.set_ylim(0, 1.02)
    ax.grid(alpha=0.3)
    if label is not None:
        _legend_above(ax, 2)
    return to_svg(fig)


def cdf_with_band(values: np.ndarray, band: list[np.ndarray], xlabel: str, label: str, band_label: str) -> str:
    """The CDF of ``values`` over a shaded band: at each fraction of flows, the least and the most of
    the ``band`` sets' quantiles (the packet run's own spread)."""
    fig, ax = plt.subplots(figsize=(6.4, 3.6))
    sets = [np.sort(np.asarray(b, dtype=float)) for b in band if len(b)]
    if sets:
        frac = np.linspace(0, 1, 201)
        qs = np.array([np.quantile(s, frac, method="inverted_cdf") for s in sets])
        ax.fill_betweenx(frac, qs.min(axis=0), qs.max(axis=0), color="tab:gray", alpha=0.35, step="post",
                         label=band_label)
    if len(values):
        x = np.sort(np.asarray(values, dtype=float))
        ax.step(x, np.arange(1, x.size + 1) / x.size, where="post", label=label, color="tab:red")
    ax.set_xlabel(xlabel)
    ax.set_ylabel("fraction of flows")
    ax.set_ylim(0, 1.02)
    ax.grid(alpha=0.3)
    _legend_above(ax, 2)
    return to_svg(fig)


def slowdown_by_size(buckets: list[SizeBucket]) -> str:
    """p50/p95/p99 slowdown per flow-size percentile bucket, against the bucket's largest size."""
    fig, ax = plt.subplots(figsize=(6.4, 3.6))
    x = np.arange(len(buckets))
    for key, style in (("p50", "o-"), ("p95", "s-"), ("p99", "^-")):
        ax.plot(x, [getattr(b, key) for b in buckets], style, label=key, markersize=4)
    ax.set_xticks(x)
    ax.set_xticklabels([_size(b.max_size_bytes) for b in buckets], rotation=60, fontsize=7)
    ax.set_xlabel("flow size (largest in each bucket of flows sorted by size)")
    ax.set_ylabel("FCT slowdown")
    if buckets and max(b.p99 for b in buckets) > 10 * min(b.p50 for b in buckets):
        ax.set_yscale("log")
    ax.grid(alpha=0.3)
    _legend_above(ax, 3)
    return to_svg(fig)


def _size(b: int) -> str:
    for unit, k in (("GB", 10**9), ("MB", 10**6), ("KB", 10**3)):
        if b >= k:
            return f"{b / k:.3g}{unit}"
    return f"{b}B"


def timeline(rows: list[TimelineRow], what: str) -> str:
    """Per row: compute, communication and exposed communication intervals over simulated time (ms)."""
    fig, ax = plt.subplots(figsize=(10, 1.0 + 0.28 * max(1, len(rows))))
    for i, r in enumerate(rows):
        for iv, y0, h, color in ((r.compute, -0.42, 0.3, COMPUTE), (r.comm, -0.1, 0.3, COMM),
                                 (r.exposed, 0.22, 0.2, EXPOSED)):
            if iv:
                ax.broken_barh([(a / 1e6, (b - a) / 1e6) for a, b in iv], (i + y0, h), color=color,
                               linewidth=0)
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels([r.label for r in rows], fontsize=7)
    ax.set_ylim(len(rows) - 0.5, -0.5)
    ax.set_xlabel("simulated time (ms)")
    ax.set_ylabel(f"one row per {what}")
    for color, label in ((COMPUTE, "compute"), (COMM, "communication"), (EXPOSED, "exposed communication")):
        ax.bar(0, 0, color=color, label=label)
    _legend_above(ax, 3)
    ax.grid(axis="x", alpha=0.3)
    return to_svg(fig)


def gpu_breakdown(gpus: list[dict]) -> str:
    """Per GPU: compute, overlapped and exposed communication time (ms), stacked."""
    fig, ax = plt.subplots(figsize=(10, 3.4))
    g = np.array([d["gpu"] for d in gpus])
    comp = np.array([d["compute_ns"] for d in gpus]) / 1e6
    exp = np.array([d["exposed_comm_ns"] for d in gpus]) / 1e6
    over = np.array([d["comm_ns"] for d in gpus]) / 1e6 - exp
    ax.bar(g, comp, width=0.85, color=COMPUTE, label="compute")
    ax.bar(g, over, width=0.85, bottom=comp, color=COMM, label="communication overlapped by compute")
    ax.bar(g, exp, width=0.85, bottom=comp + over, color=EXPOSED, label="exposed communication")
    ax.set_xlabel("GPU")
    ax.set_ylabel("time (ms)")
    ax.grid(axis="y", alpha=0.3)
    _legend_above(ax, 3)
    return to_svg(fig)


def pauses(edges: np.ndarray, counts: dict[int, np.ndarray], labels: dict[int, str]) -> str:
    """PFC pause frames received per node (rows) and time bin (columns), as a heat map."""
    nodes = list(counts)
    fig, ax = plt.subplots(figsize=(9, 1.2 + 0.3 * len(nodes)))
    grid = np.array([counts[n] for n in nodes])
    im = ax.imshow(grid, aspect="auto", interpolation="nearest", cmap="Reds", vmin=0,
                   extent=(edges[0] / 1e3, edges[-1] / 1e3, len(nodes) - 0.5, -0.5))
    ax.set_yticks(range(len(nodes)))
    ax.set_yticklabels([labels.get(n, f"node {n}") for n in nodes], fontsize=8)
    ax.set_xlabel("simulated time (us)")
    cb = fig.colorbar(im, ax=ax, pad=0.01)
    cb.set_label(f"pause frames per {(edges[1] - edges[0]) / 1e3:.3g} us", fontsize=8)
    return to_svg(fig)


def scaling(rows: list[dict]) -> str:
    """Speedup (over packet mode on 1 rank) and parallel efficiency against ranks, one line per mode."""
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(10, 3.6))
    ranks = sorted({int(r["ranks"]) for r in rows})
    for mode in dict.fromkeys(r["mode"] for r in rows):
        for ax, key in ((a1, "speedup"), (a2, "efficiency")):
            pts = sorted((int(r["ranks"]), float(r[key])) for r in rows if r["mode"] == mode and r.get(key))
            if pts:
                ax.plot([p[0] for p in pts], [p[1] for p in pts], "o-", label=mode)
    a1.plot(ranks, ranks, "--", color="grey", linewidth=1, label="linear")
    a2.axhline(1.0, linestyle="--", color="grey", linewidth=1)
    for ax, ylabel in ((a1, "speedup over packet mode, 1 rank"), (a2, "parallel efficiency")):
        ax.set_xscale("log", base=2)
        ax.set_xticks(ranks)
        ax.set_xticklabels([str(r) for r in ranks])
        ax.set_xlabel("MPI ranks")
        ax.set_ylabel(ylabel)
        ax.grid(alpha=0.3)
    _legend_above(a1, 3)
    return to_svg(fig)
