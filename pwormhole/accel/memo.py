"""The memo cache of group transients (Wormhole memoization).

Key of a conflict group: the flow-port graph (a vertex per flow and per
egress port; an edge where a flow's data crosses a port, labelled with the
hop index, or where its ACKs do) with, on each port, its rate, propagation
delay and switch settings (buffer, ECN thresholds, PFC headroom), on each
flow its rate at the lookup quantized to a quarter of an octave (under
HPCC a sixteenth for a flow under way), whether it is new (started as the
group formed) or was already under way, its window
and its priority, plus the
congestion-control parameters of the run. Entries are grouped by the
Weisfeiler-Lehman hash of that graph (:func:`wl_hash`) and confirmed by the
graph itself when the two are numbered alike, else by colour refinement of
the two graphs together where it tells every flow apart, else by an exact
isomorphism test (networkx VF2 ``GraphMatcher``); each also maps the flows
of a new group onto the recorded ones (:func:`flow_match`). This is richer than the paper's flow conflict
graph, so that fabrics with different link rates never share an entry.

An entry holds the convergence time (group formed -> steady), and per
recorded flow the acknowledged bytes over the transient, the steady goodput
and the steady pacing rate of its QP (sampled values only, so every rank
records the same entry).

The cache can be saved (:meth:`MemoCache.save`) and loaded (:meth:`MemoCache.load`);
a file made under another configuration, or an unreadable one, is ignored
with a warning. A loaded file is untrusted: a file over :data:`MAX_FILE_BYTES`
is not read, at most :data:`MAX_ENTRIES` entries are kept, and every entry is
checked against the schema of a recording and the bounds of the scenario
(:class:`MemoLimits`); malformed entries, entries outside the bounds and
duplicates are dropped with one warning.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import stat
from operator import itemgetter
from typing import NamedTuple, TypeGuard

import numpy as np

from ..config import CC_DCQCN, CC_HPCC
from ..net.switch import SwitchPort
from ..outfiles import atomic
from .config import (
    HPCC_EARLY_MIN_PACKETS,
    HPCC_EARLY_TOLERANCE,
    HPCC_EARLY_WINDOW_SPREAD,
    HPCC_LIFT_MAX_NICS,
    KNOWN_WINDOWS,
    LINE_RATE_WINDOW_SHARE,
    SETTLE_RTTS,
)

FORMAT = "pwormhole-memo-12"  # bumped whenever what a recording means changes (history: git log)
FILE_HEAD = b'{"format": "pwormhole-memo-'  # how every cache file MemoCache.save writes begins, of any FORMAT
CC_FIELDS = ("cc_mode", "packet_payload_bytes", "alpha_resume_interval_ps", "rate_decrease_interval_ps",
             "rp_timer_ps", "ewma_gain", "fast_recovery_times", "rate_ai_bps", "rate_hai_bps", "min_rate_bps",
             "rate_on_first_cnp", "l2_chunk_size", "l2_ack_interval", "has_win", "global_t", "var_win",
             "fast_react", "u_target", "mi_thresh", "int_multi", "rate_bound", "enable_pfc", "enable_qcn",
             "buffer_size_bytes", "ack_high_prio")

OLD_RATE_STEPS = 16
"""Under HPCC a flow already under way is keyed by its rate quantized to ``1 / OLD_RATE_STEPS``
of an octave (a new one, and every flow under DCQCN, to a quarter): a join's transient depends
on the windows it meets. Measured in bench/RESULTS.md."""

MAX_FILE_BYTES = 64 * 2**20
"""A cache file larger than this is not read (ignored with a warning); :meth:`MemoCache.save`
never writes a larger one."""

MAX_ENTRIES = 20_000
"""Entries kept from a cache file (the rest are dropped with the warning); :meth:`MemoCache.save`
writes no more."""

MATCH_STEPS_PER_VERTEX = 50
"""VF2's candidate pairs tried per vertex of a group graph at most (:func:`flow_match`); past it the
group is a miss. Of the matches VF2 found on the per-layer GPT-7B rows 197 of 201 took 4-6 a vertex,
the others 10-48 (bench/RESULTS.md, "Memo matches"); a search of graphs with many alike flows that
colour refinement cannot tell apart (several rings on one NIC) ran for minutes on one lookup
without it."""

MAX_UNMATCHED = 100_000
"""Pairs of a group graph and an entry found not to match, kept so that a lookup of the same graph
does not match them again (the set starts over when full)."""

_ROLE = re.compile(r"a|d[0-9]{1,6}")
_MAX_LABEL = 200


def config_fingerprint(cfg, accel_cfg) -> str:
    """A digest of everything a recording depends on besides the group graph."""
    parts = [f"{k}={getattr(cfg, k, None)!r}" for k in CC_FIELDS]
    # the values in effect, not the 0 that picks them
    eff = accel_cfg.resolved(getattr(cfg, "cc_mode", None) == CC_HPCC)
    parts.append(f"theta={eff.theta!r} samples={eff.samples} sample_ps={eff.sample_ps} "
                 f"min_span_packets={eff.min_span_packets} settle_rtts={SETTLE_RTTS!r}")
    if getattr(cfg, "cc_mode", None) == CC_HPCC:  # joins onto woken flows are looked up, their rates finer
        parts.append(f"known={KNOWN_WINDOWS}/old_rates={OLD_RATE_STEPS}")
    if getattr(cfg, "cc_mode", None) == CC_HPCC and eff.early:  # recordings end at the early freeze
        parts.append(f"early={HPCC_EARLY_TOLERANCE!r}/{HPCC_EARLY_WINDOW_SPREAD!r}/{HPCC_EARLY_MIN_PACKETS}"
                     f"/span>=min/lift<={HPCC_LIFT_MAX_NICS}")
    if getattr(cfg, "cc_mode", None) == CC_DCQCN and eff.line_rate:  # recordings end at the line-rate freeze
        parts.append(f"line_rate={LINE_RATE_WINDOW_SHARE!r}")
    return hashlib.sha256(";".join(parts).encode()).hexdigest()[:16]


def _q_rate(bps: int, per_octave: int = 4) -> int:
    return round(per_octave * math.log2(max(1, bps)))


class GroupGraph(NamedTuple):
    """A group graph (:func:`group_parts`) in its own vertex numbering, hashable: two groups with
    the same GroupGraph match the same entry with the same mapping."""

    labels: tuple[str, ...]  # by vertex: flows first, then ports
    edges: tuple[tuple[int, int, str], ...]  # (flow vertex, port vertex, role), sorted


def group_key(wh, g):
    """``(wl_hash, graph, order)`` of group ``g`` of Wormhole ``wh`` (see :func:`group_graph`)."""
    graph, order = group_graph(wh, g)
    return wl_hash(graph), graph, order


def group_parts(g, flows: dict, new: set, *, hpcc: bool, port_labels: dict | None = None):
    """``(order, labels, edges)`` of conflict group ``g`` (``flows``: flow id -> FlowState;
    ``new``: its flows that are new in it; ``hpcc``: the others' rates to :data:`OLD_RATE_STEPS`
    per octave; ``port_labels``: a cache of :func:`port_label` by port, kept by the caller): ``order``
    lists its flow ids in the index order of the flow vertices (``0..F-1``; ports ``F..``),
    ``labels`` the vertex labels by vertex, ``edges`` ``{(flow vertex, port vertex): role}`` (a
    flow's data hop ``d<i>``, else ``a`` where only its ACKs cross the port)."""
    order = sorted(g.flows)
    nf = len(order)
    labels = []
    for fid in order:
        age = "n" if fid in new else "o"
        fs = flows[fid]  # its window bounds its transient and its FIFO share; its priority, its queue
        q = _q_rate(fs.rate(), OLD_RATE_STEPS if hpcc and age == "o" else 4)
        labels.append(f"f{q}{age}/w{fs.win_bytes}/g{fs.pg}")
    if port_labels is None:
        port_labels = {}
    known = []
    for p in g.ports:
        pl = port_labels.get(p)
        if pl is None:
            pl = port_labels[p] = port_label(p)
        known.append(pl)
    known.sort(key=_node_and_index)
    pid: dict = {}
    for _node_id, _idx, label, p in known:
        pid[p] = nf + len(pid)
        labels.append(label)
    edges: dict = {}
    for i, fid in enumerate(order):
        fs = flows[fid]
        for hop, p in enumerate(fs.data_ports):
            edges[(i, pid[p])] = _HOP_ROLES[hop] if hop < len(_HOP_ROLES) else f"d{hop}"
        for p in fs.ack_ports:
            edges.setdefault((i, pid[p]), "a")
    return order, labels, edges


_HOP_ROLES = tuple(f"d{hop}" for hop in range(16))  # the roles of a flow's first data hops
_node_and_index = itemgetter(0, 1)  # a port_label's order: by node id, then port index


def port_label(p) -> tuple:
    """``(node id, port index, vertex label, port)`` of a port in a group graph: its rate and
    delay, and a switch port's ECN marking, PFC and buffer settings."""
    label = f"p{p.rate_bps}/{p.delay_ps}"
    if isinstance(p, SwitchPort):
        sw = p.node
        label += f"/s{p.kmin_bytes}/{p.kmax_bytes}/{p.pmax}/{p.headroom_bytes}/{p.pfc_shift}/{sw.buffer_bytes}"
    return p.node.node_id, p.idx, label, p


def parts_graph(labels, edges) -> GroupGraph:
    """The :class:`GroupGraph` of :func:`group_parts`' ``labels`` and ``edges``."""
    return GroupGraph(tuple(labels), tuple(sorted((u, v, r) for (u, v), r in edges.items())))


def group_graph(wh, g):
    """``(graph, order)`` of group ``g`` of Wormhole ``wh`` (:func:`group_parts`)."""
    order, labels, edges = group_parts(g, wh.flows, {f for f in g.flows if wh.is_new(f, g)}, hpcc=wh.hpcc)
    return parts_graph(labels, edges), order


WL_ROUNDS = 3  # rounds of colour refinement in a key
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)  # the 64-bit golden-ratio constant (Knuth, TAOCP vol. 3, 6.4)
_MIX = tuple(np.uint64(k) for k in (30, 0xBF58476D1CE4E5B9, 27, 0x94D049BB133111EB, 31))


def _mix(x: np.ndarray) -> np.ndarray:
    """SplitMix64's finalizer (Steele, Lea and Flood, OOPSLA 2014) on a uint64 array (wrapping)."""
    s1, m1, s2, m2, s3 = _MIX
    x = (x ^ (x >> s1)) * m1
    x = (x ^ (x >> s2)) * m2
    return x ^ (x >> s3)


def wl_hash(graph: GroupGraph) -> str:
    """The entry key of a group graph: Weisfeiler-Lehman colour refinement (Shervashidze et al.,
    JMLR 2011) from the vertex labels, :data:`WL_ROUNDS` rounds, with hashed colours: a vertex's
    next colour mixes its colour with the sum of its neighbours' mixed ``(role, colour)`` (a sum:
    the same in any order; arithmetic wraps at 2^64). The key is the digest of the roles and
    labels, sorted, and of every round's colours, sorted. Isomorphic graphs get the same key, in
    any numbering and any process (a key shared by graphs that are not costs a match:
    :meth:`MemoCache.find` compares the graphs). A few array operations a round, not a Python
    step a vertex."""
    labels, edges = graph.labels, graph.edges
    roles = sorted({role for _, _, role in edges})
    role_no = {role: i + 1 for i, role in enumerate(roles)}
    distinct = sorted(set(labels))
    number = {label: i for i, label in enumerate(distinct)}
    colours = np.array([number[label] for label in labels], dtype=np.uint64)
    us, vs, rs = zip(*edges) if edges else ((), (), ())
    ends = np.array((us + vs, vs + us), dtype=np.int64)  # both ways: (owner, neighbour)
    order = np.argsort(ends[0], kind="stable")
    owner, nbr = ends[0][order], ends[1][order]
    role = np.array([role_no[r] for r in rs] * 2, dtype=np.uint64)[order]
    starts = np.searchsorted(owner, np.arange(len(labels)))
    runs = len(owner) > 0 and bool(np.all(np.diff(np.append(starts, len(owner))) > 0))  # (reduceat's case)
    digest = hashlib.blake2b(repr((roles, distinct)).encode(), digest_size=16)
    for _ in range(WL_ROUNDS):
        terms = _mix(colours[nbr] * _GOLDEN + role)
        if runs:
            sums = np.add.reduceat(terms, starts)
        else:  # a vertex without edges
            sums = np.zeros(len(labels), dtype=np.uint64)
            np.add.at(sums, owner, terms)
        colours = _mix(colours * _GOLDEN ^ sums)
        digest.update(np.sort(colours).astype("<u8", copy=False).tobytes())  # (little-endian on any host)
    return digest.hexdigest()


def flow_match(graph: GroupGraph, other: GroupGraph):
    """``{flow vertex of graph: flow vertex of other}`` of an isomorphism of two group graphs
    (labels and roles kept), or None: the identity where they are numbered alike (VF2 might map
    alike flows onto each other instead: flows of the same labels and edges); where colour
    refinement of the two graphs together gives every flow a colour of its own, the one flow
    mapping there can be (:func:`_distinct_flows_match`); else VF2's, within
    :data:`MATCH_STEPS_PER_VERTEX` (None past it: VF2 is exponential in the worst case)."""
    if graph == other:
        return {v: v for v, label in enumerate(graph.labels) if label[0] == "f"}
    if sorted(graph.labels) != sorted(other.labels) or len(graph.edges) != len(other.edges):
        return None
    colours = _stable_colours(graph, other)
    if colours is None:
        return None  # (an isomorphism keeps colours)
    match = _distinct_flows_match(graph, *colours)
    if match is not None:
        return match
    # networkx takes ~70 ms to load: only for groups that meet an entry numbered otherwise, alike flows in both
    import networkx as nx

    gm = _bounded_matcher(nx)(_nx_graph(nx, graph), _nx_graph(nx, other),
                              node_match=lambda a, b: a["label"] == b["label"],
                              edge_match=lambda a, b: a["role"] == b["role"])
    gm.steps = MATCH_STEPS_PER_VERTEX * len(graph.labels)
    try:
        if not gm.is_isomorphic():
            return None
    except _OutOfSteps:
        return None
    m = gm.mapping
    return {v: m[v] for v, label in enumerate(graph.labels) if label[0] == "f"}


class _OutOfSteps(Exception):
    """VF2 tried :data:`MATCH_STEPS_PER_VERTEX` candidate pairs a vertex."""


_BOUNDED: list = []  # networkx's GraphMatcher that counts its steps (made at the first search: networkx loads late)


def _bounded_matcher(nx):
    """A VF2 ``GraphMatcher`` that raises :class:`_OutOfSteps` once its ``steps`` candidate pairs are tried."""
    if not _BOUNDED:
        base = nx.isomorphism.GraphMatcher

        def syntactic_feasibility(self, a, b) -> bool:
            self.steps -= 1
            if self.steps < 0:
                raise _OutOfSteps
            return base.syntactic_feasibility(self, a, b)

        _BOUNDED.append(type("BoundedGraphMatcher", (base,), {"steps": 0,
                                                               "syntactic_feasibility": syntactic_feasibility}))
    return _BOUNDED[0]


def _distinct_flows_match(graph: GroupGraph, mine: list, theirs: list):
    """Where every flow vertex of ``graph`` has a stable colour of its own (``mine``, ``theirs``:
    the two graphs' :func:`_stable_colours`), the mapping of each flow to the flow of its colour,
    the only one an isomorphism can make; else None. The graphs are then isomorphic: edges join
    flows to ports, so ports of a stable colour have the same flows, with the same roles, in both."""
    flows = [v for v, label in enumerate(graph.labels) if label[0] == "f"]
    if len({mine[v] for v in flows}) < len(flows):
        return None
    at = {c: w for w, c in enumerate(theirs)}
    return {v: at[mine[v]] for v in flows}


def _stable_colours(graph: GroupGraph, other: GroupGraph):
    """Colour refinement of two graphs with the same labels, numbered together (a vertex's next
    colour ranks its colour and its neighbours' ``(role, colour)``, sorted, among both graphs'),
    until no class splits: ``(colours of graph, colours of other)`` by vertex, or None when the
    two graphs' colours differ as multisets at some round (no isomorphism)."""
    n = len(graph.labels)
    nbrs = []
    for g in (graph, other):
        nb: list[list[tuple[str, int]]] = [[] for _ in range(n)]
        for u, v, role in g.edges:
            nb[u].append((role, v))
            nb[v].append((role, u))
        nbrs.append(nb)
    number = {label: i for i, label in enumerate(sorted(set(graph.labels)))}
    mine = [number[label] for label in graph.labels]
    theirs = [number[label] for label in other.labels]
    classes = len(number)
    while True:
        sig_mine = [(mine[v], tuple(sorted((role, mine[u]) for role, u in nbrs[0][v]))) for v in range(n)]
        sig_theirs = [(theirs[v], tuple(sorted((role, theirs[u]) for role, u in nbrs[1][v]))) for v in range(n)]
        if sorted(sig_mine) != sorted(sig_theirs):
            return None
        rank = {sig: i for i, sig in enumerate(sorted(set(sig_mine)))}
        mine = [rank[sig] for sig in sig_mine]
        theirs = [rank[sig] for sig in sig_theirs]
        if len(rank) == classes:
            return mine, theirs
        classes = len(rank)


def _nx_graph(nx, graph: GroupGraph):
    """The networkx graph of a :class:`GroupGraph` (int vertices, never strings: matching must not
    depend on Python's per-process string hashing)."""
    nxg = nx.Graph()
    for v, label in enumerate(graph.labels):
        nxg.add_node(v, label=label)
    for u, v, role in graph.edges:
        nxg.add_edge(u, v, role=role)
    return nxg


def node_link(graph: GroupGraph) -> dict:
    """A group graph as saved: node-link JSON (networkx's ``node_link_data`` layout, links named
    ``links``), vertices by ``id`` with their ``label``, edges by ``source``, ``target``, ``role``."""
    return {"directed": False, "multigraph": False, "graph": {},
            "nodes": [{"label": label, "id": v} for v, label in enumerate(graph.labels)],
            "links": [{"role": role, "source": u, "target": v} for u, v, role in graph.edges]}


MEMO_SETTLE_RTTS = 32
"""A loaded entry's convergence time is at most this many times its group's longest path RTT times
its flow count (plus the sampling that detects it, :class:`MemoLimits`): its flows share their ports
in turn, each settling within a few RTTs (recorded entries: bench/RESULTS.md, constants of accel/)."""

HEADER_BYTES = 64  # a packet's headers at most (RoCE and INT), for a hop's serialization time


class MemoLimits:
    """Bounds of what a recording can hold in a scenario, by physics: a flow's rates (sending and
    goodput) at most ``max_rate_bps`` (its fastest link), its sending rate at least ``min_rate_bps``
    (the CC's ``MIN_RATE``, below which neither DCQCN nor HPCC goes), its bytes (acknowledged over the
    transient, and the growth of its pipeline in either sign) at most ``max_flow_bytes`` (its largest
    flow), the convergence time at most ``max_convergence_ps`` (the largest flow sent at ``MIN_RATE``,
    never past the stop time). Per entry, from its own group graph (:func:`entry_fits`): its
    convergence time at most :data:`MEMO_SETTLE_RTTS` x the longest path RTT (propagation and a full
    packet's serialization per hop, both ways) x its flows, plus ``detect_ps`` (the samples that
    detect a steady state); each flow's pacing rate at most its first link's rate, its goodput at most
    its pacing rate and its bottleneck's rate, its acknowledged bytes at most its bottleneck's rate
    over the convergence time plus its window."""

    __slots__ = ("min_rate_bps", "max_rate_bps", "max_flow_bytes", "max_convergence_ps", "packet_bytes",
                 "detect_ps")

    def __init__(self, min_rate_bps: int, max_rate_bps: int, max_flow_bytes: int, max_convergence_ps: int,
                 packet_bytes: int = 0, detect_ps: int = 1 << 62):
        self.min_rate_bps = min_rate_bps
        self.max_rate_bps = max_rate_bps
        self.max_flow_bytes = max_flow_bytes
        self.max_convergence_ps = max_convergence_ps
        self.packet_bytes = packet_bytes
        self.detect_ps = detect_ps

    @classmethod
    def of(cls, scn, samples: int = 0, sample_ps: int = 0) -> MemoLimits:
        """The bounds of scenario ``scn`` (its topology, flows and configuration) where Wormhole takes
        ``samples`` samples every ``sample_ps`` to find a steady state (0: no bound by the group graph)."""
        cfg = scn.config
        size = max((f.size_bytes for f in scn.flows), default=0)
        min_rate = max(1, cfg.min_rate_bps)
        conv = -(-size * 8 * 10**12 // min_rate)
        detect_ps = (samples + 2) * sample_ps if samples and sample_ps else 1 << 62
        return cls(min_rate, max((ln.rate_bps for ln in scn.topology.links), default=0), size,
                   min(conv, cfg.simulator_stop_ps), cfg.packet_payload_bytes + HEADER_BYTES, detect_ps)


_NO_LIMITS = MemoLimits(1, 1 << 62, 1 << 62, 1 << 62)
_PORT_LABEL = re.compile(r"p([0-9]{1,16})/([0-9]{1,16})(/.*)?")
_FLOW_WINDOW = re.compile(r"f-?[0-9]+[no]/w([0-9]{1,16})/.*")


def entry_fits(labels: list[str], edges: dict, conv: int, recs: dict, limits: MemoLimits) -> bool:
    """Whether a parsed entry is possible in its own group graph (:class:`MemoLimits`): its ports'
    rates and delays and its flows' paths and windows bound its convergence time and each flow's
    rates and bytes."""
    nf = len(recs)
    rate_of, delay_of = {}, {}
    for v in range(nf, len(labels)):
        m = _PORT_LABEL.fullmatch(labels[v])
        if m is None or int(m.group(1)) == 0:
            return False
        rate_of[v], delay_of[v] = int(m.group(1)), int(m.group(2))
    paths: dict[int, list[tuple[int, int]]] = {}
    for (u, w), role in edges.items():
        if role != "a":
            paths.setdefault(u, []).append((int(role[1:]), w))
    rtt_ps = 0
    for i in range(nf):
        hops = [w for _, w in sorted(paths.get(i, ()))]
        m = _FLOW_WINDOW.fullmatch(labels[i])
        if not hops or m is None:
            return False
        rtt_ps = max(rtt_ps, sum(2 * delay_of[w] + limits.packet_bytes * 8 * 10**12 // rate_of[w] for w in hops))
        bottleneck_bps = min(rate_of[w] for w in hops)
        rec = recs[i]
        goodput_bps = rec["goodput"] * 8e12
        if rec["rate_bps"] > rate_of[hops[0]] or goodput_bps > 1.05 * rec["rate_bps"] or goodput_bps > bottleneck_bps:
            return False
        if rec["bytes"] * 8 * 10**12 > bottleneck_bps * conv + int(m.group(1)) * 8 * 10**12:
            return False
    return conv <= MEMO_SETTLE_RTTS * rtt_ps * nf + limits.detect_ps


def _read_text(path: str, limit: int) -> str:
    """At most ``limit`` characters of the UTF-8 file at ``path`` (the one read of a cache file)."""
    with open(path, encoding="utf-8") as fh:
        return fh.read(limit)


def _is_int(v: object) -> TypeGuard[int]:
    return type(v) is int  # not a bool, not a float


def _is_number(v: object) -> TypeGuard[int | float]:
    return _is_int(v) or (type(v) is float and math.isfinite(v))


def _parse_entry(item, limits: MemoLimits):
    """``(key, labels, edges, convergence_ps, flows)`` of a saved entry (``labels`` and
    ``edges`` as :func:`group_parts` gives them), or None when it is not a recording
    within ``limits``: the shape :meth:`MemoCache.save` writes (a flow vertex per recorded
    flow first, then the ports; edges between a flow and a port; a record per flow vertex),
    integer times and bytes, finite rates."""
    if not isinstance(item, dict):
        return None
    key, graph, conv, flows = item.get("key"), item.get("graph"), item.get("convergence_ps"), item.get("flows")
    if not (isinstance(key, str) and 0 < len(key) <= 64 and isinstance(graph, dict) and isinstance(flows, dict)):
        return None
    if not (_is_int(conv) and 0 < conv <= limits.max_convergence_ps):
        return None
    nodes, links = graph.get("nodes"), graph.get("links")
    if not (isinstance(nodes, list) and isinstance(links, list)):
        return None
    labels: list[str] = []
    for v, node in enumerate(nodes):
        if not isinstance(node, dict) or not _is_int(node.get("id")) or node["id"] != v:
            return None
        label = node.get("label")
        if not (isinstance(label, str) and 0 < len(label) <= _MAX_LABEL and label[0] in "fp"):
            return None
        if label[0] == "f" and labels and labels[-1][0] == "p":
            return None  # flows first
        labels.append(label)
    nf = sum(1 for label in labels if label[0] == "f")
    if nf == 0 or nf == len(labels):
        return None
    edges = {}
    for link in links:
        if not isinstance(link, dict):
            return None
        u, w, role = link.get("source"), link.get("target"), link.get("role")
        if not (_is_int(u) and _is_int(w) and isinstance(role, str) and _ROLE.fullmatch(role)):
            return None
        u, w = min(u, w), max(u, w)
        if not 0 <= u < nf <= w < len(labels) or (u, w) in edges:
            return None
        edges[(u, w)] = role
    if len(flows) != nf:
        return None
    recs = {}
    for i in range(nf):
        rec = flows.get(str(i))
        if not isinstance(rec, dict):
            return None
        b, gp, rate, growth = rec.get("bytes"), rec.get("goodput"), rec.get("rate_bps"), rec.get("inflight_growth")
        if not (_is_int(b) and _is_int(growth) and 0 <= b <= limits.max_flow_bytes
                and abs(growth) <= limits.max_flow_bytes):
            return None
        if (b + max(0, growth)) * 8 * 10**12 > limits.max_rate_bps * conv:
            return None  # sent faster than the fastest link: acknowledged plus the pipeline's growth
        if not (_is_number(gp) and 0 <= gp and gp * 8 * 10**12 <= limits.max_rate_bps):
            return None
        if not (_is_number(rate) and limits.min_rate_bps <= rate <= limits.max_rate_bps):
            return None
        recs[i] = {"bytes": b, "goodput": float(gp), "rate_bps": int(rate), "inflight_growth": growth}
    if not entry_fits(labels, edges, conv, recs, limits):
        return None
    return key, labels, edges, conv, recs


class Entry:
    __slots__ = ("graph", "convergence_ps", "flows")

    def __init__(self, graph: GroupGraph, convergence_ps: int, flows: dict):
        self.graph = graph
        self.convergence_ps = convergence_ps
        self.flows = flows  # recorded flow index -> {"bytes", "goodput", "rate_bps", "inflight_growth"}


class MemoCache:
    """Recorded transients keyed by the group graph (see module docstring)."""

    def __init__(self, fingerprint: str = ""):
        self.fingerprint = fingerprint
        self.entries: dict[str, list[Entry]] = {}  # key -> entries; added by _add only (it keeps shapes)
        # not saved: what earlier lookups and insertions found, by group graph
        self.matched: dict[GroupGraph, tuple] = {}  # -> (entry, mapping) of a hit
        self.held: set[GroupGraph] = set()  # known to match an entry
        self.keyed: dict[GroupGraph, str] = {}  # -> its key
        self.shapes: set[tuple[int, int]] = set()  # (vertices, edges) of the entries' graphs
        self.unmatched: set[tuple[GroupGraph, Entry]] = set()  # (graph, entry) found not to match

    def __len__(self) -> int:
        return sum(len(v) for v in self.entries.values())

    def find(self, key: str, graph: GroupGraph):
        """``(entry, mapping)`` where ``mapping[i]`` is the recorded flow index of
        this group's flow index ``i``, or None."""
        for e in self.entries.get(key, ()):
            if (graph, e) in self.unmatched:
                continue  # (the same two graphs: the same answer; a VF2 search past its steps costs ~30 ms)
            m = flow_match(graph, e.graph)
            if m is not None:
                return e, m
            if len(self.unmatched) >= MAX_UNMATCHED:
                self.unmatched.clear()
            self.unmatched.add((graph, e))
        return None

    def lookup(self, labels, edges):
        """``(hit, key, graph)`` for a group described by :func:`group_parts`: ``hit`` is
        :meth:`find`'s answer. A graph that hit before is answered from that hit (``key`` and
        ``graph`` are then None); one that missed before is not hashed again (identical rails miss
        together), nor one of a size no entry has (``key`` None: :meth:`key_of` when needed)."""
        graph = parts_graph(labels, edges)
        hit = self.matched.get(graph)
        if hit is not None:
            return hit, None, None
        if (len(labels), len(edges)) not in self.shapes:
            return None, None, graph
        key = self.key_of(graph)
        hit = self.find(key, graph)
        if hit is not None:
            self.matched[graph] = hit
        return hit, key, graph

    def key_of(self, graph: GroupGraph) -> str:
        """The entry key of ``graph`` (:func:`wl_hash`), hashed once."""
        key = self.keyed.get(graph)
        if key is None:
            key = self.keyed[graph] = wl_hash(graph)
        return key

    def insert(self, key: str | None, graph: GroupGraph, convergence_ps: int, flows: dict) -> None:
        """Add a recording unless an entry matches its graph (a graph inserted before does);
        ``key`` None: :meth:`key_of` it."""
        if graph in self.held:
            return
        if key is None:
            key = self.key_of(graph)
        if self.find(key, graph) is None:
            self._add(key, Entry(graph, convergence_ps, flows))
        self.held.add(graph)

    def _add(self, key: str, entry: Entry) -> None:
        self.entries.setdefault(key, []).append(entry)
        self.shapes.add((len(entry.graph.labels), len(entry.graph.edges)))

    def size_bytes(self) -> int:
        """Size of the cache as saved (JSON bytes)."""
        return len(self._text())

    def _text(self) -> str:
        """The JSON text :meth:`save` writes: at most :data:`MAX_ENTRIES` entries and
        :data:`MAX_FILE_BYTES` bytes (the first entries recorded)."""
        head = json.dumps({"format": FORMAT, "fingerprint": self.fingerprint, "entries": []})[:-2]
        parts: list[str] = []
        size = len(head) + 2
        for key, es in self.entries.items():
            for e in es:
                text = json.dumps({"key": key, "graph": node_link(e.graph),
                                   "convergence_ps": e.convergence_ps,
                                   "flows": {str(i): f for i, f in e.flows.items()}})
                if len(parts) >= MAX_ENTRIES or size + len(text) + 2 > MAX_FILE_BYTES:
                    return head + ", ".join(parts) + "]}"
                parts.append(text)
                size += len(text) + 2
        return head + ", ".join(parts) + "]}"

    @staticmethod
    def is_cache_file(path: str) -> bool:
        """Whether the file at ``path`` begins as a saved cache of any :data:`FORMAT` (OSError when
        it cannot be read)."""
        with open(path, "rb") as fh:
            return fh.read(len(FILE_HEAD)) == FILE_HEAD

    def save(self, path: str) -> None:
        """Write the cache as JSON (as ``PATH.part``, renamed; OutputError on a write error)."""
        with atomic(path) as fh:
            fh.write(self._text())

    @classmethod
    def load(cls, path: str, fingerprint: str, warn, limits: MemoLimits | None = None) -> MemoCache:
        """The cache saved in ``path``; an empty one (and ``warn(message)``) when the
        file is missing, not a regular file, over :data:`MAX_FILE_BYTES`, unreadable,
        corrupt, of another :data:`FORMAT` or from another configuration. Entries that are malformed or outside
        ``limits`` (the scenario's bounds, :class:`MemoLimits`), duplicates of an earlier
        entry and entries past :data:`MAX_ENTRIES` are dropped with one warning."""
        cache = cls(fingerprint)
        limits = limits or _NO_LIMITS
        try:
            st = os.stat(path)
        except FileNotFoundError:
            return cache
        except OSError as e:
            warn(f"memo cache {path} is unreadable ({type(e).__name__}: {e}); ignored")
            return cache
        too_big = (f"memo cache {path} is larger than the limit of {MAX_FILE_BYTES} bytes "
                   f"({MAX_FILE_BYTES // 2**20} MiB); ignored")
        if not stat.S_ISREG(st.st_mode):
            warn(f"memo cache {path} is not a regular file; ignored")
            return cache
        if st.st_size > MAX_FILE_BYTES:
            warn(too_big)
            return cache
        try:
            text = _read_text(path, MAX_FILE_BYTES + 1)
            if len(text) > MAX_FILE_BYTES:
                warn(too_big)
                return cache
            data = json.loads(text)
            made_by = data.get("format") if isinstance(data, dict) else None
            if isinstance(made_by, str) and made_by.startswith("pwormhole-memo-") and made_by != FORMAT:
                warn(f"memo cache {path} was made by another version of pwormhole ({made_by}, this one reads "
                     f"{FORMAT}); ignored")
                return cache
            if not isinstance(data, dict) or made_by != FORMAT or not isinstance(data.get("entries"), list):
                raise ValueError("not a pwormhole memo cache")
        except (OSError, ValueError, RecursionError) as e:
            warn(f"memo cache {path} is unreadable ({type(e).__name__}: {e}); ignored")
            return cache
        if data.get("fingerprint") != fingerprint:
            warn(f"memo cache {path} was made with another configuration; ignored")
            return cache
        items = data["entries"]
        seen = set()
        bad = dup = 0
        for item in items[:MAX_ENTRIES]:
            try:
                parsed = _parse_entry(item, limits)
            except (TypeError, ValueError, OverflowError, RecursionError):  # not foreseen by the schema
                parsed = None
            if parsed is None:
                bad += 1
                continue
            key, labels, edges, conv, flows = parsed
            graph = parts_graph(labels, edges)
            if graph in seen:
                dup += 1
                continue
            seen.add(graph)
            cache._add(key, Entry(graph, conv, flows))
        over = max(0, len(items) - MAX_ENTRIES)
        if bad or dup or over:
            why = [f"{bad} malformed or outside this scenario's bounds"] if bad else []
            why += [f"{dup} duplicates"] if dup else []
            why += [f"{over} past the limit of {MAX_ENTRIES} entries"] if over else []
            warn(f"memo cache {path}: dropped {bad + dup + over} of {len(items)} entries ({', '.join(why)}); "
                 f"kept {len(cache)}")
        return cache
