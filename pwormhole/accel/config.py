"""Wormhole parameters and the tuned constants of acceleration.

Each constant states its rule; where it was measured is in bench/RESULTS.md
("Constants of accel/ and where they were measured").
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from ..units import PS_PER_S

BPS_PER_BYTE_PS = 8 * PS_PER_S
"""Bits per byte x ps per s: bytes/ps -> bits/s (an int: exact in integer rates, and the same
as 8e12 in float arithmetic)."""


@dataclass
class AccelConfig:
    """Wormhole parameters (defaults chosen by ``bench/sensitivity.py``; see bench/RESULTS.md).

    Attributes:
        theta: steadiness threshold on ``(max - min) / mean`` of the sampled rates (and on the
            goodput span's halves and the drift of the bytes in flight); 0: :data:`THETA`.
        samples: number of samples a flow must be steady over; 0: :data:`SAMPLES`.
        sample_ps: sampling period (0: one synchronization window ``L``).
        margin_rtts: wake this many RTTs (of the flow's own path) before the earliest
            predicted completion.
        min_span_packets: goodput is measured over at least this many packets; 0: :data:`MIN_SPAN_PACKETS`.
        min_skip_ps: do not freeze for less than this (0: 8 windows).
        skip: fast-forward steady groups.
        memo: memoize transients.
        early: under HPCC, freeze a group near its fluid steady state before its oscillation
            settles (:data:`HPCC_EARLY_TOLERANCE`).
        successors: under HPCC, a group that re-forms with the flows of its last steady freeze, each
            finished one replaced by a new flow on its path (a ring's next step), freezes with that
            state's goodputs at once (:mod:`.successor`).
        follow: under HPCC, a group of new flows that misses the memo cache at the boundary where
            another of the same graph missed follows that one (:mod:`.follow`); off by default (it
            breaks the lockstep of identical rails: measured in bench/RESULTS.md).
        ring_steps: under HPCC with successors, a lock-step ring's later steps on a route are carried
            without packets from the template of two agreeing packet steps (:mod:`.ringstep`).
        parts: fast-forward the steady parts of groups not steady as a whole (:mod:`.parts`).
        line_rate: under DCQCN, freeze a group whose flows all send at their line rate at once, with
            their NICs' round-robin shares (:func:`.steady.line_rate_shares`), not once their
            goodputs are measured steady.
        nvlink: how the flows inside each server's NVSwitches are simulated: ``auto`` (by rates,
            :mod:`pwormhole.accel.fluid`, where NVLink runs no end-to-end CC and the rates hold;
            else packets), ``fluid`` (by rates; refused where they do not hold) or ``packet``.
    """

    theta: float = 0.0
    samples: int = 0
    sample_ps: int = 0
    margin_rtts: int = 1
    min_skip_ps: int = 0
    min_span_packets: int = 0
    skip: bool = True
    memo: bool = True
    early: bool = True
    successors: bool = True
    follow: bool = False
    ring_steps: bool = True
    parts: bool = True
    line_rate: bool = True
    nvlink: str = "auto"

    def resolved(self, hpcc: bool) -> AccelConfig:
        """A copy with ``theta``, ``samples`` and ``min_span_packets`` (0: by congestion
        control) set to the values in effect under HPCC (``hpcc``) or DCQCN."""
        return replace(self, theta=self.theta or THETA[hpcc], samples=self.samples or SAMPLES[hpcc],
                       min_span_packets=self.min_span_packets or MIN_SPAN_PACKETS[hpcc])


LOADED_SHARE = 0.8
"""A port is loaded, and the flows whose data or ACKs cross it one steady part (:mod:`.parts`),
when the pacing rates of the flows whose data crosses it (or their recent goodputs where higher)
add up to this share of its rate; a part fast-forwarded wakes when the flows beside it bring one of
its other ports there."""

PARTS_EVERY = 8
"""Groups not steady as a whole are searched for steady parts (:mod:`.parts`) at every this many
sampling periods, all at the same boundaries (a search costs a goodput test per flow; a part then
freezes up to this many periods late, against freezes hundreds of periods long)."""

PART_DRAIN_RTTS = 4
"""A part is fast-forwarded for at least this many of its longest path RTT, and woken no earlier
(its packets in flight drain first, :mod:`.parts`), but at a link failure and at the run's end."""

MAX_MIN_ROUNDS = 50
"""Rounds of the ACK-load fixed point of :func:`~pwormhole.accel.solvers.max_min` and of
:func:`~pwormhole.accel.steady.hpcc_model` at most (each shrinks the change ~20x: ACKs are ~1/20
of the data bytes)."""

HPCC_MODEL_LAYOUTS = 4096
"""Fixed points of :func:`~pwormhole.accel.steady.hpcc_model`, and shares of
:func:`~pwormhole.accel.steady.line_rate_shares`, kept per run, by flow layout (each memo starts
over when full)."""

LINE_RATE_WINDOW_SHARE = 0.8
"""A DCQCN flow frozen at its NIC's round-robin share (:func:`~pwormhole.accel.steady.line_rate_shares`)
has at most this share of its window in flight at that share over its path RTT (a window that binds
would hold it under the share)."""

NVLINK_AUTO, NVLINK_FLUID, NVLINK_PACKET = "auto", "fluid", "packet"
NVLINK_CHOICES = (NVLINK_AUTO, NVLINK_FLUID, NVLINK_PACKET)


# {hpcc?: value}: defaults by congestion control
MIN_SPAN_PACKETS = {False: 100, True: 500}
"""Goodput span (packets, ACK-timed): DCQCN holds its rate exactly; HPCC windows drift slowly
and shorter spans let a drifting flow look steady. Measured in bench/RESULTS.md."""

THETA = {False: 0.02, True: 0.005}
"""Steadiness threshold: HPCC's goodput settles through a damped oscillation that 0.02 reads
as steady across its crest. Measured in bench/RESULTS.md."""

SAMPLES = {False: 4, True: 8}
"""Samples a flow must be steady over: a DCQCN rate change is a step far over theta; HPCC
adjusts its window every ACK. Measured in bench/RESULTS.md."""

SETTLE_RTTS = 1.5
"""A goodput span is ACK-timed from this many path RTTs after the group's newest flow started
(the reverse direction's ACKs reach the shared ports by then). Measured in bench/RESULTS.md."""

BACKOFF_AFTER_SAMPLES = 64
"""A group of at least :data:`BACKOFF_MIN_FLOWS` flows not steady this many sampling periods
after it formed is sampled and checked only every :data:`BACKOFF_EVERY` periods, twice that
after each check that fails, up to every :data:`BACKOFF_MAX` periods (sampling costs per flow,
and a group that never settles must cost packet mode's time). What is left of such a group when a
flow leaves is checked every period for twice ``samples`` periods, then backs off at the level it
had. Measured in bench/RESULTS.md."""
BACKOFF_MIN_FLOWS = 16
"""See :data:`BACKOFF_AFTER_SAMPLES`."""
BACKOFF_EVERY = 8
"""See :data:`BACKOFF_AFTER_SAMPLES`."""
BACKOFF_MAX = 64
"""See :data:`BACKOFF_AFTER_SAMPLES`."""
BACKOFF_UNSETTLED_CHECKS = 16
"""A group of at least :data:`BACKOFF_MIN_FLOWS` flows that made this many backed-off checks, all
failed, since it could last settle (it formed from a flow start, split into several groups, or
woke) backs off further, to every :data:`BACKOFF_MAX_UNSETTLED` periods, and what is left of it
when a flow leaves (one group) gets no dense phase: its first check, at once, lacks the samples
since it formed, so its next real check comes at its level. Measured in bench/RESULTS.md."""
BACKOFF_MAX_UNSETTLED = 1024
"""See :data:`BACKOFF_UNSETTLED_CHECKS`."""
BACKOFF_KEEP_SAMPLES = 128
"""A flow of a backed-off group keeps this many samples (else 2048): at its sampling period they
span 8192 periods, more than a goodput span of the slowest flows needs, and the memory stays
that of packet mode."""

FRESH_WINDOWS = 4
"""A flow is new in a group when it started within this many windows of the group's forming."""

KNOWN_WINDOWS = 16
"""Under HPCC a group is looked up in the memo cache when each of its flows is new in it or
its group woke from a freeze within this many windows of the group's forming (a ring step's
successor joins the flows it shared the NICs with, woken for the step's end). Measured in
bench/RESULTS.md."""

SUCCESSOR_PACING_HEADROOM = 1.25
"""A ring step takes its predecessor's goodput only if every flow it shares data ports with,
of those that did not start before the predecessor did, is paced at least this many times its
own goodput: then the NIC's round robin, not HPCC's cuts, set the shares, and the new step's
start at line rate does not take more than its predecessor had. Measured in bench/RESULTS.md
("Hand-overs that HPCC's cuts undo")."""

SUCCESSOR_AFTER_END_MIN_BDPS = 32
"""A ring step that starts after the whole step before it ended takes that step's steady state
only if each of its flows is at least this many bandwidth-delay products (line rate x its path's
RTT): a step handed over comes out a fixed fraction of a microsecond off (its start and pipeline
are not replayed), a share of the step that shrinks with its size. MoE 8x7B's 26-BDP DP steps
were handed over 0.13% early (0.05% through the memo), GPT-7B's 123-BDP dist-opt steps 0.03%
(0.04%), its 31-BDP DP 16 steps 0.07% (0.14%): a bound on the safe side of the one case that
came out worse.
Measured in bench/RESULTS.md (``bench/flow_cost.py``)."""

HPCC_LIFT_MAX_NICS = 3
"""HPCC's fluid steady state lifts a switch port's throughput over ``U_TARGET`` by the additive
step (``steady.hpcc_lift``) only where the flows crossing it leave at most this many NICs; from
more senders a standing queue, not throughput, makes up HPCC's U. Measured in packet mode
(bench/RESULTS.md, "HPCC's additive step in the fluid steady state")."""

HPCC_CROWDED_NIC = 3
"""Under HPCC, flows fast-forwarded or replayed in a group where this many of its flows leave one
NIC are counted (``hpcc_crowded_nic_flows``) and the run warns: with three or more DP rings on
one NIC their FCTs are far off packet mode at p99, with two per NIC they stayed close
(bench/RESULTS.md, "Coupled rings: three or more rings on one NIC" and "Hand-overs that HPCC's
cuts undo")."""

RING_TEMPLATE_TOLERANCE = 0.001
"""A route's ring step becomes its template when the step before it took the same time from its
start to its last byte received and to its last ACK within this fraction: lock-step steps agree
to the nanosecond in packet runs, but for the last of a collective, 84 ns of 160 us
(bench/RESULTS.md, "Ring steps as one object")."""

REFILL_BUDGET = 0.01
"""A memo hit is refused when a flow's pipeline refill could be off by more than this fraction
of its size (``excess growth x (1 - goodput / line rate)``). Measured in bench/RESULTS.md."""

HPCC_FAIRNESS = 0.2
"""Under HPCC a group is not steady while a flow is more than this fraction off its max-min
share at the group's saturated ports. Measured in bench/RESULTS.md."""

HPCC_SATURATION = 0.03
"""A port is saturated for the HPCC fairness test when its data and ACK load reach
``1 - HPCC_SATURATION`` of ``U_TARGET`` times its rate."""

OVERLOAD_SLACK = 0.005
"""A group is not steady while its flows send more than ``1 + OVERLOAD_SLACK`` times a switch
port's rate into it (the slack covers the pacing's per-packet rounding)."""

FIFO_SATURATION = 0.02
"""A switch port is saturated for the FIFO-share solver at ``1 - FIFO_SATURATION`` of its rate."""

FIFO_SWEEPS = 50
"""At most this many Gauss-Seidel sweeps of the FIFO-share solver (the measured goodputs stand
when they do not settle). Measured in bench/RESULTS.md."""

FIFO_TOLERANCE = 1e-6
"""The FIFO-share solver settles when each saturated port's equation holds to this fraction of its rate."""

INFLIGHT_SLACK_PACKETS = 4
"""Over the goodput span a steady flow's bytes in flight may change by ``theta`` of the bytes
acknowledged plus this many packets (a growing queue is not steady). Measured in bench/RESULTS.md."""

INFLIGHT_BASELINE_SPANS = 4
"""The bytes-in-flight check is also made over up to this many goodput spans of the settled
history (a slowly filling queue). Measured in bench/RESULTS.md."""

HPCC_EARLY_TOLERANCE = 0.02
"""Under HPCC a group whose flows' goodputs over their last ``samples`` samples are within this
fraction of HPCC's fluid steady state (max-min at ``u_target`` of each switch port) is frozen
with the fluid state's goodputs before its damped oscillation has settled. Measured in
bench/RESULTS.md."""

HPCC_EARLY_WINDOW_SPREAD = 0.05
"""And when, among its flows with the same path RTT, window over fluid goodput spreads by at
most this fraction. Measured in bench/RESULTS.md."""

HPCC_EARLY_MIN_PACKETS = 64
"""The span of that test holds at least this many packets per flow (its last ``samples``
samples, or more for a slow flow)."""
