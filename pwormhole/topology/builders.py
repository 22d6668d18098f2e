"""Topology builders: fat-tree, leaf-spine, dumbbell, star.

Every builder returns a :class:`Topology` whose hosts come first (ids
``0 .. hosts-1``) and switches after, with one rate and delay per tier.
"""

from __future__ import annotations

from ..errors import InputError
from .model import Link, Topology


def _check(rate_bps: int, delay_ps: int, what: str) -> None:
    if rate_bps <= 0:
        raise InputError(f"{what}: link rate must be positive, got {rate_bps}")
    if delay_ps < 0:
        raise InputError(f"{what}: link delay must be >= 0, got {delay_ps}")


def fat_tree(k: int, host_rate_bps: int = 100 * 10**9, fabric_rate_bps: int = 100 * 10**9,
             delay_ps: int = 1_000_000) -> Topology:
    """A k-ary fat-tree (Al-Fares et al., SIGCOMM 2008): ``k**3/4`` hosts,
    ``k**2/2`` edge and aggregation switches, ``k**2/4`` core switches.

    Raises InputError when ``k`` is not an even number >= 2.
    """
    if k < 2 or k % 2:
        raise InputError(f"fat-tree k must be an even number >= 2, got {k}")
    _check(host_rate_bps, delay_ps, "fat-tree")
    _check(fabric_rate_bps, delay_ps, "fat-tree")
    half = k // 2
    n_hosts = k * half * half
    edge0 = n_hosts
    agg0 = edge0 + k * half
    core0 = agg0 + k * half
    n = core0 + half * half
    links = []
    for pod in range(k):
        for e in range(half):
            edge = edge0 + pod * half + e
            for h in range(half):
                links.append(Link((pod * half + e) * half + h, edge, host_rate_bps, delay_ps))
            for a in range(half):
                links.append(Link(edge, agg0 + pod * half + a, fabric_rate_bps, delay_ps))
        for a in range(half):
            for c in range(half):
                links.append(Link(agg0 + pod * half + a, core0 + a * half + c, fabric_rate_bps, delay_ps))
    return Topology(n, frozenset(range(edge0, n)), links, name=f"fattree-k{k}")


def leaf_spine(hosts: int, leaves: int, spines: int, host_rate_bps: int = 100 * 10**9,
               oversubscription: float = 1.0, delay_ps: int = 1_000_000) -> Topology:
    """Two-tier leaf-spine: ``hosts`` spread evenly over ``leaves``, every leaf
    linked to every spine at ``host_rate * hosts_per_leaf / (spines * oversubscription)``.
    """
    if hosts <= 0 or leaves <= 0 or spines <= 0 or hosts % leaves:
        raise InputError(f"leaf-spine needs hosts divisible by leaves (hosts={hosts}, leaves={leaves}, spines={spines})")
    if oversubscription <= 0:
        raise InputError(f"oversubscription must be positive, got {oversubscription}")
    per_leaf = hosts // leaves
    up = int(host_rate_bps * per_leaf / (spines * oversubscription))
    _check(up, delay_ps, "leaf-spine uplink")
    links = [Link(h, hosts + h // per_leaf, host_rate_bps, delay_ps) for h in range(hosts)]
    for lf in range(leaves):
        for s in range(spines):
            links.append(Link(hosts + lf, hosts + leaves + s, up, delay_ps))
    n = hosts + leaves + spines
    return Topology(n, frozenset(range(hosts, n)), links, name=f"leafspine-{hosts}h")


def star(hosts: int, rate_bps: int = 100 * 10**9, delay_ps: int = 1_000_000) -> Topology:
    """``hosts`` hosts on one switch (the switch is the last node)."""
    if hosts < 2:
        raise InputError(f"a star needs at least 2 hosts, got {hosts}")
    _check(rate_bps, delay_ps, "star")
    return Topology(hosts + 1, frozenset({hosts}), [Link(h, hosts, rate_bps, delay_ps) for h in range(hosts)],
                    name=f"star-{hosts}")


def dumbbell(left: int, right: int, host_rate_bps: int = 100 * 10**9, bottleneck_bps: int = 100 * 10**9,
             delay_ps: int = 1_000_000) -> Topology:
    """``left`` hosts on switch A, ``right`` hosts on switch B, one A-B bottleneck link."""
    if left < 1 or right < 1:
        raise InputError(f"a dumbbell needs hosts on both sides, got {left} and {right}")
    _check(bottleneck_bps, delay_ps, "dumbbell")
    n_h = left + right
    a, b = n_h, n_h + 1
    links = [Link(h, a if h < left else b, host_rate_bps, delay_ps) for h in range(n_h)]
    links.append(Link(a, b, bottleneck_bps, delay_ps))
    return Topology(n_h + 2, frozenset({a, b}), links, name=f"dumbbell-{left}x{right}")
