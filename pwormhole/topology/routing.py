"""Shortest-path routing: ECMP next hops, per-pair path facts and path delays.

Only switches forward: a host is a path's end, never a transit node (as in
HPCC's ``third.cc``, which routes by BFS over the switch fabric).

NVSwitches (``topo.nvswitches``) add one rule, SimAI's intra-server rule:

* traffic between two hosts linked to the same NVSwitch goes host ->
  NVSwitch -> host (over NVLink), never through the NIC fabric, even when a
  NIC path is as short (all GPUs of a server under one ToR);
* an NVSwitch carries no other traffic: it is never a transit node between
  hosts that are not both linked to it, and it is not a way out of a server.

With several NVSwitches shared by the pair, the next hops are all of them
(ECMP). A topology without NVSwitches routes exactly as before the rule.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator, Mapping

from ..errors import InputError
from ..units import PS_PER_S
from .model import Topology

_BITS_PS = 8 * PS_PER_S  # bits per byte x ps per second: bytes x _BITS_PS // rate_bps is ps

_NO_BW = 1 << 62


def adjacency(topo: Topology) -> list[list[tuple[int, int]]]:
    """``adj[u]`` = list of ``(v, link_index)`` for every link end at ``u`` (parallel links kept)."""
    adj: list[list[tuple[int, int]]] = [[] for _ in range(topo.n_nodes)]
    for i, ln in enumerate(topo.links):
        adj[ln.a].append((ln.b, i))
        adj[ln.b].append((ln.a, i))
    return adj


def _nv_of(topo: Topology, adj, host: int) -> set[int]:
    """NVSwitches linked to ``host`` (empty for a switch)."""
    if host in topo.switches:
        return set()
    nv = topo.nvswitches
    return {v for v, _ in adj[host] if v in nv}


def _nv_peers(topo: Topology, adj, host: int) -> dict[int, list[int]]:
    """Hosts sharing an NVSwitch with ``host`` -> the shared NVSwitches, in ``adj[host]`` order."""
    switches = topo.switches
    peers: dict[int, list[int]] = {}
    seen_nv: set[int] = set()
    for n, _ in adj[host]:
        if n not in topo.nvswitches or n in seen_nv:
            continue
        seen_nv.add(n)
        for h, _ in adj[n]:
            if h != host and h not in switches:
                lst = peers.setdefault(h, [])
                if n not in lst:
                    lst.append(n)
    return peers


def hop_distances(topo: Topology, adj, dst: int, down=frozenset()) -> dict[int, int]:
    """Hop count toward ``dst`` from every node that routes to it (through
    switches only; see the module notes for NVSwitches: a host sharing an
    NVSwitch with ``dst`` is at 2 hops, NVSwitches not linked to ``dst`` are left out).
    Links whose index is in ``down`` (failed links) are not used."""
    if down:
        adj = [[(v, li) for v, li in nbrs if li not in down] for nbrs in adj]
    switches = topo.switches
    nv = topo.nvswitches
    dist = {dst: 0}
    frontier = deque([dst])
    while frontier:
        v = frontier.popleft()
        if v != dst and (v not in switches or v in nv):
            continue  # hosts do not forward; NVSwitches only to their own hosts (below)
        d = dist[v] + 1
        for u, _ in adj[v]:
            if u not in dist:
                dist[u] = d
                frontier.append(u)
    if not nv:
        return dist
    mine = _nv_of(topo, adj, dst)
    for n in [n for n in dist if n in nv and n != dst and n not in mine]:
        del dist[n]
    if mine:
        for n in mine:
            dist[n] = 1
        for h in _nv_peers(topo, adj, dst):
            dist[h] = 2
    return dist


def _closer(adj, dist: dict, u: int, dst: int, switches) -> list[int]:
    """The indices into ``adj[u]`` of ``u``'s neighbours one hop closer to ``dst`` (``dist``: hop
    distances to it) that are ``dst`` or a switch (a fabric without NVSwitches)."""
    du = dist[u]
    return [k for k, (v, _) in enumerate(adj[u]) if dist.get(v, -1) == du - 1 and (v == dst or v in switches)]


def next_hops(topo: Topology, adj, dst: int, down=frozenset()) -> dict[int, list[int]]:
    """For each node that can reach ``dst``: the indices into ``adj[node]`` of its
    equal-cost next hops (every neighbour one hop closer), in adjacency order.

    With NVSwitches: a host sharing NVSwitches with ``dst`` gets exactly its
    links to those NVSwitches; an NVSwitch linked to ``dst`` gets its links to
    ``dst``; every other node ignores NVSwitches.

    ``down``: indices of failed links (``topo.links``): never a next hop, and
    the distances are those of the topology without them (indices into
    ``adj[node]`` keep counting them)."""
    dist = hop_distances(topo, adj, dst, down)
    if down:  # a failed link's entry stays (indices keep their meaning) but leads nowhere
        adj = [[(-1 if li in down else v, li) for v, li in nbrs] for nbrs in adj]
    switches = topo.switches
    nv = topo.nvswitches
    out: dict[int, list[int]] = {}
    if not nv:
        for u in dist:
            if u != dst:
                out[u] = _closer(adj, dist, u, dst, switches)
        return out
    mine = _nv_of(topo, adj, dst)
    peers = _nv_peers(topo, adj, dst) if mine else {}
    for u, du in dist.items():
        if u == dst:
            continue
        if u in mine:
            out[u] = [k for k, (v, _) in enumerate(adj[u]) if v == dst]
        elif u in peers:
            out[u] = [k for k, (v, _) in enumerate(adj[u]) if v in mine]
        else:
            out[u] = [k for k, (v, _) in enumerate(adj[u]) if dist.get(v, -1) == du - 1
                      and (v == dst or (v in switches and v not in nv))]
    return out


def nic_switch(topo: Topology, adj, host: int) -> int | None:
    """The switch every link of ``host`` but its NVLink leads to (a GPU's NIC switch; a single-homed
    host's switch), when there is one; None for a switch, a host with links to two switches or to
    another host, or one with NVLink alone."""
    if host in topo.switches:
        return None
    nv = topo.nvswitches
    ends = {v for v, _ in adj[host] if v not in nv}
    if len(ends) != 1:
        return None
    (switch,) = ends
    return switch if switch in topo.switches else None


def share_nvswitch(topo: Topology, adj, a: int, b: int) -> bool:
    """Whether hosts ``a`` and ``b`` are linked to a common NVSwitch (their route is NVLink)."""
    return bool(topo.nvswitches) and not _nv_of(topo, adj, a).isdisjoint(_nv_of(topo, adj, b))


def _near_hops(topo: Topology, adj, dst: int, switch: int) -> dict[int, list[int]]:
    """:func:`next_hops` toward host ``dst`` of the nodes that do not route through its
    :func:`nic_switch` ``switch``: the switch (its links to ``dst``), the NVSwitches linked to ``dst``
    (their links to it) and the hosts sharing them (their links to those NVSwitches)."""
    near = {switch: [k for k, (v, _) in enumerate(adj[switch]) if v == dst]}
    mine = _nv_of(topo, adj, dst) if topo.nvswitches else set()
    for n in sorted(mine):
        near[n] = [k for k, (v, _) in enumerate(adj[n]) if v == dst]
    if mine:
        for h in _nv_peers(topo, adj, dst):
            near[h] = [k for k, (v, _) in enumerate(adj[h]) if v in mine]
    return near


def next_hops_past(topo: Topology, adj, dst: int, switch: int, to_switch) -> Iterator[tuple[int, list[int]]]:
    """:func:`next_hops` toward host ``dst`` as ``(node, next hops)`` pairs from the pairs toward its
    :func:`nic_switch` ``switch`` (``to_switch``: :func:`next_hops`' items, all or some, without
    failed links): hosts do not forward and other nodes ignore NVSwitches, so a node other than
    the switch, ``dst``'s NVSwitches and the hosts sharing them (:func:`_near_hops`, first) is one
    hop farther from ``dst`` than from the switch and its next hops are the same lists."""
    near = _near_hops(topo, adj, dst, switch)
    yield from near.items()
    for u, ks in to_switch:
        if u != dst and u not in near:
            yield u, ks


class _HopsPast(Mapping):
    """:func:`next_hops_past` as a read-only mapping over the switch's own, made in O(1) but the
    NVSwitch peers'."""

    def __init__(self, topo: Topology, adj, dst: int, switch: int, to_switch: Mapping[int, list[int]]):
        self.dst, self.to_switch = dst, to_switch
        self.near = _near_hops(topo, adj, dst, switch)

    def __getitem__(self, u: int) -> list[int]:
        ks = self.near.get(u)
        if ks is not None:
            return ks
        if u == self.dst:
            raise KeyError(u)
        return self.to_switch[u]

    def __iter__(self):
        yield from self.near
        yield from (u for u in self.to_switch if u != self.dst and u not in self.near)

    def __len__(self) -> int:  # (dst is one hop from the switch, so in to_switch; the NVSwitches are not)
        return len(self.to_switch) - 1 + sum(1 for u in self.near if u not in self.to_switch)


class _HopsAsked(Mapping):
    """:func:`next_hops` toward a node of a fabric without NVSwitches (no failed links), a node's list
    made when it is asked for: one BFS, then only the nodes a caller walks through (the traffic
    weights of a plan walk a few paths toward each switch, not the whole fabric)."""

    def __init__(self, topo: Topology, adj, dst: int):
        self.switches, self.adj, self.dst = topo.switches, adj, dst
        self.dist = hop_distances(topo, adj, dst)
        self.made: dict[int, list[int]] = {}

    def __getitem__(self, u: int) -> list[int]:
        ks = self.made.get(u)
        if ks is None:
            if u == self.dst or u not in self.dist:
                raise KeyError(u)
            ks = self.made[u] = _closer(self.adj, self.dist, u, self.dst, self.switches)
        return ks

    def __iter__(self):
        return (u for u in self.dist if u != self.dst)

    def __len__(self) -> int:
        return len(self.dist) - 1


def next_hops_via_switches(topo: Topology, adj, dst: int, by_switch: dict) -> Mapping[int, list[int]]:
    """:func:`next_hops` toward ``dst`` (no failed links) as a mapping, those of a host with one
    :func:`nic_switch` read through that switch's (:func:`next_hops_past`), kept in ``by_switch``
    (switch -> next hops toward it): one BFS per switch, not per host, for a caller asking for many
    destinations; without NVSwitches a node's next hops are made when asked for."""
    switch = nic_switch(topo, adj, dst)
    if switch is None:
        return next_hops(topo, adj, dst)
    to_switch = by_switch.get(switch)
    if to_switch is None:
        to_switch = by_switch[switch] = next_hops(topo, adj, switch) if topo.nvswitches else \
            _HopsAsked(topo, adj, switch)
    return _HopsPast(topo, adj, dst, switch, to_switch)


def path_facts(topo: Topology, adj, src: int, payload_bytes: int) -> dict[int, tuple[int, int, int]]:
    """BFS from host ``src`` along the first-found shortest paths (``third.cc``'s
    pair delay computation): for every reachable host ``h``, ``(delay_ps,
    tx_ps, bottleneck_bps)`` where ``delay_ps`` sums propagation delays,
    ``tx_ps`` sums the serialization of one ``payload_bytes`` packet per hop,
    and ``bottleneck_bps`` is the smallest link rate on the path.

    With NVSwitches the paths follow the routing rule: a host sharing an
    NVSwitch with ``src`` is reached through the first such NVSwitch (and the
    first link to it) in ``adj[src]`` order; every other host over the fabric
    without NVSwitches."""
    facts = {src: (0, 0, _NO_BW)}
    frontier = deque([src])
    links = topo.links
    switches = topo.switches
    nv = topo.nvswitches
    bits = payload_bytes * _BITS_PS
    out = {}
    while frontier:
        v = frontier.popleft()
        if v != src and v not in switches:
            out[v] = facts[v]
            continue
        if v != src and v in nv:
            continue
        d, tx, bw = facts[v]
        for u, li in adj[v]:
            if u in facts:
                continue
            ln = links[li]
            facts[u] = (d + ln.delay_ps, tx + bits // ln.rate_bps, min(bw, ln.rate_bps))
            frontier.append(u)
    if nv and src not in switches:
        out.update(_nv_peer_facts(topo, adj, src, bits))
    return out


def _nv_peer_facts(topo: Topology, adj, src: int, bits: int) -> dict[int, tuple[int, int, int]]:
    """:func:`path_facts` of the hosts sharing an NVSwitch with host ``src``: through the first such
    NVSwitch (and the first link to it) in ``adj[src]`` order (``bits``: the payload in bits x 10^12)."""
    links = topo.links
    switches = topo.switches
    nv = topo.nvswitches
    out = {}
    done: set[int] = set()
    for n, li in adj[src]:
        if n not in nv or n in done:
            continue
        done.add(n)
        l1 = links[li]
        for h, lj in adj[n]:
            if h == src or h in switches or h in done:
                continue
            done.add(h)
            l2 = links[lj]
            out[h] = (l1.delay_ps + l2.delay_ps, bits // l1.rate_bps + bits // l2.rate_bps,
                      min(l1.rate_bps, l2.rate_bps))
    return out


def largest_rtt_bdp(topo: Topology, adj, payload_bytes: int) -> tuple[int, int]:
    """The largest base RTT (``2 x delay + tx`` of :func:`path_facts`) and BDP (``RTT x bottleneck``,
    bytes) over all host pairs (HPCC's ``GLOBAL_T``). A host with one :func:`nic_switch` reaches every
    host but those sharing its NVSwitches along the switch's own BFS tree, one link farther: one BFS
    per switch, and each host's largest pair read from the switch's hosts by bottleneck rate (the
    largest path term in each, skipping the host and its NVSwitch peers). Other hosts: one BFS per
    attachment class (the same links to the same neighbours, in the same order: the first-found paths
    are then the same)."""
    links = topo.links
    bits = payload_bytes * _BITS_PS
    classes: dict[tuple, list[int]] = {}
    at_switch: dict[int, list[int]] = {}
    for h in topo.hosts:
        switch = nic_switch(topo, adj, h)
        if switch is None:
            sig = tuple((v, links[li].rate_bps, links[li].delay_ps) for v, li in adj[h])  # (in order: the BFS's)
            classes.setdefault(sig, []).append(h)
        else:
            at_switch.setdefault(switch, []).append(h)
    max_rtt = max_bdp = 0
    for members in classes.values():
        rep = members[0]
        for h, (delay, tx, bw) in path_facts(topo, adj, rep, payload_bytes).items():
            if h != rep:
                rtt = 2 * delay + tx
                max_rtt = max(max_rtt, rtt)
                max_bdp = max(max_bdp, rtt * bw // _BITS_PS)
    for switch, members in at_switch.items():
        by_bw: dict[int, list[tuple[int, int]]] = {}  # bottleneck -> (2 x delay + tx, host), largest first
        for h, (delay, tx, bw) in path_facts(topo, adj, switch, payload_bytes).items():
            by_bw.setdefault(bw, []).append((2 * delay + tx, h))
        for terms in by_bw.values():
            terms.sort(reverse=True)
        for src in members:
            ln = links[next(li for v, li in adj[src] if v == switch)]  # (the first link to it, as the BFS)
            base = 2 * ln.delay_ps + bits // ln.rate_bps
            peers = _nv_peer_facts(topo, adj, src, bits) if topo.nvswitches else {}
            for bw, terms in by_bw.items():
                term = next((t for t, h in terms if h != src and h not in peers), None)
                if term is not None:
                    max_rtt = max(max_rtt, base + term)
                    max_bdp = max(max_bdp, (base + term) * min(ln.rate_bps, bw) // _BITS_PS)
            for delay, tx, bw in peers.values():
                max_rtt = max(max_rtt, 2 * delay + tx)
                max_bdp = max(max_bdp, (2 * delay + tx) * bw // _BITS_PS)
    return max_rtt, max_bdp


def path_delays_ps(topo: Topology, adj, src: int) -> dict[int, int]:
    """Propagation delay (ps) from host ``src`` to every host it can reach,
    along its routes: the smallest sum of link delays over the ECMP (shortest
    hop count) paths, with the NVSwitch rule of :func:`next_hops`. ``src``
    itself maps to 0. One BFS; cache the result when asking for many pairs."""
    links = topo.links
    switches = topo.switches
    nv = topo.nvswitches
    dist = {src: 0}
    delay = {src: 0}
    frontier = deque([src])
    out = {src: 0}
    while frontier:
        v = frontier.popleft()
        if v != src and (v not in switches or v in nv):
            if v not in switches:
                out[v] = delay[v]
            continue
        dv = dist[v] + 1
        tv = delay[v]
        for u, li in adj[v]:
            t = tv + links[li].delay_ps
            du = dist.get(u)
            if du is None:
                dist[u] = dv
                delay[u] = t
                frontier.append(u)
            elif du == dv and t < delay[u]:
                delay[u] = t  # u is not popped yet: its layer comes after v's
    if nv and src not in switches:
        best: dict[int, int] = {}
        for n, li in adj[src]:
            if n not in nv:
                continue
            d1 = links[li].delay_ps
            for h, lj in adj[n]:
                if h == src or h in switches:
                    continue
                t = d1 + links[lj].delay_ps
                if h not in best or t < best[h]:
                    best[h] = t
        out.update(best)
    return out


def path_delay_ps(topo: Topology, adj, src: int, dst: int) -> int:
    """Propagation delay (ps) of the route from host ``src`` to host ``dst``
    (smallest over its ECMP paths; 0 when ``src == dst``). For many pairs from
    one source use :func:`path_delays_ps` once.

    Raises InputError when ``dst`` cannot be reached from ``src``."""
    d = path_delays_ps(topo, adj, src).get(dst)
    if d is None:
        raise InputError(f"host {dst} is unreachable from host {src}")
    return d


__all__ = ["adjacency", "hop_distances", "largest_rtt_bdp", "next_hops", "next_hops_past", "next_hops_via_switches",
           "nic_switch", "path_facts", "path_delays_ps", "path_delay_ps", "share_nvswitch"]
