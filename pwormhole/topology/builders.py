"""Topology builders: fat-tree, leaf-spine, rail-optimized GPU cluster, dumbbell, star.

Every builder returns a :class:`Topology` whose hosts come first (ids
``0 .. hosts-1``) and switches after, with one rate and delay per tier.
Rates are int bits/s, delays int picoseconds; bad arguments raise InputError.
"""

from __future__ import annotations

import math
import operator
from fractions import Fraction

from ..errors import InputError
from .model import MAX_LINKS, MAX_NODES, Link, Topology

G = 10**9

# Defaults of SimAI's topology generator (aliyun/SimAI,
# astra-sim-alibabacloud/inputs/topo/gen_Topo_Template.py, ``analysis_template``):
# nvlink_bw 2880Gbps, nv_latency 0.000025ms (25 ns), nv_switch_per_server 1,
# gpu_per_server 8, one rail leaf (ASW) per GPU of a server.
SIMAI_NVLINK_RATE_BPS = 2880 * G
SIMAI_NVLINK_DELAY_PS = 25_000


def _is_int(v) -> bool:
    """True for ints and int-like values (numpy integers), False for floats and bools."""
    try:
        return not isinstance(v, bool) and operator.index(v) == v
    except TypeError:
        return False


def _whole(v, what: str) -> int:
    """``v`` as an int (``200e9`` -> ``200000000000``); InputError when it is not a whole number."""
    if _is_int(v):
        return int(v)
    if isinstance(v, float) and math.isfinite(v) and v == int(v):
        return int(v)
    raise InputError(f"rail-optimized: {what} must be a whole number, got {v!r}")


def _uplink_rate(down_bps: int, spines: int, oversubscription: float, what: str) -> int:
    """``floor(down_bps / (spines * oversubscription))``, exact for decimal ratios (1.5, 3)."""
    if not (oversubscription > 0 and math.isfinite(oversubscription)):
        raise InputError(f"{what}: oversubscription must be a positive number, got {oversubscription}")
    ratio = Fraction(str(oversubscription)) if isinstance(oversubscription, float) else Fraction(oversubscription)
    return int(Fraction(down_bps) / (spines * ratio))


def _check_size(what: str, n_nodes: int, n_links: int) -> None:
    """InputError before building when a topology would pass :data:`~.model.MAX_NODES` nodes or
    :data:`~.model.MAX_LINKS` links (a built network takes ~33 KB per node)."""
    if n_nodes > MAX_NODES or n_links > MAX_LINKS:
        raise InputError(f"{what} has {n_nodes:,} nodes and {n_links:,} links, over the limit of {MAX_NODES:,} "
                         f"nodes and {MAX_LINKS:,} links")


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
    _check_size(f"fat-tree k={k}", n_hosts + 5 * k * half // 2, n_hosts + 2 * k * half * half)
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
    """Two-tier leaf-spine: ``hosts`` spread evenly over ``leaves`` (host ``h``
    on leaf ``h // (hosts / leaves)``), every leaf linked to every spine at
    ``floor(host_rate * hosts_per_leaf / (spines * oversubscription))``, so a
    leaf's uplink capacity is its downlink capacity divided by ``oversubscription``.

    Node ids: hosts ``0 .. hosts-1``, leaves next, spines last. Links: host
    links in host order, then leaf-spine links leaf by leaf.
    """
    if hosts <= 0 or leaves <= 0 or spines <= 0 or hosts % leaves:
        raise InputError(f"leaf-spine needs hosts divisible by leaves "
                         f"(hosts={hosts}, leaves={leaves}, spines={spines})")
    if not oversubscription > 0:
        raise InputError(f"oversubscription must be positive, got {oversubscription}")
    _check(host_rate_bps, delay_ps, "leaf-spine host link")
    _check_size(f"leaf-spine of {hosts} hosts", hosts + leaves + spines, hosts + leaves * spines)
    per_leaf = hosts // leaves
    up = _uplink_rate(host_rate_bps * per_leaf, spines, oversubscription, "leaf-spine")
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
    _check_size(f"a star of {hosts} hosts", hosts + 1, hosts)
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
    _check_size(f"a dumbbell of {n_h} hosts", n_h + 2, n_h + 1)
    a, b = n_h, n_h + 1
    links = [Link(h, a if h < left else b, host_rate_bps, delay_ps) for h in range(n_h)]
    links.append(Link(a, b, bottleneck_bps, delay_ps))
    return Topology(n_h + 2, frozenset({a, b}), links, name=f"dumbbell-{left}x{right}")


def rail_optimized(servers: int, gpus_per_server: int = 8, nic_rate_bps: int = 200 * G,
                   nvlink_rate_bps: int = SIMAI_NVLINK_RATE_BPS, spines: int | None = None,
                   rails: int | None = None, uplink_rate_bps: int | None = None,
                   oversubscription: float = 1.0, delay_ps: int = 1_000_000,
                   nvlink_delay_ps: int = SIMAI_NVLINK_DELAY_PS, nvswitches_per_server: int = 1,
                   servers_per_segment: int | None = None, dual_tor: bool = False, planes: int = 1) -> Topology:
    """A SimAI-style rail-optimized GPU cluster (``Rail_Opti_SingleToR`` of
    SimAI's ``gen_Topo_Template.py``), one pod:

    * ``servers`` servers of ``gpus_per_server`` GPUs (the hosts) and
      ``nvswitches_per_server`` NVSwitches each; every GPU is linked to every
      NVSwitch of its server by NVLink (``nvlink_rate_bps``, ``nvlink_delay_ps``);
    * one NIC per GPU (``nic_rate_bps``, ``delay_ps``): local GPU ``i`` of every
      server goes to rail leaf ``i % rails`` of its segment (``rails`` defaults
      to ``gpus_per_server``: one leaf per rail);
    * servers are grouped in segments of ``servers_per_segment`` (SimAI's
      ``nics_per_aswitch``; default: all servers in one segment), each with its
      own ``rails`` leaves;
    * every leaf is linked to every one of ``spines`` spines (default: as many
      spines as rails, the shape of SimAI's 16-GPU H20 example) at
      ``uplink_rate_bps``, or by default at the leaf's NIC capacity divided by
      the spines it reaches (``spines / planes``) times ``oversubscription``
      (floored), with ``delay_ps``;
    * ``dual_tor``: every NIC has two ports of ``nic_rate_bps``, one to each
      of two leaves of its rail (SimAI's ``Rail_Opti_DualToR_SinglePlane``:
      ``2 x rails`` leaves per segment, the first leaves of every segment
      before the second ones), and a flow takes one port by ECMP, as SimAI's
      ns-3 (``RdmaHw::GetNicIdxOfQp``); ``planes=2`` splits the spines in two
      halves, the first leaves linked to the first half and the second leaves
      to the second (``Rail_Opti_DualToR_DualPlane``; the dual-plane design of
      Alibaba HPN, Qian et al., SIGCOMM 2024).

    Defaults: NIC 200 Gbps and 1 us fabric links as in SimAI's
    ``Rail_Opti_SingleToR_16g_8gps_200Gbps_H20``; NVLink 2880 Gbps and 25 ns,
    the generator's ``nvlink_bw`` and ``nv_latency`` defaults.

    Node ids: GPUs ``0 .. G-1`` (server ``s``, local GPU ``i`` -> ``s *
    gpus_per_server + i``), then NVSwitches (server by server), then leaves
    (segment by segment, rail by rail; with ``dual_tor`` the first leaves,
    then the second ones), then spines, SimAI's order. Links: per GPU its
    NVLink link(s) then its NIC link(s), then the leaf-spine links leaf by
    leaf. ``name`` is ``railopt-{G}gpu`` (``hpn-{G}gpu`` with ``dual_tor``).

    Rates and delays are ints; whole-number floats (``200e9``) are converted.
    Raises InputError for counts below 1, ``rails`` outside ``1 ..
    gpus_per_server``, ``planes`` other than 1 or 2 (2 needs ``dual_tor`` and
    an even ``spines``), rates or delays that are not whole numbers, and rates,
    delays or an oversubscription that are not positive (delays may be 0).
    """
    for what, v in (("servers", servers), ("gpus_per_server", gpus_per_server),
                    ("nvswitches_per_server", nvswitches_per_server)):
        if not _is_int(v) or v < 1:
            raise InputError(f"rail-optimized: {what} must be an integer >= 1, got {v!r}")
    rails = gpus_per_server if rails is None else rails
    if not _is_int(rails) or not 1 <= rails <= gpus_per_server:
        raise InputError(f"rail-optimized: rails must be an integer in 1..{gpus_per_server} "
                         f"(gpus_per_server), got {rails!r}")
    spines = rails if spines is None else spines
    if not _is_int(spines) or spines < 1:
        raise InputError(f"rail-optimized: spines must be an integer >= 1, got {spines!r}")
    per_seg = servers if servers_per_segment is None else servers_per_segment
    if not _is_int(per_seg) or per_seg < 1:
        raise InputError(f"rail-optimized: servers_per_segment must be an integer >= 1, got {servers_per_segment!r}")
    if not _is_int(planes) or planes not in (1, 2) or (planes == 2 and (not dual_tor or spines % 2)):
        raise InputError(f"rail-optimized: planes must be 1, or 2 with dual ToRs and an even number of spines; "
                         f"got planes={planes!r}, dual_tor={dual_tor}, spines={spines}")
    ports = 2 if dual_tor else 1  # NIC ports per GPU
    n_gpus = servers * gpus_per_server
    leaves = -(-servers // per_seg) * rails * ports
    _check_size(f"rail-optimized of {n_gpus} GPUs", n_gpus + servers * nvswitches_per_server + leaves + spines,
                n_gpus * (nvswitches_per_server + ports) + leaves * spines // planes)
    nic_rate_bps, delay_ps, nvlink_rate_bps, nvlink_delay_ps = (
        _whole(v, what) for v, what in ((nic_rate_bps, "nic_rate_bps"), (delay_ps, "delay_ps"),
                                         (nvlink_rate_bps, "nvlink_rate_bps"), (nvlink_delay_ps, "nvlink_delay_ps")))
    if uplink_rate_bps is not None:
        if oversubscription != 1.0:
            raise InputError(f"rail-optimized: give uplink_rate_bps or oversubscription, not both "
                             f"(got {uplink_rate_bps!r} and {oversubscription!r})")
        uplink_rate_bps = _whole(uplink_rate_bps, "uplink_rate_bps")
    _check(nic_rate_bps, delay_ps, "rail-optimized NIC link")
    _check(nvlink_rate_bps, nvlink_delay_ps, "rail-optimized NVLink")
    if uplink_rate_bps is None:
        nics_per_leaf = min(per_seg, servers) * -(-gpus_per_server // rails)  # the busiest leaf
        uplink_rate_bps = _uplink_rate(nic_rate_bps * nics_per_leaf, spines // planes, oversubscription,
                                       "rail-optimized")
    _check(uplink_rate_bps, delay_ps, "rail-optimized leaf-spine uplink")

    segments = -(-servers // per_seg)
    nv0 = n_gpus
    leaf0 = nv0 + servers * nvswitches_per_server
    side_leaves = segments * rails  # the leaves of one NIC port (all of them without dual ToRs)
    spine0 = leaf0 + side_leaves * ports
    n = spine0 + spines
    links = []
    for g in range(n_gpus):
        s, i = divmod(g, gpus_per_server)
        for j in range(nvswitches_per_server):
            links.append(Link(g, nv0 + s * nvswitches_per_server + j, nvlink_rate_bps, nvlink_delay_ps))
        for side in range(ports):
            links.append(Link(g, leaf0 + side * side_leaves + (s // per_seg) * rails + i % rails, nic_rate_bps,
                              delay_ps))
    plane_spines = spines // planes
    for lf in range(leaf0, spine0):
        first = spine0 + ((lf - leaf0) // side_leaves) * plane_spines if planes == 2 else spine0
        for sp in range(first, first + plane_spines):
            links.append(Link(lf, sp, uplink_rate_bps, delay_ps))
    return Topology(n, frozenset(range(nv0, n)), links, name=f"{'hpn' if dual_tor else 'railopt'}-{n_gpus}gpu",
                    nvswitches=frozenset(range(nv0, leaf0)), gpus_per_server=gpus_per_server)
