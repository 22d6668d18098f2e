"""The memo cache of group transients (Wormhole memoization).

Key of a conflict group: the flow-port graph (a vertex per flow and per
egress port; an edge where a flow's data crosses a port, labelled with the
hop index, or where its ACKs do) with, on each port, its rate, propagation
delay and switch settings (buffer, ECN thresholds, PFC headroom), on each
flow its rate at the lookup quantized to a quarter of an octave, whether
it is new (started as the group formed) or was already under way, its window
and its priority, plus the
congestion-control parameters of the run. Entries are grouped by the
Weisfeiler-Lehman hash of that graph (networkx) and confirmed by an exact
isomorphism test (networkx VF2 ``GraphMatcher``), which also maps the flows
of a new group onto the recorded ones. This is richer than the paper's flow
conflict graph, so that fabrics with different link rates never share an
entry.

An entry holds the convergence time (group formed -> steady), and per
recorded flow the acknowledged bytes over the transient, the steady goodput
and the steady pacing rate of its QP (sampled values only, so every rank
records the same entry).

The cache can be saved (:meth:`MemoCache.save`) and loaded (:meth:`MemoCache.load`);
a file made under another configuration, or an unreadable one, is ignored
with a warning.
"""

from __future__ import annotations

import hashlib
import json
import math
import os

import networkx as nx
from networkx.algorithms.isomorphism import GraphMatcher

from ..net.nodes import SwitchPort

FORMAT = "pwormhole-memo-9"  # 9: HPCC fairness check, sampling backoff; 8: recorded rates are pacing rates (HPCC); 7: FIFO shares, ACK_HIGH_PRIO, windows
CC_FIELDS = ("cc_mode", "packet_payload_bytes", "alpha_resume_interval_ps", "rate_decrease_interval_ps",
             "rp_timer_ps", "ewma_gain", "fast_recovery_times", "rate_ai_bps", "rate_hai_bps", "min_rate_bps",
             "rate_on_first_cnp", "l2_chunk_size", "l2_ack_interval", "has_win", "global_t", "var_win",
             "fast_react", "u_target", "mi_thresh", "int_multi", "rate_bound", "enable_pfc", "enable_qcn",
             "buffer_size_bytes", "ack_high_prio")


def config_fingerprint(cfg, accel_cfg) -> str:
    """A digest of everything a recording depends on besides the group graph."""
    parts = [f"{k}={getattr(cfg, k, None)!r}" for k in CC_FIELDS]
    from .wormhole import SETTLE_RTTS
    eff = accel_cfg.resolved(getattr(cfg, "cc_mode", None) == 3)  # the values in effect, not the 0 that picks them
    parts.append(f"theta={eff.theta!r} samples={eff.samples} sample_ps={eff.sample_ps} "
                 f"min_span_packets={eff.min_span_packets} settle_rtts={SETTLE_RTTS!r}")
    return hashlib.sha256(";".join(parts).encode()).hexdigest()[:16]


def _q_rate(bps: int) -> int:
    return round(4 * math.log2(max(1, bps)))


def group_key(wh, g):
    """``(wl_hash, graph, order)`` of group ``g`` of Wormhole ``wh`` (see :func:`group_graph`)."""
    graph, order = group_graph(wh, g)
    return wl_hash(graph), graph, order


def group_parts(wh, g):
    """``(order, labels, edges)`` of group ``g`` of Wormhole ``wh``: ``order`` lists its flow
    ids in the index order of the flow vertices (``0..F-1``; ports ``F..``), ``labels`` the
    vertex labels by vertex, ``edges`` ``{(flow vertex, port vertex): role}`` (a flow's data
    hop ``d<i>``, else ``a`` where only its ACKs cross the port)."""
    order = sorted(g.flows)
    nf = len(order)
    labels = []
    for fid in order:
        age = "n" if wh.is_new(fid, g) else "o"
        fs = wh.flows[fid]  # its window bounds its transient and its FIFO share; its priority, its queue
        labels.append(f"f{_q_rate(fs.rate())}{age}/w{fs.win_bytes}/g{fs.pg}")
    pid: dict = {}
    for p in sorted(g.ports, key=lambda p: (p.node.node_id, p.idx)):
        label = f"p{p.rate_bps}/{p.delay_ps}"
        if isinstance(p, SwitchPort):
            sw = p.node
            label += f"/s{p.kmin_bytes}/{p.kmax_bytes}/{p.pmax}/{p.headroom_bytes}/{p.pfc_shift}/{sw.buffer_bytes}"
        pid[p] = nf + len(pid)
        labels.append(label)
    edges: dict = {}
    for i, fid in enumerate(order):
        fs = wh.flows[fid]
        for hop, p in enumerate(fs.data_ports):
            edges[(i, pid[p])] = f"d{hop}"
        for p in fs.ack_ports:
            edges.setdefault((i, pid[p]), "a")
    return order, labels, edges


def parts_signature(labels, edges) -> tuple:
    """:func:`signature` of the graph :func:`group_parts` describes, without building it."""
    return tuple(labels), tuple(sorted((u, v, r) for (u, v), r in edges.items()))


def group_graph(wh, g):
    """``(graph, order)`` of group ``g`` of Wormhole ``wh`` (:func:`group_parts`).

    Vertices are ints, never strings, so that graph matching does not depend on Python's
    per-process string hashing (the same run must make the same memo decisions in every
    process).
    """
    order, labels, edges = group_parts(wh, g)
    return parts_graph(labels, edges), order


def parts_graph(labels, edges):
    """The networkx graph of :func:`group_parts`' ``labels`` and ``edges``."""
    graph = nx.Graph()
    for v, label in enumerate(labels):
        graph.add_node(v, label=label)
    for (u, v), role in edges.items():
        graph.add_edge(u, v, role=role)
    return graph


def wl_hash(graph) -> str:
    """The entry key of a group graph (Weisfeiler-Lehman hash over labels and roles)."""
    return nx.weisfeiler_lehman_graph_hash(graph, node_attr="label", edge_attr="role", iterations=3)


def signature(graph) -> tuple:
    """The group graph itself, as a hashable value in its own vertex numbering: two groups
    with the same signature are the same graph, so they match the same entry with the
    same mapping (what VF2 would find again, at a fraction of the cost)."""
    labels = tuple(d["label"] for _, d in sorted(graph.nodes(data=True)))
    edges = tuple(sorted((min(u, v), max(u, v), d["role"]) for u, v, d in graph.edges(data=True)))
    return labels, edges


class Entry:
    __slots__ = ("graph", "convergence_ps", "flows")

    def __init__(self, graph, convergence_ps: int, flows: dict):
        self.graph = graph
        self.convergence_ps = convergence_ps
        self.flows = flows  # recorded flow index -> {"bytes", "goodput", "rate_bps", "inflight_growth"}


class MemoCache:
    """Recorded transients keyed by the group graph (see module docstring)."""

    def __init__(self, fingerprint: str = ""):
        self.fingerprint = fingerprint
        self.entries: dict[str, list[Entry]] = {}
        self.matched: dict[tuple, tuple] = {}  # signature -> (entry, mapping) of earlier hits (not saved)

    def __len__(self) -> int:
        return sum(len(v) for v in self.entries.values())

    def find(self, key: str, graph):
        """``(entry, mapping)`` where ``mapping[i]`` is the recorded flow index of
        this group's flow index ``i``, or None."""
        for e in self.entries.get(key, ()):
            gm = GraphMatcher(graph, e.graph, node_match=lambda a, b: a["label"] == b["label"],
                              edge_match=lambda a, b: a["role"] == b["role"])
            if gm.is_isomorphic():
                m = gm.mapping
                return e, {n: m[n] for n, d in graph.nodes(data=True) if d["label"][0] == "f"}
        return None

    def lookup(self, labels, edges):
        """``(hit, key, graph)`` for a group described by :func:`group_parts`: ``hit`` is
        :meth:`find`'s answer. A graph that hit before (same :func:`parts_signature`) is
        answered from that hit without building it (``key`` and ``graph`` are then None)."""
        sig = parts_signature(labels, edges)
        hit = self.matched.get(sig)
        if hit is not None:
            return hit, None, None
        graph = parts_graph(labels, edges)
        key = wl_hash(graph)
        hit = self.find(key, graph)
        if hit is not None:
            self.matched[sig] = hit
        return hit, key, graph

    def insert(self, key: str, graph, convergence_ps: int, flows: dict) -> None:
        if self.find(key, graph) is None:
            self.entries.setdefault(key, []).append(Entry(graph, convergence_ps, flows))

    def size_bytes(self) -> int:
        """Size of the cache as saved (JSON bytes)."""
        return len(json.dumps(self._data()))

    def _data(self) -> dict:
        out = []
        for key, es in self.entries.items():
            for e in es:
                out.append({"key": key, "graph": nx.node_link_data(e.graph, edges="links"),
                            "convergence_ps": e.convergence_ps,
                            "flows": {str(i): f for i, f in e.flows.items()}})
        return {"format": FORMAT, "fingerprint": self.fingerprint, "entries": out}

    def save(self, path: str) -> None:
        """Write the cache as JSON (as ``PATH.part``, renamed; OutputError on a write error)."""
        from ..outfiles import atomic
        with atomic(path) as fh:
            json.dump(self._data(), fh)

    @classmethod
    def load(cls, path: str, fingerprint: str, warn) -> "MemoCache":
        """The cache saved in ``path``; an empty one (and ``warn(message)``) when the
        file is missing, unreadable, corrupt or from another configuration."""
        cache = cls(fingerprint)
        if not os.path.exists(path):
            return cache
        try:
            with open(path) as fh:
                data = json.load(fh)
            if data.get("format") != FORMAT:
                raise ValueError("not a pwormhole memo cache")
            if data.get("fingerprint") != fingerprint:
                warn(f"memo cache {path} was made with another configuration; ignored")
                return cache
            for item in data["entries"]:
                g = nx.node_link_graph(item["graph"], edges="links")
                flows = {int(i): f for i, f in item["flows"].items()}
                cache.entries.setdefault(item["key"], []).append(Entry(g, int(item["convergence_ps"]), flows))
        except (OSError, ValueError, KeyError, TypeError) as e:
            warn(f"memo cache {path} is unreadable ({type(e).__name__}: {e}); ignored")
            return cls(fingerprint)
        return cache
