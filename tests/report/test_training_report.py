"""The training report's op times on hand-made runs: per collective and host, the first op (ended or
started), iteration ends and compute spans; ops that did not end are left out."""

from pwormhole.report.per_layer import _Run
from pwormhole.report.training import OpTimes, training_report
from pwormhole.workload.dag import Collective, Dag


def two_collectives():
    """Hosts 0 and 1: a compute op each, then a 2-member collective (two flows, two done marks), then
    a second collective whose flow 1 -> 0 started but never finished."""
    dag = Dag()
    c0 = dag.compute(0, 100)
    c1 = dag.compute(1, 100)
    first = len(dag)
    a = dag.flow(0, 1, 1000, [c0])
    b = dag.flow(1, 0, 1000, [c1])
    d0, d1 = dag.mark(0, [a, b]), dag.mark(1, [a, b])
    dag.collectives.append(Collective("x", "allreduce", [0, 1], 2000, [d0, d1], first, len(dag)))
    dag.iteration, dag.iterations = 1, 2  # (the second collective in a second iteration)
    first = len(dag)
    e = dag.flow(0, 1, 500, [d0])
    f = dag.flow(1, 0, 500, [d1])
    dag.collectives.append(Collective("y", "allreduce", [0, 1], 1000, [dag.mark(0, [e, f]), dag.mark(1, [e, f])],
                                      first, len(dag)))
    dag.gpu_of_host = {0: 0, 1: 1}
    op_times = {c0: (0, 100), c1: (0, 120), d0: (900, 900), d1: (950, 950)}
    flow_start = {0: 130, 1: 120, 2: 1000, 3: 990}  # flow ids 0..3: ops a, b, e, f
    flow_finish = {0: 900, 1: 950, 2: 1400}
    k = 1000  # ns
    op_times = {op: (t0 * k, t1 * k) for op, (t0, t1) in op_times.items()}
    flow_start = {fid: t * k for fid, t in flow_start.items()}
    flow_finish = {fid: t * k for fid, t in flow_finish.items()}
    return dag, op_times, flow_start, flow_finish, (a, b, d0, d1, e, f)


def test_first_op_per_collective_and_host():
    dag, op_times, flow_start, flow_finish, (a, b, d0, d1, e, f) = two_collectives()
    times = OpTimes(dag, op_times, flow_start, flow_finish)
    k = 1000
    assert times.start_ps.tolist() == [t * k for t in (0, 0, 130, 120, 900, 950, 1000, 990)] + [-1, -1]
    assert times.end_ps.tolist() == [t * k for t in (100, 120, 900, 950, 900, 950, 1400)] + [-1, -1, -1]
    assert times.first_in_collectives(dag, ended=True) == [{0: (130 * k, a), 1: (120 * k, b)}, {0: (1000 * k, e)}]
    # started: f counts; the done marks left out leave the same firsts here
    assert times.first_in_collectives(dag, ended=False, leave_out=[d0, d1]) == [
        {0: (130 * k, a), 1: (120 * k, b)}, {0: (1000 * k, e), 1: (990 * k, f)}]
    # a done mark that starts first on its host is the first when not left out; equal starts: the lower op
    op_times[d1] = (100 * k, 100 * k)
    flow_start[0] = 100 * k
    times = OpTimes(dag, op_times, flow_start, flow_finish)
    assert times.first_in_collectives(dag, ended=True)[0] == {0: (100 * k, a), 1: (100 * k, d1)}
    assert times.first_in_collectives(dag, ended=True, leave_out=[d1])[0] == {0: (100 * k, a), 1: (120 * k, b)}
    op_times[d0] = (100 * k, 100 * k)
    assert OpTimes(dag, op_times, flow_start, flow_finish).first_in_collectives(dag, ended=True)[0][0] == (100 * k, a)


def test_training_report_of_a_run_that_stopped():
    dag, op_times, flow_start, flow_finish, _ = two_collectives()
    rep = training_report(dag, op_times, flow_start, flow_finish)
    assert rep["iterations"] == [950, 450]  # the last ends: d1's (and b's), then flow e's
    # the first collective from b's start to d1's end; the second never ended (its done marks did not)
    assert [(r["name"], r["start_ns"], r["end_ns"], r["time_ns"]) for r in rep["collectives"]] == [("x", 120, 950, 830)]
    # per GPU: compute, and the collective from its own first op in it to its done mark (no overlap)
    assert rep["gpus"] == [{"gpu": 0, "host": 0, "compute_ns": 100, "comm_ns": 770, "exposed_comm_ns": 770},
                           {"gpu": 1, "host": 1, "compute_ns": 120, "comm_ns": 830, "exposed_comm_ns": 830}]


def test_per_layer_walk_takes_started_ops_and_leaves_done_marks_out():
    """per_layer.csv's walk starts a collective on a host at its first flow or mark there that started
    (flow f never finished), its done marks left out even when one starts first."""
    dag, op_times, flow_start, flow_finish, (a, b, d0, d1, e, f) = two_collectives()
    k = 1000
    op_times[d1] = (100 * k, 100 * k)
    assert _Run(dag, op_times, flow_start, flow_finish).first_on == [{0: (130 * k, a), 1: (120 * k, b)},
                                                                     {0: (1000 * k, e), 1: (990 * k, f)}]
