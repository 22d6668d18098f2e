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
