"""Samples of a flow's sender state, taken at window boundaries by the sender's process."""

from __future__ import annotations

from itertools import chain

from ..net.snapshot import QPSnapshot
from .config import (
    BACKOFF_AFTER_SAMPLES,
    BACKOFF_EVERY,
    BACKOFF_MAX,
    BACKOFF_MAX_UNSETTLED,
    BACKOFF_MIN_FLOWS,
    BACKOFF_UNSETTLED_CHECKS,
)

Sample = QPSnapshot
"""One sample of a flow: its sender's :class:`~pwormhole.net.snapshot.QPSnapshot` at a boundary (exchanged
between ranks as its eight integers, kept by the thousand)."""


def sample_of(values) -> Sample:
    """A :class:`Sample` of its fields' integers, in their order (a list or tuple)."""
    return QPSnapshot(*values)


def take_samples(t: int, due_flows, flows: dict, net, local) -> list:
    """``(flow id, Sample)`` at ``t`` of the flows in ``due_flows`` (iterables of flow ids) whose
    sender node is in ``local``, in no order (each goes to its own flow's history: :func:`store_samples`);
    ``flows``: flow id -> FlowState."""
    samples = []
    nodes = net.nodes  # (net.sender_qp, inlined)
    for fid in chain.from_iterable(due_flows):
        fs = flows[fid]
        src = fs.src
        if src not in local:
            continue
        host = nodes[src]
        qp = host.sqp.get(fid)
        if qp is not None:
            samples.append((fid, qp.snapshot(t)))
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
    if rings:
        return started, (sampled if any_samples else None), (sorted(carried), sorted(receipts))
    return started, (sampled if any_samples else None)


def store_samples(samples, flows: dict, groups: dict, keep: int, keep_backed_off: int) -> None:
    """Append each ``(flow id, Sample)`` to its flow's history unless the flow left the table, its
    group is frozen or it woke since the sample was taken (a fast-forwarded part that woke at this
    boundary); a flow keeps ``keep`` samples, ``keep_backed_off`` in a backed-off group."""
    for fid, sample in samples:
        fs = flows.get(fid)
        if fs is None:
            continue
        g = groups[fs.group_cell[0]]
        if g.frozen is not None or sample.t_ps <= fs.woke_ps:
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
