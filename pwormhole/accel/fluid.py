"""Flow-level (fluid) model of the flows inside each server's NVSwitches, in Wormhole mode
(``AccelConfig.nvlink``: by default wherever NVLink runs no end-to-end CC).

Why: a tensor-parallel ring step over NVLink lasts less than one synchronization window
(262 KB at 2880 Gb/s: 0.73 us), so fast-forward can never skip it, and those packets bound
Wormhole's events ratio (bench/RESULTS.md). A server's NVLink fabric (a domain: its GPUs and
NVSwitches) is isolated: its host-to-NVSwitch and NVSwitch-to-host ports carry only the
flows between the hosts of that server and their ACKs. Without end-to-end CC (the default
``nvlink_cc``, as NVLink hardware: line rate, link-level backpressure) those flows share the
ports max-min fairly, which this module computes instead of their packets, the way SimAI's
analytical backend treats NVLink; ``pwormhole compare`` measures it against packet mode.

Model (per domain, exact in the wire bytes of the HPCC ns-3 packet format):

* A flow ``f`` sends ``size + packets x header`` wire bytes on its two data ports
  (source host -> NVSwitch, NVSwitch -> destination host) and one ACK of
  ``ack_bytes`` per ``ack_every`` packets on its two ACK ports (the reverse ones).
* Rates are max-min fair under those port capacities (progressive filling with
  the per-port wire-byte coefficients), recomputed whenever a flow of the domain
  starts or finishes: a ring step's data and the reverse flow's ACKs share a port
  exactly as they do packet by packet.
* Packets without end-to-end CC share the ports so only in some cases (a NIC port splits
  among its flows, an NVSwitch port serves first in, first out:
  :func:`~pwormhole.accel.solvers.max_min_holds`). When a recomputation finds otherwise,
  the server hands its flows over to packets for the rest of the run (each gets its QP at
  the whole packets it sent; :meth:`FluidDomain._to_packets`). Under ``nvlink_cc="nic"``
  (rates only when asked, DCQCN only) nothing is handed over: flows sharing a port with
  other flows' data are counted in :attr:`FluidDomain.shared` as approximate.
* When the last wire byte leaves the source, the last packet reaches the
  destination after the two links' delays and its serialization at the NVSwitch
  (the destination's DAG children start then), and the ACK reaches the source
  after the same path back (the flow's completion time, as packet mode records it).

Events are plain tuples ``(t, key, EV_FLUID, domain, arg)`` with keys from the
counter of the server's lowest-numbered NVSwitch (docs/design.md invariant 2); a domain
lives in that NVSwitch's LP, and no LP assignment splits a server (``partition.grid``),
so the answer is the same on any LP count. Unlike the rest of Wormhole, these
events act mid-window (a flow's start cannot wait for a boundary) and rates are floats
(deterministic: every loop runs in a fixed order).
"""

from __future__ import annotations

from collections.abc import Callable

from ..config import NVLINK_CC_NIC
from ..engine.events import INF_PS, Handler
from ..errors import InputError
from ..net.packet import EV_MODEL
from ..units import PS_PER_S
from .config import NVLINK_FLUID, NVLINK_PACKET
from .nvlink import nvlink_flows, rates_refused
from .solvers import max_min, max_min_holds

EV_FLUID = EV_MODEL  # the event kind of the fluid model (its handler: FluidDomain.on_event)
RATE_MEMO_LAYOUTS = 4096  # port layouts kept per domain (the memo starts over when full; 0: no memo)
_PS_PER_S = PS_PER_S  # (compiled: a C integer)


def _tx_ps(size_bytes: int, rate_bps: int) -> int:
    """:func:`~pwormhole.units.serialization_ps` of one packet or ACK (compiled: C integers)."""
    return -((-size_bytes * 8 * _PS_PER_S) // rate_bps)


class FluidFlow:
    """An active fluid flow's state."""

    __slots__ = ("left_wire_bytes", "rate", "data_ports", "ack_ports", "start_ps", "wire_bytes", "ack_total_bytes",
                 "counted_bytes")

    def __init__(self, left_wire_bytes: float, data_ports: tuple, ack_ports: tuple, start_ps: int,
                 ack_total_bytes: int = 0):
        self.left_wire_bytes = left_wire_bytes  # wire bytes still to send
        self.wire_bytes = int(left_wire_bytes)  # all of them
        self.ack_total_bytes = ack_total_bytes  # its ACKs' wire bytes
        self.counted_bytes = 0  # wire bytes told to the monitors so far (FluidDomain.on_carried)
        self.rate = 0.0  # wire bytes per ps
        self.data_ports = data_ports  # (host -> NVSwitch, NVSwitch -> destination)
        self.ack_ports = ack_ports  # the same for its ACKs
        self.start_ps = start_ps


class FluidDomain:
    """The fluid flows of one server (domain).

    Args:
        nvswitch: the server's lowest-numbered NVSwitch (a
            :class:`~pwormhole.net.switch.Switch`: its heap and event key counter are used).
        net: the :class:`~pwormhole.net.build.Network`.
    """

    def __init__(self, nvswitch, net) -> None:
        self.nvs = nvswitch  # the server's lowest-numbered NVSwitch: its heap and key counter
        self.net = net
        self.flows = net.flows  # (the network's lists, read per event)
        self.nodes = net.nodes
        nic = next(p.peer.ports[p.peer_idx] for p in nvswitch.ports if not p.peer.is_switch)  # an NVLink NIC port
        self.mtu = net.cfg.packet_payload_bytes
        self.hdr_bytes = nic.hdr_bytes
        self.ack_bytes = nic.ack_bytes
        self.ack_every = max(1, -(-max(1, net.cfg.l2_ack_interval) // self.mtu))
        self.active: dict[int, FluidFlow] = {}
        self.start_ps: dict[int, int] = {}  # fid -> start time, until the flow's ACK completes it
        self.fct_start: dict[int, int] = {}  # fid -> its FCT's start, where it started to send later
        self.ack_ports: dict[int, tuple] = {}  # fid -> its ACK ports, from its last byte to its delivery
        self.last_ps = 0
        self.version = 0
        self.dirty = False  # a ("rates", 0) event is pending
        self.nic_cc = net.cfg.nvlink_cc == NVLINK_CC_NIC  # opt-in rates under DCQCN: approximate, never handed over
        self.shared: set = set()  # (nic_cc) flows that shared an NVLink port with another flow's data
        self.handed_ps: int | None = None  # when max-min stopped holding here (the server's flows run as packets)
        self.packet_fids: set = set()  # flows handed over to packets, or started after
        self.rate_memo: dict = {}  # layout of the active flows' ports -> (rates, max-min holds)
        # the monitors' hook: (port -> bytes its flows carried, t0_ps, d_ps) as the flows advance (no packets)
        self.on_carried: Callable[[dict, int, int, bool], None] | None = None

    # -- DAG / engine entry points ------------------------------------------------------
    def start(self, host, fid: int, t: int, start_ps: int) -> None:
        """Flow ``fid`` starts sending at ``t`` on ``host`` (its source), instead of a QP; its FCT
        counts from ``start_ps`` (earlier when it queued behind another flow of its connection)."""
        if self.handed_ps is not None:  # by packets
            self.packet_fids.add(fid)
            host.open_qp(fid, t, start_ps, 0)
            return
        if start_ps != t:
            self.fct_start[fid] = start_ps
        host.model_sends_until(fid, -1)  # (its last byte: _last_byte_sent)
        flow = self.flows[fid]
        h = self.net.ecmp_hash(fid)
        up = host.pick_port(flow.dst, h)  # host -> NVSwitch (the ECMP choice of its packets)
        down = up.peer.pick_port(flow.dst, h)  # NVSwitch -> destination
        ack_up = self.nodes[flow.dst].pick_port(flow.src, h)  # the ACKs may cross another NVSwitch
        ack_down = ack_up.peer.pick_port(flow.src, h)
        packets = -(-flow.size_bytes // self.mtu)
        wire = flow.size_bytes + packets * self.hdr_bytes
        self._advance(t)
        acks = -(-packets // self.ack_every) * self.ack_bytes
        self.active[fid] = FluidFlow(float(wire), (up, down), (ack_up, ack_down), t, acks)
        self.version += 1  # the rates change: a pending completion event is stale
        if not self.dirty:  # recompute once for all the flows starting at t (a ring step's 8)
            self.dirty = True
            self._post(t, ("rates", 0))

    def on_event(self, arg, t: int) -> None:
        """Handler of ``EV_FLUID``: ``("next", version)`` (the earliest last byte sent under
        the current rates), ``("rates", 0)`` (flows started at ``t``: recompute once),
        ``("recv", fid)`` (last byte delivered) or ``("ack", fid)`` (last ACK back: complete)."""
        what, x = arg
        if what == "recv":
            flow = self.flows[x]
            self.nodes[flow.dst].model_delivered(x, flow.size_bytes, t, True)  # may start the next ring step
            self._post(self._ack_arrival(x, t), ("ack", x))
        elif what == "ack":
            flow = self.flows[x]
            self.nodes[flow.src].flow_completed(x, t, self.start_ps.pop(x))
        else:  # "next" or "rates"
            if what == "next" and x != self.version:
                return  # superseded by a later start or finish
            if what == "rates":
                self.dirty = False
            self._advance(t)
            active = self.active
            done = sorted([fid for fid, st in active.items() if st.left_wire_bytes <= 0.5])
            if done:
                # the ports some flow's ACKs cross, before any of the done flows leaves (a flow's own
                # ACKs never cross its data ports: they leave and reach the other host)
                acked = {p for st in active.values() for p in st.ack_ports}
                for fid in done:
                    self._last_byte_sent(fid, t, acked)
            self._reschedule(t)

    def lead_ps(self, flow_end_ps: list) -> int:
        """The lead of an event of this domain (:class:`~pwormhole.net.dispatch.DagLead`): the least
        ``flow_end_ps[fid]`` of its flows not yet complete (an event may end any of them)."""
        best = INF_PS
        for fid in self.active:
            if flow_end_ps[fid] < best:
                best = flow_end_ps[fid]
        for fid in self.start_ps:
            if flow_end_ps[fid] < best:
                best = flow_end_ps[fid]
        return best

    def sent_bytes(self, fid: int, t: int) -> int:
        """Payload bytes of a flow on the wire by ``t`` (its size once its last byte left)."""
        size = self.flows[fid].size_bytes
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
            flow = self.flows[fid]
            up, down = st.data_ports
            self.nodes[flow.src].model_sent(self.sent_bytes(fid, t))
            self.nodes[flow.dst].model_delivered(fid, self.sent_bytes(fid, t - up.delay_ps - down.delay_ps), t, False)
        for fid in self.ack_ports:  # last byte sent, not yet delivered: one packet's flight from it
            flow = self.flows[fid]
            self.nodes[flow.dst].model_delivered(fid, flow.size_bytes, t, False)

    # -- model -------------------------------------------------------------------------
    def _post(self, t: int, arg) -> None:
        nvs = self.nvs
        nvs.heap.push(t, nvs.kbase + nvs.seq, EV_FLUID, self, arg)
        nvs.seq += 1

    def _advance(self, t: int) -> None:
        d = t - self.last_ps
        if d > 0:
            for st in self.active.values():
                st.left_wire_bytes = st.left_wire_bytes - st.rate * d
            if self.on_carried is not None:
                self._tell_monitors(self.last_ps, d)
        self.last_ps = t

    def _tell_monitors(self, t0: int, d: int) -> None:
        """The wire bytes each port carried over ``[t0, t0 + d)`` (whole bytes: a flow's data and
        ACK bytes add up to its packets' at its last byte)."""
        carried: dict = {}
        for st in self.active.values():
            sent = st.wire_bytes if st.left_wire_bytes <= 0.5 else min(st.wire_bytes, int(st.wire_bytes
                                                                                       - st.left_wire_bytes))
            b = sent - st.counted_bytes
            if b <= 0:
                continue
            acks = st.ack_total_bytes * sent // st.wire_bytes - st.ack_total_bytes * st.counted_bytes // st.wire_bytes
            st.counted_bytes = sent
            for p in st.data_ports:
                carried[p] = carried.get(p, 0) + b
            if acks:
                for p in st.ack_ports:
                    carried[p] = carried.get(p, 0) + acks
        if carried and self.on_carried is not None:
            self.on_carried(carried, t0, d, False)

    def _last_byte_sent(self, fid: int, t: int, acked: set) -> None:
        st = self.active.pop(fid)
        flow = self.flows[fid]
        up, down = st.data_ports
        packets = -(-flow.size_bytes // self.mtu)
        last_wire = flow.size_bytes - (packets - 1) * self.mtu + self.hdr_bytes
        at_nvs = t + up.delay_ps  # store and forward: the last packet leaves the NVSwitch once it has
        # arrived and the packet before it has left; a shorter last packet waits for that one when
        # nothing else shares the ports (measured: a lone 262 KB flow 857.7 ns, 855.2 without the
        # wait); with another flow's ACKs on them (a ring step) it does not (890.4 ns, 892.6 with it)
        if packets > 1 and up not in acked and down not in acked:
            at_nvs = max(at_nvs, t - _tx_ps(last_wire, up.rate_bps) + up.delay_ps
                         + _tx_ps(self.mtu + self.hdr_bytes, down.rate_bps))
        t_recv = at_nvs + _tx_ps(last_wire, down.rate_bps) + down.delay_ps
        self.start_ps[fid] = self.fct_start.pop(fid, st.start_ps)
        self.ack_ports[fid] = st.ack_ports
        src = self.nodes[flow.src]
        src.model_sent(flow.size_bytes)  # all on the wire now (packet mode counts as it sends; a run
        # stopped mid-flow counts nothing of a fluid flow before this)
        src.flow_sent(fid, t)  # (a flow queued behind it on its connection starts)
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

    def _users(self) -> tuple[dict, dict]:
        """``(port -> [fids sending data on it], port -> [(fid, ACK wire bytes per data wire byte)])``."""
        ack_coef = self.ack_bytes / (self.ack_every * (self.mtu + self.hdr_bytes))
        data_users: dict = {}
        ack_users: dict = {}
        for fid in sorted(self.active):
            st = self.active[fid]
            for p in st.data_ports:
                data_users.setdefault(p, []).append(fid)
            for p in st.ack_ports:
                ack_users.setdefault(p, []).append((fid, ack_coef))
        return data_users, ack_users

    def _rates(self) -> bool:
        """Set max-min fair wire rates (bytes/ps); False when packets without end-to-end CC
        would not share the ports so (see :func:`max_min_holds`).

        Both depend only on the ports of the active flows in flow id order (no size, no
        byte left), so they are kept per such layout (:attr:`rate_memo`): a ring step
        repeats its predecessor's layout and reuses its rates, bit for bit."""
        active = self.active
        fids = sorted(active)
        layout = tuple([active[f].data_ports + active[f].ack_ports for f in fids])
        if self.nic_cc:
            for ps in self._users()[0].values():
                if len(ps) > 1:  # DCQCN's sharing between them is not max-min: approximate
                    self.shared.update(ps)
        known = self.rate_memo.get(layout) if RATE_MEMO_LAYOUTS else None
        if known is None:
            known = self._solve(fids)
            if len(self.rate_memo) >= RATE_MEMO_LAYOUTS:
                self.rate_memo.clear()
            self.rate_memo[layout] = known
        rates, holds = known
        for fid, r in zip(fids, rates):
            self.active[fid].rate = r
        return holds

    def _solve(self, fids: list) -> tuple[tuple, bool]:
        """``(rates in the order of fids, whether max-min holds)`` of the active flows."""
        data_users, ack_users = self._users()
        rate = max_min(data_users, ack_users, self.active)
        rates = tuple(rate[f] for f in fids)
        if self.nic_cc:
            return rates, True
        first_hop = max_min({p: fs for p, fs in data_users.items() if not p.node.is_switch},
                            {p: acks for p, acks in ack_users.items() if not p.node.is_switch}, self.active)
        return rates, max_min_holds(data_users, ack_users, first_hop, self.active)

    def _to_packets(self, t: int) -> None:
        """From ``t`` on, this server's flows run as packets: each active flow gets its QP at
        the bytes it sent so far (whole packets, acknowledged and received), flows that sent
        their last byte finish as planned, and later flows start as QPs."""
        self.handed_ps = t
        nodes = self.nodes
        for fid in sorted(self.active):
            done = self.sent_bytes(fid, t) // self.mtu * self.mtu
            st = self.active.pop(fid)
            flow = self.flows[fid]
            nodes[flow.dst].advance_rx(fid, done, t, 0)
            nodes[flow.src].open_qp(fid, t, self.fct_start.pop(fid, st.start_ps), done)
            self.packet_fids.add(fid)
        self.version += 1

    def _reschedule(self, t: int) -> None:
        self.version += 1
        if not self.active:
            return
        if not self._rates():
            self._to_packets(t)
            return
        nxt = None
        for st in self.active.values():
            rate = st.rate  # (compiled: Python floats here, so that // rounds as in pure Python)
            if rate > 0:
                left_wire_bytes = st.left_wire_bytes
                done = t + max(1, int(-(-left_wire_bytes // rate)))
                if nxt is None or done < nxt:
                    nxt = done
        if nxt is not None:
            self._post(nxt, ("next", self.version))


COMPILED = not __file__.endswith(".py")  # this module was built by Cython


class FluidEvents(Handler):
    """The ``EV_FLUID`` handler of the compiled engine: the event loop calls :meth:`FluidDomain.on_event`
    in C (the pure engine calls the method itself: an object would add a Python call per event)."""

    __slots__ = ()

    def handle(self, target, arg, t_ps: int) -> None:
        if type(target) is FluidDomain:
            dom = target
            dom.on_event(arg, t_ps)
        else:  # another model's event (EV_MODEL is shared): its own on_event
            target.on_event(arg, t_ps)


def setup(net, lps, wanted: str) -> tuple[dict, set, set, str | None]:
    """How this run simulates its NVLink flows (``wanted``: :data:`NVLINK_CHOICES`).

    Returns ``(domains, fluid flow ids, NVLink flow ids, why not by rates)``: by rates, the
    domains ``{anchor NVSwitch id: FluidDomain}`` and the flows they carry (their local senders
    get their domain as ``Host.flow_models``, the LPs the ``EV_FLUID`` handler); otherwise no
    domain, and the reason (None when not asked or no NVLink flow).

    Raises:
        InputError: ``wanted`` is ``fluid`` and the rates do not hold here.
    """
    inside, odd = nvlink_flows(net)
    nvlink_fids = set(inside) | set(odd)
    if wanted == NVLINK_PACKET or not nvlink_fids:
        return {}, set(), nvlink_fids, None
    why = rates_refused(net, odd, wanted == NVLINK_FLUID)
    if why is not None:
        if wanted == NVLINK_FLUID:
            raise InputError(f"--nvlink fluid: {why}; use --nvlink packet or auto")
        return {}, set(), nvlink_fids, why
    domains: dict = {}
    local = {nd.node_id for lp in lps for nd in lp.nodes}
    for fid in sorted(inside):
        anchor = inside[fid]
        if anchor not in domains:
            domains[anchor] = FluidDomain(net.nodes[anchor], net)
        if net.flows[fid].src in local:
            net.set_flow_model(fid, domains[anchor])
    for lp in lps:
        # (the pure method through __dict__: compiled, FluidDomain.on_event would name the C function)
        lp.set_handler(EV_FLUID, FluidEvents(None) if COMPILED else FluidDomain.__dict__["on_event"])
    return domains, set(inside), nvlink_fids, None
