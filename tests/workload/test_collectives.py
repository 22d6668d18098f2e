"""Collectives and workload DAGs on the packet engine: hand-checked times, dependencies, LP identity.

Hand formula used below (DCQCN defaults, one 100 Gbps switch, 1 us links,
1000-byte payloads, 48-byte data headers, an ACK of 60 bytes per data packet):
a host that sends ``B`` payload bytes and receives ``B`` bytes puts
``B/1000 x (1048 + 60)`` bytes on its link, so one ring step of ``c`` bytes
takes ``c/1000 x 1108 x 8 / rate + 2 x 1 us`` (two links) + one packet's
serialization at the switch; a ring all-reduce is ``2(N-1)`` such steps.
"""

import pytest
from helpers import G100, US, config, star_topo

from pwormhole.errors import InputError
from pwormhole.run import Run
from pwormhole.scenario import from_dag
from pwormhole.workload.collectives import collective
from pwormhole.workload.dag import OP_FLOW, Dag

PKT_PS = 1048 * 8 * 10**12 // G100  # one data packet at 100 Gbps


def step_ps(chunk_bytes: int) -> int:
    """One ring step of ``chunk_bytes``: data + ACK bytes on the link, two hops of 1 us, one store-and-forward."""
    return chunk_bytes // 1000 * 1108 * 8 * 10**12 // G100 + 2 * US + PKT_PS


def run_dag(dag, n_hosts=4, n_lps=1):
    return Run(from_dag("t", star_topo(n_hosts), dag, config()), n_lps=n_lps).run()


def end_ps(run):
    return run.last_end_ps()


@pytest.mark.parametrize("kind,steps", [("allreduce", 6), ("allgather", 3), ("reducescatter", 3)])
def test_ring_collective_time_matches_formula(kind, steps):
    size = 4_000_000
    dag = Dag()
    done = collective(dag, kind, [0, 1, 2, 3], size, None, "c")
    r = run_dag(dag)
    assert r.complete
    expected = steps * step_ps(size // 4)
    assert abs(end_ps(r) - expected) / expected < 0.03
    # ring structure: 4 members x steps flows of S/N bytes, each to its successor
    flows = dag.flows
    assert len(flows) == 4 * steps and {f.size_bytes for f in flows} == {1_000_000}
    assert all(f.dst == (f.src + 1) % 4 for f in flows)
    assert dag.bytes_sent_by_host() == {h: steps * 1_000_000 for h in range(4)}
    assert len(done) == 4


def test_ring_step_waits_for_predecessor():
    """Step k+1 of member i starts when member i has received step k from member i-1 and has entered
    the collective itself (NCCL runs it as a kernel on each member's stream): a late member sends
    nothing, not even what it has already received, before it enters."""
    dag = Dag()
    # member 0 is late: it computes 50 us first, so everything downstream of it waits
    c = dag.compute(0, 50 * US)
    collective(dag, "allgather", [0, 1, 2], 300_000, [[c], [], []], "ag")
    r = run_dag(dag, 3)
    flow_of = {dag.arg[op]: op for op in range(len(dag)) if dag.kind[op] == OP_FLOW}
    for fid, f in enumerate(dag.flows):
        op = flow_of[fid]
        for d in dag.deps[op]:  # after step 0: the predecessor's flow into this member
            if dag.kind[d] != OP_FLOW:
                continue
            prev = dag.flows[dag.arg[d]]
            assert prev.dst == f.src
            # started when the last byte arrived (before its ACK got back, by about the 2-link return
            # path), or when its member entered (member 0, at 50 us)
            entered_ps = 50 * US if f.src == 0 else 0
            assert r.finish_ps[dag.arg[d]] - 3 * US <= r.start_ps[fid] <= max(r.finish_ps[dag.arg[d]], entered_ps)
    assert r.start_ps[0] == 50 * US  # member 0's first send waits for its compute
    assert r.start_ps[1] == 0 and r.start_ps[2] == 0  # the others start at once
    # member 1's second step forwards what member 0 sent: it cannot start before 50 us
    assert r.start_ps[4] > 50 * US
    # member 0's second step forwards member 2's step 0 (arrived at ~11 us) only once it has entered
    assert r.start_ps[3] == 50 * US


def test_a_late_members_waiting_steps_leave_one_after_another():
    """A member's sends to its successor share one connection: when it enters 100 us late, the steps
    whose data came in meanwhile leave in order, so the ring ends about one on-time all-reduce after
    it enters (the others' first steps are done); sharing its NIC among them ended at 566 us."""
    ends = {}
    for late_us in (0, 100):
        dag = Dag()
        c = dag.compute(0, late_us * US)
        collective(dag, "allreduce", [0, 1, 2, 3], 1_200_000, [[c], [], [], []], "ar")
        r = run_dag(dag)
        ends[late_us] = end_ps(r)
        mine = sorted((r.start_ps[f], r.finish_ps[f]) for f, fl in enumerate(dag.flows) if fl.src == 0)
        if late_us:
            # its steps 0..2 (data in by then) all start at 100 us and end one step apart, in order
            assert [s for s, _ in mine[:3]] == [100 * US] * 3
            step = mine[1][1] - mine[0][1]
            assert step > 20 * US and abs((mine[2][1] - mine[1][1]) - step) < step // 20
    assert ends[0] == 173_368_640
    assert 100 * US + ends[0] - 2 * US < ends[100] <= 100 * US + ends[0]


def test_flows_on_one_connection_leave_in_order():
    """Three flows queued on one connection (``fifo_after``), all ready at once: each sends after the
    one before has put its last byte on the wire; their FCTs count from their start."""
    dag = Dag()
    a = dag.flow(0, 1, 1_000_000)
    b = dag.flow(0, 1, 1_000_000, fifo_after=dag.arg[a])
    c = dag.flow(0, 1, 1_000_000, fifo_after=dag.arg[b])
    r = run_dag(dag, 2)
    fa, fb, fc = (r.finish_ps[dag.arg[op]] for op in (a, b, c))
    assert r.start_ps == {0: 0, 1: 0, 2: 0}
    # 1,000 packets of 1,048 wire bytes at 100 Gb/s each, back to back over the 2 hops of the star
    step = 1000 * 83_840
    assert abs((fb - fa) - step) <= 2 * 83_840 and abs((fc - fb) - step) <= 2 * 83_840


def test_a_flow_waits_for_the_one_before_it_to_start_and_send():
    """The earlier flow of a connection may become ready later (a ring step's data can arrive out of
    order over ECMP): the later one still leaves after it, not before; ``fifo_after`` must name an
    earlier flow of the same source and destination."""
    dag = Dag()
    a = dag.flow(0, 1, 1_000_000, deps=[dag.compute(0, 10 * US)])
    b = dag.flow(0, 1, 1_000_000, fifo_after=dag.arg[a])
    r = run_dag(dag, 2)
    fa, fb = r.finish_ps[dag.arg[a]], r.finish_ps[dag.arg[b]]
    assert r.start_ps[dag.arg[a]] == 10 * US and r.start_ps[dag.arg[b]] == 0  # B's FCT counts from 0
    assert abs((fb - fa) - 1000 * 83_840) <= 2 * 83_840
    with pytest.raises(ValueError, match="fifo_after 5 is not an earlier flow from 0 to 1"):
        dag.flow(0, 1, 10, fifo_after=5)
    with pytest.raises(ValueError, match="fifo_after 0 is not an earlier flow from 1 to 0"):
        dag.flow(1, 0, 10, fifo_after=0)


def test_alltoall_and_p2p_times():
    size = 3_000_000
    dag = Dag()
    collective(dag, "alltoall", [0, 1, 2, 3], size, None, "a2a")
    r = run_dag(dag)
    # each host sends 3 chunks of 750 KB and receives 3: 2.25 MB of data+ACK bytes on its link
    expected = 3 * (size // 4) // 1000 * 1108 * 8 * 10**12 // G100 + 2 * US + PKT_PS
    assert abs(end_ps(r) - expected) / expected < 0.03
    assert len(dag.flows) == 12
    dag = Dag()
    collective(dag, "p2p", [0, 3], 2_000_000, None, "send")
    r = run_dag(dag)
    expected = 2_000 * PKT_PS + 2 * US + PKT_PS + 1 * US  # data, 2 hops, ACK of the last packet back
    assert abs(end_ps(r) - expected) / expected < 0.03


def test_groups_of_one_and_zero_bytes_cost_nothing():
    dag = Dag()
    c = dag.compute(1, 7 * US)
    done = collective(dag, "allreduce", [1], 1_000_000, [[c]], "solo")
    after = dag.compute(1, 3 * US, done)
    collective(dag, "allgather", [0, 2], 0, None, "empty")
    r = run_dag(dag)
    assert not dag.flows
    assert r.op_times[after] == (7 * US, 10 * US)


def test_non_power_of_two_group_conserves_bytes():
    dag = Dag()
    collective(dag, "allreduce", [0, 1, 2, 3, 4], 1_000_003, None, "ar5")
    r = run_dag(dag, 5)
    chunk = -(-1_000_003 // 5)
    assert r.complete and len(dag.flows) == 5 * 8
    c = r.counters()
    assert c["bytes_sent"] == c["bytes_delivered"] == 5 * 8 * chunk


def test_remote_dependency_travels_as_a_message():
    """An op waiting on a compute at another host learns of it after the path delay (2 links of 1 us)."""
    dag = Dag()
    a = dag.compute(0, 10 * US)
    b = dag.compute(2, 1 * US, [a])
    r = run_dag(dag)
    assert r.op_times[b] == (12 * US, 13 * US)


def test_compute_stream_serializes_ready_ops():
    dag = Dag()
    a = dag.compute(0, 5 * US)
    b = dag.compute(0, 5 * US)
    r = run_dag(dag)
    assert r.op_times[a] == (0, 5 * US) and r.op_times[b] == (5 * US, 10 * US)


def test_dag_runs_identical_on_any_lp_count():
    dag = Dag()
    c = [dag.compute(h, (h + 1) * US) for h in range(4)]
    d1 = collective(dag, "allreduce", [0, 1, 2, 3], 400_000, c, "ar")
    d2 = collective(dag, "alltoall", [3, 1, 0, 2], 300_000, [[x] for x in (d1[3], d1[1], d1[0], d1[2])], "a2a")
    [dag.compute(h, 2 * US, [d]) for h, d in zip([3, 1, 0, 2], d2)]
    ref = run_dag(dag)
    for n in (2, 3):
        r = run_dag(dag, n_lps=n)
        assert r.finish_ps == ref.finish_ps and r.start_ps == ref.start_ps and r.op_times == ref.op_times


def test_bad_dag_inputs():
    dag = Dag()
    with pytest.raises(InputError, match="size must be 1..1000000000000000 bytes, got 0"):
        dag.flow(0, 1, 0)
    with pytest.raises(InputError, match="same host"):
        dag.flow(1, 1, 10)
    dag.compute(9, 1)
    with pytest.raises(InputError, match="node 9 is not a host"):
        run_dag(dag)


def _columns(dag):
    return (dag.kind, dag.host, dag.arg, dag.deps, dag.not_before_ps, dag.label, dag.iteration_of, dag.flows,
            dag.flow_op, dag.fifo_after)


def test_flows_at_once_adds_what_flow_adds_one_by_one():
    """Ops, flow ids, source ports (numbered per source, across calls), dependencies (None dropped)
    and FIFO links as ``flow`` one by one; each bad input refused before anything is added."""
    one, many = Dag(), Dag()
    for dag in (one, many):
        dag.compute(0, 5)
        dag.flow(2, 0, 7)
    src, dst, deps = [0, 1, 0, 2], [1, 2, 2, 0], [[0], [None, 1], [], [0, None, 1]]
    for s, d, ds in zip(src, dst, deps):
        one.flow(s, d, 300, ds, "x")
    fifo = [1, -1, 3, 0]
    for s, d, q in zip(src, dst, fifo):
        one.flow(s, d, 300, [], "y", fifo_after=q)
    assert many.flows_at_once(src, dst, 300, deps, "x") == 2
    assert many.flows_at_once(src, dst, 300, [[]] * 4, "y", fifo) == 6
    assert _columns(many) == _columns(one)
    assert [f.sport for f in many.flows] == [10000, 10000, 10000, 10001, 10001, 10002, 10001, 10003, 10002]
    assert many.deps[2:6] == [[0], [1], [], [0, 1]] and many.fifo_after == [-1] * 5 + fifo
    before = _columns(many)
    with pytest.raises(InputError, match="same host 2"):
        many.flows_at_once([0, 2], [1, 2], 10, [[], []], "z")
    with pytest.raises(ValueError, match="op 11: dependency 11 is not an earlier op"):
        many.flows_at_once([0, 1], [1, 2], 10, [[], [11]], "z")
    with pytest.raises(ValueError, match="flow 9: fifo_after 2 is not an earlier flow from 0 to 1"):
        many.flows_at_once([0], [1], 10, [[]], "z", [2])
    with pytest.raises(InputError, match="size must be"):
        many.flows_at_once([0], [1], 0, [[]], "z")
    with pytest.raises(ValueError, match="as long as each other"):
        many.flows_at_once([0, 0], [1], 10, [[], []], "z")
    with pytest.raises(ValueError, match="flow 10: fifo_after 9 is not an earlier flow from 0 to 1"):
        many.flows_at_once([0, 0], [2, 1], 10, [[], []], "z", [-1, 9])  # flow 9 goes to 2
    assert _columns(many) == before
    # queued behind a flow of the same call, as one by one
    assert many.flows_at_once([0, 0], [1, 1], 10, [[], []], "z", [-1, 9]) == 10
    assert many.fifo_after[-2:] == [-1, 9]


@pytest.mark.slow
def test_tp_group_of_24_gpus_over_three_servers():
    """A ring all-reduce on 24 GPUs of 3 servers (not a power of two; NVLink inside a
    server, the rail fabric between servers) finishes with the expected volume."""
    from pwormhole.scenario import topology_from_arg
    topo = topology_from_arg("rail-optimized:gpus=24")
    cfg = config()
    cfg.fill_k_maps({ln.rate_bps for ln in topo.links})
    dag = Dag()
    size = 2_400_000
    done = collective(dag, "allreduce", topo.gpus[:24], size, None, "tp24")
    r = Run(from_dag("t", topo, dag, cfg)).run()
    assert r.complete and len(done) == 24
    chunk = -(-size // 24)
    c = r.counters()
    assert c["bytes_sent"] == c["bytes_delivered"] == 24 * 2 * 23 * chunk
    crossing = [f for f in dag.flows if f.src // 8 != f.dst // 8]
    assert len(crossing) == 3 * 2 * 23  # 3 of the 24 ring edges leave a server, in every one of the 46 steps
