"""HPCC memo replays cut short by a joining ring step."""

from types import SimpleNamespace

import pytest
from helpers import US, config

from pwormhole.accel.config import FRESH_WINDOWS, KNOWN_WINDOWS
from pwormhole.accel.memo import MemoCache
from pwormhole.accel.replay import known
from pwormhole.accel.wormhole import AccelConfig
from pwormhole.run import Run
from pwormhole.scenario import from_dag
from pwormhole.topology.builders import rail_optimized
from pwormhole.workload.dag import Dag

RING = 4
STEP_BYTES = 8_000_000
JOIN_PS = 60 * US  # the second all-reduce's step starts this long after the first's (a compute op)


def overlapping_rings():
    """Eight 1-GPU servers on one 200 Gb/s rail leaf, HPCC. A ring step of 8 MB on GPUs 0-3
    alone (recorded), then at 2 ms the same step on GPUs 4-7 (a memo hit: a lone step), which
    a second all-reduce's 4 MB step on the same ring joins 60 us later, inside the replayed
    transient: the jump is cut short."""
    dag = Dag()
    for base, t0 in ((0, 0), (RING, 2000 * US)):
        for i in range(RING):
            a, b = base + i, base + (i + 1) % RING
            c0 = dag.compute(a, t0)
            dag.flow(a, b, STEP_BYTES, deps=[c0])
            if base:
                dag.flow(a, b, STEP_BYTES // 2, deps=[dag.compute(a, JOIN_PS, deps=[c0])])
    topo = rail_optimized(2 * RING, 1)
    cfg = config("hpcc")
    cfg.fill_k_maps({ln.rate_bps for ln in topo.links})
    return from_dag("t", topo, dag, cfg)


def run(acc, until_ps=None):
    return Run(overlapping_rings(), accel=acc, memo=MemoCache("t")).run(until_ps=until_ps)


@pytest.mark.slow
def test_cut_short_hpcc_replay_leaves_the_flows_where_the_packet_run_has_them():
    """A jump cut short by a joining step advances the bytes the recorded flows sent
    (acknowledged plus the pipeline's growth) in proportion to the time spent and sets their
    recorded rates: 3 us after the join the replayed flows are within 8 KB of the packet run's,
    and every FCT within 0.5% (0.35%; bench/RESULTS.md, "Overlapping rings under HPCC"). The
    rates set are those the recording ended with (173.6 Gb/s), where the packet run is still at
    184.1 Gb/s 60 us into its transient: within 9% 3 us after the join. Without HPCC's
    early freeze, which records the transient before the join (the next test). The group the
    join forms is looked up too (its old flows just woke, ``replay.known``): 1 more miss."""
    acc = AccelConfig(early=False)
    fast = run(acc)
    wh = fast.accel
    assert (wh.memo_hits, wh.memo_misses, wh.wakes_interrupted) == (1, 2, 1)
    t = 2000 * US + JOIN_PS + 3 * US
    ref_nodes, fast_nodes = (run(a, t).net.nodes for a in (None, acc))
    for src in range(RING, 2 * RING):
        fid = 2 * (src - RING) + RING  # the 8 MB step's flow from this GPU
        p, w = ref_nodes[src].sqp[fid], fast_nodes[src].sqp[fid]
        assert abs(w.snd_una - p.snd_una) <= 8_000, src
        assert abs(w.rate_bps - p.rate_bps) <= 0.09 * p.rate_bps, src
    ref = run(None)
    for fid in ref.finish_ps:
        fct_ref = ref.finish_ps[fid] - ref.start_ps[fid]
        fct_fast = fast.finish_ps[fid] - fast.start_ps[fid]
        assert abs(fct_fast - fct_ref) / fct_ref < 0.005, fid


def test_early_freeze_replays_the_whole_transient_before_the_join():
    """With HPCC's early freeze the recording ends before the join (the replay is whole, the
    join wakes the skip after it): every FCT within 0.5% of the packet run (0.34%), in 44% of
    the events of the run without it."""
    fast, late, ref = run(AccelConfig()), run(AccelConfig(early=False)), run(None)
    assert (fast.accel.memo_hits, fast.accel.memo_misses, fast.accel.wakes_interrupted) == (1, 3, 1)
    assert fast.events < 0.6 * late.events
    for fid in ref.finish_ps:
        fct_ref = ref.finish_ps[fid] - ref.start_ps[fid]
        assert abs(fast.finish_ps[fid] - fast.start_ps[fid] - fct_ref) / fct_ref < 0.005, fid


def test_known_flows_are_new_or_woke_just_before_the_group_formed():
    """An HPCC group is looked up when each flow is new in it (started within FRESH_WINDOWS (4)
    windows of its forming) or its group woke from a freeze within KNOWN_WINDOWS (16) windows of
    it; a flow never frozen, or woken earlier, keeps the whole group out of the memo cache."""
    w = US
    assert (FRESH_WINDOWS, KNOWN_WINDOWS) == (4, 16)
    g = SimpleNamespace(formed_ps=100 * w)

    def fs(start_ps, woke_ps):
        return SimpleNamespace(start_ps=start_ps, woke_ps=woke_ps)

    assert known(fs(96 * w, -1), g, w)  # new
    assert not known(fs(96 * w - 1, -1), g, w)  # under way, never frozen
    assert known(fs(0, 84 * w), g, w)  # woke 16 windows before the group formed
    assert not known(fs(0, 84 * w - 1), g, w)
