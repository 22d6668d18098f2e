"""``trace.json`` (``run --trace``): the run's timeline in Chrome's Trace Event Format, for Perfetto
(ui.perfetto.dev) or chrome://tracing.

* one process per GPU of a workload DAG (``GPU g``): its compute ops on the ``compute`` thread and
  the collectives it takes part in (from its first flow or mark in one to its done mark) on
  ``collectives k`` threads, as many as overlap;
* one process per host that sends flows (``NIC of GPU g (node h)``, ``NIC of node h`` outside a
  training run): its flows, from start to completion, on ``NIC k`` threads (flows through the NIC
  fabric) and ``NVLink k`` threads (flows inside a server), as many as overlap.

Every event is complete (``"ph": "X"``) with ``ts`` and ``dur`` in microseconds, written exactly
from the run's picoseconds (6 decimals). Ops and flows that did not finish are left out.
``otherData`` names the scenario and the ``run_id`` of the run's ``summary.json``.

The file's size is bounded before simulating (:func:`trace_bound_bytes`): a run whose trace could
pass ``--trace-limit`` (default 256 MB, about what chrome://tracing opens) is refused.
"""

from __future__ import annotations

import heapq
import json

from ..errors import InputError
from ..outfiles import atomic
from ..workload.dag import OP_COMPUTE, OP_FLOW, Dag

TRACE_NAME = "trace.json"
DEFAULT_TRACE_LIMIT_BYTES = 256 * 10**6
NIC_PID_BASE = 1_000_000  # a host's process id: this + its node id (GPUs are 0 ..)
EVENT_BYTES = 170  # an event's bytes besides its name: keys, the largest numbers, separators
FLOW_EVENT_BYTES = 230  # a flow's (its args name its flow, destination, size and FCT)
PROCESS_BYTES = 300  # a process's name and sort index events
THREAD_BYTES = 120  # a thread's name event
NAMED_LANES = 64  # threads named per kind and process (the others show their number)


def _name_bytes(name: str) -> int:
    return len(json.dumps(name))


def _flow_name(dag: Dag | None, fid: int) -> str:
    return dag.label[dag.flow_op[fid]] if dag is not None else f"flow {fid}"


def trace_bound_bytes(scn) -> int:
    """An upper bound of ``trace.json``'s bytes for ``scn``: every compute op, every member of every
    collective and every flow as an event; per process its metadata and its named threads."""
    dag = scn.dag
    size = 128
    members: dict[int, int] = {}  # GPU host -> collective memberships
    flows: dict[int, int] = {}  # host -> flows it sends
    if dag is not None and dag.gpu_of_host:
        members = dict.fromkeys(dag.gpu_of_host, 0)
        for op in range(len(dag)):
            if dag.kind[op] == OP_COMPUTE:
                size += EVENT_BYTES + _name_bytes(dag.label[op])
        for c in dag.collectives:
            size += len(c.group) * (EVENT_BYTES + _name_bytes(c.name))
            for h in dag.host[c.first_op:c.last_op]:
                if h in members:
                    members[h] += 1  # (at least one op per member: its done mark)
    for f in scn.flows:
        size += FLOW_EVENT_BYTES + _name_bytes(_flow_name(dag, f.flow_id))
        flows[f.src] = flows.get(f.src, 0) + 1
    lanes = sum(1 + min(n, NAMED_LANES) for n in members.values()) + sum(2 * min(n, NAMED_LANES)
                                                                          for n in flows.values())
    return size + (len(members) + len(flows)) * PROCESS_BYTES + lanes * THREAD_BYTES


def check_trace_size(scn, limit_bytes: int) -> None:
    """InputError, before simulating, when ``trace.json`` could pass ``limit_bytes``."""
    bound = trace_bound_bytes(scn)
    if bound > limit_bytes:
        raise InputError(f"{TRACE_NAME} could grow to {bound / 1e6:,.0f} MB ({len(scn.flows):,} flows"
                         + (f", {len(scn.dag):,} DAG ops" if scn.dag is not None else "")
                         + f"), over the limit of {limit_bytes / 1e6:,.0f} MB: a larger --trace-limit"
                         + (", or fewer --layers or --iterations" if scn.spec is not None else ""))


def _us(ps: int) -> str:
    """``ps`` in microseconds, exactly: 6 decimals."""
    return f"{ps // 10**6}.{ps % 10**6:06d}"


def _lanes(items: list[tuple[int, int, int]]) -> list[tuple[int, int, int, int]]:
    """``(start, end, key)`` intervals -> ``(lane, start, end, key)`` in start order, overlapping ones on
    different lanes, a lane reused as soon as it is free (the one freed first)."""
    free: list[tuple[int, int]] = []  # (end, lane)
    lanes = 0
    out = []
    for t0, t1, key in sorted(items):
        if free and free[0][0] <= t0:
            _, lane = heapq.heappop(free)
        else:
            lane, lanes = lanes, lanes + 1
        heapq.heappush(free, (t1, lane))
        out.append((lane, t0, t1, key))
    return out


class _Writer:
    def __init__(self, fh):
        self.fh = fh
        self.first = True

    def event(self, text: str) -> None:
        self.fh.write(("" if self.first else ",\n") + text)
        self.first = False

    def process(self, pid: int, name: str, sort_index: int) -> None:
        self.event(f'{{"name":"process_name","ph":"M","pid":{pid},"tid":0,"args":{{"name":{json.dumps(name)}}}}}')
        self.event(f'{{"name":"process_sort_index","ph":"M","pid":{pid},"tid":0,"args":{{"sort_index":{sort_index}}}}}')

    def thread(self, pid: int, tid: int, name: str) -> None:
        self.event(f'{{"name":"thread_name","ph":"M","pid":{pid},"tid":{tid},"args":{{"name":{json.dumps(name)}}}}}')

    def complete(self, name: str, cat: str, pid: int, tid: int, t0: int, t1: int, args: str) -> None:
        self.event(f'{{"name":{json.dumps(name)},"cat":"{cat}","ph":"X","pid":{pid},"tid":{tid},"ts":{_us(t0)},'
                   f'"dur":{_us(t1 - t0)},"args":{{{args}}}}}')


def _gpu_events(w: _Writer, dag: Dag, op_times: dict, flow_start: dict) -> None:
    compute: dict[int, list[tuple[int, int, int]]] = {}
    for op, (t0, t1) in op_times.items():
        if dag.kind[op] == OP_COMPUTE and dag.host[op] in dag.gpu_of_host:
            compute.setdefault(dag.host[op], []).append((t0, t1, op))
    member: dict[int, list[tuple[int, int, int]]] = {}
    for ci, c in enumerate(dag.collectives):
        starts: dict[int, int] = {}
        for op in range(c.first_op, c.last_op):
            t = flow_start.get(dag.arg[op]) if dag.kind[op] == OP_FLOW else op_times.get(op, (None,))[0]
            h = dag.host[op]
            if t is not None and (h not in starts or t < starts[h]):
                starts[h] = t
        for d in c.done_ops:
            h = dag.host[d]
            t = op_times.get(d)
            if t is not None and h in dag.gpu_of_host and t[1] > starts.get(h, t[1]):
                member.setdefault(h, []).append((starts[h], t[1], ci))
    for h, g in sorted(dag.gpu_of_host.items(), key=lambda kv: kv[1]):
        w.process(g, f"GPU {g}", g)
        w.thread(g, 0, "compute")
        for t0, t1, op in sorted(compute.get(h, [])):
            w.complete(dag.label[op], "compute", g, 0, t0, t1, f'"op":{op},"iteration":{dag.iteration_of[op]}')
        named = 0
        for lane, t0, t1, ci in _lanes(member.get(h, [])):
            while named <= min(lane, NAMED_LANES - 1):
                w.thread(g, 1 + named, f"collectives {named}")
                named += 1
            c = dag.collectives[ci]
            w.complete(c.name, c.kind, g, 1 + lane, t0, t1,
                       f'"size_bytes":{c.size_bytes},"members":{len(c.group)},"iteration":{c.iteration}')


def _nic_events(w: _Writer, scn, start_ps: dict, finish_ps: dict, nvlink: list[bool]) -> None:
    dag = scn.dag
    gpu_of = dag.gpu_of_host if dag is not None else {}
    by_host: dict[int, list[tuple[int, int, int]]] = {}
    for f in scn.flows:
        if f.flow_id in finish_ps:
            by_host.setdefault(f.src, []).append((start_ps[f.flow_id], finish_ps[f.flow_id], f.flow_id))
    for h in sorted(by_host):
        pid = NIC_PID_BASE + h
        w.process(pid, f"NIC of GPU {gpu_of[h]} (node {h})" if h in gpu_of else f"NIC of node {h}", pid)
        for inside, word in ((False, "NIC"), (True, "NVLink")):  # thread 2k: NIC lane k, 2k+1: NVLink lane k
            named = 0
            for lane, t0, t1, fid in _lanes([x for x in by_host[h] if nvlink[x[2]] == inside]):
                while named <= min(lane, NAMED_LANES - 1):
                    w.thread(pid, 2 * named + inside, f"{word} {named}")
                    named += 1
                f = scn.flows[fid]
                w.complete(_flow_name(dag, fid), "nvlink" if inside else "nic", pid, 2 * lane + inside, t0, t1,
                           f'"flow":{fid},"dst":{f.dst},"size_bytes":{f.size_bytes},"fct_ns":{(t1 - t0 + 500) // 1000}')


def write_trace(path: str, scn, op_times: dict, start_ps: dict, finish_ps: dict, nvlink: list[bool],
                run_id: str) -> None:
    """``trace.json`` of a finished (or stopped) run of ``scn`` (``nvlink``: per flow, whether it runs
    inside a server), atomically (OutputError on a write error)."""
    with atomic(path) as fh:
        fh.write('{"displayTimeUnit":"ns","otherData":' + json.dumps({"scenario": scn.name, "run_id": run_id})
                 + ',"traceEvents":[\n')
        w = _Writer(fh)
        if scn.dag is not None and scn.dag.gpu_of_host:
            _gpu_events(w, scn.dag, op_times, start_ps)
        _nic_events(w, scn, start_ps, finish_ps, nvlink)
        fh.write("\n]}\n")


__all__ = ["TRACE_NAME", "DEFAULT_TRACE_LIMIT_BYTES", "trace_bound_bytes", "check_trace_size", "write_trace"]
