"""Congestion control of the RDMA senders: DCQCN, HPCC, TIMELY and DCTCP.

All follow the HPCC ns-3 simulator's ``RdmaHw`` (alibaba-edu/
High-Precision-Congestion-Control, ``src/point-to-point/model/rdma-hw.cc``):

* **DCQCN** (Zhu et al., "Congestion Control for Large-Scale RDMA
  Deployments", SIGCOMM 2015), the Mellanox flavour of ns-3: a CNP (here an
  ACK echoing a CE mark) sets the alpha and rate-decrease bits; the first CNP
  starts the alpha timer (every ``ALPHA_RESUME_INTERVAL``) and the rate
  decrease check (every ``RATE_DECREASE_INTERVAL``, 1 ns after the alpha
  update so that the alpha update comes first). A decrease cuts the rate to
  ``rate * (1 - alpha/2)`` (not below ``MIN_RATE``) and restarts the increase
  timer (``RP_TIMER``): fast recovery for ``FAST_RECOVERY_TIMES`` periods,
  then additive (``RATE_AI``), then hyper increase (``RATE_HAI``).
* **HPCC** (Li et al., "HPCC: High Precision Congestion Control",
  SIGCOMM 2019): every ACK carries the INT records the switches pushed onto
  the data packet; the sender estimates each hop's normalized inflight
  ``U = txRate/B + min(qlen)/(B*T)``, keeps an EWMA over the base RTT, and sets
  ``R = R_c / (U/eta) + W_AI`` once per RTT (reference rate ``R_c``) and on
  every other ACK as a fast reaction (``FAST_REACT``).
* **TIMELY** (Mittal et al., "TIMELY: RTT-based Congestion Control for the
  Datacenter", SIGCOMM 2015): data packets carry their send time, ACKs echo it;
  once per RTT of data the sender compares the RTT with T_low/T_high and the
  EWMA of its gradient, adds ``RATE_AI`` (``RATE_HAI`` after 5 increases in a
  row) or cuts multiplicatively.
* **DCTCP** (Alizadeh et al., SIGCOMM 2010) over RDMA as ns-3 runs it: a rate,
  not a window; alpha is an EWMA (gain ``EWMA_GAIN``) of the marked fraction
  per RTT of data; a marked ACK cuts ``rate * (1 - alpha/2)`` once per window
  (CWR); each new RTT batch outside CWR adds ``DCTCP_RATE_AI``.

TIMELY and DCTCP assign the rate as ns-3 does (``qp->m_rate = ...``, not
``ChangeRate``): the pacing deadline of the packet already sent stays.

Rates are integer bps (docs/design.md invariant 1); products with floats are
truncated as ns-3's ``DataRate`` truncates.
"""

from __future__ import annotations

from math import gcd

from .device import ns3_tx_ps
from .packet import TM_ALPHA, TM_DECREASE, TM_RP


def set_rate(qp, new_rate_bps: int) -> None:
    """Change a QP's sending rate and its rate-scaled window as ns-3's HPCC does
    (``RdmaHw::ChangeRate``): the pacing deadline moves by the difference of the last
    packet's serialization time at the old and new rates."""
    old = qp.rate_bps
    if new_rate_bps == old:
        return
    last = qp.last_pkt_bytes
    if last:
        if qp.port.ns3_time:
            qp.next_avail_ps += ns3_tx_ps(last, new_rate_bps) - ns3_tx_ps(last, old)
        else:
            qp.next_avail_ps += -((-last * 8_000_000_000_000) // new_rate_bps) + ((-last * 8_000_000_000_000) // old)
    qp.rate_bps = new_rate_bps
    if qp.var_win and qp.win_bytes:
        w = qp.win_bytes * new_rate_bps // qp.max_rate_bps
        floor = qp.min_win_bytes
        qp.cur_win = w if w > floor else floor


def assign_rate(qp, new_rate_bps: int) -> None:
    """Set a QP's rate as ns-3's DCQCN, TIMELY and DCTCP do (``qp->m_rate = ...``): the window
    follows (``RdmaQueuePair::GetWin``), the pacing deadline does not move."""
    qp.rate_bps = new_rate_bps
    if qp.var_win and qp.win_bytes:
        w = qp.win_bytes * new_rate_bps // qp.max_rate_bps
        floor = qp.min_win_bytes
        qp.cur_win = w if w > floor else floor


def min_window_bytes(cfg) -> int:
    """Smallest QP window that cannot deadlock with coalesced ACKs (a liveness floor).

    The receiver acks only when the next expected byte reaches its milestone
    (every ``L2_ACK_INTERVAL`` bytes), a multiple of ``L2_CHUNK_SIZE`` (which
    payload steps of ``PACKET_PAYLOAD_SIZE`` hit every ``lcm(chunk, mtu)``
    bytes) or the end of the message. A window-bound sender whose window is
    below that spacing stops before the next ACK trigger and, since windows and
    rates only change on ACKs, never sends again: HPCC's ns-3 hangs there
    (e.g. ``L2_ACK_INTERVAL 20000`` once ``VAR_WIN`` shrinks the window).
    Windows are therefore never below this spacing (plus one chunk with
    ``L2_BACK_TO_ZERO``, whose ACKs are rounded down to a chunk). With
    ``L2_ACK_INTERVAL 1`` it is 1 byte: ns-3's own floor.
    """
    gap = max(1, cfg.l2_ack_interval)
    chunk = cfg.l2_chunk_size
    if chunk:
        mtu = cfg.packet_payload_bytes
        gap = min(gap, chunk * mtu // gcd(chunk, mtu))
        if cfg.l2_back_to_zero:
            gap += chunk
    return gap


# ---------------------------------------------------------------- DCQCN ----

def dcqcn_on_cnp(qp, host, t_ps: int) -> None:
    """A CNP reached the sender (``RdmaHw::cnp_received_mlx``; order: see :func:`dcqcn_timer`)."""
    qp.alpha_cnp = True
    qp.decrease_cnp = True
    if qp.first_cnp:
        qp.alpha = 1.0
        qp.alpha_cnp = False
        host.timer(t_ps + host.alpha_resume_interval_ps, qp, TM_ALPHA, 0)
        # 1 ns later so that the alpha update runs first (ns-3 comment)
        host.timer(t_ps + host.rate_decrease_interval_ps + 1000, qp, TM_DECREASE, 0)
        rate = int(host.cfg.rate_on_first_cnp * qp.rate_bps)
        qp.target_rate_bps = rate
        assign_rate(qp, rate)
        qp.first_cnp = False


def dcqcn_timer(qp, host, kind: int, gen: int, t_ps: int) -> None:
    """DCQCN timers: alpha update, rate-decrease check, rate-increase (RP) timer.

    Order of a CNP's effects, as in HPCC ns-3 ``rdma-hw.cc`` (Mellanox DCQCN;
    checked against alibaba-edu/High-Precision-Congestion-Control,
    ``simulation/src/point-to-point/model/rdma-hw.cc``):

    1. ``cnp_received_mlx`` only sets the two CNP bits; on the QP's first CNP
       it sets ``alpha = 1`` (clearing the alpha bit), schedules
       ``UpdateAlphaMlx`` at ``+ALPHA_RESUME_INTERVAL`` and
       ``CheckRateDecreaseMlx`` at ``+RATE_DECREASE_INTERVAL + 1 ns``
       ("add 1 ns to make sure rate decrease is after alpha update"), and sets
       ``rate = target = RateOnFirstCnp * rate`` (1.0: no cut yet).
    2. ``UpdateAlphaMlx`` (its own periodic timer): ``alpha = (1-g) alpha + g``
       if a CNP arrived since the last update, else ``(1-g) alpha``.
    3. ``CheckRateDecreaseMlx`` (periodic, 1 ns after an alpha update when the
       intervals are multiples): if a CNP arrived, ``target = rate`` (only when
       CLAMP_TARGET_RATE or after an increase), then ``rate = max(MIN_RATE,
       rate * (1 - alpha/2))`` with the alpha just updated, and the RP timer
       restarts (``RateIncEventTimerMlx``, every RP_TIMER).

    DCQCN sets ``m_rate`` itself, never through ``ChangeRate``: the pacing deadline keeps its
    place (:func:`assign_rate`).

    Pinned with exact numbers by ``tests/e2e/test_faults.py::test_dcqcn_cnp_order``.
    """
    if kind == TM_ALPHA:
        g = host.ewma_gain
        qp.alpha = (1 - g) * qp.alpha + g if qp.alpha_cnp else (1 - g) * qp.alpha
        qp.alpha_cnp = False
        host.timer(t_ps + host.alpha_resume_interval_ps, qp, TM_ALPHA, 0)
        return
    cfg = host.cfg
    if kind == TM_DECREASE:
        host.timer(t_ps + host.rate_decrease_interval_ps, qp, TM_DECREASE, 0)
        if qp.decrease_cnp:
            if cfg.clamp_target_rate or qp.rp_stage != 0:
                qp.target_rate_bps = qp.rate_bps
            assign_rate(qp, max(cfg.min_rate_bps, int(qp.rate_bps * (1 - qp.alpha / 2))))
            qp.rp_stage = 0
            qp.decrease_cnp = False
            qp.rp_gen += 1  # cancels the pending RP timer
            qp.rp_due_ps = t_ps + cfg.rp_timer_ps
            host.timer(qp.rp_due_ps, qp, TM_RP, qp.rp_gen)
    elif kind == TM_RP:
        if gen != qp.rp_gen:
            return
        qp.rp_due_ps = t_ps + cfg.rp_timer_ps
        host.timer(qp.rp_due_ps, qp, TM_RP, gen)
        line = qp.max_rate_bps
        if qp.rp_stage < cfg.fast_recovery_times:
            pass  # fast recovery: move halfway to the target
        elif qp.rp_stage == cfg.fast_recovery_times:
            qp.target_rate_bps = min(qp.target_rate_bps + cfg.rate_ai_bps, line)
        else:
            qp.target_rate_bps = min(qp.target_rate_bps + cfg.rate_hai_bps, line)
        assign_rate(qp, qp.rate_bps // 2 + qp.target_rate_bps // 2)
        qp.rp_stage += 1


# ----------------------------------------------------------------- HPCC ----

def dcqcn_rate_change_ps(qp, t_ps: int) -> int:
    """When a DCQCN QP's rate next changes without a new CNP: ``t_ps`` when a CNP awaits its
    decrease check (within ``RATE_DECREASE_INTERVAL``), its rate-increase timer while it is
    below its line rate (or its target is), else -1."""
    if qp.decrease_cnp:
        return t_ps
    line = qp.max_rate_bps
    if qp.rate_bps < line or qp.target_rate_bps < line:
        return qp.rp_due_ps
    return -1


def dcqcn_timer_after_skip(due_ps: int, t_ps: int, rp_timer_ps: int) -> int:
    """When a DCQCN rate-increase timer due at ``due_ps`` fires after a fast-forward that ends
    at ``t_ps``: at its own time (it runs on while the packets are skipped), or, if that
    passed, at its next period."""
    if due_ps >= t_ps:
        return due_ps
    return due_ps + -(-(t_ps - due_ps) // rp_timer_ps) * rp_timer_ps


def dcqcn_alpha_decay(cfg, d_ps: int) -> float:
    """The factor a DCQCN alpha decays by over ``d_ps`` without a CNP: once per
    ``ALPHA_RESUME_INTERVAL``."""
    return (1 - cfg.ewma_gain) ** (d_ps // cfg.alpha_resume_interval_ps)


def hpcc_shift_int(hops, d_ps: int, hop_tx_bytes: list) -> list:
    """HPCC INT records ``(ts, tx_bytes, qlen, rate)`` after a fast-forward of ``d_ps`` in
    which hop ``i``'s port sent ``hop_tx_bytes[i]`` more bytes (0 past its end)."""
    n = len(hop_tx_bytes)
    return [(ts + d_ps, tx + (hop_tx_bytes[i] if i < n else 0), qlen, rate)
            for i, (ts, tx, qlen, rate) in enumerate(hops)]


def jump_to_rate(qp, rate_bps: int, hpcc: bool) -> None:
    """Set a QP to a recorded steady rate (capped at its line rate): HPCC's reference rate
    (its window follows), or DCQCN's target rate, and the pacing rate."""
    if hpcc:
        qp.cur_rate_bps = min(rate_bps, qp.max_rate_bps)
        rate_bps = qp.cur_rate_bps
    else:
        qp.target_rate_bps = min(rate_bps, qp.max_rate_bps)
    if hpcc:
        set_rate(qp, min(rate_bps, qp.max_rate_bps))
    else:
        assign_rate(qp, min(rate_bps, qp.max_rate_bps))


def hpcc_on_ack(qp, pkt, cfg) -> None:
    """HPCC reaction to one ACK (``RdmaHw::HandleAckHp`` / ``UpdateRateHp``)."""
    hops = pkt.int_hops
    if not hops:
        return
    fast = pkt.seq <= qp.last_update_seq
    if fast and not cfg.fast_react:
        return
    next_seq = qp.snd_nxt
    if qp.last_update_seq == 0:  # first RTT: only remember the INT records
        qp.last_update_seq = next_seq
        qp.hops = list(hops)
        return
    prev = qp.hops
    U = 0.0
    dt = 0
    max_rate = qp.max_rate_bps
    win = qp.bdp_bytes  # ns-3 divides by m_win; the BDP also when HAS_WIN is 0
    for i, hop in enumerate(hops):
        ts, tx_bytes, qlen, line = hop
        if i < len(prev):
            pts, ptx, pqlen, _ = prev[i]
        else:
            pts, ptx, pqlen = ts, tx_bytes, qlen
        tau_ps = ts - pts
        if tau_ps > 0:
            tx_rate = (tx_bytes - ptx) * 8 * 1e12 / tau_ps
        else:
            tx_rate = 0.0
        u = tx_rate / line + min(qlen, pqlen) * max_rate / line / win
        if u > U:
            U = u
            dt = tau_ps
    qp.hops = list(hops)
    base = qp.base_rtt_ps
    if dt > base:
        dt = base
    qp.u = (qp.u * (base - dt) + U * dt) / base
    max_c = qp.u / cfg.u_target
    if max_c >= 1 or qp.inc_stage >= cfg.mi_thresh:
        new_rate = int(qp.cur_rate_bps / max_c + cfg.rate_ai_bps) if max_c > 0 else max_rate
        new_stage = 0
    else:
        new_rate = qp.cur_rate_bps + cfg.rate_ai_bps
        new_stage = qp.inc_stage + 1
    if new_rate < cfg.min_rate_bps:
        new_rate = cfg.min_rate_bps
    if new_rate > max_rate:
        new_rate = max_rate
    set_rate(qp, new_rate)
    if not fast:
        qp.cur_rate_bps = new_rate
        qp.inc_stage = new_stage
        if next_seq > qp.last_update_seq:
            qp.last_update_seq = next_seq


# --------------------------------------------------------------- TIMELY ----

def timely_on_ack(qp, pkt, cfg, t_ps: int) -> None:
    """TIMELY reaction to one ACK (``RdmaHw::HandleAckTimely``): an ACK past the last
    update's ``snd_nxt`` runs ``UpdateRateTimely``; others run ``FastReactTimely``, which
    does nothing. The RTT is now minus the send time the ACK echoes. The first such ACK only
    records the RTT; later ones update the gradient EWMA and the rate from ``cur_rate_bps``."""
    if pkt.seq <= qp.last_update_seq:
        return
    rtt = t_ps - pkt.sent_ps
    if qp.last_update_seq != 0:
        a = cfg.timely_alpha
        diff = (1 - a) * qp.rtt_diff_ps + a * (rtt - qp.last_rtt_ps)
        gradient = diff / cfg.timely_min_rtt_ps
        t_high = cfg.timely_t_high_ps
        c = 0.0
        if rtt < cfg.timely_t_low_ps:
            inc = True
        elif rtt > t_high:
            c = 1 - cfg.timely_beta * (1 - t_high / rtt)
            inc = False
        elif gradient <= 0:
            inc = True
        else:
            c = 1 - cfg.timely_beta * gradient
            if c < 0:
                c = 0.0
            inc = False
        if inc:
            step = cfg.rate_ai_bps if qp.inc_stage < cfg.timely_hai_rounds else cfg.rate_hai_bps
            rate = min(qp.cur_rate_bps + step, qp.max_rate_bps)
            qp.inc_stage += 1
        else:
            rate = max(cfg.min_rate_bps, int(qp.cur_rate_bps * c))
            qp.inc_stage = 0
        assign_rate(qp, rate)
        qp.cur_rate_bps = rate
        qp.rtt_diff_ps = diff
    if qp.snd_nxt > qp.last_update_seq:
        qp.last_update_seq = qp.snd_nxt
        qp.last_rtt_ps = rtt


# ---------------------------------------------------------------- DCTCP ----

def dctcp_on_ack(qp, pkt, cfg) -> None:
    """DCTCP reaction to one ACK (``RdmaHw::HandleAckDctcp``), in ns-3's order: count a
    mark; an ACK past ``last_update_seq`` closes a batch (alpha EWMA of the marked fraction,
    the next batch is the data in flight; the first batch only sets its size); CWR ends past
    ``high_seq``; a marked ACK outside CWR cuts the rate and enters CWR; a new batch outside
    CWR adds ``DCTCP_RATE_AI``."""
    ack_seq = pkt.seq
    marked = pkt.ecn
    new_batch = False
    if marked:
        qp.ecn_cnt += 1
    if ack_seq > qp.last_update_seq:
        new_batch = True
        nxt = qp.snd_nxt
        if qp.last_update_seq == 0:
            qp.batch_pkts = nxt // qp.mtu + 1
        else:
            frac = qp.ecn_cnt / qp.batch_pkts
            if frac > 1.0:
                frac = 1.0
            g = cfg.ewma_gain
            qp.alpha = (1 - g) * qp.alpha + g * frac
            qp.ecn_cnt = 0
            qp.batch_pkts = max(0, nxt - ack_seq) // qp.mtu + 1
        qp.last_update_seq = nxt
    if qp.cwr and ack_seq > qp.high_seq:
        qp.cwr = False
    if marked and not qp.cwr:
        assign_rate(qp, max(cfg.min_rate_bps, int(qp.rate_bps * (1 - qp.alpha / 2))))
        qp.cwr = True
        qp.high_seq = qp.snd_nxt
    if new_batch and not qp.cwr:
        assign_rate(qp, min(qp.max_rate_bps, qp.rate_bps + cfg.dctcp_rate_ai_bps))


def dctcp_after_skip(qp, b: int) -> None:
    """A DCTCP QP fast-forwarded by ``b`` bytes with no mark (``last_update_seq`` and the
    sequence numbers already moved): its CWR mark moves too, and alpha decays once per batch
    the skip closed. A batch closes at the first ACK past ``last_update_seq`` (a packet past
    it), and the next one is the data then in flight: one every in-flight bytes plus a packet."""
    if qp.high_seq > 0:
        qp.high_seq += b
    mtu = qp.mtu
    gap = qp.last_update_seq - qp.snd_una
    if b >= gap + mtu and qp.last_update_seq > b:
        batches = (b - gap - mtu) // (qp.snd_nxt - qp.snd_una + mtu) + 1
        qp.alpha *= (1 - qp.host.cfg.ewma_gain) ** batches
