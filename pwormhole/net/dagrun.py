"""Static tables that let hosts run a workload DAG (see :mod:`pwormhole.workload.dag`).

Built once per run from the DAG and the topology, read by every host:

* ``at_end[op]``: the children of ``op`` that run on the host where ``op``
  ends (a compute op's or mark's host; a flow's destination, known when its
  last byte arrives);
* ``at_src[op]`` (flows only): the children on the flow's source, known when
  the last byte is acknowledged;
* ``remote[op]``: ``(host, delay_ps, children)`` for every other host with
  children: a notification leaves the end host when ``op`` ends and arrives
  after the path's propagation delay (DESIGN.md invariant 6);
* ``remaining[op]``: dependencies not yet satisfied (mutable; each op's count
  is only touched by the heap serving its host).

The children are tuples and ``remaining`` a list: the compiled hosts take them typed
(``net/nodes.pxd``).
"""

from __future__ import annotations

from ..workload.dag import OP_FLOW, Dag


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
        self.remaining = [len(d) for d in dag.deps]
        self.at_end: list[tuple] = [()] * n
        self.at_src: list[tuple] = [()] * n
        self.remote: list[tuple] = [()] * n
        self.remote_children: dict[tuple[int, int], tuple] = {}
        flows = dag.flows
        for op, children in enumerate(dag.children()):
            if not children:
                continue
            if dag.kind[op] == OP_FLOW:
                f = flows[dag.arg[op]]
                src, end = f.src, f.dst
            else:
                src = end = dag.host[op]
            at_end: list = []
            at_src: list = []
            other: dict = {}
            for c in children:
                h = dag.host[c]
                if h == end:
                    at_end.append(c)
                elif h == src:
                    at_src.append(c)
                else:
                    other.setdefault(h, []).append(c)
            self.at_end[op] = tuple(at_end)
            self.at_src[op] = tuple(at_src)
            if other:
                self.remote[op] = tuple((h, path_delay_ps(end, h)) for h in other)
                for h, cs in other.items():
                    self.remote_children[(op, h)] = tuple(cs)
        self.roots = [op for op in range(n) if not dag.deps[op]]
