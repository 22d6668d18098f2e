"""Standalone FCTs (pwormhole/standalone.py): a host pair's route read once where every ECMP choice is alike."""

from helpers import config, flows_of

from pwormhole import standalone
from pwormhole.net.build import Network
from pwormhole.standalone import StandaloneFct, pair_links
from pwormhole.topology.model import Link, Topology

G100, G40 = 100 * 10**9, 40 * 10**9


def _two_paths(rate_b: int) -> Network:
    """Host 0 on switch 2, host 1 on switch 5; switch 2 reaches 5 by switch 3 (100 Gb/s) or by
    switch 4 (``rate_b``); 1 us links."""
    links = [Link(0, 2, G100, 1_000_000), Link(1, 5, G100, 1_000_000), Link(2, 3, G100, 1_000_000),
             Link(3, 5, G100, 1_000_000), Link(2, 4, rate_b, 1_000_000), Link(4, 5, rate_b, 1_000_000)]
    cfg = config()
    cfg.fill_k_maps({G100, rate_b})
    flows = flows_of([(0, 1, 2_000 * (i + 1), 0) for i in range(12)] + [(1, 0, 50_000, 0)])
    return Network(Topology(6, frozenset({2, 3, 4, 5}), links), flows, cfg)


def test_pair_links_where_the_choices_are_alike():
    net = _two_paths(G100)
    hop = (G100, 1_000_000, False)
    assert pair_links(net, 0, 1) == pair_links(net, 1, 0) == (hop, hop, hop, hop)
    assert pair_links(_two_paths(G40), 0, 1) is None  # by switch 3 or by switch 4: flow by flow


def test_all_ns_as_flow_by_flow(monkeypatch):
    for rate_b in (G100, G40):
        net = _two_paths(rate_b)
        got = StandaloneFct(net).all_ns(net.flows)
        with monkeypatch.context() as m:
            m.setattr(standalone, "pair_links", lambda net, src, dst: None)
            assert StandaloneFct(net).all_ns(net.flows) == got
        assert got[0] < got[11] and len(set(got)) >= 12  # 2..24 KB alone: each size its own FCT
