"""Reader for htsim connection matrices (``.cm``) into a workload :class:`Dag`.

Source of the format: htsim (Broadcom/csg-htsim),
``sim/datacenter/connection_matrix.cpp`` (``ConnectionMatrix::load``), the
trigger kinds of ``sim/trigger.cpp`` and the way the ``main_*.cpp`` programs
start connections. A file is a header, then one line per connection or
trigger::

    Nodes 16
    Connections 3
    Triggers 1
    0->13 id 1 start 0 size 2000000 send_done_trigger 1
    13->4 id 2 trigger 1 size 2000000
    4->0 id 3 start 12.5 size 0
    trigger id 1 oneshot

Connection keys (in any order after ``src->dst``): ``start T`` (microseconds,
a decimal; htsim's mains pass it to ``timeFromUs``), ``size B`` (bytes),
``id K`` (a non-zero flow id, needed by triggered connections), ``trigger T``
(start when trigger ``T`` fires, instead of ``start``),
``send_done_trigger T`` (activate ``T`` when this connection's sender has
finished: every byte acknowledged), ``recv_done_trigger T`` (activate ``T``
when the receiver has every byte), ``prio P`` and ``addon`` (read, ignored).
Trigger lines: ``trigger id T oneshot|multishot|barrier [count C]``. Header
counts ``Connections`` and ``Triggers`` must match the lines (htsim checks
both). Lines starting with ``#`` and blank lines are skipped; keys are
separated by blanks or tabs.

How it maps to the DAG (one ``OP_FLOW`` per connection; htsim node ``i`` runs
on ``hosts[i]``):

* ``start T`` becomes the flow's ``not_before_ps`` (exact decimal µs; htsim's
  current mains truncate to whole µs, we do not).
* ``size 0`` is htsim's "send until the run ends": a flow of
  :data:`UNBOUNDED_FLOW_BYTES` (10**15 bytes, over 22 hours at 100 Gbps), which
  never finishes within a run (the run then ends at its stop time and is not
  ``complete``); a trigger signalled by its end never fires.
* A triggered connection ``C`` waits for the connections that activate its
  trigger. In htsim a trigger fires instantly everywhere; here (docs/design.md
  invariant 6) it is known where the activation happens and reaches other
  hosts as a notification after the path's propagation delay:

  - ``recv_done_trigger`` of flow ``S`` happens at ``S``'s destination on
    receipt of the last byte: ``C`` depends on ``S`` directly (satisfied at
    ``S.dst`` on receipt, by notification from ``S.dst`` elsewhere, and on
    ``S.src`` on the last ACK, which is that same notification);
  - ``send_done_trigger`` of ``S`` happens at ``S``'s source when the last
    byte is acknowledged: when ``C`` starts at ``S.src``, it depends on ``S``
    directly (satisfied on the ACK); otherwise it depends on a zero-time mark
    on ``S.src`` that waits for ``S`` (one per such ``S``), so other hosts
    learn of the send completion by a notification from the sender, not of
    the receipt from the receiver.

* Trigger kinds: ``oneshot`` fires on its single activation (htsim asserts
  when activated twice: an error here); ``barrier count C`` fires after ``C``
  activations: every activating flow is a dependency, and the number of
  activating flows must equal ``C``; with several activating flows, the
  targets on each host share one join mark on that host (``OP_MARK``) that
  waits for all of them. ``multishot`` starts its ``k``-th target (file
  order) on its ``k``-th activation; activations come in time order, which a
  static DAG cannot know, so the ``k``-th target waits for the ``k``-th
  activating flow in file order (an approximation; exact when activations
  complete in file order, as in htsim's ``gen_serialn_alltoall.py`` chains).
* A trigger whose targets could never start (no activating flow, fewer
  activations than a barrier's count, fewer activations than a multishot's
  targets) is an error rather than a run that never completes.
* ``Failures``/``failure`` lines (link failures) are not modelled: an error.
"""

from __future__ import annotations

import heapq
import os
from dataclasses import dataclass, field

from pwormhole.errors import InputError
from pwormhole.inputs.tokens import head_tokens, open_text, to_int, token_lines
from pwormhole.units import parse_time_ps
from pwormhole.workload.dag import Dag
from pwormhole.workload.flows import MAX_FLOW_BYTES

UNBOUNDED_FLOW_BYTES = 10**15  # htsim "size 0": a flow that keeps sending until the run stops

_HEADER = ("nodes", "connections", "triggers", "failures")
_KINDS = ("oneshot", "multishot", "barrier")


@dataclass
class Connection:
    """One connection line: htsim node ids, size, start (ps) or trigger, and the triggers it activates."""

    line: int
    src: int
    dst: int
    size_bytes: int = 0
    start_ps: int | None = None
    flow_id: int = 0  # htsim's "id" (0 = none given)
    trigger: int = 0
    send_done_trigger: int = 0
    recv_done_trigger: int = 0
    prio: int | None = None


@dataclass
class Trigger:
    line: int
    tid: int
    kind: str = ""
    count: int = 0
    targets: list[int] = field(default_factory=list)  # connection indexes, file order
    signals: list[tuple[int, str]] = field(default_factory=list)  # (connection index, "send"|"recv"), file order


@dataclass
class ConnectionMatrix:
    """A parsed ``.cm`` file (before mapping to hosts)."""

    path: str
    nodes: int
    connections: list[Connection]
    triggers: dict[int, Trigger]


def looks_like_htsim_cm(path: str | os.PathLike) -> bool:
    """True when the first meaningful line is a ``.cm`` header key or a ``src->dst`` connection,
    and no ``Tiers`` key (an htsim topology) comes before the first connection."""
    for toks in head_tokens(path):
        k = toks[0].lower()
        if "->" in toks[0] or k == "connections":
            return True
        if k not in ("nodes", "triggers", "failures"):
            return False
    return False


def parse_htsim_cm(path: str | os.PathLike) -> ConnectionMatrix:
    """Parse a connection matrix (see the module docstring) and check it as htsim does.

    Raises:
        InputError naming the file, the line and the value for: a file that
        cannot be opened; an unknown key; a key without a value; a value that
        is not an integer (a start that is not a time); a missing ``Nodes``; a
        node id outside ``0 .. Nodes-1`` or ``src == dst``; a connection with
        both or neither of ``start`` and ``trigger``; a triggered connection
        without ``id``; an id of 0 or given twice; a negative size; a trigger
        line without id or kind, with two kinds, defined twice, or a barrier
        without a positive count; a trigger used but never defined; counts
        that differ from ``Connections``/``Triggers``; failure lines.
    """
    spath = str(path)
    header: dict[str, tuple[int, int]] = {}
    conns: list[Connection] = []
    triggers: dict[int, Trigger] = {}
    defined: dict[int, int] = {}
    ids: dict[int, int] = {}
    n_trig_lines = 0
    body = False
    last_line = 1
    with open_text(path, "connection matrix") as f:
        for lineno, toks in token_lines(f):
            last_line = lineno
            first = toks[0]
            key = first.lower()
            if key in _HEADER and "->" not in first:
                if body:
                    raise InputError(f"{first} belongs in the header, before the first connection", spath, lineno)
                if len(toks) < 2:
                    raise InputError(f"{first} has no value", spath, lineno)
                if key in header:
                    raise InputError(f"{first} given twice (first on line {header[key][1]})", spath, lineno)
                header[key] = (to_int(toks[1], first, spath, lineno, lo=0), lineno)
                if key == "failures" and header[key][0] > 0:
                    raise InputError("link failures (Failures / failure lines) are not supported", spath, lineno)
                continue
            body = True
            if "nodes" not in header:
                raise InputError("missing 'Nodes N' before the first connection", spath, lineno)
            nodes = header["nodes"][0]
            if "->" in first:
                conns.append(_connection(toks, spath, lineno, nodes, ids, triggers))
            elif key == "trigger":
                n_trig_lines += 1
                _trigger_line(toks, spath, lineno, triggers, defined)
            elif key == "failure":
                raise InputError("link failures (Failures / failure lines) are not supported", spath, lineno)
            else:
                raise InputError(f"unknown line start {first!r} (expected 'src->dst ...' or 'trigger ...')",
                                 spath, lineno)
    if "nodes" not in header:
        raise InputError("missing number of nodes (Nodes N)", spath, last_line)
    want = header.get("connections", (0, last_line))
    if len(conns) != want[0]:
        raise InputError(f"mismatch in connection count: Connections {want[0]} but {len(conns)} connection "
                         f"lines", spath, want[1])
    want = header.get("triggers", (0, last_line))
    if n_trig_lines != want[0]:
        raise InputError(f"mismatch in trigger count: Triggers {want[0]} but {n_trig_lines} trigger lines",
                         spath, want[1])
    for i, c in enumerate(conns):
        if c.trigger:
            triggers[c.trigger].targets.append(i)
        for attr, role in (("send_done_trigger", "send_done_trigger"), ("recv_done_trigger", "recv_done_trigger")):
            t = getattr(c, attr)
            if t:
                if t not in triggers:
                    raise InputError(f"trigger {t} ({role} of connection {c.src}->{c.dst}) is never defined "
                                     f"(no 'trigger id {t} ...' line)", spath, c.line)
                triggers[t].signals.append((i, "send" if attr.startswith("send") else "recv"))
    for t in triggers.values():
        if not t.kind:
            first_use = conns[t.targets[0]].line if t.targets else t.line
            raise InputError(f"trigger {t.tid} referenced but not specified (no 'trigger id {t.tid} ...' line)",
                             spath, first_use)
    return ConnectionMatrix(spath, header["nodes"][0], conns, triggers)


def _connection(toks, spath, lineno, nodes, ids, triggers) -> Connection:
    src_s, _, dst_s = toks[0].partition("->")
    src = to_int(src_s, "source node", spath, lineno, 0, nodes - 1)
    dst = to_int(dst_s, "destination node", spath, lineno, 0, nodes - 1)
    if src == dst:
        raise InputError(f"connection {toks[0]} goes from node {src} to itself", spath, lineno)
    c = Connection(lineno, src, dst)
    seen: set[str] = set()
    size_seen = False
    i = 1
    while i < len(toks):
        k = toks[i]
        if k == "addon":
            i += 1
            continue
        if k not in ("start", "size", "id", "trigger", "send_done_trigger", "recv_done_trigger", "prio"):
            raise InputError(f"unknown token {k!r} in connection {toks[0]} (expected start, size, id, trigger, "
                             f"send_done_trigger, recv_done_trigger, prio or addon)", spath, lineno)
        if i + 1 >= len(toks):
            raise InputError(f"{k} of connection {toks[0]} has no value", spath, lineno)
        if k in seen:
            raise InputError(f"{k} given twice in connection {toks[0]}", spath, lineno)
        seen.add(k)
        v = toks[i + 1]
        if k == "start":
            try:
                c.start_ps = parse_time_ps(v, default_unit="us")
            except ValueError as e:
                raise InputError(f"bad start {v!r} of connection {toks[0]} (microseconds): {e}",
                                 spath, lineno) from None
        elif k == "size":
            c.size_bytes = to_int(v, f"size of connection {toks[0]}", spath, lineno, lo=0, hi=MAX_FLOW_BYTES)
            size_seen = True
        elif k == "id":
            c.flow_id = to_int(v, f"id of connection {toks[0]}", spath, lineno, lo=0)
            if c.flow_id == 0:
                raise InputError(f"flow id zero is not allowed (connection {toks[0]})", spath, lineno)
            if c.flow_id in ids:
                raise InputError(f"flow id {c.flow_id} given twice (first on line {ids[c.flow_id]})", spath, lineno)
            ids[c.flow_id] = lineno
        elif k == "prio":
            c.prio = to_int(v, f"prio of connection {toks[0]}", spath, lineno)
        else:
            tid = to_int(v, f"{k} of connection {toks[0]}", spath, lineno, lo=1)
            setattr(c, k, tid)
        i += 2
    if not size_seen:
        raise InputError(f"connection {toks[0]} has no size", spath, lineno)
    if c.start_ps is not None and c.trigger:
        raise InputError(f"both start time and trigger specified for connection {toks[0]}", spath, lineno)
    if c.start_ps is None and not c.trigger:
        raise InputError(f"no start method specified for connection {toks[0]} (give 'start T' or 'trigger T')",
                         spath, lineno)
    if c.trigger:
        if not c.flow_id:
            raise InputError(f"connection {toks[0]} is started by trigger {c.trigger} but has no 'id'", spath, lineno)
        if c.trigger not in triggers:
            triggers[c.trigger] = Trigger(lineno, c.trigger)
    return c


def _trigger_line(toks, spath, lineno, triggers, defined) -> None:
    tid = 0
    kind = ""
    count = 0
    i = 1
    while i < len(toks):
        k = toks[i]
        if k in _KINDS:
            if kind:
                raise InputError(f"trigger has two kinds ({kind} and {k})", spath, lineno)
            kind = k
            i += 1
            continue
        if k not in ("id", "count"):
            raise InputError(f"unknown token {k!r} in trigger line (expected id, count, oneshot, multishot or barrier)",
                             spath, lineno)
        if i + 1 >= len(toks):
            raise InputError(f"trigger {k} has no value", spath, lineno)
        v = to_int(toks[i + 1], f"trigger {k}", spath, lineno, lo=0)
        if k == "id":
            if v == 0:
                raise InputError("trigger id zero is not allowed", spath, lineno)
            tid = v
        else:
            count = v
        i += 2
    if not tid:
        raise InputError("trigger with no id", spath, lineno)
    if not kind:
        raise InputError(f"trigger {tid} with no kind (oneshot, multishot or barrier)", spath, lineno)
    if tid in defined:
        raise InputError(f"trigger {tid} defined twice (first on line {defined[tid]})", spath, lineno)
    if kind == "barrier" and count < 1:
        raise InputError(f"barrier trigger {tid} needs 'count N' with N >= 1", spath, lineno)
    defined[tid] = lineno
    t = triggers.get(tid)
    if t is None:
        t = triggers[tid] = Trigger(lineno, tid)
    t.line = lineno
    t.kind = kind
    t.count = count


def read_htsim_cm(path: str | os.PathLike, hosts: list[int]) -> Dag:
    """Read a connection matrix into a :class:`Dag` (mapping in the module docstring).

    Args:
        path: the ``.cm`` file.
        hosts: host node ids; htsim node ``i`` is ``hosts[i]`` (pass ``topo.hosts``).

    Returns:
        A DAG with one flow per connection, in file order (flow id ``i`` =
        the ``i``-th connection line) and labels ``htsim:<id>`` (or
        ``htsim:line<N>`` without an id), plus the join marks of triggers.

    Raises:
        InputError (see :func:`parse_htsim_cm`) and, with the file and line: a
        ``Nodes`` count larger than ``len(hosts)``; a trigger activated by
        more flows than htsim allows (oneshot: one; barrier: its count)
        or whose targets could never start; triggers that wait on each other
        in a cycle.
    """
    cm = parse_htsim_cm(path)
    spath = cm.path
    if cm.nodes > len(hosts):
        raise InputError(f"Nodes {cm.nodes} but the topology has only {len(hosts)} hosts", spath, 1)
    conns = cm.connections

    # per connection: the activating (connection, kind) it waits for
    waits: list[list[tuple[int, str]]] = [[] for _ in conns]
    for t in cm.triggers.values():
        n_sig = len(t.signals)
        where = conns[t.signals[-1][0]].line if t.signals else t.line
        if t.kind == "oneshot":
            if n_sig > 1:
                raise InputError(f"oneshot trigger {t.tid} is activated by {n_sig} connections (lines "
                                 f"{', '.join(str(conns[i].line) for i, _ in t.signals)}); htsim allows one "
                                 f"(use 'barrier count {n_sig}')", spath, where)
        elif t.kind == "barrier":
            if n_sig > t.count:
                raise InputError(f"barrier trigger {t.tid} has count {t.count} but {n_sig} connections activate it",
                                 spath, where)
        if not t.targets:
            continue
        if n_sig == 0:
            raise InputError(f"trigger {t.tid} is never activated (no connection has send_done_trigger {t.tid} "
                             f"or recv_done_trigger {t.tid}): its {len(t.targets)} connection(s) would never start",
                             spath, conns[t.targets[0]].line)
        if t.kind == "barrier" and n_sig < t.count:
            raise InputError(f"barrier trigger {t.tid} needs {t.count} activations but only {n_sig} connection(s) "
                             f"activate it: its connections would never start", spath, t.line)
        if t.kind == "multishot":
            if len(t.targets) > n_sig:
                raise InputError(f"multishot trigger {t.tid} starts {len(t.targets)} connections but only {n_sig} "
                                 f"activate it: the last {len(t.targets) - n_sig} would never start", spath, t.line)
            for k, ci in enumerate(t.targets):
                waits[ci] = [t.signals[k]]
        else:
            for ci in t.targets:
                waits[ci] = list(t.signals)

    order = _topo_order(conns, waits, spath)
    dag = Dag()
    op_of: list[int] = [-1] * len(conns)
    send_mark: dict[int, int] = {}
    join: dict[tuple[int, int], int] = {}  # (trigger id, host) -> join mark
    flow_of_conn: list[int] = [0] * len(conns)
    for ci in order:
        c = conns[ci]
        src_h, dst_h = hosts[c.src], hosts[c.dst]

        def dep_for(si: int, kind: str, at_host: int) -> int:
            s = conns[si]
            if kind == "recv" or hosts[s.src] == at_host:
                return op_of[si]
            m = send_mark.get(si)
            if m is None:
                m = send_mark[si] = dag.mark(hosts[s.src], [op_of[si]], f"htsim:{_name(s)}.send_done")
            return m

        deps: list[int] = []
        w = waits[ci]
        if len(w) == 1:
            deps = [dep_for(w[0][0], w[0][1], src_h)]
        elif len(w) > 1:
            key = (c.trigger, src_h)
            m = join.get(key)
            if m is None:
                m = join[key] = dag.mark(src_h, [dep_for(si, kind, src_h) for si, kind in w],
                                         f"htsim:trigger{c.trigger}@{src_h}")
            deps = [m]
        size = c.size_bytes if c.size_bytes > 0 else UNBOUNDED_FLOW_BYTES
        op_of[ci] = dag.flow(src_h, dst_h, size, deps, f"htsim:{_name(c)}",
                             not_before_ps=c.start_ps if c.start_ps is not None else 0)
        flow_of_conn[ci] = dag.arg[op_of[ci]]
    return _renumber_file_order(dag, flow_of_conn)


def _name(c: Connection) -> str:
    return str(c.flow_id) if c.flow_id else f"line{c.line}"


def _topo_order(conns: list[Connection], waits, spath: str) -> list[int]:
    """Connection indexes so that every connection comes after those it waits for (file order otherwise)."""
    n = len(conns)
    indeg = [0] * n
    children: list[list[int]] = [[] for _ in range(n)]
    for ci, w in enumerate(waits):
        for si, _ in w:
            children[si].append(ci)
            indeg[ci] += 1
    ready = [i for i in range(n) if indeg[i] == 0]
    heapq.heapify(ready)
    out = []
    while ready:
        i = heapq.heappop(ready)
        out.append(i)
        for ch in children[i]:
            indeg[ch] -= 1
            if indeg[ch] == 0:
                heapq.heappush(ready, ch)
    if len(out) < n:
        stuck = [i for i in range(n) if indeg[i] > 0]
        raise InputError(f"triggers wait on each other in a cycle: connections on lines "
                         f"{', '.join(str(conns[i].line) for i in stuck[:8])} can never start", spath,
                         conns[stuck[0]].line)
    return out


def _renumber_file_order(dag: Dag, flow_of_conn: list[int]) -> Dag:
    """Make flow ``i`` the ``i``-th connection of the file (op order is kept)."""
    if flow_of_conn == list(range(len(flow_of_conn))):
        return dag
    new_id = {old: new for new, old in enumerate(flow_of_conn)}
    flows: list = [None] * len(dag.flows)
    for f in dag.flows:
        flows[new_id[f.flow_id]] = f._replace(flow_id=new_id[f.flow_id])
    # source ports: numbered per source host in (new) flow order, as third.cc numbers them
    nxt: dict[int, int] = {}
    for i, f in enumerate(flows):
        sp = nxt.get(f.src, 10000)
        nxt[f.src] = sp + 1
        flows[i] = f._replace(sport=sp)
    flow_op = [0] * len(flows)
    for op, k in enumerate(dag.kind):
        if k == 1:  # OP_FLOW
            nid = new_id[dag.arg[op]]
            dag.arg[op] = nid
            flow_op[nid] = op
    dag.flows = flows
    dag.flow_op = flow_op
    return dag


__all__ = ["read_htsim_cm", "parse_htsim_cm", "looks_like_htsim_cm", "ConnectionMatrix", "Connection", "Trigger",
           "UNBOUNDED_FLOW_BYTES"]
