"""Fast-forward of a steady conflict group: freeze, plan the wake, advance, wake.

A steady group is frozen at boundary ``T0``: its events leave the heaps (``nodes.take_events``)
and its ports are held (``Port.hold``), so they keep their queues and buffer occupancy and packets
of other flows reaching them wait. On waking after ``D`` ps each flow advances by ``goodput x D``
bytes rounded down to whole packets, in the sender (``SendQP.advance``), the receiver
(``Host.advance_rx``) and its packets in flight (sequence numbers; send times, which TIMELY's RTTs are
measured from; HPCC INT records, ``cc.hpcc_shift_int``),
and the frozen events return ``D`` later, except DCQCN rate-increase timers, which keep their own
time (``cc.dcqcn_timer_after_skip``). Every rank advances a flow by the same sampled amount and
changes only its own objects.
"""

from __future__ import annotations

from bisect import bisect_left

from ..config import CC_TIMELY
from ..net import cc
from ..net.freeze import shift_packets, take_events
from ..net.packet import EV_ARRIVE_HOST, EV_ARRIVE_SWITCH, EV_TIMER, TM_RP
from .config import BPS_PER_BYTE_PS

# fields of an event tuple (engine/lp.py) and of a timer's argument (net/host.py Host.timer)
EV_T, EV_KEY, EV_KIND, EV_TARGET, EV_ARG = range(5)
TIMER_QP, TIMER_KIND = 0, 1


class Frozen:
    """A frozen group's state: when it froze and wakes, its events by LP, its ports' busy
    states, and the sampled facts its advance is computed from."""

    __slots__ = ("t0", "wake_ps", "events", "busy", "goodput", "una0", "inflight0", "memo")

    def __init__(self, t0, wake_ps, events, busy, goodput, una0, inflight0, memo=None):
        self.t0 = t0
        self.wake_ps = wake_ps
        self.events = events  # [(lp, events extracted from it)]
        self.busy = busy  # port -> its busy state before the hold
        self.goodput = goodput  # fid -> bytes per ps
        self.una0 = una0  # fid -> acked bytes at the freeze (sampled)
        self.inflight0 = inflight0  # fid -> bytes sent and not acknowledged at the freeze (sampled, or a bound)
        self.memo = memo  # (recorded entry, flow id -> recorded index) for a memo hit


def freeze(lps, ports: set, flows: set) -> tuple:
    """Take the group's events out of the LPs' heaps (``nodes.take_events``: its ports' serializer
    and NIC wakes, its flows' packets and timers, PFC frames arriving at its ports) and hold its
    ports: ``(events by LP, busy states)``."""
    events = [(lp, take_events(lp.heap, ports, flows)) for lp in lps]
    busy = {p: p.hold() for p in ports}
    return events, busy


def inflight(fs, t: int, goodput: float, known: dict | None = None) -> int:
    """Bytes a flow has sent and not had acknowledged at ``t``: ``known[fid]``, or sampled at
    ``t`` (exact: a frozen flow sends nothing), else a bound (its window, or two base RTTs at
    ``goodput``)."""
    if known is not None and fs.fid in known:
        return known[fs.fid]
    q = fs.samples
    if q and q[-1].t_ps == t:
        return max(0, q[-1].sent_bytes - q[-1].una_bytes)
    return fs.win_bytes if fs.win_bytes else max(int(2 * goodput * fs.rtt_ps), fs.mtu)


def room(fs, una0: int, inflight0: int) -> int:
    """Bytes a flow may advance from ``una0`` and still have a packet to send after the
    ``inflight0`` bytes in flight."""
    return max(0, (fs.size - una0 - inflight0 - fs.mtu) // fs.mtu * fs.mtu)


def whole_packets(fs, goodput: float, d_ps: int, una0: int, inflight0: int) -> int:
    """The bytes a flow frozen at ``goodput`` for ``d_ps`` advances at its wake: whole packets, at
    most :func:`room`. The fraction of a packet left over is kept (``fs.lag_bytes``) and advanced at
    its next wake: dropped, it left the flow half a packet behind on average at every wake, a lag
    that grew with each change of a group woken and frozen at every change."""
    want = goodput * d_ps + fs.lag_bytes
    b = int(want) // fs.mtu * fs.mtu
    cap = room(fs, una0, inflight0)
    if b > cap:
        fs.lag_bytes = 0.0
        return cap
    fs.lag_bytes = want - b
    return b


def wake_by(fs, t: int, una: int, goodput: float, margin_rtts: int, known: dict | None = None) -> int:
    """When a flow sending at ``goodput`` from ``una`` at ``t`` must be awake: with ``margin_rtts``
    of its own path's RTTs of data left, and never less than :func:`room` keeps."""
    keep = max(inflight(fs, t, goodput, known) + 2 * fs.mtu, int(margin_rtts * goodput * fs.path_rtt_ps))
    return t + int((fs.size - una - keep) / goodput)


def index_starts(net, skip_fids) -> dict:
    """Port -> sorted start times of the flow list's flows crossing it (data and ACKs, with
    their ECMP choices), but those in ``skip_fids`` or without a path."""
    by_port: dict = {}
    for f in net.flows:
        if f.flow_id in skip_fids or f.flow_id in net.no_path:
            continue
        for p in set(net.path_of(f.flow_id)) | set(net.path_of(f.flow_id, acks=True)):
            by_port.setdefault(p, []).append(f.start_ps)
    return {p: sorted(v) for p, v in by_port.items()}


def cap_wake(starts_on: dict, ports, t: int, wake_ps: int, window_ps: int) -> int:
    """``wake_ps``, or the boundary at or before the first known flow start at or after ``t``
    on ``ports`` if earlier (that flow then starts on running ports)."""
    if not starts_on:
        return wake_ps
    first = wake_ps
    for p in ports:
        st = starts_on.get(p)
        if st:
            i = bisect_left(st, t)
            if i < len(st) and st[i] < first:
                first = st[i]
    if first < wake_ps:
        return first // window_ps * window_ps
    return wake_ps


def carried_bytes(flows: dict, advance_bytes: dict, ack_every_pkts: int, ack_bytes: int) -> dict:
    """Port -> the bytes that crossed it without packets when each flow (``flows``: flow id ->
    FlowState) advanced by ``advance_bytes[fid]``: whole packets on its data ports (the NIC's too:
    its counter is the link's, for the monitors), one ACK per ``ack_every_pkts`` on its ACK ports."""
    port_adv: dict = {}
    for fid, b in advance_bytes.items():
        if b <= 0:
            continue
        fs = flows[fid]
        pkts = b // fs.mtu
        for p in fs.data_ports:
            port_adv[p] = port_adv.get(p, 0) + pkts * fs.wire_bytes
        acks = pkts // ack_every_pkts
        for p in fs.ack_ports:
            port_adv[p] = port_adv.get(p, 0) + acks * ack_bytes
    return port_adv


def retimer(t: int, rp_timer_ps: int):
    """The ``retime`` of ``LogicalProcess.reinsert`` for events frozen until ``t``: DCQCN
    rate-increase timers at their own time (:func:`cc.dcqcn_timer_after_skip`), the others shifted."""
    def retime(ev):
        if ev[EV_KIND] == EV_TIMER and ev[EV_ARG][TIMER_KIND] == TM_RP:
            return cc.dcqcn_timer_after_skip(ev[EV_T], t, rp_timer_ps)
        return None
    return retime


def advance(flows: dict, ports, fz: Frozen, d: int, advance_bytes: dict, net, local, ack_every_pkts: int,
            ack_bytes: int, alpha_decay) -> dict:
    """Move a group (``flows``: its flow id -> FlowState; ``ports``: its ports) forward by
    ``advance_bytes[fid]`` and ``d`` ps on this process's objects (``local``: its node ids):
    senders, receivers, the ports' byte counters and the packets frozen or queued at its ports.
    ``alpha_decay``: the DCQCN alpha factor over ``d`` (None: not decayed). Returns port ->
    the bytes its counter moved by (every port of the group, on every process)."""
    port_adv = carried_bytes(flows, advance_bytes, ack_every_pkts, ack_bytes)
    for p, a in port_adv.items():
        p.carried(a)
    t0 = fz.t0
    hop_adv_bytes = {fid: [port_adv.get(p, 0) for p in fs.data_hops] for fid, fs in flows.items()}  # per INT hop
    for fid, fs in flows.items():
        b = advance_bytes.get(fid, 0)
        if fs.src in local:
            qp = net.sender_qp(fid)
            if qp is not None:
                qp.advance(b, t0, d, alpha_decay, hop_adv_bytes[fid] if qp.hops else None)
        if fs.dst in local:
            net.advance_receiver(fid, b, t0, d)
    packets = [ev[EV_ARG] for _lp, evs in fz.events for ev in evs
               if ev[EV_KIND] == EV_ARRIVE_HOST or ev[EV_KIND] == EV_ARRIVE_SWITCH]
    for p in ports:
        if p.node.node_id not in local:
            continue
        packets.extend(p.queued())
        p.skip_time(t0, d)
    shift_packets(packets, advance_bytes, d, net.cfg.cc_mode == CC_TIMELY, hop_adv_bytes)
    return port_adv


def thaw(fz: Frozen, t: int, d: int, local, rp_timer_ps: int) -> None:
    """Return the frozen events ``d`` later (DCQCN rate-increase timers at their own time) and
    release the ports, then kick the local ones that are free, in port order."""
    retime = retimer(t, rp_timer_ps)
    for lp, evs in fz.events:
        lp.reinsert(evs, d, retime)
    for p, was in fz.busy.items():
        p.release(was)
    for p in sorted(fz.busy, key=lambda p: (p.node.node_id, p.idx)):
        if not p.busy and p.node.node_id in local:
            p.kick(t)


def path_rtt_ps(data: list, mtu: int) -> int:
    """The RTT of a path (its egress ports in order): twice the propagation delays plus one
    ``mtu`` packet's serialization per hop (``third.cc``'s pair RTT, on this path)."""
    bits = mtu * BPS_PER_BYTE_PS
    delay_ps = serial_ps = 0
    for p in data:  # (a loop, not sums of generators: a flow start's cost)
        delay_ps += p.delay_ps
        serial_ps += bits // p.rate_bps
    return 2 * delay_ps + serial_ps
