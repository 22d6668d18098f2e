"""Static tables that let hosts run a workload DAG (see :mod:`pwormhole.workload.dag`).

Built once per run from the DAG and the topology, read by every host:

* ``at_end[op]``: the children of ``op`` that run on the host where ``op``
  ends (a compute op's or mark's host; a flow's destination, known when its
  last byte arrives);
* ``at_src[op]`` (flows only): the children on the flow's source, known when
  the last byte is acknowledged;
* ``remote[op]``: ``(host, delay_ps, children)`` for every other host with
  children: a notification leaves the end host when ``op`` ends and arrives
  after the path's propagation delay (docs/design.md invariant 6);
* ``remaining[op]``: dependencies not yet satisfied (mutable; each op's count
  is only touched by the heap serving its host).
* ``fifo_after[fid]``: the flow whose last byte flow ``fid``'s first byte leaves after, on
  one connection (-1: none; :meth:`Host.on_flow_start <pwormhole.net.host.Host.on_flow_start>`).

:meth:`DagRuntime.leads` bounds how soon an op leads to a network event (a flow's start over
the network, a notification to another host), for the window loop's horizon
(:class:`~pwormhole.net.dispatch.DagLead`).

The children are tuples and ``remaining`` a list: the compiled hosts take them typed
(``net/host.pxd``).
"""

from __future__ import annotations

from ..engine.events import INF_PS
from ..workload.dag import OP_COMPUTE, OP_FLOW, Dag


class DagRuntime:
    """Per-op tables of a DAG for the hosts (attributes as in the module docstring)."""

    def __init__(self, dag: Dag, path_delay_ps):
        """``path_delay_ps(a, b)``: propagation delay of the route from host a to host b (int ps)."""
        n = len(dag)
        self.kind = dag.kind
        self.arg = dag.arg
        self.host = dag.host
        self.not_before_ps = dag.not_before_ps
        self.flow_op = dag.flow_op
        self.fifo_after = dag.fifo_after
        self.remaining = [len(d) for d in dag.deps]
        self.at_src: list[tuple] = [()] * n
        self.remote: list[tuple] = [()] * n
        self.remote_children: dict[tuple[int, int], tuple] = {}
        end_of = list(dag.host)  # where each op ends: its host, a flow's destination
        for op, f in zip(dag.flow_op, dag.flows):
            end_of[op] = f.dst
        self.at_end, srcs, others = children_tables(dag.deps, dag.host, end_of)
        for d, cs in srcs.items():
            self.at_src[d] = tuple(cs)
        for d, by_host in others.items():
            end = end_of[d]
            self.remote[d] = tuple((h, path_delay_ps(end, h)) for h in by_host)
            for h, cs in by_host.items():
                self.remote_children[(d, h)] = tuple(cs)
        self.roots = [op for op in range(n) if not dag.deps[op]]

    def leads(self, model_fids) -> tuple[list[int], list[int], list[int]]:
        """Lower bounds ``(start_ps, end_ps, flow_end_ps)``: per op, from its start and from its end,
        and per flow, from its end, to the first event it leads to that is not a compute op, a mark
        or a flow carried by a flow model (``model_fids``: those flows, e.g. NVLink by rates):
        a flow started as packets (0), a notification sent to another host (0), the end of an op
        nothing depends on (0: the run ends when every op has). A compute op adds its duration;
        a carried flow and a wait for the GPU or ``not_before_ps`` add nothing (lower bounds).
        One pass from the last op (dependencies are earlier ops; a child that is not counts as 0)."""
        start, end = op_leads(self.kind, self.arg, self.at_end, self.at_src, self.remote, model_fids)
        flow_end = [end[op] for op in self.flow_op]
        return start, end, flow_end


def children_tables(deps: list, host: list, end_of: list) -> tuple[list, dict, dict]:
    """``(at_end, at_src, elsewhere)`` of the ops whose dependencies are ``deps``: per op the tuple of
    its children on ``end_of[op]``, the host where it ends; op -> the list of those on ``host[op]``, a
    flow's source; op -> host -> the list of those on other hosts; children in op order."""
    n = len(deps)
    ends: list = [[] for _ in range(n)]
    srcs: dict = {}
    others: dict = {}
    for c in range(n):
        ds = deps[c]
        if not ds:
            continue
        h = host[c]
        for d in ds:
            if h == end_of[d]:
                ends[d].append(c)
            elif h == host[d]:
                cs = srcs.get(d)
                if cs is None:
                    srcs[d] = [c]
                else:
                    cs.append(c)
            else:
                others.setdefault(d, {}).setdefault(h, []).append(c)
    return [tuple(cs) if cs else () for cs in ends], srcs, others


def op_leads(kind: list, arg: list, at_end: list, at_src: list, remote: list, model_fids) -> tuple[list, list]:
    """``(start_ps, end_ps)`` of :meth:`DagRuntime.leads`, one pass from the last op."""
    n = len(kind)
    inf, compute, flow = INF_PS, OP_COMPUTE, OP_FLOW
    start = [0] * n
    end = [inf] * n
    for op in range(n - 1, -1, -1):
        ends = at_end[op]
        srcs = at_src[op]
        if remote[op] or not (ends or srcs):
            e = 0
        else:
            e = inf
            for c in ends:
                s = start[c] if c > op else 0
                if s < e:
                    e = s
            for c in srcs:
                s = start[c] if c > op else 0
                if s < e:
                    e = s
        end[op] = e
        k = kind[op]
        if k == compute:
            a = arg[op]
            start[op] = inf if a >= inf - e else a + e  # (no sum past int64)
        elif k == flow and arg[op] not in model_fids:
            start[op] = 0
        else:
            start[op] = e
    return start, end
