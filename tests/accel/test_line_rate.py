"""DCQCN groups whose flows all send at line rate, frozen at once with their NICs' round-robin shares
(``steady.line_rate_shares``), against packet mode and the measured freezes."""

from helpers import US, both, config, fct, flows_of, needs_mpi, run_on_1_and_2_ranks, star_topo

from pwormhole.accel.wormhole import AccelConfig
from pwormhole.run import Run
from pwormhole.scenario import Scenario

# Four QPs of host 0 to host 1 (one 100 Gb/s NIC, nothing else on the switch port to host 1), started
# and ending apart as overlapping rings' steps do: every start and end changes the others' shares
# (100 Gb/s less the ACKs, split by the NIC's round robin), and no flow is ever cut by a CNP.
SHARED_NIC = [(0, 1, 3_000_000, 0), (0, 1, 2_000_000, 30 * US), (0, 1, 4_000_000, 70 * US),
              (0, 1, 1_500_000, 160 * US)]


def test_flows_sharing_a_nic_freeze_at_their_round_robin_shares():
    """Each change of the NIC's QPs freezes the group again at once: 2.7x fewer events than measuring
    the goodputs anew after each (which waits for 100 packets of each flow's span), every FCT within
    0.03% of packet mode's (0.0203% at most; with measured goodputs 0.0245%), every byte delivered."""
    ref, fast = both(star_topo(4), SHARED_NIC)
    measured = Run(Scenario("t", star_topo(4), flows_of(SHARED_NIC), config("dcqcn")),
                   accel=AccelConfig(line_rate=False)).run()
    assert fast.accel.stats()["line_rate_freezes"] >= 4 and measured.accel.stats()["line_rate_freezes"] == 0
    assert fast.events * 2.6 < measured.events < ref.events / 4
    for f in range(len(SHARED_NIC)):
        assert abs(fct(fast, f) - fct(ref, f)) / fct(ref, f) < 0.0003, f
    c = fast.counters()
    assert c["bytes_sent"] == c["bytes_delivered"] == sum(s[2] for s in SHARED_NIC)


def test_a_switch_bottleneck_is_measured_not_modelled():
    """Two NICs into one host: at line rate the switch port to host 1 would carry twice its rate (it
    queues, marks and DCQCN cuts both), so no freeze takes the round-robin shares."""
    specs = [(0, 1, 3_000_000, 0), (2, 1, 3_000_000, 0)]
    ref, fast = both(star_topo(4), specs)
    assert fast.accel.stats()["line_rate_freezes"] == 0
    assert max(abs(fct(fast, f) - fct(ref, f)) / fct(ref, f) for f in range(2)) < 0.01


def test_line_rate_freezes_identical_on_any_lp_count():
    """The decisions read only what every LP's report gives (samples, the flow table): the same
    finishes, events and freezes on 1, 2 and 3 LPs."""
    runs = [Run(Scenario("t", star_topo(4), flows_of(SHARED_NIC), config("dcqcn")), n_lps=n,
                accel=AccelConfig()).run() for n in (1, 2, 3)]
    assert runs[0].accel.stats()["line_rate_freezes"] >= 4
    for r in runs[1:]:
        assert (r.finish_ps, r.events, r.accel.stats()["line_rate_freezes"]) == \
            (runs[0].finish_ps, runs[0].events, runs[0].accel.stats()["line_rate_freezes"])


@needs_mpi
def test_line_rate_freezes_identical_on_2_ranks(tmp_path):
    """Under MPI every rank takes the line-rate decisions from the samples the ranks exchange: the
    same freezes and the same fct.txt at 1 and 2 ranks (host 0's four QPs cross both leaves)."""
    specs = [(0, 4, size, start) for _, _, size, start in SHARED_NIC]
    s1, s2 = run_on_1_and_2_ranks(tmp_path, specs, "leaf-spine:hosts=8,leaves=2,spines=1")
    assert s2["ranks"] == 2 and s1["line_rate_freezes"] >= 4 and s1["line_rate_freezes"] == s2["line_rate_freezes"]
    assert (tmp_path / "one" / "fct.txt").read_bytes() == (tmp_path / "two" / "fct.txt").read_bytes()
