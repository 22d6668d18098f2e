"""Dependency DAGs of work: compute, flows and join points on hosts.

A :class:`Dag` is what a training iteration, a collective, an htsim trigger
list or a Chakra trace becomes before simulation. Each op runs on one host:

* ``OP_COMPUTE``: busy the host's compute stream for ``duration_ps`` (one
  stream per GPU: ready compute ops run one after the other, in the order
  they became ready);
* ``OP_FLOW``: one RDMA message (a :class:`~pwormhole.workload.flows.Flow`)
  from ``host`` to ``dst``;
* ``OP_MARK``: a zero-time join point (e.g. "this member finished the
  collective"), used for reports and to fan dependencies in.

An op starts when all its dependencies are satisfied *at its host* and not
before ``not_before_ps``. Where a dependency becomes known (docs/design.md
invariant 6, dependencies cross nodes as messages):

* a compute op or mark is known at its host when it ends;
* a flow is known at its destination when the last byte arrives, and at its
  source when the last byte is acknowledged (HPCC's flow completion);
* every other host learns it through a notification sent from the host
  where it ended (the flow's destination) that takes the path's propagation
  delay, at least one synchronization window when it crosses units.

Flows of a DAG carry ``start_ps = TRIGGERED`` until they start; their FCT is
measured from the time their op starts.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import repeat
from operator import attrgetter, eq

from ..errors import InputError
from ..units import MAX_TIME_PS
from .flows import MAX_FLOW_BYTES, Flow

OP_COMPUTE = 0
OP_FLOW = 1
OP_MARK = 2
OP_KIND_NAMES = ("compute", "flow", "mark")

TRIGGERED = -1  # Flow.start_ps of a flow started by its op


@dataclass
class Collective:
    """One collective instance (for reports).

    Attributes:
        name: label, e.g. ``"layer3.fwd"``.
        kind: ``allreduce``, ``allgather``, ``reducescatter``, ``alltoall``, ``p2p``.
        group: GPU ranks taking part, in ring order.
        size_bytes: the collective's buffer size S (per member).
        done_ops: one ``OP_MARK`` per member, ending when that member is done.
        first_op, last_op: op id range ``[first_op, last_op)`` of its flows and marks.
        iteration: training iteration index.
        layer: index of the training layer line whose collective it is (-1: none).
        phase: ``fwd``, ``ig`` or ``wg`` (a layer's column), ``pp_fwd`` or ``pp_bwd`` (a pipeline
            send of activations or gradients), ``param_allgather`` (the distributed optimizer's),
            or empty (not a training collective).
    """

    name: str
    kind: str
    group: list[int]
    size_bytes: int
    done_ops: list[int]
    first_op: int
    last_op: int
    iteration: int = 0
    layer: int = -1
    phase: str = ""


def _earlier_ops(deps, op: int) -> list[int]:
    """``deps`` (op ids; None items left out) as a new list; ValueError unless each is an op before ``op``."""
    ids = [d for d in deps if d is not None] if None in deps else list(deps)
    if ids and (min(ids) < 0 or max(ids) >= op):
        bad = next(d for d in ids if not 0 <= d < op)
        raise ValueError(f"op {op}: dependency {bad} is not an earlier op")
    return ids


@dataclass
class Dag:
    """A workload DAG. Ops are parallel lists indexed by op id.

    Attributes:
        kind: ``OP_*`` per op.
        host: host node id executing the op (a flow's source).
        arg: compute duration in ps, a flow id, or 0 for marks.
        deps: op ids each op waits for.
        not_before_ps: earliest start per op (int ps).
        gpu_of_host: host node id -> GPU rank (reports).
        flows: the flows of the ``OP_FLOW`` ops, ``flows[i].flow_id == i``.
        flow_op: flow id -> op id.
        fifo_after: flow id -> the flow id of the same source and destination whose last byte
            its first byte leaves after, on one connection (a ring member's sends to its
            successor, an RDMA QP in NCCL), or -1.
        collectives: collective instances, for reports.
        iteration_of: per op, its training iteration (0 when not a training job).
        label: per op, a short description (layer/phase) for reports and plots.
        compute_layer: training compute op -> ``3 * layer index + phase`` (0 forward, 1 input
            gradient, 2 weight gradient); the update is in none.
    """

    kind: list[int] = field(default_factory=list)
    host: list[int] = field(default_factory=list)
    arg: list[int] = field(default_factory=list)
    deps: list[list[int]] = field(default_factory=list)
    not_before_ps: list[int] = field(default_factory=list)
    label: list[str] = field(default_factory=list)
    iteration_of: list[int] = field(default_factory=list)
    flows: list[Flow] = field(default_factory=list)
    flow_op: list[int] = field(default_factory=list)
    fifo_after: list[int] = field(default_factory=list)
    collectives: list[Collective] = field(default_factory=list)
    gpu_of_host: dict[int, int] = field(default_factory=dict)
    compute_layer: dict[int, int] = field(default_factory=dict)
    iterations: int = 1
    pg: int = 3
    dport: int = 100
    _sport: dict[int, int] = field(default_factory=dict)
    iteration: int = 0  # iteration index given to ops added now

    def __len__(self) -> int:
        return len(self.kind)

    def critical_path_ps(self, flow_ps) -> int:
        """When the last op would end if ops waited only for their dependencies and start times:
        compute ops take their duration, flows ``flow_ps[flow id]`` (e.g. standalone FCTs), marks 0."""
        end = [0] * len(self.kind)
        for op, (kind, arg, deps) in enumerate(zip(self.kind, self.arg, self.deps)):
            t = self.not_before_ps[op]
            for d in deps:
                if end[d] > t:
                    t = end[d]
            end[op] = t + (arg if kind == OP_COMPUTE else flow_ps[arg] if kind == OP_FLOW else 0)
        return max(end, default=0)

    # -- building ---------------------------------------------------------------
    def _add(self, kind: int, host: int, arg: int, deps, label: str, not_before_ps: int) -> int:
        op = len(self.kind)
        deps = _earlier_ops(deps, op)
        self.kind.append(kind)
        self.host.append(host)
        self.arg.append(arg)
        self.deps.append(deps)
        self.not_before_ps.append(not_before_ps)
        self.label.append(label)
        self.iteration_of.append(self.iteration)
        return op

    def compute(self, host: int, duration_ps: int, deps=(), label: str = "", not_before_ps: int = 0) -> int:
        """Add a compute op of ``duration_ps`` (int ps, >= 0) on ``host``; returns its op id."""
        if not 0 <= duration_ps <= MAX_TIME_PS:
            raise InputError(f"{label or 'compute'}: duration {duration_ps} ps is outside 0..{MAX_TIME_PS}")
        return self._add(OP_COMPUTE, host, int(duration_ps), deps, label, not_before_ps)

    def flow(self, src: int, dst: int, size_bytes: int, deps=(), label: str = "", not_before_ps: int = 0,
             fifo_after: int = -1) -> int:
        """Add a flow of ``size_bytes`` (> 0) from host ``src`` to host ``dst``; returns its op id.
        ``fifo_after``: a flow id from ``src`` to ``dst`` on the same connection, whose last byte this
        flow's first byte leaves after (-1: none)."""
        op = self.flows_at_once([src], [dst], size_bytes, [deps], label, [fifo_after])
        self.not_before_ps[op] = not_before_ps
        return op

    def flows_at_once(self, src: list[int], dst: list[int], size_bytes: int, deps: list[list], label: str,
                      fifo_after: list[int] | None = None) -> int:
        """Add one flow of ``size_bytes`` from ``src[i]`` to ``dst[i]`` per ``i``, waiting for ``deps[i]``
        (earlier op ids; None items ignored) and queued behind flow ``fifo_after[i]`` (None: none
        queued), in this order (each source's ports numbered on, as HPCC's ``third.cc`` does); every
        error is raised before any flow is added; returns the first op id (the others follow it)."""
        if not 0 < size_bytes <= MAX_FLOW_BYTES:
            raise InputError(f"{label or 'flow'}: size must be 1..{MAX_FLOW_BYTES} bytes, got {size_bytes}")
        if not len(src) == len(dst) == len(deps) == (len(src) if fifo_after is None else len(fifo_after)):
            raise ValueError("flows_at_once: src, dst, deps and fifo_after must be as long as each other")
        if any(map(eq, src, dst)):
            same = next(s for s, d in zip(src, dst) if s == d)
            raise InputError(f"{label or 'flow'}: source and destination are the same host {same}")
        op0 = len(self.kind)
        fid0 = len(self.flows)
        deps = [_earlier_ops(ds, op0 + i) for i, ds in enumerate(deps)]
        flows = self.flows
        if fifo_after is not None:
            for i, q in enumerate(fifo_after):
                if q == -1:
                    continue
                ends = None  # the source and destination of flow q when it is an earlier one
                if 0 <= q < fid0:
                    ends = (flows[q].src, flows[q].dst)
                elif fid0 <= q < fid0 + i:  # (one of this call's own flows, before it)
                    ends = (src[q - fid0], dst[q - fid0])
                if ends != (src[i], dst[i]):
                    raise ValueError(f"flow {fid0 + i}: fifo_after {q} is not an earlier flow from {src[i]} to "
                                     f"{dst[i]}")
        return self.flows_at_once_unchecked(src, dst, int(size_bytes), deps, label, fifo_after)

    def flows_at_once_unchecked(self, src: list[int], dst: list[int], size_bytes: int, deps: list[list[int]],
                                label: str | list[str], fifo_after: list[int] | None) -> int:
        """:meth:`flows_at_once` of arguments known to be right (``deps``: lists of earlier op ids, taken
        as they are: a collective's steps, made from checked ones; ``label``: one for all or one
        per flow)."""
        n = len(src)
        op0 = len(self.kind)
        fid0 = len(self.flows)
        sports = self._sport
        ports = []
        for s in src:  # (HPCC's third.cc: each source's flows numbered on)
            p = sports.get(s, 10000)
            sports[s] = p + 1
            ports.append(p)
        self.flows.extend(map(Flow._make, zip(range(fid0, fid0 + n), src, dst, repeat(self.pg), repeat(self.dport),
                                              repeat(size_bytes), repeat(TRIGGERED), ports)))
        self.kind.extend(repeat(OP_FLOW, n))
        self.host.extend(src)
        self.arg.extend(range(fid0, fid0 + n))
        self.deps.extend(deps)
        self.not_before_ps.extend(repeat(0, n))
        self.label.extend(repeat(label, n) if isinstance(label, str) else label)
        self.iteration_of.extend(repeat(self.iteration, n))
        self.flow_op.extend(range(op0, op0 + n))
        self.fifo_after.extend(fifo_after if fifo_after is not None else repeat(-1, n))
        return op0

    def mark(self, host: int, deps=(), label: str = "") -> int:
        """Add a zero-time join point on ``host``; returns its op id."""
        return self._add(OP_MARK, host, 0, deps, label, 0)

    # -- facts ------------------------------------------------------------------
    def bytes_sent_by_host(self) -> dict[int, int]:
        """Total flow bytes each host sends (conservation checks, closed-form tests)."""
        out: dict[int, int] = {}
        for f in self.flows:
            out[f.src] = out.get(f.src, 0) + f.size_bytes
        return out

    def check_hosts(self, hosts: set[int], source: str | None = None) -> None:
        """Raise InputError naming the op when an op or flow endpoint is not a host."""
        if hosts.issuperset(self.host) and hosts.issuperset(map(attrgetter("dst"), self.flows)):
            return
        for op, h in enumerate(self.host):
            if h not in hosts:
                raise InputError(f"op {op} ({self.label[op] or OP_KIND_NAMES[self.kind[op]]}): node {h} is not a host",
                                 source)
        for f in self.flows:
            if f.dst not in hosts:
                raise InputError(f"flow {f.flow_id}: destination {f.dst} is not a host", source)
