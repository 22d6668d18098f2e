"""The flow table's groups alone (``accel.groups.FlowTable``): merged on a join, split on a leave
as connected components."""

import random
from types import SimpleNamespace

import pytest

from pwormhole.accel.groups import FlowTable, components, split_off, still_one


def test_a_flow_joining_three_groups_merges_them_into_the_largest_renamed():
    """FlowTable.add keeps the largest group's sets and renames it; the smaller groups' ports
    and flows move to it, the newest start is the latest of all, and a leave splits it again."""
    tab = FlowTable()

    def flow(fid, ports, start_ps):
        fs = SimpleNamespace(fid=fid, ports=set(ports), group_cell=[-1], start_ps=start_ps)
        tab.add(fs, tab.touching(fs.ports), start_ps)
        return fs

    a = [flow(0, {"p0", "p1", "p2"}, 0), flow(1, {"p2", "p3"}, 5)]  # group of 4 ports
    b = flow(2, {"q0"}, 7)
    c = flow(3, {"r0", "r1"}, 2)
    assert sorted(tab.groups) == [1, 2, 3]
    big = tab.groups[1]
    joiner = flow(4, {"p3", "q0", "r1", "s0"}, 9)
    (g,) = tab.groups.values()
    assert g.gid == 4 and g.flows is big.flows and g.flows == {0, 1, 2, 3, 4}
    assert g.ports == {"p0", "p1", "p2", "p3", "q0", "r0", "r1", "s0"}
    assert {tab.port_cell[p][0] for p in g.ports} == {4}
    assert [fs.group_cell[0] for fs in (*a, b, c, joiner)] == [4] * 5
    assert (g.newest_start_ps, g.max_start_ps) == (9, 9)
    tab.remove(4, 20)  # the joiner leaves: three groups again, each with its own id
    assert sorted((sorted(x.flows), x.newest_start_ps) for x in tab.groups.values()) == [
        ([0, 1], 5), ([2], 7), ([3], 2)]
    assert all(tab.port_cell[p][0] == x.gid for x in tab.groups.values() for p in x.ports)
    assert "s0" not in tab.port_cell


@pytest.mark.parametrize("seed", range(6))
def test_leaves_split_groups_as_connected_components_do(seed):
    """After every leave the table's groups are the connected components of the flows left
    (by shared port), with exactly their ports: also where a port all remaining flows cross
    keeps the group whole with no part split off (an incast's last hop: every flow of the even seeds)."""
    split = []
    rng = random.Random(seed)
    tab = FlowTable()
    ports = [f"p{i}" for i in range(12)]
    live = {}
    for fid in range(40):
        shared = ["sink"] if seed % 2 == 0 or rng.random() < 0.5 else []
        fs = SimpleNamespace(fid=fid, ports=set(rng.sample(ports, rng.randint(1, 3)) + shared), group_cell=[-1],
                             start_ps=fid)
        tab.add(fs, tab.touching(fs.ports), fid)
        live[fid] = fs
    for t, fid in enumerate(rng.sample(sorted(live), len(live)), start=100):
        before = len(tab.groups)
        tab.remove(fid, t)
        split.append(len(tab.groups) - before)
        del live[fid]
        want = sorted((sorted(c), sorted(p)) for c, p in components(set(live), live))
        assert sorted((sorted(g.flows), sorted(g.ports)) for g in tab.groups.values()) == want
        assert set(tab.port_cell) == {p for fs in live.values() for p in fs.ports}
        assert tab.port_flows == {p: {f for f, fs in live.items() if p in fs.ports} for p in tab.port_cell}
    assert max(split) <= 0 or seed % 2  # an incast's group never splits


def departures(seed: int, max_ports_per_flow: int):
    """A random group (flows of 1 to ``max_ports_per_flow`` ports, the largest component of up to 40
    flows on up to 40 ports), then each of its flows leaving in turn: ``(rest, by_port, seeds)``,
    the flows left, their flows per port, and the ports the one that left shared with them."""
    rng = random.Random(seed)
    ports = [f"p{i}" for i in range(rng.randint(4, 40))]
    flows = {f: SimpleNamespace(ports=set(rng.sample(ports, rng.randint(1, max_ports_per_flow))))
             for f in range(rng.randint(2, 40))}
    group, _ = max(components(set(flows), flows), key=lambda c: len(c[0]))
    for gone in sorted(group):
        rest = {f: flows[f] for f in group if f != gone}
        by_port: dict = {}
        for f, fs in rest.items():
            for p in fs.ports:
                by_port.setdefault(p, set()).add(f)
        yield rest, by_port, sorted(p for p in flows[gone].ports if p in by_port)


@pytest.mark.parametrize("seed", range(20))
def test_split_off_finds_every_component_but_the_one_left_open(seed):
    """Each flow of a random group leaves in turn: the parts ``split_off`` returns and what is
    left beside them are the connected components of the flows left; the searches run side by
    side, so a part returned has at most (searches) x (what is left + 1) flows."""
    for rest, by_port, seeds in departures(seed, 2):
        parts = split_off(seeds, by_port, rest)
        left = set(rest) - set().union(*parts)
        have = sorted(sorted(c) for c in [*parts, left] if c)
        assert have == sorted(sorted(c) for c, _ in components(set(rest), rest))
        assert all(len(c) <= len(seeds) * (len(left) + 1) for c in parts)


def test_still_one_says_whether_a_departure_splits_its_group():
    """Each flow of a random group leaves in turn (flows of 1-3 ports, so ports meet through one
    flow, through several hops, or not at all): ``still_one`` of the ports it leaves is True
    exactly when the flows left are one connected component, as ``split_off`` then finds no part.
    Over 20 groups both answers come up."""
    answers = set()
    for seed in range(20):
        for rest, by_port, seeds in departures(seed, 3):
            if len(seeds) < 2:
                continue
            one = len(components(set(rest), rest)) == 1
            assert still_one(seeds, by_port, rest) is one
            assert (split_off(seeds, by_port, rest) == []) is one
            answers.add(one)
    assert answers == {True, False}


def test_still_one_meets_a_port_through_two_hops():
    """Ports a and c share no flow; they meet through flow 2 (ports b and c) and flow 1 (a and b):
    one part. Without flow 2, c's flow 3 runs out of ports: a part splits off."""
    fl = {1: SimpleNamespace(ports={"a", "b"}), 2: SimpleNamespace(ports={"b", "c"}),
          3: SimpleNamespace(ports={"c", "d"})}
    by_port = {"a": {1}, "b": {1, 2}, "c": {2, 3}, "d": {3}}
    assert still_one(["a", "d"], by_port, fl) is True
    del fl[2]
    by_port = {"a": {1}, "b": {1}, "c": {3}, "d": {3}}
    assert still_one(["a", "d"], by_port, fl) is False
