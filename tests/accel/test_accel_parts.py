"""The parts of acceleration alone, without a network: solvers, groups, CC skip rules, LP seams."""

import random
from collections import deque
from types import SimpleNamespace

import pytest

from pwormhole.accel import fastforward as ff
from pwormhole.accel.groups import FlowState, components
from pwormhole.accel.sampling import Sample
from pwormhole.accel.solvers import max_min_shares
from pwormhole.engine.lp import LogicalProcess
from pwormhole.net import cc


class P:
    """A port stand-in (hashable; sorted by node id and index)."""

    def __init__(self, node_id, idx=0):
        self.node = SimpleNamespace(node_id=node_id)
        self.idx = idx


def test_max_min_shares_fill_the_tightest_port_first():
    """Port a (capacity 10) carries flows 1 and 2, port b (capacity 12) flows 2 and 3: a's
    level is 5 (5 each), then b has 12 - 5 = 7 left for flow 3."""
    a, b = P(0), P(1)
    shares = max_min_shares({a: 10.0, b: 12.0}, {a: [1, 2], b: [2, 3]}, {1: [a], 2: [a, b], 3: [b]})
    assert shares == {1: 5.0, 2: 5.0, 3: 7.0}


def _water_fill(room, crossing, data_ports):
    """Water-filling as written plainly: every port's flows without a share recounted at each level."""
    share = {}
    while True:
        best = None
        for p in room:
            n = sum(1 for f in crossing[p] if f not in share)
            if n:
                key = (max(0.0, room[p]) / n, p.node.node_id, p.idx)
                if best is None or key < best[0]:
                    best = (key, p)
        if best is None:
            return share
        (level, _, _), p = best
        for f in crossing[p]:
            if f not in share:
                share[f] = level
                for q in data_ports[f]:
                    if q in room:
                        room[q] -= level
        del room[p]


@pytest.mark.parametrize("seed", range(34))
def test_max_min_shares_equal_plain_water_filling(seed):
    """Random ports (equal capacities tie, some carry no flow, some are overfull) and flows of 1-4
    ports: the same shares, float for float, and the same capacities left over (seeds 30-33: 300
    ports and 600 flows, where one port's level changes many times before it is filled)."""
    rng = random.Random(seed)
    n_ports, n_flows = (300, 600) if seed >= 30 else (rng.randint(1, 12), rng.randint(1, 20))
    ports = [P(rng.randint(0, 5), i) for i in range(n_ports)]
    data_ports = {f: rng.sample(ports, rng.randint(1, min(4, len(ports)))) for f in range(n_flows)}
    crossing = {p: [f for f in data_ports if p in data_ports[f]] for p in ports}
    room = {p: rng.choice([10.0, 12.5, rng.uniform(-1.0, 30.0)]) for p in ports}
    want_room = dict(room)
    want = _water_fill(want_room, crossing, data_ports)
    assert want  # (every flow crosses a port of room)
    got = max_min_shares(room, crossing, data_ports)
    assert got == want and list(got) == list(want)
    assert room == want_room


def test_components_split_flows_by_shared_ports():
    a, b, c = P(0), P(1), P(2)
    flows = {1: SimpleNamespace(ports={a}), 2: SimpleNamespace(ports={a, b}), 3: SimpleNamespace(ports={c})}
    assert components({1, 2, 3}, flows) == [({1, 2}, {a, b}), ({3}, {c})]


def test_dcqcn_timer_keeps_its_period_and_alpha_decays_per_interval():
    assert [cc.dcqcn_timer_after_skip(100, t, 900) for t in (50, 100, 1001)] == [100, 100, 1900]
    cfg = SimpleNamespace(ewma_gain=0.5, alpha_resume_interval_ps=10)
    assert cc.dcqcn_alpha_decay(cfg, 35) == 0.125  # three whole intervals


def test_hpcc_int_records_shift_by_the_skip():
    hops = [(10, 1000, 5, 100), (20, 2000, 6, 100), (30, 3000, 7, 100)]
    assert cc.hpcc_shift_int(hops, 7, [40, 50]) == [(17, 1040, 5, 100), (27, 2050, 6, 100), (37, 3000, 7, 100)]


def test_extract_and_reinsert_keep_the_keys():
    lp = LogicalProcess(0, [], [], [], ())
    for ev in [(5, 1, 0, None, "a"), (7, 2, 0, None, "b"), (9, 3, 0, None, "c")]:
        lp.heap.push(*ev)
    out = lp.extract(lambda ev: ev[4] != "b")
    assert sorted(out) == [(5, 1, 0, None, "a"), (9, 3, 0, None, "c")] and lp.heap.events() == [(7, 2, 0, None, "b")]
    lp.reinsert(out, 100, lambda ev: 6 if ev[4] == "c" else None)
    assert [lp.heap.pop() for _ in range(3)] == [(6, 3, 0, None, "c"), (7, 2, 0, None, "b"), (105, 1, 0, None, "a")]


def test_samples_deque_of_named_tuples_reads_by_name():
    port = P(0)
    port.rate_bps = 100
    flow = SimpleNamespace(flow_id=0, src=0, dst=1, pg=3, size_bytes=10)
    fs = FlowState(flow, 1, 0, 1000, 48, [port], [], 2, 0)
    assert (fs.una(), fs.rate(), fs.pacing_rate()) == (0, 100, 100)
    fs.samples = deque([Sample(1, 60, 500, 1, 700, -1, 0, 80)])
    assert (fs.una(), fs.rate(), fs.pacing_rate()) == (500, 60, 80)


def test_rp_timer_keeps_its_own_period_across_a_wake():
    """A DCQCN RP timer due during a skip fires at the wake if that is on its period, else at
    its next period; one due after the wake keeps its time (``cc.dcqcn_timer_after_skip``, as
    ``fastforward.thaw`` retimes it)."""
    assert [cc.dcqcn_timer_after_skip(100, t, 900) for t in (50, 100, 999, 1000, 1001, 1900)] == [100, 100, 1000,
                                                                                                  1000, 1900, 1900]


def test_wakes_advance_whole_packets_and_keep_the_fraction_left():
    """A flow frozen and woken ten times at 12.5 bytes/ns for 1.2345 us each: every wake advances
    whole 1000-byte packets, and the fraction a wake leaves is advanced at the next, so the ten
    advance 154,000 bytes, within a packet of 12.5 x 12,345 ns = 154,312.5 (dropping the fraction
    at each wake would advance 150,000: ten times 15 packets). Near the flow's end the room cap
    holds and nothing is carried past it."""
    fs = SimpleNamespace(size=1_000_000, mtu=1000, lag_bytes=0.0)  # (the FlowState fields it reads)
    moved = 0
    for _ in range(10):
        b = ff.whole_packets(fs, 12.5e-3, 1_234_500, moved, 0)
        assert b % 1000 == 0
        moved += b
    assert moved == 154_000 and abs(fs.lag_bytes - 312.5) < 1e-6
    assert ff.whole_packets(fs, 12.5e-3, 100_000_000, moved, 5_000) == 1_000_000 - moved - 5_000 - 1000
    assert fs.lag_bytes == 0.0
