"""Standalone FCT: how long a flow takes alone in the network (the ``fct.txt`` column
and the denominator of the slowdown).

A flow alone is simulated packet by packet on a copy of its route (a line of its
links, with the real network's QP window and configuration), so a flow alone has
slowdown 1 under either congestion control, whatever its size: HPCC slowing to
``U_TARGET``, INT headers, a short last packet and the ACK's way back are all in it.
HPCC's ``third.cc`` prints a formula instead (one RTT plus the bytes with 48-byte
headers at the bottleneck rate), which a lone sub-packet flow beats.

A flow of ``n`` packets (the last of ``L`` bytes) is simulated whole when short.
Longer ones are composed: the FCT of ``TAIL_PACKETS`` packets ending with the same
``L`` bytes, plus the time the lone flow on that route takes to deliver packets
``TAIL_PACKETS - 1 .. n - 1`` (one reference run per route, the longest flow of
that route or ``REFERENCE_PACKETS``, or, for DCQCN at line rate on a route no slower
than its NIC, until ``STEADY_PACKETS`` deliveries in a row came at one spacing; past
it, the last ``GAP_PACKETS`` spacings are extended). The sender does not know a flow's size until its last packet, so
the two are the same flow up to its tail.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from .config import CC_DCQCN
from .engine.lp import LogicalProcess
from .net.build import Network
from .net.dispatch import handler_table
from .topology.model import Link, Topology
from .workload.flows import Flow, FlowColumns, HostPairs, flow_columns, host_pairs

TAIL_PACKETS = 16
REFERENCE_PACKETS = 4096
GAP_PACKETS = 64
STEADY_PACKETS = 256


def pair_links(net: Network, src: int, dst: int) -> tuple | None:
    """The links (``rate_bps``, ``delay_ps``, NVSwitch end) every packet from ``src`` to ``dst``
    crosses, whatever its ECMP choices: the route tables hop by hop, where every choice at a hop is a
    link alike and every choice reaches ``dst`` after as many hops; None when the choices differ."""
    nvs = net.topo.nvswitches
    links: list = []
    layer = {src}
    while len(links) <= 64:
        kinds = set()
        nxt = set()
        for u in layer:
            ports = net.hop_choices(u, dst)
            if ports is None:
                return None
            for p in ports:
                kinds.add((p.rate_bps, p.delay_ps, p.peer.node_id in nvs))
                nxt.add(p.peer.node_id)
        if len(kinds) != 1:
            return None
        links.append(kinds.pop())
        if dst in nxt:
            return tuple(links) if len(nxt) == 1 else None
        layer = nxt
    return None


def route_links(net: Network, flow: Flow, known: dict, by_pair: dict) -> tuple:
    """The links (``rate_bps``, ``delay_ps``, NVSwitch end) a packet of ``flow`` crosses; ``by_pair``:
    ``(src, dst)`` -> :func:`pair_links`, ``known``: route (its ports) -> its links, filled as met."""
    pair = (flow.src, flow.dst)
    if pair in by_pair:
        links = by_pair[pair]
    else:
        links = by_pair[pair] = pair_links(net, flow.src, flow.dst)
    if links is not None:
        return links
    ports = tuple(net.path_of(flow.flow_id))
    links = known.get(ports)
    if links is None:
        nvs = net.topo.nvswitches
        links = known[ports] = tuple([(p.rate_bps, p.delay_ps, p.peer.node_id in nvs) for p in ports])
    return links


class StandaloneFct:
    """Standalone FCTs (ns) of the flows of ``net``, memoized by route and size."""

    def __init__(self, net: Network):
        self.net = net
        # alone: no loss, no failure (as ns-3, the intact topology); GLOBAL_T so that the
        # copy's QPs take the real network's window
        self.cfg = replace(net.cfg, error_rate_per_link=0.0, link_down=(), global_t=True)
        self.mtu = net.cfg.packet_payload_bytes
        self._fct: dict = {}  # (route key, size) -> FCT ps
        self._gaps: dict = {}  # route key -> delivery times of a lone long flow's packets
        self._longest: dict = {}  # route key -> packets of its longest flow

    def all_ns(self, flows, cols: FlowColumns | None = None, pairs: HostPairs | None = None) -> list[int]:
        """Standalone FCT (ns, rounded) of each flow, in order (``cols``, ``pairs``: their columns and
        host pairs, when made)."""
        if not flows:
            return []
        net = self.net
        cols = cols if cols is not None else flow_columns(flows)
        # the route key (links, QP window) of each host pair, from its first flow; flow by flow for
        # a pair whose flows do not all take one route's links
        first, inverse = pairs if pairs is not None else host_pairs(cols, net.topo.n_nodes)
        index_of: dict = {}  # route key -> its index in keys
        keys: list = []
        links_of: dict = {}
        by_pair: dict = {}

        def index(f) -> int:
            key = (route_links(net, f, links_of, by_pair), net.qp_window(f))
            i = index_of.get(key)
            if i is None:
                i = index_of[key] = len(keys)
                keys.append(key)
            return i

        pair_index = np.fromiter(map(index, map(flows.__getitem__, first.tolist())), np.int64, len(first))
        at = pair_index[inverse]
        flow_by_flow = [p for p, f0 in enumerate(first.tolist()) if by_pair[(flows[f0].src, flows[f0].dst)] is None]
        if flow_by_flow:
            for fid in np.flatnonzero(np.isin(inverse, flow_by_flow)).tolist():
                at[fid] = index(flows[fid])
        longest = np.zeros(len(keys), np.int64)  # per route key, packets of its longest flow
        np.maximum.at(longest, at, -(-cols.size_bytes // self.mtu))
        for key, n in zip(keys, longest.tolist()):
            self._longest[key] = max(self._longest.get(key, 0), n)
        # flows alike (a collective's steps: one route key, one size) are one lone flow
        order = np.lexsort((cols.size_bytes, at))
        at_sorted, size_sorted = at[order], cols.size_bytes[order]
        new = np.concatenate(([True], (at_sorted[1:] != at_sorted[:-1]) | (size_sorted[1:] != size_sorted[:-1])))
        starts = np.flatnonzero(new)
        fct_ns = np.fromiter(((self.fct_ps(keys[i], size) + 500) // 1000
                              for i, size in zip(at_sorted[starts].tolist(), size_sorted[starts].tolist())),
                             np.int64, len(starts))
        out = np.empty(len(flows), np.int64)
        out[order] = fct_ns[np.cumsum(new) - 1]
        return out.tolist()

    def fct_ps(self, key, size_bytes: int) -> int:
        n = -(-size_bytes // self.mtu)
        if n <= TAIL_PACKETS:
            return self._alone_ps(key, size_bytes)
        last = size_bytes - (n - 1) * self.mtu
        tail = self._alone_ps(key, (TAIL_PACKETS - 1) * self.mtu + last)
        d = self._delivered_ps(key)
        return tail + self._at(d, n - 1) - self._at(d, TAIL_PACKETS - 1)

    @staticmethod
    def _at(d: list, i: int) -> int:
        """Delivery time of full packet ``i`` (1-based) of the reference flow, extended past its end."""
        if i <= len(d):
            return d[i - 1]
        k = min(GAP_PACKETS, len(d) - 1)
        return d[-1] + (d[-1] - d[-1 - k]) * (i - len(d)) // k

    def _alone_ps(self, key, size_bytes: int) -> int:
        fct = self._fct.get((key, size_bytes))
        if fct is None:
            fct = self._fct[(key, size_bytes)] = self._simulate(key, size_bytes, None)
        return fct

    def _delivered_ps(self, key) -> list:
        d = self._gaps.get(key)
        if d is None:
            n = min(self._longest.get(key, REFERENCE_PACKETS), REFERENCE_PACKETS)
            d = []
            self._simulate(key, max(n, TAIL_PACKETS) * self.mtu, d)
            self._gaps[key] = d
        return d

    def _simulate(self, key, size_bytes: int, delivered: list | None) -> int:
        """FCT (ps) of a lone flow on a line copy of route ``key``; with ``delivered``, also
        appends the delivery time of each of its packets."""
        hops, (rtt_ps, win_bytes) = key
        n = len(hops) + 1  # node 0: source, 1..n-2: switches, n-1: destination
        links = [Link(i, i + 1, rate, delay) for i, (rate, delay, _) in enumerate(hops)]
        nv = frozenset(i + 1 for i, (_, _, is_nv) in enumerate(hops) if is_nv and i + 1 < n - 1)
        topo = Topology(n, frozenset(range(1, n - 1)), links, name="alone", nvswitches=nv)
        flow = Flow(0, 0, n - 1, 3, 100, size_bytes, 0)
        net = Network(topo, [flow], self.cfg)
        net.max_rtt_ps, net.max_bdp_bytes = rtt_ps, win_bytes  # the real network's QP window
        lp = LogicalProcess(0, net.nodes, net.initial_events(), [0] * n, handler_table())
        heap, handlers, dst = lp.heap, lp.handlers, net.nodes[n - 1]
        got = 0
        same = 0  # deliveries in a row at the same spacing
        # DCQCN alone at line rate, on a route no slower than the NIC, is stationary (no queue, no
        # ECN mark, nothing to recover): its reference may stop once its spacing has settled
        stationary = self.cfg.cc_mode == CC_DCQCN and min(r for r, _, _ in hops) == hops[0][0]
        src = net.nodes[0]
        while heap and not lp.finished:
            t, _, kind, target, arg = heap.pop()
            handlers[kind](target, arg, t)
            if delivered is not None and dst.bytes_delivered != got:
                got = dst.bytes_delivered
                same = same + 1 if len(delivered) > 1 and t - delivered[-1] == delivered[-1] - delivered[-2] else 0
                delivered.append(t)
                if same >= STEADY_PACKETS and stationary and src.sqp[0].rate_bps == src.sqp[0].max_rate_bps:
                    return 0
        if not lp.finished:
            raise RuntimeError(f"a lone flow of {size_bytes} B did not finish on route {hops}")
        return lp.finished[0][1]
