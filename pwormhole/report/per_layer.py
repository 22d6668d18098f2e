"""``per_layer.csv`` of a training run: per pipeline stage and layer line, the compute time of its
forward, input-gradient and weight-gradient phases and the time of its collectives, exposed and in
all, in microseconds (SimAI's ``EndToEnd.csv`` reports the same per layer for GPU 0).

Definitions, per GPU, then the mean over the GPUs of the stage, summed over iterations:

* ``*_compute_us``: the time the GPU's compute stream ran the phase's compute op;
* ``*_exposed_comm_us``: the time the compute stream stood idle waiting for the phase's collective.
  Each idle span before a compute op (and at the GPU's end, after its last one) is walked back
  along the dependencies that ended last: a collective gets the part from its start on the GPU
  (all of what is left when the GPU only receives in it, as a pipeline stage waiting for
  activations, or starts in it only at the span's end or later), and the part before goes to what
  its start waited for (a reduce-scatter before
  the distributed optimizer's all-gather); a part that waited for no collective goes to no row.
  The parts never overlap, so a stage's compute and exposed columns add up to at most its GPUs'
  time;
* ``*_comm_us``: the time the phase's collectives were in progress on the GPU (from its first
  flow or mark in one to its done mark), overlapped with compute or not.

Besides the layer lines, a stage has a ``pipeline`` row where the run has pipeline sends (waits
for activations in the forward columns, for gradients in the input-gradient columns; the time of
its sends in ``*_comm_us``) and a ``param_allgather`` row with the distributed optimizer's
parameter all-gather (forward columns: it comes before the next forward pass); their ``layer``
cell is empty.
"""

from __future__ import annotations

from ..workload import simai
from ..workload.dag import OP_COMPUTE, OP_FLOW, OP_MARK, Dag
from .summary import write_csv_atomic
from .training import OpTimes

PER_LAYER_NAME = "per_layer.csv"
PER_LAYER_COLUMNS = ("stage", "layer", "name", "fwd_compute_us", "ig_compute_us", "wg_compute_us",
                     "fwd_exposed_comm_us", "ig_exposed_comm_us", "wg_exposed_comm_us", "fwd_comm_us", "ig_comm_us",
                     "wg_comm_us")
_PHASES = ("fwd", "ig", "wg")
# a collective's phase -> (its row when not a layer's, its column)
_EXTRA = {"pp_fwd": ("pipeline", "fwd"), "pp_bwd": ("pipeline", "ig"), "param_allgather": ("param_allgather", "fwd")}


def _end_of(dag: Dag, op: int, op_times: dict, flow_finish: dict) -> int | None:
    if dag.kind[op] == OP_FLOW:
        return flow_finish.get(dag.arg[op])
    t = op_times.get(op)
    return None if t is None else t[1]


class _Run:
    """What the attribution needs of a finished run: op ends, and per collective and host the
    earliest of the host's own flows and marks in it (done marks aside): ``(start, op)``."""

    def __init__(self, dag: Dag, op_times: dict, flow_start: dict, flow_finish: dict, times: OpTimes | None = None):
        self.dag, self.op_times, self.flow_finish = dag, op_times, flow_finish
        times = times or OpTimes(dag, op_times, flow_start, flow_finish)
        self.coll_of = times.collective.tolist()
        done = [d for c in dag.collectives for d in c.done_ops]
        self.first_on = times.first_in_collectives(dag, ended=False, leave_out=done)

    def waits(self, host: int, deps, lo: int, hi: int) -> list[tuple[int, int]]:
        """``(collective, ps)``: what the idle span ``[lo, hi)`` of ``host``'s compute stream, ended by
        an op waiting on ``deps``, waited for. The dependency that ended last (the latest, then the highest
        op id) is followed: through marks of no collective; to a collective, which gets the span from
        its start on the host (the whole span when the host only receives in it, or starts in it only
        at the span's end or after), the rest going to what released the host's first op in it; a
        compute op or nothing ends the walk. Each step into a collective either ends the walk or moves
        the span's end back to an earlier start, and marks lead to earlier ops, so the walk ends (a
        dependency in a collective that ended after the host's first op in it started, as a step whose
        ACK came back after the host's next step started, ends it)."""
        dag, out = self.dag, []
        while hi > lo:
            best, best_end = -1, -1
            for d in deps:
                e = _end_of(dag, d, self.op_times, self.flow_finish)
                if e is not None and (e, d) > (best_end, best):
                    best, best_end = d, e
            if best < 0:
                break
            ci = self.coll_of[best]
            if ci < 0:
                if dag.kind[best] != OP_MARK:
                    break
                deps = dag.deps[best]
                continue
            first = self.first_on[ci].get(host)
            if first is None or first[0] >= hi:
                out.append((ci, hi - lo))
                break
            seg = max(lo, first[0])
            out.append((ci, hi - seg))
            hi = seg
            deps = dag.deps[first[1]]
        return out


def per_layer_rows(dag: Dag, spec, op_times: dict, flow_start: dict, flow_finish: dict,
                   times: OpTimes | None = None) -> list[dict]:
    """The rows of ``per_layer.csv`` (columns :data:`PER_LAYER_COLUMNS`) of a run of ``spec``'s DAG
    (``times``: the run's :class:`~.training.OpTimes`, when made already)."""
    gpu_of = dag.gpu_of_host
    n_layers = len(spec.layers)
    stage_of = {h: simai.pp_stage_of(spec, g) for h, g in gpu_of.items() if g < spec.all_gpus}
    run = _Run(dag, op_times, flow_start, flow_finish, times)

    def key(ci: int) -> tuple[object, str]:
        c = dag.collectives[ci]
        if c.layer >= 0:
            return c.layer, c.phase
        return _EXTRA.get(c.phase, (None, ""))

    # [stage][layer][phase] ps, summed over the stage's GPUs (lists: numpy's scalar updates cost more)
    compute, exposed, comm = ([[[0, 0, 0] for _ in range(n_layers)] for _ in range(spec.pp)] for _ in range(3))
    extra: dict[tuple[int, object, str], list[int]] = {}  # (stage, row, column) -> [exposed, comm]

    def add(kind: int, stage: int, ci: int, ps: int) -> None:
        row, column = key(ci)
        if isinstance(row, int):
            (exposed if kind == 0 else comm)[stage][row][_PHASES.index(column)] += ps
        elif row is not None:
            extra.setdefault((stage, row, column), [0, 0])[kind] += ps

    ops_of: dict[int, list[tuple[int, int, int]]] = {}  # host -> its compute ops (start, end, op)
    last_end: dict[int, tuple[int, int]] = {}  # host -> (latest end of its compute ops and marks, op)
    for op, (t0, t1) in op_times.items():
        h = dag.host[op]
        if h not in stage_of:
            continue
        if dag.kind[op] == OP_COMPUTE:
            ops_of.setdefault(h, []).append((t0, t1, op))
            code = dag.compute_layer.get(op)
            if code is not None:
                compute[stage_of[h]][code // 3][code % 3] += t1 - t0
        if (t1, op) > last_end.get(h, (-1, -1)):
            last_end[h] = (t1, op)
    for h, stage in stage_of.items():
        prev = 0
        for t0, t1, op in sorted(ops_of.get(h, [])):
            for ci, ps in run.waits(h, dag.deps[op], prev, t0):
                add(0, stage, ci, ps)
            prev = max(prev, t1)
        end, op = last_end.get(h, (0, -1))
        for ci, ps in run.waits(h, [op], prev, end):  # the GPU's tail: waiting for its last op
            add(0, stage, ci, ps)
    for ci, c in enumerate(dag.collectives):
        for d in c.done_ops:
            h = dag.host[d]
            t = op_times.get(d)
            first = run.first_on[ci].get(h)
            if t is not None and first is not None and h in stage_of and t[1] > first[0]:
                add(1, stage_of[h], ci, t[1] - first[0])
    per_stage = [0] * spec.pp
    for stage in stage_of.values():
        per_stage[stage] += 1

    def us(ps: int, stage: int) -> str:
        return f"{ps / max(1, per_stage[stage]) / 1e6:.3f}"

    present = {_EXTRA[c.phase][0] for c in dag.collectives if c.phase in _EXTRA}
    rows = []
    for s in range(spec.pp):
        for li, layer in enumerate(spec.layers):
            row = {"stage": s, "layer": li, "name": layer.name}
            for k, ph in enumerate(_PHASES):
                row[f"{ph}_compute_us"] = us(compute[s][li][k], s)
                row[f"{ph}_exposed_comm_us"] = us(exposed[s][li][k], s)
                row[f"{ph}_comm_us"] = us(comm[s][li][k], s)
            rows.append(row)
        for name in ("pipeline", "param_allgather"):
            if name not in present:
                continue
            row = {"stage": s, "layer": "", "name": name}
            for ph in _PHASES:
                got = extra.get((s, name, ph)) or [0, 0]
                row[f"{ph}_compute_us"] = us(0, s)
                row[f"{ph}_exposed_comm_us"] = us(got[0], s)
                row[f"{ph}_comm_us"] = us(got[1], s)
            rows.append(row)
    return rows


def write_per_layer_csv(path: str, rows: list[dict]) -> None:
    """``per_layer.csv`` (columns :data:`PER_LAYER_COLUMNS`), atomically."""
    write_csv_atomic(path, PER_LAYER_COLUMNS, rows)


__all__ = ["PER_LAYER_NAME", "PER_LAYER_COLUMNS", "per_layer_rows", "write_per_layer_csv"]
