"""Topology -> logical-process assignment with METIS (the only module importing pymetis).

Nodes joined by links much shorter than the rest form one indivisible *unit*
(:mod:`pwormhole.partition.grid`, docs/design.md invariant 3); METIS (Karypis &
Kumar, through pymetis) splits the unit graph into ``parts`` with

* vertex weight = expected events at the unit: two events (arrival and
  transmission) per data packet and per ACK through each node, spread evenly
  over ECMP next hops, plus one per port so idle nodes still count;
* edge weight = expected bytes (data and ACKs) over the link, in KB,
  at least 1;

so heavy traffic stays inside one LP and the load is balanced. The seed is
fixed, so plans are reproducible. METIS's own messages (printed from C) are
kept off the terminal; a plan with more parts than units that carry traffic
says so in :meth:`PartitionPlan.warning`.
"""

from __future__ import annotations

import ctypes
import dataclasses
import json
import math
import os
import re
import stat
import sys
import tempfile
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from operator import attrgetter

from ..errors import InputError
from ..net.packet import ACK_INT_BYTES, DATA_HEADER_BYTES
from ..outfiles import atomic
from ..topology.model import Topology
from ..topology.routing import adjacency, next_hops_via_switches
from .grid import WindowGrid, units_of
from .record import WindowRecord, refine

METIS_SEED = 1
METIS_UFACTOR = 30  # allowed imbalance 1.030 (METIS units of 1/1000)


@dataclass
class PartitionPlan:
    """Which LP (rank) owns each node.

    Attributes:
        parts: number of LPs.
        owner: ``owner[node_id]`` = rank.
        units: number of indivisible units METIS distributed.
        cut_links: ``[a, b]`` node pairs of links between ranks.
        lookahead_ps: smallest propagation delay of a cut link (0 when nothing is cut).
        edge_cut_bytes: expected bytes over cut links.
        imbalance: ``max part weight / mean part weight - 1`` on vertex weight.
        part_weights: expected events per rank.
        traffic_units: units some flow crosses (0 when no flows were given).
        grid: the topology's :class:`~pwormhole.partition.grid.WindowGrid` (set by
            :func:`make_plan`; None in a plan read from a file; never saved).
    """

    parts: int
    owner: list[int]
    units: int = 0
    cut_links: list[list[int]] = field(default_factory=list)
    lookahead_ps: int = 0
    edge_cut_bytes: int = 0
    imbalance: float = 0.0
    part_weights: list[int] = field(default_factory=list)
    traffic_units: int = 0

    def __post_init__(self) -> None:
        self.grid: WindowGrid | None = None  # not a field: not in the saved plan

    def warning(self, what: str = "parts") -> str | None:
        """One line when some of the ``what`` (ranks, LPs) can have no events: more of them than units with traffic."""
        if not 0 < self.traffic_units < self.parts:
            return None
        idle = self.parts - self.traffic_units
        return (f"{self.parts} {what} but the flows cross only {self.traffic_units} of the {self.units} indivisible "
                f"units: {idle} {what} or more will have no events; use at most {self.traffic_units}")

    def to_json(self, path: str) -> None:
        """The plan as JSON (as ``PATH.part``, renamed; OutputError on a write error)."""
        with atomic(path) as fh:
            json.dump(asdict(self), fh, indent=1)
            fh.write("\n")

    @staticmethod
    def from_json(path: str, topo: Topology) -> PartitionPlan:
        """Load a saved plan for ``topo``. InputError naming the file, the line and the value
        for a file that cannot be read, is larger than a plan of ``topo`` can be, is not JSON or
        not a plan (an unknown or missing field, a value of the wrong type or out of range: a
        rank outside ``0 .. parts-1``, a node id outside the topology), or was made for another
        topology (``owner`` not one rank per node)."""
        text = _read_plan_text(path, topo)
        try:
            d = json.loads(text)
        except ValueError as e:
            raise InputError(f"cannot read partition plan: {getattr(e, 'msg', e)}", path,
                             getattr(e, "lineno", None)) from None
        except RecursionError:
            raise InputError("cannot read partition plan: nested too deeply", path) from None
        if not isinstance(d, dict):
            raise InputError(f"not a partition plan: expected a JSON object, got {type(d).__name__}", path, 1)
        fields = {f.name for f in dataclasses.fields(PartitionPlan)}
        for k in d:
            if k not in fields:
                raise InputError(f"unknown field {k!r} in partition plan (fields: {', '.join(sorted(fields))})",
                                 path, _line_of(text, k))
        for k in ("parts", "owner"):
            if k not in d:
                raise InputError(f"partition plan has no {k!r}", path, 1)

        def bad(what: str, value, why: str, key: str, index=None) -> InputError:
            return InputError(f"{what} {json.dumps(value)[:40]} {why}", path, _line_of(text, key, index))

        def count(key: str, lo: int, hi: int | None = None) -> None:
            v = d.get(key)
            if v is not None and not (_is_int(v) and v >= lo and (hi is None or v <= hi)):
                raise bad(key, v, f"is not an integer in {lo}..{'' if hi is None else hi}", key)

        count("parts", 1)
        parts = d["parts"]
        owner = d["owner"]
        if not isinstance(owner, list):
            raise bad("owner", owner, "is not a list of ranks", "owner")
        if len(owner) != topo.n_nodes:  # first: a plan of another topology
            raise InputError(f"plan has {len(owner)} nodes for {parts} parts; the topology has "
                             f"{topo.n_nodes} nodes", path, _line_of(text, "owner"))
        count("parts", 1, topo.n_nodes)
        count("units", 0, topo.n_nodes)
        count("lookahead_ps", 0)
        count("edge_cut_bytes", 0)
        for i, r in enumerate(owner):
            if not (_is_int(r) and 0 <= r < parts):
                raise bad(f"owner[{i}]", r, f"is not a rank 0..{parts - 1}", "owner", i)
        cut = d.get("cut_links", [])
        if not isinstance(cut, list):
            raise bad("cut_links", cut, "is not a list of [a, b] node pairs", "cut_links")
        for i, pair in enumerate(cut):
            if not (isinstance(pair, list) and len(pair) == 2
                    and all(_is_int(v) and 0 <= v < topo.n_nodes for v in pair)):
                raise bad(f"cut_links[{i}]", pair, f"is not a pair of node ids 0..{topo.n_nodes - 1}",
                          "cut_links", i)
        weights = d.get("part_weights", [])
        if not (isinstance(weights, list) and len(weights) in (0, parts)):
            raise bad("part_weights", weights, f"is not a list of {parts} weights", "part_weights")
        for i, w in enumerate(weights):
            if not (_is_int(w) and w >= 0):
                raise bad(f"part_weights[{i}]", w, "is not an integer >= 0", "part_weights", i)
        imb = d.get("imbalance", 0.0)
        if not (type(imb) in (int, float) and math.isfinite(imb) and imb >= 0):
            raise bad("imbalance", imb, "is not a finite number >= 0", "imbalance")
        return PartitionPlan(**d)

    def describe(self) -> str:
        lines = [f"parts {self.parts}  units {self.units}  cut links {len(self.cut_links)}  "
                 f"edge cut {self.edge_cut_bytes:,} B (the given flows' bytes over cut links; 0 without a flow list)  "
                 f"imbalance {self.imbalance * 100:.2f}%  "
                 f"lookahead {self.lookahead_ps} ps"]
        for r, w in enumerate(self.part_weights):
            lines.append(f"  rank {r}: {self.owner.count(r)} nodes, weight {w}")
        return "\n".join(lines)


def _is_int(v) -> bool:
    return type(v) is int  # not a bool, not a float


def _read_plan_text(path: str, topo: Topology) -> str:
    """The text of a plan file, refused (InputError) when it is not a regular file or is
    larger than any plan of ``topo`` (a few dozen bytes per node and per link, plus 1 MiB)."""
    limit = 2**20 + 64 * (topo.n_nodes + 2 * len(topo.links))
    try:
        st = os.stat(path)
        if not stat.S_ISREG(st.st_mode):
            raise InputError("cannot read partition plan: not a regular file", path)
        if st.st_size > limit:
            raise InputError(f"partition plan is {st.st_size} bytes, more than a plan of this topology can be "
                             f"({limit} bytes)", path)
        with open(path, encoding="utf-8") as fh:
            return fh.read(limit)
    except (OSError, ValueError) as e:
        raise InputError(f"cannot read partition plan: {getattr(e, 'strerror', None) or e}", path) from None


_SEPARATORS = re.compile(r"[\s,]*")


def _skip_separators(text: str, pos: int) -> int:
    """Where the run of whitespace and commas from ``pos`` in ``text`` ends (``pos`` when none)."""
    m = _SEPARATORS.match(text, pos)
    return m.end() if m is not None else pos  # never None: the pattern also matches the empty string


def _line_of(text: str, key: str, index: int | None = None) -> int:
    """1-based line of the value of top-level ``key`` in JSON ``text`` (of its element
    ``index`` when given), for error messages; 1 when not found."""
    matches = list(re.finditer(r'"' + re.escape(key) + r'"\s*:\s*', text))
    if not matches:
        return 1
    pos = matches[-1].end()  # the last one wins, as in json.loads
    if index is not None and text.startswith("[", pos):
        dec = json.JSONDecoder()
        pos += 1
        try:
            for _ in range(index):
                pos = _skip_separators(text, pos)
                _, pos = dec.raw_decode(text, pos)
            pos = _skip_separators(text, pos)
        except ValueError:
            pass
    return text.count("\n", 0, pos) + 1


def traffic_weights(topo: Topology, flows, payload_bytes: int = 1000) -> tuple[list[float], list[float]]:
    """Expected ``(events per node, bytes per link)`` of a flow list, ECMP spread evenly."""
    adj = adjacency(topo)
    node_w = [float(len(adj[n])) for n in range(topo.n_nodes)]
    link_b = [0.0] * len(topo.links)
    by_pair: dict[tuple[int, int], int] = {}
    got = by_pair.get
    for pair, size in zip(zip(map(attrgetter("src"), flows), map(attrgetter("dst"), flows)),
                          map(attrgetter("size_bytes"), flows)):
        by_pair[pair] = got(pair, 0) + size
    routes: dict[int, Mapping[int, list[int]]] = {}
    by_switch: dict = {}
    for (src, dst), size in sorted(by_pair.items()):
        pkts = -(-size // payload_bytes)
        wire = size + pkts * DATA_HEADER_BYTES + pkts * ACK_INT_BYTES
        nh = routes.get(dst)
        if nh is None:
            nh = routes[dst] = next_hops_via_switches(topo, adj, dst, by_switch)
        share = {src: 1.0}
        frontier = [src]
        while frontier:
            nxt = []
            for u in frontier:
                s = share.pop(u)
                node_w[u] += 4 * pkts * s
                if u == dst:
                    continue
                ks = nh.get(u, [])
                for k in ks:
                    v, li = adj[u][k]
                    link_b[li] += wire * s / len(ks)
                    if v not in share:
                        share[v] = 0.0
                        nxt.append(v)
                    share[v] += s / len(ks)
            frontier = nxt
    return node_w, link_b


def check_parts(topo: Topology, parts: int) -> None:
    """InputError unless ``1 <= parts <=`` the topology's units (no plan can have an empty part otherwise)."""
    unit = units_of(topo)
    _check_parts(parts, max(unit) + 1 if unit else 0, topo.n_nodes)


def _check_parts(parts: int, n_units: int, n_nodes: int) -> None:
    if parts < 1:
        raise InputError(f"rank count must be >= 1, got {parts}")
    if parts > n_units:
        raise InputError(f"{parts} ranks for a topology of {n_units} indivisible units ({n_nodes} nodes): "
                         f"use at most {n_units} ranks")


def _part_graph_quietly(parts: int, xadj, adjncy, vweights, eweights) -> list[int]:
    """METIS's partition; what it prints on file descriptors 1 and 2 (from C, past ``sys.stdout``) is dropped."""
    import pymetis  # an optional dependency (the metis extra): loaded only when a plan is made

    libc = ctypes.CDLL(None)
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    saved = [os.dup(1), os.dup(2)]
    try:
        with tempfile.TemporaryFile() as sink:
            os.dup2(sink.fileno(), 1)
            os.dup2(sink.fileno(), 2)
            try:
                opts = pymetis.Options(seed=METIS_SEED, ufactor=METIS_UFACTOR)
                res = pymetis.part_graph(parts, pymetis.CSRAdjacency(xadj, adjncy), vweights=vweights,
                                         eweights=eweights, options=opts)
            finally:
                libc.fflush(None)  # C stdio buffers, while fd 1 still points to the sink
    finally:
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        for fd in saved:
            os.close(fd)
    return list(res.vertex_part)


def _split_units(parts: int, n_units: int, unit_w: list[float], pairs, per: int = 1) -> list[int]:
    """Unit -> part by METIS: vertex weights ``unit_w``, edges ``pairs`` of ``(unit a, unit b, weight)``
    (summed per pair of units, in units of ``per``, at least 1 each)."""
    if parts == 1:
        return [0] * n_units
    if parts == n_units:  # one unit per part: nothing to choose
        return list(range(n_units))
    nbrs: list[dict[int, float]] = [dict() for _ in range(n_units)]
    for a, b, w in pairs:
        if a != b:
            nbrs[a][b] = nbrs[a].get(b, 0.0) + w
            nbrs[b][a] = nbrs[b].get(a, 0.0) + w
    xadj, adjncy, ew = [0], [], []
    for u in range(n_units):
        for v in sorted(nbrs[u]):
            adjncy.append(v)
            ew.append(max(1, int(nbrs[u][v] // per)))
        xadj.append(len(adjncy))
    return [int(p) for p in _part_graph_quietly(parts, xadj, adjncy, [max(1, int(w)) for w in unit_w], ew)]


def make_plan(topo: Topology, parts: int, flows=(), payload_bytes: int = 1000) -> PartitionPlan:
    """Split ``topo`` into ``parts`` LPs (see module docstring).

    Raises InputError when ``parts`` < 1 or larger than the number of units.
    """
    grid = WindowGrid(topo)
    unit = grid.unit
    n_units = max(unit) + 1 if unit else 0
    _check_parts(parts, n_units, topo.n_nodes)
    node_w, link_b = traffic_weights(topo, flows, payload_bytes)
    vw: list[float] = [0] * n_units  # unit -> summed node weight
    for n, w in enumerate(node_w):
        vw[unit[n]] += w
    owner_unit = _split_units(parts, n_units, vw,
                              ((unit[ln.a], unit[ln.b], link_b[li]) for li, ln in enumerate(topo.links)), 1000)
    owner = [int(owner_unit[unit[n]]) for n in range(topo.n_nodes)]
    cut = [(li, ln) for li, ln in enumerate(topo.links) if owner[ln.a] != owner[ln.b]]
    weights = [0] * parts
    for n, w in enumerate(node_w):
        weights[owner[n]] += int(w)
    mean = sum(weights) / parts
    adj = adjacency(topo)
    busy = {unit[n] for n in range(topo.n_nodes) if node_w[n] > len(adj[n])}  # beyond the per-port weight
    plan = PartitionPlan(
        parts=parts,
        owner=owner,
        units=n_units,
        cut_links=[[ln.a, ln.b] for _, ln in cut],
        lookahead_ps=min((ln.delay_ps for _, ln in cut), default=0),
        edge_cut_bytes=int(sum(link_b[li] for li, _ in cut)),
        imbalance=max(weights) / mean - 1 if mean else 0.0,
        part_weights=weights,
        traffic_units=len(busy),
    )
    plan.grid = grid
    return plan


def make_plan_from_record(rec: WindowRecord, parts: int) -> PartitionPlan:
    """Split the units of a recorded run (:mod:`.record`) into ``parts`` LPs: METIS with each
    unit's recorded seconds as its weight (links between units as edges), then
    :func:`~.record.refine` on the per-window loads. ``part_weights`` are microseconds of
    recorded work; ``imbalance`` is on them.

    Raises InputError when ``parts`` < 1 or larger than the number of units.
    """
    n_units = rec.n_units
    _check_parts(parts, n_units, int(rec.unit.size))
    unit = [int(u) for u in rec.unit]
    work_us = rec.unit_s.sum(axis=0) * 1e6
    owner_unit = _split_units(parts, n_units, list(work_us), ((unit[a], unit[b], 1) for a, b, _ in rec.links))
    if 1 < parts < n_units:
        owner_unit = refine(rec, owner_unit, parts)
    owner = [owner_unit[u] for u in unit]
    cut = [(int(a), int(b), int(d)) for a, b, d in rec.links if owner[a] != owner[b]]
    weights = [0] * parts
    for u, w in enumerate(work_us):
        weights[owner_unit[u]] += int(w)
    mean = sum(weights) / parts
    return PartitionPlan(parts=parts, owner=owner, units=n_units, cut_links=[[a, b] for a, b, _ in cut],
                         lookahead_ps=min((d for _, _, d in cut), default=0),
                         imbalance=max(weights) / mean - 1 if mean else 0.0, part_weights=weights,
                         traffic_units=int((rec.events.sum(axis=0) > 0).sum()))
