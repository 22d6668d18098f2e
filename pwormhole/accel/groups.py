"""The flow table and conflict groups (replicated on every rank; no rank-local objects).

A flow's ports are the egress ports its data and its ACKs cross, with the ECMP choices its
packets make; flows sharing a port are one group (connected components), so a group owns
every packet that crosses its ports.
"""

from __future__ import annotations

from collections import Counter, deque

from ..engine.lp import INF_PS
from ..net.switch import SwitchPort
from .config import BACKOFF_MIN_FLOWS

__all__ = ["FlowState", "FlowTable", "Group", "components", "split_off", "still_one"]


class FlowState:
    """Replicated facts of an active flow (no reference to rank-local objects)."""

    __slots__ = ("fid", "src", "dst", "pg", "size", "ports", "data_ports", "data_hops", "ack_ports", "samples",
                 "group_cell", "rtt_ps", "path_rtt_ps", "win_bytes", "mtu", "wire_bytes", "line_rate_bps", "start_ps",
                 "woke_ps", "last_steady", "ring", "lag_bytes")

    def __init__(self, flow, rtt_ps, win_bytes, mtu, hdr_bytes, data, ack, path_rtt_ps, start_ps) -> None:
        self.fid = flow.flow_id
        self.src = flow.src
        self.dst = flow.dst
        self.pg = flow.pg
        self.size = flow.size_bytes
        self.samples: deque = deque()  # of sampling.Sample
        self.group_cell = [-1]  # its group's id, in a cell shared with the group's ports (FlowTable)
        self.rtt_ps = rtt_ps  # the QP's base RTT (the network's largest with HPCC's global_t)
        self.start_ps = start_ps  # the boundary that reported the start
        self.woke_ps = -1  # the boundary its group last woke from a freeze at (-1: never frozen)
        self.lag_bytes = 0.0  # the fraction of a packet its wakes did not advance (fastforward.whole_packets)
        self.ring = False  # a ring step handed its predecessor's state after its end, not cut short since
        self.last_steady: dict | None = None  # its group's last steady freeze (successor.Successors.froze)
        self.win_bytes = win_bytes
        self.mtu = mtu
        self.wire_bytes = mtu + hdr_bytes
        self.set_path(data, ack, path_rtt_ps)
        self.line_rate_bps = data[0].rate_bps

    def set_path(self, data: list, ack: list, path_rtt_ps: int) -> None:
        """The ports its data and its ACKs cross, and its own path's RTT (the wake margin's unit)."""
        self.data_ports = data
        self.data_hops = [p for p in data if isinstance(p, SwitchPort)]  # the INT hops, in order
        self.ack_ports = ack
        self.ports = set(data) | set(ack)
        self.path_rtt_ps = path_rtt_ps

    @property
    def gid(self) -> int:
        """The id of its conflict group (-1: none yet)."""
        return self.group_cell[0]

    def una(self) -> int:
        """Acknowledged bytes at the last sample (0 before the first)."""
        return self.samples[-1].una_bytes if self.samples else 0

    def rate(self) -> int:
        """Congestion-control rate at the last sample (the line rate before the first)."""
        return self.samples[-1].cc_rate_bps if self.samples else self.line_rate_bps

    def pacing_rate(self) -> int:
        """The QP's pacing rate at the last sample (the line rate before the first); under HPCC
        with ``GLOBAL_T`` not the window over the base RTT."""
        return self.samples[-1].rate_bps if self.samples else self.line_rate_bps


class Group:
    """A conflict group: its flows (ids) and ports, and its acceleration state."""

    __slots__ = ("gid", "cell", "flows", "ports", "formed_ps", "newest_start_ps", "max_start_ps", "frozen",
                 "memo_checked", "memo_key", "memo_base", "refill", "next_check_ps", "backoff_periods", "unsettled",
                 "probe")

    def __init__(self, gid, flows, ports, formed_ps, newest_start_ps, cell=None):
        self.gid = gid
        self.cell = cell or [gid]  # shared with its flows and ports in the flow table; a merge renames it
        self.max_start_ps = newest_start_ps  # its flows' latest start (``newest_start_ps`` may be later: a reroute)
        self.flows = flows  # set of flow ids
        self.ports = ports  # set of Port objects
        self.formed_ps = formed_ps  # when it last changed (formed, merged, split or woken)
        self.newest_start_ps = newest_start_ps  # the boundary that reported its latest flow start
        self.frozen = None  # fastforward.Frozen while fast-forwarded
        self.memo_checked = False
        self.memo_key = None
        self.memo_base = None  # {fid: (acked, in-flight bytes), "@t": time} at the lookup (recording a transient)
        self.refill = None  # (goodputs, ps): after an HPCC memo jump or a ring step handed over, freeze then
        self.next_check_ps = 0  # neither sampled nor checked before this (config.BACKOFF_AFTER_SAMPLES)
        self.backoff_periods = 0  # sampling periods between its checks once backed off (0: every period)
        self.unsettled = 0  # checks failed since it could last settle (sampling.back_off)
        self.probe = [-1, -1, -1]  # the flows that failed its last steadiness, early and line-rate tests (tried first)


def components(fids, flows: dict) -> list:
    """``[(flow ids, ports)]``: the connected components of the flows ``fids`` (sharing a
    port), in the order of their smallest flow id; ``flows``: flow id -> FlowState."""
    by_port: dict = {}
    for f in fids:
        for p in flows[f].ports:
            by_port.setdefault(p, []).append(f)
    seen: set = set()
    out = []
    for f in sorted(fids):
        if f in seen:
            continue
        comp, ports, stack = set(), set(), [f]
        seen.add(f)
        while stack:
            x = stack.pop()
            comp.add(x)
            for p in flows[x].ports:
                ports.add(p)
                for y in by_port[p]:
                    if y not in seen:
                        seen.add(y)
                        stack.append(y)
        out.append((comp, ports))
    return out


def still_one(ports: list, by_port: dict, flows: dict) -> bool:
    """Whether the flows crossing ``ports`` are still one connected component (so a departure
    that left them splits nothing): from the largest port's flows, each port whose flows meet
    them joins them; each port left then searches from its flows until it meets them (False: it
    ran out of flows, a part splits off). Most departures from a large group end in the first
    step or a hop or two later, never searching the group. ``by_port``, ``flows``: as :func:`split_off`."""
    sets = sorted([by_port[p] for p in ports], key=len, reverse=True)
    reach = set(sets[0])  # the flows known to be in one component with the largest port's
    left = []
    for on in sets[1:]:
        if on.isdisjoint(reach):
            left.append(on)
        else:
            reach |= on
    for on in left:
        if not on.isdisjoint(reach):  # met through a port searched before
            reach |= on
            continue
        seen, todo, looked = set(on), list(on), set()
        met = False
        while todo and not met:
            for q in flows[todo.pop()].ports:
                if q in looked:
                    continue
                looked.add(q)
                fq = by_port[q]
                if not fq.isdisjoint(reach):
                    met = True
                    break
                new = fq - seen
                if new:
                    seen |= new
                    todo.extend(new)
        if not met:
            return False
        reach |= seen
    return True


def split_off(ports: list, by_port: dict, flows: dict) -> list:
    """The connected components (sets of flow ids) that the flows crossing ``ports`` fall into,
    all but one: a search from each port, side by side (one flow each in turn), ends where it
    meets another (one component) or runs out of flows (a component); the one left open is the
    rest, never searched through. So the work is that of the components returned, not of the
    whole group. ``by_port``: port -> the set of flow ids crossing it; ``flows``: flow id -> FlowState."""
    n = len(ports)
    parent = list(range(n))
    members: list = [set() for _ in ports]  # of each search (its root), the flows it reached
    todo: list = [[] for _ in ports]  # of each search, the flows whose ports it has still to look at
    reached: set = set()  # the flows any search reached
    seen: dict = {}  # port -> the search that took its flows
    live = set(range(n))  # the roots of the searches still open

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = i = parent[parent[i]]
        return i

    def merge(i: int, j: int) -> int:
        """Roots ``i`` and ``j`` meet: the one with more flows takes the other's."""
        if len(members[i]) < len(members[j]):
            i, j = j, i
        parent[j] = i
        members[i] |= members[j]
        todo[i] += todo[j]
        live.discard(j)
        return i

    def take(i: int, p) -> int:
        """Search ``i`` (a root) takes port ``p``'s flows; returns its root after the merges."""
        seen[p] = i
        on = by_port[p]
        new = on - reached
        if len(new) < len(on):  # it meets the searches that reached the others
            for j in list(live):
                if j != i and j in live and not members[j].isdisjoint(on):
                    i = merge(i, j)
        members[i] |= new
        reached.update(new)
        todo[i] += new
        return i

    for i, p in enumerate(ports):
        take(find(i), p)
    done = []
    while len(live) > 1:
        for i in list(live):
            if len(live) <= 1:
                break
            if i not in live:
                continue  # merged this round
            if not todo[i]:
                live.discard(i)
                done.append(members[i])
                continue
            for p in flows[todo[i].pop()].ports:
                j = seen.get(p)
                if j is None:
                    i = take(i, p)
                else:
                    j = find(j)
                    if j != i:
                        i = merge(i, j)
    return done


class FlowTable:
    """The active flows and their conflict groups: merged when a new flow touches several,
    split when a flow leaves (only that group is touched). A port and a flow hold their group's
    id through the group's cell, so a merge renames the largest group in place and rewrites
    only the smaller groups' ports and flows (linear in flows over a run of starts); a leave
    likewise keeps the cell for what is left of the group and searches only the components
    that split off (:func:`split_off`)."""

    def __init__(self) -> None:
        self.flows: dict[int, FlowState] = {}
        self.groups: dict[int, Group] = {}
        self.port_cell: dict = {}  # port -> the cell of its group's id
        self.port_flows: dict = {}  # port -> the ids of the flows crossing it
        self.next_gid = 0

    def new_group(self, flows: set, ports: set, t: int) -> Group:
        gid = self.next_gid
        self.next_gid += 1
        g = Group(gid, flows, ports, t, max(self.flows[f].start_ps for f in flows))
        self.groups[gid] = g
        cell = g.cell
        for p in ports:
            self.port_cell[p] = cell
        by_port = self.port_flows
        for fid in flows:
            fs = self.flows[fid]
            fs.group_cell = cell
            for p in fs.ports:
                on = by_port.get(p)
                if on is None:
                    by_port[p] = {fid}
                else:
                    on.add(fid)
        return g

    def touching(self, ports) -> list:
        """Remove and return (by group id) the groups holding one of ``ports``."""
        cells = self.port_cell
        gids = {cells[p][0] for p in ports if p in cells}
        return [self.groups.pop(gid) for gid in sorted(gids)]

    def add(self, fs: FlowState, merged: list, t: int) -> Group:
        """Add flow ``fs`` in one group with the groups ``merged`` (from :meth:`touching`): the
        largest of them takes the others' flows and ports and a new id."""
        self.flows[fs.fid] = fs
        if not merged:
            return self.new_group({fs.fid}, set(fs.ports), t)
        big = max(merged, key=lambda g: len(g.ports))
        flows, ports, cell = big.flows, big.ports, big.cell
        newest = fs.start_ps
        for g in merged:
            newest = max(newest, g.max_start_ps)
            if g is big:
                continue
            flows |= g.flows
            ports |= g.ports
            for p in g.ports:
                self.port_cell[p] = cell
            for fid in g.flows:
                self.flows[fid].group_cell = cell
        flows.add(fs.fid)
        fs.group_cell = cell
        by_port = self.port_flows
        for p in fs.ports:
            if p not in ports:
                ports.add(p)
                self.port_cell[p] = cell
            on = by_port.get(p)
            if on is None:
                by_port[p] = {fs.fid}
            else:
                on.add(fs.fid)
        gid = self.next_gid
        self.next_gid += 1
        cell[0] = gid
        g = self.groups[gid] = Group(gid, flows, ports, t, newest, cell)
        return g

    def remove(self, fid: int, t: int) -> None:
        """Flow ``fid`` finished: its group splits into connected components (new ids, made in
        the order of their smallest flow id); the part no search went through keeps the cell."""
        fs = self.flows.pop(fid, None)
        if fs is None:
            return
        g = self.groups.pop(fs.group_cell[0])
        by_port, port_cell = self.port_flows, self.port_cell
        seeds, gone = [], []  # its ports other flows still cross; those none do
        for p in fs.ports:
            on = by_port[p]
            on.discard(fid)
            if on:
                seeds.append(p)
            else:
                del by_port[p], port_cell[p]
                gone.append(p)
        rest, ports = g.flows, g.ports  # what is left keeps the group's sets (as a merge's largest group does)
        rest.discard(fid)
        if not rest:
            return
        ports.difference_update(gone)
        parts = split_off(seeds, by_port, self.flows) if len(seeds) > 1 and not still_one(
            seeds, by_port, self.flows) else []
        flows = self.flows
        newest = g.max_start_ps  # what is left keeps the latest start unless it went with a part
        recount = fs.start_ps >= newest
        split: list = []  # (smallest flow id, flows, ports) of each part; None, None: what is left
        for comp in parts:
            rest -= comp
            cports = set().union(*(flows[f].ports for f in comp))
            ports -= cports
            split.append((min(comp), comp, cports))
            recount = recount or any(flows[f].start_ps >= newest for f in comp)
        if recount:
            newest = max(flows[f].start_ps for f in rest)
        if split:
            split.append((min(rest), None, None))
            split.sort(key=lambda x: x[0])
        else:
            split = [(0, None, None)]
        for _, comp, cports in split:
            if comp is None:
                gid = self.next_gid
                self.next_gid += 1
                g.cell[0] = gid
                part = self.groups[gid] = Group(gid, rest, ports, t, newest, g.cell)
                size = len(rest)
            else:
                part = self.new_group(comp, cports, t)
                size = len(comp)
            if g.backoff_periods and size >= BACKOFF_MIN_FLOWS:  # what is left backs off again sooner
                part.backoff_periods = g.backoff_periods
                part.unsettled = g.unsettled if len(split) == 1 else 0  # a split may settle

    def first_check_ps(self) -> int:
        """The earliest ``next_check_ps`` of the groups not frozen (``INF_PS``: none)."""
        return min((g.next_check_ps for g in self.groups.values() if g.frozen is None), default=INF_PS)

    def regroup(self, t: int) -> list:
        """Rebuild every group from the flows' (new) ports; returns the groups."""
        self.groups.clear()
        self.port_cell.clear()
        self.port_flows.clear()
        fids = sorted(self.flows)
        return [self.new_group(comp, ports, t) for comp, ports in components(fids, self.flows)]


def crowded_nic_flows(flow_states, crowd: int) -> list[int]:
    """Flow ids of ``flow_states`` whose NIC (first data port) at least ``crowd`` of them leave."""
    per_nic = Counter(fs.data_ports[0] for fs in flow_states)
    return [fs.fid for fs in flow_states if per_nic[fs.data_ports[0]] >= crowd]
