"""Which flows are a server's NVLink flows, and whether this run may give them rates
(:mod:`.fluid`'s model instead of their packets)."""

from __future__ import annotations

from ..config import CC_DCQCN, NVLINK_CC_NIC

NO_NVSWITCH = -1  # a pair none of whose routes crosses an NVSwitch
PER_FLOW = -2  # a pair whose flows are told apart by their own ECMP choices


def _leg_anchors(net, a: int, b: int, nvs_ids, anchor_of: dict, find):
    """The anchors of the NVSwitches a packet from ``a`` to ``b`` may leave by, over every ECMP choice:
    an empty set when no choice crosses an NVSwitch; None when some choices do and some not, a route
    is missing, or a choice is not host -> NVSwitch -> ``b``."""
    anchors: set = set()
    seen = {a}
    todo = [a]
    two_hops = True  # every choice: a -> an NVSwitch -> b
    while todo:
        u = todo.pop()
        ports = net.hop_choices(u, b)
        if ports is None:
            return None
        for p in ports:
            v = p.peer.node_id
            if u in nvs_ids:
                anchors.add(anchor_of[find(u)])
                two_hops = two_hops and v == b
            elif u == a:
                two_hops = two_hops and v in nvs_ids
            else:
                two_hops = False
            if v != b and v not in seen:
                seen.add(v)
                todo.append(v)
    if not anchors:
        return anchors
    return anchors if two_hops else None


def _pair_anchor(net, src: int, dst: int, nvs_ids, anchor_of: dict, find) -> int:
    """What every flow from ``src`` to ``dst`` is, whatever its ECMP hash: the anchor of the one domain
    whose NVSwitches its data and its ACKs cross, each as host -> NVSwitch -> host; :data:`NO_NVSWITCH`
    when no route either way crosses an NVSwitch; :data:`PER_FLOW` when the choices differ (or a route
    is missing), to be found flow by flow. Read from the route tables (every flow's route is made before)."""
    data = _leg_anchors(net, src, dst, nvs_ids, anchor_of, find)
    acks = _leg_anchors(net, dst, src, nvs_ids, anchor_of, find)
    if data is None or acks is None:
        return PER_FLOW
    if not data and not acks:
        return NO_NVSWITCH
    both = data | acks
    return both.pop() if data and acks and len(both) == 1 else PER_FLOW


def nvlink_flows(net) -> tuple[dict, list]:
    """``({flow id: anchor NVSwitch id}, [flow ids crossing an NVSwitch otherwise])``.

    A domain is one server: its hosts and NVSwitches, connected by NVLink links (a
    connected component of the host-NVSwitch links), anchored at its lowest-numbered
    NVSwitch. A flow is an NVLink flow of a domain when its data and its ACKs each cross
    exactly one NVSwitch of it (host -> NVSwitch -> host, by the ECMP choice its packets
    would make). Decided once per host pair where every ECMP choice gives the same answer
    (:func:`_pair_anchor`), else flow by flow from its own path.
    """
    nvs_ids = set(net.topo.nvswitches)
    if not nvs_ids:
        return {}, []
    parent = {n: n for n in nvs_ids}

    def find(x):
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    hosts_of: dict = {}
    for ln in net.topo.links:  # hosts attach to their server's NVSwitches; NVSwitches to each other
        a, b = (ln.a, ln.b) if ln.a in nvs_ids else (ln.b, ln.a)
        if a not in nvs_ids:
            continue
        if b in nvs_ids:
            parent[find(a)] = find(b)
        elif b not in net.topo.switches:
            hosts_of.setdefault(b, set()).add(a)
    for ns in hosts_of.values():
        first = min(ns)
        for n in ns:
            parent[find(n)] = find(first)
    anchor_of: dict[int, int] = {}  # domain (its union-find root) -> its lowest-numbered NVSwitch
    for n in sorted(nvs_ids):
        anchor_of.setdefault(find(n), n)
    inside: dict = {}
    odd: list = []
    by_pair: dict = {}  # (src, dst) -> its flows' anchor, NO_NVSWITCH or PER_FLOW (every ECMP choice alike)
    for f in net.flows:
        pair = (f.src, f.dst)
        known = by_pair.get(pair)
        if known is None:
            known = by_pair[pair] = _pair_anchor(net, f.src, f.dst, nvs_ids, anchor_of, find)
        if known == NO_NVSWITCH:
            continue
        if known != PER_FLOW:
            inside[f.flow_id] = known
            continue
        legs = [net.path_of(f.flow_id), net.path_of(f.flow_id, acks=True)]
        crossed = {p.node.node_id for leg in legs for p in leg if p.node.node_id in nvs_ids}
        if not crossed:
            continue
        anchors = {anchor_of[find(n)] for n in crossed}
        if len(anchors) != 1 or any(len(leg) != 2 for leg in legs):
            odd.append(f.flow_id)
        else:
            inside[f.flow_id] = anchors.pop()
    return inside, odd


def rates_refused(net, odd: list, explicit: bool) -> str | None:
    """Why NVLink flows cannot be given rates in this run (None: they can). ``explicit``: the
    user asked for rates (``nvlink="fluid"``), which also allows them under DCQCN with the
    NIC's CC on NVLink (approximate where flows share a port; counted)."""
    cfg = net.cfg
    nic_cc = cfg.nvlink_cc == NVLINK_CC_NIC
    if nic_cc and cfg.cc_mode != CC_DCQCN:
        return (f"{cfg.cc_name.upper()} also runs on NVLink (--nvlink-cc nic) and the rates leave out its window "
                "and RTT-scale rate changes, which slow overlapping TP ring steps (HPCC: 5.5% mean FCT error "
                "measured on a GPT-7B layer)")
    if nic_cc and not explicit:
        return "DCQCN also runs on NVLink (--nvlink-cc nic): rates are only an approximation (opt in: --nvlink fluid)"
    nvs = net.topo.nvswitches
    errors = cfg.error_rate_per_link > 0 or any(ln.error_rate > 0 for ln in net.topo.links
                                                 if ln.a in nvs or ln.b in nvs)
    if errors or (nic_cc and not cfg.enable_pfc):
        return "NVLink can lose packets here (PFC off or link errors) and flows given rates never lose any"
    if net.failures:
        return "link failures (LINK_DOWN) are not modelled for flows given rates"
    if odd:
        return (f"flow {odd[0]} crosses an NVSwitch but not as host -> NVSwitch -> host inside one server; its "
                "packets would share the NVLink ports the rates assume they own")
    return None  # every server is in one LP: partition.grid.check_cut_links
