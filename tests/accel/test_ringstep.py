"""Lock-step ring steps carried without packets (accel/ringstep.py), against packet mode."""

import json
import subprocess
import sys

import pytest
from helpers import MPIEXEC, ROOT, US, config, needs_mpi, one_line_error
from test_successors import RING, STEP_BYTES, fct_errors, one_ring

from pwormhole.accel.memo import MemoCache
from pwormhole.accel.ringstep import RingSteps, Template
from pwormhole.accel.wormhole import AccelConfig
from pwormhole.config import LinkDown
from pwormhole.run import Run
from pwormhole.scenario import from_dag
from pwormhole.topology.builders import rail_optimized
from pwormhole.workload.dag import Dag

STEPS = 8


def crossed_ring(cross_us: int):
    """:func:`one_ring` of 8 steps, and a 4 MB flow from host 0 to host 2 at ``cross_us`` (it crosses
    the ring's ports)."""
    dag = Dag()
    prev = [dag.compute(i, 0) for i in range(RING)]
    for _ in range(STEPS):
        prev = [dag.flow(i, (i + 1) % RING, STEP_BYTES, deps=[prev[(i - 1) % RING]]) for i in range(RING)]
    dag.flow(0, 2, STEP_BYTES, deps=[dag.compute(0, cross_us * US)])
    topo = rail_optimized(RING, 1)
    cfg = config("hpcc")
    cfg.fill_k_maps({ln.rate_bps for ln in topo.links})
    return from_dag("t", topo, dag, cfg)


def wormhole(scn, n_lps=1, ring_steps=True):
    return Run(scn, n_lps=n_lps, accel=AccelConfig(ring_steps=ring_steps), memo=MemoCache("t")).run()


@pytest.mark.slow
def test_a_rings_later_steps_are_carried_from_two_agreeing_steps():
    """One ring of eight 4 MB steps on four servers. Step 1 is recorded, steps 2 and 3 take the
    finished step's steady state (successors after end) and agree to the ns: the template; step 4
    starts before step 3's last ACK is back (no template yet), steps 5-8 are carried (16 flows).
    Events 33,832 -> 22,600; each FCT within 0.06% of packet mode, as without; the last finish
    the same as without; the same answer on three LPs."""
    ref = Run(one_ring(STEPS), accel=None).run()
    on, off = wormhole(one_ring(STEPS)), wormhole(one_ring(STEPS), ring_steps=False)
    st = on.accel.stats()
    assert (st["ring_steps_carried"], st["ring_steps_handed_back"]) == (16, 0)
    assert off.accel.stats()["ring_steps_carried"] == 0
    assert (on.events, off.events) == (22_600, 33_832)
    assert max(fct_errors(on, ref)) < 0.0006 and max(fct_errors(off, ref)) < 0.0006
    assert max(ref.finish_ps.values()) == 1_603_344_368
    assert max(on.finish_ps.values()) == max(off.finish_ps.values()) == 1_604_119_761
    c = on.counters()
    assert c["bytes_sent"] == c["bytes_delivered"] == RING * STEPS * STEP_BYTES
    assert wormhole(one_ring(STEPS), n_lps=3).finish_ps == on.finish_ps


@pytest.mark.slow
def test_a_flow_crossing_carried_steps_hands_them_back_to_packets():
    """A 4 MB flow from host 0 to host 2 starts at 1150 us, during the carried steps: the carried
    flows whose ports it crosses go back to packets at the next boundary (4), their routes lose
    their templates, and every flow finishes with every byte delivered; FCTs against packet mode as
    far as without the model (mean 0.52% against 0.37%, max 4.8% against 5.4%: the crossing flow
    meets different phases of the ring)."""
    ref = Run(crossed_ring(1150), accel=None).run()
    on, off = wormhole(crossed_ring(1150)), wormhole(crossed_ring(1150), ring_steps=False)
    st = on.accel.stats()
    assert (st["ring_steps_carried"], st["ring_steps_handed_back"]) == (8, 4)
    assert len(on.finish_ps) == len(ref.finish_ps) == RING * STEPS + 1
    c = on.counters()
    assert c["bytes_sent"] == c["bytes_delivered"] == (RING * STEPS + 1) * STEP_BYTES
    e_on, e_off = fct_errors(on, ref), fct_errors(off, ref)
    assert max(e_on) < 0.05 and sum(e_on) / len(e_on) < 0.006
    assert max(e_off) < 0.055 and sum(e_off) / len(e_off) < 0.004
    assert wormhole(crossed_ring(1150), n_lps=3).finish_ps == on.finish_ps


def two_rings_one_route(second_us: int):
    """:func:`one_ring` of 8 steps, and a second ring of 4 steps on the same routes (the same step
    size) from ``second_us``: two collectives on one ring's routes at once, as a ZeRO-3
    reduce-scatter beside the next layer's re-gather."""
    dag = Dag()
    prev = [dag.compute(i, 0) for i in range(RING)]
    for _ in range(STEPS):
        prev = [dag.flow(i, (i + 1) % RING, STEP_BYTES, deps=[prev[(i - 1) % RING]]) for i in range(RING)]
    prev = [dag.compute(i, second_us * US) for i in range(RING)]
    for _ in range(4):
        prev = [dag.flow(i, (i + 1) % RING, STEP_BYTES, deps=[prev[(i - 1) % RING]]) for i in range(RING)]
    topo = rail_optimized(RING, 1)
    cfg = config("hpcc")
    cfg.fill_k_maps({ln.rate_bps for ln in topo.links})
    return from_dag("t", topo, dag, cfg)


@pytest.mark.slow
@pytest.mark.parametrize("second_us, carried, handed_back, max_error, mean_error",
                         [(1000, 12, 8, 0.0075, 0.0020), (1150, 8, 4, 0.0230, 0.0060)])
def test_a_second_ring_on_the_same_routes_is_never_carried_beside_the_first(second_us, carried, handed_back,
                                                                           max_error, mean_error):
    """At 1000 us the second ring's first step starts as the first ring's 6th step ends: it looks
    like that ring's next step, both are carried from one window, and both go back to packets at
    the next boundary (data of another flow on their data ports); every FCT within 0.75% of packet
    mode (0.71% without the model). At 1150 us it starts in the middle of a carried step, which is
    handed back with the bytes its template had acknowledged (that step 2.3% long, mean 0.54%
    against 0.24% without). Before carried flows checked their data ports, both rings ran at the
    template's full rate: ZeRO-3 at 4 layers came out 11% short in iteration time; before carried
    bytes stayed off the ports' byte counters (HPCC's INT), the packet flows there fell to HPCC's
    minimum rate and their steps took 5% longer."""
    ref = Run(two_rings_one_route(second_us), accel=None).run()
    on, off = wormhole(two_rings_one_route(second_us)), wormhole(two_rings_one_route(second_us), ring_steps=False)
    st = on.accel.stats()
    assert (st["ring_steps_carried"], st["ring_steps_handed_back"]) == (carried, handed_back)
    e_on, e_off = fct_errors(on, ref), fct_errors(off, ref)
    assert max(e_on) < max_error and sum(e_on) / len(e_on) < mean_error
    assert max(e_off) < 0.0072
    c = on.counters()
    assert c["bytes_sent"] == c["bytes_delivered"] == (STEPS + 4) * RING * STEP_BYTES
    assert wormhole(two_rings_one_route(second_us), n_lps=3).finish_ps == on.finish_ps


class FakeState:
    def __init__(self, fid, size, route):
        self.fid, self.size, self.data_ports, self.pg = fid, size, route, 3


class FakeNet:
    dag_rt = None
    cfg = config("hpcc")
    nodes: list = []
    flows: list = []


def test_a_template_needs_two_steps_that_agree():
    """A route's step becomes its template only when the one before it took the same time to the
    last byte received and to the last ACK, within 0.1%; a step of another size or a cut-short one
    starts it over."""
    rs = RingSteps(FakeNet(), [], [], True, None, 1000)
    assert not rs.on  # (no DAG: nothing to carry)
    route = ("p1", "p2")
    for fid, (rx, fct) in enumerate([(100_000, 101_000), (100_050, 101_050), (100_200, 101_300)]):
        rs.received_ps[fid] = 10 * fid + rx
        rs.learned(FakeState(fid, 4096, route), 10 * fid + fct, 10 * fid)
        if fid == 0:
            assert rs.templates == {}
        elif fid == 1:  # 50 ns of 100 us: agree
            assert rs.templates[(route, 3)] == Template(4096, 100_050, 101_050)
    # the third is 150 ns (0.15%) off the second: the second's template stays
    assert rs.templates[(route, 3)] == Template(4096, 100_050, 101_050)
    rs.received_ps[3] = 100_200
    rs.learned(FakeState(3, 8192, route), 101_300, 0)  # another size
    assert rs.last[(route, 3)].size_bytes == 8192
    rs.forget(FakeState(3, 8192, route))
    assert rs.templates == {} and rs.last == {}


def test_ring_steps_are_on_by_default_in_wormhole_mode(capsys, tmp_path):
    """``--no-ring-steps`` applies to Wormhole mode; without successors nothing is carried."""
    one_line_error(capsys, ["run", "--scenario", "fat-tree-mix", "--mode", "packet", "--no-ring-steps", "--out",
                            tmp_path / "a"], "--no-ring-steps applies to --mode wormhole only")
    assert AccelConfig().ring_steps
    r = Run(one_ring(STEPS), accel=AccelConfig(successors=False), memo=MemoCache("t")).run()
    assert r.accel.stats()["ring_steps_carried"] == 0


CROSSED_UNDER_MPI = """
import sys
sys.path[:0] = [{tests!r}, {accel!r}]
from mpi4py import MPI
from test_ringstep import crossed_ring
from pwormhole.accel.wormhole import AccelConfig
from pwormhole.simulate import simulate
comm = MPI.COMM_WORLD
simulate(crossed_ring(1150), {out!r}, comm=comm if comm.size > 1 else None, quiet=True,
         accel=AccelConfig(ring_steps=True))
"""


@needs_mpi
def test_carried_steps_and_their_hand_back_are_the_same_at_1_2_and_3_ranks(tmp_path):
    """The crossed ring of :func:`test_a_flow_crossing_carried_steps_hands_them_back_to_packets` under
    MPI: the carried starts and the ring members' receipts travel in Wormhole's report, the
    destination's owner queues the last byte's event, the hand-back opens the QP on the source's rank
    and moves the receiver on the destination's: ``fct.txt`` and the counters are the same bytes at 1,
    2 and 3 ranks (8 carried, 4 handed back)."""
    answers = []
    for ranks in (1, 2, 3):
        out = tmp_path / f"r{ranks}"
        code = CROSSED_UNDER_MPI.format(tests=str(ROOT / "tests"), accel=str(ROOT / "tests" / "accel"), out=str(out))
        cmd = [sys.executable, "-c", code]
        r = subprocess.run(([MPIEXEC, "-n", str(ranks)] if ranks > 1 else []) + cmd, capture_output=True,
                           text=True, cwd=ROOT, timeout=300)
        assert r.returncode == 0, r.stderr
        s = json.loads((out / "summary.json").read_text())
        assert s["ranks"] == ranks
        answers.append([(out / "fct.txt").read_bytes(), s["ring_steps_carried"], s["ring_steps_handed_back"],
                        s["bytes_sent"], s["bytes_delivered"], s["events"]])
    assert answers[0][1:5] == [8, 4, (RING * STEPS + 1) * STEP_BYTES, (RING * STEPS + 1) * STEP_BYTES]
    assert answers[0] == answers[1] == answers[2]


def test_a_run_stopped_while_steps_are_carried_counts_what_they_delivered():
    """Stopped at 1,100 us, in the 6th step (carried): bytes sent and delivered are what the
    packet run had within 1% (the carried steps count what their template delivered by then)."""
    ref = Run(one_ring(STEPS), accel=None).run(1_100 * US)
    on = Run(one_ring(STEPS), accel=AccelConfig(), memo=MemoCache("t")).run(1_100 * US)
    assert on.accel.stats()["ring_steps_carried"] == 8
    c, r = on.counters(), ref.counters()
    assert c["bytes_sent"] >= c["bytes_delivered"]
    assert abs(c["bytes_delivered"] - r["bytes_delivered"]) < 0.01 * r["bytes_delivered"]
    assert abs(c["bytes_sent"] - r["bytes_sent"]) < 0.01 * r["bytes_sent"]


def test_carried_steps_reach_the_link_monitors_once():
    """With the link monitors on, the one-ring run with 16 steps carried puts the packet run's
    301,568,000 bytes on its links, with no negative interval (the carried bytes are on no port
    counter, so the monitors must not take them back out of a later interval)."""
    def with_monitors():
        scn = one_ring(STEPS)
        scn.config.qlen_mon_file, scn.config.qlen_mon_end_ps = "qlen.txt", None
        return scn

    totals = []
    for acc in (None, AccelConfig()):
        r = Run(with_monitors(), accel=acc, memo=MemoCache("t") if acc else None).run()
        links = r.monitor_data().links
        assert not any(v < 0 for u in links.values() for v in u.values())
        totals.append(sum(sum(u.values()) for u in links.values()))
        if acc is not None:
            assert r.accel.stats()["ring_steps_carried"] == 16
    assert totals == [301_568_000, 301_568_000]


@pytest.mark.slow
def test_a_link_failure_hands_back_only_the_steps_still_to_deliver():
    """Link 8-9 fails at 1003 us, where 4 carried steps have delivered their last byte (only their
    last ACK is left: they stay carried) and 4 have not (handed back, rerouted): every byte
    delivered once, as in packet mode."""
    def failing():
        scn = one_ring(STEPS)
        scn.config.link_down = (LinkDown(1_003_000_000, 8, 9, "test", None),)
        return scn

    ref = Run(failing(), accel=None).run()
    on = Run(failing(), accel=AccelConfig(), memo=MemoCache("t")).run()
    st = on.accel.stats()
    assert (st["ring_steps_carried"], st["ring_steps_handed_back"]) == (8, 4)
    assert on.complete and len(on.finish_ps) == len(ref.finish_ps) == RING * STEPS
    assert on.counters()["bytes_delivered"] == ref.counters()["bytes_delivered"] == RING * STEPS * STEP_BYTES
    assert on.counters()["bytes_sent"] == RING * STEPS * STEP_BYTES


def late_step_ring(late_us: int, cross_us: int | None = None):
    """:func:`one_ring`'s 8 steps of 4 MB with each member's sends on one connection (``fifo_after``),
    member 0's step 5 also waiting for a compute that ends at ``late_us``; a 4 MB flow from host 0
    to host 2 at ``cross_us`` (None: none)."""
    dag = Dag()
    prev = [dag.compute(i, 0) for i in range(RING)]
    sent: list = []
    for k in range(STEPS):
        cur = []
        for i in range(RING):
            deps = [prev[(i - 1) % RING]] + ([dag.compute(0, late_us * US)] if (i, k) == (0, 5) else [])
            cur.append(dag.flow(i, (i + 1) % RING, STEP_BYTES, deps=deps,
                                fifo_after=dag.arg[sent[-1][i]] if sent else -1))
        sent.append(cur)
        prev = cur
    if cross_us is not None:
        dag.flow(0, 2, STEP_BYTES, not_before_ps=cross_us * US)
    topo = rail_optimized(RING, 1)
    cfg = config("hpcc")
    cfg.fill_k_maps({ln.rate_bps for ln in topo.links})
    return from_dag("t", topo, dag, cfg)


@pytest.mark.slow
def test_a_step_held_behind_a_carried_step_is_carried_too():
    """Member 0's step 5 starts late (1,010 us): its step 6 waits for step 5's last byte, which the
    model carries (when that byte leaves, from its template), and is carried in turn, its FCT from
    its own start; it did go on as packets, and handed step 5 and its neighbours back (step 5's tail
    sent twice, 3.7% on its FCT). Step 5 starting at 1,030 us and a 4 MB flow crossing at 1,210 us:
    step 5 goes back to packets, and step 6 then waits for its QP's last byte, not for the time the
    template gave (it opened 33 us before that byte left)."""
    ref = Run(late_step_ring(1010), accel=None).run()
    on = wormhole(late_step_ring(1010))
    st = on.accel.stats()
    assert (st["ring_steps_carried"], st["ring_steps_handed_back"]) == (16, 0)
    assert max(fct_errors(on, ref)) < 0.01
    ref = Run(late_step_ring(1030, cross_us=1210), accel=None).run()
    on = wormhole(late_step_ring(1030, cross_us=1210))
    assert on.accel.stats()["ring_steps_handed_back"] == 3
    e_on = fct_errors(on, ref)  # (as crossed_ring's hand-backs: 3.7% on one step, 1.8% without carrying)
    assert max(e_on) < 0.05 and sum(e_on) / len(e_on) < 0.006
