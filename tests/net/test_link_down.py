"""LINK_DOWN takes a link down mid-run (HPCC third.cc ``TakeDownLink``).

At the failure time the link stops carrying packets (those on its wire and in
its queues are lost), ECMP tables are recomputed without it, flows reroute and
recover from the losses (go-back-N on NACK or timeout), and a flow left without
a path is reported stuck (exit 3). The per-link byte counter (``Port.tx_bytes``,
bytes started on the wire) shows that nothing crossed the link afterwards.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys

import pytest
from helpers import G100, MPIEXEC, ROOT, US, config, flows_of, needs_mpi

from pwormhole.accel.wormhole import AccelConfig
from pwormhole.commands import cli
from pwormhole.config import LinkDown
from pwormhole.errors import InputError, StuckError
from pwormhole.run import Run
from pwormhole.scenario import Scenario
from pwormhole.simulate import simulate
from pwormhole.topology.builders import fat_tree
from pwormhole.topology.model import Link, Topology

S = 10**12
T0 = 2 * S  # HPCC's LINK_DOWN times are 2 s + a us: the flows start at 2 s (empty time is skipped)
DATA_WIRE = 1048  # 1000 B payload + 48 B headers (DCQCN)
TX = 83_840  # ps to serialize DATA_WIRE at 100 Gb/s
ACK_TX = 4_800  # ps for a 60 B ACK/NACK at 100 Gb/s


def two_spines(senders: int = 1) -> Topology:
    """Senders ``0..n-1`` on ToR A (``n+1``), the receiver ``n`` on ToR B (``n+2``), the
    ToRs joined by two spines ``n+3`` and ``n+4`` (two equal-cost paths); 100 Gb/s, 1 us."""
    n = senders
    a, b, s1, s2 = n + 1, n + 2, n + 3, n + 4
    links = [Link(h, a, G100, US) for h in range(n)] + [Link(n, b, G100, US)]
    links += [Link(a, s1, G100, US), Link(a, s2, G100, US), Link(s1, b, G100, US), Link(s2, b, G100, US)]
    return Topology(n + 5, frozenset({a, b, s1, s2}), links)


def _ports(net, a: int, b: int):
    """The two ports of the link a-b."""
    (li,) = [i for i, ln in enumerate(net.topo.links) if {ln.a, ln.b} == {a, b}]
    return net.link_ports[li]


def _drained(run) -> None:
    """A finished lossless run leaves every switch buffer empty and no port paused."""
    for nd in run.net.nodes:
        for p in nd.ports:
            assert not any(p.paused), (nd.node_id, p.idx)
        if nd.is_switch:
            assert nd.shared_used == 0 and nd.used_bytes == 0, nd.node_id


def test_failure_mid_flow_moves_it_to_the_other_spine():
    """One 1 MB flow at the line rate over two spines; the ToR-A uplink it uses fails at 2 s + 30 us.

    By hand (TX = 83.84 ns per 1048 B packet, ACK_TX = 4.80 ns, D = 1 us per link): the
    packets on that link's wire are lost: the one being serialized and the 12 propagating
    (1 us / TX = 11.93: 11 or 12 by the phase, 12 here), 13. The next one, sent 13 TX after
    the first lost one, goes over the other spine; the receiver NACKs the gap when it arrives
    (4 hops: 4 (TX + D)) and the NACK takes 4 (ACK_TX + D) back. Meanwhile the sender filled its window (the BDP:
    (2 x 4 D + 4 x 80 ns) x 100 Gb/s = 104,000 B), which it sends again from the NACK on:
    the flow ends 17 TX + 8 D + 4 ACK_TX = 9.44448 us later."""
    topo = two_spines()
    flows = flows_of([(0, 1, 1_000_000, T0)])
    base = Run(Scenario("t", topo, flows, config())).run()
    net = base.net
    path = net.path_of(0)
    spine = path[1].peer.node_id
    other = 9 - spine  # spines 4 and 5
    t_fail = T0 + 30 * US
    cfg = config()
    cfg.link_down = (LinkDown(t_fail - T0, 2, spine, "LINK_DOWN"),)
    at_fail = Run(Scenario("t", topo, flows, cfg)).run(until_ps=t_fail)  # the state at the failure time
    r = Run(Scenario("t", topo, flows, cfg)).run()
    assert base.complete and r.complete and r.stuck is None
    c = r.counters()
    assert c["bytes_delivered"] == 1_000_000 and c["drops"] == 0
    assert c["lost_packets"] == 13 and c["nacks"] == 1 and c["retransmitted_bytes"] == 104_000
    assert r.finish_ps[0] - base.finish_ps[0] == 17 * TX + 8 * US + 4 * ACK_TX
    dead = _ports(r.net, 2, spine)
    before = _ports(at_fail.net, 2, spine)
    assert [p.tx_bytes for p in dead] == [p.tx_bytes for p in before]  # no byte on it after the failure
    assert before[0].tx_bytes > 0  # the flow did use it until then
    assert r.net.failed == [(t_fail, 2, spine, [(spine - 2, before[0].tx_bytes, before[1].tx_bytes)])]  # links 2, 3
    up = _ports(r.net, 2, other)[0]
    # data conservation over ToR A's uplinks: every packet once, the retransmitted ones twice
    assert dead[0].tx_bytes + up.tx_bytes == (1000 + 104) * DATA_WIRE
    _drained(r)


def test_failure_under_pfc_releases_the_dead_ports_buffer():
    """Three senders share ToR A's two uplinks with a 200 KB buffer: the uplink queues fill and
    ToR A pauses its hosts (PFC). The uplink carrying two flows fails with packets queued on it:
    they are dropped and their buffer released, so the pauses they caused resume; the flows
    move to the other uplink and every flow finishes, with empty buffers and no port paused."""
    topo = two_spines(3)
    specs = [(h, 3, 1_000_000, T0) for h in range(3)]
    cfg = config("dcqcn", has_win=False, buffer_size_bytes=200_000)
    base = Run(Scenario("t", topo, flows_of(specs), cfg)).run()
    net = base.net
    spines = [net.path_of(h)[1].peer.node_id for h in range(3)]
    busiest = max((6, 7), key=spines.count)
    assert spines.count(busiest) >= 2 and base.counters()["pfc_pauses"] > 0
    t_fail = T0 + 40 * US
    cfg.link_down = (LinkDown(t_fail - T0, 4, busiest, "LINK_DOWN"),)
    at_fail = Run(Scenario("t", topo, flows_of(specs), cfg)).run(until_ps=t_fail - 1)
    queued = len(list(_ports(at_fail.net, 4, busiest)[0].queued()))  # 21
    r = Run(Scenario("t", topo, flows_of(specs), cfg)).run()
    assert r.complete and r.stuck is None
    c = r.counters()
    assert queued > 0 and c["bytes_delivered"] == 3_000_000
    assert c["lost_packets"] >= queued + 12  # the queued ones and the wire's 12-13 (39)
    assert [p.tx_bytes for p in _ports(r.net, 4, busiest)] == list(r.net.failed[0][3][0][1:])
    moved = [f for f in range(3) if spines[f] == busiest]
    assert all(r.finish_ps[f] > base.finish_ps[f] for f in moved)
    _drained(r)


# -- no path left --------------------------------------------------------------------------

def _cut_off_scenario(cfg=None):
    """Host 0 and host 4 send to host 1 (line 0 - 2 - 3 - 1, host 4 on switch 2); host 0's only
    link fails at 2 s + 20 us: flow 0 has no path left, flow 1 finishes."""
    topo = Topology(5, frozenset({2, 3}), [Link(0, 2, G100, US), Link(2, 3, G100, US), Link(3, 1, G100, US),
                                           Link(4, 2, G100, US)])
    cfg = cfg or config()
    cfg.link_down = (LinkDown(20 * US, 0, 2, "LINK_DOWN"),)
    return Scenario("t", topo, flows_of([(0, 1, 1_000_000, T0), (4, 1, 1_000_000, T0)]), cfg)


@pytest.mark.parametrize("mode", ["packet", "wormhole"])
def test_flow_without_a_path_is_reported_stuck(tmp_path, mode):
    accel = AccelConfig(theta=0.3, min_span_packets=50) if mode == "wormhole" else None
    with pytest.raises(StuckError) as e:
        simulate(_cut_off_scenario(), str(tmp_path), quiet=True, accel=accel)
    msg = str(e.value)
    assert "no path left for flow 0 (link 0-2 down at 2000020.000 us)" in msg, msg
    assert "stuck flows: 0 (0->1, " in msg and ", 1 (" not in msg
    s = json.loads((tmp_path / "summary.json").read_text())
    assert not s["complete"] and s["flows_finished"] == 1 and [f["flow"] for f in s["stuck"]["flows"]] == [0]
    assert (tmp_path / "fct.txt").read_text().split()[:2] == ["0b000401", "0b000101"]  # flow 1 (4 -> 1) is kept
    assert s["stuck"]["at_ps"] < 3 * S  # stopped once nothing was left, not at the stop time


def test_flow_without_a_path_via_the_cli_exits_3(tmp_path, capsys):
    (tmp_path / "topo.txt").write_text("5 2 4\n2 3\n0 2 100Gbps 0.001ms 0\n2 3 100Gbps 0.001ms 0\n"
                                       "3 1 100Gbps 0.001ms 0\n4 2 100Gbps 0.001ms 0\n")
    (tmp_path / "flows.txt").write_text("2\n0 1 3 100 1000000 2\n4 1 3 100 1000000 2\n")
    (tmp_path / "config.txt").write_text("CC_MODE 1\nLINK_DOWN 20 0 2\nSIMULATOR_STOP_TIME 3\n")
    args = ["run", "--topology", str(tmp_path / "topo.txt"), "--flows", str(tmp_path / "flows.txt"), "--config",
            str(tmp_path / "config.txt"), "--no-progress"]
    for mode in ("packet", "wormhole"):
        assert cli.main([*args, "--mode", mode, "--out", str(tmp_path / mode)]) == 3
        err = capsys.readouterr().err
        assert "pwormhole: stuck: " in err and "no path left for flow 0" in err
    if MPIEXEC:  # every rank stops at the same boundary; rank 0 tells
        r = subprocess.run([MPIEXEC, "-n", "2", sys.executable, "-m", "pwormhole", *args, "--out", str(tmp_path / "m")],
                           capture_output=True, text=True, timeout=120)
        assert r.returncode == 3 and r.stderr.count("no path left for flow 0") == 1, r.stderr
        assert (tmp_path / "m" / "fct.txt").read_bytes() == (tmp_path / "wormhole" / "fct.txt").read_bytes()
    # a LINK_DOWN naming two nodes no link joins is an input error, before simulating
    (tmp_path / "config.txt").write_text("CC_MODE 1\nLINK_DOWN 20 0 1\n")
    assert cli.main([*args, "--mode", "packet", "--out", str(tmp_path / "q")]) == 2
    assert "LINK_DOWN 0 1: no link joins nodes 0 and 1" in capsys.readouterr().err


def test_unknown_link_is_refused():
    cfg = config()
    cfg.link_down = (LinkDown(0, 0, 3, "LINK_DOWN 0 3"),)
    with pytest.raises(InputError, match="no link joins nodes 0 and 3"):
        Run(Scenario("t", two_spines(), flows_of([(0, 1, 1000, 0)]), cfg))


# -- a fat tree ----------------------------------------------------------------------------

FAT_DOWN = (29, 34)  # pod 2's second aggregation switch - the third core switch: 5 flows cross it
FAT_FAIL_PS = T0 + 133 * US  # mid-flow, while Wormhole holds the flows crossing it frozen


def _fat_scenario(down: bool):
    cfg = config("dcqcn")
    if down:
        cfg.link_down = (LinkDown(FAT_FAIL_PS - T0, *FAT_DOWN, "LINK_DOWN"),)
    specs = [(h, (h + 4) % 16, 1_000_000, T0) for h in range(16)]  # a permutation across pods
    return Scenario("perm", fat_tree(4), flows_of(specs), cfg)


FAT_ACCEL = AccelConfig(theta=0.3, min_span_packets=50)  # lets 1 MB flows freeze before the failure


@pytest.mark.slow
def test_fat_tree_permutation_with_a_failed_link(tmp_path):
    base = Run(_fat_scenario(False)).run()
    net = base.net
    crossing = sorted(f.flow_id for f in net.flows if set(_ports(net, *FAT_DOWN)) &
                      set(net.path_of(f.flow_id)))
    assert crossing == [5, 6, 8, 10, 11]
    runs = {}
    for name, accel, lps in (("packet", None, 1), ("wormhole", FAT_ACCEL, 1), ("wormhole-2lps", FAT_ACCEL, 2)):
        r = Run(_fat_scenario(True), n_lps=lps, accel=accel).run()
        assert r.complete and r.stuck is None, name
        snap = r.net.failed[0][3][0][1:]
        assert [p.tx_bytes for p in _ports(r.net, *FAT_DOWN)] == list(snap), name  # nothing after the failure
        assert min(snap) > 0
        _drained(r)
        runs[name] = r
    assert runs["wormhole"].accel.wakes_interrupted >= 1  # a frozen group woke for the failure
    fct = {k: {f: r.finish_ps[f] - r.start_ps[f] for f in r.finish_ps} for k, r in runs.items()}
    fct0 = {f: base.finish_ps[f] - base.start_ps[f] for f in base.finish_ps}
    assert all(fct["packet"][f] > fct0[f] for f in (5, 6, 10, 11))  # the flows on the failed link
    assert statistics.mean(fct["packet"].values()) > 1.05 * statistics.mean(fct0.values())  # +11%
    p, w = statistics.mean(fct["packet"].values()), statistics.mean(fct["wormhole"].values())
    assert abs(w - p) / p < 0.01
    assert fct["wormhole"] == fct["wormhole-2lps"]
    assert runs["wormhole"].finish_ps == runs["wormhole-2lps"].finish_ps


@pytest.mark.slow
@needs_mpi
def test_fat_tree_failure_identical_on_1_and_2_ranks(tmp_path):
    """The failure is a boundary of its own, applied the same way on every rank: fct.txt is
    byte-identical on 1 process and 2 MPI ranks (Wormhole mode; 2 in-process LPs: above)."""
    flows = tmp_path / "flows.txt"
    flows.write_text("16\n" + "".join(f"{h} {(h + 4) % 16} 3 100 1000000 2\n" for h in range(16)))
    (tmp_path / "config.txt").write_text("CC_MODE 1\nLINK_DOWN 133 29 34\n")
    args = ["run", "--mode", "wormhole", "--theta", "0.3", "--topology", "fat-tree:k=4", "--flows", flows, "--config",
            tmp_path / "config.txt", "--no-progress"]
    one = subprocess.run([sys.executable, "-m", "pwormhole", *map(str, args), "--out", tmp_path / "one"],
                         capture_output=True, text=True, cwd=ROOT, timeout=180)
    assert one.returncode == 0, one.stderr
    mpi = subprocess.run([MPIEXEC, "-n", "2", sys.executable, "-m", "pwormhole", *map(str, args), "--out",
                          tmp_path / "mpi"], capture_output=True, text=True, cwd=ROOT, timeout=180)
    assert mpi.returncode == 0, mpi.stderr
    ref = (tmp_path / "one" / "fct.txt").read_bytes()
    assert len(ref.splitlines()) == 16
    assert ref == (tmp_path / "mpi" / "fct.txt").read_bytes()
    s1, s2 = (json.loads((tmp_path / d / "summary.json").read_text()) for d in ("one", "mpi"))
    assert s1["complete"] and s2["ranks"] == 2
    assert s1["lost_packets"] == s2["lost_packets"] > 0 and s1["retransmitted_bytes"] == s2["retransmitted_bytes"]
