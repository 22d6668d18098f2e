"""Figures written as SVG text: axes with nice ticks, steps, lines, bars, bands, heat maps and legends.

A :class:`Plot` is one plot area with its axes; data go in in data units and come out as
``<path>``, ``<rect>`` and ``<text>`` elements (a generic font family, nothing fetched).
Text widths are estimated from the character count, so labels are thinned or turned before
they could overlap. :func:`row` lays plots side by side in one ``<svg>``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from html import escape as _escape

import numpy as np

# matplotlib's "tab10", the colours of the figures before
PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22",
           "#17becf")
GRID = "#e3e3e3"
INK = "#222"
FONT_PX = 11  # tick labels and legends
LABEL_PX = 12  # axis labels
CHAR_EM = 0.6  # a sans-serif character's advance, in font sizes (wider than a digit's 0.55)
TICK_PX = 4
LEGEND_ROW_PX = 16
MAX_CDF_POINTS = 300


def escape(text: str) -> str:
    """``text`` as SVG text content (``<``, ``>`` and ``&`` escaped)."""
    return _escape(text, quote=False)


def text_width_px(text: str, size_px: float = FONT_PX) -> float:
    """The estimated width of ``text`` at ``size_px``."""
    return len(text) * size_px * CHAR_EM


def _num(v: float) -> str:
    """A coordinate with 0.1 px precision, without trailing zeros."""
    s = f"{v:.1f}"
    return s[:-2] if s.endswith(".0") else s


# -- ticks ---------------------------------------------------------------------------------------
def nice_step(span: float, max_ticks: int = 6) -> float:
    """The least of 1, 2, 2.5, 5 x 10^k that cuts ``span`` into at most ``max_ticks`` steps."""
    if not span > 0:
        return 1.0
    raw = span / max_ticks
    mag = 10.0 ** math.floor(math.log10(raw))
    for m in (1, 2, 2.5, 5, 10):
        if m * mag >= raw * (1 - 1e-9):
            return m * mag
    return 10 * mag


def linear_ticks(lo: float, hi: float, max_ticks: int = 6) -> list[float]:
    """Multiples of :func:`nice_step` within ``[lo, hi]``."""
    step = nice_step(hi - lo, max_ticks)
    k0, k1 = math.ceil(lo / step - 1e-9), math.floor(hi / step + 1e-9)
    return [_clean(k * step) for k in range(k0, k1 + 1)]


def _clean(v: float) -> float:
    """``v`` without the float noise of ``k * step`` (0.30000000000000004 -> 0.3)."""
    return float(f"{v:.12g}")


def nice_range(lo: float, hi: float, max_ticks: int = 6) -> tuple[float, float]:
    """``[lo, hi]`` widened to multiples of its nice step (an empty range to one step)."""
    if hi <= lo:
        hi = lo + (abs(lo) or 1.0)
    step = nice_step(hi - lo, max_ticks)
    return _clean(math.floor(lo / step + 1e-9) * step), _clean(math.ceil(hi / step - 1e-9) * step)


def log_ticks(lo: float, hi: float) -> tuple[list[float], list[str], list[float]]:
    """``(ticks, labels, unlabelled ticks)`` of a log axis over ``[lo, hi]`` (``0 < lo < hi``): the
    powers of ten when three or more lie within (every other one past 8), with unlabelled ticks at
    2..9 x 10^k; else 1, 2 and 5 x 10^k; else (a range within one of those steps) linear ticks."""
    e0, e1 = math.floor(math.log10(lo)), math.ceil(math.log10(hi))

    def within(v: float) -> bool:
        return lo * (1 - 1e-9) <= v <= hi * (1 + 1e-9)
    decades = [_clean(10.0 ** e) for e in range(e0, e1 + 1) if within(10.0 ** e)]
    minor: list[float] = []
    if len(decades) > 8:
        ticks = decades[::2]
    elif len(decades) >= 3:
        ticks = decades
        minor = [_clean(m * 10.0 ** e) for e in range(e0, e1) for m in range(2, 10) if within(m * 10.0 ** e)]
    else:
        ticks = [_clean(m * 10.0 ** e) for e in range(e0, e1 + 1) for m in (1, 2, 5) if within(m * 10.0 ** e)]
    if len(ticks) >= 2:
        return ticks, [format_tick(t) for t in ticks], minor
    ticks = linear_ticks(lo, hi)
    step = ticks[1] - ticks[0] if len(ticks) > 1 else nice_step(hi - lo)
    return ticks, [format_tick(t, step) for t in ticks], []


def format_tick(v: float, step: float | None = None) -> str:
    """A tick label: as many decimals as ``step`` needs (0.25 -> 2, 0.2 -> 1, 5 -> 0), thousands
    separated; ``step`` None (log axes): the value's own digits, powers beyond 10^-3..10^7 as 1e-5."""
    if v == 0:
        return "0"
    if step is None:
        if not 1e-3 <= abs(v) < 1e7:
            m, e = f"{v:.0e}".split("e")
            return f"{m}e{int(e)}"
        return f"{v:,.{max(0, -math.floor(math.log10(abs(v)) + 1e-9))}f}"
    decimals = 0
    while decimals < 12 and abs(step * 10**decimals - round(step * 10**decimals)) > 1e-6 * step * 10**decimals:
        decimals += 1
    return f"{v:,.{decimals}f}"


def thin(positions_px: list[float], labels: list[str], gap_px: float = 6.0) -> list[bool]:
    """Which labels to show, left to right, so that no two shown (centred at ``positions_px``) overlap."""
    keep = []
    right = -math.inf
    for p, lab in zip(positions_px, labels):
        half = text_width_px(lab) / 2
        ok = p - half >= right + gap_px
        keep.append(ok)
        if ok:
            right = p + half
    return keep


# -- data ----------------------------------------------------------------------------------------
def cdf_points(values, max_points: int = MAX_CDF_POINTS) -> tuple[np.ndarray, np.ndarray]:
    """The empirical CDF of ``values`` as steps ``(x, F(x))``, ``F``: the fraction of values at most
    ``x``: at every distinct value when there are at most ``max_points`` values, else at the
    inverted-CDF quantiles ``k / max_points`` (``k = 1 .. max_points``), so a CDF of many flows is
    drawn from a few hundred points (within ``1 / max_points`` of the full one)."""
    x = np.sort(np.asarray(values, dtype=float))
    n = x.size
    if not n:
        return x, x
    if n <= max_points:
        pts = x
    else:
        k = np.arange(1, max_points + 1)
        pts = x[-(-k * n // max_points) - 1]
    pts = pts[np.concatenate(([True], pts[1:] != pts[:-1]))]  # distinct (sorted; np.unique loads numpy.ma)
    return pts, np.searchsorted(x, pts, side="right") / n


def quantiles(values, fractions: np.ndarray) -> np.ndarray:
    """The inverted-CDF quantiles of ``values`` at ``fractions`` (numpy's ``inverted_cdf``)."""
    x = np.sort(np.asarray(values, dtype=float))
    idx = np.ceil(np.asarray(fractions) * x.size - 1e-9).astype(np.int64) - 1
    return x[np.clip(idx, 0, x.size - 1)]


def reds(v: float) -> str:
    """A white-to-dark-red colour for ``v`` in ``[0, 1]`` (matplotlib's "Reds" ends)."""
    v = min(1.0, max(0.0, v))
    lo, hi = (255, 245, 240), (103, 0, 13)
    return "#" + "".join(f"{round(a + (b - a) * v):02x}" for a, b in zip(lo, hi))


# -- plots ---------------------------------------------------------------------------------------
class Axis:
    """One axis: its range, scale and ticks. ``labels`` given: ticks at ``ticks`` with those labels
    (categories); ``invert``: the range runs top-down (rows)."""

    def __init__(self, lo: float, hi: float, log: bool = False, ticks: Sequence[float] | None = None,
                 labels: Sequence[str] | None = None, invert: bool = False, grid: bool = True):
        if log and not 0 < lo < hi:
            raise ValueError(f"a log axis needs 0 < lo < hi, got {lo}, {hi}")
        if not hi > lo:
            hi = lo + 1.0
        self.lo, self.hi, self.log, self.invert, self.grid = lo, hi, log, invert, grid
        self.minor: list[float] = []
        if ticks is not None:
            self.ticks = [float(t) for t in ticks]
            self.labels = list(labels) if labels is not None else [format_tick(t) for t in ticks]
        elif log:
            self.ticks, self.labels, self.minor = log_ticks(lo, hi)
        else:
            self.ticks = linear_ticks(lo, hi)
            step = self.ticks[1] - self.ticks[0] if len(self.ticks) > 1 else nice_step(hi - lo)
            self.labels = [format_tick(t, step) for t in self.ticks]

    def frac(self, v: float) -> float:
        """Where ``v`` lies along the axis, 0 at ``lo`` and 1 at ``hi``."""
        if self.log:
            f = (math.log10(max(v, 1e-300)) - math.log10(self.lo)) / (math.log10(self.hi) - math.log10(self.lo))
        else:
            f = (v - self.lo) / (self.hi - self.lo)
        return 1 - f if self.invert else f


class Plot:
    """One plot area of ``width_px`` x ``height_px`` (its labels and legend included)."""

    def __init__(self, x: Axis, y: Axis, xlabel: str = "", ylabel: str = "", width_px: float = 640,
                 height_px: float = 320, legend_cols: int = 0, right_px: float = 14, x_label_rotate: bool = False):
        self.x, self.y, self.xlabel, self.ylabel = x, y, xlabel, ylabel
        self.width, self.height = width_px, height_px
        self.legend_cols = legend_cols
        self.right_px = right_px
        self.x_rotate = x_label_rotate
        self._shapes: list = []  # (kind, data) drawn in order
        self.legend: list[tuple[str, str, str]] = []  # (label, colour, kind: line / box / band / dash / marker)
        self.extra: list = []  # functions of the laid-out plot giving more elements (a colour bar)
        self._layout()

    # layout: margins from the labels' estimated sizes
    def _layout(self) -> None:
        y_w = max((text_width_px(s) for s in self.y.labels), default=0)
        self.left = 6 + (LABEL_PX + 6 if self.ylabel else 0) + y_w + TICK_PX + 4
        x_h: float = FONT_PX + 4
        if self.x_rotate:
            x_h = max((text_width_px(s) for s in self.x.labels), default=0) * 0.71 + FONT_PX
        self.bottom = TICK_PX + 3 + x_h + (LABEL_PX + 8 if self.xlabel else 4)
        last = self.x.labels[-1] if self.x.labels and not self.x_rotate else ""
        self.right = max(self.right_px, text_width_px(last) / 2 + 4)
        self.top = 10.0
        self.plot_w = self.width - self.left - self.right
        self._legend_rows: list[list[tuple[str, str, str]]] = []

    def _legend_layout(self) -> None:
        rows: list[list] = [[]]
        width = 0.0
        for i, e in enumerate(self.legend):
            w = 22 + text_width_px(e[0]) + 14
            full = (self.legend_cols and len(rows[-1]) >= self.legend_cols) or (rows[-1] and width + w > self.plot_w)
            if full and i:
                rows.append([])
                width = 0.0
            rows[-1].append(e)
            width += w
        self._legend_rows = [r for r in rows if r]
        self.top = 10.0 + LEGEND_ROW_PX * len(self._legend_rows)

    def px(self, x: float, y: float) -> tuple[float, float]:
        return (self.left + self.x.frac(x) * self.plot_w,
                self.top + (1 - self.y.frac(y)) * (self.height - self.top - self.bottom))

    # data
    def step(self, xs, ys, color: str, label: str | None = None, width: float = 1.5, start_y: float | None = None):
        """A staircase through ``(xs[i], ys[i])``, each level held to the next x (``where="post"``);
        ``start_y``: a first rise at ``xs[0]`` from that level (a CDF from 0)."""
        self._shapes.append(("step", (list(map(float, xs)), list(map(float, ys)), color, width, start_y)))
        if label is not None:
            self.legend.append((label, color, "line"))

    def line(self, xs, ys, color: str, label: str | None = None, width: float = 1.5, marker: str | None = None,
             dash: bool = False):
        """A polyline (``marker``: ``o``, ``s`` or ``^`` at each point; ``dash``: dashed)."""
        self._shapes.append(("line", (list(map(float, xs)), list(map(float, ys)), color, width, marker, dash)))
        if label is not None:
            self.legend.append((label, color, marker or ("dash" if dash else "line")))

    def rects(self, boxes, color: str, label: str | None = None, title: bool = False):
        """Rectangles ``(x0, x1, y0, y1)`` in data units, filled with ``color`` (``boxes`` may also give
        a fifth item, its own colour)."""
        self._shapes.append(("rects", (list(boxes), color)))
        if label is not None:
            self.legend.append((label, color, "box"))

    def band(self, ys, x_lo, x_hi, color: str, label: str | None = None, opacity: float = 0.35):
        """A shaded band between ``x_lo[i]`` and ``x_hi[i]`` at each ``ys[i]``, as steps in y (a
        band of CDFs: each level holds up to the next y)."""
        self._shapes.append(("band", (list(map(float, ys)), list(map(float, x_lo)), list(map(float, x_hi)), color,
                                      opacity)))
        if label is not None:
            self.legend.append((label, color, "band"))

    # output
    def body(self) -> str:
        """The plot's elements (its own pixels, from 0, 0)."""
        self._legend_layout()
        h_area = self.height - self.top - self.bottom
        x0, x1, y0, y1 = self.left, self.left + self.plot_w, self.top, self.top + h_area
        out = [f'<rect x="0" y="0" width="{_num(self.width)}" height="{_num(self.height)}" fill="#fff"/>']
        grid = []
        if self.x.grid:
            for t in self.x.ticks:
                px = self.px(t, self.y.lo)[0]
                grid.append(f"M{_num(px)} {_num(y0)}V{_num(y1)}")
        if self.y.grid:
            for t in self.y.ticks:
                py = self.px(self.x.lo, t)[1]
                grid.append(f"M{_num(x0)} {_num(py)}H{_num(x1)}")
        if grid:
            out.append(f'<path d="{"".join(grid)}" stroke="{GRID}" stroke-width="1" fill="none"/>')
        for kind, data in self._shapes:
            out.append(getattr(self, "_svg_" + kind)(*data))
        out.append(f'<rect x="{_num(x0)}" y="{_num(y0)}" width="{_num(self.plot_w)}" height="{_num(h_area)}" '
                   f'fill="none" stroke="{INK}" stroke-width="1"/>')
        out.append(self._axes_svg(x0, x1, y0, y1))
        out.append(self._legend_svg())
        out.extend(f(self) for f in self.extra)
        return "".join(out)

    def _axes_svg(self, x0, x1, y0, y1) -> str:
        out = []
        marks = []
        xp = [self.px(t, self.y.lo)[0] for t in self.x.ticks]
        keep = [True] * len(xp) if self.x_rotate else thin(xp, self.x.labels)
        for p, lab, k in zip(xp, self.x.labels, keep):
            marks.append(f"M{_num(p)} {_num(y1)}v{TICK_PX}")
            if not k:
                continue
            ty = y1 + TICK_PX + 3 + FONT_PX * 0.8
            if self.x_rotate:
                out.append(f'<text x="{_num(p)}" y="{_num(ty - 4)}" text-anchor="end" '
                           f'transform="rotate(-45 {_num(p)} {_num(ty - 4)})">{escape(lab)}</text>')
            else:
                out.append(f'<text x="{_num(p)}" y="{_num(ty)}" text-anchor="middle">{escape(lab)}</text>')
        for t in self.x.minor:
            marks.append(f"M{_num(self.px(t, self.y.lo)[0])} {_num(y1)}v{TICK_PX / 2}")
        yp = [self.px(self.x.lo, t)[1] for t in self.y.ticks]
        keep_y = []
        last = -math.inf
        for p in (yp if self.y.invert else yp[::-1]):  # top-down: labels a line apart
            keep_y.append(p - last >= FONT_PX + 1)
            if keep_y[-1]:
                last = p
        if not self.y.invert:
            keep_y.reverse()
        for p, lab, k in zip(yp, self.y.labels, keep_y):
            marks.append(f"M{_num(x0)} {_num(p)}h-{TICK_PX}")
            if k:
                out.append(f'<text x="{_num(x0 - TICK_PX - 3)}" y="{_num(p + FONT_PX * 0.35)}" '
                           f'text-anchor="end">{escape(lab)}</text>')
        for t in self.y.minor:
            marks.append(f"M{_num(x0)} {_num(self.px(self.x.lo, t)[1])}h-{TICK_PX / 2}")
        out.insert(0, f'<path d="{"".join(marks)}" stroke="{INK}" stroke-width="1"/>')
        if self.xlabel:
            out.append(f'<text x="{_num((x0 + x1) / 2)}" y="{_num(self.height - 6)}" text-anchor="middle" '
                       f'font-size="{LABEL_PX}">{escape(self.xlabel)}</text>')
        if self.ylabel:
            cx, cy = 6 + LABEL_PX * 0.8, (y0 + y1) / 2
            out.append(f'<text x="{_num(cx)}" y="{_num(cy)}" text-anchor="middle" font-size="{LABEL_PX}" '
                       f'transform="rotate(-90 {_num(cx)} {_num(cy)})">{escape(self.ylabel)}</text>')
        return "".join(out)

    def _legend_svg(self) -> str:
        out = []
        for r, entries in enumerate(self._legend_rows):
            y = 6 + r * LEGEND_ROW_PX + LEGEND_ROW_PX / 2
            x = self.left
            for label, color, kind in entries:
                if kind in ("box", "band"):
                    op = ' fill-opacity="0.35"' if kind == "band" else ""
                    out.append(f'<rect x="{_num(x)}" y="{_num(y - 5)}" width="16" height="10" fill="{color}"{op}/>')
                else:
                    dash = ' stroke-dasharray="4 3"' if kind == "dash" else ""
                    out.append(f'<path d="M{_num(x)} {_num(y)}h18" stroke="{color}" stroke-width="2"{dash}/>')
                    if kind in ("o", "s", "^"):
                        out.append(_marker(kind, x + 9, y, color))
                out.append(f'<text x="{_num(x + 22)}" y="{_num(y + FONT_PX * 0.35)}">{escape(label)}</text>')
                x += 22 + text_width_px(label) + 14
        return "".join(out)

    def _svg_step(self, xs, ys, color, width, start_y) -> str:
        if not xs:
            return ""
        d = []
        if start_y is not None:
            px, py = self.px(xs[0], start_y)
            d.append(f"M{_num(px)} {_num(py)}")
            d.append(f"V{_num(self.px(xs[0], ys[0])[1])}")
        else:
            px, py = self.px(xs[0], ys[0])
            d.append(f"M{_num(px)} {_num(py)}")
        for i in range(1, len(xs)):
            px, py = self.px(xs[i], ys[i])
            d.append(f"H{_num(px)}V{_num(py)}")
        return (f'<path d="{"".join(d)}" stroke="{color}" stroke-width="{width}" fill="none" '
                'stroke-linejoin="round"/>')

    def _svg_line(self, xs, ys, color, width, marker, dash) -> str:
        if not xs:
            return ""
        pts = [self.px(x, y) for x, y in zip(xs, ys)]
        d = "M" + "L".join(f"{_num(a)} {_num(b)}" for a, b in pts)
        dash_attr = ' stroke-dasharray="5 4"' if dash else ""
        out = [f'<path d="{d}" stroke="{color}" stroke-width="{width}" fill="none"{dash_attr}/>']
        if marker:
            out.extend(_marker(marker, a, b, color) for a, b in pts)
        return "".join(out)

    def _svg_rects(self, boxes, color) -> str:
        out = []
        for b in boxes:
            ax, ay = self.px(b[0], b[3])
            bx, by = self.px(b[1], b[2])
            x, y, w, h = min(ax, bx), min(ay, by), abs(bx - ax), abs(by - ay)
            if w <= 0 or h <= 0:
                continue
            fill = b[4] if len(b) > 4 else color
            out.append(f'<rect x="{_num(x)}" y="{_num(y)}" width="{_num(max(w, 0.3))}" height="{_num(h)}" '
                       f'fill="{fill}"/>')
        return "".join(out)

    def _svg_band(self, ys, x_lo, x_hi, color, opacity) -> str:
        if not ys:
            return ""
        left, right = [], []
        for i, y in enumerate(ys):
            y_next = ys[i + 1] if i + 1 < len(ys) else y
            for yy in (y, y_next):
                left.append(self.px(x_lo[i], yy))
                right.append(self.px(x_hi[i], yy))
        pts = left + right[::-1]
        d = "M" + "L".join(f"{_num(a)} {_num(b)}" for a, b in pts) + "Z"
        return f'<path d="{d}" fill="{color}" fill-opacity="{opacity}" stroke="none"/>'

    def svg(self) -> str:
        """The plot as one ``<svg>`` element."""
        return row([self])


def _marker(kind: str, x: float, y: float, color: str) -> str:
    if kind == "s":
        return f'<rect x="{_num(x - 3)}" y="{_num(y - 3)}" width="6" height="6" fill="{color}"/>'
    if kind == "^":
        return (f'<path d="M{_num(x)} {_num(y - 4)}L{_num(x + 3.5)} {_num(y + 2.5)}L{_num(x - 3.5)} {_num(y + 2.5)}Z" '
                f'fill="{color}"/>')
    return f'<circle cx="{_num(x)}" cy="{_num(y)}" r="3" fill="{color}"/>'


def row(plots: list[Plot]) -> str:
    """Plots side by side in one ``<svg>`` (text in a generic sans-serif font)."""
    bodies = [p.body() for p in plots]  # (lays out the legends: the heights are final after)
    width = sum(p.width for p in plots)
    height = max(p.height for p in plots)
    parts = []
    x = 0.0
    for p, b in zip(plots, bodies):
        parts.append(f'<g transform="translate({_num(x)} 0)">{b}</g>' if x else b)
        x += p.width
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{_num(width)}" height="{_num(height)}" '
            f'viewBox="0 0 {_num(width)} {_num(height)}" font-family="sans-serif" font-size="{FONT_PX}" '
            f'fill="{INK}">{"".join(parts)}</svg>')


def colour_bar(plot: Plot, vmax: float, label: str) -> None:
    """A vertical colour scale of :func:`reds` from 0 to ``vmax`` at the plot's right (give the
    plot ``right_px`` of 70 or more)."""
    plot.extra.append(lambda p: _colour_bar(p, vmax, label))


def _colour_bar(p: Plot, vmax: float, label: str, steps: int = 10) -> str:
    x = p.width - p.right + 12
    top, bottom = p.top, p.height - p.bottom
    h = (bottom - top) / steps
    out = []
    for i in range(steps):
        out.append(f'<rect x="{_num(x)}" y="{_num(bottom - (i + 1) * h)}" width="12" height="{_num(h + 0.5)}" '
                   f'fill="{reds((i + 0.5) / steps)}"/>')
    out.append(f'<rect x="{_num(x)}" y="{_num(top)}" width="12" height="{_num(bottom - top)}" fill="none" '
               f'stroke="{INK}" stroke-width="0.8"/>')
    for v, y in ((0, bottom), (vmax, top)):
        out.append(f'<text x="{_num(x + 16)}" y="{_num(y + FONT_PX * 0.35)}">{escape(format_tick(v, 1))}</text>')
    cx, cy = x + 16 + text_width_px(format_tick(vmax, 1)) + 10, (top + bottom) / 2
    out.append(f'<text x="{_num(cx)}" y="{_num(cy)}" text-anchor="middle" transform="rotate(-90 {_num(cx)} '
               f'{_num(cy)})">{escape(label)}</text>')
    return "".join(out)
