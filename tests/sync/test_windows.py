"""The window loop and its grid: one loop over two transports, units, window and cut links."""

import numpy as np
import pytest
from helpers import G100, US, config, flows_of, star_topo

from pwormhole.accel.wormhole import AccelConfig
from pwormhole.config import LinkDown
from pwormhole.engine.events import INF_PS, EventQueue, Lead, run_quiet
from pwormhole.errors import InputError
from pwormhole.net.dagrun import DagRuntime
from pwormhole.partition.grid import WindowGrid, check_cut_links, round_robin_owner, units_of, window_ps
from pwormhole.run import Run
from pwormhole.scenario import Scenario, from_dag, topology_from_arg, training_scenario
from pwormhole.sync import mpi as mpi_transport
from pwormhole.sync.local import LocalTransport
from pwormhole.topology.model import Link, Topology
from pwormhole.workload.dag import Dag
from pwormhole.workload.models import build_model


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
    with pytest.raises(InputError, match="^link 0-1 has zero propagation delay: the window L"):
        _ = grid.window_ps


class OneRankComm:
    """An MPI communicator of one rank that counts its collectives (mpi4py's buffer methods: a
    receive buffer given as an array, or as ``[array, counts]``)."""
    size = 1
    rank = 0

    def __init__(self):
        self.calls: dict[str, int] = {}
        self.allreduces = 0
        self.barriers = 0

    def _count(self, name: str) -> None:
        self.calls[name] = self.calls.get(name, 0) + 1

    def Barrier(self):  # noqa: N802 (mpi4py's name)
        self.barriers += 1

    def _copy(self, name: str, send, recv) -> None:
        self._count(name)
        send = send[0] if isinstance(send, list) else send
        recv = recv[0] if isinstance(recv, list) else recv
        assert send.dtype == recv.dtype == np.int64 and send.size == recv.size
        recv.reshape(-1)[:] = send.reshape(-1)

    def Allgather(self, send, recv):  # noqa: N802
        self._copy("Allgather", send, recv)

    def Allgatherv(self, send, recv):  # noqa: N802
        self._copy("Allgatherv", send, recv)

    def Alltoall(self, send, recv):  # noqa: N802
        self._copy("Alltoall", send, recv)

    def Alltoallv(self, send, recv):  # noqa: N802
        self._copy("Alltoallv", send, recv)

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
    # one exchange per window (its sizes, then the int64 buffers); the first minimum and horizon; the
    # completions held on the rank at the end (sizes, then buffers); no pickled collective
    assert comm.calls == {"Alltoall": mpi.windows, "Alltoallv": mpi.windows, "Allgather": 2, "Allgatherv": 1}
    assert comm.allreduces == 0  # no boundary put events back or took some out
    assert comm.barriers == 1  # every rank built, before the clock starts


def test_dag_leads_hand_computed():
    """Compute 5 us on host 0 -> a flow 0 -> 1 -> compute 3 us on host 1 -> a flow 1 -> 2 -> a mark on 2.
    With the first flow carried by a model, the chain reaches a flow by packets 3 us after that
    flow starts, 8 us after the first compute starts; by packets, at once and 5 us. A dependency
    on another host is a notification: 0 from the op's end; so is the end of an op nothing
    depends on."""
    dag = Dag()
    c0 = dag.compute(0, 5 * US)
    f1 = dag.flow(0, 1, 1000, [c0])
    c2 = dag.compute(1, 3 * US, [f1])
    f3 = dag.flow(1, 2, 1000, [c2])
    m4 = dag.mark(2, [f3])
    rt = DagRuntime(dag, lambda a, b: 1000)
    start, end, flow_end = rt.leads({0})
    assert start == [8 * US, 3 * US, 3 * US, 0, 0]
    assert end == [3 * US, 3 * US, 0, 0, 0]  # the mark: nothing depends on it (the run's end)
    assert flow_end == [end[f1], end[f3]] == [3 * US, 0] and m4 == 4
    start, end, _ = rt.leads(set())
    assert start[:4] == [5 * US, 0, 3 * US, 0] and end[c0] == 0
    dag.compute(3, 2 * US, [c0])  # host 3 waits for c0: notified when c0 ends
    start, end, _ = DagRuntime(dag, lambda a, b: 1000).leads({0})
    assert end[c0] == 0 and start[c0] == 5 * US and start[f1] == 3 * US and start[5] == 2 * US


def _relay(rounds=8):
    """Hosts 0-3 of a star in turn: compute, then a 200 KB flow to the next host; a third host
    waits for each flow (a notification from its destination), computes and sends 20 KB on."""
    dag = Dag()
    prev = None
    for r in range(rounds):
        h, nxt, third = r % 4, (r + 1) % 4, (r + 2) % 4
        c = dag.compute(h, (20 + 3 * r) * US, [prev] if prev is not None else [])
        prev = dag.flow(h, nxt, 200_000, [c])
        dag.flow(third, h, 20_000, [dag.compute(third, 2 * US, [prev])])
    return from_dag("relay", star_topo(4), dag, config("dcqcn"))


def _notified():
    """Host 2 waits for host 0's compute op (a notification), computes, then sends by packets;
    meanwhile host 1 computes for 40 us, then sends (the horizon while the notification flies)."""
    dag = Dag()
    c2 = dag.compute(2, 3 * US, [dag.compute(0, 5 * US)])
    dag.flow(2, 3, 10_000, [c2])
    dag.flow(1, 0, 10_000, [dag.compute(1, 40 * US)])
    return from_dag("notified", star_topo(4), dag, config("dcqcn"))


def _training():
    spec = build_model("gpt-350m", 16, tp=8, pp=2, layers=2)
    return training_scenario(spec, topology_from_arg("rail-optimized:gpus=16"))


@pytest.mark.parametrize("make,accel,fewer", [(_relay, None, 1), (_notified, None, 0), (_training, AccelConfig(), 2)])
def test_windows_to_the_horizon_same_answer_fewer_windows(make, accel, fewer):
    """Windows that run to the horizon (compute ops, and in Wormhole mode NVLink flows by rates,
    in one window) give the answer of one grid cell a window, on 1 and 3 in-process LPs (flows and
    notifications cross LPs), with fewer windows (in packet mode only where a window's last events
    are a compute op's: an empty window was skipped already)."""
    cell = Run(make(), accel=accel, n_lps=3, leads=False).run()
    assert cell.complete
    for n_lps in (1, 3):
        sim = Run(make(), accel=accel, n_lps=n_lps).run()
        assert sim.complete and sim.finish_ps == cell.finish_ps and sim.op_times == cell.op_times
        assert sim.events == cell.events
        assert sim.windows * fewer < cell.windows or fewer == 0 and sim.windows <= cell.windows, (sim.windows,
                                                                                                  cell.windows)


def test_a_lead_too_long_is_caught(monkeypatch):
    """Leads 30 us longer than the DAG allows: host 2's packets reach host 3's LP after its window
    ended, and the run raises rather than answer."""
    leads = DagRuntime.leads
    monkeypatch.setattr(DagRuntime, "leads", lambda rt, fids: tuple([x + 30 * US for x in lst]
                                                                     for lst in leads(rt, fids)))
    with pytest.raises(RuntimeError, match="reached an LP after its window ended"):
        Run(_notified(), n_lps=3).run()


def test_a_horizon_of_never_runs_a_grid_cell_at_a_time(monkeypatch):
    """Every lead INF (no pending event ever leads to one others see): windows are grid cells
    again and the run ends at its last event's cell, as with leads off."""
    leads = DagRuntime.leads
    monkeypatch.setattr(DagRuntime, "leads", lambda rt, fids: tuple([INF_PS] * len(lst) for lst in leads(rt, fids)))
    dag = Dag()
    dag.compute(1, 7 * US, [dag.compute(0, 3 * US)])
    scn = lambda: from_dag("never", star_topo(2), dag, config("dcqcn"))  # noqa: E731
    cell = Run(scn(), n_lps=2, leads=False).run()
    sim = Run(scn(), n_lps=2).run()
    assert sim.complete and sim.t_end_ps == cell.t_end_ps == 13 * US and sim.windows == cell.windows


def test_run_ends_at_its_last_event_when_nothing_leads_on():
    """The last ops lead to nothing (no flow, no notification after them): the run still ends, and
    a stuck run stops, at the grid cell of its last event, not at the stop time."""
    dag = Dag()
    dag.compute(1, 7 * US, [dag.compute(0, 3 * US)])  # host 0, then host 1 (notified), then nothing
    sim = Run(from_dag("leaves", star_topo(2), dag, config("dcqcn")), n_lps=2).run()
    assert sim.complete and sim.op_times[1][1] == 10 * US + 2 * US and sim.t_end_ps == 13 * US
    topo = Topology(5, frozenset({2, 3}), [Link(0, 2, G100, US), Link(2, 3, G100, US), Link(3, 1, G100, US),
                                           Link(4, 2, G100, US)])
    cfg = config("dcqcn")
    cfg.link_down = (LinkDown(20 * US, 0, 2, "LINK_DOWN"),)
    for join in (False, True):
        dag = Dag()
        f = dag.flow(0, 1, 1_000_000, [])  # loses its path at 20 us
        c = dag.compute(4, 100 * US)  # host 4 computes; nothing follows
        if join:  # or a join follows that waits for the lost flow too: its lead sizes the last window
            dag.compute(4, 5 * US, [c, f])
        for n_lps, leads in ((1, True), (1, False), (2, True)):
            sim = Run(from_dag("stuck", topo, dag, cfg), n_lps=n_lps, leads=leads).run()
            assert not sim.complete and sim.stuck is not None and sim.stuck["at_ps"] == sim.t_end_ps == 101 * US


@pytest.mark.parametrize("down_ns", range(2000, 7001, 250))
def test_a_stuck_run_ends_where_one_cell_a_window_ends(down_ns):
    """A flow's one packet is on a 3 us wire when its link fails (or not yet sent, or delivered);
    a join waits for it: wherever the failure falls, the run stops where one grid cell a window
    stops it (at the failure while the packet is pending, else after the last event)."""
    topo = Topology(5, frozenset({2, 3}), [Link(0, 2, G100, US), Link(2, 3, G100, US), Link(3, 1, G100, US),
                                           Link(4, 2, G100, 3 * US)])
    cfg = config("dcqcn")
    cfg.link_down = (LinkDown(down_ns * 1000, 4, 2, "LINK_DOWN"),)
    dag = Dag()
    g = dag.flow(4, 1, 1000, [dag.compute(4, 2900 * 1000)])
    dag.compute(0, 5 * US, [dag.compute(0, 3500 * 1000), g])
    runs = [Run(from_dag("cut", topo, dag, cfg), n_lps=n, leads=leads).run() for n, leads in ((1, False), (1, True),
                                                                                              (3, True))]
    assert len({(r.complete, r.t_end_ps, r.stuck and r.stuck["at_ps"]) for r in runs}) == 1
    if down_ns == 4500:  # the packet is on the wire: the run stops at the failure, not after the last event (4 us)
        assert runs[1].stuck["at_ps"] == 4500 * 1000


def test_run_quiet_hand_computed():
    """Windows of 1000 ps after one ending at 1000: each to the grid line after the horizon (an event
    of kind 2 leads 5000 ps on), until a record is logged or a window would end at or past the limit."""
    log: list = []
    handlers = (lambda target, arg, t: None, lambda target, arg, t: log.append(t), lambda target, arg, t: None)

    class Leads(Lead):
        def lead_ps(self, kind, target, arg):
            return 5000 if kind == 2 else 0

    def quiet(q, end_ps, limit_ps):
        progress = [end_ps, 0, 0]
        run_quiet(q, end_ps, handlers, Leads(), 1000, limit_ps, (log,), progress)
        return tuple(progress)  # (end of the last window run, windows run, events run)

    q = EventQueue([(1500, 1, 0, None, None), (2500, 2, 1, None, None), (7200, 3, 0, None, None)])
    assert quiet(q, 1000, INF_PS) == (3000, 2, 2) and log == [2500]
    log.clear()
    assert quiet(q, 3000, 8000) == (3000, 0, 0)  # 7200's window ends at 8000
    assert quiet(q, 3000, 8001) == (8000, 1, 1) and len(q) == 0
    q.push(10_100, 4, 2, None, None)  # leads to 15,100, so the horizon is 14,500's: one window to 15,000
    q.push(14_500, 5, 0, None, None)
    assert quiet(q, 8000, INF_PS) == (15_000, 1, 2) and len(q) == 0
    assert quiet(q, 15_000, INF_PS) == (15_000, 0, 0)


@pytest.mark.parametrize("accel", [None, AccelConfig()])
@pytest.mark.parametrize("down", [False, True])
def test_quiet_windows_give_the_answer_and_windows_of_a_boundary_each(monkeypatch, accel, down):
    """One LP runs the windows where nothing reaches the boundary without one (20-to-1 incast of 1 MB
    flows, started 0.1 us apart, DCQCN: in Wormhole mode its group backs off its sampling), with or
    without a link failing off the grid: the same completions, events, windows and end as with a
    boundary after every window, with far fewer boundaries."""
    cfg = config("dcqcn")
    if down:
        # host 20's link at 150.3 us (the traffic starts at 0.1 us): its flow never ends
        cfg.link_down = (LinkDown(150 * US + 200_000, 20, 21, "LINK_DOWN"),)
    flows = flows_of([(s, 0, 1_000_000, s * 100_000) for s in range(1, 21)])

    def run():
        calls = []
        exchange = LocalTransport.exchange
        monkeypatch.setattr(LocalTransport, "exchange", lambda tr, t, rep: calls.append(t) or exchange(tr, t, rep))
        sim = Run(Scenario("t", star_topo(21), flows, cfg), accel=accel).run(until_ps=3000 * US)
        monkeypatch.setattr(LocalTransport, "exchange", exchange)
        return sim, len(calls)

    quiet, boundaries = run()
    monkeypatch.setattr(LocalTransport, "run_quiet", lambda tr, t, w, lim: (tr.run_until(t), (t, 1))[1])
    each, every = run()
    assert quiet.complete is each.complete is (not down)
    assert quiet.finish_ps == each.finish_ps and len(quiet.finish_ps) == 20 - down
    assert (quiet.events, quiet.windows, quiet.t_end_ps) == (each.events, each.windows, each.t_end_ps)
    assert (quiet.stuck or {}).get("at_ps") == (each.stuck or {}).get("at_ps")
    assert every == each.windows and boundaries * (3 if accel else 20) < every * 2, (boundaries, every)


def test_a_run_interrupted_in_a_quiet_window_stops_where_the_last_whole_window_ended(monkeypatch):
    """A handler raises at the 100,000th event (as a signal would) inside a stretch of quiet windows:
    the run reports the end and events of the last window run whole, as with a boundary each."""
    flows = flows_of([(s, 0, 1_000_000, s * 100_000) for s in range(1, 21)])

    def run():
        sim = Run(Scenario("t", star_topo(21), flows, config("dcqcn")))
        count = [0]

        def wrap(h):
            def handle(target, arg, t):
                count[0] += 1
                if count[0] == 100_000:
                    raise KeyboardInterrupt
                h(target, arg, t)
            return handle
        sim.lps[0].handlers = tuple(wrap(h) for h in sim.lps[0].handlers)
        with pytest.raises(KeyboardInterrupt):
            sim.run(until_ps=3000 * US)
        return sim

    quiet = run()
    monkeypatch.setattr(LocalTransport, "run_quiet", lambda tr, t, w, lim: (tr.run_until(t), (t, 1))[1])
    each = run()
    assert (quiet.t_end_ps, quiet.events) == (each.t_end_ps, each.events)
    assert 0 < quiet.t_end_ps < 3000 * US and quiet.events < 100_000
