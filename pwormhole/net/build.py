"""Build the packet-level model of a scenario: nodes, ports, routes, QP windows.

Settings follow HPCC's ``third.cc``: per switch port, the K maps give the RED
thresholds for the port's rate, the PFC headroom is ``3 x rate x delay`` and
the dynamic-threshold shift starts at 3 (alpha 1/8) and drops by one for each
doubling of the port rate above the host NIC rate. QP windows and base RTTs:
``rtt = 2 x path delay + one packet's serialization per hop``, ``bdp = rtt x
bottleneck rate``; with ``GLOBAL_T 1`` every QP uses the largest over all host
pairs.
"""

from __future__ import annotations

from ..config import NVLINK_CC_NONE, ModelConfig
from ..engine.events import Lead
from ..errors import InputError
from ..inputs.hpcc_config import check_k_maps, check_min_rate
from ..topology.model import Topology
from ..topology.routing import adjacency, largest_rtt_bdp, next_hops, next_hops_past, nic_switch, path_facts
from ..units import MAX_TIME_PS
from ..workload.dag import Dag
from ..workload.flows import MAX_FLOW_BYTES, Flow, HostPairs, traffic_start_ps
from .dagrun import DagRuntime
from .device import RouteTable
from .dispatch import DagLead
from .freeze import route_path, unwire
from .host import Host, HostPort, drop_host_port
from .packet import (
    EV_ARRIVE_HOST,
    EV_ARRIVE_SWITCH,
    EV_FLOW_START,
    EV_NIC_WAKE,
    EV_OP_START,
    EV_TX_DONE,
    INT_BYTES_BY_CC,
    ecmp_hash,
    overhead_bytes,
)
from .switch import DropPort, Switch, SwitchPort

DEFAULT_RTO_PS = 1_000_000_000  # 1 ms without ACK progress => go back (lossy runs only)


class OnePortRoutes(dict):
    """Route table of a host with a single port: every destination leaves by
    that port, so nothing is stored per destination (a full table on every
    host would cost hosts x destinations: 2 GB for 4,000 hosts talking to
    all others). Lookups are plain ``dict`` lookups; a miss returns the port."""

    __slots__ = ("only",)

    def __init__(self, port):
        super().__init__()
        self.only = [port]

    def __missing__(self, dst):
        return self.only


class NicRoutes(dict):
    """Route table of a host with NVLink whose other links all lead to one switch (a GPU and its NIC
    switch, :func:`~pwormhole.topology.routing.nic_switch`; built only in fabrics with NVSwitches, other
    hosts of several links keep a full ``dict``): every destination but its NVSwitch peers leaves by
    its links to that switch, so only the routes that differ are stored (a full table costs GPUs x
    destinations: ~2.7 GB at 8,192 GPUs). A miss returns those links (``nic``); a link failure makes
    it a :class:`~pwormhole.net.device.RouteTable` of every destination again."""

    __slots__ = ("nic", "nic_ks")

    def __init__(self, ports: list, ks: list[int]):
        super().__init__()
        self.nic = [ports[k] for k in ks]
        self.nic_ks = ks

    def __missing__(self, dst):
        return self.nic


class Network:
    """All nodes of one scenario, wired, routed lazily, with flow facts.

    Args:
        topo: the topology.
        flows: the flows (hosts only; validated here).
        cfg: model configuration.
        seed: seed of the per-node random streams (ECMP salt, ECN, losses).
        dag: a workload DAG whose flows are ``flows`` (None: ``flows`` start
            at their own ``start_ps``).

    Link failures (``cfg.link_down``) are listed in ``failures`` as ``(t_ps,
    node_a, node_b)`` in time order; the run applies each with :meth:`fail_link` at a window
    boundary at that time. Afterwards ``down_links`` holds the failed link
    indices and ``no_path`` the flows whose ends they disconnected.

    Raises:
        InputError: a flow endpoint is not a host, a switch port rate has no
            K-map entry while ECN is on, a flow's endpoints are disconnected, or
            ``cfg.link_down`` names two nodes no link joins.
        ValueError: a flow's id is not its position in ``flows``.
    """

    def __init__(self, topo: Topology, flows: list[Flow], cfg: ModelConfig, seed: int = 1, dag: Dag | None = None):
        self.topo = topo
        self.flows = flows
        self.dag = dag
        self.cfg = cfg
        self.seed = seed
        self.adj = adjacency(topo)
        columns = list(zip(*flows)) if flows else [()] * len(Flow._fields)  # flow id, src, dst, ... (Flow's)
        self._check_flows(columns)
        self.failures = self._check_link_down()
        self.down_links: set[int] = set()
        self.no_path: set[int] = set()
        self.failed: list[tuple] = []  # (t_ps, a, b, [(link index, tx_bytes at a, tx_bytes at b) when it failed])
        self.link_ports: list[tuple] = []  # link index -> (port at link.a, port at link.b)
        check_k_maps(cfg, topo)
        check_min_rate(cfg, topo)
        self.nodes: list = []
        for n in range(topo.n_nodes):
            if n in topo.switches:
                self.nodes.append(Switch(n, seed, cfg))
            else:
                self.nodes.append(Host(n, seed, cfg, self))
        self._wire()
        for node in self.nodes:
            if not node.is_switch and len(node.ports) == 1:
                node.routes = OnePortRoutes(node.ports[0])
                node.sole_port = node.ports[0]
            elif not node.is_switch and topo.nvswitches:
                switch = nic_switch(topo, self.adj, node.node_id)
                if switch is not None:
                    node.routes = NicRoutes(node.ports, [k for k, (v, _) in enumerate(self.adj[node.node_id])
                                                         if v == switch])
        self._routed: set[int] = set()
        # NIC switch -> next_hops toward it, of the nodes that keep a full table (its hosts' routes derive)
        self._to_switch: dict[int, list[tuple[int, list[int]]]] = {}
        self._hop_lists: dict[tuple, list] = {}  # (node id, next-hop port indexes) -> the one list of those ports
        self.lossy = (not cfg.enable_pfc) or cfg.error_rate_per_link > 0 or any(ln.error_rate > 0 for ln in topo.links)
        for node in self.nodes:
            if not node.is_switch:
                node.lossy = self.lossy
                node.rto_ps = DEFAULT_RTO_PS
        routed = self._routed
        _, srcs, dsts, _, dports, _, _, sports = columns
        self.flow_hash = list(map(ecmp_hash, srcs, dsts, sports, dports))  # flow id -> its 5-tuple's hash
        for node in self.nodes:
            if not node.is_switch:
                node.flow_hash = self.flow_hash
        for src, dst in dict.fromkeys(zip(srcs, dsts)):  # host pairs, in flow order
            if dst not in routed:
                self.route_to(dst)
            if src not in routed:
                self.route_to(src)
            if not self._reaches(src, dst):
                fid = next(f.flow_id for f in flows if f.src == src and f.dst == dst)
                raise InputError(f"flow {fid}: host {dst} is unreachable from host {src} "
                                 f"(no path through switches in {topo.name})", topo.source)
        self._pair_cache: dict[int, dict[int, tuple[int, int, int]]] = {}
        self.max_rtt_ps, self.max_bdp_bytes = (largest_rtt_bdp(self.topo, self.adj, cfg.packet_payload_bytes)
                                               if cfg.global_t else (0, 0))
        self.dag_rt = None
        if dag is not None:
            dag.check_hosts(set(topo.hosts), topo.source)
            self.dag_rt = DagRuntime(dag, self.path_delay_ps)
            for node in self.nodes:
                if not node.is_switch:
                    node.dag = self.dag_rt

    # -- construction ---------------------------------------------------------
    def _check_flows(self, columns: list[tuple]) -> None:
        """InputError naming the first flow with an unknown or switch endpoint, a size out of range or
        a start past the limit; ValueError unless the flow ids are the flows' positions."""
        topo = self.topo
        n_nodes = topo.n_nodes
        switches = topo.switches
        if self.flows:  # at C speed over the columns; the loop below only to name the first bad flow
            fids, src, dst, _, _, size, start, _ = columns
            if fids != tuple(range(len(fids))):
                i = next(i for i, fid in enumerate(fids) if fid != i)
                raise ValueError(f"flow ids must be the flows' positions in the list: flow {i} has id {fids[i]}")
            ends = set(src) | set(dst)
            if (min(ends) >= 0 and max(ends) < n_nodes and switches.isdisjoint(ends) and min(size) > 0
                    and max(size) <= MAX_FLOW_BYTES and max(start) <= MAX_TIME_PS):
                return
        for f in self.flows:
            for end in (f.src, f.dst):
                if not 0 <= end < n_nodes:
                    raise InputError(f"flow {f.flow_id}: unknown node id {end} (topology has {n_nodes} nodes)")
                if end in switches:
                    raise InputError(f"flow {f.flow_id}: endpoint {end} is a switch, not a host")
            if not 0 < f.size_bytes <= MAX_FLOW_BYTES:
                raise InputError(f"flow {f.flow_id}: size must be 1..{MAX_FLOW_BYTES} bytes, got {f.size_bytes}")
            if f.start_ps > MAX_TIME_PS:
                raise InputError(f"flow {f.flow_id}: start {f.start_ps} ps is past the limit of {MAX_TIME_PS} ps")

    def _check_link_down(self) -> list[tuple[int, int, int]]:
        """``[(t_ps, a, b)]`` of ``cfg.link_down`` in time order, at their times after the traffic's start
        (:func:`~pwormhole.workload.flows.traffic_start_ps`); InputError when no link joins a and b."""
        start_ps = traffic_start_ps(self.flows, self.dag)
        out = []
        for d in self.cfg.link_down:
            a, b = d.node_a, d.node_b
            if not any({ln.a, ln.b} == {a, b} for ln in self.topo.links):
                raise InputError(f"{d.given}: no link joins nodes {a} and {b} in {self.topo.name}", d.path)
            out.append((start_ps + d.after_ps, a, b))
        return sorted(out)

    def _nic_rate_bps(self) -> int:
        sw = self.topo.switches
        rates = [ln.rate_bps for ln in self.topo.links if ln.a not in sw or ln.b not in sw]
        return min(rates) if rates else max(ln.rate_bps for ln in self.topo.links)

    def _wire(self) -> None:
        cfg = self.cfg
        topo = self.topo
        nic_rate = self._nic_rate_bps()
        for ln in topo.links:
            err = ln.error_rate or cfg.error_rate_per_link
            ends = []
            for me in (ln.a, ln.b):
                node = self.nodes[me]
                cls = SwitchPort if node.is_switch else HostPort
                port = cls(node, len(node.ports), ln.rate_bps, ln.delay_ps, err)
                port.ns3_time = cfg.ns3_time
                node.ports.append(port)
                ends.append(port)
            pa, pb = ends
            self.link_ports.append((pa, pb))
            pa.peer, pa.peer_idx = self.nodes[ln.b], pb.idx
            pb.peer, pb.peer_idx = self.nodes[ln.a], pa.idx
            for p, other in ((pa, ln.b), (pb, ln.a)):
                p.arrive_kind = EV_ARRIVE_SWITCH if other in topo.switches else EV_ARRIVE_HOST
        no_nvlink_cc = cfg.nvlink_cc == NVLINK_CC_NONE
        for node in self.nodes:
            if not node.is_switch:
                for p in node.ports:
                    p.cc_off = no_nvlink_cc and p.peer.node_id in topo.nvswitches
                    p.has_win = cfg.has_win and not p.cc_off
                    p.hdr_bytes, p.ack_bytes = overhead_bytes(0 if p.cc_off else INT_BYTES_BY_CC.get(cfg.cc_mode, 0))
                continue
            if no_nvlink_cc and node.node_id in topo.nvswitches:  # NVLink: lossless, no ECN marks
                node.ecn = False
                node.pfc = True
            for p in node.ports:
                r = p.rate_bps
                if cfg.enable_qcn:  # every rate is in the maps: checked by check_k_maps
                    p.kmin_bytes = cfg.kmin_map_bytes[r]
                    p.kmax_bytes = cfg.kmax_map_bytes[r]
                    p.pmax = cfg.pmax_map[r]
                    if p.kmax_bytes <= p.kmin_bytes:
                        p.kmax_bytes = p.kmin_bytes + 1
                p.headroom_bytes = r * (p.delay_ps // 1000) // 8 // 1_000_000_000 * 3
                shift = 3
                while r > nic_rate and shift > 0:
                    shift -= 1
                    r //= 2
                p.pfc_shift = shift
            node.finish_config()

    def route_to(self, dst: int) -> None:
        """Fill every node's ECMP next hops toward ``dst`` (once per destination)."""
        if dst in self._routed:
            return
        self._routed.add(dst)
        switch = None if self.down_links else nic_switch(self.topo, self.adj, dst)
        if switch is None:
            hops = iter(next_hops(self.topo, self.adj, dst, self.down_links).items())
        else:  # one BFS per NIC switch, not per host (8x fewer on a k=16 fat tree); as
            # routing.next_hops_via_switches, but kept over the nodes that store routes only (single-port
            # hosts store none: a million entries fewer to walk on the 1024-host fat tree)
            to_switch = self._to_switch.get(switch)
            if to_switch is None:
                to_switch = self._to_switch[switch] = [  # (not NicRoutes: their routes toward it are the NIC's)
                    (u, ks) for u, ks in next_hops(self.topo, self.adj, switch).items()
                    if type(self.nodes[u].routes) is dict]
            hops = next_hops_past(self.topo, self.adj, dst, switch, to_switch)
        for u, ks in hops:
            node = self.nodes[u]
            routes = node.routes
            if type(routes) is OnePortRoutes or (type(routes) is NicRoutes and ks == routes.nic_ks):
                continue  # stored only where it differs (memory stays linear in nodes + flows)
            routes[dst] = self._hop_list(node, ks)

    def _hop_list(self, node, ks) -> list:
        """The list of ``node``'s ports ``ks``, one object for all destinations with those next hops
        (on a fat tree most destinations share the uplinks: memory and cache stay small)."""
        key = (node.node_id, tuple(ks))
        hops = self._hop_lists.get(key)
        if hops is None:
            hops = self._hop_lists[key] = [node.ports[k] for k in ks]
        return hops

    def _reaches(self, src: int, dst: int) -> bool:
        """Whether ``src`` has a route to ``dst`` (after ``route_to(dst)``), read from
        the route tables: keeping the set of nodes that reach each destination
        would cost nodes x destinations."""
        node = self.nodes[src]
        routes = node.routes
        if type(routes) is OnePortRoutes:
            port = node.ports[0]
            peer = port.peer
            return port.up and (peer.node_id == dst or (peer.is_switch and dst in peer.routes))
        if type(routes) is NicRoutes and dst not in routes:  # (its NIC switch's, one link on)
            return any(p.up and (p.peer.node_id == dst or dst in p.peer.routes) for p in routes.nic)
        return dst in routes

    # -- link failures (HPCC third.cc TakeDownLink) -------------------------------------
    def fail_link(self, a: int, b: int, t_ps: int) -> list[int]:
        """Take down every link joining nodes ``a`` and ``b`` at ``t_ps``, a window
        boundary (every event before it done, every event from it on pending).

        On the nodes attached to an event heap (this process's): packets on the
        wire (their arrivals) and queued at its ports are lost, its ports never
        send again and hold no PFC pause (the buffer the queued packets held is
        released, so pauses they caused upstream resume). On every node: the
        ECMP tables are recomputed without the link (a destination no longer
        reached maps to a port that drops), and ``no_path`` gets the flows whose
        ends it disconnected. Then each host moves its QPs to their new NIC port
        and parks those without a path (:meth:`Host.reroute`). The same however
        the nodes are split among heaps: only per-node state changes, in node order.

        Returns the indices of the links taken down (none when already down).
        """
        ids = [li for li, ln in enumerate(self.topo.links)
               if {ln.a, ln.b} == {a, b} and li not in self.down_links]
        if not ids:
            return []
        self.down_links.update(ids)
        dead = [p for li in ids for p in self.link_ports[li]]
        self.failed.append((t_ps, a, b, [(li, self.link_ports[li][0].tx_bytes, self.link_ports[li][1].tx_bytes)
                                         for li in ids]))
        dead_in = {(p.node.node_id, p.idx) for p in dead}  # arrivals on these (node, port) are lost
        heaps = {}
        for p in dead:
            if p.node.heap is not None:
                heaps[id(p.node.heap)] = p.node.heap
        for heap in heaps.values():
            unwire(heap)
            keep = []
            evs = heap.events()
            for ev in evs:
                kind = ev[2]
                if kind == EV_ARRIVE_HOST or kind == EV_ARRIVE_SWITCH:
                    if (ev[3].node_id, ev[4].inport) in dead_in:
                        ev[3].lost += 1
                        continue
                elif (kind == EV_TX_DONE or kind == EV_NIC_WAKE) and ev[3] in dead:
                    continue
                keep.append(ev)
            if len(keep) != len(evs):
                heap.replace(keep)
        for p in sorted(dead, key=lambda p: p.node.node_id):
            if p.node.heap is not None:
                p.take_down(t_ps)
            else:
                p.up = False
                p.busy = True
        self._recompute_routes(dead)
        flows = self.flows
        self.no_path = {f.flow_id for f in flows if not self._reaches(f.src, f.dst)}
        for node in self.nodes:
            if not node.is_switch and node.heap is not None:
                node.reroute(t_ps, self.no_path)
        return ids

    def _recompute_routes(self, dead) -> None:
        """ECMP tables without ``down_links``, for the destinations whose next hops used
        a ``dead`` port (removing a link no route uses changes no distance); every one
        with NVSwitches (their routing rule is not plain shortest paths)."""
        for node in self.nodes:
            if type(node.routes) in (dict, NicRoutes):  # (NicRoutes: only with NVSwitches, every one recomputed)
                drop = [DropPort(node)] if node.is_switch else [drop_host_port(node)]
                node.routes = RouteTable(node.routes, drop)
        every = bool(self.topo.nvswitches)
        for dst in sorted(self._routed):
            if not every and not any(type(p.node.routes) is RouteTable and p in p.node.routes.get(dst, ())
                                     for p in dead):
                continue
            hops = next_hops(self.topo, self.adj, dst, self.down_links)
            for node in self.nodes:
                routes = node.routes
                if type(routes) is OnePortRoutes:
                    continue
                ks = hops.get(node.node_id)
                if ks:
                    routes[dst] = [node.ports[k] for k in ks]
                else:
                    routes.pop(dst, None)

    # -- pair facts (third.cc pairDelay / pairTxDelay / pairBw) -------------------
    def _facts_from(self, src: int) -> dict[int, tuple[int, int, int]]:
        f = self._pair_cache.get(src)
        if f is None:
            f = self._pair_cache[src] = path_facts(self.topo, self.adj, src, self.cfg.packet_payload_bytes)
        return f

    def pair(self, src: int, dst: int) -> tuple[int, int, int]:
        """``(rtt_ps, bottleneck_bps, bdp_bytes)`` of the host pair along its BFS path."""
        facts = self._facts_from(src).get(dst)
        if facts is None:
            raise InputError(f"host {dst} is unreachable from host {src}")
        delay, tx, bw = facts
        rtt = 2 * delay + tx
        return rtt, bw, rtt * bw // 8_000_000_000_000

    def path_delay_ps(self, src: int, dst: int) -> int:
        """Propagation delay of the route from host ``src`` to host ``dst`` (int ps)."""
        facts = self._facts_from(src).get(dst)
        if facts is None:
            raise InputError(f"host {dst} is unreachable from host {src}")
        return facts[0]

    def qp_window(self, flow: Flow) -> tuple[int, int]:
        """``(base_rtt_ps, window_bytes)`` of a new QP."""
        if self.cfg.global_t and self.max_rtt_ps:
            return self.max_rtt_ps, self.max_bdp_bytes
        rtt, _, bdp = self.pair(flow.src, flow.dst)
        return rtt, bdp

    # -- what a flow-level observer asks (acceleration reaches the model through these) --
    def ecmp_hash(self, fid: int) -> int:
        """The ECMP hash of flow ``fid``'s packets, data and ACKs (its 5-tuple's)."""
        return self.flow_hash[fid]

    def path_of(self, fid: int, acks: bool = False) -> list:
        """The egress ports flow ``fid``'s data (``acks``: its ACKs, from its destination) cross, as its
        packets take them now (ECMP choices and the routes after any link failure)."""
        f = self.flows[fid]
        a, b = (f.dst, f.src) if acks else (f.src, f.dst)
        return route_path(self.nodes, a, b, self.flow_hash[fid])

    def hop_choices(self, node_id: int, dst: int):
        """The egress ports a packet at ``node_id`` for ``dst`` may leave by, one per ECMP choice (None:
        no route); a path of :meth:`path_of` takes one of them at each hop."""
        node = self.nodes[node_id]
        if node.sole_port is not None:
            return (node.sole_port,)
        routes = node.routes
        if type(routes) is NicRoutes and dst not in routes:
            return routes.nic if self._reaches(node_id, dst) else None
        return routes.get(dst) or None

    def nvlink_flags(self, pairs: HostPairs | None = None) -> list[bool]:
        """Per flow id, whether its data leaves its source by an NVSwitch: a flow inside a server, on
        NVLink, as against one that crosses the NICs' fabric (by the routes at the call). ``pairs``:
        the flows' host pairs, whose flows all leave alike (a source's ECMP choices toward a host are
        all NVSwitches or none, :func:`~..topology.routing.next_hops`): one answer per pair."""
        nvs = self.topo.nvswitches
        if not nvs:
            return [False] * len(self.flows)
        nodes, flows = self.nodes, self.flows
        if pairs is not None and len(pairs.of_flow) != len(flows):
            raise ValueError(f"nvlink_flags: host pairs of {len(pairs.of_flow)} flows for {len(flows)}")
        if pairs is not None and not self.no_path:
            first = [flows[f] for f in pairs.first.tolist()]
        else:
            first, pairs = flows, None
        flags = [f.flow_id not in self.no_path and nodes[f.src].pick_port(f.dst, self.flow_hash[f.flow_id])
                 .peer.node_id in nvs for f in first]
        return flags if pairs is None else list(map(flags.__getitem__, pairs.of_flow.tolist()))

    def pfc_starved(self, fraction: float) -> list[tuple[int, int, int, int]]:
        """Switches (not NVSwitches) whose PFC headroom and reserve leave less than ``fraction`` of
        their buffer shared (``SwitchMmu``: a port pauses its peer once its queue passes a share
        of what is left, so with nothing left it pauses at almost every packet): ``(node id, ports,
        headroom and reserve bytes, buffer bytes)``, fullest first."""
        if not self.cfg.enable_pfc:
            return []
        out = [(nd.node_id, len(nd.ports), nd.total_hdrm + nd.total_rsrv, nd.buffer_bytes) for nd in self.nodes
               if nd.is_switch and nd.node_id not in self.topo.nvswitches
               and nd.buffer_bytes - nd.total_hdrm - nd.total_rsrv < fraction * nd.buffer_bytes]
        return sorted(out, key=lambda s: (s[3] - s[2], s[0]))

    def sender_qp(self, fid: int):
        """Flow ``fid``'s queue pair at its source (a :class:`~pwormhole.net.host.SendQP`), None when it
        is not sending there (not started, finished, or carried by a flow model)."""
        return self.nodes[self.flows[fid].src].sqp.get(fid)

    def advance_receiver(self, fid: int, b: int, t0_ps: int, d_ps: int) -> None:
        """Fast-forward flow ``fid``'s receiver (its destination host): ``b`` more bytes received in order,
        ``d_ps`` from ``t0_ps`` passed (:meth:`~pwormhole.net.host.Host.advance_rx`)."""
        self.nodes[self.flows[fid].dst].advance_rx(fid, b, t0_ps, d_ps)

    def set_flow_model(self, fid: int, model) -> None:
        """Flow ``fid`` is carried by ``model`` instead of a QP: at its start its source host calls
        ``model.start(host, fid, t, start_ps)`` (:meth:`~pwormhole.net.host.Host.on_flow_start`)."""
        host = self.nodes[self.flows[fid].src]
        if host.flow_models is None:
            host.flow_models = {}
        host.flow_models[fid] = model

    # -- scheduling -----------------------------------------------------------
    def horizon_lead(self, model_fids) -> Lead:
        """The leads of this network's events for the window loop's horizon: a
        :class:`~pwormhole.net.dispatch.DagLead` with a DAG (``model_fids``: the flows a flow model
        carries, not packets), else 0 for every event."""
        if self.dag_rt is None:
            return Lead()
        rt = self.dag_rt
        return DagLead(*rt.leads(model_fids), rt.remote_children)

    def initial_events(self) -> list[tuple]:
        """Flow-start events (or, with a DAG, the start of its root ops), keyed
        by the host's counter in flow (op) order."""
        evs = []
        if self.dag_rt is not None:
            rt = self.dag_rt
            for op in rt.roots:
                h = self.nodes[rt.host[op]]
                evs.append((rt.not_before_ps[op], h.kbase + h.seq, EV_OP_START, h, op))
                h.seq += 1
            return evs
        for f in self.flows:
            h = self.nodes[f.src]
            evs.append((f.start_ps, h.kbase + h.seq, EV_FLOW_START, h, f.flow_id))
            h.seq += 1
        return evs
