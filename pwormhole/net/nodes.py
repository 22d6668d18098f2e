"""Hosts (RDMA NICs with queue pairs), switches (shared buffer, ECN, PFC) and ports.

The model follows the HPCC ns-3 simulator (alibaba-edu/
High-Precision-Congestion-Control, ``simulation/src/point-to-point/model``):

* ``qbb-net-device.cc``: a port serializes one packet at a time at its line
  rate; the packet reaches the peer after serialization plus propagation
  (store and forward). Queue 0 is strict priority, the others are served
  round robin, and a queue paused by PFC is skipped.
* ``rdma-hw.cc``: one queue pair (QP) per flow; the NIC serves control
  packets (ACK/NACK) first, then its QPs round robin, each paced at its rate
  (``nextAvail``) and bounded by its window; cumulative ACKs every
  ``L2_ACK_INTERVAL`` bytes or chunk; NACK and go-back-N on a gap.
* ``switch-node.cc`` / ``switch-mmu.cc``: ECMP on a per-switch hash of the
  5-tuple; ingress admission with reserve, dynamic shared threshold
  (``(buffer - headroom - reserve - shared_used) >> shift``) and headroom;
  PFC pause when a priority's ingress enters headroom or its shared use
  reaches the threshold, resume when it drains ``resume_offset`` below it;
  RED/ECN marking at dequeue from the egress bytes of the queue; INT push at
  dequeue under HPCC.

Handlers, and how soon their events lead to others (:class:`DagLead`): nothing here knows about
windows, ranks or acceleration.
Events go into ``node.heap`` (an :class:`~pwormhole.events.EventQueue`) or, for a node served by another heap, into the
outbox given for it (the port's ``remote``; a host's ``remote_boxes``), like
ns-3's remote point-to-point channel. Whoever runs the nodes wires both with
``Node.attach``. Each node draws its event keys from its own counter
(``kbase + seq``) so that ties break the same way however the nodes are split
(docs/design.md invariant 2).
"""

from __future__ import annotations

import random
from array import array
from collections.abc import Mapping, Sequence
from typing import NamedTuple

from ..events import INF_PS, EventFilter, EventQueue, Handler, Lead
from . import cc
from .packet import (
    EV_ARRIVE_HOST,
    EV_ARRIVE_SWITCH,
    EV_FLOW_START,
    EV_MODEL,
    EV_NIC_WAKE,
    EV_NOTIFY,
    EV_OP_DONE,
    EV_OP_START,
    EV_TIMER,
    EV_TX_DONE,
    EV_WIRE,
    INT_BYTES_BY_CC,
    N_EVENT_KINDS,
    N_PRIORITIES,
    PFC_FRAME_BYTES,
    T_ACK,
    T_DATA,
    T_NACK,
    T_PFC,
    TM_RTO,
    Fifo,
    new_packet,
    overhead_bytes,
)

PS_BITS = 8_000_000_000_000  # 8 bits/byte x 1e12 ps/s: serialization = ceil(bytes * PS_BITS / rate)
PS_BITS_INT = PS_BITS  # the same as a Python int: compiled, PS_BITS is C 64-bit (packets only, < 2^63)
KEY_NODE_SHIFT = 40
RESERVE_BYTES = 4 * 1024  # SwitchMmu::reserve
RESUME_OFFSET_BYTES = 3 * 1024  # SwitchMmu::resume_offset
PFC_ALPHA_SHIFT = 3  # alpha = 1/8 (third.cc)
# ECMP: next hop = bits 40.. of (flow hash XOR node salt) x this odd constant, mod the
# number of next hops. Python's hash((h, salt)) is not a fit: for two salts its low bits
# differ by a near-constant offset, so a flow's ToR choice fixed its aggregation choice
# (polarization: 1 of 4 core uplinks per aggregation switch with the same salt, 85% used
# with different salts on HPCC's fat.txt; tests/test_faults.py pins the spread).
ECMP_MIX = 0x9E3779B97F4A7C15
LOW32 = 0xFFFFFFFF
MIX_HI, MIX_LO = ECMP_MIX >> 32, ECMP_MIX & LOW32
# fields of a receiver's state (``Host.rx[fid]``, a list: the per-packet path indexes it by number)
RX_EXPECTED, RX_MILESTONE, RX_NACK_TIMER_PS, RX_LAST_NACK, RX_SIZE = range(5)


def ecmp_index(h: int, salt: int, n: int) -> int:
    """The next hop among ``n``: ``(((h ^ salt) * ECMP_MIX) >> 40) % n`` for ``h``, ``salt`` < 2^63,
    by 32-bit halves (every partial result < 2^64: compiled, C unsigned arithmetic, no Python int)."""
    x = h ^ salt
    xh = x >> 32
    xl = x & LOW32
    lo = xl * MIX_LO
    mid1 = xh * MIX_LO
    mid2 = xl * MIX_HI
    r = (lo >> 32) + (mid1 & LOW32) + (mid2 & LOW32)
    p_lo = (lo & LOW32) + ((r & LOW32) << 32)  # x * ECMP_MIX = p_hi * 2^64 + p_lo
    p_hi = xh * MIX_HI + (mid1 >> 32) + (mid2 >> 32) + (r >> 32)
    return (((p_hi % n) << 24) + (p_lo >> 40)) % n


def counters():
    """One int64 counter per priority, all 0."""
    return array("q", bytes(8 * N_PRIORITIES))


def node_rng(seed: int, node_id: int) -> random.Random:
    """The per-node random stream, seeded from ``(seed, node_id)`` (docs/design.md invariant 7)."""
    return random.Random(seed * 1_000_003 + node_id * 7_919 + 1)


class Port:
    """One direction of a link, owned by ``node``: queues, serializer, PFC state.

    Attributes (units in names): ``rate_bps``, ``delay_ps``, ``peer`` (node
    object at the far end), ``peer_idx`` (this link's port index at the peer),
    ``arrive_kind`` (event kind of an arrival at the peer), ``remote`` (outbox
    list when the peer is served by another heap, else None), ``paused`` (per priority:
    paused by the peer's PFC), ``error_rate`` (per-packet loss on this link),
    ``tx_bytes`` (bytes started on the wire so far: the per-link byte counter),
    ``up`` (False once the link failed: the port is then held busy for good),
    ``wire`` (packets on the link to a peer of the same heap, in arrival order, each with its
    ``arrive_ps`` and ``arrive_key``; only the first is an event in the heap: see :meth:`on_wire`).
    """

    __slots__ = (
        "node", "idx", "rate_bps", "delay_ps", "peer", "peer_idx", "arrive_kind", "remote", "heap",
        "busy", "paused", "error_rate", "tx_bytes", "qbytes", "up", "wire",
    )

    def __init__(self, node, idx: int, rate_bps: int, delay_ps: int, error_rate: float):
        self.node = node
        self.idx = idx
        self.rate_bps = rate_bps
        self.delay_ps = delay_ps
        self.peer: Node = None  # type: ignore[assignment]  # None until Network._wire, right after
        self.peer_idx = -1
        self.arrive_kind = 0
        self.remote: list[tuple] | None = None
        # None until Node.attach, which runs before any event: the per-packet path pushes unchecked
        self.heap: EventQueue = None  # type: ignore[assignment]
        self.busy = False
        self.paused = [False] * N_PRIORITIES
        self.error_rate = error_rate
        self.tx_bytes = 0  # cumulative bytes started on the wire (INT txBytes)
        self.qbytes = 0  # bytes waiting in this port's queues
        self.up = True
        self.wire = Fifo()

    def transmit(self, pkt, t: int) -> None:
        """Start serializing ``pkt`` at ``t``: schedule tx-done here and the arrival at the peer."""
        self.busy = True
        size = pkt.size_bytes
        tx_ps = -((-size * PS_BITS) // self.rate_bps)
        self.tx_bytes += size
        node = self.node
        k = node.kbase + node.seq
        node.seq += 2
        self.heap.push(t + tx_ps, k, EV_TX_DONE, self, None)
        if self.error_rate and node.rng.random() < self.error_rate:
            node.lost += 1
            return
        pkt.inport = self.peer_idx
        arrive_ps = t + tx_ps + self.delay_ps
        if self.remote is None:
            # arrivals on one link come in the order sent (a port serializes one packet at a time)
            wire = self.wire
            if not wire.size():
                self.heap.push(arrive_ps, k + 1, EV_WIRE, self, None)
            pkt.arrive_ps = arrive_ps
            pkt.arrive_key = k + 1
            wire.push(pkt)
        else:
            self.remote.append((arrive_ps, k + 1, self.arrive_kind, self.peer, pkt))

    def on_wire(self, _arg, t: int) -> None:
        """The first packet on the wire reaches the peer; the next one's arrival becomes the event.

        Each packet's arrival keeps the time and key it was sent with, so events run in the
        same order as with one heap event per packet; the heap holds one per busy link."""
        wire = self.wire
        pkt = wire.pop()
        if wire.size():
            nxt = wire.first()
            self.heap.push(nxt.arrive_ps, nxt.arrive_key, EV_WIRE, self, None)
        self.peer.on_arrive(pkt, t)

    def on_tx_done(self, _arg, t: int) -> None:
        self.busy = False
        self.kick(t)

    def kick(self, t: int) -> None:  # pragma: no cover - overridden
        raise AssertionError("abstract")

    def pause(self, pg: int, on: bool, t: int) -> None:
        """A PFC frame from the peer pauses (``on``) or resumes priority ``pg`` here."""
        self.paused[pg] = on
        node = self.node
        node.pfc_log.append((t, node.node_id, 1 if node.is_switch else 0, self.idx + 1, 1 if on else 0))
        if on:
            node.pfc_pauses_rx += 1
        elif not self.busy:
            self.kick(t)

    def hold(self) -> bool:
        """Hold the port: it sends nothing (``kick`` returns, arrivals queue up) until
        :meth:`release`. Returns the busy state to release it with."""
        was = self.busy
        self.busy = True
        return was

    def release(self, was_busy: bool) -> None:
        """End a :meth:`hold` (the caller kicks the released ports once all are released)."""
        self.busy = was_busy

    def queued(self):
        """The packets waiting in this port's queues."""
        return ()

    def skip_time(self, t0_ps: int, d_ps: int) -> None:
        """Its traffic was fast-forwarded from ``t0_ps`` by ``d_ps``: move its pending deadlines."""

    def take_down(self, t: int) -> int:
        """The link failed at ``t``: this port never sends again (held busy; its
        tx-done event is removed by the caller), holds no pause, and drops what
        is queued. Returns the packets dropped."""
        self.up = False
        self.busy = True
        self.paused = [False] * N_PRIORITIES
        return 0


class SwitchPort(Port):
    """An egress port of a switch: 8 priority queues and the MMU counters of its link."""

    __slots__ = (
        "qs", "used_qs", "used_mask", "rr", "in_bytes", "hdrm_bytes", "eg_bytes", "pfc_sent", "headroom_bytes",
        "pfc_shift", "kmin_bytes", "kmax_bytes", "pmax", "mon",
    )

    def __init__(self, node, idx, rate_bps, delay_ps, error_rate):
        super().__init__(node, idx, rate_bps, delay_ps, error_rate)
        self.qs = [Fifo() for _ in range(N_PRIORITIES)]
        self.used_qs = []  # data priorities that ever held a packet, ascending
        self.used_mask = 0  # the same as bits (bit qi: qi is in used_qs)
        self.rr = 0
        # per priority, int64 arrays (compiled: C arrays, no Python int per update)
        self.in_bytes = counters()  # ingress accounting of packets that came in on this port
        self.hdrm_bytes = counters()
        self.eg_bytes = counters()  # egress bytes queued here per priority (ECN)
        self.pfc_sent = [False] * N_PRIORITIES  # we paused the peer on this priority
        self.headroom_bytes = 0
        self.pfc_shift = PFC_ALPHA_SHIFT
        self.kmin_bytes = 0
        self.kmax_bytes = 0
        self.pmax = 0.0
        self.mon = None  # a queue monitor (pwormhole.monitor): ``mon.changed(port, t)`` after eg_bytes changes

    def kick(self, t: int) -> None:
        """Dequeue the next packet (queue 0 first, then round robin) and transmit it."""
        if self.busy:
            return
        qs = self.qs
        q = qs[0]
        if q.size():
            pkt = q.pop()
            self.qbytes -= pkt.size_bytes
            self.transmit(pkt, t)
            return
        used = self.used_qs
        n = len(used)
        paused = self.paused
        for i in range(n):
            j = (self.rr + i) % n
            qi = used[j]
            q = qs[qi]
            if q.size() and not paused[qi]:
                self.rr = j + 1
                pkt = q.pop()
                break
        else:
            return
        size = pkt.size_bytes
        self.qbytes -= size
        sw = self.node
        inp = sw.ports[pkt.inport]
        if sw.pfc:
            # ingress release (SwitchMmu::RemoveFromIngressAdmission)
            from_hdrm = inp.hdrm_bytes[qi]
            if from_hdrm > size:
                from_hdrm = size
            rest = size - from_hdrm
            shared = inp.in_bytes[qi] - RESERVE_BYTES
            if shared > 0:
                sw.shared_used -= rest if rest < shared else shared
            inp.hdrm_bytes[qi] -= from_hdrm
            inp.in_bytes[qi] -= rest
        sw.used_bytes -= size
        eg = self.eg_bytes[qi] - size
        self.eg_bytes[qi] = eg
        if self.mon is not None:
            self.mon.changed(self, t)
        if pkt.kind == T_DATA:
            if sw.ecn and eg > self.kmin_bytes:
                if eg > self.kmax_bytes or (sw.rng.random()
                                            < self.pmax * (eg - self.kmin_bytes) / (self.kmax_bytes - self.kmin_bytes)):
                    if not pkt.ecn:
                        pkt.ecn = True
                        sw.ecn_marks += 1
            hops = pkt.int_hops
            if hops is not None:
                hops.append((t, self.tx_bytes, self.qbytes, self.rate_bps))
        self.transmit(pkt, t)
        if inp.pfc_sent[qi]:
            sw.check_resume(inp, qi, t)

    def queued(self):
        return (pkt for q in self.qs for pkt in q)

    def take_down(self, t: int) -> int:
        """As :meth:`Port.take_down`; each queued packet releases its buffer as a
        dequeue does, so an ingress port that paused its peer resumes it."""
        super().take_down(t)
        sw = self.node
        lost = 0
        for qi, q in enumerate(self.qs):
            while q.size():
                pkt = q.pop()
                lost += 1
                size = pkt.size_bytes
                self.qbytes -= size
                if not qi:
                    continue  # control queue: no buffer accounting (Switch.on_arrive)
                inp = sw.ports[pkt.inport]
                if sw.pfc:  # the ingress release of kick()
                    from_hdrm = min(inp.hdrm_bytes[qi], size)
                    rest = size - from_hdrm
                    shared = inp.in_bytes[qi] - RESERVE_BYTES
                    if shared > 0:
                        sw.shared_used -= min(rest, shared)
                    inp.hdrm_bytes[qi] -= from_hdrm
                    inp.in_bytes[qi] -= rest
                sw.used_bytes -= size
                self.eg_bytes[qi] -= size
                if self.mon is not None:
                    self.mon.changed(self, t)
                if inp.pfc_sent[qi]:
                    sw.check_resume(inp, qi, t)
        for q in self.qs:
            q.close()  # frames queued here later are discarded
        sw.lost += lost
        return lost


class DropPort(SwitchPort):
    """Where a switch sends packets for a destination it no longer reaches
    (after a link failure): each is dropped (counted in ``lost``) as it is
    dequeued, its buffer released as if sent."""

    __slots__ = ()

    def __init__(self, node):
        super().__init__(node, -1, 1, 0, 0.0)

    def transmit(self, pkt, t: int) -> None:
        self.node.lost += 1


class RouteTable(dict):
    """A node's routes once a link has failed: a destination it no longer
    reaches maps to ``drop`` (a list holding a port that discards)."""

    __slots__ = ("drop",)

    def __init__(self, routes, drop):
        super().__init__(routes)
        self.drop = drop

    def __missing__(self, dst):
        return self.drop


class HostPort(Port):
    """A NIC port: a control queue (ACK/NACK, served first) and round robin over QPs."""

    __slots__ = ("ctrl", "qps", "rr", "wake_ps", "has_win", "cc_off", "hdr_bytes", "ack_bytes")

    def __init__(self, node, idx, rate_bps, delay_ps, error_rate):
        super().__init__(node, idx, rate_bps, delay_ps, error_rate)
        self.ctrl = Fifo()
        self.qps = []
        self.rr = 0
        self.wake_ps = -1
        self.has_win = True
        self.cc_off = False  # its QPs run no end-to-end CC (NVLink: line rate, PFC backpressure only)
        self.hdr_bytes = node.hdr_bytes  # header of its data packets
        self.ack_bytes = node.ack_bytes  # size of the ACK/NACKs it sends

    def kick(self, t: int) -> None:
        """Send a control packet, else the next eligible QP's next data packet."""
        if self.busy:
            return
        ctrl = self.ctrl
        if ctrl.size():
            self.transmit(ctrl.pop(), t)
            return
        qps = self.qps
        n = len(qps)
        if not n:
            return
        paused = self.paused
        has_win = self.has_win
        wait = -1
        start = self.rr
        for i in range(n):
            j = (start + i) % n
            qp = qps[j]
            nxt = qp.snd_nxt
            if nxt >= qp.size or paused[qp.pg]:
                continue
            if has_win and nxt - qp.snd_una >= qp.cur_win:
                continue
            if qp.next_avail_ps > t:
                if wait < 0 or qp.next_avail_ps < wait:
                    wait = qp.next_avail_ps
                continue
            self.rr = j + 1
            self.transmit(qp.next_packet(t), t)
            return
        if wait >= 0 and (self.wake_ps <= t or wait < self.wake_ps):
            self.wake_ps = wait
            node = self.node
            self.heap.push(wait, node.kbase + node.seq, EV_NIC_WAKE, self, None)
            node.seq += 1

    def on_wake(self, _arg, t: int) -> None:
        if t == self.wake_ps:
            self.wake_ps = -1
        if not self.busy:
            self.kick(t)

    def queued(self):
        return iter(self.ctrl)

    def skip_time(self, t0_ps: int, d_ps: int) -> None:
        if self.wake_ps >= t0_ps:
            self.wake_ps += d_ps

    def take_down(self, t: int) -> int:
        """As :meth:`Port.take_down`: queued ACK/NACKs are lost, later ones discarded
        (the host moves or stops its QPs: :meth:`Host.reroute`)."""
        super().take_down(t)
        lost = self.ctrl.size()
        self.ctrl.close()
        self.wake_ps = -1
        self.node.lost += lost
        return lost


def drop_host_port(node) -> HostPort:
    """The port a host "sends" by toward a destination it no longer reaches: down, so it discards."""
    port = HostPort(node, -1, 1, 0, 0.0)
    port.take_down(0)
    return port


class QPSnapshot(NamedTuple):
    """A sender's state at a moment, as a flow-level observer reads it (:meth:`SendQP.snapshot`)."""

    cc_rate_bps: int  # DCQCN: its rate; HPCC: its window over its base RTT (its rate without a window)
    una_bytes: int  # bytes acknowledged
    una_ps: int  # when the last ACK advanced una_bytes
    sent_bytes: int  # highest byte sent (after a go-back-N, packets up to it are still in the network)
    rate_change_ps: int  # DCQCN: when its rate next changes without a new CNP (-1: none; HPCC: -1)
    cnps: int  # CNPs received so far
    rate_bps: int  # its pacing rate


class SendQP:
    """Sender side of one flow (``RdmaQueuePair``): sequence state, rate, CC state."""

    __slots__ = (
        "flow", "fid", "size", "pg", "dst", "hash", "port", "host", "snd_nxt", "snd_una", "max_sent",
        "rate_bps", "max_rate_bps", "next_avail_ps", "last_pkt_bytes", "bdp_bytes", "win_bytes", "cur_win", "var_win",
        "min_win_bytes",
        "base_rtt_ps", "start_ps", "done", "hdr_bytes", "mtu", "rate_bound",
        "dcqcn", "hpcc", "timely", "dctcp",  # the CC it runs (none: at line rate)
        # DCQCN
        "alpha", "target_rate_bps", "alpha_cnp", "decrease_cnp", "first_cnp", "rp_stage", "rp_gen", "rp_due_ps",
        "cnps_rx",
        # HPCC
        "last_update_seq", "hops", "u", "cur_rate_bps", "inc_stage",
        # TIMELY (also last_update_seq, cur_rate_bps, inc_stage)
        "last_rtt_ps", "rtt_diff_ps",
        # DCTCP (also alpha, last_update_seq)
        "ecn_cnt", "batch_pkts", "cwr", "high_seq",
        # loss recovery
        "rto_armed", "rto_una",
        # time (ps) snd_una last advanced (a flow's goodput is timed by these)
        "una_ps",
    )

    def __init__(self, flow, host, port, line_rate_bps: int, win_bytes: int, base_rtt_ps: int, cfg, hdr_bytes: int):
        self.flow = flow
        self.fid = flow.flow_id
        self.size = flow.size_bytes
        self.pg = flow.pg
        self.dst = flow.dst
        self.hash = host.flow_hash[flow.flow_id]
        self.port = port
        self.host = host
        self.snd_nxt = 0
        self.snd_una = 0
        self.una_ps = 0
        self.max_sent = 0
        self.rate_bps = line_rate_bps
        self.max_rate_bps = line_rate_bps
        self.next_avail_ps = 0
        self.last_pkt_bytes = 0
        self.bdp_bytes = max(1, win_bytes)
        self.dcqcn = host.dcqcn and not port.cc_off
        self.hpcc = host.hpcc and not port.cc_off
        self.timely = host.timely and not port.cc_off
        self.dctcp = host.dctcp and not port.cc_off
        self.win_bytes = win_bytes if cfg.has_win and not port.cc_off else 0
        self.min_win_bytes = cc.min_window_bytes(cfg)  # liveness floor under coalesced ACKs
        self.cur_win = max(self.win_bytes, self.min_win_bytes) if self.win_bytes else (1 << 62)
        self.var_win = cfg.var_win
        self.base_rtt_ps = base_rtt_ps
        self.start_ps = flow.start_ps
        self.done = False
        self.hdr_bytes = hdr_bytes
        self.mtu = cfg.packet_payload_bytes
        self.rate_bound = cfg.rate_bound
        self.alpha = 1.0
        self.target_rate_bps = line_rate_bps
        self.alpha_cnp = False
        self.decrease_cnp = False
        self.first_cnp = True
        self.rp_stage = 0
        self.rp_gen = 0
        self.rp_due_ps = -1  # when the pending DCQCN rate-increase (RP) timer fires (-1: none)
        self.cnps_rx = 0  # CNPs this QP received
        self.last_update_seq = 0
        self.hops: list[tuple[int, int, int, int]] = []  # HPCC INT records (ts_ps, tx_bytes, qlen_bytes, rate_bps)
        self.u = 1.0
        self.cur_rate_bps = line_rate_bps
        self.inc_stage = 0
        self.last_rtt_ps = 0  # TIMELY: the RTT of the last full update
        self.rtt_diff_ps = 0.0  # TIMELY: EWMA of RTT differences
        self.ecn_cnt = 0  # DCTCP: marked ACKs in this batch
        self.batch_pkts = 0  # DCTCP: packets of this batch (the alpha update's denominator)
        self.cwr = False  # DCTCP: in congestion window reduction (one cut per window)
        self.high_seq = 0  # DCTCP: CWR ends when an ACK passes it
        self.rto_armed = False
        self.rto_una = -1

    def use_port(self, port) -> None:
        """Send by ``port`` from now on under the CC it runs, from its line rate, as a new QP would
        (a reroute between an NVLink and a NIC port)."""
        self.port = port
        self.rate_bps = self.max_rate_bps = self.target_rate_bps = self.cur_rate_bps = port.rate_bps
        self.dcqcn = self.host.dcqcn and not port.cc_off
        self.hpcc = self.host.hpcc and not port.cc_off
        self.timely = self.host.timely and not port.cc_off
        self.dctcp = self.host.dctcp and not port.cc_off
        self.hdr_bytes = port.hdr_bytes
        self.win_bytes = self.bdp_bytes if self.host.cfg.has_win and not port.cc_off else 0
        self.cur_win = max(self.win_bytes, self.min_win_bytes) if self.win_bytes else (1 << 62)

    def snapshot(self, t: int) -> QPSnapshot:
        """Its state at ``t`` (see :class:`QPSnapshot`)."""
        due = -1
        if self.hpcc and self.win_bytes:
            rate = self.cur_win * PS_BITS_INT // max(1, self.base_rtt_ps)  # windows can pass 2^63 / PS_BITS
        else:
            rate = self.rate_bps
            if self.dcqcn:
                due = cc.dcqcn_rate_change_ps(self, t)
            elif (self.timely or self.dctcp) and self.rate_bps < self.max_rate_bps:
                due = t  # below its line rate, it changes its rate every RTT
        sent = self.max_sent if self.max_sent > self.snd_nxt else self.snd_nxt
        return QPSnapshot(rate, self.snd_una, self.una_ps, sent, due, self.cnps_rx, self.rate_bps)

    def advance(self, b: int, t0_ps: int, d_ps: int, alpha_decay: float | None = None, hop_tx_bytes=None) -> None:
        """Fast-forward: ``b`` more bytes sent and acknowledged, and ``d_ps`` of time from
        ``t0_ps`` passed without packets. Every field counting bytes or holding a deadline
        moves here (a new one must too): sequence numbers, pacing, the RTO and HPCC marks,
        the DCQCN timer (:func:`cc.dcqcn_timer_after_skip`); ``alpha_decay`` multiplies a
        DCQCN alpha that had a CNP; ``hop_tx_bytes`` (bytes each INT hop sent in the skip)
        shifts HPCC's INT records (:func:`cc.hpcc_shift_int`)."""
        self.snd_nxt += b
        self.snd_una += b
        self.max_sent += b
        self.host.bytes_sent += b
        if self.rto_una >= 0:
            self.rto_una += b
        if self.last_update_seq > 0:
            self.last_update_seq += b
        if self.dctcp:
            cc.dctcp_after_skip(self, b)
        if self.next_avail_ps >= t0_ps:
            self.next_avail_ps += d_ps
        if self.rp_due_ps >= t0_ps:
            self.rp_due_ps = cc.dcqcn_timer_after_skip(self.rp_due_ps, t0_ps + d_ps, self.host.cfg.rp_timer_ps)
        if alpha_decay is not None and not self.first_cnp:
            self.alpha *= alpha_decay
        if self.hops:
            self.hops = cc.hpcc_shift_int(self.hops, d_ps, hop_tx_bytes)

    def next_packet(self, t: int):
        """Build the next data packet and advance ``snd_nxt`` and the pacing deadline."""
        seq = self.snd_nxt
        pay = self.size - seq
        if pay > self.mtu:
            pay = self.mtu
        wire = pay + self.hdr_bytes
        nxt = seq + pay
        self.snd_nxt = nxt
        host = self.host
        if nxt > self.max_sent:
            host.bytes_sent += nxt - self.max_sent
            self.max_sent = nxt
        rate = self.rate_bps if self.rate_bound else self.max_rate_bps
        self.next_avail_ps = t + -((-wire * PS_BITS) // rate)
        self.last_pkt_bytes = wire
        if host.lossy and not self.rto_armed:
            self.rto_armed = True
            self.rto_una = self.snd_una
            host.timer(t + host.rto_ps, self, TM_RTO, 0)
        return new_packet(T_DATA, self.fid, seq, wire, pay, self.pg, self.dst, self.hash, False,
                          [] if self.hpcc else None, 0, t if self.timely else 0, host.node_id)


QLEN_BUCKET_BYTES = 1000  # HPCC ns-3's QlenDistribution: a sample's bucket is its queue bytes / 1000


class QueueWatch:
    """The queue samples of one switch port (pwormhole.monitor), its ``mon`` while watched: a
    sample every ``interval_ps`` from ``start_ps`` (indexes 0..``last_k``) sees the egress bytes
    left by everything before it; told of each change, this counts the samples since the last."""

    __slots__ = ("qlen", "since", "hist", "start_ps", "interval_ps", "last_k")

    def __init__(self, start_ps: int, interval_ps: int, last_k: int):
        self.qlen = 0  # egress bytes queued now
        self.since = -1  # since when (ps)
        self.hist: dict[int, int] = {}  # KB bucket -> samples, of the samples with a queue
        self.start_ps = start_ps
        self.interval_ps = interval_ps
        self.last_k = last_k

    def changed(self, port, t: int) -> None:
        """The port's egress bytes changed at ``t``: the samples in ``(since, t]`` saw the length before."""
        q = self.qlen
        if q:
            self.count(q, t)
        q = 0
        for i in range(N_PRIORITIES):
            q += port.eg_bytes[i]
        self.qlen = q
        self.since = t

    def count(self, q: int, t: int) -> None:
        """The samples in ``(since, t]`` saw ``q`` bytes."""
        start = self.start_ps
        iv = self.interval_ps
        hi = (t - start) // iv
        lo = (self.since - start) // iv + 1
        if hi >= lo:
            if lo < 0:
                lo = 0
            if hi > self.last_k:
                hi = self.last_k
            if hi >= lo:
                b = q // QLEN_BUCKET_BYTES
                self.hist[b] = self.hist.get(b, 0) + hi - lo + 1


class Node:
    """Common state of hosts and switches: ports, event key counter, RNG, counters."""

    is_switch = False

    def __init__(self, node_id: int, seed: int):
        self.node_id = node_id
        self.kbase = node_id << KEY_NODE_SHIFT
        self.seq = 0
        self.rng = node_rng(seed, node_id)
        self.salt = self.rng.getrandbits(62)  # ECMP hash salt, per node so tiers do not polarize
        # (a Switch has SwitchPorts, a Host HostPorts: the subclasses say which)
        self.ports: Sequence[Port] = []
        self.routes: Mapping[int, Sequence[Port]] = {}  # dst node id -> list of egress ports (equal-cost next hops)
        self.sole_port: Port | None = None  # a host with one port: every destination leaves by it (routes unused)
        # None until attach (Network.fail_link tells attached nodes by it); events run only on attached nodes
        self.heap: EventQueue = None  # type: ignore[assignment]
        self.pfc_log: list[tuple] = []
        self.pfc_pauses_rx = 0
        self.lost = 0  # packets lost to link errors when sent from here
        self.drops = 0  # packets dropped by buffer admission here

    def attach(self, heap: EventQueue, remote_boxes: dict, pfc_log: list, finished: list, op_log: list,
               flow_start_log: list) -> None:
        """Where this node puts its events and records, each shared by the nodes of one heap:
        ``heap`` (pending events), ``remote_boxes`` (node id -> outbox of the events for a node
        served by another heap), ``pfc_log`` (PFC frames received); at hosts also ``finished``
        ((flow id, finish_ps, start_ps) of completed flows), ``op_log`` ((op id, start_ps, end_ps)
        of workload ops ended) and ``flow_start_log`` (flow ids whose QP started)."""
        self.heap = heap
        self.pfc_log = pfc_log
        for port in self.ports:
            port.heap = heap
            port.remote = remote_boxes.get(port.peer.node_id)

    def on_arrive(self, pkt, t: int) -> None:  # pragma: no cover - overridden
        raise AssertionError("abstract")

    def pick_port(self, dst: int, h: int):
        if self.sole_port is not None:
            return self.sole_port
        ports = self.routes[dst]
        if len(ports) == 1:
            return ports[0]
        return ports[ecmp_index(h, self.salt, len(ports))]


class Switch(Node):
    """A shared-buffer switch (HPCC ``SwitchNode`` + ``SwitchMmu``)."""

    is_switch = True
    ports: list[SwitchPort]
    routes: dict[int, list[SwitchPort]]

    def __init__(self, node_id, seed, cfg):
        super().__init__(node_id, seed)
        self.cfg = cfg
        self.ecn = cfg.enable_qcn
        self.pfc = cfg.enable_pfc
        self.ack_high_prio = cfg.ack_high_prio
        self.buffer_bytes = cfg.buffer_size_bytes
        self.shared_used = 0
        self.used_bytes = 0
        self.total_hdrm = 0
        self.total_rsrv = 0
        self.ecn_marks = 0
        self.pfc_pauses_sent = 0

    def finish_config(self) -> None:
        self.total_hdrm = sum(p.headroom_bytes for p in self.ports)
        self.total_rsrv = RESERVE_BYTES * len(self.ports)

    def threshold(self, port) -> int:
        """Dynamic PFC threshold of an ingress port (``SwitchMmu::GetPfcThreshold``)."""
        return (self.buffer_bytes - self.total_hdrm - self.total_rsrv - self.shared_used) >> port.pfc_shift

    def on_arrive(self, pkt, t: int) -> None:
        typ = pkt.kind
        if typ == T_PFC:
            self.ports[pkt.inport].pause(pkt.pg, bool(pkt.pause), t)
            return
        routes = self.routes[pkt.dst]
        if len(routes) == 1:
            port = routes[0]
        else:
            port = routes[ecmp_index(pkt.ecmp_hash, self.salt, len(routes))]
        qi = 0 if (typ != T_DATA and self.ack_high_prio) else pkt.pg
        size = pkt.size_bytes
        if qi:
            inp = self.ports[pkt.inport]
            if self.pfc:
                in_b = inp.in_bytes[qi]
                thr = (self.buffer_bytes - self.total_hdrm - self.total_rsrv - self.shared_used) >> inp.pfc_shift
                shared = in_b - RESERVE_BYTES
                if shared < 0:
                    shared = 0
                if size + inp.hdrm_bytes[qi] > inp.headroom_bytes and size + shared > thr:
                    self.drops += 1
                    return
                new_b = in_b + size
                if new_b <= RESERVE_BYTES:
                    inp.in_bytes[qi] = new_b
                elif new_b - RESERVE_BYTES > thr:
                    inp.hdrm_bytes[qi] += size
                else:
                    inp.in_bytes[qi] = new_b
                    over = new_b - RESERVE_BYTES
                    self.shared_used += size if size < over else over
                if not inp.pfc_sent[qi]:
                    shared = inp.in_bytes[qi] - RESERVE_BYTES
                    if inp.hdrm_bytes[qi] > 0 or (shared if shared > 0 else 0) >= self.threshold(inp):
                        self.send_pfc(inp, qi, True, t)
            elif self.used_bytes + size > self.buffer_bytes:
                self.drops += 1
                return
            self.used_bytes += size
            port.eg_bytes[qi] += size
            if port.mon is not None:
                port.mon.changed(port, t)
            if not (port.used_mask >> qi) & 1:
                port.used_mask |= 1 << qi
                port.used_qs.append(qi)
                port.used_qs.sort()
        port.qs[qi].push(pkt)
        port.qbytes += size
        if not port.busy:
            port.kick(t)

    def check_resume(self, inp, qi: int, t: int) -> None:
        """Send a PFC resume when the ingress queue drained (``SwitchMmu::CheckShouldResume``)."""
        if inp.hdrm_bytes[qi]:
            return
        shared = inp.in_bytes[qi] - RESERVE_BYTES
        if shared <= 0 or shared + RESUME_OFFSET_BYTES <= self.threshold(inp):
            self.send_pfc(inp, qi, False, t)

    def send_pfc(self, port, qi: int, pause: bool, t: int) -> None:
        """Send a PFC pause/resume for priority ``qi`` to the peer of ``port`` (control queue 0)."""
        port.pfc_sent[qi] = pause
        if pause:
            self.pfc_pauses_sent += 1
        frame = new_packet(T_PFC, -1, 0, PFC_FRAME_BYTES, 0, qi, -1, 0, False, None, 1 if pause else 0, 0,
                           self.node_id)
        port.qs[0].push(frame)
        port.qbytes += PFC_FRAME_BYTES
        if not port.busy:
            port.kick(t)


class Host(Node):
    """An RDMA host: NIC ports, sender QPs, receiver state (HPCC ``RdmaHw``)."""

    ports: list[HostPort]
    routes: dict[int, list[HostPort]]

    def __init__(self, node_id, seed, cfg, net):
        super().__init__(node_id, seed)
        self.cfg = cfg
        self.net = net  # build-time facts: flows, pair RTT/BDP (read-only)
        self.hpcc = cfg.cc_mode == 3
        self.dcqcn = cfg.cc_mode == 1
        self.timely = cfg.cc_mode == 7
        self.dctcp = cfg.cc_mode == 8
        self.hdr_bytes, self.ack_bytes = overhead_bytes(INT_BYTES_BY_CC.get(cfg.cc_mode, 0))
        self.sqp = {}  # flow id -> SendQP (active senders)
        self.parked = {}  # flow id -> SendQP of flows left without a path by a link failure (never send)
        self.rx = {}  # flow id -> [expected, milestone, nack_timer_ps, last_nack, size]
        self.flow_hash = {}
        self.finished = []  # (flow id, finish_ps, start_ps) appended on completion; drained at boundaries
        self.lossy = False
        self.rto_ps = 0
        self.ack_interval = max(1, cfg.l2_ack_interval)
        self.chunk = cfg.l2_chunk_size
        self.nack_interval_ps = cfg.nack_interval_ps
        # DCQCN's timers read these at every event (cc.dcqcn_timer): copied here, C fields when compiled
        self.ewma_gain = cfg.ewma_gain
        self.alpha_resume_interval_ps = cfg.alpha_resume_interval_ps
        self.rate_decrease_interval_ps = cfg.rate_decrease_interval_ps
        self.cnps_rx = 0
        self.nacks_tx = 0
        self.retx_bytes = 0
        self.bytes_delivered = 0
        self.bytes_sent = 0
        # workload DAG (None for flow lists)
        self.dag = None
        self.compute_free_ps = 0  # the GPU's compute stream is busy until then
        self.op_start = {}  # op id -> start time of ops begun here and not yet logged
        self.op_log = []  # (op id, start_ps, end_ps) of ops ended here; drained at boundaries
        self.flow_start_log = []  # flow ids whose QP started here; drained at boundaries
        self.flow_models = None  # flow id -> a model carrying it instead of a QP (``model.start(host, fid, t)``)
        self.remote_boxes = {}  # node id -> outbox of events for a node served by another heap

    def attach(self, heap: EventQueue, remote_boxes: dict, pfc_log: list, finished: list, op_log: list,
               flow_start_log: list) -> None:
        super().attach(heap, remote_boxes, pfc_log, finished, op_log, flow_start_log)
        self.finished = finished
        self.op_log = op_log
        self.flow_start_log = flow_start_log
        self.remote_boxes = remote_boxes

    def advance_rx(self, fid: int, b: int, t0_ps: int, d_ps: int) -> None:
        """Fast-forward the receiver of flow ``fid``: ``b`` more bytes received in order, and
        ``d_ps`` from ``t0_ps`` passed (the receiver starts at the advanced position when
        nothing arrived yet)."""
        rx = self.rx.get(fid)
        if rx is None and b > 0:
            rx = self.rx[fid] = [0, self.ack_interval, -1, -1, self.net.flows[fid].size_bytes]
        if rx is not None:
            rx[RX_EXPECTED] += b
            rx[RX_MILESTONE] += b
            if rx[RX_NACK_TIMER_PS] >= t0_ps:
                rx[RX_NACK_TIMER_PS] += d_ps
            if rx[RX_LAST_NACK] >= 0:
                rx[RX_LAST_NACK] += b
            self.bytes_delivered += b

    def timer(self, t: int, qp, kind: int, gen: int) -> None:
        self.heap.push(t, self.kbase + self.seq, EV_TIMER, self, (qp, kind, gen))
        self.seq += 1

    # -- events -------------------------------------------------------------
    def on_flow_start(self, fid: int, t: int) -> None:
        if self.flow_models is not None:
            model = self.flow_models.get(fid)
            if model is not None:  # carried by a model given at set-up (no QP, no packets)
                model.start(self, fid, t)
                return
        self.open_qp(fid, t, t, 0)

    def open_qp(self, fid: int, t: int, start_ps: int, done_bytes: int) -> None:
        """Start flow ``fid``'s QP at ``t``: its FCT counts from ``start_ps`` and its first
        ``done_bytes`` count as sent and acknowledged (a flow a model carried so far)."""
        flow = self.net.flows[fid]
        port = self.pick_port(flow.dst, self.flow_hash[fid])
        rtt_ps, bdp_bytes = self.net.qp_window(flow)
        qp = SendQP(flow, self, port, port.rate_bps, bdp_bytes, rtt_ps, self.cfg, port.hdr_bytes)
        qp.next_avail_ps = t
        qp.start_ps = start_ps
        if self.net.no_path and fid in self.net.no_path:  # a link failure left it no path: it never sends
            qp.done = True
            self.parked[fid] = qp
            return
        if done_bytes:
            qp.advance(done_bytes, t, 0)
        self.flow_start_log.append(fid)
        self.sqp[fid] = qp
        port.qps.append(qp)
        if not port.busy:
            port.kick(t)

    # -- workload DAG (pwormhole.workload.dag; tables in pwormhole.net.dagrun) ----
    def post(self, t: int, target, kind: int, arg) -> None:
        """Schedule an event at another host: into this heap or the outbox given for it."""
        key = self.kbase + self.seq
        self.seq += 1
        box = self.remote_boxes.get(target.node_id)
        if box is None:
            self.heap.push(t, key, kind, target, arg)
        else:
            box.append((t, key, kind, target, arg))

    def dag_satisfy(self, children, t: int) -> None:
        """One dependency of each of ``children`` (ops on this host) is met at ``t``."""
        rem = self.dag.remaining
        for c in children:
            n = rem[c] - 1
            rem[c] = n
            if n == 0:
                self.on_op_start(c, t)

    def on_op_start(self, op: int, t: int) -> None:
        """Start a ready op (compute: on the GPU's stream; flow: a new QP; mark: ends now)."""
        rt = self.dag
        nb = rt.not_before_ps[op]
        if nb > t:
            self.heap.push(nb, self.kbase + self.seq, EV_OP_START, self, op)
            self.seq += 1
            return
        kind = rt.kind[op]
        if kind == 0:  # OP_COMPUTE
            start = t if t > self.compute_free_ps else self.compute_free_ps
            end = start + rt.arg[op]
            self.compute_free_ps = end
            self.op_start[op] = start
            self.heap.push(end, self.kbase + self.seq, EV_OP_DONE, self, op)
            self.seq += 1
        elif kind == 1:  # OP_FLOW
            self.on_flow_start(rt.arg[op], t)
        else:  # OP_MARK
            self.op_start[op] = t
            self.on_op_done(op, t)

    def on_op_done(self, op: int, t: int) -> None:
        """A compute op or mark ended here: log it, meet its children, notify other hosts."""
        rt = self.dag
        self.op_log.append((op, self.op_start.pop(op), t))
        ch = rt.at_end[op]
        if ch:
            self.dag_satisfy(ch, t)
        for h, delay in rt.remote[op]:
            self.post(t + delay, self.net.nodes[h], EV_NOTIFY, op)

    def on_notify(self, op: int, t: int) -> None:
        """A dependency that ended on another host reached this one."""
        self.dag_satisfy(self.dag.remote_children[(op, self.node_id)], t)

    def flow_received(self, fid: int, t: int) -> None:
        """The last byte of DAG flow ``fid`` arrived here (its destination)."""
        rt = self.dag
        op = rt.flow_op[fid]
        ch = rt.at_end[op]
        if ch:
            self.dag_satisfy(ch, t)
        for h, delay in rt.remote[op]:
            self.post(t + delay, self.net.nodes[h], EV_NOTIFY, op)

    def on_timer(self, arg, t: int) -> None:
        qp, kind, gen = arg
        if qp.done:
            return
        if kind == TM_RTO:
            self.on_rto(qp, t)
        else:
            cc.dcqcn_timer(qp, self, kind, gen, t)

    def on_rto(self, qp, t: int) -> None:
        """No ACK progress for ``rto_ps``: go back to ``snd_una`` (loss recovery)."""
        if qp.snd_una == qp.rto_una and qp.snd_nxt > qp.snd_una:
            self.retx_bytes += qp.snd_nxt - qp.snd_una
            qp.snd_nxt = qp.snd_una
            if not qp.port.busy:
                qp.port.kick(t)
        if qp.snd_una < qp.size:
            qp.rto_una = qp.snd_una
            self.timer(t + self.rto_ps, qp, TM_RTO, 0)
        else:
            qp.rto_armed = False

    def on_arrive(self, pkt, t: int) -> None:
        typ = pkt.kind
        if typ == T_DATA:
            self.receive_data(pkt, t)
        elif typ == T_PFC:
            self.ports[pkt.inport].pause(pkt.pg, bool(pkt.pause), t)
        else:
            self.receive_ack(pkt, t)

    def receive_data(self, pkt, t: int) -> None:
        """Receiver: in-order check, ACK/NACK generation (``RdmaHw::ReceiverCheckSeq``)."""
        fid = pkt.fid
        rx = self.rx.get(fid)
        if rx is None:
            rx = self.rx[fid] = [0, self.ack_interval, -1, -1, self.net.flows[fid].size_bytes]
        seq = pkt.seq
        exp = rx[0]
        if seq == exp:
            exp += pkt.payload_bytes
            rx[0] = exp
            self.bytes_delivered += pkt.payload_bytes
            if exp >= rx[4] and self.dag is not None:
                self.flow_received(fid, t)
            if exp >= rx[1]:
                rx[1] += self.ack_interval
            elif not (self.chunk and exp % self.chunk == 0) and exp < rx[4]:
                # ns-3 acks nothing here; pwormhole always acks the end of the
                # message so that a large L2_ACK_INTERVAL cannot stall a flow
                return
            typ = T_ACK
        elif seq > exp:
            if t >= rx[2] or rx[3] != exp:
                rx[2] = t + self.nack_interval_ps
                rx[3] = exp
                typ = T_NACK
                self.nacks_tx += 1
            else:
                return
        else:
            typ = T_ACK  # duplicate (after a go-back): re-ack so the sender learns
        src = pkt.src
        port = self.pick_port(src, pkt.ecmp_hash)
        port.ctrl.push(new_packet(typ, fid, exp, port.ack_bytes, 0, pkt.pg, src, pkt.ecmp_hash, pkt.ecn, pkt.int_hops,
                                    0, pkt.sent_ps, self.node_id))
        if not port.busy:
            port.kick(t)

    def receive_ack(self, pkt, t: int) -> None:
        """Sender: cumulative ACK, completion, go-back-N, congestion control (``RdmaHw::ReceiveAck``)."""
        qp = self.sqp.get(pkt.fid)
        if qp is None:
            return
        seq = pkt.seq
        if self.cfg.l2_back_to_zero and self.chunk:
            seq = seq // self.chunk * self.chunk
        if seq > qp.snd_una:
            qp.snd_una = seq
            qp.una_ps = t
            if qp.snd_nxt < seq:
                qp.snd_nxt = seq
        if qp.snd_una >= qp.size:
            self.complete(qp, t)
            return
        if pkt.kind == T_NACK:
            self.retx_bytes += qp.snd_nxt - qp.snd_una
            qp.snd_nxt = qp.snd_una
        if qp.dcqcn:
            if pkt.ecn:
                self.cnps_rx += 1
                qp.cnps_rx += 1
                cc.dcqcn_on_cnp(qp, self, t)
        elif qp.hpcc:
            cc.hpcc_on_ack(qp, pkt, self.cfg)
        elif qp.timely:
            cc.timely_on_ack(qp, pkt, self.cfg, t)
        elif qp.dctcp:
            if pkt.ecn:
                self.cnps_rx += 1
                qp.cnps_rx += 1
            cc.dctcp_on_ack(qp, pkt, self.cfg)
        port = qp.port
        if not port.busy:
            port.kick(t)

    def complete(self, qp, t: int) -> None:
        qp.done = True
        del self.sqp[qp.fid]
        self._detach(qp)
        self.finished.append((qp.fid, t, qp.start_ps))
        if self.dag is not None:
            ch = self.dag.at_src[self.dag.flow_op[qp.fid]]
            if ch:
                self.dag_satisfy(ch, t)

    @staticmethod
    def _detach(qp) -> None:
        """Take ``qp`` off its NIC port's round robin."""
        port = qp.port
        qps = port.qps
        i = qps.index(qp)
        del qps[i]
        if port.rr > i:
            port.rr -= 1

    def reroute(self, t: int, no_path) -> None:
        """The routes changed at ``t`` (a link failed): each QP moves to the NIC
        port its flow now leaves by (``RdmaHw::RedistributeQp``); a QP of a flow in
        ``no_path`` stops for good (``parked``). From now on the NIC retransmits
        from the last ACK when none came for ``rto_ps`` (go-back-N), as packets
        can be lost: every active QP gets that timer."""
        self.lossy = True
        moved = set()
        for fid in sorted(self.sqp):
            qp = self.sqp[fid]
            if fid in no_path:
                del self.sqp[fid]
                self._detach(qp)
                qp.done = True  # its timers do nothing
                self.parked[fid] = qp
                continue
            port = self.pick_port(qp.dst, qp.hash)
            if port is not qp.port:
                self._detach(qp)
                if port.cc_off != qp.port.cc_off:
                    qp.use_port(port)
                else:
                    qp.port = port
                port.qps.append(qp)
                moved.add(port.idx)
            if not qp.rto_armed:
                qp.rto_armed = True
                qp.rto_una = qp.snd_una
                self.timer(t + self.rto_ps, qp, TM_RTO, 0)
        for i in sorted(moved):
            port = self.ports[i]
            if not port.busy:
                port.kick(t)


_NONE: frozenset = frozenset()


def unwire(heap) -> None:
    """Give every packet on a wire of ``heap``'s ports (an EventQueue) its own arrival event
    (the form in which whoever scans or edits the pending events finds them); the wires empty.
    :func:`take_events` of no port and no flow."""
    take_events(heap, _NONE, _NONE)


class GroupEvents(EventFilter):
    """The pending events of a set of ``ports`` (Port) and ``flows`` (flow ids): the ports'
    serializer and NIC wakes, the flows' packets and timers, and PFC frames arriving at the
    ports; also every wire's first-packet event (:func:`take_events` unwires them)."""

    __slots__ = ("ports", "flows")

    def __init__(self, ports, flows) -> None:
        self.ports = ports
        self.flows = flows

    def owns(self, kind: int, target, arg) -> bool:
        if kind == EV_TX_DONE or kind == EV_NIC_WAKE:
            return target in self.ports
        if kind == EV_ARRIVE_HOST or kind == EV_ARRIVE_SWITCH:
            pkt = arg
            if pkt.kind == T_PFC:
                return target.ports[pkt.inport] in self.ports
            return pkt.fid in self.flows
        if kind == EV_TIMER:
            return arg[0].fid in self.flows
        return kind == EV_WIRE


class DagLead(Lead):
    """The leads (:class:`~pwormhole.events.Lead`) of a DAG run's events, from
    :meth:`~pwormhole.net.dagrun.DagRuntime.leads`: an op's start (``EV_OP_START``) or end
    (``EV_OP_DONE``), a notification (its children's starts), a flow model's event (the model's
    ``lead_ps(flow_end_ps)``: the ends of the flows it carries); 0 for packets, QP timers and
    flow starts."""

    __slots__ = ("start_ps", "end_ps", "flow_end_ps", "remote_children")

    def __init__(self, start_ps: list, end_ps: list, flow_end_ps: list, remote_children: dict) -> None:
        self.start_ps = start_ps
        self.end_ps = end_ps
        self.flow_end_ps = flow_end_ps
        self.remote_children = remote_children

    def lead_ps(self, kind: int, target, arg) -> int:
        if kind == EV_OP_START:
            return self.start_ps[arg]
        if kind == EV_OP_DONE:
            return self.end_ps[arg]
        if kind == EV_MODEL:
            return target.lead_ps(self.flow_end_ps)
        if kind == EV_NOTIFY:
            best = INF_PS
            for c in self.remote_children[(arg, target.node_id)]:
                if self.start_ps[c] < best:
                    best = self.start_ps[c]
            return best
        return 0


def route_path(nodes, src: int, dst: int, h: int) -> list:
    """The egress ports a packet of ECMP hash ``h`` crosses from node ``src`` to ``dst``
    (the choices the per-packet path makes)."""
    node = nodes[src]
    out = []
    while node.node_id != dst:
        port = node.pick_port(dst, h)
        out.append(port)
        node = port.peer
        if len(out) > 64:
            raise RuntimeError(f"routing loop from {src} to {dst}")
    return out


def shift_packets(packets: list, advance_bytes: dict, d_ps: int, stamped: bool, hop_adv_bytes: dict) -> None:
    """Packets of flows fast-forwarded by ``d_ps`` (a wake): each but PFC frames moves by its flow's
    ``advance_bytes``, its send time by ``d_ps`` when ``stamped`` (TIMELY), and each list of INT records,
    once, to ``d_ps`` later with its hops ``hop_adv_bytes[fid]`` bytes further (:func:`cc.hpcc_shift_int`)."""
    seen_int: set = set()
    for pkt in packets:
        if pkt.kind == T_PFC:
            continue
        fid = pkt.fid
        pkt.seq += advance_bytes.get(fid, 0)
        if stamped:  # its send time: it was sent d later in the skipped run
            pkt.sent_ps += d_ps
        hops = pkt.int_hops
        if hops and id(hops) not in seen_int:
            seen_int.add(id(hops))
            hops[:] = cc.hpcc_shift_int(hops, d_ps, hop_adv_bytes[fid])


def take_events(heap, ports, flows) -> list:
    """Take out of ``heap`` (an EventQueue) the pending events of ``ports`` and ``flows``
    (:class:`GroupEvents`) and return them (in no particular order); the others stay pending.
    Packets on wires get arrival events of their own, taken or left pending by the same rule."""
    owner = GroupEvents(ports, flows)
    out = []
    for ev in heap.take(owner):
        if ev[2] != EV_WIRE:
            out.append(ev)
            continue
        port = ev[3]
        kind = port.arrive_kind
        for pkt in port.wire:
            if owner.owns(kind, port.peer, pkt):
                out.append((pkt.arrive_ps, pkt.arrive_key, kind, port.peer, pkt))
            else:
                heap.push(pkt.arrive_ps, pkt.arrive_key, kind, port.peer, pkt)
        port.wire.clear()
    return out


class NetHandler(Handler):
    """The handler of one event kind of the packet model: compiled, the event loop calls
    the typed port or node in C (the time unboxed, no Python call per event); ``method``
    (the unbound method) handles the rarer kinds."""

    __slots__ = ("kind",)

    def __init__(self, kind: int, method) -> None:
        super().__init__(method)
        self.kind = kind

    def handle(self, target, arg, t_ps: int) -> None:
        kind = self.kind
        if kind == EV_WIRE:
            port = target
            port.on_wire(arg, t_ps)
        elif kind == EV_TX_DONE:
            port = target
            port.on_tx_done(arg, t_ps)
        elif kind == EV_ARRIVE_SWITCH:
            sw = target
            sw.on_arrive(arg, t_ps)
        elif kind == EV_ARRIVE_HOST:
            host = target
            host.on_arrive(arg, t_ps)
        elif kind == EV_NIC_WAKE:
            hp = target
            hp.on_wake(arg, t_ps)
        elif kind == EV_OP_START:
            host = target
            host.on_op_start(arg, t_ps)
        elif kind == EV_FLOW_START:
            host = target
            host.on_flow_start(arg, t_ps)
        elif kind == EV_OP_DONE:
            host = target
            host.on_op_done(arg, t_ps)
        elif kind == EV_NOTIFY:
            host = target
            host.on_notify(arg, t_ps)
        elif kind == EV_TIMER:
            host = target
            host.on_timer(arg, t_ps)
        else:
            self.method(target, arg, t_ps)


COMPILED = not __file__.endswith(".py")  # this module was built by Cython


def handler_table(objects: bool = COMPILED) -> tuple:
    """Handlers indexed by event kind (``pwormhole.net.packet``), called ``handler(target, arg, t_ps)``:
    :class:`NetHandler` objects if ``objects`` (the compiled engine's default), else the unbound
    methods (the pure engine's: a NetHandler would add a Python call per event there)."""
    table: list = [None] * N_EVENT_KINDS
    for kind, cls, name in (
        (EV_ARRIVE_HOST, Host, "on_arrive"), (EV_ARRIVE_SWITCH, Switch, "on_arrive"), (EV_TX_DONE, Port, "on_tx_done"),
        (EV_NIC_WAKE, HostPort, "on_wake"), (EV_FLOW_START, Host, "on_flow_start"), (EV_TIMER, Host, "on_timer"),
        (EV_OP_START, Host, "on_op_start"), (EV_OP_DONE, Host, "on_op_done"), (EV_NOTIFY, Host, "on_notify"),
        (EV_WIRE, Port, "on_wire"),
    ):
        method = getattr(cls, name)  # the unbound method, as Python calls it (compiled: its descriptor)
        table[kind] = NetHandler(kind, method) if objects else method
    return tuple(table)
