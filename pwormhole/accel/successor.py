"""HPCC ring steps that follow one another (a collective keeps its identity across its ring
steps).

A ring's next step starts on the NIC, and the path, of the step that has just finished, into
the group that step left. When a group re-forms from the flows of its last steady freeze, with
each flow that finished since replaced by a new one on the same path and in the same priority
group (its queues), the steady state of that freeze holds for it again: the new flow takes the
finished one's goodput, unless a flow that shares the new one's data ports, and did not start
before the finished one, is paced close to its goodput (HPCC is cutting it, and a step that
starts at line rate takes more than its predecessor had). The group freezes with those
goodputs at the boundary of the hand-over (its flows sampled there, the new flows' packets in
flight with them), instead of recording the transient and waiting for HPCC to settle. The new
flows keep the rates HPCC gives them (line rate at the start; the finished flows' rates put
their FCTs further off; one path RTT of packets before the freeze was a little closer, and
slower: bench/RESULTS.md). Decisions use replicated facts only (the same on every rank).

Rings in lock step (one ring per NIC, the distributed optimizer's reduce-scatter and all-gather)
never re-form a group with flows under way: each step ends before the next one starts on its
route. A group of new flows only, one on each route of a steady state whose flows have all
finished, takes that state's goodputs the same way (``handed_after_end``) when:

* those flows shared no data port (each alone on its path but for ACKs, which HPCC holds at its
  target utilization whatever its start; flows into one NIC, an expert all-to-all, cut each other
  from line rate at the start, which the hand-over would skip: MoE 8x7B, 64 GPUs, 2 layers had
  48 collectives 0.1-0.4% off);
* no flow joined their group while it was frozen so, and no link failed since (the new step freezes
  with the short pipeline of its start, and a join would meet it; after a memo hit a path RTT of
  refill prevents that);
* each new flow started at most a path RTT before the flow it follows on its route finished, its
  ACKs take that flow's ACK ports (the loads its goodput was measured under), and it is long
  enough that the hand-over's small fixed error does not count
  (:data:`~.config.SUCCESSOR_AFTER_END_MIN_BDPS`)."""

from __future__ import annotations

from .config import BPS_PER_BYTE_PS, SUCCESSOR_AFTER_END_MIN_BDPS, SUCCESSOR_PACING_HEADROOM


class Successors:
    """The hand-over test. ``on``: HPCC with fast-forwarding and the memo cache; ``handed`` counts
    the groups given their last steady state again (a group whose freeze is then refused is
    counted too)."""

    def __init__(self, on: bool) -> None:
        self.on = on
        self.handed = 0
        self.handed_after_end = 0  # of them, groups of new flows only, after the whole state finished
        # route -> (the steady state of the flow that last finished on it, its finish ps); only states
        # whose flows shared no data port, the only ones a step after their end may take
        self.finished_on: dict = {}

    def joined(self, g, flows: dict) -> None:
        """A flow joined group ``g``, frozen in its steady state: that state was cut short by other
        traffic, which would meet a step handed that state with the short pipeline it freezes with."""
        for f in g.flows:
            state = flows[f].last_steady
            if state is not None:
                state.joined = True

    def finished(self, fs, finish_ps: int) -> None:
        """Flow ``fs`` finished at ``finish_ps``: the state of its last steady freeze stays on its
        route, for a step of its ring that starts there after its whole group finished."""
        if not self.on:
            return
        state = fs.last_steady
        if state is not None and state.disjoint:
            self.finished_on[route_of(fs)] = (state, finish_ps)
        else:
            self.finished_on.pop(route_of(fs), None)

    def rerouted(self, flows: dict) -> None:
        """A link failed: the states measured on the old routes (their ACK paths too) are not handed on."""
        self.finished_on.clear()
        for fs in flows.values():
            if fs.last_steady is not None:
                fs.last_steady.joined = True

    def froze(self, g, flows: dict, goodput: dict) -> None:
        """A steady freeze of group ``g`` at ``goodput`` (flow id -> bytes/ps): each flow keeps
        the group's state, ``{flow id: ((data path, priority group), goodput, start)}``."""
        if not self.on:
            return
        state = SteadyState((f, (route_of(flows[f]), goodput[f], flows[f].start_ps, tuple(flows[f].ack_ports)))
                            for f in g.flows)
        ports = [p for f in g.flows for p in flows[f].data_ports]
        state.disjoint = len(set(ports)) == len(ports)
        for f in g.flows:
            flows[f].last_steady = state

    def take_over(self, g, t: int, flows: dict, finished: set, is_new) -> bool:
        """When group ``g`` at boundary ``t`` is the group of its flows' last steady freeze with
        each flow finished since replaced by a new flow (``is_new(fid)``) on the same data path in
        the same priority group, and HPCC not cutting the flows the new ones meet (``cut_under``):
        ``g.refill`` gets that state's goodputs (flow id -> bytes/ps) and ``t``, when ``g``
        freezes with them (True). Else False."""
        if not self.on:
            return False
        fids = sorted(g.flows)
        state = next((flows[f].last_steady for f in fids if flows[f].last_steady is not None), None)
        if state is None:
            return self._after_end(g, t, fids, flows, finished, is_new)
        if len(state) != len(fids):
            return False
        free: dict = {}  # (data path, priority group) -> the flows of the state that finished since, by id
        for f in sorted(state):
            if f not in g.flows:
                if f not in finished:
                    return False
                free.setdefault(state[f][0], []).append(f)
        if not free:  # the same flows as at the freeze: nothing to hand over
            return False
        if any(cut_under(route, took, state, g.flows, flows) for route, took in free.items()):
            return False
        goodput = {}  # (as many flows as the state, so each finished flow gets one successor)
        for f in fids:
            if f in state:
                if flows[f].last_steady is not state:
                    return False
                goodput[f] = state[f][1]
                continue
            took = free.get(route_of(flows[f]))
            if not took or not is_new(f):
                return False
            goodput[f] = state[took.pop(0)][1]
        g.refill = (goodput, t)
        self.handed += 1
        return True

    def _after_end(self, g, t: int, fids: list, flows: dict, finished: set, is_new) -> bool:
        """A group of new flows only, each on the route of a flow of one steady state whose flows
        have all finished and shared no data port, one new flow per route: the next step of a ring
        after the whole step before it ended. ``g.refill`` gets that state's goodputs and ``t``
        (True), else False."""
        state = None
        for f in fids:
            fs = flows[f]
            got = self.finished_on.get(route_of(fs))
            if got is None or not is_new(f) or (state is not None and got[0] is not state):
                return False
            if fs.start_ps < got[1] - fs.path_rtt_ps:  # it ran beside the flow it follows (a ring's
                return False  # next step starts up to half a path RTT before the last one's end)
            if fs.size * BPS_PER_BYTE_PS < SUCCESSOR_AFTER_END_MIN_BDPS * fs.line_rate_bps * fs.path_rtt_ps:
                return False  # a short step: the fixed error of a hand-over counts
            state = got[0]
        if state is None or state.joined or len(state) != len(fids) or not finished.issuperset(state):
            return False
        by_route = {route: (gp, acks) for route, gp, _start, acks in state.values()}
        if len(by_route) != len(fids) or {route_of(flows[f]) for f in fids} != by_route.keys():
            return False
        if any(by_route[route_of(flows[f])][1] != tuple(flows[f].ack_ports) for f in fids):
            return False  # its ACKs take other ports (ECMP): the loads the goodputs were measured under differ
        g.refill = ({f: by_route[route_of(flows[f])][0] for f in fids}, t)
        self.handed += 1
        self.handed_after_end += 1
        return True


class SteadyState(dict):
    """A group's steady freeze: flow id -> ``(route, goodput, start_ps, ACK ports)``; ``disjoint``:
    its flows share no data port; ``joined`` once a flow joined the group while it was frozen so
    (or a link failed)."""

    joined = False
    disjoint = False


def cut_under(route: tuple, predecessors: list, state: dict, fids: set, flows: dict) -> bool:
    """Whether a flow of ``fids`` in ``state`` that shares ``route``'s data ports and did not
    start before the newest of ``predecessors`` (the flows of ``state`` on ``route`` that
    finished) is paced (at its latest sample) under ``SUCCESSOR_PACING_HEADROOM`` times its
    goodput in ``state``."""
    newest_ps = max(state[f][2] for f in predecessors)
    ports = set(route[0])
    return any(f in state and state[f][2] >= newest_ps and not ports.isdisjoint(flows[f].data_ports)
               and flows[f].pacing_rate() < SUCCESSOR_PACING_HEADROOM * state[f][1] * BPS_PER_BYTE_PS
               for f in fids)


def route_of(fs) -> tuple:
    """What a successor must share with the flow it replaces: its data path (ports in order) and
    its priority group (the queues it uses there)."""
    return tuple(fs.data_ports), fs.pg
