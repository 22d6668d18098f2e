"""Samples of a flow's sender state, taken at window boundaries by the sender's process."""

from __future__ import annotations

from itertools import chain
from typing import NamedTuple

from .config import (
    BACKOFF_AFTER_SAMPLES,
    BACKOFF_EVERY,
    BACKOFF_MAX,
    BACKOFF_MAX_UNSETTLED,
    BACKOFF_MIN_FLOWS,
    BACKOFF_UNSETTLED_CHECKS,
)


class Sample(NamedTuple):
    """One sample of a flow (a tuple: exchanged between ranks and kept by the thousand): the fields
    of ``net.host.QPSnapshot`` in their order, read at a boundary."""

    t_ps: int  # the boundary it was taken at
    rate_bps: int  # CC rate: DCQCN's rate; HPCC's window over its base RTT (its pacing rate without a window)
    una_bytes: int  # bytes acknowledged
    una_ps: int  # when the last ACK advanced una_bytes
    sent_bytes: int  # highest byte sent (after a go-back-N, packets up to it are still in the network)
    rp_due_ps: int  # when a pending DCQCN rate-increase timer will change the rate (-1: none)
    cnps: int  # CNPs received so far
    pacing_rate_bps: int  # the QP's pacing rate


def sample_of(values) -> Sample:
    """A :class:`Sample` of its fields' integers, in their order (a list or tuple)."""
    return tuple.__new__(Sample, values)


def take_samples(t: int, due_flows, flows: dict, net, local) -> list:
    """Sorted ``(flow id, Sample)`` at ``t`` of the flows in ``due_flows`` (iterables of flow
    ids) whose sender node is in ``local``; ``flows``: flow id -> FlowState."""
    samples = []
    make = tuple.__new__  # Sample's own constructor is Python code
    nodes = net.nodes  # (net.sender_qp, inlined)
    for fid in chain.from_iterable(due_flows):
        src = flows[fid].src
        if src not in local:
            continue
        qp = nodes[src].sqp.get(fid)
        if qp is not None:
            samples.append((fid, make(Sample, qp.snapshot(t))))
    samples.sort()
    return samples


def merge_reports(reports):
    """Merge Wormhole's ``(started flow ids, samples or None[, (carried starts, receipts)])`` reports
    of several LPs or ranks (order-independent)."""
    started: list = []
    sampled: list = []
    carried: list = []
    receipts: list = []
    any_samples = rings = False
    for rep in reports:
        st, sm = rep[0], rep[1]
        if st:
            started.extend(st)
        if sm is not None:
            any_samples = True
            sampled.extend(sm)
        if len(rep) > 2:
            rings = True
            carried.extend(rep[2][0])
            receipts.extend(rep[2][1])
    if len(started) > 1:
        started.sort()
    if len(sampled) > 1:
        sampled.sort()
    if rings:
        return started, (sampled if any_samples else None), (sorted(carried), sorted(receipts))
    return started, (sampled if any_samples else None)


def store_samples(samples, flows: dict, groups: dict, keep: int, keep_backed_off: int) -> None:
    """Append each ``(flow id, Sample)`` to its flow's history unless the flow left the table or
    its group is frozen; a flow keeps ``keep`` samples, ``keep_backed_off`` in a backed-off group."""
    flows_get = flows.get
    for fid, sample in samples:
        fs = flows_get(fid)
        if fs is None:
            continue
        g = groups[fs.group_cell[0]]
        if g.frozen is not None:
            continue
        q = fs.samples
        q.append(sample)
        limit = keep_backed_off if g.backoff_periods else keep
        while len(q) > limit:
            q.popleft()


def back_off(g, t: int, sample_ps: int, samples: int) -> None:
    """Group ``g`` is checked at ``t``: once at least :data:`~.config.BACKOFF_MIN_FLOWS` flows
    have been unsteady for its dense phase (:data:`~.config.BACKOFF_AFTER_SAMPLES` periods after
    it formed; ``2 x samples`` for what is left after a departure; none once
    :data:`~.config.BACKOFF_UNSETTLED_CHECKS` checks failed), its next check is
    ``backoff_periods`` sampling periods on, doubled at each check up to
    :data:`~.config.BACKOFF_MAX` (:data:`~.config.BACKOFF_MAX_UNSETTLED` after that many)."""
    if len(g.flows) < BACKOFF_MIN_FLOWS:
        return
    unsettled = g.unsettled >= BACKOFF_UNSETTLED_CHECKS
    dense = BACKOFF_AFTER_SAMPLES if not g.backoff_periods else 0 if unsettled else 2 * samples
    if g.formed_ps > t - dense * sample_ps:
        return
    g.unsettled += 1
    top = BACKOFF_MAX_UNSETTLED if unsettled else BACKOFF_MAX
    g.backoff_periods = min(top, 2 * g.backoff_periods) if g.backoff_periods else BACKOFF_EVERY
    g.next_check_ps = t + g.backoff_periods * sample_ps
