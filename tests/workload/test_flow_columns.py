"""A scenario's flows as columns and host pairs (workload.flows.FlowColumns, HostPairs)."""

import pytest

from pwormhole.config import ModelConfig
from pwormhole.scenario import Scenario
from pwormhole.topology.builders import star
from pwormhole.workload.flows import Flow


def test_columns_and_pairs_follow_the_flow_list():
    flows = [Flow(0, 2, 1, 3, 100, 10, 0), Flow(1, 0, 1, 3, 100, 20, 0), Flow(2, 2, 1, 3, 100, 30, 0)]
    scn = Scenario("t", star(3), flows, ModelConfig())
    cols = scn.flow_columns()
    assert (cols.src.tolist(), cols.dst.tolist(), cols.size_bytes.tolist()) == ([2, 0, 2], [1, 1, 1], [10, 20, 30])
    pairs = scn.host_pairs()
    assert pairs.first.tolist() == [1, 0] and pairs.of_flow.tolist() == [1, 0, 1]  # (0, 1) before (2, 1)
    assert scn.flow_columns() is cols and scn.host_pairs() is pairs  # made once
    # another list of as many flows (compare's jittered starts replace it): made again
    scn.flows = [f._replace(size_bytes=f.size_bytes + 1) for f in flows[::-1]]
    assert scn.flow_columns().size_bytes.tolist() == [31, 21, 11]
    assert scn.host_pairs().of_flow.tolist() == [1, 0, 1]


def test_host_pairs_refuse_a_host_outside_the_topology():
    scn = Scenario("t", star(3), [Flow(0, 0, 7, 3, 100, 10, 0)], ModelConfig())
    with pytest.raises(ValueError, match=r"outside 0\.\.3"):
        scn.host_pairs()
