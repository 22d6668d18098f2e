"""Queue-length and link monitors: HPCC ns-3's ``qlen.txt`` and pwormhole's ``link_util.csv``.

Sampling follows HPCC ns-3's buffer monitor (alibaba-edu/High-Precision-Congestion-Control,
``simulation/scratch/third.cc``: ``monitor_buffer``, ``QlenDistribution``): a sample at
``QLEN_MON_START``, then one every ``qlen_mon_interval`` (100 ns) for as long as the sample
before was before ``QLEN_MON_END``. A sample adds each switch port's egress bytes (all its
queues but the control queue 0, as ``SwitchMmu::egress_bytes`` counts them) to the port's
histogram of KB buckets (``bytes // 1000``). The file holds the cumulative histograms in blocks:
``time: NS``, then ``NODE PORT c0 c1 ... cK`` per switch port (by node, then port, numbered
from 1 as ns-3's devices; ``cK``: the highest bucket seen). A block is written at each sample on
a multiple of ``qlen_dump_interval`` (100 ms), as ns-3 writes them, and one more at the last
sample (ns-3 writes none there, so its file can miss up to 100 ms).

A sample at ``t`` sees the state after everything before ``t`` and nothing at ``t``. No sample
is an event and nothing is scanned per sample: each switch port's ``mon`` (a
:class:`QueueWatch`; None when the monitors are off) is told after each change of its egress
bytes and counts the samples since the change before at the length before
(:class:`~pwormhole.net.switch.QueueWatch`, compiled with the engine). The samples, and
so the files, do not depend on the number of LPs or ranks (each LP watches its own ports; the
data are merged at the end, :func:`merge`).

``link_util.csv``: per direction of each link (the port at ``src``), the bytes it started on the
wire (a packet counts whole where it starts) in each link interval (``--link-interval``, 10 us,
a multiple of the sampling interval) from the first sample to the last (to the run's end when
the window is the whole run); rows only where bytes > 0. An LP reads its ports' byte counters
at each interval end that follows an event (:class:`MonitoredLP`). Under Wormhole a frozen
group's ports carry its flows at the group's rates: the bytes a port is advanced by at the
wake are spread evenly over the frozen span (:meth:`PortSampler.carried`), and its queue holds
what it held at the freeze. NVLink flows given rates (``--nvlink fluid``, the default of training runs) are
spread the same way over each span between two of their rate changes.
"""

from __future__ import annotations

from itertools import compress
from math import gcd
from operator import attrgetter, ne
from typing import NamedTuple

from ..config import ModelConfig
from ..engine.lp import INF_PS, LogicalProcess
from ..net.switch import QLEN_BUCKET_BYTES, QueueWatch
from ..outfiles import atomic
from ..units import PS_PER_NS

QLEN_DUMP_INTERVAL_PS = 100_000_000 * PS_PER_NS  # third.cc's qlen_dump_interval (100 ms)
LINK_UTIL_NAME = "link_util.csv"
LINK_UTIL_HEADER = "time_ns,link,src,dst,bytes,utilization"
_TX_BYTES = attrgetter("tx_bytes")


class Window(NamedTuple):
    """Sample ``k`` is at ``start_ps + k * interval_ps``, for ``k <= last_k``; link interval ``j``
    is ``[start_ps + j * m * interval_ps, start_ps + (j + 1) * m * interval_ps)`` (``m``:
    ``link_every``, the link interval in samples)."""
    start_ps: int
    interval_ps: int
    last_k: int  # INF_PS: up to the run's end (the whole run)
    qlen_name: str
    link_every: int

    def time_ps(self, k: int) -> int:
        return self.start_ps + k * self.interval_ps

    @property
    def link_interval_ps(self) -> int:
        return self.link_every * self.interval_ps

    @property
    def last_link(self) -> int:
        """Index of the last link interval (the one holding the last sample's predecessor)."""
        return INF_PS if self.last_k >= INF_PS else max(0, self.last_k - 1) // self.link_every


def window_of(cfg: ModelConfig, first_start_ps: int) -> Window | None:
    """The monitors' window of a run (None when no monitor is on). ns-3's rule: samples at
    ``start + k * interval`` while the sample before was before the end."""
    if cfg.qlen_mon_file is None:
        return None
    iv = cfg.monitor_interval_ps
    every = max(1, cfg.link_interval_ps // iv)
    if cfg.qlen_mon_end_ps is None:  # the whole run, from the first flow start
        return Window(first_start_ps, iv, INF_PS, cfg.qlen_mon_file, every)
    start = cfg.qlen_mon_start_ps
    return Window(start, iv, max(0, -(-(cfg.qlen_mon_end_ps - start) // iv)), cfg.qlen_mon_file, every)


class MonitorData(NamedTuple):
    """What the samplers gathered (merged over LPs and ranks by :func:`merge`)."""
    samples: int  # samples taken
    qlen: dict  # (switch, port) -> {KB bucket: samples} of the samples with a queue (bytes > 0)
    dumps: list  # (sample index, {(switch, port): {bucket: samples}}) at ns-3's dump times
    links: dict  # (link index, src, dst) -> {link interval index: bytes}
    rates: dict  # (link index, src, dst) -> rate_bps


class PortSampler:
    """The samples of one LP's nodes: its switch ports' queues (told of each change: the
    port's ``mon``) and its ports' byte counters (read at link interval ends as the LP runs)."""

    def __init__(self, nodes, link_ports, window: Window):
        self.w = window
        local = {nd.node_id for nd in nodes}
        self.keys: list[tuple[int, int]] = []  # (switch, port) sampled, parallel to watches
        self.watches: list[QueueWatch] = []
        self.qports: list = []
        for nd in sorted(nodes, key=lambda n: n.node_id):
            if nd.is_switch:
                for p in nd.ports:
                    self.keys.append((nd.node_id, p.idx + 1))
                    self.watches.append(QueueWatch(window.start_ps, window.interval_ps, window.last_k))
                    self.qports.append(p)
        self.lports: list = []
        self.lkeys: list[tuple[int, int, int]] = []
        for li, (pa, pb) in enumerate(link_ports):
            for p in (pa, pb):
                if p.node.node_id in local:
                    self.lports.append(p)
                    self.lkeys.append((li, p.node.node_id, p.peer.node_id))
        self.lindex = {id(p): i for i, p in enumerate(self.lports)}
        self.lrange = range(len(self.lports))
        self.last_tx = [0] * len(self.lports)
        self.util: list[dict[int, int]] = [{} for _ in self.lports]
        self.next_read = 0  # the next link interval end to read the counters at (0: the start, the baseline)
        self.dumps: list = []
        self.next_dump_k = self._dump_after(0)
        self.samples = 0  # samples taken (known at the end)
        self.next_stop_ps = window.start_ps  # the next time run_until stops at (to read or dump)

    def _dump_after(self, k: int) -> int:
        """The first sample index ``>= k`` whose time is a multiple of ns-3's dump interval
        (INF_PS: none): ``start + j * interval = 0 (mod D)`` repeats every ``D / gcd`` samples."""
        w = self.w
        g = gcd(w.interval_ps, QLEN_DUMP_INTERVAL_PS)
        if w.start_ps % g:
            return INF_PS
        period = QLEN_DUMP_INTERVAL_PS // g
        j0 = (-w.start_ps // g) * pow(w.interval_ps // g, -1, period) % period
        kd = j0 if k <= j0 else j0 + -(-(k - j0) // period) * period
        return kd if kd <= w.last_k else INF_PS

    def _flush(self, t: int) -> None:
        """Count every port's samples up to ``t`` (included) at its present length."""
        for qw in self.watches:
            if qw.qlen:
                qw.count(qw.qlen, t)
            qw.since = t

    def _read_end_ps(self, i: int) -> int:
        """Where link interval ``i - 1`` ends (``i = 0``: the start; the last ends at the last sample)."""
        w = self.w
        return min(w.start_ps + i * w.link_interval_ps, w.time_ps(w.last_k) if w.last_k < INF_PS else INF_PS)

    def run_until(self, lp, end_ps: int) -> int:
        """Run ``lp``'s events before ``end_ps``, stopping at the link interval ends (to read the
        byte counters: all before them) and ns-3's dump times up to ``end_ps`` on the way."""
        heap = lp.heap
        if self.next_stop_ps > end_ps:  # (most windows)
            return heap.run(end_ps, lp.handlers)
        w = self.w
        n = 0
        i = self.next_read
        fresh = True  # the boundary before this window may have sent bytes
        while True:
            if i > w.last_link + 1:
                t_read = INF_PS
            else:
                if not fresh and i > 0:  # nothing sent since the last read until the next event (in this window)
                    e = min(heap.next_time(), end_ps)
                    i = max(i, (e - w.start_ps) // w.link_interval_ps + 1)
                t_read = self._read_end_ps(i) if i <= w.last_link + 1 else INF_PS
            t_dump = w.time_ps(self.next_dump_k) if self.next_dump_k < INF_PS else INF_PS
            t = min(t_read, t_dump)
            if t > end_ps:
                self.next_stop_ps = t
                break
            n += heap.run(t, lp.handlers)
            if t == t_dump:
                self._flush(t)
                self.dumps.append((self.next_dump_k, [dict(qw.hist) for qw in self.watches]))
                self.next_dump_k = self._dump_after(self.next_dump_k + 1)
            if t == t_read:
                if i:
                    self._read_tx(i - 1)
                else:
                    self.last_tx = [p.tx_bytes for p in self.lports]
                    self._watch(True)
                if i == w.last_link + 1:  # the last sample: the queues are not watched after it
                    self._flush(t)
                    self._watch(False)
                i += 1
                fresh = False
        self.next_read = i
        return n + heap.run(end_ps, lp.handlers)

    def _watch(self, on: bool) -> None:
        """Set (at the first sample, from the lengths then) or clear the ports' hooks."""
        for qw, p in zip(self.watches, self.qports):
            if on:
                qw.qlen = sum(p.eg_bytes)
                qw.since = self.w.start_ps - 1
            p.mon = qw if on else None

    def _read_tx(self, j: int) -> None:
        """Bytes each port sent since the last read go to link interval ``j``."""
        last = self.last_tx
        util = self.util
        now = list(map(_TX_BYTES, self.lports))
        for i in compress(self.lrange, map(ne, now, last)):
            u = util[i]
            u[j] = u.get(j, 0) + now[i] - last[i]
        self.last_tx = now

    def carried(self, port_bytes: dict, t0_ps: int, d_ps: int, counted: bool = True) -> None:
        """Each port in ``port_bytes`` carried that many bytes evenly over ``[t0_ps, t0_ps + d_ps)``
        without packets: a frozen group that woke (``counted``: its counter jumped by them now) or
        NVLink flows given rates (their ports' counters do not move)."""
        w = self.w
        liv = w.link_interval_ps
        for p, a in port_bytes.items():
            i = self.lindex.get(id(p))
            if i is None or a <= 0 or d_ps <= 0:
                continue
            if counted and self.next_read:
                self.last_tx[i] += a  # not in the interval of the wake
            end = min(t0_ps + d_ps, self._read_end_ps(w.last_link + 1))
            lo = max(t0_ps, w.start_ps)
            u = self.util[i]
            for j in range((lo - w.start_ps) // liv, (end - 1 - w.start_ps) // liv + 1):
                a0 = max(w.start_ps + j * liv, t0_ps)
                a1 = min(w.start_ps + (j + 1) * liv, end)
                share = a * (a1 - t0_ps) // d_ps - a * (a0 - t0_ps) // d_ps
                if share:
                    u[j] = u.get(j, 0) + share

    def finish(self, t_stop_ps: int) -> None:
        """The run ended at ``t_stop_ps``: the samples before it saw the state it ended in;
        the bytes since the last read go to the interval they were sent in."""
        w = self.w
        self.samples = max(0, min(w.last_k, (t_stop_ps - 1 - w.start_ps) // w.interval_ps) + 1)
        if self.samples:
            if self.next_read == 0:  # the run ended before the first sample: the state it ended in holds
                self._watch(True)
            self._flush(w.time_ps(self.samples - 1))
        self._watch(False)
        if 0 < self.next_read <= w.last_link + 1:  # (bytes of events before t_stop, after the last read)
            self._read_tx(self.next_read - 1)

    def result(self) -> MonitorData:
        links = {key: u for key, u in zip(self.lkeys, self.util) if u}
        rates = {key: p.rate_bps for key, p in zip(self.lkeys, self.lports)}
        return MonitorData(self.samples, dict(zip(self.keys, (qw.hist for qw in self.watches))),
                           [(k, dict(zip(self.keys, hs))) for k, hs in self.dumps], links, rates)


class MonitoredLP(LogicalProcess):
    """An LP that samples its nodes for the monitors while it runs (:class:`PortSampler`)."""

    def __init__(self, lp_id: int, nodes, initial_events, owner: list[int], handlers: tuple, link_ports,
                 window: Window):
        super().__init__(lp_id, nodes, initial_events, owner, handlers)
        self.sampler = PortSampler(nodes, link_ports, window)

    def run_until(self, end_ps: int) -> int:
        n = self.sampler.run_until(self, end_ps)
        self.events += n
        return n

    def run_quiet(self, end_ps: int, window_ps: int, limit_ps: int) -> tuple[int, int]:
        """As an LP's, the windows after the first ending before the sampler's next stop."""
        limit_ps = min(limit_ps, self.sampler.next_stop_ps)  # (a stop in the first window: that window alone)
        return super().run_quiet(end_ps, window_ps, limit_ps)


def merge(parts: list[MonitorData]) -> MonitorData:
    """The data of several LPs or ranks (their ports are disjoint; they took the same samples)."""
    dumps: dict[int, dict] = {}
    qlen: dict = {}
    links: dict = {}
    rates: dict = {}
    for d in parts:
        qlen.update(d.qlen)
        links.update(d.links)
        rates.update(d.rates)
        for k, hs in d.dumps:
            dumps.setdefault(k, {}).update(hs)
    return MonitorData(max((d.samples for d in parts), default=0), qlen, sorted(dumps.items()), links, rates)


LINK_UTIL_ROW_BYTES = 48  # a link_util.csv row (its text; the samplers hold about twice that)


def link_util_bound_bytes(w: Window, directions: int, end_ps: int) -> int:
    """The most ``link_util.csv`` can hold for a run expected to end at ``end_ps``: a row per link
    direction and interval (rows where bytes moved only, so a sparse run writes far fewer)."""
    last_ps = end_ps if w.last_k >= INF_PS else min(end_ps, w.time_ps(w.last_k))
    intervals = max(0, last_ps - w.start_ps) // w.link_interval_ps + 1
    return directions * intervals * LINK_UTIL_ROW_BYTES


def monitor_summary(w: Window, data: MonitorData) -> dict:
    """``monitors`` in ``summary.json``: the files, the window and the intervals (ns), the samples taken."""
    return {"qlen_file": w.qlen_name, "link_util_file": LINK_UTIL_NAME, "start_ns": w.start_ps // PS_PER_NS,
            "interval_ns": w.interval_ps // PS_PER_NS, "link_interval_ns": w.link_interval_ps // PS_PER_NS,
            "samples": data.samples}


def qlen_lines(samples: int, hist: dict) -> list[str]:
    """The ``NODE PORT c0 c1 ...`` lines of cumulative histograms after ``samples`` samples."""
    out = []
    for key in sorted(hist):
        h = hist[key]
        top = max(h) if h else 0
        counts = [h.get(b, 0) for b in range(top + 1)]
        counts[0] += samples - sum(h.values())  # the samples of an empty queue
        out.append(f"{key[0]} {key[1]} " + " ".join(map(str, counts)))
    return out


def write_qlen(path: str, data: MonitorData, w: Window) -> None:
    """``qlen.txt`` (see the module docstring); empty when no sample was taken (as ns-3's)."""
    with atomic(path) as fh:
        blocks = [(k, hs) for k, hs in data.dumps]
        if data.samples and (not blocks or blocks[-1][0] != data.samples - 1):
            blocks.append((data.samples - 1, data.qlen))
        keys = set(data.qlen)
        for k, hs in blocks:
            fh.write(f"time: {w.time_ps(k) // PS_PER_NS}\n")
            full = {key: hs.get(key, {}) for key in keys}
            for line in qlen_lines(k + 1, full):
                fh.write(line + "\n")


def write_link_util(path: str, data: MonitorData, w: Window) -> None:
    """``link_util.csv``: ``time_ns`` (interval start), ``link`` (index in the topology's link
    list), ``src``, ``dst`` (the direction), ``bytes``, ``utilization`` (bytes x 8 / (rate x
    interval); a packet counts whole in the interval it starts in, so a busy link can read above 1)."""
    rows = sorted((j, key) for key, u in data.links.items() for j in u)
    iv = w.link_interval_ps
    with atomic(path) as fh:
        fh.write(LINK_UTIL_HEADER + "\n")
        for j, key in rows:
            b = data.links[key][j]
            util = b * 8 * 10**12 / (data.rates[key] * iv)
            fh.write(f"{(w.start_ps + j * iv) // PS_PER_NS},{key[0]},{key[1]},{key[2]},{b},{util:.4f}\n")


__all__ = ["Window", "window_of", "link_util_bound_bytes", "MonitorData", "monitor_summary", "PortSampler",
           "MonitoredLP", "merge", "write_qlen", "write_link_util", "LINK_UTIL_NAME", "QLEN_BUCKET_BYTES"]
