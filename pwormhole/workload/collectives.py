"""Collectives as flows with NCCL-like step dependencies.

Each function adds one collective instance to a :class:`~pwormhole.workload.dag.Dag`
and returns the per-member ``OP_MARK`` ops that end when that member is done.

* Ring all-reduce of S bytes on N members (NCCL's ring algorithm): a
  reduce-scatter then an all-gather, ``2(N-1)`` steps; in every step each
  member sends ``ceil(S/N)`` bytes to its successor. A member starts step
  ``k+1`` when it has received step ``k`` from its predecessor and its own
  dependencies are met: a GPU takes part in no step before it has entered the
  collective (NCCL runs it as a kernel on each member's stream), so a member
  that enters late holds the ring up. A member's sends to its successor go
  one after another on one connection (an RDMA QP in NCCL): step ``k+1``'s
  first byte leaves after step ``k``'s last (``Dag.flow``'s ``fifo_after``),
  so the steps whose data came in while a member was late leave in order
  once it enters (a 4-member 1.2 MB all-reduce with one member 100 us late
  ends 272.6 us after the others enter, 173.4 us after it does; sharing the
  NIC among those steps instead gave 566 us). Per member: ``2(N-1) ceil(S/N)``
  bytes sent.
* Ring all-gather and reduce-scatter of S bytes (the full buffer): ``N-1``
  steps of ``ceil(S/N)`` bytes.
* All-to-all of S bytes per member: ``ceil(S/N)`` bytes to each other member,
  all at once.
* Point-to-point: one flow.

A member is done when it has received its last step and its own last send
is acknowledged. Groups of size 1 (or S = 0) cost nothing: the marks end as
soon as the member's dependencies are met. Groups need not be powers of two
nor sit under one switch. Source of the step structure: NCCL's ring
algorithms as described in the NCCL documentation and in "Bandwidth optimal
all-reduce algorithms for clusters of workstations" (Patarasuk and Yuan,
JPDC 2009); bus-bandwidth factors as in nccl-tests ``doc/PERFORMANCE.md``.
"""

from __future__ import annotations

from itertools import repeat

from .dag import Collective, Dag

KINDS = ("allreduce", "allgather", "reducescatter", "alltoall", "p2p")

# nccl-tests bus bandwidth = algorithm bandwidth x factor(N)
BUS_FACTOR = {
    "allreduce": lambda n: 2 * (n - 1) / n,
    "allgather": lambda n: (n - 1) / n,
    "reducescatter": lambda n: (n - 1) / n,
    "alltoall": lambda n: (n - 1) / n,
    "p2p": lambda n: 1.0,
}


def _deps_of(deps, i: int, host: int) -> list[int]:
    if deps is None:
        return []
    if isinstance(deps, dict):
        return list(deps.get(host, ()))
    d = deps[i]
    if d is None:
        return []
    return list(d) if isinstance(d, (list, tuple)) else [d]


def collective(dag: Dag, kind: str, hosts: list[int], size_bytes: int, deps=None, name: str = "",
               gpus: list[int] | None = None) -> list[int]:
    """Add one collective on ``hosts`` (host node ids, in ring order).

    Args:
        dag: the DAG to extend.
        kind: one of :data:`KINDS` (``p2p`` takes exactly two hosts: sender, receiver).
        hosts: members' host node ids.
        size_bytes: S, per member (int bytes, >= 0).
        deps: per member, the op ids it waits for before starting: a list
            aligned with ``hosts`` (items: an op id, a list, or None) or a
            dict ``host -> list``.
        name: label for reports.
        gpus: the members' GPU ranks (reports); defaults to ``hosts``.

    Returns:
        The member done marks, aligned with ``hosts``.

    Raises:
        ValueError: unknown kind, duplicate members, or ``p2p`` without two hosts.
    """
    if kind not in KINDS:
        raise ValueError(f"unknown collective kind {kind!r}")
    n = len(hosts)
    if len(set(hosts)) != n:
        raise ValueError(f"collective {name}: duplicate members in {hosts}")
    if kind == "p2p" and n != 2:
        raise ValueError(f"p2p needs a sender and a receiver, got {hosts}")
    first = len(dag)
    start = [_deps_of(deps, i, h) for i, h in enumerate(hosts)]
    if n == 1 or size_bytes <= 0:
        done = [dag.mark(h, start[i], f"{name}.done") for i, h in enumerate(hosts)]
    elif kind == "p2p":
        src, dst = hosts
        f = dag.flow(src, dst, size_bytes, start[0], f"{name}.p2p")
        done = [dag.mark(src, [f], f"{name}.done"), dag.mark(dst, [f] + start[1], f"{name}.done")]
    elif kind == "alltoall":
        chunk = -(-size_bytes // n)
        sent: list[list[int]] = [[] for _ in hosts]
        got: list[list[int]] = [[] for _ in hosts]
        for i, h in enumerate(hosts):
            peers = [(i + k) % n for k in range(1, n)]
            op = dag.flows_at_once([h] * (n - 1), [hosts[j] for j in peers], chunk, [start[i]] * (n - 1),
                                   f"{name}.a2a")
            for f, j in enumerate(peers, op):
                sent[i].append(f)
                got[j].append(f)
        done = [dag.mark(h, sent[i] + got[i], f"{name}.done") for i, h in enumerate(hosts)]
    else:
        steps = 2 * (n - 1) if kind == "allreduce" else n - 1
        chunk = int(-(-size_bytes // n))
        succ = hosts[1:] + hosts[:1]
        step = dag.flows_at_once(hosts, succ, chunk, start, f"{name}.s0")  # member i's send: op step + i
        if steps > 1:  # the later steps at once: step k's sends are ops step + k * n + i, flows fid + k * n + i
            start = dag.deps[step:step + n]  # (checked)
            fid = dag.arg[step]
            later = range(1, steps)
            deps = [[step + (k - 1) * n + (i - 1) % n, *start[i]] for k in later for i in range(n)]
            labels = [label for k in later for label in repeat(f"{name}.s{k}", n)]
            step = dag.flows_at_once_unchecked(hosts * (steps - 1), succ * (steps - 1), chunk, deps, labels,
                                               list(range(fid, fid + (steps - 1) * n))) + (steps - 2) * n
        done = [dag.mark(h, [step + (i - 1) % n, step + i], f"{name}.done") for i, h in enumerate(hosts)]
    dag.collectives.append(Collective(name, kind, list(gpus if gpus is not None else hosts), size_bytes, done,
                                      first, len(dag), dag.iteration))
    return done
