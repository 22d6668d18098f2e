"""The window loop and its grid: one loop over two transports, units, window and cut links."""

import pytest
from helpers import G100, US, config, flows_of, star_topo

from pwormhole.errors import InputError
from pwormhole.partition.grid import WindowGrid, check_cut_links, round_robin_owner, units_of, window_ps
from pwormhole.run import Run
from pwormhole.scenario import Scenario
from pwormhole.sync import mpi as mpi_transport
from pwormhole.topology.model import Link, Topology


def two_servers():
    """Hosts 0,1 on NVSwitch 4 and hosts 2,3 on NVSwitch 5 (25 ns links); the NVSwitches on switch 6 (1 us)."""
    nv = 25_000
    links = [Link(0, 4, G100, nv), Link(1, 4, G100, nv), Link(2, 5, G100, nv), Link(3, 5, G100, nv),
             Link(4, 6, G100, US), Link(5, 6, G100, US), Link(0, 6, G100, US), Link(2, 6, G100, US)]
    return Topology(7, frozenset({4, 5, 6}), links)


def test_grid_units_window_and_cut_links():
    topo = two_servers()
    # median delay 1 us: the 25 ns links bind each server into one unit; L is the smallest other delay
    assert units_of(topo) == [0, 0, 1, 1, 0, 1, 2]
    assert window_ps(topo) == US
    grid = WindowGrid(topo)
    assert (grid.window_ps, grid.unit) == (US, [0, 0, 1, 1, 0, 1, 2])
    assert round_robin_owner(grid, 2) == [0, 0, 1, 1, 0, 1, 0]
    check_cut_links(topo, round_robin_owner(grid, 2), US)
    with pytest.raises(InputError, match=r"cuts link 1-4 \(25000 ps\), shorter than the window \(1000000 ps\)"):
        check_cut_links(topo, [0, 1, 1, 1, 0, 1, 0], US)


def test_grid_without_window_raises_when_read():
    topo = Topology(2, frozenset(), [Link(0, 1, G100, 0)])
    grid = WindowGrid(topo)  # the units are there; the window error comes when it is read
    assert grid.unit == [0, 1]
    with pytest.raises(InputError, match="zero propagation delay"):
        _ = grid.window_ps


class OneRankComm:
    """An MPI communicator of one rank that counts its collectives."""
    size = 1
    rank = 0

    def __init__(self):
        self.alltoalls = 0
        self.allgathers = 0
        self.allreduces = 0
        self.barriers = 0

    def Barrier(self):  # noqa: N802 (mpi4py's name)
        self.barriers += 1

    def alltoall(self, payload):
        self.alltoalls += 1
        return list(payload)

    def allgather(self, value):
        self.allgathers += 1
        return [value]

    def allreduce(self, value, op=None):
        self.allreduces += 1
        return value


@pytest.mark.parametrize("flush_windows,flush_s,hand_ons", [(1, 1e9, 4), (10**6, 1e9, 1), (10**6, 0.0, 4)])
def test_mpi_transport_one_collective_per_window_same_answer_as_local(monkeypatch, flush_windows, flush_s, hand_ons):
    """Completions reach the outputs in batches (every ``flush_windows`` windows or ``flush_s`` seconds, the
    rest at the end): the same completions, in the same order, as in-process."""
    pytest.importorskip("mpi4py")
    monkeypatch.setattr(mpi_transport, "FLUSH_WINDOWS", flush_windows)
    monkeypatch.setattr(mpi_transport, "FLUSH_S", flush_s)
    # 4 flows to host 0, 20 us apart: each finishes in a window of its own (24 windows in all)
    scn = lambda: Scenario("staggered", star_topo(5),  # noqa: E731
                           flows_of([(s, 0, 20_000, (s - 1) * 20 * US) for s in range(1, 5)]), config("dcqcn"))
    local_done: list = []
    local = Run(scn()).run(on_flows=local_done.extend)
    comm = OneRankComm()
    batches: list = []
    mpi = Run(scn(), comm=comm).run(on_flows=lambda done: batches.append([tuple(r) for r in done]))
    assert mpi.complete and mpi.finish_ps == local.finish_ps and mpi.windows == local.windows
    assert [r for b in batches for r in b] == local_done and len(local_done) == 4
    assert len(batches) == hand_ons, [len(b) for b in batches]
    assert comm.alltoalls == mpi.windows  # one exchange per window
    assert comm.allgathers == 1  # the completions held on the rank, at the end
    assert comm.allreduces == 1  # the first minimum only: no boundary put events back
    assert comm.barriers == 1  # every rank built, before the clock starts
