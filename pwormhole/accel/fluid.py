"""Flow-level (fluid) model of the flows inside each server's NVSwitches: an opt-in
acceleration (``AccelConfig.fluid_nvlink``, ``--fluid-nvlink``), Wormhole mode only.

Why: a tensor-parallel ring step over NVLink lasts less than one synchronization
window (262 KB at 2880 Gb/s: 0.73 us), so Wormhole can never skip it, and at 14-70%
of a GPT iteration's bytes those packets bound its events ratio (bench/RESULTS.md).
A server's NVLink fabric (a domain: its GPUs and NVSwitches) is isolated: its
host-to-NVSwitch and NVSwitch-to-host ports carry only the flows between the hosts of
that server and their ACKs (:func:`build_domains` refuses any other flow crossing an
NVSwitch). This module replaces
those flows' packets by rates, the way SimAI's analytical backend treats NVLink, and
is measured against the plain packet run by ``pwormhole compare`` (the packet
reference is never changed). It departs from issue 4's rule that completions are
simulated packet by packet, so it is off by default.

Model (per domain, exact in the wire bytes of the HPCC ns-3 packet format):

* A flow ``f`` sends ``size + packets x header`` wire bytes on its two data ports
  (source host -> NVSwitch, NVSwitch -> destination host) and one ACK of
  ``ack_bytes`` per ``ack_every`` packets on its two ACK ports (the reverse ones).
* Rates are max-min fair under those port capacities (progressive filling with
  the per-port wire-byte coefficients), recomputed whenever a flow of the domain
  starts or finishes: a ring step's data and the reverse flow's ACKs share a port
  exactly as they do packet by packet. Congestion control is not modelled: under
  DCQCN an uncongested NVLink flow stays at the line rate; flows sharing a port
  with other flows' data are only approximated (counted in :attr:`FluidDomain.shared`,
  which the run reports); HPCC is refused (its window cut slows overlapping ring
  steps).
* When the last wire byte leaves the source, the last packet reaches the
  destination after the two links' delays and its serialization at the NVSwitch
  (the destination's DAG children start then), and the ACK reaches the source
  after the same path back (the flow's completion time, as packet mode records it).

Events are plain tuples ``(t, key, EV_FLUID, domain, arg)`` with keys from the
counter of the server's lowest-numbered NVSwitch (DESIGN.md invariant 2); a domain
lives in that NVSwitch's LP, and :func:`build_domains` refuses a plan that puts a
fluid flow's hosts elsewhere, so the answer is the same on any LP count. Unlike the
rest of Wormhole, these events act mid-window (a flow's start cannot wait for a
boundary) and rates are floats (deterministic: every loop runs in a fixed order).
"""

from __future__ import annotations

from heapq import heappush

from ..config import CC_DCQCN
from ..errors import InputError
from ..net.nodes import Port
from ..net.packet import EV_MODEL
from ..units import PS_PER_S
from ..units import serialization_ps as _tx_ps
from .groups import route_path

EV_FLUID = EV_MODEL  # the event kind of the fluid model (its handler: FluidDomain.on_event)


class FluidFlow:
    """An active fluid flow's state."""

    __slots__ = ("left_wire_bytes", "rate", "data_ports", "ack_ports", "start_ps")

    def __init__(self, left_wire_bytes: float, data_ports: tuple, ack_ports: tuple, start_ps: int):
        self.left_wire_bytes = left_wire_bytes  # wire bytes still to send
        self.rate = 0.0  # wire bytes per ps
        self.data_ports = data_ports  # (host -> NVSwitch, NVSwitch -> destination)
        self.ack_ports = ack_ports  # the same for its ACKs
        self.start_ps = start_ps


class FluidDomain:
    """The fluid flows of one server (domain).

    Args:
        nvswitch: the server's lowest-numbered NVSwitch (a
            :class:`~pwormhole.net.nodes.Switch`: its heap and event key counter are used).
        net: the :class:`~pwormhole.net.build.Network`.
    """

    def __init__(self, nvswitch, net) -> None:
        self.nvs = nvswitch  # the server's lowest-numbered NVSwitch: its heap and key counter
        self.net = net
        host0 = next(nd for nd in net.nodes if not nd.is_switch)
        self.mtu = net.cfg.packet_payload_bytes
        self.hdr_bytes = host0.hdr_bytes
        self.ack_bytes = host0.ack_bytes
        self.ack_every = max(1, -(-max(1, net.cfg.l2_ack_interval) // self.mtu))
        self.active: dict[int, FluidFlow] = {}
        self.start_ps: dict[int, int] = {}  # fid -> start time, until the flow's ACK completes it
        self.ack_ports: dict[int, tuple] = {}  # fid -> its ACK ports, from its last byte to its delivery
        self.last_ps = 0
        self.version = 0
        self.dirty = False  # a ("rates", 0) event is pending
        self.shared: set = set()  # flows that shared an NVLink port with another flow's data

    # -- DAG / engine entry points ------------------------------------------------------
    def start(self, host, fid: int, t: int) -> None:
        """Flow ``fid`` starts at ``t`` on ``host`` (its source), instead of a QP."""
        flow = self.net.flows[fid]
        h = host.flow_hash[fid]
        up = host.pick_port(flow.dst, h)  # host -> NVSwitch (the ECMP choice of its packets)
        down = up.peer.pick_port(flow.dst, h)  # NVSwitch -> destination
        ack_up = self.net.nodes[flow.dst].pick_port(flow.src, h)  # the ACKs may cross another NVSwitch
        ack_down = ack_up.peer.pick_port(flow.src, h)
        packets = -(-flow.size_bytes // self.mtu)
        wire = flow.size_bytes + packets * self.hdr_bytes
        self._advance(t)
        self.active[fid] = FluidFlow(float(wire), (up, down), (ack_up, ack_down), t)
        self.version += 1  # the rates change: a pending completion event is stale
        if not self.dirty:  # recompute once for all the flows starting at t (a ring step's 8)
            self.dirty = True
            self._post(t, ("rates", 0))

    def on_event(self, arg, t: int) -> None:
        """Handler of ``EV_FLUID``: ``("next", version)`` (the earliest last byte sent under
        the current rates), ``("rates", 0)`` (flows started at ``t``: recompute once),
        ``("recv", fid)`` (last byte delivered) or ``("ack", fid)`` (last ACK back: complete)."""
        what, x = arg
        if what == "next" or what == "rates":
            if what == "next" and x != self.version:
                return  # superseded by a later start or finish
            if what == "rates":
                self.dirty = False
            self._advance(t)
            done = sorted(fid for fid, st in self.active.items() if st.left_wire_bytes <= 0.5)
            acks: dict[Port, set[int]] = {}  # port -> flows whose ACKs cross it, before any of the done flows leaves
            for fid, st in self.active.items():
                for p in st.ack_ports:
                    acks.setdefault(p, set()).add(fid)
            for fid in done:
                self._last_byte_sent(fid, t, acks)
            self._reschedule(t)
        elif what == "recv":
            flow = self.net.flows[x]
            dst = self.net.nodes[flow.dst]
            dst.bytes_delivered += flow.size_bytes
            if dst.dag is not None:
                dst.flow_received(x, t)  # may start the next ring step here, now
            self._post(self._ack_arrival(x, t), ("ack", x))
        else:
            flow = self.net.flows[x]
            src = self.net.nodes[flow.src]
            src.finished.append((x, t, self.start_ps.pop(x)))
            if src.dag is not None:
                ch = src.dag.at_src[src.dag.flow_op[x]]
                if ch:
                    src.dag_satisfy(ch, t)

    def sent_bytes(self, fid: int, t: int) -> int:
        """Payload bytes of a flow on the wire by ``t`` (its size once its last byte left)."""
        size = self.net.flows[fid].size_bytes
        st = self.active.get(fid)
        if st is None:
            return size
        packets = -(-size // self.mtu)
        wire = size + packets * self.hdr_bytes
        left = st.left_wire_bytes - st.rate * max(0, t - self.last_ps)
        return max(0, min(size, int((wire - left) * size / wire)))

    def settle(self, t: int) -> None:
        """Count the bytes of unfinished flows sent and delivered by ``t``, for a run that stops
        at ``t`` (a flow's bytes are otherwise counted at its last byte and its delivery)."""
        for fid, st in self.active.items():
            flow = self.net.flows[fid]
            up, down = st.data_ports
            self.net.nodes[flow.src].bytes_sent += self.sent_bytes(fid, t)
            self.net.nodes[flow.dst].bytes_delivered += self.sent_bytes(fid, t - up.delay_ps - down.delay_ps)
        for fid in self.ack_ports:  # last byte sent, not yet delivered: one packet's flight from it
            flow = self.net.flows[fid]
            self.net.nodes[flow.dst].bytes_delivered += flow.size_bytes

    # -- model -------------------------------------------------------------------------
    def _post(self, t: int, arg) -> None:
        nvs = self.nvs
        heappush(nvs.heap, (t, nvs.kbase + nvs.seq, EV_FLUID, self, arg))
        nvs.seq += 1

    def _advance(self, t: int) -> None:
        d = t - self.last_ps
        if d > 0:
            for st in self.active.values():
                st.left_wire_bytes -= st.rate * d
        self.last_ps = t

    def _last_byte_sent(self, fid: int, t: int, acks: dict) -> None:
        st = self.active.pop(fid)
        flow = self.net.flows[fid]
        up, down = st.data_ports
        packets = -(-flow.size_bytes // self.mtu)
        last_wire = flow.size_bytes - (packets - 1) * self.mtu + self.hdr_bytes
        at_nvs = t + up.delay_ps  # store and forward: the last packet leaves the NVSwitch once it has
        # arrived and the packet before it has left; a shorter last packet waits for that one when
        # nothing else shares the ports (measured: a lone 262 KB flow 857.7 ns, 855.2 without the
        # wait); with another flow's ACKs on them (a ring step) it does not (890.4 ns, 892.6 with it)
        if packets > 1 and not (acks.get(up, set()) - {fid} or acks.get(down, set()) - {fid}):
            at_nvs = max(at_nvs, t - _tx_ps(last_wire, up.rate_bps) + up.delay_ps
                         + _tx_ps(self.mtu + self.hdr_bytes, down.rate_bps))
        t_recv = at_nvs + _tx_ps(last_wire, down.rate_bps) + down.delay_ps
        self.start_ps[fid] = st.start_ps
        self.ack_ports[fid] = st.ack_ports
        self.net.nodes[flow.src].bytes_sent += flow.size_bytes  # all on the wire now (packet mode counts
        # as it sends; a run stopped mid-flow counts nothing of a fluid flow before this)
        self._post(t_recv, ("recv", fid))

    def _ack_arrival(self, fid: int, t: int) -> int:
        """When the last ACK of ``fid``, sent at ``t``, reaches its source. A flow that
        starts at ``t`` on the ACK's first port (the next ring step, started by this
        delivery) sends its first data packet before it, and that packet reaches the
        NVSwitch just ahead of the ACK; both waits are counted (5.7 ns of a 896 ns
        262 KB ring step at 2880 Gb/s)."""
        ack_up, ack_down = self.ack_ports.pop(fid)
        data_wire = self.mtu + self.hdr_bytes
        a = t
        for st in self.active.values():
            if st.start_ps == t and st.data_ports[0] is ack_up:
                a += _tx_ps(data_wire, ack_up.rate_bps)
                break
        a += _tx_ps(self.ack_bytes, ack_up.rate_bps) + ack_up.delay_ps  # at the NVSwitch
        for st in self.active.values():  # a first data packet in transmission on the last hop
            up, down = st.data_ports
            if down is ack_down:
                first_out = st.start_ps + _tx_ps(data_wire, up.rate_bps) + up.delay_ps
                busy_until = first_out + _tx_ps(data_wire, down.rate_bps)
                if first_out <= a < busy_until:
                    a = busy_until
                break
        return a + _tx_ps(self.ack_bytes, ack_down.rate_bps) + ack_down.delay_ps

    def _rates(self) -> None:
        """Max-min fair wire rates (bytes/ps) by progressive filling over the ports."""
        active = self.active
        ack_coef = self.ack_bytes / (self.ack_every * (self.mtu + self.hdr_bytes))
        users: dict = {}  # port -> [(fid, coefficient)]
        data_users: dict = {}
        for fid in sorted(active):
            st = active[fid]
            for p in st.data_ports:
                users.setdefault(p, []).append((fid, 1.0))
                data_users.setdefault(p, []).append(fid)
            for p in st.ack_ports:
                users.setdefault(p, []).append((fid, ack_coef))
        for fids in data_users.values():
            if len(fids) > 1:  # DCQCN's sharing between them is not max-min: approximate
                self.shared.update(fids)
        cap = {p: p.rate_bps / 8 / PS_PER_S for p in users}  # bytes per ps
        residual = dict(cap)
        rate = {fid: 0.0 for fid in active}
        open_ = set(active)
        while open_:
            best = None
            for p, us in users.items():
                w = sum(c for f, c in us if f in open_)
                if w > 0:
                    lvl = residual[p] / w
                    if best is None or lvl < best:
                        best = lvl
            if best is None:
                break
            for f in open_:
                rate[f] += best
            for p, us in users.items():
                residual[p] -= best * sum(c for f, c in us if f in open_)
            full = [p for p, us in users.items() if residual[p] <= 1e-9 * cap[p]
                    and any(f in open_ for f, _ in us)]
            for p in full:
                for f, _ in users[p]:
                    open_.discard(f)
        for fid, st in active.items():
            st.rate = rate[fid]

    def _reschedule(self, t: int) -> None:
        self.version += 1
        if not self.active:
            return
        self._rates()
        nxt = None
        for st in self.active.values():
            if st.rate > 0:
                done = t + max(1, int(-(-st.left_wire_bytes // st.rate)))
                if nxt is None or done < nxt:
                    nxt = done
        if nxt is not None:
            self._post(nxt, ("next", self.version))


def build_domains(net, flows, owner) -> tuple[dict, dict]:
    """``({anchor NVSwitch id: FluidDomain}, {fluid flow id: anchor id})``.

    A domain is one server: its hosts and NVSwitches, connected by NVLink links
    (a connected component of the host-NVSwitch links), anchored at its
    lowest-numbered NVSwitch. A flow is fluid when its data and its ACKs each
    cross exactly one NVSwitch of one domain (host -> NVSwitch -> host, by the ECMP
    choice its packets would make).

    Raises:
        InputError: some flow crosses an NVSwitch otherwise (its packets would share
            ports the rates assume they own), the fabric can lose packets (PFC off
            or link errors: fluid flows never lose any), or a server's nodes are in
            several LPs (``owner``: node id -> LP).
    """
    nvs_ids = set(getattr(net.topo, "nvswitches", ()) or ())
    domains: dict = {}
    fluid: dict = {}
    if not nvs_ids:
        return domains, fluid
    if net.lossy:
        raise InputError("--fluid-nvlink needs a lossless fabric (PFC on, no link errors): fluid NVLink flows "
                         "never lose packets")
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
    nodes = net.nodes
    for f in flows:
        h = nodes[f.src].flow_hash[f.flow_id]
        legs = [route_path(nodes, f.src, f.dst, h), route_path(nodes, f.dst, f.src, h)]
        crossed = {p.node.node_id for leg in legs for p in leg if p.node.node_id in nvs_ids}
        if not crossed:
            continue
        anchors = {anchor_of[find(n)] for n in crossed}
        if len(anchors) != 1 or any(len(leg) != 2 for leg in legs):
            raise InputError(f"--fluid-nvlink: flow {f.flow_id} from host {f.src} to host {f.dst} crosses an "
                             f"NVSwitch ({sorted(crossed)}) but not as host -> NVSwitch -> host inside one server; "
                             "its packets would share the NVLink ports the rates assume they own")
        anchor = anchors.pop()
        if not owner[f.src] == owner[f.dst] == owner[anchor]:
            raise InputError(f"--fluid-nvlink: hosts {f.src}, {f.dst} and NVSwitch {anchor} of one server are in "
                             "different LPs; keep each server in one LP")
        if anchor not in domains:
            domains[anchor] = FluidDomain(nodes[anchor], net)
        fluid[f.flow_id] = anchor
    return domains, fluid


def setup(net, lps, owner) -> tuple[dict, set]:
    """Opt-in fluid NVLink: ``(domains, fluid flow ids)``; gives the local senders of fluid
    flows their domain (``Host.flow_models``) and the LPs the ``EV_FLUID`` handler.

    Raises:
        InputError: not DCQCN, or link failures in the scenario (or see :func:`build_domains`).
    """
    if net.cfg.cc_mode != CC_DCQCN:
        raise InputError("--fluid-nvlink needs DCQCN (CC_MODE 1): its NVLink rates leave out HPCC's window "
                         "control, which slows overlapping TP ring steps (5.5% mean FCT error measured on a "
                         "GPT-7B layer); use --cc dcqcn or leave --fluid-nvlink off")
    if net.failures:
        raise InputError("--fluid-nvlink does not model link failures (LINK_DOWN); drop the flag or the LINK_DOWN")
    owner = owner if owner is not None else [0] * len(net.nodes)
    domains, anchor_of = build_domains(net, net.flows, owner)
    local = {nd.node_id for lp in lps for nd in lp.nodes}
    for fid in sorted(anchor_of):
        host = net.nodes[net.flows[fid].src]
        if host.node_id in local:
            if host.flow_models is None:
                host.flow_models = {}
            host.flow_models[fid] = domains[anchor_of[fid]]
    for lp in lps:
        lp.set_handler(EV_FLUID, FluidDomain.on_event)
    return domains, set(anchor_of)
