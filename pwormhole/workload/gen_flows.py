"""HPCC-style traffic generator: Poisson flow arrivals with sizes from a CDF.

``pwormhole gen-flows`` writes an HPCC flow file (the format read by
:func:`pwormhole.workload.hpcc_flows.read_hpcc_flows`) the way HPCC's own
``traffic_gen/traffic_gen.py`` (alibaba-edu/High-Precision-Congestion-Control)
does:

* flow sizes follow a CDF file of ``size_bytes cumulative_percent`` lines
  (HPCC's ``WebSearch_distribution.txt``, ``FbHdp_distribution.txt``,
  ``AliStorage2019.txt``, ``GoogleRPC2008.txt``), drawn by inverse transform
  with linear interpolation between points (``custom_rand.py``:
  ``getValueFromPercentile``), rounded to whole bytes, at least 1 byte;
* the mean size used for the arrival rate is the mean of that piecewise-linear
  distribution (the trapezoid sum of ``custom_rand.py``'s ``getAvg``);
* every host starts flows as a Poisson process whose rate makes its offered
  load ``load`` times its link rate: mean inter-arrival
  ``mean_size * 8 / (rate * load)``;
* each flow goes to a destination drawn uniformly among the other hosts;
* arrivals stop at ``start + duration``.

Differences from ``traffic_gen.py``, all deliberate. Sizes are drawn at
stratified percentiles: with ``m`` flows in the window, one uniform percentile
in each of ``m`` equal slices of 0..100, the slices shuffled over the flows.
Each flow's size still follows the CDF (sizes are exchangeable, though no
longer independent), and a run's mean size and offered load match the
CDF's: within 0.1% at 50,000 flows for all four HPCC CDFs, where independent
draws (``traffic_gen.py``) need about ``(3 * CV / error)**2`` flows for a
given error (the size CV is 2.3 for WebSearch, 5.6 for FbHdp, 4.7 for
AliStorage2019 and 22.6 for GoogleRPC2008, whose 2% would take some 10**7
flows). Time is int picoseconds (HPCC rounds inter-arrivals to whole ns), sizes are rounded to the nearest
byte (HPCC truncates, which biases the mean down by half a byte), flows start
at ``start_ps`` (default 0; HPCC adds 2 s, the start of its ns-3 apps), the
header holds the exact flow count (HPCC writes an estimate and then seeks
back), and a host's rate is taken from its links in the topology (HPCC
takes one ``--bandwidth`` for all).
"""

from __future__ import annotations

import argparse
import bisect
import math
import os
from dataclasses import dataclass

import numpy as np

from pwormhole.errors import InputError
from pwormhole.inputs.formats import load_topology
from pwormhole.inputs.tokens import open_text, to_float, token_lines
from pwormhole.outfiles import atomic
from pwormhole.topology.model import Topology
from pwormhole.units import PS_PER_S, format_rate, format_time, parse_rate_bps, parse_time_ps
from pwormhole.workload.flows import Flow
from pwormhole.workload.hpcc_flows import FIRST_SPORT

MAX_GEN_FLOWS = 2_000_000
"""Most flows one ``gen-flows`` may write: ~350 B of memory each while generated (a run of them needs
far more); a window and load expected to give more are refused before any is drawn."""

PG = 3  # traffic_gen.py writes "src dst 3 100 size t": priority group 3 ...
DPORT = 100  # ... and destination port 100


@dataclass(frozen=True)
class Cdf:
    """A flow-size CDF: ``sizes[i]`` bytes at ``percents[i]`` percent.

    ``percents`` start at 0, end at 100 and never decrease; ``sizes`` strictly
    increase. Between points the distribution is linear (uniform density).
    """

    sizes: tuple[float, ...]
    percents: tuple[float, ...]
    source: str | None = None

    @property
    def mean_bytes(self) -> float:
        """Mean of the piecewise-linear distribution (HPCC's ``getAvg``)."""
        s = 0.0
        for i in range(1, len(self.sizes)):
            s += (self.sizes[i] + self.sizes[i - 1]) / 2.0 * (self.percents[i] - self.percents[i - 1])
        return s / 100.0

    def value_at(self, percent: float) -> float:
        """Size at ``percent`` (0..100) by linear interpolation (HPCC's ``getValueFromPercentile``)."""
        ys = self.percents
        i = bisect.bisect_left(ys, percent, 1)  # first point with ys[i] >= percent, i >= 1
        if i >= len(ys):
            i = len(ys) - 1
        y0, y1 = ys[i - 1], ys[i]
        x0, x1 = self.sizes[i - 1], self.sizes[i]
        if y1 <= y0:
            return x1
        return x0 + (x1 - x0) * (percent - y0) / (y1 - y0)


def read_cdf(path: str | os.PathLike) -> Cdf:
    """Read a flow-size CDF file: one ``size_bytes cumulative_percent`` pair per line.

    Blank lines and lines starting with ``#`` are skipped; sizes and percents
    may be written as decimals. HPCC's ``custom_rand.py`` accepts the same
    files.

    Raises:
        InputError naming the file, the line and the value for: a file that
        cannot be opened or holds fewer than two points; a line without
        exactly two numbers; a negative size; a percent outside 0..100; a
        first percent other than 0 or a last percent other than 100; a
        percent below the one before it; a size not larger than the one
        before it.
    """
    spath = str(path)
    sizes: list[float] = []
    percents: list[float] = []
    last_line = 0
    with open_text(path, "CDF file") as f:
        for lineno, toks in token_lines(f):
            last_line = lineno
            if len(toks) != 2:
                raise InputError(f"expected 'size_bytes cumulative_percent', found {len(toks)} values "
                                 f"({' '.join(toks)!r})", spath, lineno)
            size = to_float(toks[0], "flow size", spath, lineno)
            pct = to_float(toks[1], "cumulative percent", spath, lineno)
            if size < 0:
                raise InputError(f"flow size {toks[0]!r} is negative", spath, lineno)
            if not 0.0 <= pct <= 100.0:
                raise InputError(f"cumulative percent {toks[1]!r} is outside 0..100", spath, lineno)
            if not sizes:
                if pct != 0.0:
                    raise InputError(f"the CDF must start at 0 percent, found {toks[1]!r}", spath, lineno)
            else:
                if pct < percents[-1]:
                    raise InputError(f"cumulative percent {toks[1]!r} decreases (previous point: "
                                     f"{percents[-1]:g})", spath, lineno)
                if size <= sizes[-1]:
                    raise InputError(f"flow size {toks[0]!r} is not larger than the previous point's "
                                     f"{sizes[-1]:g}; sizes must increase", spath, lineno)
            sizes.append(size)
            percents.append(pct)
    if len(sizes) < 2:
        raise InputError(f"a CDF needs at least two points (size percent), found {len(sizes)}",
                         spath, max(last_line, 1))
    if percents[-1] != 100.0:
        raise InputError(f"the CDF must end at 100 percent, found {percents[-1]:g}", spath, last_line)
    return Cdf(tuple(sizes), tuple(percents), spath)


def host_rates(topo: Topology) -> dict[int, int]:
    """Each host's NIC capacity: the sum of its links' rates, NVLink links left out."""
    rates = {h: 0 for h in topo.hosts}
    nv = topo.nvswitches
    for ln in topo.links:
        for end, other in ((ln.a, ln.b), (ln.b, ln.a)):
            if end in rates and other not in nv:
                rates[end] += ln.rate_bps
    return rates


def generate_flows(topo: Topology, cdf: Cdf, load: float, duration_ps: int, seed: int = 1,
                   host_rate_bps: int | None = None, start_ps: int = 0) -> list[Flow]:
    """Poisson flow arrivals at every host of ``topo`` (see the module docstring).

    Args:
        topo: the network; flows run between its hosts.
        cdf: flow-size distribution (:func:`read_cdf`).
        load: offered load per host as a fraction of its link rate (> 0; 0.5 = 50%).
        duration_ps: arrivals happen in ``[start_ps, start_ps + duration_ps)``.
        seed: seed of the generator (same seed, same flows).
        host_rate_bps: one rate for every host; default: each host's own
            link rate(s) in ``topo`` (:func:`host_rates`).
        start_ps: time of the start of the arrival window.

    Returns:
        Flows sorted by start time (ties: source host), ``flow_id`` = position,
        ``pg`` 3, ``dport`` 100 (as ``traffic_gen.py``), source ports numbered per
        source host from 10000 as ``third.cc`` numbers them.

    Raises:
        InputError for fewer than two hosts, a load that is not a positive
        number, a negative duration, or a host without a link.
    """
    hosts = topo.hosts
    if len(hosts) < 2:
        raise InputError(f"gen-flows needs at least two hosts, topology {topo.name} has {len(hosts)}")
    if not (isinstance(load, (int, float)) and math.isfinite(load) and load > 0):
        raise InputError(f"load must be a positive number (0.5 = 50% of the host link rate), got {load!r}")
    if duration_ps < 0:
        raise InputError(f"duration must not be negative, got {duration_ps} ps")
    if host_rate_bps is not None:
        if host_rate_bps <= 0:
            raise InputError(f"host rate must be positive, got {host_rate_bps}")
        rates = {h: host_rate_bps for h in hosts}
    else:
        rates = host_rates(topo)
        for h in hosts:
            if rates[h] <= 0:
                raise InputError(f"host {h} of topology {topo.name} has no link; it has no rate to load")
    mean = cdf.mean_bytes
    expected = sum(duration_ps * rates[h] * load / (mean * 8 * PS_PER_S) for h in hosts)
    if expected > MAX_GEN_FLOWS:
        raise InputError(f"about {expected:,.0f} flows expected ({len(hosts)} hosts at load {load:g} over "
                         f"{format_time(duration_ps)}, mean size {mean:,.0f} B), over the limit of "
                         f"{MAX_GEN_FLOWS:,}: a shorter duration or a lower load")
    # Only uniform doubles are drawn (numpy's PCG64 ``random()``, a stream that
    # numpy keeps stable); exponentials and choices are computed from them.
    rng = np.random.Generator(np.random.PCG64(seed))
    end_ps = start_ps + duration_ps
    n = len(hosts)
    host_arr = np.asarray(hosts, dtype=np.int64)
    xs = np.asarray(cdf.sizes, dtype=np.float64)
    ys = np.asarray(cdf.percents, dtype=np.float64)
    t_parts, src_parts = [], []
    for h in hosts:
        # mean inter-arrival (ps): mean_bytes * 8 bits / (rate * load)
        gap = mean * 8 * PS_PER_S / (rates[h] * load)
        t = start_ps
        chunk = max(16, int(duration_ps / gap * 1.1) + 16)
        while True:
            gaps = np.rint(-np.log1p(-rng.random(chunk)) * gap).astype(np.int64)
            ts = t + np.cumsum(gaps)
            keep = ts[ts < end_ps]
            if len(keep):
                t_parts.append(keep)
                src_parts.append(np.full(len(keep), h, dtype=np.int64))
            if len(keep) < chunk:
                break
            t = int(ts[-1])
    times = np.concatenate(t_parts) if t_parts else np.zeros(0, dtype=np.int64)
    srcs = np.concatenate(src_parts) if src_parts else np.zeros(0, dtype=np.int64)
    m = len(times)
    # destination: uniform among the other hosts (index j of n-1, skipping the source's own index)
    pos = np.searchsorted(host_arr, srcs)
    j = np.minimum((rng.random(m) * (n - 1)).astype(np.int64), n - 2)
    dsts = host_arr[j + (j >= pos)]
    # size: inverse CDF with linear interpolation, whole bytes, at least 1, at
    # stratified percentiles: one uniform draw in each of m equal slices of
    # 0..100, the slices in random order
    slices = np.argsort(rng.random(m), kind="stable")
    pct = (slices + rng.random(m)) * (100.0 / m) if m else np.zeros(0)
    sizes = np.maximum(np.rint(np.interp(pct, ys, xs)).astype(np.int64), 1)
    order = np.lexsort((srcs, times))
    flows = []
    nxt: dict[int, int] = {}
    for i, k in enumerate(order.tolist()):
        src = int(srcs[k])
        sp = nxt.get(src, FIRST_SPORT)
        nxt[src] = sp + 1
        flows.append(Flow(i, src, int(dsts[k]), PG, DPORT, int(sizes[k]), int(times[k]), sp))
    return flows


def _format_seconds(ps: int) -> str:
    """Exact decimal seconds: 9 decimals (ns) when whole ns, else 12 (ps)."""
    whole, frac = divmod(ps, PS_PER_S)
    if frac % 1000 == 0:
        return f"{whole}.{frac // 1000:09d}"
    return f"{whole}.{frac:012d}"


def write_hpcc_flows(path: str | os.PathLike, flows: list[Flow]) -> None:
    """Write ``flows`` as an HPCC flow file (``N``, then ``src dst pg dport size start_s``).

    Start times are written as exact decimal seconds, so reading the file back
    gives the same picoseconds. The file is written to ``PATH.part`` and renamed
    when complete. Raises OutputError when the file cannot be written.
    """
    with atomic(str(path)) as fh:
        fh.write(f"{len(flows)}\n")
        for f in flows:
            fh.write(f"{f.src} {f.dst} {f.pg} {f.dport} {f.size_bytes} {_format_seconds(f.start_ps)}\n")


# -- command line ---------------------------------------------------------------

def add_parser(subparsers) -> argparse.ArgumentParser:
    """Add the ``gen-flows`` subcommand to ``subparsers`` (``func`` = :func:`main`)."""
    g = subparsers.add_parser(
        "gen-flows", help="write an HPCC flow file: Poisson arrivals at a target load, sizes from a CDF",
        description="Generate flows as HPCC's traffic_gen.py does: every host starts flows as a Poisson "
                    "process at LOAD times its link rate, to random other hosts, with sizes drawn from "
                    "a CDF file of 'size_bytes cumulative_percent' lines.")
    g.add_argument("--cdf", metavar="FILE", required=True,
                   help="flow-size CDF (e.g. HPCC's WebSearch_distribution.txt)")
    g.add_argument("--load", type=float, required=True, help="offered load per host, fraction of its link rate (0.5)")
    g.add_argument("--duration", metavar="TIME", required=True,
                   help="arrival window, e.g. 10ms (a bare number is seconds)")
    g.add_argument("--topology", metavar="FILE",
                   help="topology file (HPCC, SimAI or htsim format); hosts and rates from it")
    g.add_argument("--hosts", type=int, help="number of hosts, without --topology (ids 0..N-1)")
    g.add_argument("--rate", metavar="RATE", help="host link rate, e.g. 100Gbps (required with --hosts; "
                                                  "with --topology it overrides the links' rates)")
    g.add_argument("--start", metavar="TIME", default="0", help="start of the arrival window (default 0)")
    g.add_argument("--seed", type=int, default=1, help="random seed (default 1)")
    g.add_argument("--out", metavar="FILE", required=True, help="flow file to write")
    g.set_defaults(func=main)
    return g


def main(args) -> int:
    """Run ``gen-flows`` with parsed ``args``; returns the exit status (InputError propagates)."""
    try:
        duration = parse_time_ps(args.duration, default_unit="s")
    except ValueError as e:
        raise InputError(f"--duration: {e}") from None
    try:
        start = parse_time_ps(args.start, default_unit="s")
    except ValueError as e:
        raise InputError(f"--start: {e}") from None
    rate = None
    if args.rate is not None:
        try:
            rate = parse_rate_bps(args.rate)
        except ValueError as e:
            raise InputError(f"--rate: {e}") from None
    if args.topology and args.hosts is not None:
        raise InputError("give either --topology or --hosts, not both")
    if args.topology:
        topo = load_topology(args.topology)
    elif args.hosts is not None:
        if args.hosts < 2:
            raise InputError(f"--hosts must be >= 2, got {args.hosts}")
        if rate is None:
            raise InputError("--hosts needs --rate (e.g. --rate 100Gbps)")
        topo = Topology(args.hosts + 1, frozenset({args.hosts}), name=f"{args.hosts}-hosts")
    else:
        raise InputError("gen-flows needs --topology FILE or --hosts N --rate RATE")
    if args.seed < 0:
        raise InputError(f"--seed must be >= 0, got {args.seed}")
    cdf = read_cdf(args.cdf)
    flows = generate_flows(topo, cdf, args.load, duration, args.seed, rate, start)
    write_hpcc_flows(args.out, flows)
    total = sum(f.size_bytes for f in flows)
    rates = {h: rate for h in topo.hosts} if rate is not None else host_rates(topo)
    cap = sum(rates.values())
    offered = total * 8 * PS_PER_S / (cap * duration) if duration and cap else 0.0
    mean = total / len(flows) if flows else 0.0
    rate_txt = format_rate(rate) if rate is not None else "link rates"
    print(f"wrote {len(flows)} flows to {args.out}: {len(topo.hosts)} hosts at {rate_txt}, mean size "
          f"{mean:,.0f} B (CDF mean {cdf.mean_bytes:,.0f} B), offered load {offered:.3f} (asked {args.load:g})")
    return 0


__all__ = ["MAX_GEN_FLOWS", "Cdf", "read_cdf", "generate_flows", "write_hpcc_flows", "host_rates", "add_parser", "main"]
