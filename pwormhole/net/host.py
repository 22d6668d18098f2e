"""An RDMA host: its NIC ports, sender queue pairs and receiver state (HPCC ns-3's ``rdma-hw.cc``,
``rdma-queue-pair.cc``, and ``qbb-net-device.cc``'s host side).

One queue pair (QP) per flow; the NIC serves control packets (ACK/NACK) first, then its QPs round
robin, each paced at its rate (``nextAvail``) and bounded by its window; cumulative ACKs every
``L2_ACK_INTERVAL`` bytes or chunk; NACK and go-back-N on a gap. A host also runs its GPU's share
of a workload DAG (:mod:`pwormhole.net.dagrun`): compute ops on one stream, flows as QPs, marks,
and a connection's flows one after another (``Host.on_flow_start``).

Over 700 lines as one concern: the sender QP, the NIC port and the host share one compiled
module (``host.pxd``) so that the per-packet calls between them stay C calls.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..engine.events import EventQueue
from . import cc
from .device import Node, Port, ns3_tx_ps
from .packet import (
    EV_NIC_WAKE,
    EV_NOTIFY,
    EV_OP_DONE,
    EV_OP_START,
    EV_TIMER,
    INT_BYTES_BY_CC,
    T_ACK,
    T_DATA,
    T_NACK,
    T_PFC,
    TM_RTO,
    Fifo,
    new_packet,
    overhead_bytes,
)
from .snapshot import QPSnapshot

if TYPE_CHECKING:
    from .dagrun import DagRuntime

PS_BITS = 8_000_000_000_000  # as device.PS_BITS (a C constant of each module that uses it)
PS_BITS_INT = PS_BITS  # the same as a Python int: compiled, PS_BITS is C 64-bit (packets only, < 2^63)
# fields of a receiver's state (``Host.rx[fid]``, a list: the per-packet path indexes it by number)
RX_EXPECTED, RX_MILESTONE, RX_NACK_TIMER_PS, RX_LAST_NACK, RX_SIZE = range(5)


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

    def withdraw(self, qp) -> None:
        """Take ``qp`` out of the round robin until :meth:`readmit`: it sends nothing, its CC
        ignores the ACKs of its packets in flight, which drain, and HPCC takes its next INT records
        afresh (those of before describe nothing after a fast-forward; a flow fast-forwarded while its
        neighbours run; its timers are the caller's)."""
        Host._detach(qp)
        qp.withdrawn = True
        if qp.hops:
            qp.hops = []
            qp.last_update_seq = 0

    def readmit(self, qp, t: int) -> None:
        """Put ``qp`` back into the round robin (last) and send if free."""
        qp.withdrawn = False
        self.qps.append(qp)
        if not self.busy:
            self.kick(t)

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
        # out of its NIC's round robin (HostPort.withdraw)
        "withdrawn",
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
        self.withdrawn = False

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
        """Its state at ``t``."""
        due = -1
        if self.hpcc and self.win_bytes:
            rate = self.cur_win * PS_BITS_INT // max(1, self.base_rtt_ps)  # windows can pass 2^63 / PS_BITS
        else:
            rate = self.rate_bps
            if self.dcqcn:
                due = cc.dcqcn_rate_change_ps(self, t)
            elif (self.timely or self.dctcp) and self.rate_bps < self.max_rate_bps:
                due = t  # below its line rate, it changes its rate every RTT
        s = QPSnapshot.__new__(QPSnapshot)  # (compiled: no argument tuple, no boxed integers)
        s.t_ps = t
        s.cc_rate_bps = rate
        s.una_bytes = self.snd_una
        s.una_ps = self.una_ps
        s.sent_bytes = self.max_sent if self.max_sent > self.snd_nxt else self.snd_nxt
        s.rate_change_ps = due
        s.cnps = self.cnps_rx
        s.rate_bps = self.rate_bps
        return s

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
            if nxt == self.size and host.fifo_parked:
                host.flow_sent(self.fid, t)
        rate = self.rate_bps if self.rate_bound else self.max_rate_bps
        if self.port.ns3_time:
            self.next_avail_ps = t + ns3_tx_ps(wire, rate)
        else:
            self.next_avail_ps = t + -((-wire * PS_BITS) // rate)
        self.last_pkt_bytes = wire
        if host.lossy and not self.rto_armed:
            self.rto_armed = True
            self.rto_una = self.snd_una
            host.timer(t + host.rto_ps, self, TM_RTO, 0)
        return new_packet(T_DATA, self.fid, seq, wire, pay, self.pg, self.dst, self.hash, False,
                          [] if self.hpcc else None, 0, t if self.timely else 0, host.node_id)


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
        # a connection's flows in order (DagRuntime.fifo_after): flow id -> (the flow queued behind it,
        # its start); flows queued or released and not yet started; released flows' starts; flows a
        # model carries -> when their last byte leaves (-1: the model calls flow_sent then)
        self.fifo_parked = {}
        self.fifo_waiting = set()
        self.fifo_start = {}
        self.model_sending = {}
        self.rx = {}  # flow id -> [expected, milestone, nack_timer_ps, last_nack, size]
        self.flow_hash = []  # flow id -> the ECMP hash of its 5-tuple (the network's one list)
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
        # workload DAG (None for flow lists; its handlers run only with one)
        self.dag: DagRuntime | None = None
        self.compute_free_ps = 0  # the GPU's compute stream is busy until then
        self.op_start = {}  # op id -> start time of ops begun here and not yet logged
        self.op_log = []  # (op id, start_ps, end_ps) of ops ended here; drained at boundaries
        self.flow_start_log = []  # flow ids whose QP started here; drained at boundaries
        self.flow_models = None  # flow id -> a model carrying it instead of a QP (``model.start``)
        self.rx_done_ps = None  # flow id -> when its last byte arrived here (DAG flows; kept only when a dict)
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
        """DAG flow ``fid`` starts at ``t``: by a QP, or by the model given for it at set-up. A flow
        queued behind another on its connection (``DagRuntime.fifo_after``: a ring member's sends
        to its successor, one RDMA QP in NCCL) waits until that one's last byte has left
        (:meth:`flow_sent`); its FCT still counts from now."""
        start_ps = t
        rt = self.dag
        if rt is not None:
            before = rt.fifo_after[fid]
            if before >= 0:
                if self.fifo_start and fid in self.fifo_start:
                    start_ps = self.fifo_start.pop(fid)
                if self.sending(before, t) or rt.remaining[rt.flow_op[before]] > 0:
                    # (still sending, or not started: an earlier step may arrive later over ECMP; or
                    # released for a model's last byte, and the flow went on as packets since)
                    self.fifo_waiting.add(fid)
                    self.hold(before, fid, start_ps, t)
                    return
                self.fifo_waiting.discard(fid)
        if self.flow_models is not None:
            model = self.flow_models.get(fid)
            if model is not None:  # carried by a model given at set-up (no QP, no packets)
                model.start(self, fid, t, start_ps)
                return
        self.open_qp(fid, t, start_ps, 0)

    def sending(self, fid: int, t: int) -> bool:
        """Whether flow ``fid`` from here is queued behind another, or has started and not put its
        last byte on the wire by ``t``."""
        qp = self.sqp.get(fid)
        if qp is not None:
            return qp.max_sent < qp.size
        if fid in self.model_sending:
            sent_ps = self.model_sending[fid]
            return sent_ps < 0 or sent_ps > t
        return fid in self.fifo_waiting

    def hold(self, before: int, fid: int, start_ps: int, t: int) -> None:
        """Flow ``fid`` (its FCT from ``start_ps``) waits for flow ``before``'s last byte: at the time a
        model gave for it (an event then), or until :meth:`flow_sent` says it left."""
        sent_ps = self.model_sending.get(before, -1)
        if sent_ps > t:
            self.release_queued(fid, start_ps, sent_ps)
        else:
            self.fifo_parked[before] = (fid, start_ps)

    def model_sends_until(self, fid: int, sent_ps: int) -> None:
        """A model carries flow ``fid`` from here and knows when its last byte leaves: ``sent_ps``
        (-1: it calls :meth:`flow_sent` then). A flow held for it waits until then."""
        self.model_sending[fid] = sent_ps
        if sent_ps >= 0 and fid in self.fifo_parked:
            nxt, start_ps = self.fifo_parked.pop(fid)
            self.release_queued(nxt, start_ps, sent_ps)

    def flow_sent(self, fid: int, t: int) -> None:
        """Flow ``fid`` put its last byte on the wire at ``t`` (its QP, or the model carrying it): a
        flow queued behind it on its connection starts now, by an event after this one."""
        self.model_sending.pop(fid, None)
        parked = self.fifo_parked.pop(fid, None)
        if parked is not None:
            self.release_queued(parked[0], parked[1], t)

    def release_queued(self, fid: int, start_ps: int, at_ps: int) -> None:
        """Flow ``fid``, queued on its connection (its FCT from ``start_ps``), starts at ``at_ps`` by an
        event (it stays in ``fifo_waiting`` until it starts)."""
        rt = self.dag
        assert rt is not None  # (only DAG flows queue)
        self.fifo_start[fid] = start_ps
        self.heap.push(at_ps, self.kbase + self.seq, EV_OP_START, self, rt.flow_op[fid])
        self.seq += 1

    def open_qp(self, fid: int, t: int, start_ps: int, done_bytes: int, send_from_ps: int = -1) -> None:
        """Start flow ``fid``'s QP at ``t``: its FCT counts from ``start_ps``, its first
        ``done_bytes`` count as sent and acknowledged (a flow a model carried so far), and it sends
        from ``send_from_ps`` (-1: ``t``)."""
        flow = self.net.flows[fid]
        port = self.pick_port(flow.dst, self.flow_hash[fid])
        rtt_ps, bdp_bytes = self.net.qp_window(flow)
        qp = SendQP(flow, self, port, port.rate_bps, bdp_bytes, rtt_ps, self.cfg, port.hdr_bytes)
        qp.next_avail_ps = t if send_from_ps < 0 else send_from_ps
        qp.start_ps = start_ps
        if self.net.no_path and fid in self.net.no_path:  # a link failure left it no path: it never sends
            qp.done = True
            self.parked[fid] = qp
            return
        if done_bytes:
            qp.advance(done_bytes, t, 0)
        self.flow_start_log.append(fid)
        self.sqp[fid] = qp
        if self.model_sending:
            self.model_sending.pop(fid, None)  # a flow a model handed over: its QP sends the rest
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
        rt = self.dag
        assert rt is not None
        rem = rt.remaining
        for c in children:
            n = rem[c] - 1
            rem[c] = n
            if n == 0:
                self.on_op_start(c, t)

    def on_op_start(self, op: int, t: int) -> None:
        """Start a ready op (compute: on the GPU's stream; flow: a new QP; mark: ends now)."""
        rt = self.dag
        assert rt is not None
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
        assert rt is not None
        self.op_log.append((op, self.op_start.pop(op), t))
        ch = rt.at_end[op]
        if ch:
            self.dag_satisfy(ch, t)
        for h, delay in rt.remote[op]:
            self.post(t + delay, self.net.nodes[h], EV_NOTIFY, op)

    def on_notify(self, op: int, t: int) -> None:
        """A dependency that ended on another host reached this one."""
        rt = self.dag
        assert rt is not None
        self.dag_satisfy(rt.remote_children[(op, self.node_id)], t)

    def flow_received(self, fid: int, t: int) -> None:
        """The last byte of DAG flow ``fid`` arrived here (its destination)."""
        rt = self.dag
        assert rt is not None
        if self.rx_done_ps is not None:
            self.rx_done_ps[fid] = t
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
        if qp.withdrawn:
            pass  # (its CC state is the one it left the round robin with: HostPort.withdraw)
        elif qp.dcqcn:
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
        self.flow_completed(qp.fid, t, qp.start_ps)

    def flow_completed(self, fid: int, t: int, start_ps: int) -> None:
        """Flow ``fid`` sent from here (started at ``start_ps``) completed at ``t``: its last ACK came
        back (by its QP, or by the flow model that carried it); its DAG children may start."""
        self.finished.append((fid, t, start_ps))
        if self.model_sending:
            self.model_sending.pop(fid, None)
        if self.dag is not None:
            ch = self.dag.at_src[self.dag.flow_op[fid]]
            if ch:
                self.dag_satisfy(ch, t)

    # -- flows a model carries without packets (pwormhole.accel.fluid) ----------------
    def model_sent(self, b: int) -> None:
        """A flow model put ``b`` more bytes of a flow from here on the wire."""
        self.bytes_sent += b

    def model_delivered(self, fid: int, b: int, t: int, last: bool) -> None:
        """A flow model delivered ``b`` more bytes of flow ``fid`` here at ``t``; ``last``: its last
        byte (a DAG flow's children on this host may start)."""
        self.bytes_delivered += b
        if last and self.dag is not None:
            self.flow_received(fid, t)

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
