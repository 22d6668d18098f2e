"""Samples of a flow's sender state, taken at window boundaries by the sender's process."""

from __future__ import annotations

from itertools import chain
from typing import NamedTuple


class Sample(NamedTuple):
    """One sample of a flow (a tuple: exchanged between ranks and kept by the thousand): the
    boundary it was taken at, then the fields of ``net.nodes.QPSnapshot`` in their order."""

    t_ps: int  # the boundary it was taken at
    rate_bps: int  # CC rate: DCQCN's rate; HPCC's window over its base RTT (its pacing rate without a window)
    una_bytes: int  # bytes acknowledged
    una_ps: int  # when the last ACK advanced una_bytes
    sent_bytes: int  # highest byte sent (after a go-back-N, packets up to it are still in the network)
    rp_due_ps: int  # when a pending DCQCN rate-increase timer will change the rate (-1: none)
    cnps: int  # CNPs received so far
    pacing_rate_bps: int  # the QP's pacing rate


def take_samples(t: int, due_flows, flows: dict, nodes, local) -> list:
    """Sorted ``(flow id, Sample)`` at ``t`` of the flows in ``due_flows`` (iterables of flow
    ids) whose sender node is in ``local``; ``flows``: flow id -> FlowState."""
    samples = []
    for fid in chain.from_iterable(due_flows):
        src = flows[fid].src
        if src not in local:
            continue
        qp = nodes[src].sqp.get(fid)
        if qp is not None:
            samples.append((fid, Sample(t, *qp.snapshot(t))))
    samples.sort()
    return samples


def merge_reports(reports):
    """Merge Wormhole's ``(started flow ids, samples or None)`` reports of several LPs or ranks
    (order-independent)."""
    started = sorted(f for st, _ in reports for f in st)
    sampled = [s for _, sm in reports if sm is not None for s in sm]
    any_samples = any(sm is not None for _, sm in reports)
    return started, (sorted(sampled) if any_samples else None)


def store_samples(samples, flows: dict, groups: dict, keep: int, keep_backed_off: int) -> None:
    """Append each ``(flow id, Sample)`` to its flow's history unless the flow left the table or
    its group is frozen; a flow keeps ``keep`` samples, ``keep_backed_off`` in a backed-off group."""
    flows_get = flows.get
    for fid, sample in samples:
        fs = flows_get(fid)
        if fs is None:
            continue
        g = groups[fs.gid]
        if g.frozen is not None:
            continue
        q = fs.samples
        q.append(sample)
        limit = keep_backed_off if g.backoff_periods else keep
        while len(q) > limit:
            q.popleft()
