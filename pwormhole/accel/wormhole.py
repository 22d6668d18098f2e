"""Wormhole acceleration: conflict groups, steady-state fast-forward, memoization.

After F. Long et al., "Supercharging Packet-level Network Simulation of Large
Model Training via Memoization and Fast-Forwarding" (NSDI 2026), sections
4-6, and DESIGN.md ("Wormhole acceleration"). Everything here runs at window
boundaries (DESIGN.md invariant 3), after the outboxes are delivered; nothing
touches the per-event path.

* **Conflict groups.** Each active flow's ports are the egress ports its data
  and its ACKs cross (followed with the same ECMP choices the packets make).
  Flows sharing a port are in one group (connected components); groups are
  merged when a new flow touches several and split when a flow leaves. With
  the ACK direction included a group owns every packet that crosses its
  ports, so it can be frozen without touching other traffic.
* **Steady state.** Every ``sample_ps`` each flow's congestion-control rate
  (DCQCN: current rate; HPCC: window over base RTT) and its acknowledged
  bytes (timed by the ACK that advanced them) are sampled. A flow is steady
  when, over its last ``samples`` samples taken since its group last changed,
  ``(max - min) / mean < theta`` for the rate, and over the goodput span (the
  last samples holding ``min_span_packets`` packets, ACK-timed from
  :data:`SETTLE_RTTS` path RTTs after the group's newest flow started) the
  goodputs of its first and second halves differ by less than ``theta``, its
  bytes in flight change by less than ``theta`` of the bytes acknowledged (plus
  :data:`INFLIGHT_SLACK_PACKETS`) over the span and over up to
  :data:`INFLIGHT_BASELINE_SPANS` spans of its history (a sender faster than its
  goodput fills a queue), and it received no CNP over the span (each one leads to
  a cut). A group whose flows send more into one of its switch ports than it
  forwards is not steady either (:meth:`Wormhole._fills_a_queue`; DCQCN, and HPCC
  without a window), nor, under HPCC, one whose flows are far from their max-min
  shares at its saturated ports (:meth:`Wormhole._hpcc_unfair`: HPCC drifts
  towards them slowly).
  A group is steady when all its flows are. ``samples`` and the span default by
  congestion control (:data:`SAMPLES`, :data:`MIN_SPAN_PACKETS`). A group of many
  flows unsteady for long is sampled less often (:data:`BACKOFF_AFTER_SAMPLES`).
* **Fast-forward.** A steady group is frozen at boundary ``T0``: its events
  leave the heaps and its ports are held busy, so they keep their queues and
  buffer occupancy, and packets of other flows reaching them wait. It wakes at
  the boundary before its earliest predicted completion minus ``margin_rtts``
  RTTs of its own path, and never so late that fewer bytes are left than it has
  in flight (an advance then never falls short of ``goodput x D``), and never
  after a flow list's next known start on its ports (such a flow would wait at a
  frozen port until the boundary after its start), or at the first boundary
  after a new flow touches its ports. Under DCQCN it also wakes before a flow's
  pending rate-increase (RP) timer when that would change the rate, and never
  freezes a flow with a CNP awaiting its rate-decrease check. On
  waking after ``D`` ps every flow advances by ``goodput x D`` bytes rounded
  down to whole packets, in the sender, the receiver and the packets in flight
  (sequence numbers; HPCC INT records get ``+D`` and the bytes their ports
  would have sent), and the frozen events return shifted by ``D``, except the
  DCQCN RP timers, which keep their own time (a rate recovery runs on while the
  packets are frozen); a frozen DCQCN flow received no CNP, so its alpha decays
  once per ``ALPHA_RESUME_INTERVAL`` of ``D``.
* **Memoization** (:mod:`pwormhole.accel.memo`): when a group forms, its key
  (canonical flow-port graph with port and CC settings, quantized rates, and
  which flows are new) is looked up; on a hit the group skips its transient: it
  is frozen for the recorded convergence time and wakes with the recorded bytes
  advanced (plus the growth of the recorded flows' in-flight bytes: a frozen
  pipeline holds only the packets it had) and the recorded steady rates, then is
  fast-forwarded on with the recorded goodputs: at once under DCQCN, after one
  path RTT under HPCC (its pipelines refill first: HPCC's reaction to the next
  flow joining them depends on the packets they have in the queues). A jump
  cut short by a new flow advances in proportion to the time spent. Under DCQCN
  every new group is looked up, unless a flow's rate is below its line rate (a
  DCQCN cut: its recovery timers are not in the key): a fresh one (all its
  flows started within ``FRESH_WINDOWS`` windows: a collective step), and one
  that met flows under way (a ring step joining the other ring's flows on shared
  NICs, or what is left when a flow ends), whose flows sit at the rates the key
  records. Under HPCC only fresh groups are: a window's history is not in the
  key (joins replayed gave 4.3% p99 FCT error on the 64-GPU GPT layer). A group
  whose flow has sent its last byte is looked up after that flow leaves (the
  group changes within an RTT: a recording would never finish). A hit is
  refused when a flow would not keep its pipeline, 4 packets and ``margin_rtts``
  RTTs of data after the jump (its completion is simulated packet by packet),
  when a flow list's known start would cut the jump short, and when a flow's
  pipeline refill could be off by more than :data:`REFILL_BUDGET` of its size.

**Same decisions on every rank** (DESIGN.md invariant 4). Decisions use only
replicated data: the flow table (flows started and finished, exchanged at
each boundary) and the samples, which each rank takes of the flows whose
sender it owns (:meth:`Wormhole.local_report`) and which are exchanged before
:meth:`Wormhole.on_boundary` runs. Byte advances are computed from sampled
values only, so the sender's rank and the receiver's rank advance a flow by
the same amount; each rank then changes only its own objects (its heap, its
QPs, receivers and port queues).
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections import deque
from itertools import chain, islice
from dataclasses import dataclass, replace
from heapq import heapify, heappush

from ..errors import InputError
from ..lp.engine import INF_PS
from ..net.nodes import HostPort, SwitchPort
from ..net.cc import TM_RP, min_window_bytes
from ..net.packet import (
    EV_ARRIVE_HOST, EV_ARRIVE_SWITCH, EV_NIC_WAKE, EV_TIMER, EV_TX_DONE, P_FLOW, P_INPORT, P_INT, P_SEQ, P_TYPE,
    T_PFC,
)



@dataclass
class AccelConfig:
    """Wormhole parameters (defaults chosen by ``bench/sensitivity.py``; see bench/RESULTS.md).

    Attributes:
        theta: steadiness threshold on ``(max - min) / mean`` of the sampled rates (and on the
            goodput span's halves and the drift of the bytes in flight); 0 picks the measured
            default of the congestion control (:data:`THETA`).
        samples: number of samples ``l`` a flow must be steady over; 0 picks the
            measured default of the congestion control (:data:`SAMPLES`).
        sample_ps: sampling period (0: one synchronization window ``L``).
        margin_rtts: wake this many RTTs (of the flow's own path) before the earliest
            predicted completion.
        min_span_packets: goodput is measured over at least this many packets; 0 picks
            the measured default of the congestion control (:data:`MIN_SPAN_PACKETS`).
        min_skip_ps: do not freeze for less than this (0: 8 windows).
        skip: fast-forward steady groups.
        memo: memoize transients.
        fluid_nvlink: model the flows inside each server's NVSwitches by rates, not packets
            (:mod:`pwormhole.accel.fluid`; off by default: it departs from issue 4's rule
            that completions are simulated packet by packet).
    """

    theta: float = 0.0
    samples: int = 0
    sample_ps: int = 0
    margin_rtts: int = 1
    min_skip_ps: int = 0
    min_span_packets: int = 0
    skip: bool = True
    memo: bool = True
    fluid_nvlink: bool = False

    def resolved(self, hpcc: bool) -> "AccelConfig":
        """A copy with the fields whose 0 picks a default by congestion control (``theta``,
        ``samples``, ``min_span_packets``) set to the values in effect under HPCC (``hpcc``)
        or DCQCN: :data:`THETA`, :data:`SAMPLES`, :data:`MIN_SPAN_PACKETS`."""
        return replace(self, theta=self.theta or THETA[hpcc], samples=self.samples or SAMPLES[hpcc],
                       min_span_packets=self.min_span_packets or MIN_SPAN_PACKETS[hpcc])


MIN_SPAN_PACKETS = {False: 100, True: 500}
"""Default goodput span by congestion control (``{hpcc?: packets}``), from
``bench/sensitivity.py --sweep span`` (bench/RESULTS.md): DCQCN flows in a steady
state hold their rate exactly, so 100 packets (timed by ACKs) give the goodput to
0.1% (50 let a 100-flow incast freeze on a passing agreement: 5% error, and a flow
at the line rate whose NIC starts carrying a longer-RTT flow's ACKs freeze while
still filling its window: 4.5%, ``test_line_rate_flow_waits_for_the_acks_of_a_longer_path``); HPCC's
windows drift slowly towards the fair share (a few % over 100 us), and spans under
~500 packets let a drifting flow look steady (iteration error > 1%)."""

SETTLE_RTTS = 1.5
"""A goodput span is ACK-timed from this many RTTs of the flow's path after the newest
flow of its group started (as reported at a boundary). A ring step's flow and the
reverse flow start together: the data each sends before the other's ACKs reach their
shared egress port (half an RTT) is acknowledged until 1.5 RTTs after the start, at a
goodput off the steady one (4% above for a 16.8 MB DP step of GPT-7B at sequence 2048,
which a 580 us skip turned into a 556 KB lead, 48 us at the later shared rate: 5.5%
FCT error; 0.8% below in ``test_goodput_is_measured_after_the_reverse_acks_arrive``).
Groups of flows with different RTTs can take longer to settle; the span's halves
check covers them."""

THETA = {False: 0.02, True: 0.005}
"""Default ``theta`` by congestion control (``{hpcc?: threshold}``), from ``bench/sensitivity.py``
and the HPCC rows of bench/RESULTS.md. DCQCN flows in a steady state hold their rate exactly,
and theta from 0.01 to 0.2 changes nothing on its rows. An HPCC flow's window settles through a
damped oscillation of its goodput (a DP ring step of GPT-7B on a GPU's NIC: 156-176 Gb/s over
the first 60 us, then 164.7), and with 0.02 a 500-packet span read across its crest with halves
agreeing to 1.2%: the DP flows of the 32-GPU distributed-optimizer iteration froze 1.4% fast and
the iteration ended 1.16% early (64 GPUs: 1.11%). With 0.005: 0.26% and 0.09%; 0.01: 0.64% and
0.60%. The price is on the one-layer rows (16 GPUs: 2.72x -> 1.64x events)."""

SAMPLES = {False: 4, True: 8}
"""Default ``samples`` by congestion control: 4 are enough under DCQCN (a change
of rate is a CNP or a timer step, far larger than theta); HPCC adjusts its window
every ACK and needs 8 (4 gave 2-3% iteration error)."""

BACKOFF_AFTER_SAMPLES = 64
"""A group of at least :data:`BACKOFF_MIN_FLOWS` flows still not steady this many sampling
periods after it formed (merged, split or woke) is sampled and checked only every
:data:`BACKOFF_EVERY` periods from then on. Sampling costs per flow and period, while a group's
packets per period are bounded by its ports: HPCC's S3 (100 DCQCN flows into one host, a CNP
every few us) is never steady and sends ~12 packets a window, and sampling its 100 flows at
every boundary made Wormhole mode 21% slower than packet mode (now ~5-8%). The checks then
read sparser samples (the rate test spans 8 times as long, and swings between samples go
unseen; CNPs are still counted and DCQCN rate-timer steps still known), so a freeze comes
later and on a longer view, not on less evidence of a change. Groups of a
few flows keep every check: a DCQCN flow without a window is steady only between its
rate-increase steps, and a check every 8 windows missed such a freeze and moved a joining
flow's FCT by 2% (``test_alpha_decays_while_frozen``: a chaotic case). Training groups
settle well within 64 periods (DCQCN ring steps in ~10), and the bench rows make the same
decisions either way."""

BACKOFF_MIN_FLOWS = 16
"""See :data:`BACKOFF_AFTER_SAMPLES`."""

BACKOFF_EVERY = 8
"""See :data:`BACKOFF_AFTER_SAMPLES`."""

REFILL_BUDGET = 0.01
"""A memo replay advances each flow by the bytes the recorded flow had acknowledged plus
the growth of its bytes in flight (a frozen pipeline keeps only its own packets). That is
exact when every flow of the group refills alike, or at a round-robin NIC (a ring step
joining the other ring's flows on a GPU's NIC: 0.03% mean error at 64 GPUs). A flow whose
pipeline grew more than the others' and that shares a FIFO switch queue instead loses that
excess's place in the queue, up to ``excess x (1 - goodput / line rate)`` bytes (a 2 MB
flow joining a 20 MB one at a host: 0.75% early; 400 KB: 3.8% early). A hit is refused
when that bound exceeds this fraction of a flow's size
(``test_short_flow_joining_one_under_way_is_not_replayed``). The bound is applied
whatever the queue discipline, so it also refuses some hits that would be exact at a
round-robin NIC (speed, not accuracy: the GPT rows keep their hits)."""

HPCC_FAIRNESS = 0.2
"""Under HPCC a group is not steady while a flow's goodput is more than this fraction off its
max-min share at the group's saturated ports (:meth:`Wormhole._hpcc_unfair`). On the 16 HPCC
scenarios of ``bench/random_small.py``, 0.1 and 0.2 give the same errors (mean of the
per-scenario means 0.18% -> 0.12%, none over 1%; scenario 10 1.01% -> 0.00%) and 0.2 is faster
on one (1.31x -> 1.67x); the HPCC bench rows are the same with either."""

HPCC_SATURATION = 0.03
"""A port counts as saturated for :meth:`Wormhole._hpcc_unfair` when its data and ACK load
reach ``1 - HPCC_SATURATION`` of HPCC's target utilization (``U_TARGET``, 0.95) times its rate."""

OVERLOAD_SLACK = 0.005
"""A group is not steady when its flows (at their paced rates, or their goodputs when their
windows are full) and their ACKs send more than ``1 + OVERLOAD_SLACK`` times a switch port's
rate into it and one of them is not window-bound (:meth:`Wormhole._fills_a_queue`). Paced
rates are exact (the slack covers the per-packet rounding of the pacing); any overload grows
a queue until ECN cuts the senders or their windows fill, so the slack is kept small: 1%
more than the port's rate fills 120 KB in 800 us at 100 Gb/s."""

FIFO_SATURATION = 0.02
"""A switch port counts as saturated when the measured goodputs of the flows whose data
cross it (in wire bytes) and the ACKs crossing it load it to at least ``1 - FIFO_SATURATION``
of its rate (:meth:`Wormhole._fifo_shares`)."""

FIFO_SWEEPS = 50
"""At most this many Gauss-Seidel sweeps over the saturated ports' queue delays
(:meth:`Wormhole._fifo_shares`); they stop when every port's equation holds to
:data:`FIFO_TOLERANCE` of its rate (14 of the random small scenarios: 1 sweep in 22
solves of 26, at most 40). Two ports carrying almost the same flows leave the delay's
split between them nearly free and take hundreds; the measured goodputs then stand."""

FIFO_TOLERANCE = 1e-6
"""How closely each saturated port's equation must hold (a fraction of its rate) for
:meth:`Wormhole._fifo_shares` to take the solved shares."""

INFLIGHT_SLACK_PACKETS = 4
"""Over the goodput span a steady flow's bytes in flight may change by ``theta`` of the
bytes acknowledged plus this many packets. Without a window (``HAS_WIN 0``) two DCQCN
flows at the line rate into one port keep a constant rate and a constant goodput (half
each) while the queue grows by the line rate, until ECN cuts them; frozen there, a 2 MB
flow finished 25% early and another one 71% early
(``test_growing_queue_is_not_steady``)."""

INFLIGHT_BASELINE_SPANS = 4
"""The bytes-in-flight check is also made over up to this many goodput spans of the
flow's settled history: a pipeline growing by a few % of the goodput (4.5 packets per
100-packet span: a flow's ACKs queued behind a port still filling) passes one span's slack
but not four spans' (``test_flows_wait_for_a_filling_queue_to_stop_growing``)."""


def route_path(nodes, src: int, dst: int, h: int) -> list:
    """The egress ports a packet of ECMP hash ``h`` crosses from node ``src`` to ``dst``
    (the choices the per-packet path makes)."""
    node = nodes[src]
    out = []
    while node.node_id != dst:
        port = node.route_port(dst, h)
        out.append(port)
        node = port.peer
        if len(out) > 64:
            raise RuntimeError(f"routing loop from {src} to {dst}")
    return out


class FlowState:
    """Replicated facts of an active flow (no reference to rank-local objects)."""

    __slots__ = ("fid", "src", "dst", "pg", "size", "ports", "data_ports", "data_hops", "ack_ports", "samples", "gid",
                 "rtt_ps", "path_rtt_ps", "win_bytes", "mtu", "wire_bytes", "line_rate_bps", "start_ps")

    def __init__(self, flow, rtt_ps, win_bytes, mtu, hdr_bytes, data, ack, path_rtt_ps, start_ps):
        self.fid = flow.flow_id
        self.src = flow.src
        self.dst = flow.dst
        self.pg = flow.pg
        self.size = flow.size_bytes
        self.data_ports = data
        self.data_hops = [p for p in data if isinstance(p, SwitchPort)]  # the INT hops, in order
        self.ack_ports = ack
        self.ports = set(data) | set(ack)
        self.samples = deque()
        self.gid = -1
        self.rtt_ps = rtt_ps  # the QP's base RTT (the network's largest with HPCC's global_t)
        self.path_rtt_ps = path_rtt_ps  # this flow's own path: the wake margin is counted in these
        self.start_ps = start_ps  # the boundary that reported the start
        self.win_bytes = win_bytes
        self.mtu = mtu
        self.wire_bytes = mtu + hdr_bytes
        self.line_rate_bps = data[0].rate_bps

    def una(self) -> int:
        """Acknowledged bytes at the last sample (0 before the first)."""
        return self.samples[-1][2] if self.samples else 0

    def rate(self) -> int:
        """Congestion-control rate at the last sample (the line rate before the first): DCQCN's
        rate; HPCC's window over its base RTT (its pacing rate without a window)."""
        return self.samples[-1][1] if self.samples else self.line_rate_bps

    def pacing_rate(self) -> int:
        """The QP's pacing rate at the last sample (the line rate before the first). Under HPCC
        with ``GLOBAL_T`` the base RTT is the network's largest and the window the largest BDP, so
        the window over the base RTT is not the rate: 84.7 against 174.3 Gb/s on a GPU's NIC."""
        return self.samples[-1][7] if self.samples else self.line_rate_bps


class Group:
    __slots__ = ("gid", "flows", "ports", "formed_ps", "newest_start_ps", "frozen", "memo_checked", "memo_key",
                 "memo_base", "refill", "next_check_ps")

    def __init__(self, gid, flows, ports, formed_ps, newest_start_ps):
        self.gid = gid
        self.flows = flows  # set of flow ids
        self.ports = ports  # set of Port objects
        self.formed_ps = formed_ps  # when it last changed (formed, merged, split or woken)
        self.newest_start_ps = newest_start_ps  # the boundary that reported its latest flow start
        self.frozen = None  # Frozen while fast-forwarded
        self.memo_checked = False
        self.memo_key = None
        self.memo_base = None  # {fid: (acked, in-flight bytes), "@t": time} at the lookup (recording a transient)
        self.refill = None  # ((entry, mapping), time): after an HPCC memo jump, skip on from that time
        self.next_check_ps = 0  # neither sampled nor checked before this (see BACKOFF_AFTER_SAMPLES)


class Frozen:
    __slots__ = ("t0", "wake_ps", "events", "busy", "goodput", "una0", "inflight0", "memo")

    def __init__(self, t0, wake_ps, events, busy, goodput, una0, inflight0, memo=None):
        self.t0 = t0
        self.wake_ps = wake_ps
        self.events = events
        self.busy = busy
        self.goodput = goodput  # fid -> bytes per ps
        self.una0 = una0  # fid -> acked bytes at the freeze (sampled)
        self.inflight0 = inflight0  # fid -> bytes sent and not acknowledged at the freeze (sampled, or a bound)
        self.memo = memo  # (recorded entry, flow id -> recorded index) for a memo hit


class Wormhole:
    """The boundary hook of an accelerated run.

    Args:
        net: the :class:`~pwormhole.net.build.Network`.
        lps: the logical processes of this process (all of them in-process,
            this rank's one under MPI); their heaps are filtered when groups freeze.
        cfg: an :class:`AccelConfig`.
        memo: a :class:`~pwormhole.accel.memo.MemoCache` (None: no memoization).
        owner: node id -> LP (the plan; None: one LP), checked by ``fluid_nvlink``.

    Call :meth:`local_report` after the window's events (before the exchange)
    and :meth:`on_boundary` with every rank's reports merged.

    Counters: ``skips`` (freezes), ``skipped_ps`` (sum of frozen spans),
    ``skipped_flow_ps`` (frozen spans x flows frozen), ``memo_hits``,
    ``memo_misses``, ``wakes_interrupted``.
    """

    def __init__(self, net, lps, cfg: AccelConfig, memo=None, owner=None):
        self.net = net
        self.lps = lps
        self.cfg = cfg
        self.memo = memo if cfg.memo else None
        self.sample_ps = cfg.sample_ps or net.window_ps
        self.min_skip_ps = cfg.min_skip_ps or 8 * net.window_ps
        self.window_ps = net.window_ps
        eff = cfg.resolved(net.cfg.cc_mode == 3)
        self.min_span_bytes = eff.min_span_packets  # packets (multiplied by the MTU where used)
        self.samples = eff.samples
        self.theta = eff.theta
        self.keep_samples = max(self.samples, 2048)  # slow flows need a long span for min_span_packets
        self.hpcc = net.cfg.cc_mode == 3
        self.mtu = net.cfg.packet_payload_bytes
        host0 = next((nd for nd in net.nodes if not nd.is_switch), None)
        self.hdr_bytes = host0.hdr_bytes if host0 is not None else 36
        self.ack_bytes = host0.ack_bytes if host0 is not None else 48
        self.min_win_bytes = min_window_bytes(net.cfg)
        self.flows: dict[int, FlowState] = {}
        self.net_finished: set = set()  # flows finished (a start reported after its finish is ignored)
        self.groups: dict[int, Group] = {}
        self.port_gid: dict = {}
        self.next_gid = 0
        self.next_sample_ps = 0
        self.skips = 0
        self.skipped_ps = 0
        self.skipped_flow_ps = 0
        self.memo_hits = 0
        self.memo_misses = 0
        self.wakes_interrupted = 0
        self.rerouted: set = set()  # flows under way at a link failure (never looked up in the memo cache)
        self.woke = False  # a group woke at this boundary (the MPI loop then recomputes the next event time)
        self.heap_of = {nd.node_id: lp.heap for lp in lps for nd in lp.nodes}
        self.fluid_domains: dict = {}
        self.fluid_fids: set = set()  # the flows modelled by rates (replicated: every rank's)
        if cfg.fluid_nvlink:
            self._setup_fluid(owner)
        self.starts_on: dict = {}  # port -> sorted start times of the flow list's flows crossing it
        if net.dag_rt is None and (cfg.skip or cfg.memo):
            self._index_starts()
        ack_interval = max(1, net.cfg.l2_ack_interval)
        self.ack_every_pkts = max(1, -(-ack_interval // self.mtu))

    def _setup_fluid(self, owner) -> None:
        """Opt-in fluid NVLink (:mod:`pwormhole.accel.fluid`): domains, the hosts' flow
        table, and the ``EV_FLUID`` handler of the LPs."""
        from ..net.packet import EV_FLUID
        from .fluid import FluidDomain, build_domains
        net = self.net
        if net.cfg.cc_mode != 1:
            raise InputError("--fluid-nvlink needs DCQCN (CC_MODE 1): its NVLink rates leave out HPCC's window "
                             "control, which slows overlapping TP ring steps (5.5% mean FCT error measured on a "
                             "GPT-7B layer); use --cc dcqcn or leave --fluid-nvlink off")
        if net.failures:
            raise InputError("--fluid-nvlink does not model link failures (LINK_DOWN); drop the flag or the LINK_DOWN")
        owner = owner if owner is not None else [0] * len(net.nodes)
        self.fluid_domains, anchor_of = build_domains(net, net.flows, owner)
        self.fluid_fids = set(anchor_of)
        local = {nd.node_id for lp in self.lps for nd in lp.nodes}
        for fid in sorted(anchor_of):
            host = net.nodes[net.flows[fid].src]
            if host.node_id in local:
                if host.fluid is None:
                    host.fluid = {}
                host.fluid[fid] = self.fluid_domains[anchor_of[fid]]
        for lp in self.lps:
            handlers = list(lp.handlers)
            handlers[EV_FLUID] = FluidDomain.on_event
            lp.handlers = tuple(handlers)

    def _index_starts(self) -> None:
        """A flow list's start times are known in advance: index them by the ports each flow
        will cross (data and ACKs, with its ECMP choices), so that a group is not frozen over
        a known start on its ports (:meth:`_cap_wake`)."""
        nodes = self.net.nodes
        by_port: dict = {}
        for f in self.net.flows:
            if f.flow_id in self.fluid_fids or f.flow_id in self.net.no_path:
                continue
            h = nodes[f.src].flow_hash[f.flow_id]
            for p in set(self._path(f.src, f.dst, h)) | set(self._path(f.dst, f.src, h)):
                by_port.setdefault(p, []).append(f.start_ps)
        self.starts_on = {p: sorted(v) for p, v in by_port.items()}

    def _cap_wake(self, g: Group, t: int, wake_ps: int) -> int:
        """``wake_ps``, or the boundary at or before the first known flow start at or after
        ``t`` on ``g``'s ports if earlier: that flow then starts on running ports instead of
        waiting for the boundary after it at a frozen one (up to a window late)."""
        starts_on = self.starts_on
        if not starts_on:
            return wake_ps
        first = wake_ps
        for p in g.ports:
            st = starts_on.get(p)
            if st:
                i = bisect_left(st, t)
                if i < len(st) and st[i] < first:
                    first = st[i]
        if first < wake_ps:
            return first // self.window_ps * self.window_ps
        return wake_ps

    # -- boundary ------------------------------------------------------------------
    def local_report(self, t: int):
        """What this process contributes at boundary ``t``: ``(started flow ids,
        samples or None)``; samples are ``(flow id, (t, cc rate bps, acked bytes, time of the last ACK advance
        ps, highest byte sent, when a pending DCQCN rate-increase timer will change the rate or -1, CNPs
        received, pacing rate bps))`` of the flows whose sender is local, of the groups neither frozen nor
        backed off (:data:`BACKOFF_AFTER_SAMPLES`), taken every ``sample_ps``; the inner tuple is what
        :attr:`FlowState.samples` keeps."""
        started = []
        for lp in self.lps:
            if lp.started:
                started.extend(lp.started)
                lp.started.clear()
        samples = None
        if t >= self.next_sample_ps:
            samples = []
            hpcc = self.hpcc
            flows = self.flows
            groups = self.groups
            nodes = self.net.nodes
            local = self.heap_of
            # the active flows of the groups due (not every host): cost O(flows sampled)
            due = [g.flows for g in groups.values() if g.frozen is None and g.next_check_ps <= t]
            for fid in chain.from_iterable(due):
                src = flows[fid].src
                if src not in local:
                    continue
                qp = nodes[src].sqp.get(fid)
                if qp is not None:
                    rp_due = -1
                    if hpcc and qp.win_bytes:
                        rate = qp.cur_win * 8_000_000_000_000 // max(1, qp.base_rtt_ps)
                    else:
                        rate = qp.rate_bps
                        line = qp.max_rate_bps
                        if not hpcc:
                            if qp.decrease_cnp:
                                rp_due = t  # a CNP came: the next decrease check (<= 4 us) cuts the rate
                            elif rate < line or qp.target_rate_bps < line:
                                rp_due = qp.rp_due_ps  # the DCQCN rate changes when this timer fires
                    # max_sent: after a go-back-N, packets up to it are still in the network
                    nxt = qp.snd_nxt
                    if qp.max_sent > nxt:
                        nxt = qp.max_sent
                    samples.append((fid, (t, rate, qp.snd_una, qp.una_ps, nxt, rp_due, qp.cnps_rx, qp.rate_bps)))
            samples.sort()
        return started, samples

    @staticmethod
    def merge_reports(reports):
        """Merge the reports of several LPs or ranks (order-independent)."""
        started = sorted(f for st, _ in reports for f in st)
        sampled = [s for _, sm in reports if sm is not None for s in sm]
        any_samples = any(sm is not None for _, sm in reports)
        return started, (sorted(sampled) if any_samples else None)

    def on_boundary(self, t: int, done, report) -> None:
        """Flow-table updates then acceleration decisions, at boundary ``t`` (ps);
        ``report`` is the merged :meth:`local_report` of every LP."""
        started, samples = report
        for fid, _t_fin, _t_start in done:
            self._flow_finished(fid, t)
        for fid in started:
            self._flow_started(fid, t)
        for g in list(self.groups.values()):
            if g.frozen is not None and g.frozen.wake_ps <= t:
                fz = g.frozen
                advance = self._wake(g, t)
                if fz.memo is not None and self.cfg.skip:  # now in the recorded steady state: skip on
                    if self.hpcc:  # once the pipelines have refilled (one path RTT; see _decide)
                        g.refill = (fz.memo, t + max(self.flows[f].path_rtt_ps for f in g.flows))
                    else:
                        self._skip_after_memo(g, t, fz, advance)
        if samples is not None:
            self.next_sample_ps = t + self.sample_ps
            keep = self.keep_samples
            flows_get = self.flows.get
            groups = self.groups
            for fid, sample in samples:
                fs = flows_get(fid)
                if fs is None or groups[fs.gid].frozen is not None:
                    continue
                q = fs.samples
                q.append(sample)
                if len(q) > keep:
                    q.popleft()
            if self.memo is not None:
                # a new group is looked up once every flow has a sample taken now: its acked
                # bytes are then exact, so a recording starts, and a replay jumps, from known state
                for gid in sorted(self.groups):
                    g = self.groups[gid]
                    if g.memo_checked or g.frozen is not None or g.next_check_ps > t:  # (not sampled now)
                        continue
                    if not self.rerouted.isdisjoint(g.flows):
                        g.memo_checked = True  # flows recovering from a link failure: their losses are not in the key
                    elif self.hpcc and not self._fresh(g):
                        g.memo_checked = True  # HPCC flows already under way: their window's past is not in the key
                    elif not self.hpcc and any(self.flows[f].rate() < self.flows[f].line_rate_bps
                                               or (self.flows[f].samples and self.flows[f].samples[-1][5] >= 0)
                                               for f in g.flows):
                        # a DCQCN rate cut, or one pending (a CNP awaiting its decrease check): the
                        # recovery timers are not in the key
                        g.memo_checked = True
                    elif all(self.flows[f].samples and self.flows[f].samples[-1][0] == t for f in g.flows):
                        if any(self.flows[f].samples[-1][4] >= self.flows[f].size for f in g.flows):
                            continue  # a flow has sent its last byte: look up what is left once it leaves
                        self._memo_lookup(g, t)
            self._decide(t)

    # -- flow table and groups -----------------------------------------------------------
    def _path(self, src: int, dst: int, h: int) -> list:
        return route_path(self.net.nodes, src, dst, h)

    def _flow_started(self, fid: int, t: int) -> None:
        f = self.net.flows[fid]
        if fid in self.net_finished:
            return
        h = self.net.nodes[f.src].flow_hash[fid]
        rtt_ps, win_bytes = self.net.qp_window(f)
        fs = FlowState(f, rtt_ps, win_bytes if self.net.cfg.has_win else 0, self.mtu, self.hdr_bytes,
                       self._path(f.src, f.dst, h), self._path(f.dst, f.src, h), self.net.pair(f.src, f.dst)[0], t)
        self.flows[fid] = fs
        ports = set(fs.ports)
        gids = {self.port_gid[p] for p in ports if p in self.port_gid}
        flows = {fid}
        for gid in sorted(gids):
            g = self.groups.pop(gid)
            if g.frozen is not None:
                self.wakes_interrupted += 1
                self._wake(g, t)
            flows |= g.flows
            ports |= g.ports
        self._new_group(flows, ports, t)

    def _new_group(self, flows: set, ports: set, t: int) -> Group:
        gid = self.next_gid
        self.next_gid += 1
        g = Group(gid, flows, ports, t, max(self.flows[f].start_ps for f in flows))
        self.groups[gid] = g
        for p in ports:
            self.port_gid[p] = gid
        for fid in flows:
            self.flows[fid].gid = gid
        return g

    def _flow_finished(self, fid: int, t: int) -> None:
        self.net_finished.add(fid)
        fs = self.flows.pop(fid, None)
        if fs is None:
            return
        g = self.groups.pop(fs.gid)
        for p in g.ports:
            del self.port_gid[p]
        rest = g.flows - {fid}
        # split what is left into connected components (only this group is touched)
        by_port: dict = {}
        for f in rest:
            for p in self.flows[f].ports:
                by_port.setdefault(p, []).append(f)
        seen: set = set()
        for f in sorted(rest):
            if f in seen:
                continue
            comp, ports, stack = set(), set(), [f]
            seen.add(f)
            while stack:
                x = stack.pop()
                comp.add(x)
                for p in self.flows[x].ports:
                    ports.add(p)
                    for y in by_port[p]:
                        if y not in seen:
                            seen.add(y)
                            stack.append(y)
            self._new_group(comp, ports, t)

    def reroute(self, t: int, apply) -> None:
        """A link failure at boundary ``t`` (an interrupt): every frozen group wakes,
        ``apply()`` fails the link, then each active flow follows its new route
        (flows left without a path leave the table) and the groups are rebuilt from
        those routes, with no samples from before ``t`` and no memo lookup (their
        flows recover from the losses)."""
        for gid in sorted(self.groups):
            g = self.groups[gid]
            if g.frozen is not None:
                self.wakes_interrupted += 1
                self._wake(g, t)
        apply()
        no_path = self.net.no_path
        nodes = self.net.nodes
        bits = self.mtu * 8 * 10**12
        for fid in sorted(self.flows):
            fs = self.flows[fid]
            if fid in no_path:
                del self.flows[fid]
                continue
            h = nodes[fs.src].flow_hash[fid]
            data, ack = self._path(fs.src, fs.dst, h), self._path(fs.dst, fs.src, h)
            fs.data_ports, fs.ack_ports = data, ack
            fs.data_hops = [p for p in data if isinstance(p, SwitchPort)]
            fs.ports = set(data) | set(ack)
            fs.path_rtt_ps = 2 * sum(p.delay_ps for p in data) + sum(bits // p.rate_bps for p in data)
            fs.samples.clear()
        self.rerouted.update(self.flows)
        self.groups.clear()
        self.port_gid.clear()
        by_port: dict = {}
        for fid in sorted(self.flows):
            for p in self.flows[fid].ports:
                by_port.setdefault(p, []).append(fid)
        seen: set = set()
        for fid in sorted(self.flows):
            if fid in seen:
                continue
            comp, ports, stack = set(), set(), [fid]
            seen.add(fid)
            while stack:
                x = stack.pop()
                comp.add(x)
                for p in self.flows[x].ports:
                    ports.add(p)
                    for y in by_port[p]:
                        if y not in seen:
                            seen.add(y)
                            stack.append(y)
            g = self._new_group(comp, ports, t)
            g.newest_start_ps = t  # rerouted flows settle as new ones do
            g.memo_checked = True
        if self.starts_on:
            self._index_starts()

    # -- steady state ------------------------------------------------------------------
    def _goodput(self, fs: FlowState, since: int, newest_start_ps: int):
        """Bytes per ps over the steady span, or None when not steady (or too few samples).

        ``since``: when the group last changed (samples before it are not used);
        ``newest_start_ps``: the boundary that reported the group's latest flow start (the
        span is ACK-timed at least :data:`SETTLE_RTTS` of ``fs``'s path RTTs after it).

        Cost: the last ``samples`` samples first (most calls end there), then two
        binary searches (sample times, ACK times and acked bytes never decrease
        within a history, which a wake clears).
        """
        q = fs.samples
        need = self.samples
        if len(q) < need:
            return None
        last = list(islice(reversed(q), need))  # newest first
        if last[-1][0] < since or last[-1][2] <= 0:
            return None
        rates = [x[1] for x in last]
        mean = sum(rates) / need
        if mean <= 0 or (max(rates) - min(rates)) / mean >= self.theta:
            return None
        # goodput over the last samples holding at least min_span_packets packets, timed by the
        # ACKs that advanced snd_una (exact event times), so a short span is not quantized by the boundaries
        b1, t1 = last[0][2], last[0][3]
        want = self.min_span_bytes * fs.mtu
        if b1 - q[0][2] < want:  # not enough bytes in the whole history: no need to scan it
            return None
        n = len(q)
        # the span: from the newest sample j with b1 - una(j) >= want (and at least `need` samples),
        # inside the suffix of samples taken (and ACK-timed) since the group formed
        # and ACK-timed at least SETTLE_RTTS path RTTs after the group's newest flow started: until
        # then that flow's ACKs (e.g. the reverse direction of a ring step) may not yet share the ports
        settled = max(since, newest_start_ps + int(SETTLE_RTTS * fs.path_rtt_ps))
        lo = bisect_left(q, True, key=lambda x: x[0] >= since and x[3] >= settled and x[2] > 0)
        j = min(n - need, bisect_right(q, b1 - want, key=lambda x: x[2]) - 1)
        if j < lo:
            return None
        if q[j][6] != last[0][6]:
            # a CNP came during the span: DCQCN cuts the rate by alpha / 2 at its next decrease
            # check, by less than theta once alpha has decayed, but cut after cut while the
            # queue stays over the ECN threshold (``test_a_flow_getting_cnps_is_not_steady``)
            return None
        b0, t0 = q[j][2], q[j][3]
        bm, tm = q[n - 1 - (n - j) // 2][2:4]
        if t1 <= tm or tm <= t0 or b1 <= bm or bm <= b0:
            return None
        g1 = (bm - b0) / (tm - t0)
        g2 = (b1 - bm) / (t1 - tm)
        if abs(g1 - g2) / g2 >= self.theta:
            return None
        # the bytes in flight must hold too: a sender faster than its goodput (no window,
        # DCQCN at the line rate into a shared port) fills a queue until ECN cuts it
        grow = (last[0][4] - last[0][2]) - (q[j][4] - q[j][2])
        if abs(grow) > self.theta * (b1 - b0) + INFLIGHT_SLACK_PACKETS * fs.mtu:
            return None
        # and over a longer baseline where the history has one: a pipeline growing by a few % of
        # the goodput (its ACKs queued behind a port still filling) hides in one span's slack
        k = max(lo, n - 1 - INFLIGHT_BASELINE_SPANS * (n - 1 - j))
        if k < j:
            grow = (last[0][4] - last[0][2]) - (q[k][4] - q[k][2])
            if abs(grow) > self.theta * (b1 - q[k][2]) + INFLIGHT_SLACK_PACKETS * fs.mtu:
                return None
        return (b1 - b0) / (t1 - t0)

    def _decide(self, t: int) -> None:
        backoff_from = t - BACKOFF_AFTER_SAMPLES * self.sample_ps
        for gid in sorted(self.groups):
            g = self.groups[gid]
            if g.frozen is not None or g.next_check_ps > t:
                continue
            if g.formed_ps <= backoff_from and len(g.flows) >= BACKOFF_MIN_FLOWS:
                # many flows, unsteady for long: sampled and checked every BACKOFF_EVERY periods
                g.next_check_ps = t + BACKOFF_EVERY * self.sample_ps
            if g.refill is not None:
                # HPCC after a memo jump: a frozen pipeline holds only the packets it had at the
                # jump's start (a flow looked up before its first ACK: half its steady window).
                # Frozen again at once, a flow woken by a join met it with that short pipeline
                # and gave the joining flow more room than in the packet run (8.6% early in
                # ``test_hpcc_memo_replay_refills_the_pipeline``); so the group runs one path
                # RTT, then skips on with the recorded goodputs (a flow joining within that RTT
                # still meets a part-filled pipeline)
                if t >= g.refill[1] and all(self.flows[f].samples and self.flows[f].samples[-1][0] == t
                                            for f in g.flows):
                    (entry, mapping), _ = g.refill
                    g.refill = None
                    goodput = {f: entry.flows[mapping[f]]["goodput"] for f in g.flows}
                    if min(goodput.values()) > 0:
                        self._try_freeze(g, t, goodput)
                continue
            goodput = {}
            for fid in sorted(g.flows):
                gp = self._goodput(self.flows[fid], g.formed_ps, g.newest_start_ps)
                if gp is None:
                    break
                goodput[fid] = gp
            else:
                if (not self.hpcc or not self.net.cfg.has_win) and self._fills_a_queue(g, goodput):
                    continue
                if self.hpcc and self._hpcc_unfair(g, goodput):
                    continue
                if not self.hpcc and self.net.cfg.has_win:
                    self._fifo_shares(g, goodput)
                if self.memo is not None and g.memo_base is not None:
                    self._memo_record(g, t, goodput)
                if self.cfg.skip:
                    self._try_freeze(g, t, goodput)

    def _fills_a_queue(self, g: Group, goodput: dict) -> bool:
        """The group's flows send more into one of its switch ports than it forwards: its
        queue grows (until ECN cuts the senders, or their windows fill), so the group is not
        steady yet. Used under DCQCN, and under HPCC without a window (HPCC's window control
        keeps its ports under their rate).

        What a flow sends: its goodput when its window (as DCQCN scales it with the rate)
        is full or it has sent its last byte, else its paced rate (wire bytes), or its
        max-min share of its NIC when the NIC's QPs ask for more than the NIC's rate less
        the ACKs it sends. A switch port receives the data of the flows crossing it and the
        ACKs of those whose ACKs do. A queue grows where that exceeds the port's rate by
        more than :data:`OVERLOAD_SLACK` and some flow crossing it is not window-bound.

        A slow growth passes the bytes-in-flight check of :meth:`_goodput`: 4 DCQCN flows
        at 26.3 Gb/s into a 100 Gb/s port (``HAS_WIN 0``) grow the queue by 4 packets over a
        100-packet span and reach the ECN threshold during a skip; frozen there, they missed the cuts that
        followed and finished 13-19% late (``test_slow_queue_growth_is_not_steady``). With
        windows, a flow at the line rate into a port that also carries another flow's ACKs
        fills it until its window is full, and the other flow's ACKs queue behind it: frozen
        before, that flow finished 4.7% late
        (``test_flows_wait_for_a_filling_queue_to_stop_growing``). Paced rates, not
        goodputs: QPs that share a NIC lose pacing time to each other and get less than
        their rates, with no queue anywhere.
        """
        flows = [self.flows[f] for f in sorted(g.flows)]
        load = self._port_loads(flows, goodput)[1]  # bytes/ps into each port: ACKs first (at the goodput's pace)
        by_nic: dict = {}
        for fs in flows:
            by_nic.setdefault(fs.data_ports[0], []).append(fs)
        cfg = self.net.cfg
        fillers: set = set()  # ports crossed by the data of a flow whose window is not full
        for nic, fss in by_nic.items():
            room = nic.rate_bps / 8e12 - load.get(nic, 0.0)  # control packets go first
            asks = []
            for fs in fss:
                last = fs.samples[-1]
                win = self._enforced_window(fs, fs.rate())
                if (win and last[4] - last[2] >= win - 2 * fs.mtu) or last[4] >= fs.size:
                    # window full (ACK-clocked), or all sent (draining): bounded in-flight
                    ask = goodput[fs.fid] * fs.wire_bytes / fs.mtu
                else:
                    ask = (fs.rate() if cfg.rate_bound else fs.line_rate_bps) / 8e12
                    fillers.update(fs.data_hops)
                asks.append((ask, fs.fid, fs))
            asks.sort()
            for i, (ask, _fid, fs) in enumerate(asks):
                sends = min(ask, max(0.0, room) / (len(asks) - i))  # max-min share of the NIC
                room -= sends
                for p in fs.data_hops:
                    load[p] = load.get(p, 0.0) + sends
        # only a flow whose window is not full can grow a queue without bound (window-full
        # flows are capped, and a span's goodput can read a few % high: ACK-timed ends fall
        # inside bursts)
        return any(p in fillers and b > (1 + OVERLOAD_SLACK) * p.rate_bps / 8e12 for p, b in load.items())

    def _hpcc_unfair(self, g: Group, goodput: dict) -> bool:
        """HPCC: flows sharing a saturated port are still far from the max-min shares its
        additive increase moves them to, so they are not steady yet (True).

        HPCC's multiplicative step scales every window at a port by the same factor and its
        additive step adds the same ``W_AI`` to each, so flows that share a bottleneck drift
        towards equal rates (with ``GLOBAL_T`` their pacing rates are their windows over one
        base RTT), but slowly: three flows into one host, frozen a second time at 23.2 /
        25.6 / 39.5 Gb/s, were steady to theta 0.005 over 500-packet spans while their shares
        moved by 4-6% over the next 900 us (random scenario 10 of ``bench/random_small.py``:
        1.01% mean, 2.3% max FCT error). The max-min shares are water-filled over the group's
        saturated ports (data and ACK load at least ``1 -`` :data:`HPCC_SATURATION` of
        ``U_TARGET`` times the rate) whose flows are of one priority, each port's capacity
        being the data load it carries now; a flow more than :data:`HPCC_FAIRNESS` from its
        share keeps the group awake. Where HPCC does not end at max-min shares (without
        ``GLOBAL_T``, flows of different RTTs), a group may stay awake for good: a cost in
        speed, not in accuracy.
        """
        flows = [self.flows[f] for f in sorted(g.flows)]
        if len(flows) < 2:
            return False
        load, ack_load = self._port_loads(flows, goodput)
        u = self.net.cfg.u_target
        crossing: dict = {}
        for fs in flows:
            for p in fs.data_ports:
                crossing.setdefault(p, []).append(fs.fid)
        pg = {fs.fid: fs.pg for fs in flows}
        room = {p: b for p, b in load.items()
                if b + ack_load.get(p, 0.0) >= (1 - HPCC_SATURATION) * u * p.rate_bps / 8e12
                and len({pg[f] for f in crossing[p]}) == 1}  # strict priorities are not max-min
        if not any(len(crossing[p]) > 1 for p in room):
            return False
        share: dict = {}  # flow id -> max-min share (wire bytes/ps)
        while True:
            best = None
            for p in room:
                n = sum(1 for f in crossing[p] if f not in share)
                if n:
                    key = (max(0.0, room[p]) / n, p.node.node_id, p.idx)
                    if best is None or key < best[0]:
                        best = (key, p)
            if best is None:
                break
            (level, _, _), p = best
            for f in crossing[p]:
                if f not in share:
                    share[f] = level
                    for q in self.flows[f].data_ports:
                        if q in room:
                            room[q] -= level
            del room[p]
        wire = {fs.fid: fs.wire_bytes / fs.mtu for fs in flows}
        return any(abs(goodput[f] * wire[f] - s) > HPCC_FAIRNESS * s for f, s in share.items())

    def _enforced_window(self, fs: FlowState, rate_bps: int) -> int:
        """The window the sender of ``fs`` enforces at ``rate_bps`` (bytes; 0: none):
        ``SendQP.cur_win``, which ``VAR_WIN`` scales with the rate (``cc.set_rate``)."""
        win = fs.win_bytes
        if win and self.net.cfg.var_win:
            win = max(self.min_win_bytes, win * rate_bps // fs.line_rate_bps)
        elif win:
            win = max(self.min_win_bytes, win)
        return win

    def _fifo_shares(self, g: Group, goodput: dict) -> None:
        """Replace the measured goodputs of window-bound flows whose bottlenecks are FIFO
        switch queues by their long-run shares (in place; DCQCN with windows).

        A window-bound flow (the enforced window in flight at each of the last ``samples``
        samples, bytes left to send) keeps ``W`` bytes in flight (its window rounded up to
        whole packets: it sends while less than the window is in flight; a DCQCN flow cut to
        7 Gb/s has a 3640-byte window and 4 packets in flight), so by Little's law it gets
        ``W / (rtt + d)``, never more than its paced rate, where ``d`` sums the queue delays
        of the saturated ports its data cross, and those its ACKs cross when they wait in
        the same queue (not with ``ACK_HIGH_PRIO``, nor in another priority). At each such
        port the flows' shares fill its rate less the ACKs it carries: one equation per port,
        each monotone in its delay, solved port by port (Gauss-Seidel, sweeping the ports
        forwards and backwards in turn, at most :data:`FIFO_SWEEPS` sweeps). The measured
        goodputs hold for a 100-packet span but not for long: the flows' packets keep their
        order in the queue from one round trip to the next and drift apart only slowly, so
        each flow's share swings by several % over hundreds of us, and a span catches each
        at a different point of its swing. Six 10 MB flows into one host 50 us apart were
        frozen at 17.2 / 17.2 / 16.3 / 16.0 / 16.2 / 16.1 Gb/s (their sum 2.6% over the
        port's rate) while packet mode gave each 16.08 Gb/s over the next 3.5 ms: they
        finished 1.6-5.4% early
        (``test_window_bound_flows_get_their_fifo_share``).

        Modelled: saturated switch ports (:data:`FIFO_SATURATION`) whose data are all of
        one priority and whose ACK load is under their rate, and the window-bound flows
        crossing one of them all of whose saturated ports (ACK path included) are modelled;
        a port the data of a flow not modelled cross is not modelled either. A NIC is never
        modelled (it serves its QPs round robin, not FIFO), so a flow whose NIC, or whose
        receiver's NIC (its ACKs' first hop), is saturated keeps its measured goodput, and
        so do the other flows. A port the shares would load more than ``1 + OVERLOAD_SLACK``
        times its rate (one read just under saturation, on the path of a modelled flow)
        joins the saturated ports and the shares are solved again; the measured goodputs
        stand when that port cannot be modelled, or when the sweeps do not settle.
        """
        flows = [self.flows[f] for f in sorted(g.flows)]
        bound = set()
        for fs in flows:
            win = self._enforced_window(fs, fs.rate())
            if win and fs.samples[-1][4] < fs.size and all(
                    x[4] - x[2] >= win - 2 * fs.mtu for x in islice(reversed(fs.samples), self.samples)):
                bound.add(fs.fid)
        if not bound:
            return
        load, ack_load = self._port_loads(flows, goodput)
        crossing: dict = {}  # port -> the flows whose data cross it
        for fs in flows:
            for p in fs.data_ports:
                crossing.setdefault(p, []).append(fs)
        saturated = {p for p, b in load.items()
                     if b + ack_load.get(p, 0.0) >= (1 - FIFO_SATURATION) * p.rate_bps / 8e12}
        while True:  # ports the shares would overload join the model (a port read just under saturation)
            new = self._fifo_solve(flows, bound, crossing, saturated, ack_load)
            if new is None:
                return  # the measured goodputs stand
            load2, ack_load2 = self._port_loads(flows, {**goodput, **new})
            over = {p for p, b in load2.items()
                    if b + ack_load2.get(p, 0.0) > (1 + OVERLOAD_SLACK) * p.rate_bps / 8e12}
            if not over:
                goodput.update(new)
                return
            if over <= saturated:
                return  # a port it overloads could not be modelled
            saturated |= over

    def _port_loads(self, flows: list, goodput: dict) -> tuple:
        """``(data, acks)``: bytes/ps into each port of the flows' data (wire bytes, at
        ``goodput``) and of their ACKs (one per ``ack_every_pkts`` packets)."""
        data: dict = {}
        acks: dict = {}
        for fs in flows:
            gp = goodput[fs.fid]
            ack = gp / (fs.mtu * self.ack_every_pkts) * self.ack_bytes
            for p in fs.ack_ports:
                acks[p] = acks.get(p, 0.0) + ack
            wire = gp * fs.wire_bytes / fs.mtu
            for p in fs.data_ports:
                data[p] = data.get(p, 0.0) + wire
        return data, acks

    def _fifo_solve(self, flows: list, bound: set, crossing: dict, saturated: set, ack_load: dict):
        """The shares of :meth:`_fifo_shares` given the ``saturated`` ports: ``{flow id:
        payload bytes/ps}`` of the modelled flows, or None (nothing modelled, or the sweeps
        did not settle)."""
        ports = [p for p in crossing if p in saturated and isinstance(p, SwitchPort)
                 and p.rate_bps / 8e12 > ack_load.get(p, 0.0)
                 and all(fs.pg == crossing[p][0].pg for fs in crossing[p])]
        modelled = [fs for fs in flows if fs.fid in bound]
        while ports:  # drop flows crossing a saturated port not modelled, and the ports they cross
            keep = set(ports)
            fss = [fs for fs in modelled
                   if all(p in keep for p in chain(fs.data_ports, fs.ack_ports) if p in saturated)]
            on = {fs.fid for fs in fss}
            ports2 = [p for p in ports if all(fs.fid in on for fs in crossing[p])]
            if len(ports2) == len(ports) and len(fss) == len(modelled):
                break
            ports, modelled = ports2, fss
        if not ports:
            return None
        delay = {p: 0.0 for p in ports}  # ps
        pg = {p: crossing[p][0].pg for p in ports}  # the priority of each modelled port's data
        ack_queued = not self.net.cfg.ack_high_prio  # ACKs wait in their flow's priority queue
        win, pace, queues = {}, {}, {}
        for fs in modelled:
            # it sends while less than its window is in flight: up to the next whole packet
            win[fs.fid] = -(-self._enforced_window(fs, fs.rate()) // fs.mtu) * fs.wire_bytes
            pace[fs.fid] = (fs.rate() if self.net.cfg.rate_bound else fs.line_rate_bps) / 8e12
            # the modelled queues this flow's packets wait in: its data's, and its ACKs' where they share them
            queues[fs.fid] = [p for p in fs.data_ports if p in delay] + [
                p for p in fs.ack_ports if p in delay and ack_queued and pg[p] == fs.pg]
        modelled = [fs for fs in modelled if queues[fs.fid]]  # the others keep their measured goodputs

        def share(fs, d_ps):  # wire bytes/ps at a total queue delay d_ps
            return min(win[fs.fid] / (fs.path_rtt_ps + d_ps), pace[fs.fid])

        for sweep in range(FIFO_SWEEPS):
            for p in (ports if sweep % 2 == 0 else reversed(ports)):  # symmetric sweeps
                cap = p.rate_bps / 8e12 - ack_load.get(p, 0.0)
                terms = [(fs, sum(delay[x] for x in queues[fs.fid]) - delay[p]) for fs in crossing[p]]
                lo, hi = 0.0, float(max(fs.path_rtt_ps + d for fs, d in terms))
                if sum(share(fs, d) for fs, d in terms) <= cap:
                    hi = 0.0  # the windows (or the paced rates) do not fill it: no queue
                else:
                    while sum(share(fs, d + hi) for fs, d in terms) > cap:
                        hi *= 2
                    for _ in range(40):  # to 2^-40 of the bracket
                        mid = (lo + hi) / 2
                        if sum(share(fs, d + mid) for fs, d in terms) > cap:
                            lo = mid
                        else:
                            hi = mid
                delay[p] = hi
            # settled when every port's equation holds at once: filled where it has a queue,
            # not over its rate where it has none (to FIFO_TOLERANCE of its rate)
            total = {fs.fid: share(fs, sum(delay[x] for x in queues[fs.fid])) for fs in modelled}
            for p in ports:
                cap = p.rate_bps / 8e12 - ack_load.get(p, 0.0)
                err = sum(total[fs.fid] for fs in crossing[p]) - cap
                if err > FIFO_TOLERANCE * cap or (delay[p] > 0 and err < -FIFO_TOLERANCE * cap):
                    break
            else:
                return {fs.fid: total[fs.fid] * fs.mtu / fs.wire_bytes for fs in modelled}
        return None

    @staticmethod
    def _inflight(fs: FlowState, t: int, goodput: float, known: dict | None = None) -> int:
        """Bytes a flow has sent and not had acknowledged at ``t``: ``known[fid]``, or
        sampled at ``t`` (exact: a frozen flow sends nothing), else a bound (its
        window, or two base RTTs at ``goodput``)."""
        if known is not None and fs.fid in known:
            return known[fs.fid]
        q = fs.samples
        if q and q[-1][0] == t:
            return max(0, q[-1][4] - q[-1][2])
        return fs.win_bytes if fs.win_bytes else max(int(2 * goodput * fs.rtt_ps), fs.mtu)

    @staticmethod
    def _room(fs: FlowState, una0: int, inflight0: int) -> int:
        """Bytes a flow may advance from ``una0`` and still have a packet to send after
        the ``inflight0`` bytes in flight."""
        return max(0, (fs.size - una0 - inflight0 - fs.mtu) // fs.mtu * fs.mtu)

    def _wake_by(self, fs: FlowState, t: int, una: int, goodput: float, known: dict | None = None) -> int:
        """When a flow sending at ``goodput`` from ``una`` at ``t`` must be awake: with
        ``margin_rtts`` of its own path's RTTs of data left, and never less than what
        :meth:`_room` keeps (so the advance is never cut short and the flow never lags)."""
        keep = max(self._inflight(fs, t, goodput, known) + 2 * fs.mtu,
                   int(self.cfg.margin_rtts * goodput * fs.path_rtt_ps))
        return t + int((fs.size - una - keep) / goodput)

    def _try_freeze(self, g: Group, t: int, goodput: dict) -> None:
        wake = None
        for fid in g.flows:
            fs = self.flows[fid]
            done = self._wake_by(fs, t, fs.una(), goodput[fid])
            rp_due = fs.samples[-1][5]
            if 0 <= rp_due < done:  # the rate changes then: the steady state ends there
                done = rp_due
            if wake is None or done < wake:
                wake = done
        wake = self._cap_wake(g, t, (wake // self.window_ps) * self.window_ps)
        if wake - t < self.min_skip_ps:
            return
        self._freeze(g, t, wake, goodput)

    # -- freeze / wake ---------------------------------------------------------------------
    def _freeze(self, g: Group, t: int, wake_ps: int, goodput: dict, memo=None, una0: dict | None = None,
                inflight0: dict | None = None) -> None:
        ports = g.ports
        flows = g.flows
        events = []
        for lp in self.lps:
            keep = []
            for ev in lp.heap:
                kind = ev[2]
                if kind == EV_TX_DONE or kind == EV_NIC_WAKE:
                    mine = ev[3] in ports
                elif kind == EV_ARRIVE_HOST or kind == EV_ARRIVE_SWITCH:
                    pkt = ev[4]
                    if pkt[P_TYPE] == T_PFC:
                        mine = ev[3].ports[pkt[P_INPORT]] in ports
                    else:
                        mine = pkt[P_FLOW] in flows
                elif kind == EV_TIMER:
                    mine = ev[4][0].fid in flows
                else:
                    mine = False
                (events if mine else keep).append(ev)
            if len(keep) != len(lp.heap):
                lp.heap[:] = keep
                heapify(lp.heap)
        busy = {}
        for p in ports:
            busy[p] = p.busy
            p.busy = True  # held: kick() returns, arrivals queue up
        if una0 is None:
            una0 = {fid: self.flows[fid].una() for fid in flows}
        inflight0 = {fid: self._inflight(self.flows[fid], t, goodput.get(fid, 0) or
                                         self.flows[fid].line_rate_bps / 8e12, inflight0) for fid in flows}
        g.frozen = Frozen(t, wake_ps, events, busy, goodput, una0, inflight0, memo)
        self.skips += 1

    def _wake(self, g: Group, t: int) -> None:
        fz = g.frozen
        g.frozen = None
        self.woke = True
        d = t - fz.t0
        self.skipped_ps += d
        self.skipped_flow_ps += d * len(g.flows)
        if fz.memo is not None:
            advance = self._memo_apply(g, fz, d)
        else:
            advance = {}
            for fid in g.flows:
                fs = self.flows[fid]
                b = int(fz.goodput[fid] * d) // fs.mtu * fs.mtu
                advance[fid] = min(b, self._room(fs, fz.una0[fid], fz.inflight0[fid]))
        self._advance(g, fz, d, advance)
        heap_of = self.heap_of
        for ev in fz.events:
            tgt = ev[3]
            node = tgt.node if hasattr(tgt, "node") else tgt
            t_ev = ev[0] + d
            if ev[2] == EV_TIMER and ev[4][1] == TM_RP:
                t_ev = self._rp_time(ev[0], t)
            heappush(heap_of[node.node_id], (t_ev, ev[1], ev[2], tgt, ev[4]))
        for p, was in fz.busy.items():
            p.busy = was
        for p in sorted(fz.busy, key=lambda p: (p.node.node_id, p.idx)):
            if not p.busy and p.node.node_id in heap_of:
                p.kick(t)
        for fid in g.flows:  # the history before the skip does not describe what follows
            self.flows[fid].samples.clear()
        g.formed_ps = t
        g.next_check_ps = 0
        return advance

    def _skip_after_memo(self, g: Group, t: int, fz: Frozen, advance: dict) -> None:
        """After a memo jump the group is in the recorded steady state: fast-forward it
        with the recorded goodputs, without sampling it again (DCQCN; an HPCC group first
        refills its pipelines, see :meth:`_decide`)."""
        entry, mapping = fz.memo
        goodput, una = {}, {}
        wake = None
        for fid in g.flows:
            fs = self.flows[fid]
            rec = entry.flows[mapping[fid]]
            gp = rec["goodput"]
            if gp <= 0:
                return
            goodput[fid] = gp
            una[fid] = fz.una0[fid] + advance.get(fid, 0)
            # the advance counted the recorded growth of the pipeline as acknowledged (the
            # frozen pipeline holds the lookup's packets; see _memo_apply): the packet run has
            # those bytes in flight, so the completion is timed from the frozen pipeline plus
            # that growth. Timed from the frozen one alone it came 1.4 us early per 12.6 MB DP
            # ring step (a longer tail simulated packet by packet, not a different answer).
            # Either way the sender has at least two packets left to send at the wake.
            growth = min(rec.get("inflight_growth", 0), advance.get(fid, 0))
            done = self._wake_by(fs, t, una[fid] - growth, gp, {fid: fz.inflight0[fid] + growth})
            wake = done if wake is None or done < wake else wake
        wake = self._cap_wake(g, t, (wake // self.window_ps) * self.window_ps)
        if wake - t >= self.min_skip_ps:
            self._freeze(g, t, wake, goodput, una0=una, inflight0=fz.inflight0)

    def _advance(self, g: Group, fz: Frozen, d: int, advance: dict) -> None:
        """Move every flow of ``g`` forward by ``advance[fid]`` bytes and ``d`` ps
        (invariant 5), on this process's objects."""
        port_adv: dict = {}
        for fid, b in advance.items():
            if b <= 0:
                continue
            fs = self.flows[fid]
            pkts = b // fs.mtu
            for p in fs.data_hops:
                port_adv[p] = port_adv.get(p, 0) + pkts * fs.wire_bytes
            acks = pkts // self.ack_every_pkts
            for p in fs.ack_ports:
                port_adv[p] = port_adv.get(p, 0) + acks * self.ack_bytes
        local = self.heap_of
        for p, a in port_adv.items():
            p.tx_bytes += a
        t0 = fz.t0
        nodes = self.net.nodes
        cfg = self.net.cfg
        # a steady skip had no CNP; a memo jump replays a transient that may have had some
        decay = None if self.hpcc or fz.memo is not None else (1 - cfg.ewma_gain) ** (d // cfg.alpha_resume_interval_ps)
        for fid in g.flows:
            fs = self.flows[fid]
            b = advance.get(fid, 0)
            if fs.src in local:
                host = nodes[fs.src]
                qp = host.sqp.get(fid)
                if qp is not None:
                    qp.snd_nxt += b
                    qp.snd_una += b
                    qp.max_sent += b
                    host.bytes_sent += b
                    if qp.rto_una >= 0:
                        qp.rto_una += b
                    if qp.last_update_seq > 0:
                        qp.last_update_seq += b
                    if qp.next_avail_ps >= t0:
                        qp.next_avail_ps += d
                    if qp.rp_due_ps >= t0:
                        qp.rp_due_ps = self._rp_time(qp.rp_due_ps, t0 + d)
                    if decay is not None and not qp.first_cnp:
                        # a steady DCQCN flow gets no CNP (one would cut its rate within 4 us):
                        # its alpha decays once per ALPHA_RESUME_INTERVAL while frozen
                        qp.alpha *= decay
                    if qp.hops:
                        qp.hops = self._shift_hops(qp.hops, fs, d, port_adv)
            if fs.dst in local:
                rx_host = nodes[fs.dst]
                rx = rx_host.rx.get(fid)
                if rx is None and b > 0:  # nothing arrived yet: the receiver starts from the advanced position
                    rx = rx_host.rx[fid] = [0, rx_host.ack_interval, -1, -1, fs.size]
                if rx is not None:
                    rx[0] += b
                    rx[1] += b
                    if rx[2] >= t0:
                        rx[2] += d
                    if rx[3] >= 0:
                        rx[3] += b
                    rx_host.bytes_delivered += b
        seen_int: set = set()

        def shift_pkt(pkt):
            if pkt[P_TYPE] == T_PFC:
                return
            fid = pkt[P_FLOW]
            pkt[P_SEQ] += advance.get(fid, 0)
            hops = pkt[P_INT]
            if hops and id(hops) not in seen_int:
                seen_int.add(id(hops))
                hops[:] = self._shift_hops(hops, self.flows[fid], d, port_adv)

        for ev in fz.events:
            if ev[2] == EV_ARRIVE_HOST or ev[2] == EV_ARRIVE_SWITCH:
                shift_pkt(ev[4])
        for p in g.ports:
            if p.node.node_id not in local:
                continue
            if isinstance(p, SwitchPort):
                for q in p.qs:
                    for pkt in q:
                        shift_pkt(pkt)
            elif isinstance(p, HostPort):
                for pkt in p.ctrl:
                    shift_pkt(pkt)
                if p.wake_ps >= t0:
                    p.wake_ps += d

    def _rp_time(self, t_ev: int, t: int) -> int:
        """When a DCQCN rate-increase (RP) timer due at ``t_ev`` fires after a wake at ``t``:
        at its own time (a timer runs on while the packets are frozen; a freeze ends before
        one that would change the rate, see :meth:`_try_freeze`), or, if that passed, at its
        next period."""
        if t_ev >= t:
            return t_ev
        rp = self.net.cfg.rp_timer_ps
        return t_ev + -(-(t - t_ev) // rp) * rp

    @staticmethod
    def _shift_hops(hops, fs: FlowState, d: int, port_adv: dict) -> list:
        out = []
        ports = fs.data_hops
        for i, (ts, tx, qlen, rate) in enumerate(hops):
            adv = port_adv.get(ports[i], 0) if i < len(ports) else 0
            out.append((ts + d, tx + adv, qlen, rate))
        return out

    # -- memoization -----------------------------------------------------------------------
    def _fresh(self, g: Group) -> bool:
        """Every flow of ``g`` started within ``FRESH_WINDOWS`` windows of the group's forming: a
        transient starting from idle flows (a collective step). Under HPCC only such groups are
        looked up: a group that met flows already under way has a past (their windows) the key
        does not hold."""
        return all(self.is_new(f, g) for f in g.flows)

    def is_new(self, fid: int, g: Group) -> bool:
        """Flow ``fid`` started within ``FRESH_WINDOWS`` windows of group ``g``'s forming."""
        return self.flows[fid].start_ps + self.FRESH_WINDOWS * self.window_ps >= g.formed_ps

    FRESH_WINDOWS = 4

    def _memo_lookup(self, g: Group, t: int) -> None:
        from .memo import group_parts
        g.memo_checked = True
        order, labels, edges = group_parts(self, g)
        hit, key, graph = self.memo.lookup(labels, edges)
        g.memo_key = (key, graph, order)
        if hit is None:
            self.memo_misses += 1
            g.memo_base = {fid: (self.flows[fid].una(), self._inflight(self.flows[fid], t, 0.0)) for fid in g.flows}
            g.memo_base["@t"] = t
            return
        entry, idx_map = hit
        mapping = {order[i]: j for i, j in idx_map.items()}  # flow id -> recorded flow index
        # refuse when the refill of a flow's pipeline (the replay advances it by the recorded
        # growth of its bytes in flight; see REFILL_BUDGET) could be off by more than its budget
        growth = {f: max(0, entry.flows[mapping[f]].get("inflight_growth", 0)) for f in g.flows}
        shared = min(growth.values())
        for fid in g.flows:
            fs = self.flows[fid]
            share = min(1.0, entry.flows[mapping[fid]]["goodput"] * 8e12 / fs.line_rate_bps)
            if (growth[fid] - shared) * (1 - share) > REFILL_BUDGET * fs.size:
                g.memo_base = None
                return
        # refuse when a flow would finish inside the recorded transient: after the jump it must
        # still have its pipeline, a few packets and margin_rtts of its path's RTTs of data to send
        # (its completion is then simulated packet by packet)
        for fid in g.flows:
            fs = self.flows[fid]
            rec = entry.flows[mapping[fid]]
            jump = rec["bytes"] + max(0, rec.get("inflight_growth", 0))
            tail = (self._inflight(fs, t, rec["goodput"]) + 4 * fs.mtu
                    + self.cfg.margin_rtts * rec["goodput"] * fs.path_rtt_ps)
            if fs.size - fs.una() <= jump + tail:
                g.memo_base = None
                return
        g.memo_base = None
        wake = t + -(-entry.convergence_ps // self.window_ps) * self.window_ps
        if self._cap_wake(g, t, wake) < wake:  # a known flow start would cut the jump short
            return
        self.memo_hits += 1
        self._freeze(g, t, wake, {}, (entry, mapping))

    def _memo_record(self, g: Group, t: int, goodput: dict) -> None:
        base = g.memo_base
        g.memo_base = None
        key, graph, order = g.memo_key
        flows = {}
        conv = t - base["@t"]
        for i, fid in enumerate(order):
            fs = self.flows[fid]
            una0, inflight0 = base[fid]
            b = fs.una() - una0
            if b < 0 or b * 8_000_000_000_000 > fs.line_rate_bps * max(conv, 1):
                return  # not a consistent recording (faster than the line): keep nothing
            if not self.hpcc and fs.rate() < fs.line_rate_bps:
                return  # DCQCN cut it: a replay could not restore its recovery timers (never used)
            growth = self._inflight(fs, t, goodput[fid]) - inflight0  # pipeline filled during the transient
            flows[i] = {"bytes": b, "goodput": goodput[fid], "rate_bps": fs.pacing_rate(), "inflight_growth": growth}
        self.memo.insert(key, graph, conv, flows)

    def _memo_apply(self, g: Group, fz: Frozen, d: int) -> dict:
        """Advance a group woken from a memo jump after ``d`` ps: by the bytes the recorded
        flows had acknowledged plus the growth of their in-flight bytes (a frozen flow's
        pipeline holds only its packets from the jump's start; without this it would lag
        by the refill). An interrupted jump
        (``d`` shorter than the recorded convergence: a new flow met the group) advances
        each flow by the recorded bytes scaled by ``d / convergence`` and keeps the rates;
        a whole one also sets the recorded steady rates."""
        from ..net.cc import set_rate
        entry, mapping = fz.memo
        whole = d >= entry.convergence_ps
        advance = {}
        local = self.heap_of
        for fid in g.flows:
            fs = self.flows[fid]
            rec = entry.flows[mapping[fid]]
            if whole:  # also the growth of the recorded flow's pipeline: these flows' frozen one did not grow
                b = max(0, rec["bytes"] + rec.get("inflight_growth", 0))
            else:
                b = rec["bytes"] * d // max(1, entry.convergence_ps)
            advance[fid] = min(b // fs.mtu * fs.mtu, self._room(fs, fz.una0[fid], fz.inflight0[fid]))
            if fs.src in local and whole:
                qp = self.net.nodes[fs.src].sqp.get(fid)
                if qp is not None:  # jump to the recorded steady rate (the pacing rate: HPCC's window follows it)
                    rate = int(rec["rate_bps"])
                    if self.hpcc:
                        qp.cur_rate_bps = min(rate, qp.max_rate_bps)
                        rate = qp.cur_rate_bps
                    else:
                        qp.target_rate_bps = min(rate, qp.max_rate_bps)
                    set_rate(qp, min(rate, qp.max_rate_bps))
        return advance

    def settle(self, t: int) -> None:
        """For a run that stops at boundary ``t`` with flows unfinished: wake every frozen
        group at ``t`` and count the bytes of rate-level NVLink flows sent by ``t``, so the
        byte counters hold what the fast-forwarded flows moved by then."""
        for gid in sorted(self.groups):
            g = self.groups[gid]
            if g.frozen is not None:
                self._wake(g, t)
        for dom in self.fluid_domains.values():
            if dom.nvs.node_id in self.heap_of:
                dom.settle(t)

    def next_wake_ps(self) -> int:
        """Earliest planned wake of a frozen group (``INF_PS`` when none)."""
        w = INF_PS
        for g in self.groups.values():
            if g.frozen is not None and g.frozen.wake_ps < w:
                w = g.frozen.wake_ps
        return w

    def stats(self) -> dict:
        return {"skips": self.skips, "skipped_ps": self.skipped_ps, "skipped_flow_ps": self.skipped_flow_ps,
                "memo_hits": self.memo_hits, "memo_misses": self.memo_misses,
                "wakes_interrupted": self.wakes_interrupted,
                "fluid_shared_flows": sum(len(d.shared) for d in self.fluid_domains.values()),
                "memo_entries": len(self.memo) if self.memo is not None else 0,
                "memo_bytes": self.memo.size_bytes() if self.memo is not None else 0}
