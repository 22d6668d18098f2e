"""Reader for htsim's fat-tree description files (``.topo``).

Source of the format and of its meaning: htsim (Broadcom/csg-htsim),
``sim/datacenter/fat_tree_topology.cpp`` (``FatTreeTopology::load``,
``set_custom_params`` and ``init_network``), which htsim's ``-topo FILE``
option reads. A file looks like::

    # comment
    Nodes 32
    Tiers 2
    Podsize 32

    Tier 0
    Downlink_speed_Gbps 100
    Radix_Down 8
    Radix_Up 2
    Downlink_Latency_ns 1000
    Switch_Latency_ns 0
    Oversubscribed 4

    Tier 1
    Downlink_speed_Gbps 100
    Radix_Down 4
    Downlink_Latency_ns 1000

Keys are case-insensitive. Tier 0 are the ToR switches, tier 1 the
aggregation switches (the spines of a 2-tier leaf-spine), tier 2 the core.
``Downlink_speed_Gbps`` and ``Downlink_Latency_ns`` describe the links
*below* a tier's switches (tier 0: host-ToR links); ``Radix_Down`` /
``Radix_Up`` count a switch's down/up ports; ``Bundle`` is how many parallel
links join a tier's switch to each switch (or host) below it;
``Oversubscribed`` is a tier's down/up capacity ratio. The switch counts
follow htsim's ``set_custom_params``::

    pods            = Nodes / Podsize
    tors per pod    = Podsize / Radix_Down[0]
    tor uplinks     = Nodes * speed[0] / (speed[1] * Oversubscribed[0])
    aggs per pod    = tor uplinks / (pods * Radix_Down[1])
    agg uplinks     = tor uplinks * speed[1] / (speed[2] * Oversubscribed[1])   (3 tiers)
    core switches   = agg uplinks / Radix_Down[2]

and the wiring follows ``init_network``: host ``i`` on ToR ``i //
Radix_Down[0]``; each ToR to every aggregation switch of its pod (of the whole
fabric with 2 tiers) by ``Bundle[1]`` links; aggregation switch ``a`` (position
``p = a % aggs_per_pod`` in its pod) to cores ``p + aggs_per_pod * l`` for
``l < Radix_Up[1] / Bundle[2]``, by ``Bundle[2]`` links each.

Mapping to the :class:`Topology` model:

* node ids: hosts ``0 .. Nodes-1`` (htsim's host ids), then ToRs, aggregation
  switches and cores in htsim's order;
* a link has htsim's downlink speed and latency of the tier above it;
* a switch's ``Switch_Latency_ns`` has no counterpart in the model (links only):
  half of it is added to the delay of every link at that switch, which gives
  every host-to-host path exactly the sum of the link latencies and of the
  latencies of the switches it crosses;
* ``Queue_Up`` / ``Queue_Down`` (queue sizes of newer htsim versions) are read
  and ignored: the switches' shared buffer comes from the model configuration.

Checks are htsim's own (its error messages, as InputErrors naming the line);
one is added: with 2 tiers ``Podsize`` must equal ``Nodes``, because htsim
routes a 2-tier tree only within one pod.
"""

from __future__ import annotations

import os
from decimal import Decimal, InvalidOperation
from pathlib import Path

from pwormhole.errors import InputError
from pwormhole.inputs.tokens import head_tokens, open_text, to_int, token_lines
from pwormhole.topology.model import MAX_LINKS, MAX_NODES, Link, Topology

_HEADER_KEYS = ("nodes", "tiers", "podsize")
_TIER_KEYS = ("downlink_speed_gbps", "radix_down", "radix_up", "downlink_latency_ns", "switch_latency_ns",
              "oversubscribed", "bundle", "queue_up", "queue_down")
_NAMES = {"nodes": "Nodes", "tiers": "Tiers", "podsize": "Podsize", "downlink_speed_gbps": "Downlink_speed_Gbps",
          "radix_down": "Radix_Down", "radix_up": "Radix_Up", "downlink_latency_ns": "Downlink_Latency_ns",
          "switch_latency_ns": "Switch_Latency_ns", "oversubscribed": "Oversubscribed", "bundle": "Bundle",
          "queue_up": "Queue_Up", "queue_down": "Queue_Down"}


def looks_like_htsim_topology(path: str | os.PathLike) -> bool:
    """True when the file's first meaningful line is an htsim ``.topo`` header key (``Nodes``,
    ``Tiers``, ``Podsize``) and its header names ``Tiers`` (a connection matrix also starts with
    ``Nodes``); an unknown key among them is left to the reader to name, with its line."""
    seen = set()
    for i, toks in enumerate(head_tokens(path)):
        key = toks[0].lower()
        if i == 0 and key not in _HEADER_KEYS:
            return False
        seen.add(key)
        if key == "tier":
            break
    return "tiers" in seen


def _number(tok: str, what: str, path: str, line: int) -> Decimal:
    try:
        v = Decimal(tok)
    except InvalidOperation:
        raise InputError(f"{what} {tok!r} is not a number", path, line) from None
    if not v.is_finite():
        raise InputError(f"{what} {tok!r} is not a finite number", path, line)
    return v


def read_htsim_topology(path: str | os.PathLike) -> Topology:
    """Read an htsim fat-tree ``.topo`` file into a :class:`Topology` (see the module docstring).

    Returns:
        ``Topology`` with hosts ``0 .. Nodes-1`` first, then ToR, aggregation and
        core switches; ``name`` = the file stem, ``source`` = ``str(path)``.

    Raises:
        InputError naming the file and line for: a file that cannot be opened; an
        unknown key; a key without a value or with a value that is not a number;
        a header key after the first ``Tier``; a tier key before any ``Tier``;
        a tier outside ``0 .. Tiers-1``; a key given twice for a tier; a missing
        ``Nodes``/``Tiers``/``Podsize`` or a missing speed, latency or radix of a
        tier; ``Radix_Up`` on the top tier; and every inconsistency htsim
        rejects (counts that do not divide, radixes that do not match the
        switch counts, bundles that do not divide radixes); more nodes than
        :data:`~pwormhole.topology.model.MAX_NODES` or links than
        :data:`~pwormhole.topology.model.MAX_LINKS` in all.
    """
    spath = str(path)
    header: dict[str, tuple[int, int]] = {}
    tiers: dict[int, dict[str, tuple[Decimal, int]]] = {}
    tier_line: dict[int, int] = {}
    current = None
    last_line = 1
    with open_text(path, "htsim topology file") as f:
        for lineno, toks in token_lines(f):
            last_line = lineno
            key = toks[0].lower()
            if key not in _HEADER_KEYS and key != "tier" and key not in _TIER_KEYS:
                raise InputError(f"unknown key {toks[0]!r} (htsim .topo keys: Nodes, Tiers, Podsize, Tier, "
                                 f"{', '.join(_NAMES[k] for k in _TIER_KEYS)})", spath, lineno)
            if len(toks) < 2:
                raise InputError(f"{toks[0]} has no value", spath, lineno)
            if len(toks) > 2 and not toks[2].startswith("#"):
                raise InputError(f"unexpected {toks[2]!r} after {toks[0]} {toks[1]}", spath, lineno)
            if key in _HEADER_KEYS:
                if current is not None:
                    raise InputError(f"{toks[0]} belongs in the header, before the first Tier "
                                     f"(Tier {current} starts on line {tier_line[current]})", spath, lineno)
                if key in header:
                    raise InputError(f"{toks[0]} given twice (first on line {header[key][1]})", spath, lineno)
                header[key] = (to_int(toks[1], _NAMES[key], spath, lineno, lo=1), lineno)
                continue
            if key == "tier":
                t = to_int(toks[1], "tier", spath, lineno)
                n_tiers = header.get("tiers", (3, 0))[0]
                if not 0 <= t < n_tiers:
                    raise InputError(f"invalid tier {t}: Tiers is {n_tiers}, so tiers are 0..{n_tiers - 1}",
                                     spath, lineno)
                if t in tiers:
                    raise InputError(f"Tier {t} given twice (first on line {tier_line[t]})", spath, lineno)
                tiers[t] = {}
                tier_line[t] = lineno
                current = t
                continue
            if current is None:
                raise InputError(f"{toks[0]} before any 'Tier N' line", spath, lineno)
            if key in tiers[current]:
                raise InputError(f"duplicate {_NAMES[key]} setting for tier {current} (first on line "
                                 f"{tiers[current][key][1]})", spath, lineno)
            if key == "radix_up" and current == header.get("tiers", (3, 0))[0] - 1:
                raise InputError(f"can't specify Radix_Up for tier {current}: no uplinks from the top tier",
                                 spath, lineno)
            v = _number(toks[1], _NAMES[key], spath, lineno)
            if key == "downlink_speed_gbps":
                if v <= 0 or (v * 10**9) != (v * 10**9).to_integral_value():
                    raise InputError(f"Downlink_speed_Gbps {toks[1]!r} must be a positive number of Gbps",
                                     spath, lineno)
            elif key in ("downlink_latency_ns", "switch_latency_ns"):
                if v < 0 or v * 1000 != (v * 1000).to_integral_value():
                    raise InputError(f"{_NAMES[key]} {toks[1]!r} must be a non-negative whole number of ps",
                                     spath, lineno)
            else:
                if v != v.to_integral_value() or v < (0 if key.startswith("queue") else 1):
                    raise InputError(f"{_NAMES[key]} {toks[1]!r} must be a positive integer", spath, lineno)
            tiers[current][key] = (v, lineno)

    for key, what in (("nodes", "number of nodes"), ("tiers", "number of tiers"), ("podsize", "pod size")):
        if key not in header:
            raise InputError(f"missing {what} in header ({_NAMES[key]} N)", spath, 1)
    nodes, _ = header["nodes"]
    n_tiers, tl = header["tiers"]
    podsize, pl = header["podsize"]
    if not 2 <= n_tiers <= 3:
        raise InputError(f"invalid number of tiers: {n_tiers} (htsim builds 2 or 3)", spath, tl)
    for t in range(n_tiers):
        if t not in tiers:
            raise InputError(f"no configuration found for tier {t} (a 'Tier {t}' section)", spath, last_line)
        cfg = tiers[t]
        up = ("radix_up",) if t < n_tiers - 1 else ()
        for key in ("downlink_speed_gbps", "downlink_latency_ns", "radix_down") + up:
            if key not in cfg:
                raise InputError(f"missing {_NAMES[key]} for tier {t}", spath, tier_line[t])
        if cfg["downlink_latency_ns"][0] == 0:
            raise InputError(f"Downlink_Latency_ns of tier {t} must be positive (htsim treats 0 as missing)",
                             spath, cfg["downlink_latency_ns"][1])

    def val(t: int, key: str, default: int = 1) -> int:
        return int(tiers[t][key][0]) if key in tiers[t] else default

    def line_of(t: int, key: str) -> int:
        return tiers[t][key][1] if key in tiers[t] else tier_line[t]

    speed = [int(tiers[t]["downlink_speed_gbps"][0] * 10**9) for t in range(n_tiers)]
    link_lat = [int(tiers[t]["downlink_latency_ns"][0] * 1000) for t in range(n_tiers)]
    sw_lat = [int(tiers[t]["switch_latency_ns"][0] * 1000) if "switch_latency_ns" in tiers[t] else 0
              for t in range(n_tiers)]
    rdown = [val(t, "radix_down") for t in range(n_tiers)]
    rup = [val(t, "radix_up", 0) for t in range(n_tiers)]
    bundle = [val(t, "bundle") for t in range(n_tiers)]
    oversub = [val(t, "oversubscribed") for t in range(n_tiers)]

    for t in range(n_tiers):
        if rdown[t] % bundle[t]:
            raise InputError(f"mismatch between tier {t} down radix of {rdown[t]} and bundle size {bundle[t]}: "
                             f"the radix must be a multiple of the bundle size", spath, line_of(t, "bundle"))
        if t < n_tiers - 1 and rup[t] % bundle[t + 1]:
            raise InputError(f"mismatch between tier {t} up radix of {rup[t]} and tier {t + 1} down bundle size "
                             f"{bundle[t + 1]}: the radix must be a multiple of the bundle size",
                             spath, line_of(t, "radix_up"))
    if bundle[0] != 1:
        raise InputError("tier 0 Bundle must be 1 (htsim has no bundled host links)", spath, line_of(0, "bundle"))
    if nodes % podsize:
        raise InputError(f"Nodes {nodes} is not a multiple of Podsize {podsize}", spath, pl)
    pods = nodes // podsize
    if n_tiers == 2 and pods != 1:
        raise InputError(f"a 2-tier topology needs Podsize equal to Nodes ({nodes}), got {podsize}: htsim routes "
                         f"a 2-tier tree within one pod only", spath, pl)
    if podsize % rdown[0]:
        raise InputError(f"mismatch between ToR radix {rdown[0]} and Podsize {podsize}", spath,
                         line_of(0, "radix_down"))
    tors_per_pod = podsize // rdown[0]
    num = nodes * speed[0]
    den = speed[1] * oversub[0]
    if num % den:
        raise InputError(f"{nodes} hosts at {speed[0] // 10**9} Gbps do not make a whole number of {speed[1] // 10**9} "
                         f"Gbps ToR uplinks at oversubscription {oversub[0]}", spath, line_of(0, "oversubscribed"))
    tor_uplinks = num // den
    if rdown[0] // rup[0] != oversub[0]:
        raise InputError(f"mismatch between ToR radix ({rdown[0]} down, {rup[0]} up) and oversubscription ratio "
                         f"of {oversub[0]}", spath, line_of(0, "radix_up"))
    if tor_uplinks % (pods * rdown[1]):
        raise InputError(f"{tor_uplinks} ToR uplinks do not divide among {pods} pod(s) of aggregation switches "
                         f"with down radix {rdown[1]}", spath, line_of(1, "radix_down"))
    aggs_per_pod = tor_uplinks // (pods * rdown[1])
    if aggs_per_pod * bundle[1] != rup[0]:
        raise InputError(f"mismatch between ToR up radix {rup[0]} and {aggs_per_pod} aggregation switches per pod "
                         f"(x bundle {bundle[1]}) required by {tor_uplinks} ToR uplinks in {pods} pod(s) with an "
                         f"aggregation down radix of {rdown[1]}", spath, line_of(0, "radix_up"))
    n_cores = 0
    if n_tiers == 3:
        num = tor_uplinks * speed[1]
        den = speed[2] * oversub[1]
        if num % den:
            raise InputError(f"{tor_uplinks} aggregation down links at {speed[1] // 10**9} Gbps do not make a whole "
                             f"number of {speed[2] // 10**9} Gbps uplinks at oversubscription {oversub[1]}",
                             spath, line_of(1, "oversubscribed"))
        agg_uplinks = num // den
        if agg_uplinks % rdown[2]:
            raise InputError(f"{agg_uplinks} aggregation uplinks are not a multiple of the core down radix "
                             f"{rdown[2]}", spath, line_of(2, "radix_down"))
        n_cores = agg_uplinks // rdown[2]
        if n_cores % aggs_per_pod:
            raise InputError(f"topology results in {n_cores} core switches, which isn't an integer multiple of "
                             f"{aggs_per_pod} aggregation switches per pod", spath, line_of(2, "radix_down"))
        if n_cores * bundle[2] // aggs_per_pod != rup[1]:
            raise InputError(f"mismatch between the aggregation up radix of {rup[1]} and {aggs_per_pod} "
                             f"aggregation switches per pod with {n_cores} core switches (bundle {bundle[2]})",
                             spath, line_of(1, "radix_up"))

    n_tors = tors_per_pod * pods
    n_aggs = aggs_per_pod * pods
    tor0 = nodes
    agg0 = tor0 + n_tors
    core0 = agg0 + n_aggs
    n = core0 + n_cores
    n_links = nodes + n_tors * (aggs_per_pod if n_tiers == 3 else n_aggs) * bundle[1]
    if n_tiers == 3:
        n_links += n_aggs * (rup[1] // bundle[2]) * bundle[2]
    if n > MAX_NODES or n_links > MAX_LINKS:  # before building the links
        raise InputError(f"Nodes {nodes} makes {n} nodes and {n_links} links (switches and bundles included), over "
                         f"the limit of {MAX_NODES} nodes and {MAX_LINKS} links", spath, header["nodes"][1])
    links: list[Link] = []
    d0 = link_lat[0] + sw_lat[0] // 2
    for h in range(nodes):
        links.append(Link(h, tor0 + h // rdown[0], speed[0], d0))
    d1 = link_lat[1] + (sw_lat[0] + sw_lat[1]) // 2
    for t in range(n_tors):
        pod = t // tors_per_pod
        aggs = range(pod * aggs_per_pod, (pod + 1) * aggs_per_pod) if n_tiers == 3 else range(n_aggs)
        for a in aggs:
            for _ in range(bundle[1]):
                links.append(Link(tor0 + t, agg0 + a, speed[1], d1))
    if n_tiers == 3:
        d2 = link_lat[2] + (sw_lat[1] + sw_lat[2]) // 2
        for a in range(n_aggs):
            p = a % aggs_per_pod
            for l in range(rup[1] // bundle[2]):
                for _ in range(bundle[2]):
                    links.append(Link(agg0 + a, core0 + p + aggs_per_pod * l, speed[2], d2))
    stem = Path(spath).name
    if stem.endswith(".topo"):
        stem = stem[:-5]
    return Topology(n_nodes=n, switches=frozenset(range(tor0, n)), links=links, name=stem, source=spath)


__all__ = ["read_htsim_topology", "looks_like_htsim_topology"]
