"""A shared-buffer switch and its egress ports (HPCC ns-3's ``switch-node.cc`` and
``switch-mmu.cc``, with ``qbb-net-device.cc``'s queues).

ECMP on a per-switch hash of the 5-tuple; ingress admission with reserve, dynamic shared
threshold (``(buffer - headroom - reserve - shared_used) >> shift``) and headroom; PFC pause when
a priority's ingress enters headroom or its shared use reaches the threshold, resume when it
drains ``resume_offset`` below it; RED/ECN marking at dequeue from the egress bytes of the queue;
INT push at dequeue under HPCC. Queue 0 is strict priority, the others are served round robin,
and a queue paused by PFC is skipped.
"""

from __future__ import annotations

from .device import Node, Port, counters, ecmp_index
from .packet import N_PRIORITIES, PFC_FRAME_BYTES, T_DATA, T_PFC, Fifo, new_packet

RESERVE_BYTES = 4 * 1024  # SwitchMmu::reserve
RESUME_OFFSET_BYTES = 3 * 1024  # SwitchMmu::resume_offset
PFC_ALPHA_SHIFT = 3  # alpha = 1/8 (third.cc)


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
        self.mon = None  # a queue monitor (pwormhole.report.monitor): ``mon.changed(port, t)`` after eg_bytes changes

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
                if eg > self.kmax_bytes or (sw.draw()
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


QLEN_BUCKET_BYTES = 1000  # HPCC ns-3's QlenDistribution: a sample's bucket is its queue bytes / 1000


class QueueWatch:
    """The queue samples of one switch port (pwormhole.report.monitor), its ``mon`` while watched: a
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
