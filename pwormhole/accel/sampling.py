"""Samples of a flow's sender state, taken at window boundaries by the sender's process."""

from __future__ import annotations

from itertools import chain
from typing import NamedTuple

from .config import BPS_PER_BYTE_PS


class Sample(NamedTuple):
    """One sample of a flow (a tuple: exchanged between ranks and kept by the thousand)."""

    t_ps: int  # the boundary it was taken at
    rate_bps: int  # CC rate: DCQCN's rate; HPCC's window over its base RTT (its pacing rate without a window)
    una_bytes: int  # bytes acknowledged
    una_ps: int  # when the last ACK advanced una_bytes
    sent_bytes: int  # highest byte sent (after a go-back-N, packets up to it are still in the network)
    rp_due_ps: int  # when a pending DCQCN rate-increase timer will change the rate (-1: none)
    cnps: int  # CNPs received so far
    pacing_rate_bps: int  # the QP's pacing rate


def take_samples(t: int, due_flows, flows: dict, nodes, local, hpcc: bool) -> list:
    """Sorted ``(flow id, Sample)`` at ``t`` of the flows in ``due_flows`` (iterables of flow
    ids) whose sender node is in ``local``; ``flows``: flow id -> FlowState."""
    samples = []
    for fid in chain.from_iterable(due_flows):
        src = flows[fid].src
        if src not in local:
            continue
        qp = nodes[src].sqp.get(fid)
        if qp is not None:
            rp_due = -1
            if hpcc and qp.win_bytes:
                rate = qp.cur_win * BPS_PER_BYTE_PS // max(1, qp.base_rtt_ps)
            else:
                rate = qp.rate_bps
                line = qp.max_rate_bps
                if not hpcc:
                    if qp.decrease_cnp:
                        rp_due = t  # a CNP came: the next decrease check (<= 4 us) cuts the rate
                    elif rate < line or qp.target_rate_bps < line:
                        rp_due = qp.rp_due_ps  # the DCQCN rate changes when this timer fires
            nxt = qp.snd_nxt
            if qp.max_sent > nxt:
                nxt = qp.max_sent
            samples.append((fid, Sample(t, rate, qp.snd_una, qp.una_ps, nxt, rp_due, qp.cnps_rx, qp.rate_bps)))
    samples.sort()
    return samples
