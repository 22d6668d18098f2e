"""Memo replay: when a conflict group forms, look its transient up in the memo cache
(:mod:`pwormhole.accel.memo`), record it when it becomes steady, and apply a hit.

On a hit the group is frozen for the recorded convergence time and wakes with the recorded
bytes advanced (plus the recorded growth of the flows' bytes in flight: a frozen pipeline holds
only its own packets) and the recorded steady rates; then it is fast-forwarded on with the
recorded goodputs (:func:`plan_after_jump`). A jump cut short by a new flow advances the bytes
sent (acknowledged plus the pipeline's growth) in proportion to the time spent and also sets the
recorded rates: the joining flow must not meet the frozen state, a QP at its lookup (just started,
a short pipeline, HPCC at line rate). Lookups use sampled, replicated values only, so every rank
decides alike.
"""

from __future__ import annotations

from ..net.cc import jump_to_rate
from .config import BPS_PER_BYTE_PS, FRESH_WINDOWS, KNOWN_WINDOWS, REFILL_BUDGET
from .fastforward import inflight, room, wake_by

REFUSED = "refused"  # lookup(): a hit that a flow's tail or pipeline refill rules out


class Pending:
    """The state of a follower (:mod:`.follow`): its leader group; per follower flow id
    ``(leader's FlowState, the leader flow's bytes sent at the lookup)``; ``at``: per follower
    flow id, the leader flow's ``(bytes sent, pacing rate)`` when the leader woke (else None)."""

    __slots__ = ("leader", "lead", "at")

    def __init__(self, leader, lead: dict):
        self.leader = leader
        self.lead = lead
        self.at: dict | None = None


def is_new(fs, g, window_ps: int) -> bool:
    """Flow ``fs`` started within :data:`~.config.FRESH_WINDOWS` windows of group ``g``'s forming."""
    return fs.start_ps + FRESH_WINDOWS * window_ps >= g.formed_ps


def known(fs, g, window_ps: int) -> bool:
    """HPCC: flow ``fs`` is new in group ``g`` or its group woke from a freeze within
    :data:`~.config.KNOWN_WINDOWS` windows of ``g``'s forming: its window is the one it was frozen
    with (a steady state, or a recorded one), so its rate in the key stands for its past."""
    return is_new(fs, g, window_ps) or (fs.woke_ps >= 0 and fs.woke_ps + KNOWN_WINDOWS * window_ps >= g.formed_ps)


def due(g, t: int, flows: dict, hpcc: bool, rerouted: set, window_ps: int):
    """Whether group ``g`` (neither frozen nor backed off, not yet checked) is looked up now:
    True; False marks it checked for good (rerouted flows; an HPCC group with a flow neither
    new nor just woken (:func:`known`): its window's past is not in the key; a DCQCN rate cut or
    one pending: its timers are not in the key); None: not yet (a flow unsampled at ``t``, or
    one that has sent its last byte: what is left is looked up once it leaves)."""
    if not rerouted.isdisjoint(g.flows):
        return False
    # one pass over the flows, each read once (a group of hundreds of flows that changes at every
    # boundary is judged anew at each): a reason for False ends it, else None or True at the end
    new_from = g.formed_ps - FRESH_WINDOWS * window_ps  # is_new: started at or after this
    woke_from = g.formed_ps - KNOWN_WINDOWS * window_ps  # known: or its group woke at or after this
    sampled, sent_all = True, False
    for f in g.flows:
        fs = flows[f]
        if hpcc and fs.start_ps < new_from and (fs.woke_ps < 0 or fs.woke_ps < woke_from):
            return False
        q = fs.samples
        if not q:
            sampled = False
            continue
        s = q[-1]
        if not hpcc and (s.cc_rate_bps < fs.line_rate_bps or s.rate_change_ps >= 0):
            return False
        if s.t_ps != t:
            sampled = False
        elif s.sent_bytes >= fs.size:
            sent_all = True
    return True if sampled and not sent_all else None


def lookup(memo, g, t: int, flows: dict, window_ps: int, margin_rtts: int, parts):
    """Look group ``g`` up at ``t`` (``parts``: ``memo.group_parts``' answer for it). A miss
    (None) starts a recording (``g.memo_base``); a hit is ``(entry, mapping, wake_ps)`` or
    :data:`REFUSED` when a flow would not keep its pipeline, 4 packets and ``margin_rtts`` RTTs
    of data after the jump, or when its refill could be off by more than
    :data:`~.config.REFILL_BUDGET` of its size."""
    order, labels, edges = parts
    hit, key, graph = memo.lookup(labels, edges)
    g.memo_key = (key, graph, order)
    if hit is None:
        g.memo_base = {fid: (flows[fid].una(), inflight(flows[fid], t, 0.0)) for fid in g.flows}
        g.memo_base["@t"] = t
        return None
    entry, idx_map = hit
    mapping = {order[i]: j for i, j in idx_map.items()}  # flow id -> recorded flow index
    growth = {f: max(0, entry.flows[mapping[f]].get("inflight_growth", 0)) for f in g.flows}
    shared = min(growth.values())
    for fid in g.flows:
        fs = flows[fid]
        share = min(1.0, entry.flows[mapping[fid]]["goodput"] * BPS_PER_BYTE_PS / fs.line_rate_bps)
        if (growth[fid] - shared) * (1 - share) > REFILL_BUDGET * fs.size:
            g.memo_base = None
            return REFUSED
    for fid in g.flows:
        fs = flows[fid]
        rec = entry.flows[mapping[fid]]
        jump = rec["bytes"] + max(0, rec.get("inflight_growth", 0))
        tail = inflight(fs, t, rec["goodput"]) + 4 * fs.mtu + margin_rtts * rec["goodput"] * fs.path_rtt_ps
        if fs.size - fs.una() <= jump + tail:
            g.memo_base = None
            return REFUSED
    g.memo_base = None
    return entry, mapping, t + -(-entry.convergence_ps // window_ps) * window_ps


def record(memo, g, t: int, goodput: dict, flows: dict, hpcc: bool) -> None:
    """Insert the transient of ``g`` (recording since its lookup), now steady at ``goodput``;
    nothing when it is not consistent (faster than the line) or a DCQCN flow was cut (a replay
    could not restore its recovery timers)."""
    base = g.memo_base
    g.memo_base = None
    key, graph, order = g.memo_key
    rec = {}
    conv = t - base["@t"]
    for i, fid in enumerate(order):
        fs = flows[fid]
        una0, inflight0 = base[fid]
        b = fs.una() - una0
        if b < 0 or b * BPS_PER_BYTE_PS > fs.line_rate_bps * max(conv, 1):
            return
        if not hpcc and fs.rate() < fs.line_rate_bps:
            return
        growth = inflight(fs, t, goodput[fid]) - inflight0  # pipeline filled during the transient
        rec[i] = {"bytes": b, "goodput": goodput[fid], "rate_bps": fs.pacing_rate(), "inflight_growth": growth}
    memo.insert(key, graph, conv, rec)


def apply(g, fz, d: int, flows: dict, net, local, hpcc: bool) -> dict:
    """Bytes to advance each flow of ``g`` woken ``d`` ps after a memo jump, and the recorded
    steady rates set (local senders). A frozen flow keeps its pipeline of the lookup, so it
    advances by the bytes the recorded flow sent: acknowledged plus its pipeline's growth, over
    the whole convergence time or, for a jump cut short, scaled by ``d / convergence``."""
    if isinstance(fz.memo, Pending):
        return progress(g, fz, fz.t0 + d, flows, net, local, hpcc)
    entry, mapping = fz.memo
    whole = d >= entry.convergence_ps
    adv = {}
    for fid in g.flows:
        fs = flows[fid]
        rec = entry.flows[mapping[fid]]
        b = max(0, rec["bytes"] + rec.get("inflight_growth", 0))  # what it sent
        if not whole:
            b = b * d // max(1, entry.convergence_ps)
        adv[fid] = min(b // fs.mtu * fs.mtu, room(fs, fz.una0[fid], fz.inflight0[fid]))
        if fs.src in local:
            qp = net.sender_qp(fid)
            if qp is not None:  # the recorded pacing rate (HPCC's window follows it)
                jump_to_rate(qp, int(rec["rate_bps"]), hpcc)
    return adv


def recorded_goodputs(memo, fids) -> dict:
    """The goodputs (flow id -> bytes/ps) a memo hit ``(entry, mapping)`` recorded for flows ``fids``."""
    entry, mapping = memo
    return {f: entry.flows[mapping[f]]["goodput"] for f in fids}


def lead_position(lead, lf, t: int, since_ps: int):
    """``(bytes sent, pacing rate)`` of flow ``lf`` of leader group ``lead`` at ``t``: while
    ``lead`` is frozen in a steady skip, the advance its wake at ``t`` would make; else its
    last sample (taken at or after ``since_ps``; None without one), past it at the rate of the
    last sampling period (or its pacing rate)."""
    q = lf.samples
    s = q[-1] if q and q[-1].t_ps >= since_ps else None
    if s is None:
        return None
    fz = lead.frozen
    f = lf.fid
    if fz is not None and fz.memo is None:
        b = min(int(fz.goodput[f] * (t - fz.t0)) // lf.mtu * lf.mtu, room(lf, fz.una0[f], fz.inflight0[f]))
        return fz.una0[f] + fz.inflight0[f] + b, s.rate_bps
    sent = s.sent_bytes
    if t > s.t_ps:
        p = q[-2] if len(q) > 1 and q[-2].t_ps >= since_ps else None
        rate = ((s.sent_bytes - p.sent_bytes) / (s.t_ps - p.t_ps) if p is not None
                else min(s.rate_bps, lf.line_rate_bps) / BPS_PER_BYTE_PS)
        sent += int(rate * (t - s.t_ps))
    return sent, s.rate_bps


def progress(g, fz, t: int, flows: dict, net, local, hpcc: bool) -> dict:
    """Bytes to advance each flow of a follower ``g`` woken at ``t``: its leader flow's bytes
    sent since the lookup (``fz.memo.at``, else :func:`lead_position`), and that flow's pacing
    rate set (local senders)."""
    pend = fz.memo
    adv = {}
    for fid in g.flows:
        fs = flows[fid]
        lf, sent0 = pend.lead[fid]
        pos = pend.at[fid] if pend.at is not None else lead_position(pend.leader, lf, t, fz.t0)
        b = 0 if pos is None else max(0, pos[0] - sent0)
        adv[fid] = min(b // fs.mtu * fs.mtu, room(fs, fz.una0[fid], fz.inflight0[fid]))
        if pos is not None and fs.src in local:
            qp = net.sender_qp(fid)
            if qp is not None:
                jump_to_rate(qp, pos[1], hpcc)
    return adv


def plan_after_jump(g, t: int, fz, adv: dict, flows: dict, margin_rtts: int):
    """``(goodput, una, wake_ps)`` to fast-forward ``g`` on after a whole memo jump with the
    recorded goodputs, or None (a recorded goodput of 0). The wake is timed from the frozen
    pipeline plus the recorded growth (the packet run has those bytes in flight)."""
    entry, mapping = fz.memo
    goodput, una = {}, {}
    wake = None
    for fid in g.flows:
        fs = flows[fid]
        rec = entry.flows[mapping[fid]]
        gp = rec["goodput"]
        if gp <= 0:
            return None
        goodput[fid] = gp
        una[fid] = fz.una0[fid] + adv.get(fid, 0)
        growth = min(rec.get("inflight_growth", 0), adv.get(fid, 0))
        done = wake_by(fs, t, una[fid] - growth, gp, margin_rtts, {fid: fz.inflight0[fid] + growth})
        wake = done if wake is None or done < wake else wake
    return goodput, una, wake
