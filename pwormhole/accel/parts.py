"""Steady parts of a conflict group: flows fast-forwarded while their neighbours run as packets.

A group that is not steady as a whole may hold parts that are. A port is *loaded* when the pacing
rates of the flows whose data crosses it, or their recent goodputs where higher (and the goodputs
of parts fast-forwarded there), add up to at least :data:`~.config.LOADED_SHARE` of its rate: the
flows crossing it share it, and their rates move together; so do the flows whose ACKs queue there
(a window-bound flow goes at its ACKs' pace). A part is a set of flows of one group joined by
loaded ports and closed under them (every flow whose data or ACKs cross a part's loaded port is
in the part), every flow steady by its own samples since the last flow start or finish on one of
its ports loaded with that flow (:func:`.steady.goodput`; a port that stops being loaded when a
flow leaves it changes the others' rates too). Groups are searched every
:data:`~.config.PARTS_EVERY` sampling periods, but not those backed off (unsettled for long) unless
they hold a part already, and a group found one component is searched again only once it changed
or ``PARTS_EVERY`` searches later.

Flows that go at their ACKs' pace (window-bound under their pacing rate) are left out: a drained
pipe would refill a whole window at once, ahead of the ACK clock.

A part is fast-forwarded without holding a port (other flows keep using its ports): each QP leaves
its NIC's round robin (``HostPort.withdraw``: it sends nothing, and its CC ignores the ACKs of its
packets in flight, which drain through the network as it carries them) and its timers leave the
heaps (``net.freeze.take_timers``). On waking after ``D`` ps each flow has sent and had
acknowledged ``goodput x D`` more bytes, rounded down to whole packets (``fastforward.room``), in
its sender and receiver; the timers return ``D`` later (DCQCN rate-increase timers at their own
time), an HPCC sender takes its next INT records afresh, and the QP rejoins the round robin. The
drained pipe refilling at the same rate delivers what the full one would: the receiver leads by
the pipe's bytes until the first new packet arrives, then follows the same line.

The part's load leaves the ports it shares with other flows (ports not loaded when it froze,
whose other flows are limited elsewhere), and at its wake their byte counters (HPCC's INT) do not
jump by its bytes. A part wakes no earlier than :data:`~.config.PART_DRAIN_RTTS` path RTTs after
it froze (its packets in flight have drained; but at a link failure and at the run's end), at its
planned time (a flow's margin,
:func:`.fastforward.wake_by`, or a DCQCN rate change), before a known flow start on one of its
loaded ports, when a flow starts crossing one of its loaded ports, and when the flows running
beside it load one of its shared ports (at a sample: their pacing rates and the part's goodputs).
Decisions use the replicated flow table and samples (docs/design.md invariant 9); each rank
withdraws, advances and readmits only its own QPs and receivers.
"""

from __future__ import annotations

from ..config import CC_DCQCN
from ..engine.lp import INF_PS
from ..net import cc
from ..net.freeze import take_timers
from . import fastforward as ff
from .config import BPS_PER_BYTE_PS, LOADED_SHARE, PART_DRAIN_RTTS, PARTS_EVERY
from .steady import goodput, window_bound


def flow_rate_bps(fs, samples: int) -> float:
    """What flow ``fs`` (sampled) puts into its ports (bits per second on the wire): its pacing
    rate at the last sample, or its goodput over the last ``samples`` samples where higher (a queue
    draining at the port's rate after DCQCN cut the pacing rates under it)."""
    q = fs.samples
    last = q[-1]
    rate = last.rate_bps
    n = len(q)
    if n > 1:
        first = q[-min(n, samples + 1)]
        dt = last.t_ps - first.t_ps
        if dt > 0:
            gp = (last.una_bytes - first.una_bytes) / dt * fs.wire_bytes / fs.mtu * BPS_PER_BYTE_PS
            if gp > rate:
                return gp
    return rate


def port_load_bps(p, port_flows: dict, flows: dict, of: dict, part_load: dict, samples: int) -> float:
    """Bits per second into port ``p``: what the flows whose data crosses it (``port_flows``: the
    flow table's port -> flow ids), not in a part (``of``), put into it (:func:`flow_rate_bps`),
    and the live parts' loads there (``part_load``)."""
    load = part_load.get(p, 0)
    for fid in port_flows.get(p, ()):
        fs = flows[fid]
        if fid not in of and fs.samples and p in fs.data_ports:
            load += flow_rate_bps(fs, samples)
    return load


def mark_changed(fs, seen: set, changed_ps: dict, t: int) -> None:
    """Flow ``fs`` starts or ends at boundary ``t``: its ports loaded at the last search (``seen``),
    or by its line rate alone, mark the change in ``changed_ps`` (the rates of the flows there move)."""
    line = fs.line_rate_bps
    data = fs.data_ports
    for p in fs.ports:
        if p in seen or (line >= LOADED_SHARE * p.rate_bps and p in data):
            changed_ps[p] = t


def any_loaded(watch: list, port_flows: dict, flows: dict, of: dict, part_load: dict, samples: int) -> bool:
    """Whether a port of ``watch`` (``(port, load limit bps)``) carries at least its limit
    (:func:`port_load_bps`)."""
    for p, limit in watch:
        if port_load_bps(p, port_flows, flows, of, part_load, samples) >= limit:
            return True
    return False


class Part:
    """A fast-forwarded part: its flows (sorted ids), loaded ports, the other ports its flows cross
    (data and ACKs) and the load on each of those that wakes it (``watch``), its load on each port
    (bits per second), when it froze, may wake and wakes, the sampled goodputs (bytes per ps),
    acknowledged bytes and bytes in flight at the freeze, and its timers by LP."""

    __slots__ = ("flows", "loaded", "shared", "watch", "load_bps", "t0", "drained_ps", "wake_ps", "goodput",
                 "una0", "inflight0", "timers")

    def __init__(self, flows, loaded, shared, load_bps, t0, drained_ps, wake_ps, gps, una0, inflight0, timers):
        self.flows = flows
        self.loaded = loaded
        self.shared = shared
        self.watch = [(p, LOADED_SHARE * p.rate_bps) for p in shared]  # (port, the load that wakes it)
        self.load_bps = load_bps
        self.t0 = t0
        self.drained_ps = drained_ps  # no wake before (its packets in flight drain), but at a failure or the end
        self.wake_ps = wake_ps
        self.goodput = gps
        self.una0 = una0
        self.inflight0 = inflight0
        self.timers = timers


class Parts:
    """The fast-forwarded parts of a run and their bookkeeping (off: ``on`` False)."""

    def __init__(self, on: bool):
        self.on = on
        self.live: list[Part] = []
        self.of_flow: dict = {}  # flow id -> its Part
        self.on_port: dict = {}  # loaded port -> the Part holding it
        self.changed_ps: dict = {}  # port -> the last boundary a flow started or ended there loaded with it
        self.skips = 0
        self.search = False  # groups are searched at this boundary (every PARTS_EVERY sampling periods)
        self.next_search_ps = 0
        self.part_load: dict = {}  # port -> bits per second the live parts put into it
        self.whole: dict = {}  # group id -> (its formed_ps, until when) where a search found one component
        self.sample_ps = 0
        self.loaded_seen: set = set()  # the ports found loaded at the last search

    def open_search(self, t: int, sample_ps: int) -> None:
        """At sampling boundary ``t``: whether groups are searched for parts now, and when next."""
        self.search = self.on and t >= self.next_search_ps
        self.sample_ps = sample_ps
        if self.search:
            self.next_search_ps = t + PARTS_EVERY * sample_ps
            self.loaded_seen = set()

    def next_wake_ps(self) -> int:
        return min((p.wake_ps for p in self.live), default=INF_PS)

    def changed(self, fs, t: int) -> None:
        """Flow ``fs`` starts or ends at boundary ``t``: :func:`mark_changed`."""
        mark_changed(fs, self.loaded_seen, self.changed_ps, t)

    def holds(self, g) -> bool:
        """Whether a flow of group ``g`` is in a part (the group is then never frozen whole)."""
        of = self.of_flow
        return bool(of) and any(f in of for f in g.flows)

    def crossing(self, fs) -> list:
        """The parts with a loaded port that flow ``fs`` (starting) crosses, by their first flow (the
        order they wake in, and their QPs rejoin their NICs' round robins in)."""
        out: list = []
        for p in fs.ports:
            part = self.on_port.get(p)
            if part is not None and part not in out:
                out.append(part)
        return sorted(out, key=lambda part: part.flows[0])

    # -- finding and freezing ----------------------------------------------------------
    def port_loads(self, w, fids) -> dict:
        """Port -> bits per second into it: what each flow of ``fids`` not in a part puts into its
        data ports (:func:`flow_rate_bps`), and the live parts' loads there."""
        load: dict = {}
        flows, of, part_load = w.flows, self.of_flow, self.part_load
        samples = w.samples
        for fid in fids:
            if fid in of:
                continue
            fs = flows[fid]
            if fs.samples:
                r = flow_rate_bps(fs, samples)
                for p in fs.data_ports:
                    load[p] = load.get(p, 0) + r
        for p in load:
            load[p] += part_load.get(p, 0)
        return load

    def find(self, w, g, t: int) -> None:
        """Freeze the steady parts of group ``g`` (not steady as a whole) at sampling boundary ``t``."""
        seen = self.whole.get(g.gid)
        if seen is not None and seen[0] == g.formed_ps and t < seen[1]:
            return  # (one component at its last search, and not changed since)
        flows, of = w.flows, self.of_flow
        cands = [flows[f] for f in sorted(g.flows) if f not in of]
        if len(cands) < 2 and not self.holds(g):
            return  # (a lone flow is the group's own test)
        for fs in cands:
            if not fs.samples or fs.samples[-1].t_ps != t:
                return  # (every flow sampled now: a freeze starts from known state)
        load = self.port_loads(w, g.flows)
        loaded = {p for p, b in load.items() if b >= LOADED_SHARE * p.rate_bps}
        self.loaded_seen |= loaded
        # components of the candidates joined by loaded ports, data or ACKs (union-find on their indices)
        parent = list(range(len(cands)))

        def root(i: int) -> int:
            while parent[i] != i:
                parent[i] = parent[parent[i]]
                i = parent[i]
            return i

        first: dict = {}
        for i, fs in enumerate(cands):
            for p in fs.ports:  # (its ACKs too: a window-bound flow's pace is its ACKs')
                if p in loaded:
                    j = first.setdefault(p, i)
                    ri, rj = root(i), root(j)
                    if ri != rj:
                        parent[max(ri, rj)] = min(ri, rj)
        comps: dict = {}
        for i in range(len(cands)):
            comps.setdefault(root(i), []).append(cands[i])
        if len(comps) == 1 and not self.holds(g):
            if len(self.whole) > 2 * len(w.groups):
                self.whole = {gid: v for gid, v in self.whole.items() if gid in w.groups}
            self.whole[g.gid] = (g.formed_ps, t + PARTS_EVERY * PARTS_EVERY * self.sample_ps)
            return  # (the whole group: its own test; searched again when it changes, or later)
        for r in sorted(comps):
            self._try(w, comps[r], loaded, t)

    def _try(self, w, comp: list, loaded: set, t: int) -> None:
        mine = {p for fs in comp for p in fs.ports if p in loaded}
        if any(p in self.on_port for p in mine):
            return
        changed = self.changed_ps
        since = max([changed.get(p, 0) for fs in comp for p in fs.ports]
                    + [max(fs.start_ps, fs.woke_ps) for fs in comp])
        gps: dict = {}
        for fs in comp:
            gp = goodput(fs, since, since, w.samples, w.theta, w.min_span_packets)
            if gp is None or gp <= 0 or self.acked_pace(w, fs, gp):
                return
            gps[fs.fid] = gp
        if w.steady_tests_fail(comp, gps):
            return
        done = INF_PS
        for fs in comp:
            end = ff.wake_by(fs, t, fs.una(), gps[fs.fid], w.cfg.margin_rtts)
            rp_due = fs.samples[-1].rate_change_ps
            if 0 <= rp_due < end:  # (a DCQCN rate change ends the steady state)
                end = rp_due
            done = min(done, end)
        win = w.window_ps
        wake = ff.cap_wake(w.starts_on, mine, t, done // win * win, win)
        drained = -(-(t + PART_DRAIN_RTTS * max(fs.path_rtt_ps for fs in comp)) // win) * win
        if wake - t < w.min_skip_ps or wake < drained:
            return
        self._freeze(w, comp, mine, gps, t, drained, wake)

    @staticmethod
    def acked_pace(w, fs, gp: float) -> bool:
        """Whether flow ``fs`` goes at its ACKs' pace: its window full at a recent sample and its
        goodput ``gp`` (bytes per ps) under its pacing rate."""
        wire_bps = gp * fs.wire_bytes / fs.mtu * BPS_PER_BYTE_PS
        return wire_bps < (1 - w.theta) * fs.pacing_rate() and window_bound(fs, w.samples, w.facts, False)

    def _freeze(self, w, comp: list, mine: set, gps: dict, t: int, drained_ps: int, wake_ps: int) -> None:
        fids = [fs.fid for fs in comp]
        load: dict = {}
        shared: set = set()
        for fs in comp:
            wire_bps = int(gps[fs.fid] * fs.wire_bytes / fs.mtu * BPS_PER_BYTE_PS)
            for p in fs.data_ports:
                load[p] = load.get(p, 0) + wire_bps
            shared.update(p for p in fs.ports if p not in mine)
        una0 = {fs.fid: fs.una() for fs in comp}
        inflight0 = {fs.fid: ff.inflight(fs, t, gps[fs.fid]) for fs in comp}
        net, local = w.net, w.heap_of
        for fs in comp:
            if fs.src in local:
                qp = net.sender_qp(fs.fid)
                if qp is not None:
                    qp.port.withdraw(qp)
        fidset = set(fids)
        timers = [(lp, take_timers(lp.heap, fidset)) for lp in w.lps]
        part = Part(fids, mine, shared, load, t, drained_ps, wake_ps, gps, una0, inflight0, timers)
        self.live.append(part)
        for p, b in load.items():
            self.part_load[p] = self.part_load.get(p, 0) + b
        for f in fids:
            self.of_flow[f] = part
        for p in mine:
            self.on_port[p] = part
        w.heaps_changed = True
        w.skips += 1  # (a freeze as a group's is; ``skips`` here: those of parts)
        self.skips += 1

    # -- waking ------------------------------------------------------------------------
    def call(self, w, part: Part, t: int) -> None:
        """Wake ``part`` at boundary ``t``, or once its packets in flight have drained if later (a
        wake advances its senders and receivers alike: a byte still on its way would open a gap)."""
        if t >= part.drained_ps:
            self.wake(w, part, t)
        elif part.drained_ps < part.wake_ps:
            part.wake_ps = part.drained_ps

    def due(self, w, t: int) -> None:
        """Wake the parts whose wake is due at boundary ``t``."""
        for part in [p for p in self.live if p.wake_ps <= t]:
            self.wake(w, part, t)

    def check_loads(self, w, t: int) -> None:
        """At a sampling boundary: wake the parts whose shared ports the flows beside them load."""
        if not self.live:
            return
        port_flows, flows, samples = w.table.port_flows, w.flows, w.samples
        for part in list(self.live):
            if any_loaded(part.watch, port_flows, flows, self.of_flow, self.part_load, samples):
                self.call(w, part, t)

    def wake(self, w, part: Part, t: int) -> None:
        """Advance ``part``'s flows to ``t`` and put them back in their NICs' round robins."""
        self.live.remove(part)
        for p, b in part.load_bps.items():
            left = self.part_load[p] - b
            if left:
                self.part_load[p] = left
            else:
                del self.part_load[p]
        for f in part.flows:
            del self.of_flow[f]
        for p in part.loaded:
            del self.on_port[p]
        d = t - part.t0
        flows, net, local = w.flows, w.net, w.heap_of
        advance: dict = {}
        for fid in part.flows:
            fs = flows[fid]
            advance[fid] = ff.whole_packets(fs, part.goodput[fid], d, part.una0[fid], part.inflight0[fid])
        port_adv = ff.carried_bytes(flows, advance, w.ack_every_pkts, w.ack_bytes)
        # the byte counters (INT's txBytes) of its own ports only: where other flows' packets
        # carry INT records, a jump would read as a burst (HPCC would cut them)
        shared_adv = {p: a for p, a in port_adv.items() if p in part.shared}
        port_adv = {p: a for p, a in port_adv.items() if p not in part.shared}
        for p, a in port_adv.items():
            p.carried(a)
        decay = cc.dcqcn_alpha_decay(net.cfg, d) if net.cfg.cc_mode == CC_DCQCN else None
        for fid in part.flows:
            fs = flows[fid]
            b = advance[fid]
            if fs.dst in local:
                net.advance_receiver(fid, b, part.t0, d)
            if fs.src in local:
                qp = net.sender_qp(fid)
                if qp is not None:
                    qp.advance(b, part.t0, d, decay, None)  # (no INT records: HostPort.withdraw)
                    qp.port.readmit(qp, t)
            fs.samples.clear()
            fs.woke_ps = t
        retime = ff.retimer(t, net.cfg.rp_timer_ps)
        for lp, evs in part.timers:
            lp.reinsert(evs, d, retime)
        w.skipped_ps += d
        w.skipped_flow_ps += d * len(part.flows)
        w.skipped_bytes += sum(advance.values())
        if w.on_carried is not None:
            w.on_carried(port_adv, part.t0, d)
            w.on_carried(shared_adv, part.t0, d, False)
        w.heaps_changed = True
        w.check_from_ps = 0

    def wake_all(self, w, t: int) -> None:
        """Wake every part now (a link failure, whose packets are lost anyway, or the run's end)."""
        for part in list(self.live):
            self.wake(w, part, t)
