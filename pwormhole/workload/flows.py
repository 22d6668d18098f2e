"""Flow lists: the unit of traffic of the packet-level model."""

from __future__ import annotations

from operator import attrgetter
from typing import NamedTuple

import numpy as np

MAX_FLOW_BYTES = 10**15  # 1 PB: a QP's byte counters and bytes x 8e12 stay within int64 arithmetic


class Flow(NamedTuple):
    """One RDMA message (one queue pair) from ``src`` to ``dst``.

    Attributes:
        flow_id: position in the flow list (0-based); the stable identity.
        src, dst: host node ids.
        pg: priority group (HPCC flow file column 3; 3 in HPCC's examples).
        dport: destination port (HPCC column 4), reported in fct.txt.
        size_bytes: payload bytes to deliver (> 0).
        start_ps: start time (int ps).
        sport: source port; HPCC's ``third.cc`` numbers each source host's flows
            10000, 10001, ... in file order.
    """

    flow_id: int
    src: int
    dst: int
    pg: int
    dport: int
    size_bytes: int
    start_ps: int
    sport: int = 10000


class FlowColumns(NamedTuple):
    """A flow list's ``src``, ``dst`` and ``size_bytes`` as int64 arrays indexed by flow id: sums,
    gathers and groupings over the flows without a Python pass each."""

    src: np.ndarray
    dst: np.ndarray
    size_bytes: np.ndarray


def flow_columns(flows) -> FlowColumns:
    """The :class:`FlowColumns` of ``flows``."""
    return FlowColumns(*(np.fromiter(map(attrgetter(name), flows), np.int64, len(flows))
                         for name in FlowColumns._fields))


class HostPairs(NamedTuple):
    """A flow list grouped by (source, destination) host pair, the pairs sorted by source, then
    destination."""

    first: np.ndarray  # pair -> its first flow's id
    of_flow: np.ndarray  # flow id -> its pair


def host_pairs(cols: FlowColumns, n_nodes: int) -> HostPairs:
    """The :class:`HostPairs` of the flows of ``cols``, whose hosts are node ids in ``0..n_nodes-1``
    (as the readers and ``Network`` check them): ValueError otherwise."""
    if len(cols.src) and (min(cols.src.min(), cols.dst.min()) < 0 or max(cols.src.max(), cols.dst.max()) >= n_nodes):
        raise ValueError(f"host_pairs: a flow's host is outside 0..{n_nodes - 1}")
    _, first, of_flow = np.unique(cols.src * n_nodes + cols.dst, return_index=True, return_inverse=True)
    return HostPairs(first, of_flow)


def traffic_start_ps(flows, dag=None) -> int:
    """When the traffic starts: 0 for a workload DAG (its first ops start at 0), else the first flow's
    start (0 without flows); the origin of link failure times (:class:`~pwormhole.config.LinkDown`)."""
    if dag is not None:
        return 0
    return min((f.start_ps for f in flows if f.start_ps >= 0), default=0)
