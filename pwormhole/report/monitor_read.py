"""The monitors in a report: ``qlen.txt`` (queue-length histograms per switch port, HPCC ns-3's
format) and ``link_util.csv`` (bytes per link direction per interval), read back, ranked and drawn
(:mod:`pwormhole.report.monitor` writes them)."""

from __future__ import annotations

import os
from typing import NamedTuple

import numpy as np

from ..errors import InputError
from ..units import PS_PER_NS, format_time
from . import charts

LINK_UTIL_COLUMNS = ("time_ns", "link", "src", "dst", "bytes", "utilization")


class QlenHist(NamedTuple):
    """The last block of a ``qlen.txt``: samples per KB bucket of each switch port."""
    time_ns: int
    ports: dict  # (switch, port) -> np.ndarray of samples per KB bucket


class LinkUtil(NamedTuple):
    """The rows of a ``link_util.csv``, by column."""
    time_ns: np.ndarray
    link: np.ndarray
    src: np.ndarray
    dst: np.ndarray
    bytes: np.ndarray
    utilization: np.ndarray


def read_qlen(path: str) -> QlenHist:
    """The last ``time:`` block (cumulative histograms) of a ``qlen.txt``; InputError naming the line."""
    last: QlenHist | None = None
    n = 0
    try:
        with open(path, encoding="utf-8") as fh:
            for line in fh:
                n += 1
                if line.startswith("time: "):
                    last = QlenHist(int(line[6:]), {})
                elif line.strip():
                    node, port, *counts = map(int, line.split())
                    if last is None or not counts:
                        raise ValueError("a port line needs a time: block before it and at least one count")
                    last.ports[(node, port)] = np.array(counts, dtype=np.int64)
    except (OSError, UnicodeDecodeError) as e:
        raise InputError(f"cannot read: {e}", path) from None
    except ValueError as e:
        raise InputError(f"not a qlen.txt line ('time: NS' or 'SWITCH PORT COUNT...'): {e}", path, n) from None
    return last if last is not None else QlenHist(0, {})


def read_link_util(path: str) -> LinkUtil:
    """A ``link_util.csv``; InputError naming the file on a wrong header or value."""
    try:
        with open(path, encoding="utf-8") as fh:
            head = fh.readline().strip().split(",")
            if tuple(head) != LINK_UTIL_COLUMNS:
                raise InputError(f"header {','.join(head)!r} is not {','.join(LINK_UTIL_COLUMNS)!r}", path, 1)
            a = np.loadtxt(fh, delimiter=",", ndmin=2)
    except (OSError, UnicodeDecodeError) as e:
        raise InputError(f"cannot read: {e}", path) from None
    except ValueError as e:
        raise InputError(f"not a link_util.csv: {e}", path) from None
    if not a.size:
        a = np.zeros((0, 6))
    t, link, src, dst, b = (a[:, i].astype(np.int64) for i in range(5))
    return LinkUtil(t, link, src, dst, b, a[:, 5])


def hottest(u: LinkUtil, top: int = 8) -> list[tuple[tuple[int, int, int], int]]:
    """The ``top`` link directions ``(link, src, dst)`` by bytes, with their bytes (most first)."""
    totals: dict = {}
    for key, b in zip(zip(u.link.tolist(), u.src.tolist(), u.dst.tolist()), u.bytes.tolist()):
        totals[key] = totals.get(key, 0) + b
    return sorted(totals.items(), key=lambda kv: (-kv[1], kv[0]))[:top]


def link_series(u: LinkUtil, keys: list, interval_ns: int) -> tuple[np.ndarray, list[np.ndarray]]:
    """The interval starts from the first row's to the last's, and the utilization of each link
    direction of ``keys`` in each (0 where it has no row)."""
    t0, t1 = int(u.time_ns.min()), int(u.time_ns.max())
    grid = np.arange(t0, t1 + interval_ns, interval_ns)
    out = []
    for key in keys:
        sel = (u.link == key[0]) & (u.src == key[1]) & (u.dst == key[2])
        y = np.zeros(grid.size)
        y[(u.time_ns[sel] - t0) // interval_ns] = u.utilization[sel]
        out.append(y)
    return grid, out


class QueueStats(NamedTuple):
    key: tuple[int, int]
    samples: int
    queued: float  # share of samples with 1 KB or more
    mean_kb: float
    p99_kb: int
    max_kb: int


def queue_stats(h: QlenHist) -> list[QueueStats]:
    """Per switch port, from its histogram: samples, share at 1 KB or more, mean, p99 and max (KB)."""
    out = []
    for key, c in sorted(h.ports.items()):
        n = int(c.sum())
        if not n:
            continue
        kb = np.arange(c.size)
        cum = np.cumsum(c)
        out.append(QueueStats(key, n, float(c[1:].sum()) / n, float((kb * c).sum()) / n,
                              int(np.searchsorted(cum, 0.99 * n)), int(np.nonzero(c)[0].max())))
    return out


def qlen_switches(folder: str, summary: dict) -> set[int]:
    """The switches of the run's ``qlen.txt`` (every switch of the topology; none without the file)."""
    name = (summary.get("inputs") or {}).get("qlen_file")
    path = os.path.join(folder, name) if isinstance(name, str) and name else ""
    return {k[0] for k in read_qlen(path).ports} if path and os.path.isfile(path) else set()


def network_parts(folder: str, summary: dict, table, figure, missing, name, start_ns: int | None,
                  top: int = 8) -> tuple[str, str]:
    """The HTML of the report's "Hottest links" and "Queue lengths" blocks for the run in
    ``folder`` (``table``, ``figure``, ``missing``: the page's builders; ``name``: a node's name
    by its id; ``start_ns``: the traffic's start, None when unknown: the first interval's)."""
    inputs = summary.get("inputs") or {}
    qlen_name = inputs.get("qlen_file")
    lu_path = os.path.join(folder, "link_util.csv")
    if not os.path.isfile(lu_path):
        links = missing("no link_util.csv here: run with --monitor (or QLEN_MON_FILE in the config) to write "
                        "bytes per link per interval")
    else:
        u = read_link_util(lu_path)
        if not u.time_ns.size:
            links = missing("link_util.csv has no bytes: the monitor's window held no traffic")
        else:
            hot = hottest(u, top)
            steps = np.diff(np.unique(u.time_ns))
            interval_ns = int((summary.get("monitors") or {}).get("link_interval_ns")
                              or (steps.min() if steps.size else 1000))
            n_intervals = (int(u.time_ns.max()) - int(u.time_ns.min())) // interval_ns + 1
            rows = []
            for key, b in hot:
                sel = (u.link == key[0]) & (u.src == key[1]) & (u.dst == key[2])
                rows.append((key[0], f"{name(key[1])} -> {name(key[2])}", f"{b:,}",
                             f"{u.utilization[sel].sum() / n_intervals:.3f}", f"{u.utilization[sel].max():.3f}"))
            grid, utils = link_series(u, [k for k, _ in hot], interval_ns)
            t0 = int(grid[0]) if start_ns is None else start_ns
            svg = charts.link_chart(grid, [(f"{name(k[1])} -> {name(k[2])}", y) for (k, _), y in zip(hot, utils)],
                                    interval_ns, t0)
            since = f" at {format_time(t0 * PS_PER_NS)}" if t0 else ""
            links = (figure(svg, f"utilization of the {len(hot)} busiest link directions (bytes started per "
                                 f"{interval_ns / 1e3:g} us interval x 8 / rate; a packet counts where it starts); "
                                 f"time since the traffic's start{since}")
                     + table(("link", "direction", "bytes", "mean utilization", "peak"), rows))
    if not qlen_name or not os.path.isfile(os.path.join(folder, qlen_name)):
        queues = missing("no queue-length monitor output here: run with --monitor, or QLEN_MON_FILE in an HPCC "
                         "config")
    else:
        h = read_qlen(os.path.join(folder, qlen_name))
        stats = queue_stats(h)
        if not stats:
            queues = missing(f"{qlen_name} holds no sample (its window starts after the run's end)")
        else:
            busy = sorted((s for s in stats if s.max_kb > 0), key=lambda s: (-s.mean_kb, s.key))[:top]
            idle = len(stats) - sum(1 for s in stats if s.max_kb > 0)
            text = (f"{len(stats)} switch ports sampled {stats[0].samples:,} times up to {h.time_ns:,} ns; "
                    f"{idle} of them never held 1 KB")
            if not busy:
                queues = f"<p>{text}.</p>"
            else:
                series = [(f"{name(s.key[0])} port {s.key[1]}", h.ports[s.key]) for s in busy]
                queues = (figure(charts.queue_chart(series),
                                 f"queue length distribution of the {len(busy)} ports with the longest mean queue "
                                 f"({qlen_name}, HPCC ns-3's monitor format); {text}")
                          + table(("switch", "port", "samples", "with a queue", "mean (KB)", "p99 (KB)",
                                   "max (KB)"),
                                  [(name(s.key[0]), s.key[1], f"{s.samples:,}", f"{s.queued * 100:.1f}%",
                                    f"{s.mean_kb:,.1f}", f"{s.p99_kb:,}", f"{s.max_kb:,}") for s in busy]))
    return links, queues


__all__ = ["read_qlen", "qlen_switches", "read_link_util", "hottest", "link_series", "queue_stats", "network_parts",
           "QlenHist", "LinkUtil"]
