"""Shortest-path routing: ECMP next hops and per-pair path facts.

Only switches forward: a host is a path's end, never a transit node (as in
HPCC's ``third.cc``, which routes by BFS over the switch fabric).
"""

from __future__ import annotations

from collections import deque

from .model import Topology


def adjacency(topo: Topology) -> list[list[tuple[int, int]]]:
    """``adj[u]`` = list of ``(v, link_index)`` for every link end at ``u`` (parallel links kept)."""
    adj: list[list[tuple[int, int]]] = [[] for _ in range(topo.n_nodes)]
    for i, ln in enumerate(topo.links):
        adj[ln.a].append((ln.b, i))
        adj[ln.b].append((ln.a, i))
    return adj


def hop_distances(topo: Topology, adj, dst: int) -> dict[int, int]:
    """Hop count from every node that can reach ``dst`` through switches only."""
    dist = {dst: 0}
    frontier = deque([dst])
    switches = topo.switches
    while frontier:
        v = frontier.popleft()
        if v != dst and v not in switches:
            continue  # hosts do not forward
        d = dist[v] + 1
        for u, _ in adj[v]:
            if u not in dist:
                dist[u] = d
                frontier.append(u)
    return dist


def next_hops(topo: Topology, adj, dst: int) -> dict[int, list[int]]:
    """For each node that can reach ``dst``: the indices into ``adj[node]`` of its
    equal-cost next hops (every neighbour one hop closer), in adjacency order."""
    dist = hop_distances(topo, adj, dst)
    out: dict[int, list[int]] = {}
    for u, du in dist.items():
        if u == dst:
            continue
        out[u] = [k for k, (v, _) in enumerate(adj[u]) if dist.get(v, -1) == du - 1
                  and (v == dst or v in topo.switches)]
    return out


def path_facts(topo: Topology, adj, src: int, payload_bytes: int) -> dict[int, tuple[int, int, int]]:
    """BFS from host ``src`` along the first-found shortest paths (``third.cc``'s
    pair delay computation): for every reachable host ``h``, ``(delay_ps,
    tx_ps, bottleneck_bps)`` where ``delay_ps`` sums propagation delays,
    ``tx_ps`` sums the serialization of one ``payload_bytes`` packet per hop,
    and ``bottleneck_bps`` is the smallest link rate on the path."""
    facts = {src: (0, 0, 1 << 62)}
    frontier = deque([src])
    links = topo.links
    switches = topo.switches
    out = {}
    while frontier:
        v = frontier.popleft()
        if v != src and v not in switches:
            out[v] = facts[v]
            continue
        d, tx, bw = facts[v]
        for u, li in adj[v]:
            if u in facts:
                continue
            ln = links[li]
            facts[u] = (d + ln.delay_ps, tx + payload_bytes * 8 * 10**12 // ln.rate_bps, min(bw, ln.rate_bps))
            frontier.append(u)
    return out
