"""Steadiness tests of a conflict group (pure functions of the samples and the flow table).

A flow is steady when, over its last ``samples`` samples since its group last changed, its
CC rate varies by less than ``theta`` of its mean, and over the goodput span (the last samples
holding ``min_span_packets`` packets, ACK-timed from :data:`~.config.SETTLE_RTTS` path RTTs
after the group's newest flow started) the goodputs of its halves agree to ``theta``, its bytes
in flight hold, and it received no CNP. A group is steady when all its flows are, none of its
switch ports fills (:func:`fills_a_queue`), and under HPCC its flows are near their max-min
shares (:func:`hpcc_unfair`). Under HPCC a group not yet steady so is frozen earlier, with
HPCC's fluid steady state (:func:`hpcc_model`), when its recent goodputs (:func:`recent_goodput`)
are near that state and its windows agree (:func:`hpcc_early`). Under DCQCN a group whose flows
all send at their line rate is frozen at once with its NICs' round-robin shares
(:func:`line_rate_ready`, :func:`line_rate_shares`): nothing is left to settle there.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from itertools import islice
from math import inf as INF
from typing import NamedTuple

from ..net.switch import SwitchPort
from .config import (
    BPS_PER_BYTE_PS,
    FIFO_SATURATION,
    HPCC_FAIRNESS,
    HPCC_LIFT_MAX_NICS,
    HPCC_MODEL_LAYOUTS,
    HPCC_SATURATION,
    INFLIGHT_BASELINE_SPANS,
    INFLIGHT_SLACK_PACKETS,
    LINE_RATE_WINDOW_SHARE,
    MAX_MIN_ROUNDS,
    OVERLOAD_SLACK,
    SETTLE_RTTS,
)
from .solvers import fifo_solve, max_min, max_min_shares


class NetFacts(NamedTuple):
    """What the tests need of the network's settings."""

    ack_every_pkts: int  # packets per ACK
    ack_bytes: int  # wire bytes of an ACK
    var_win: bool  # VAR_WIN: the window scales with the rate
    min_win_bytes: int  # the smallest window the CC enforces
    rate_bound: bool  # RATE_BOUND: senders are paced at their CC rate
    ack_high_prio: bool  # ACK_HIGH_PRIO: ACKs do not wait in their flow's queue
    u_target: float  # HPCC's target utilization
    rate_ai_bps: int  # HPCC's additive increase per update


def goodput(fs, since: int, newest_start_ps: int, samples: int, theta: float, min_span_packets: int):
    """Bytes per ps of flow ``fs`` over its steady span, or None when not steady (or too few
    samples). ``since``: when its group last changed (older samples are not used);
    ``newest_start_ps``: the boundary that reported the group's latest flow start. Cost: the
    last ``samples`` samples, then two binary searches (times and acked bytes never decrease
    within a history, which a wake clears)."""
    q = fs.samples
    need = samples
    if len(q) < need:
        return None
    last = list(islice(reversed(q), need))  # newest first
    if last[-1].t_ps < since or last[-1].una_bytes <= 0:
        return None
    rates = [x.cc_rate_bps for x in last]
    mean = sum(rates) / need
    if mean <= 0 or (max(rates) - min(rates)) / mean >= theta:
        return None
    # the span, ACK-timed (exact event times, not quantized by the boundaries)
    b1, t1 = last[0].una_bytes, last[0].una_ps
    want = min_span_packets * fs.mtu
    if b1 - q[0].una_bytes < want:  # not enough bytes in the whole history
        return None
    n = len(q)
    # from the newest sample j with b1 - una(j) >= want (and at least `need` samples), among those
    # taken since the group formed and ACK-timed SETTLE_RTTS path RTTs after its newest flow started
    settled = max(since, newest_start_ps + int(SETTLE_RTTS * fs.path_rtt_ps))
    lo = bisect_left(q, True, key=lambda x: x.t_ps >= since and x.una_ps >= settled and x.una_bytes > 0)
    j = min(n - need, bisect_right(q, b1 - want, key=lambda x: x.una_bytes) - 1)
    if j < lo:
        return None
    if q[j].cnps != last[0].cnps:  # a CNP during the span: DCQCN cuts the rate at its next check
        return None
    b0, t0 = q[j].una_bytes, q[j].una_ps
    mid = q[n - 1 - (n - j) // 2]
    bm, tm = mid.una_bytes, mid.una_ps
    if t1 <= tm or tm <= t0 or b1 <= bm or bm <= b0:
        return None
    g1 = (bm - b0) / (tm - t0)
    g2 = (b1 - bm) / (t1 - tm)
    if abs(g1 - g2) / g2 >= theta:
        return None
    # the bytes in flight must hold (a sender faster than its goodput fills a queue)
    grow = (last[0].sent_bytes - last[0].una_bytes) - (q[j].sent_bytes - q[j].una_bytes)
    if abs(grow) > theta * (b1 - b0) + INFLIGHT_SLACK_PACKETS * fs.mtu:
        return None
    # and over a longer baseline where the history has one (a slowly filling queue)
    k = max(lo, n - 1 - INFLIGHT_BASELINE_SPANS * (n - 1 - j))
    if k < j:
        grow = (last[0].sent_bytes - last[0].una_bytes) - (q[k].sent_bytes - q[k].una_bytes)
        if abs(grow) > theta * (b1 - q[k].una_bytes) + INFLIGHT_SLACK_PACKETS * fs.mtu:
            return None
    return (b1 - b0) / (t1 - t0)


def enforced_window(fs, rate_bps: int, facts: NetFacts) -> int:
    """The window the sender of ``fs`` enforces at ``rate_bps`` (bytes; 0: none): ``SendQP.cur_win``,
    which ``VAR_WIN`` scales with the rate (``cc.set_rate``)."""
    win = fs.win_bytes
    if win and facts.var_win:
        win = max(facts.min_win_bytes, win * rate_bps // fs.line_rate_bps)
    elif win:
        win = max(facts.min_win_bytes, win)
    return win


def window_bound(fs, samples: int, facts: NetFacts, every: bool) -> bool:
    """Whether flow ``fs`` has its enforced window in flight, bytes left to send, at each of its
    last ``samples`` samples (``every``), or at one of them."""
    win = enforced_window(fs, fs.rate(), facts)
    if not win or fs.samples[-1].sent_bytes >= fs.size:
        return False
    full = [x.sent_bytes - x.una_bytes >= win - 2 * fs.mtu for x in islice(reversed(fs.samples), samples)]
    return all(full) if every else any(full)


def port_loads(flows: list, goodput: dict, facts: NetFacts) -> tuple:
    """``(data, acks)``: bytes/ps into each port of the flows' data (wire bytes, at ``goodput``)
    and of their ACKs (one per ``ack_every_pkts`` packets)."""
    data: dict = {}
    acks: dict = {}
    for fs in flows:
        gp = goodput[fs.fid]
        ack = gp / (fs.mtu * facts.ack_every_pkts) * facts.ack_bytes
        for p in fs.ack_ports:
            acks[p] = acks.get(p, 0.0) + ack
        wire = gp * fs.wire_bytes / fs.mtu
        for p in fs.data_ports:
            data[p] = data.get(p, 0.0) + wire
    return data, acks


def fills_a_queue(flows: list, goodput: dict, facts: NetFacts, theta: float = 0.0) -> bool:
    """The flows (sorted by id) send more into one of their switch ports than it forwards, and
    one crossing it is not window-bound: its queue grows, so the group is not steady (DCQCN, and
    HPCC without a window). A flow sends its goodput when its window is full or all is sent,
    else its paced rate, within its max-min share of its NIC less the ACKs the NIC sends.
    With ``theta``, also when a flow at its line rate, not window-bound, has a goodput more than
    ``theta`` under its share of its NIC: its bytes in flight grow (its ACKs wait in a filling
    queue), and its goodput is not yet that share. Flows paced under the line rate are not so
    compared (QPs sharing a NIC get less than their rates without any queue)."""
    load = port_loads(flows, goodput, facts)[1]  # ACKs first (at the goodput's pace)
    by_nic: dict = {}
    for fs in flows:
        by_nic.setdefault(fs.data_ports[0], []).append(fs)
    fillers: set = set()  # ports crossed by the data of a flow whose window is not full
    free: set = set()  # those flows
    for nic, fss in by_nic.items():
        room = nic.rate_bps / BPS_PER_BYTE_PS - load.get(nic, 0.0)  # control packets go first
        asks = []
        for fs in fss:
            last = fs.samples[-1]
            win = enforced_window(fs, fs.rate(), facts)
            if (win and last.sent_bytes - last.una_bytes >= win - 2 * fs.mtu) or last.sent_bytes >= fs.size:
                ask = goodput[fs.fid] * fs.wire_bytes / fs.mtu  # window full, or draining: bounded
            else:
                ask = (fs.rate() if facts.rate_bound else fs.line_rate_bps) / BPS_PER_BYTE_PS
                fillers.update(fs.data_hops)
                free.add(fs.fid)
            asks.append((ask, fs.fid, fs))
        asks.sort()
        for i, (ask, fid, fs) in enumerate(asks):
            sends = min(ask, max(0.0, room) / (len(asks) - i))  # max-min share of the NIC
            room -= sends
            if (theta and fid in free and fs.rate() >= fs.line_rate_bps
                    and goodput[fid] * fs.wire_bytes / fs.mtu < (1 - theta) * sends):
                return True
            for p in fs.data_hops:
                load[p] = load.get(p, 0.0) + sends
    return any(p in fillers and b > (1 + OVERLOAD_SLACK) * p.rate_bps / BPS_PER_BYTE_PS for p, b in load.items())


def hpcc_unfair(flows: list, goodput: dict, facts: NetFacts) -> bool:
    """HPCC: a flow (of ``flows``, sorted by id) is more than :data:`~.config.HPCC_FAIRNESS` off
    its max-min share at the group's saturated ports of one priority, where HPCC's additive
    increase slowly moves it: not steady yet (each port's capacity is the data load it carries)."""
    if len(flows) < 2:
        return False
    load, ack_load = port_loads(flows, goodput, facts)
    crossing: dict = {}
    for fs in flows:
        for p in fs.data_ports:
            crossing.setdefault(p, []).append(fs.fid)
    pg = {fs.fid: fs.pg for fs in flows}
    u = facts.u_target
    room = {p: b for p, b in load.items()
            if b + ack_load.get(p, 0.0) >= (1 - HPCC_SATURATION) * u * p.rate_bps / BPS_PER_BYTE_PS
            and len({pg[f] for f in crossing[p]}) == 1}  # strict priorities are not max-min
    if not any(len(crossing[p]) > 1 for p in room):
        return False
    data_ports = {fs.fid: fs.data_ports for fs in flows}
    share = max_min_shares(room, crossing, data_ports)
    wire = {fs.fid: fs.wire_bytes / fs.mtu for fs in flows}
    return any(abs(goodput[f] * wire[f] - s) > HPCC_FAIRNESS * s for f, s in share.items())


def fifo_shares(flows: list, goodput: dict, samples: int, facts: NetFacts) -> None:
    """Replace (in place) the measured goodputs of window-bound flows (``flows``, sorted by id)
    whose bottlenecks are FIFO switch queues by their long-run shares (:func:`~.solvers.fifo_solve`;
    DCQCN with windows): a span reads each at a different point of a slow swing. Window-bound: the
    enforced window in flight at each of the last ``samples`` samples, bytes left to send. A port
    the shares would overload (read just under saturation) joins the model and it is solved again;
    the measured goodputs stand when that fails."""
    bound = {fs.fid for fs in flows if window_bound(fs, samples, facts, True)}
    if not bound:
        return
    load, ack_load = port_loads(flows, goodput, facts)
    crossing: dict = {}  # port -> the flows whose data cross it
    for fs in flows:
        for p in fs.data_ports:
            crossing.setdefault(p, []).append(fs)
    saturated = {p for p, b in load.items()
                 if b + ack_load.get(p, 0.0) >= (1 - FIFO_SATURATION) * p.rate_bps / BPS_PER_BYTE_PS}
    win_bytes: dict[int, int] = {}
    pace: dict[int, float] = {}
    for fs in flows:
        if fs.fid in bound:  # it sends while less than its window is in flight: up to the next whole packet
            win_bytes[fs.fid] = -(-enforced_window(fs, fs.rate(), facts) // fs.mtu) * fs.wire_bytes
            pace[fs.fid] = (fs.rate() if facts.rate_bound else fs.line_rate_bps) / BPS_PER_BYTE_PS
    while True:
        new = fifo_solve(flows, bound, crossing, saturated, ack_load, win_bytes, pace, not facts.ack_high_prio)
        if new is None:
            return  # the measured goodputs stand
        load2, ack_load2 = port_loads(flows, {**goodput, **new}, facts)
        over = {p for p, b in load2.items()
                if b + ack_load2.get(p, 0.0) > (1 + OVERLOAD_SLACK) * p.rate_bps / BPS_PER_BYTE_PS}
        if not over:
            goodput.update(new)
            return
        if over <= saturated:
            return  # a port it overloads could not be modelled
        saturated |= over


def hpcc_model(flows: list, goodput: dict, facts: NetFacts, known: dict | None = None):
    """HPCC's fluid steady state of the flows (sorted by id): ``{flow id: payload bytes/ps}``,
    their max-min shares where a switch port (an INT hop) carries ``u_target`` of its rate
    lifted by the additive step (:func:`hpcc_lift`) and a NIC port its rate, the ACKs (at the
    shares' pace) served first; None where a port carries data of two priorities (strict
    priorities are not max-min). ``goodput`` seeds the ACK loads and the lifts; at most
    :data:`~.config.MAX_MIN_ROUNDS` rounds of their fixed point. ``known``: the fixed points
    reached before, by the flows' layout (their ports, priority and packet sizes in order): one
    that converged does not depend on the seed, so a group checked again reuses it."""
    key = None
    if known is not None:
        key = tuple((tuple(fs.data_ports), tuple(fs.ack_ports), fs.pg, fs.wire_bytes, fs.mtu) for fs in flows)
        hit = known.get(key)
        if hit is not None:
            return dict(zip([fs.fid for fs in flows], hit))
    crossing: dict = {}
    for fs in flows:
        for p in fs.data_ports:
            crossing.setdefault(p, []).append(fs)
    if any(len({fs.pg for fs in v}) > 1 for v in crossing.values()):
        return None
    fids = {p: [fs.fid for fs in v] for p, v in crossing.items()}
    data_ports = {fs.fid: fs.data_ports for fs in flows}
    g = dict(goodput)
    # of each port, its capacity (bytes/ps) where it is not lifted; the switch ports from few
    # NICs, whose lift (hpcc_lift) follows the goodputs: their rate in bytes/ps
    base: dict = {}
    lifted: dict = {}
    for p in crossing:
        rate = p.rate_bps / BPS_PER_BYTE_PS
        if not isinstance(p, SwitchPort):
            base[p] = rate * 1.0
        elif len({fs.data_ports[0] for fs in crossing[p]}) <= HPCC_LIFT_MAX_NICS:
            lifted[p] = rate
        else:
            base[p] = rate * (facts.u_target * 1.0)
    ack_every, ack_bytes, u = facts.ack_every_pkts, facts.ack_bytes, facts.u_target
    for _ in range(MAX_MIN_ROUNDS):
        acks: dict = {}  # (port_loads' ACK loads)
        for fs in flows:
            ack = g[fs.fid] / (fs.mtu * ack_every) * ack_bytes
            for p in fs.ack_ports:
                acks[p] = acks.get(p, 0.0) + ack
        wire = {fs.fid: g.get(fs.fid, 0.0) * fs.wire_bytes / fs.mtu for fs in flows}
        room = {p: (base[p] if p in base else
                    lifted[p] * (u * lift_at(max(map(wire.__getitem__, fids[p])) * BPS_PER_BYTE_PS, facts)))
                - acks.get(p, 0.0) for p in crossing}
        share = max_min_shares(room, fids, data_ports)
        new = {fs.fid: share[fs.fid] * fs.mtu / fs.wire_bytes for fs in flows}
        done = all(abs(new[f] - g.get(f, 0.0)) <= 1e-9 * new[f] for f in new)
        g = new
        if done:
            if known is not None and key is not None:
                if len(known) >= HPCC_MODEL_LAYOUTS:
                    known.clear()
                known[key] = tuple(g[fs.fid] for fs in flows)
            break
    return g


def hpcc_lift(flows: list, goodput: dict, facts: NetFacts) -> float:
    """How far over ``u_target`` HPCC holds the throughput of a switch port that flows from at
    most ``HPCC_LIFT_MAX_NICS`` NICs cross: a flow limited there settles where its update
    (``rate / (U / u_target) + rate_ai``, ns-3's ``UpdateRateHp``) keeps its rate r, at
    U = u_target x r / (r - rate_ai), at most 1; r is the port's fastest flow (wire rate, from
    ``goodput``). From more NICs a standing queue, not throughput, makes up U (1.0)."""
    if len({fs.data_ports[0] for fs in flows}) > HPCC_LIFT_MAX_NICS:
        return 1.0
    return lift_at(max(goodput.get(fs.fid, 0.0) * fs.wire_bytes / fs.mtu for fs in flows) * BPS_PER_BYTE_PS, facts)


def lift_at(top: float, facts: NetFacts) -> float:
    """:func:`hpcc_lift` of a port from at most ``HPCC_LIFT_MAX_NICS`` NICs whose fastest flow's
    wire rate is ``top`` (bits/s)."""
    ai, u = facts.rate_ai_bps, facts.u_target
    return top / (top - ai) if top * (1 - u) > ai else 1 / u


def per_flow(flows: list, rate_of, *args, failed: list | None = None, slot: int = 0):
    """``{flow id: rate_of(flow, *args)}`` for each of ``flows``, or None as soon as one is None
    (its id then goes to ``failed[slot]``, where given)."""
    out = {}
    for fs in flows:
        r = rate_of(fs, *args)
        if r is None:
            if failed is not None:
                failed[slot] = fs.fid
            return None
        out[fs.fid] = r
    return out


def recent_goodput(fs, since: int, newest_start_ps: int, samples: int, min_packets: int):
    """Bytes per ps of flow ``fs`` (ACK-timed) over its last ``samples`` samples, or back to the
    newest earlier sample that makes them hold ``min_packets`` packets (a slow flow's span is
    as long as it needs, up to ``2 * samples`` samples), or None when that span starts before
    its group last changed
    (``since``) or :data:`~.config.SETTLE_RTTS` path RTTs after the group's newest flow, or the
    flow has sent its last byte."""
    q = fs.samples
    n = len(q)
    if n < samples + 1:
        return None
    b = q[-1]
    if b.sent_bytes >= fs.size:
        return None
    j = min(n - 1 - samples, bisect_right(q, b.una_bytes - min_packets * fs.mtu, key=lambda x: x.una_bytes) - 1)
    if j < max(0, n - 1 - 2 * samples):
        return None
    a = q[j]
    if a.t_ps < since or a.una_ps < newest_start_ps + int(SETTLE_RTTS * fs.path_rtt_ps) or a.una_bytes <= 0:
        return None
    if b.una_ps <= a.una_ps:
        return None
    return (b.una_bytes - a.una_bytes) / (b.una_ps - a.una_ps)


def hpcc_early(flows: list, measured: dict, facts: NetFacts, tolerance: float, window_spread: float,
               known: dict | None = None):
    """HPCC's fluid steady state (:func:`hpcc_model`) of the flows (sorted by id) when each
    one's ``measured`` goodput is within ``tolerance`` of it and the windows agree with it,
    else None: the group is near the state its damped oscillation settles to, and the rest of
    the oscillation moves few bytes. Windows agree when, among flows with the same path RTT,
    window over fluid goodput (their RTT with the queues, the same at a shared bottleneck)
    spreads by at most ``window_spread``: a newcomer that has not yet given up its window to
    the flows under way can share a port equally for a while, then takes more. Flows of one NIC
    count as their slowest: its round robin holds a flow paced above its share to the pace of
    the others (each of its packets waits for theirs). ``known``: as :func:`hpcc_model`'s."""
    model = hpcc_model(flows, measured, facts, known)
    if model is None:
        return None
    per_rtt: dict = {}
    for fs in flows:
        m = model[fs.fid]
        if m <= 0 or abs(measured[fs.fid] - m) > tolerance * m:
            return None
        if fs.pacing_rate() < (1 - tolerance) * m * BPS_PER_BYTE_PS:  # paced under it: slowing down
            return None
        nic = per_rtt.setdefault(fs.path_rtt_ps, {})
        nic[fs.data_ports[0]] = min(nic.get(fs.data_ports[0], INF), fs.rate() / m)
    if any(max(v.values()) > (1 + window_spread) * min(v.values()) for v in per_rtt.values()):
        return None
    return model


def line_rate_ready(fs, t: int, settled_from_ps: int) -> bool:
    """DCQCN: whether flow ``fs``, sampled at ``t`` with bytes left to send, has its CC and pacing
    rates at its line rate and no rate change pending (no CNP has cut it since it reached that
    rate), its pipeline full (:data:`~.config.SETTLE_RTTS` path RTTs after ``settled_from_ps``, the
    start of its group's newest flow)."""
    q = fs.samples
    if not q:
        return False
    s = q[-1]
    return (s.t_ps == t and s.sent_bytes < fs.size and s.rate_change_ps < 0 and s.cc_rate_bps >= fs.line_rate_bps
            and s.rate_bps >= fs.line_rate_bps and t >= settled_from_ps + SETTLE_RTTS * fs.path_rtt_ps)


def line_rate_shares(flows: list, facts: NetFacts, known: dict):
    """DCQCN: the goodputs (bytes/ps) of a group whose flows (sorted by id) are all
    :func:`line_rate_ready`, or None. Such flows get their NIC's round-robin shares (it splits its
    rate equally among its QPs after its ACKs) as long as no switch port is over its rate at those
    shares (a switch bottleneck would queue, mark and cut them) and no flow's window binds (at most
    :data:`~.config.LINE_RATE_WINDOW_SHARE` of it in flight). The shares are kept in ``known`` by
    the flows' layout."""
    layout = tuple((tuple(fs.data_ports), tuple(fs.ack_ports), fs.pg, fs.wire_bytes) for fs in flows)
    rates = known.get(layout)
    if rates is None:
        if len(known) >= HPCC_MODEL_LAYOUTS:
            known.clear()
        rates = known[layout] = _line_rate_solve(flows, facts)
    if not rates:
        return None
    out = {}
    for fs, r in zip(flows, rates):
        gp = r * fs.mtu / fs.wire_bytes
        win = enforced_window(fs, fs.rate(), facts)
        if win and gp * fs.path_rtt_ps > LINE_RATE_WINDOW_SHARE * win:
            return None
        out[fs.fid] = gp
    return out


def _line_rate_solve(flows: list, facts: NetFacts) -> tuple:
    """The flows' data rates (wire bytes/ps, in order) when each NIC port splits its rate equally
    among its flows after the ACKs it sends (:func:`~.solvers.max_min` over the first hops alone:
    its round robin), or () when at those rates a switch port would be over its rate
    (:data:`~.config.OVERLOAD_SLACK`: it queues, marks and DCQCN cuts the flows) or carries data of
    two priorities (strict priorities are not max-min)."""
    first: dict = {}
    nic_acks: dict = {}
    pg_of: dict = {}
    for fs in flows:
        first.setdefault(fs.data_ports[0], []).append(fs.fid)
        for p in fs.data_ports:
            if pg_of.setdefault(p, fs.pg) != fs.pg:
                return ()
        per_wire = facts.ack_bytes / (facts.ack_every_pkts * fs.wire_bytes)  # ACK bytes per data wire byte
        for p in fs.ack_ports:
            if not isinstance(p, SwitchPort):
                nic_acks.setdefault(p, []).append((fs.fid, per_wire))
    rate = max_min(first, nic_acks, [fs.fid for fs in flows])
    load: dict = {}
    for fs in flows:
        r = rate[fs.fid]
        for p in fs.data_hops:
            load[p] = load.get(p, 0.0) + r
        ack = r * facts.ack_bytes / (facts.ack_every_pkts * fs.wire_bytes)
        for p in fs.ack_ports:
            load[p] = load.get(p, 0.0) + ack
    for p, b in load.items():
        if isinstance(p, SwitchPort) and b > (1 + OVERLOAD_SLACK) * p.rate_bps / BPS_PER_BYTE_PS:
            return ()
    return tuple(rate[fs.fid] for fs in flows)
