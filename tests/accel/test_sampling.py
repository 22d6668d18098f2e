"""Sampling back-off (``accel.sampling.back_off``): a group that stays unsteady is sampled and
checked less and less often."""

from types import SimpleNamespace

from helpers import US, both, config, flows_of, star_topo

from pwormhole.accel.config import (
    BACKOFF_AFTER_SAMPLES,
    BACKOFF_EVERY,
    BACKOFF_MAX,
    BACKOFF_MAX_UNSETTLED,
    BACKOFF_MIN_FLOWS,
    BACKOFF_UNSETTLED_CHECKS,
)
from pwormhole.accel.groups import FlowTable
from pwormhole.accel.sampling import back_off
from pwormhole.accel.wormhole import AccelConfig
from pwormhole.run import Run
from pwormhole.scenario import Scenario


def test_a_long_unsteady_group_of_many_flows_is_sampled_less_often():
    """Sixteen 500 KB flows into one host without a window (``HAS_WIN 0``), 3 us apart: ECN
    cuts them all along (5557 CNPs) and the group is never steady. From 64 windows after it
    formed (46 us) it is sampled and checked only after 8, 16, 32, then every 64 windows (samples
    at 110, 118, 134, 166, 230, 294 and 358 us; the same on 3 LPs), and the answer is the packet
    run's. Eight such flows keep every check (a few flows cost little to sample, and their short
    steady spells are caught)."""
    assert (BACKOFF_AFTER_SAMPLES, BACKOFF_MIN_FLOWS, BACKOFF_EVERY, BACKOFF_MAX) == (64, 16, 8, 64)
    cfg = config("dcqcn", has_win=False)
    for n, size, expect in ((16, 500_000, (110, 118, 134, 166, 230, 294, 358)), (8, 1_000_000, range(86, 401))):
        specs = [(i, n, size, i * 3 * US) for i in range(n)]
        mid = Run(Scenario("t", star_topo(n + 1), flows_of(specs), cfg), accel=AccelConfig()).run(
            until_ps=400 * US)
        if n == 16:  # the same samples on 3 LPs (decisions use replicated data only)
            mid3 = Run(Scenario("t", star_topo(n + 1), flows_of(specs), cfg), n_lps=3,
                             accel=AccelConfig()).run(until_ps=400 * US)
            assert {f: list(fs.samples) for f, fs in mid3.accel.flows.items()} == {
                f: list(fs.samples) for f, fs in mid.accel.flows.items()}
        (g,) = mid.accel.groups.values()
        assert g.formed_ps == (n - 2) * 3 * US + 4 * US and g.frozen is None
        times = [s.t_ps for fid in g.flows for s in mid.accel.flows[fid].samples if s.t_ps >= g.formed_ps + 64 * US]
        assert len(times) == n * len(expect) and set(times) == {t * US for t in expect}, n
    ref, fast = both(star_topo(17), [(i, 16, 500_000, i * 3 * US) for i in range(16)], cfg=cfg)
    assert fast.finish_ps == ref.finish_ps and ref.counters()["cnps"] == 5557


def test_a_group_that_never_settles_backs_off_further_and_skips_its_dense_phases():
    """Sixteen flows on one port (port 0), sampled every 1000 ps, each period's check failing:
    after its 64-period dense phase the group is checked at 64, 72, 88, 120, then every 64
    periods; after 16 failed checks (888) the period doubles on (952, 1080, 1336, 1848) up to
    1024 (2872, 3896). When flow 16 leaves, what is left (one group) is checked once at once and
    stays at 1024 (22 failed checks); had the departure split it in two groups of 16, each would
    start over: an 8-period dense phase, then every 64 periods."""
    assert (BACKOFF_UNSETTLED_CHECKS, BACKOFF_MAX_UNSETTLED) == (16, 1024)

    def checks(g, t0, t1):
        out = []
        for t in range(t0, t1):
            if g.next_check_ps <= t * 1000:
                before = g.next_check_ps
                back_off(g, t * 1000, 1000, 4)
                if g.next_check_ps != before:
                    out.append(t)
        return out

    def table(ports_of):
        tab = FlowTable()
        tab.flows.update({f: SimpleNamespace(ports=ps, group_cell=[-1], start_ps=0) for f, ps in ports_of.items()})
        (g,) = [tab.new_group(set(ports_of), set().union(*ports_of.values()), 0)]
        return tab, g

    tab, g = table({f: {0} for f in range(17)})
    assert checks(g, 0, 4000) == [64, 72, 88, 120] + list(range(184, 889, 64)) + [952, 1080, 1336, 1848, 2872, 3896]
    assert (g.unsettled, g.backoff_periods) == (22, 1024)
    tab.remove(16, 4000 * 1000)
    (part,) = tab.groups.values()
    assert (part.unsettled, part.backoff_periods) == (22, 1024)
    assert checks(part, 4000, 6100) == [4000, 5024, 6048]
    tab, g = table({**{f: {0} for f in range(16)}, **{f: {1} for f in range(16, 32)}, 32: {0, 1}})
    checks(g, 0, 4000)
    tab.remove(32, 4000 * 1000)
    for part in tab.groups.values():
        assert part.unsettled == 0 and part.backoff_periods == 1024
        assert checks(part, 4000, 4200) == [4008, 4072, 4136]
