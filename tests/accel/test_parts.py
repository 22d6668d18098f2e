"""Steady parts of a conflict group (``accel/parts.py``): a flow fast-forwarded while the flows
beside it run as packets, against packet mode and on any LP and rank count."""

from helpers import US, both, config, fct, flows_of, needs_mpi, run_on_1_and_2_ranks

from pwormhole.accel.wormhole import AccelConfig
from pwormhole.run import Run
from pwormhole.scenario import Scenario
from pwormhole.topology.builders import leaf_spine

# Host 0 (leaf 8) sends 20 MB to host 4 (leaf 9) at line rate; from 20 us, 150 flows of 50 KB from
# hosts 1 and 2 in turns to host 5, one every 6 us, cross the same 400 Gb/s leaf-spine links (at
# most 200 Gb/s there: not loaded) and join the 20 MB flow's conflict group, which changes at every
# start and finish and is never steady as a whole.
SHORT, EVERY_PS, FIRST_PS = 150, 6 * US, 20 * US
SPECS = [(0, 4, 20_000_000, 0)] + [(1 + k % 2, 5, 50_000, FIRST_PS + k * EVERY_PS) for k in range(SHORT)]


def cfg():
    c = config("dcqcn")
    c.fill_k_maps({100 * 10**9, 400 * 10**9})
    return c


def test_a_steady_flow_beside_changing_ones_is_fast_forwarded():
    """The 20 MB flow is a part of its own (its NIC and its receiver's port are the loaded ones):
    fast-forwarded while the short flows come and go, it runs 3.5x fewer events than packet mode
    (1.5x with groups frozen only whole, in the gaps after the short flows), within 0.001% of its
    packet FCT (its rate does not change), the short flows within 0.2%, and every byte arrives."""
    ref, fast = both(leaf_spine(8, 2, 1), SPECS, cfg=cfg())
    whole = Run(Scenario("t", leaf_spine(8, 2, 1), flows_of(SPECS), cfg()), accel=AccelConfig(parts=False)).run()
    assert fast.accel.parts.skips >= 1 and whole.accel.parts.skips == 0
    assert fast.events < ref.events / 3 and whole.events > ref.events / 2
    assert abs(fct(fast, 0) - fct(ref, 0)) / fct(ref, 0) < 0.0001
    assert max(abs(fct(fast, f) - fct(ref, f)) / fct(ref, f) for f in range(1, len(SPECS))) < 0.005
    c = fast.counters()
    assert c["bytes_sent"] == c["bytes_delivered"] == 20_000_000 + SHORT * 50_000


def test_parts_identical_on_any_lp_count():
    runs = [Run(Scenario("t", leaf_spine(8, 2, 1), flows_of(SPECS), cfg()), n_lps=n, accel=AccelConfig()).run()
            for n in (1, 2, 3)]
    assert runs[0].accel.parts.skips >= 1
    for r in runs[1:]:
        assert (r.finish_ps, r.events, r.accel.parts.skips) == (runs[0].finish_ps, runs[0].events,
                                                                 runs[0].accel.parts.skips)


@needs_mpi
def test_parts_identical_on_2_ranks(tmp_path):
    """Under MPI each rank withdraws, advances and readmits its own QPs from replicated decisions."""
    s1, s2 = run_on_1_and_2_ranks(tmp_path, SPECS, "leaf-spine:hosts=8,leaves=2,spines=1")
    assert s2["ranks"] == 2 and s1["part_skips"] >= 1 and s1["part_skips"] == s2["part_skips"]
    assert (tmp_path / "one" / "fct.txt").read_bytes() == (tmp_path / "two" / "fct.txt").read_bytes()


def test_a_part_woken_early_waits_for_its_packets_to_drain():
    """The flows above from one leaf to the other of 12 hosts on a 1.5x oversubscribed fabric,
    and from 49.5 us, every 24 us, hosts 3-5 sending 30 KB each across its 400 Gb/s leaf-spine
    links, loading them: the 20 MB flow's part wakes at the next sample after its freeze. Woken
    at once, 2 us after its freeze (its path RTT is 8.2 us), a receiver still missing 30 KB was
    moved past them: 6 NACKs, 618 KB resent and the flow 3.6% late. A wake now waits until its
    packets in flight have drained."""
    specs = [(0, 6, 20_000_000, 0)] + [(1 + k % 2, 7, 50_000, FIRST_PS + k * EVERY_PS) for k in range(SHORT)]
    specs += [(h, 6 + h, 30_000, 49_500_000 + k * 24 * US) for k in range(12) for h in (3, 4, 5)]
    topo = leaf_spine(12, 2, 1, oversubscription=1.5)
    ref = Run(Scenario("t", topo, flows_of(specs), cfg())).run()
    fast = Run(Scenario("t", topo, flows_of(specs), cfg()), accel=AccelConfig()).run()
    c = fast.counters()
    assert fast.accel.parts.skips >= 2 and (c["nacks"], c["retransmitted_bytes"]) == (0, 0)
    assert abs(fct(fast, 0) - fct(ref, 0)) / fct(ref, 0) < 0.001
