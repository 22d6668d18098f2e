"""Wormhole acceleration: the boundary hook (conflict groups, fast-forward, memoization).

After F. Long et al., "Supercharging Packet-level Network Simulation of Large Model Training
via Memoization and Fast-Forwarding" (NSDI 2026), sections 4-6, and docs/design.md ("Wormhole
acceleration"). Everything runs at window boundaries (docs/design.md invariant 3), after the outboxes are
delivered; nothing touches the per-event path. At each boundary, in this order: flows finished
and started update the flow table (:mod:`.groups`), frozen groups due wake
(:mod:`.fastforward`), samples are stored (:mod:`.sampling`), new groups are looked up in the
memo cache (:mod:`.replay`), and steady groups (:mod:`.steady`; under HPCC also groups near
HPCC's fluid steady state) are recorded and frozen.

Same decisions on every rank (docs/design.md invariants 4 and 9): decisions use only the replicated flow table and
the samples every rank exchanges (:meth:`Wormhole.local_report`); each rank then changes only
its own objects.
"""

from __future__ import annotations

from collections.abc import Callable
from time import thread_time

from ..config import CC_DCQCN, CC_HPCC, CC_NAMES, NVLINK_CC_NONE
from ..engine.lp import INF_PS
from ..net import cc
from ..net.cc import min_window_bytes
from ..net.packet import ACK_MIN_BYTES, DATA_HEADER_BYTES
from . import fastforward as ff
from . import fluid, replay
from .config import (
    BACKOFF_KEEP_SAMPLES,
    BPS_PER_BYTE_PS,
    HPCC_CROWDED_NIC,
    HPCC_EARLY_MIN_PACKETS,
    HPCC_EARLY_TOLERANCE,
    HPCC_EARLY_WINDOW_SPREAD,
    AccelConfig,
)
from .fastforward import Frozen
from .follow import Followers
from .groups import FlowState, FlowTable, Group, crowded_nic_flows
from .memo import group_parts
from .parts import Parts
from .ringstep import RingSteps, call_on_event
from .sampling import back_off, merge_reports, sample_of, store_samples, take_samples
from .steady import (
    NetFacts,
    fifo_shares,
    fills_a_queue,
    goodput,
    hpcc_early,
    hpcc_unfair,
    line_rate_ready,
    line_rate_shares,
    per_flow,
    recent_goodput,
)
from .successor import Successors

__all__ = ["AccelConfig", "Wormhole"]


class Wormhole:
    """The boundary hook of an accelerated run.

    Args:
        net: the :class:`~pwormhole.net.build.Network`.
        lps: the logical processes of this process (all of them in-process, this rank's one
            under MPI); their events are extracted when groups freeze.
        cfg: an :class:`AccelConfig`.
        memo: a :class:`~pwormhole.accel.memo.MemoCache` (None: no memoization).

    Call :meth:`local_report` after the window's events (before the exchange) and
    :meth:`on_boundary` with every rank's reports merged. Counters: ``skips`` (freezes),
    ``skipped_ps`` (sum of frozen spans), ``skipped_flow_ps`` (frozen spans x flows frozen),
    ``skipped_bytes`` (payload bytes advanced at wakes, sent without events), ``memo_hits``,
    ``memo_misses`` (recordings started), ``follow``, ``successors``, ``wakes_interrupted``, ``lp_work_s``
    (CPU seconds on this process's heaps at freezes and wakes: the part of the hook each rank does for itself).
    """

    def __init__(self, net, lps, cfg: AccelConfig, window_ps: int, memo=None):
        self.net = net
        self.lps = lps
        self.cfg = cfg
        mode = net.cfg.cc_mode
        # CCs whose memo replay is refused: their RTT-scale state (TIMELY's RTT history, DCTCP's
        # alpha and batches) is neither in the memo key nor restored by a replay
        self.cc_limits = None
        if mode not in (CC_DCQCN, CC_HPCC):
            self.cc_limits = (f"{CC_NAMES.get(mode, mode)}: groups below line rate are never fast-forwarded (the "
                              "rate changes every RTT: no steady state to trust); no memo replay")
        self.memo = memo if cfg.memo and self.cc_limits is None else None
        self.sample_ps = cfg.sample_ps or window_ps
        self.min_skip_ps = cfg.min_skip_ps or 8 * window_ps
        self.window_ps = window_ps  # the run's window (partition.grid): samples and wakes keep to its grid
        self.hpcc = net.cfg.cc_mode == CC_HPCC
        eff = cfg.resolved(self.hpcc)
        self.min_span_packets = eff.min_span_packets
        self.samples = eff.samples
        self.theta = eff.theta
        self.early_on = self.hpcc and cfg.early
        self.line_rate_on = net.cfg.cc_mode == CC_DCQCN and cfg.line_rate
        self.keep_samples = max(self.samples, 2048)  # slow flows need a long span for min_span_packets
        self.mtu = net.cfg.packet_payload_bytes
        host0 = next((nd for nd in net.nodes if not nd.is_switch), None)
        self.hdr_bytes = host0.hdr_bytes if host0 is not None else DATA_HEADER_BYTES
        self.ack_bytes = host0.ack_bytes if host0 is not None else ACK_MIN_BYTES
        self.table = FlowTable()
        self.flows = self.table.flows  # flow id -> FlowState
        self.groups = self.table.groups  # group id -> Group
        self.net_finished: set = set()  # flows finished (a start reported after its finish is ignored)
        self.next_sample_ps = self.skips = self.wakes_interrupted = self.line_rate_freezes = 0
        self.frozen: set = set()  # the frozen groups (Group objects)
        self.skipped_ps = self.skipped_flow_ps = self.skipped_bytes = self.memo_hits = self.memo_misses = 0
        self.follow = Followers(self.hpcc and cfg.follow and cfg.skip and self.memo is not None)  # groups alike
        self.successors = Successors(self.hpcc and cfg.successors and cfg.skip and self.memo is not None)
        self.parts = Parts(cfg.skip and cfg.parts and self.cc_limits is None)  # steady parts of unsteady groups
        self.lp_work_s = 0.0
        self.crowded: set = set()  # HPCC: flows frozen in a group with HPCC_CROWDED_NIC flows on one NIC
        self.rerouted: set = set()  # flows under way at a link failure (never looked up in the memo cache)
        self.heaps_changed = False  # a group woke or froze here (MPI then gathers the minimum and horizon again)
        self.check_from_ps = 0  # no group is due for sampling before this (0: unknown, look at them all)
        # monitors' hook: port -> bytes, t0_ps, d_ps, whether the ports' byte counters moved by them
        self.on_carried: Callable[..., None] | None = None
        self.heap_of = {nd.node_id: lp.heap for lp in lps for nd in lp.nodes}  # the local node ids
        # NVLink flows: by rates (fluid_fids, replicated) or, without end-to-end CC, packet by
        # packet outside the conflict groups (no CC state to fast-forward or replay)
        self.fluid_domains, self.fluid_fids, nvlink_fids, self.nvlink_packets_why = fluid.setup(
            net, lps, cfg.nvlink)
        self.nvlink_model = "rates" if self.fluid_fids else ("packets" if nvlink_fids else "none")
        self.ungrouped = nvlink_fids if net.cfg.nvlink_cc == NVLINK_CC_NONE else set()
        self.ungrouped_active: set = set()  # of those, the flows under way
        self.starts_on: dict = {}  # port -> sorted start times of the flow list's flows crossing it
        if net.dag_rt is None and (cfg.skip or cfg.memo):
            self.starts_on = ff.index_starts(net, self.fluid_fids)
        nic_fids = [f.flow_id for f in net.flows if f.flow_id not in nvlink_fids]
        self.rings = RingSteps(net, lps, nic_fids, self.successors.on and cfg.ring_steps,
                               fluid.FluidEvents(None) if fluid.COMPILED else call_on_event, window_ps)
        self.rings.fits = self._ring_fits
        self.rings.on_carried = self._ring_carried
        self.ack_every_pkts = max(1, -(-max(1, net.cfg.l2_ack_interval) // self.mtu))
        ncfg = net.cfg
        self.facts = NetFacts(self.ack_every_pkts, self.ack_bytes, ncfg.var_win, min_window_bytes(ncfg),
                              ncfg.rate_bound, ncfg.ack_high_prio, ncfg.u_target, ncfg.rate_ai_bps)
        self.hpcc_models: dict = {}  # HPCC fluid steady states by flow layout (steady.hpcc_model)
        self.line_rate_models: dict = {}  # DCQCN round-robin shares by flow layout (steady.line_rate_shares)
        self.port_labels: dict = {}  # port -> memo.port_label (a group graph's port vertices)

    # -- boundary ------------------------------------------------------------------
    def local_report(self, t: int):
        """What this process contributes at boundary ``t``: ``(started flow ids, samples or
        None)``; samples (every ``sample_ps``) are ``(flow id, Sample)`` of the local senders of
        the groups neither frozen nor backed off. With ring steps carried a third part: their
        starts and the ring members' receipts (:meth:`.RingSteps.local_report`)."""
        started = []
        for lp in self.lps:
            if lp.flow_start_log:
                started.extend(lp.flow_start_log)
                lp.flow_start_log.clear()
        started.sort()  # (as merge_reports: groups form in flow-id order on any rank count)
        samples = None
        if t >= self.next_sample_ps:
            due = [g.flows for g in self.groups.values() if g.frozen is None and g.next_check_ps <= t] \
                if t >= self.check_from_ps else None
            samples = take_samples(t, due, self.flows, self.net, self.heap_of) if due else []
        if self.rings.on:
            return started, samples, self.rings.local_report(self.flows)
        return started, samples

    merge_reports = staticmethod(merge_reports)  # of several LPs or ranks
    sample_of = staticmethod(sample_of)  # a sample rebuilt from the integers ranks exchange

    def take_heaps_changed(self) -> bool:
        """Whether a group woke or froze here since the last call (the window loop then reads the
        minimum and horizon again)."""
        changed = self.heaps_changed
        self.heaps_changed = False
        return changed

    def on_boundary(self, t: int, done, report) -> None:
        """Flow-table updates, wakes, then acceleration decisions, at boundary ``t`` (ps);
        ``report`` is the merged :meth:`local_report` of every LP."""
        started, samples = report[0], report[1]
        if len(report) > 2:
            if report[2][0]:
                self.heaps_changed = True  # (the carried flows' last-byte events)
            self._handed_back(self.rings.boundary(t, report[2], self.heap_of), t)
        if done or started:
            self.check_from_ps = 0  # the groups change: the next sampling boundary looks at them all
        if done:
            self._flows_finished(done, t)
        for fid in started:
            self._flow_started(fid, t)
        self.follow.orphans(self, t)  # followers of leaders whose group changed wake
        for g in list(self.groups.values()) if self.frozen and self.next_wake_ps() <= t else ():
            if g.frozen is not None and g.frozen.wake_ps <= t:
                fz = g.frozen
                advance = self._wake(g, t)
                if isinstance(fz.memo, tuple) and self.cfg.skip:  # now in the recorded steady state: skip on
                    if self.hpcc:  # once the pipelines have refilled (one path RTT; see _decide)
                        g.refill = (replay.recorded_goodputs(fz.memo, g.flows),
                                    t + max(self.flows[f].path_rtt_ps for f in g.flows))
                    else:
                        self._skip_after_memo(g, t, fz, advance)
        parts = self.parts
        if parts.live and parts.next_wake_ps() <= t:
            parts.due(self, t)
        if samples is None:
            return
        self.next_sample_ps = t + self.sample_ps
        if t < self.check_from_ps or not self._checks_due(t):
            return  # no group to sample, look up or check now (all backed off or frozen)
        store_samples(samples, self.flows, self.groups, self.keep_samples, max(self.samples, BACKOFF_KEEP_SAMPLES))
        if parts.live:
            parts.check_loads(self, t)
        if self.memo is not None:
            # looked up once every flow has a sample taken now: a recording starts, and a
            # replay jumps, from known state
            for gid in sorted(self.groups):
                g = self.groups[gid]
                if g.memo_checked or g.frozen is not None or g.next_check_ps > t:  # (not sampled now)
                    continue
                if parts.holds(g):
                    continue  # (its state is partly fast-forwarded)
                now = replay.due(g, t, self.flows, self.hpcc, self.rerouted, self.window_ps)
                if now is False:
                    g.memo_checked = True
                elif now:
                    self._memo_lookup(g, t)
        self._decide(t)
        self._checks_due(t)

    def _checks_due(self, t: int) -> bool:
        """Whether a group not frozen is due for sampling or a check at ``t``; sets
        ``check_from_ps``, the earliest such time, which holds until the groups change."""
        self.check_from_ps = self.table.first_check_ps()
        return self.check_from_ps <= t

    # -- flow table ----------------------------------------------------------------------
    def _flow_started(self, fid: int, t: int) -> None:
        if fid in self.net_finished or fid in self.rings.carried or fid in self.flows:
            return  # (a carried flow; one handed back, in the table since; or done)
        if fid in self.ungrouped:
            self.ungrouped_active.add(fid)
            return
        net = self.net
        f = net.flows[fid]
        rtt_ps, win_bytes = net.qp_window(f)
        data = net.path_of(fid)  # its path's RTT from its own ports (no BFS per source)
        fs = FlowState(f, rtt_ps, win_bytes if net.cfg.has_win else 0, self.mtu, self.hdr_bytes, data,
                       net.path_of(fid, acks=True), ff.path_rtt_ps(data, self.mtu), t)
        self.flows[fid] = fs
        if self.rings.carried:  # (a new flow is no ring member yet)
            behind = net.dag_rt.fifo_after[fid] if net.dag_rt is not None else -1
            self._handed_back(self.rings.crossed(fs.ports, t, self.heap_of, behind), t)
        if self.parts.on:
            for part in self.parts.crossing(fs):
                self.parts.call(self, part, t)
            self.parts.changed(fs, t)
        merged = self.table.touching(fs.ports)
        for g in merged:
            if g.frozen is not None:
                self.wakes_interrupted += 1
                if g.frozen.memo is None:  # (a steady freeze: the state its flows keep)
                    self.successors.joined(g, self.flows)
                self._cut_ring(g)
                self._wake(g, t)
        self.table.add(fs, merged, t)

    def _flows_finished(self, done, t: int) -> None:
        """Completions ``(flow id, finish_ps, start_ps)``: out of the flow table (most, NVLink flows by
        rates, were never in it)."""
        finished, active, flows = self.net_finished, self.ungrouped_active, self.flows
        rings = self.rings.on
        for fid, t_fin, t_start in done:
            finished.add(fid)
            if fid in flows:
                fs = flows[fid]
                if self.parts.on:
                    self.parts.changed(fs, t)
                self.successors.finished(fs, t_fin)
                if rings and fs.ring:
                    self.rings.learned(fs, t_fin, t_start)
                self.table.remove(fid, t)
            elif fid in self.rings.carried:
                self.rings.finished(fid, t_fin)
            elif active:
                active.discard(fid)
            if rings:
                self.rings.received_ps.pop(fid, None)

    def reroute(self, t: int, apply) -> None:
        """A link failure at boundary ``t``: every frozen group wakes, ``apply()`` fails the
        link, then each active flow follows its new route (flows left without a path leave the
        table) and the groups are rebuilt, with no samples from before ``t`` and no memo lookup."""
        self.parts.wake_all(self, t)
        for gid in sorted(self.groups):
            g = self.groups[gid]
            if g.frozen is not None:
                self.wakes_interrupted += 1
                self._wake(g, t)
        self.successors.rerouted(self.flows)  # no state of the old routes is handed on, nor a template
        self.rings.rerouted()
        for fs in self.flows.values():
            fs.ring = False
        apply()
        # carried flows go on as packets on their new routes (but those whose last byte arrived: only
        # their last ACK is left), into the table now, so rerouted below
        handed = [fid for fid in sorted(self.rings.carried) if self.rings.undelivered(fid, t)]
        for fid in handed:
            self.rings.hand_back(fid, t, self.heap_of)
        self._handed_back(handed, t)
        net = self.net
        no_path = net.no_path
        nvs = net.topo.nvswitches
        for fid in sorted(self.ungrouped):  # NVLink flows rerouted over the NIC fabric join the groups
            if fid not in no_path and net.path_of(fid)[0].peer.node_id not in nvs:
                self.ungrouped.discard(fid)
                if fid in self.ungrouped_active:
                    self.ungrouped_active.discard(fid)
                    self._flow_started(fid, t)
        for fid in sorted(self.flows):
            fs = self.flows[fid]
            if fid in no_path:
                del self.flows[fid]
                continue
            data, ack = net.path_of(fid), net.path_of(fid, acks=True)
            fs.set_path(data, ack, ff.path_rtt_ps(data, self.mtu))
            fs.samples.clear()
        self.rerouted.update(self.flows)
        for g in self.table.regroup(t):
            g.newest_start_ps = t  # rerouted flows settle as new ones do
            g.memo_checked = True
        self.check_from_ps = 0
        if self.starts_on:
            self.starts_on = ff.index_starts(self.net, self.fluid_fids)

    # -- steadiness ----------------------------------------------------------------------
    def _decide(self, t: int) -> None:
        self.parts.open_search(t, self.sample_ps)
        for gid in sorted(self.groups):
            g = self.groups[gid]
            if g.frozen is not None or g.next_check_ps > t:
                continue
            back_off(g, t, self.sample_ps, self.samples)  # many flows, unsteady for long: checked less often
            if g.refill is not None:
                # HPCC after a memo jump, one path RTT on (its pipelines refill), or a ring step
                # handed over, at once: skip on with those goodputs
                if t >= g.refill[1] and all(self.flows[f].samples and self.flows[f].samples[-1].t_ps == t
                                            for f in g.flows):
                    gps, g.refill = g.refill[0], None
                    if min(gps.values()) > 0:
                        self._try_freeze(g, t, gps)
                continue
            if self.parts.on and self.parts.holds(g):
                if self.parts.search:
                    self.parts.find(self, g, t)  # (partly fast-forwarded: never frozen whole)
                continue
            gps, flows = self._line_rate_goodputs(g, t) if self.line_rate_on else (None, None)
            by_shares = gps is not None
            if gps is None and self._probe_fails(g):
                self._unsteady(g, t)
                continue  # (the answer of the tests below, at the cost of one flow's)
            if flows is None:
                flows = [self.flows[f] for f in sorted(g.flows)]
            if gps is None:
                gps = per_flow(flows, goodput, g.formed_ps, g.newest_start_ps, self.samples, self.theta,
                               self.min_span_packets, failed=g.probe, slot=0)
            if gps is None and self.early_on:
                gps = self._early_goodputs(flows, g, t)
            if gps is None:
                self._unsteady(g, t)
                continue
            if self.steady_tests_fail(flows, gps):
                continue
            if self.memo is not None and g.memo_base is not None:
                replay.record(self.memo, g, t, gps, self.flows, self.hpcc)
            if self.cfg.skip:
                self._try_freeze(g, t, gps)
                if by_shares and g.frozen is not None:
                    self.line_rate_freezes += 1
            self.follow.froze(self, g, t)  # a leader's followers mirror it

    def steady_tests_fail(self, flows: list, gps: dict) -> bool:
        """The tests of flows (sorted by id) steady one by one at goodputs ``gps``, taken together:
        True when a queue fills or HPCC is unfair (:mod:`.steady`). Under DCQCN with windows, replaces the
        goodputs of window-bound flows by their FIFO shares (:func:`.steady.fifo_shares`)."""
        if (not self.hpcc or not self.net.cfg.has_win) and fills_a_queue(flows, gps, self.facts, self.theta):
            return True
        if self.hpcc and hpcc_unfair(flows, gps, self.facts):
            return True
        if not self.hpcc and self.net.cfg.has_win:
            fifo_shares(flows, gps, self.samples, self.facts)
        return False

    def _unsteady(self, g: Group, t: int) -> None:
        """Group ``g`` is not steady as a whole at ``t``: its steady parts are fast-forwarded (not in
        a group backed off: unsettled for long, its flows' rates keep moving, and a search costs a
        goodput test per flow)."""
        if self.parts.search and len(g.flows) > 1 and not g.backoff_periods:
            self.parts.find(self, g, t)

    def _probe_fails(self, g: Group) -> bool:
        """Whether the flows that failed ``g``'s last tests fail them again: its steady goodput
        (:func:`.steady.goodput`) and, under HPCC's early freezing, its recent goodput (both are
        functions of the flow's samples alone, so the whole group's tests would fail too)."""
        fid = g.probe[0]
        if fid < 0 or fid not in g.flows:
            return False
        fs = self.flows[fid]
        if goodput(fs, g.formed_ps, g.newest_start_ps, self.samples, self.theta, self.min_span_packets) is not None:
            return False
        if not self.early_on:
            return True
        fid = g.probe[1]
        return fid >= 0 and fid in g.flows and recent_goodput(
            self.flows[fid], g.formed_ps, g.newest_start_ps, self.samples, HPCC_EARLY_MIN_PACKETS) is None

    def _line_rate_goodputs(self, g: Group, t: int) -> tuple:
        """DCQCN: ``(goodputs, flows)``: the NICs' round-robin shares of a group whose flows all send
        at their line rate (:func:`.steady.line_rate_shares`) or None, and the group's flows sorted
        by id where it sorted them (else None). The flow that failed last time is tested first (a
        group under way fails at one flow in most checks)."""
        flows = self.flows
        settled_from_ps = g.newest_start_ps  # (a departure leaves the rest's pipelines as they are: no wait)
        fid = g.probe[2]
        if fid >= 0 and fid in g.flows and not line_rate_ready(flows[fid], t, settled_from_ps):
            return None, None
        ordered = [flows[f] for f in sorted(g.flows)]
        for fs in ordered:
            if not line_rate_ready(fs, t, settled_from_ps):
                g.probe[2] = fs.fid
                return None, ordered
        return line_rate_shares(ordered, self.facts, self.line_rate_models), ordered

    def _early_goodputs(self, flows: list, g: Group, t: int):
        """HPCC: the fluid steady state's goodputs (:func:`.steady.hpcc_early`) of a group not
        yet steady, or None. Not for a group that a known flow start would wake first (HPCC's
        join depends on the state it meets, here an unsettled one)."""
        measured = per_flow(flows, recent_goodput, g.formed_ps, g.newest_start_ps, self.samples,
                            HPCC_EARLY_MIN_PACKETS, failed=g.probe, slot=1)
        if measured is None:
            return None
        model = hpcc_early(flows, measured, self.facts, HPCC_EARLY_TOLERANCE, HPCC_EARLY_WINDOW_SPREAD,
                           self.hpcc_models)
        if model is None:
            return None
        end = min(ff.wake_by(fs, t, fs.una(), model[fs.fid], self.cfg.margin_rtts) for fs in flows)
        if self._wake_at(g, t, end) < end // self.window_ps * self.window_ps:
            return None
        return model

    # -- fast-forward --------------------------------------------------------------------
    def _wake_at(self, g: Group, t: int, wake_ps: int) -> int:
        """``wake_ps`` on the window grid, before a known flow start on ``g``'s ports."""
        return ff.cap_wake(self.starts_on, g.ports, t, (wake_ps // self.window_ps) * self.window_ps, self.window_ps)

    def _try_freeze(self, g: Group, t: int, gps: dict) -> None:
        done_ps: list[int] = []  # per flow: when its steady state ends
        for fid in g.flows:
            fs = self.flows[fid]
            done = ff.wake_by(fs, t, fs.una(), gps[fid], self.cfg.margin_rtts)
            rp_due = fs.samples[-1].rate_change_ps
            if 0 <= rp_due < done:  # the DCQCN rate changes then: the steady state ends there
                done = rp_due
            done_ps.append(done)
        wake = self._wake_at(g, t, min(done_ps))
        if wake - t >= self.min_skip_ps:
            self.successors.froze(g, self.flows, gps)
            self._freeze(g, t, wake, gps)

    def _freeze(self, g: Group, t: int, wake_ps: int, gps: dict, memo=None, una0: dict | None = None,
                inflight0: dict | None = None) -> None:
        c0 = thread_time()
        events, busy = ff.freeze(self.lps, g.ports, g.flows)
        self.heaps_changed = True
        self.lp_work_s += thread_time() - c0
        if una0 is None:
            una0 = {fid: self.flows[fid].una() for fid in g.flows}
        inflight0 = {fid: ff.inflight(self.flows[fid], t, gps.get(fid, 0) or
                                      self.flows[fid].line_rate_bps / BPS_PER_BYTE_PS, inflight0) for fid in g.flows}
        g.frozen = Frozen(t, wake_ps, events, busy, gps, una0, inflight0, memo)
        if self.hpcc:
            self.crowded.update(crowded_nic_flows([self.flows[f] for f in g.flows], HPCC_CROWDED_NIC))
        self.frozen.add(g)
        self.skips += 1

    def _wake(self, g: Group, t: int) -> dict:
        """Wake ``g`` at ``t``: advance its flows, return its events and ports; the bytes advanced."""
        fz = g.frozen
        assert fz is not None
        g.frozen = None
        self.frozen.discard(g)
        self.heaps_changed = True
        d = t - fz.t0
        self.skipped_ps += d
        self.skipped_flow_ps += d * len(g.flows)
        flows = {fid: self.flows[fid] for fid in g.flows}
        if fz.memo is not None:
            advance = replay.apply(g, fz, d, self.flows, self.net, self.heap_of, self.hpcc)
        else:
            advance = {}
            for fid, fs in flows.items():
                advance[fid] = ff.whole_packets(fs, fz.goodput[fid], d, fz.una0[fid], fz.inflight0[fid])
        # a steady skip had no CNP: a DCQCN alpha decays; a memo jump replays a transient that may have had some
        # (DCTCP's alpha decays per batch in SendQP.advance)
        dcqcn = self.net.cfg.cc_mode == CC_DCQCN
        decay = cc.dcqcn_alpha_decay(self.net.cfg, d) if dcqcn and fz.memo is None else None
        self.skipped_bytes += sum(b for b in advance.values() if b > 0)
        self.follow.lead_woke(self, g, t, fz, advance)  # a leader's followers wake with it
        carried = ff.advance(flows, g.ports, fz, d, advance, self.net, self.heap_of, self.ack_every_pkts,
                             self.ack_bytes, decay)
        if self.on_carried is not None:
            self.on_carried(carried, fz.t0, d)
        c0 = thread_time()
        ff.thaw(fz, t, d, self.heap_of, self.net.cfg.rp_timer_ps)
        self.lp_work_s += thread_time() - c0
        for fs in flows.values():  # the history before the skip does not describe what follows
            fs.samples.clear()
            fs.woke_ps = t
        g.formed_ps, g.next_check_ps, g.backoff_periods, g.unsettled = t, 0, 0, 0
        self.check_from_ps = 0  # due for sampling again
        return advance

    # -- lock-step rings (ringstep.py) ------------------------------------------------------
    def _ring_fits(self, fid: int, t: int, tpl) -> bool:
        """Whether flow ``fid``, starting at ``t`` with template ``tpl``, meets what the template met:
        only ring members (of the flow table as the last boundary left it, and carried flows) cross
        its ports, and no other flow's data its data ports but its predecessor's on its route, within
        two path RTTs and two windows of that one's end."""
        net, rings = self.net, self.rings
        data = net.path_of(fid)
        route = (tuple(data), net.flows[fid].pg)
        near_end_ps = tpl.fct_ps - 2 * ff.path_rtt_ps(data, self.mtu) - 2 * self.window_ps
        by_port, flows = self.table.port_flows, self.flows
        for p in data:
            for f in by_port.get(p, ()):
                fs = flows[f]
                if not fs.ring or (p in fs.data_ports and ((tuple(fs.data_ports), fs.pg) != route
                                                           or t - fs.start_ps < near_end_ps)):
                    return False
            for f in rings.on_port.get(p, ()):
                if f == fid:
                    continue
                other = rings.route(f)
                if p in other[0] and (other != route or t - rings.carried[f].start_ps < near_end_ps):
                    return False
        for p in net.path_of(fid, acks=True):
            for f in by_port.get(p, ()):
                if not flows[f].ring:
                    return False
        return True

    def _handed_back(self, fids: list, t: int) -> None:
        """Carried flows handed back to packets at ``t`` join the flow table now: a flow starting
        beside them meets them in its group (it would otherwise take a successor's state alone)."""
        if fids:
            self.heaps_changed = True  # (their QPs' first events)
        for fid in fids:
            self._flow_started(fid, t)

    def _ring_carried(self, moved: dict, t0_ps: int, d_ps: int) -> None:
        if self.on_carried is not None:
            self.on_carried(moved, t0_ps, d_ps, False)  # (not on the ports' byte counters)

    def _cut_ring(self, g: Group) -> None:
        """A flow joined frozen group ``g``: its ring members' steps are no templates."""
        for f in g.flows:
            fs = self.flows[f]
            if fs.ring:
                fs.ring = False
                self.rings.forget(fs)

    # -- memoization -----------------------------------------------------------------------
    def is_new(self, fid: int, g: Group) -> bool:
        """Flow ``fid`` started within ``FRESH_WINDOWS`` windows of group ``g``'s forming."""
        return replay.is_new(self.flows[fid], g, self.window_ps)

    def _memo_lookup(self, g: Group, t: int) -> None:
        g.memo_checked = True
        after_end = self.successors.handed_after_end
        if self.successors.take_over(g, t, self.flows, self.net_finished, lambda f: self.is_new(f, g)):
            if self.successors.handed_after_end > after_end:  # a lock-step ring's step: a ring member
                for f in g.flows:
                    self.flows[f].ring = True
            return  # a ring's next step: its last steady state again, from this boundary
        parts = group_parts(g, self.flows, {f for f in g.flows if self.is_new(f, g)}, hpcc=self.hpcc,
                            port_labels=self.port_labels)
        hit = replay.lookup(self.memo, g, t, self.flows, self.window_ps, self.cfg.margin_rtts, parts)
        if hit is None:
            self.memo_misses += not self.follow.follow(self, g, t)
        elif hit is not replay.REFUSED:
            entry, mapping, wake = hit
            if ff.cap_wake(self.starts_on, g.ports, t, wake, self.window_ps) < wake:
                return  # a known flow start would cut the jump short
            self.memo_hits += 1
            self._freeze(g, t, wake, {}, (entry, mapping))

    def _skip_after_memo(self, g: Group, t: int, fz: Frozen, advance: dict) -> None:
        """After a whole memo jump (DCQCN): fast-forward on with the recorded goodputs."""
        plan = replay.plan_after_jump(g, t, fz, advance, self.flows, self.cfg.margin_rtts)
        if plan is None:
            return
        gps, una, wake = plan
        wake = self._wake_at(g, t, wake)
        if wake - t >= self.min_skip_ps:
            self._freeze(g, t, wake, gps, una0=una, inflight0=fz.inflight0)

    # -- end of run ----------------------------------------------------------------------
    def settle(self, t: int) -> None:
        """For a run that stops at boundary ``t`` with flows unfinished: wake every frozen
        group and part and count the bytes of rate-level NVLink flows and carried ring steps sent by ``t``."""
        self.parts.wake_all(self, t)
        for gid in sorted(self.groups):
            g = self.groups[gid]
            if g.frozen is not None:
                self._wake(g, t)
        for dom in self.fluid_domains.values():
            if dom.nvs.node_id in self.heap_of:
                dom.settle(t)
        self.rings.settle(t, self.heap_of)

    def quiet_until_ps(self) -> int:
        """The first boundary this hook must see if no flow starts or ends before it (wakes aside)."""
        return self.next_sample_ps if self.sample_ps > self.window_ps else max(self.next_sample_ps, self.check_from_ps)

    def next_wake_ps(self) -> int:
        """Earliest planned wake of a frozen group or part (``INF_PS`` when none)."""
        w = self.parts.next_wake_ps() if self.parts.live else INF_PS
        groups = self.groups
        for g in self.frozen:
            wake_ps = g.frozen.wake_ps
            if wake_ps < w and groups.get(g.gid) is g:
                w = wake_ps
        return w

    def stats(self) -> dict:
        return {"skips": self.skips, "skipped_ps": self.skipped_ps, "skipped_flow_ps": self.skipped_flow_ps,
                "skipped_bytes": self.skipped_bytes, "memo_hits": self.memo_hits, "memo_misses": self.memo_misses,
                "wakes_interrupted": self.wakes_interrupted, "part_skips": self.parts.skips,
                "line_rate_freezes": self.line_rate_freezes,
                "hpcc_crowded_nic_flows": len(self.crowded),
                "fluid_shared_flows": sum(len(d.shared) for d in self.fluid_domains.values()),
                "memo_follows": self.follow.follows, "memo_follows_steady": self.follow.steady,
                "memo_successors": self.successors.handed,
                "memo_successors_after_end": self.successors.handed_after_end, "successors_on": self.successors.on,
                "follow_on": self.follow.on, **self.rings.stats(),
                "memo_entries": len(self.memo) if self.memo is not None else 0,
                "memo_bytes": self.memo.size_bytes() if self.memo is not None else 0}
