"""What every device of the packet model has: a port's serializer and a node's event keys,
RNG, routes and counters (the bases of :mod:`.switch` and :mod:`.host`).

Following the HPCC ns-3 simulator (alibaba-edu/High-Precision-Congestion-Control,
``simulation/src/point-to-point/model``, ``qbb-net-device.cc``): a port serializes one packet at
a time at its line rate; the packet reaches the peer after serialization plus propagation (store
and forward). Events go into ``node.heap`` (an :class:`~pwormhole.engine.events.EventQueue`) or,
for a node served by another heap, into the outbox given for it (the port's ``remote``), like
ns-3's remote point-to-point channel; whoever runs the nodes wires both with ``Node.attach``. Each
node draws its event keys from its own counter (``kbase + seq``) so that ties break the same way
however the nodes are split (docs/design.md invariant 2). Nothing in ``net/`` knows about windows,
ranks or acceleration.
"""

from __future__ import annotations

import random
from array import array
from collections.abc import Mapping, Sequence

from ..engine.events import EventQueue
from .packet import EV_TX_DONE, EV_WIRE, N_PRIORITIES, Fifo

PS_BITS = 8_000_000_000_000  # 8 bits/byte x 1e12 ps/s: serialization = ceil(bytes * PS_BITS / rate)
KEY_NODE_SHIFT = 40
# ECMP: next hop = bits 40.. of (flow hash XOR node salt) x this odd constant, mod the
# number of next hops. Python's hash((h, salt)) is not a fit: for two salts its low bits
# differ by a near-constant offset, so a flow's ToR choice fixed its aggregation choice
# (polarization: 1 of 4 core uplinks per aggregation switch with the same salt, 85% used
# with different salts on HPCC's fat.txt; tests/e2e/test_faults.py pins the spread).
ECMP_MIX = 0x9E3779B97F4A7C15
LOW32 = 0xFFFFFFFF
MIX_HI, MIX_LO = ECMP_MIX >> 32, ECMP_MIX & LOW32


def ecmp_index(h: int, salt: int, n: int) -> int:
    """The next hop among ``n``: ``(((h ^ salt) * ECMP_MIX) >> 40) % n`` for ``h``, ``salt`` < 2^63,
    by 32-bit halves (every partial result < 2^64: compiled, C unsigned arithmetic, no Python int)."""
    x = h ^ salt
    xh = x >> 32
    xl = x & LOW32
    lo = xl * MIX_LO
    mid1 = xh * MIX_LO
    mid2 = xl * MIX_HI
    r = (lo >> 32) + (mid1 & LOW32) + (mid2 & LOW32)
    p_lo = (lo & LOW32) + ((r & LOW32) << 32)  # x * ECMP_MIX = p_hi * 2^64 + p_lo
    p_hi = xh * MIX_HI + (mid1 >> 32) + (mid2 >> 32) + (r >> 32)
    return (((p_hi % n) << 24) + (p_lo >> 40)) % n


def ns3_tx_ps(size_bytes: int, rate_bps: int) -> int:
    """The time HPCC's ns-3 takes to send ``size_bytes`` at ``rate_bps``, in ps: whole ns, rounded
    down, bit for bit. ``Seconds(DataRate::CalculateTxTime(bytes))`` takes the double
    ``bytes * 8 / bps``, keeps 64 bits of its fraction (``int64x64_t(double)``), multiplies by 10^9
    and keeps the integer part (``Time(int64x64_t)``), so an exact whole number of ns usually
    lands 1 ns short (1000 bytes at 100 Gb/s: 79 ns; 12,825 bytes at 25 Gb/s: 4,104 ns, exact)."""
    d = size_bytes * 8 / rate_bps
    whole_s = int(d)
    frac64 = int((d - whole_s) * 18446744073709551616.0)  # the fraction in units of 2^-64 s, truncated
    # floor(frac64 * 10^9 / 2^64) by 32-bit halves (no product reaches 2^64)
    frac_ns = ((frac64 >> 32) * 1_000_000_000 + (((frac64 & LOW32) * 1_000_000_000) >> 32)) >> 32
    return (whole_s * 1_000_000_000 + frac_ns) * 1000


def counters():
    """One int64 counter per priority, all 0."""
    return array("q", bytes(8 * N_PRIORITIES))


def node_rng(seed: int, node_id: int) -> random.Random:
    """The per-node random stream, seeded from ``(seed, node_id)`` (docs/design.md invariant 7); its
    first 62 bits are the node's ECMP salt (:func:`node_salt`)."""
    return random.Random(seed * 1_000_003 + node_id * 7_919 + 1)


_SALTS: dict = {}  # (seed, node id) -> salt: the networks a process builds (standalone FCTs) share them


def node_salt(seed: int, node_id: int) -> int:
    """The first 62 bits of ``node_rng(seed, node_id)``: the node's ECMP hash salt (seeding a
    Mersenne Twister costs ~36 K instructions; a process builds a node for every hop of every
    standalone FCT's network)."""
    salt = _SALTS.get((seed, node_id))
    if salt is None:
        salt = _SALTS[(seed, node_id)] = node_rng(seed, node_id).getrandbits(62)
    return salt


class Port:
    """One direction of a link, owned by ``node``: queues, serializer, PFC state.

    Attributes (units in names): ``rate_bps``, ``delay_ps``, ``peer`` (node
    object at the far end), ``peer_idx`` (this link's port index at the peer),
    ``arrive_kind`` (event kind of an arrival at the peer), ``remote`` (outbox
    list when the peer is served by another heap, else None), ``paused`` (per priority:
    paused by the peer's PFC), ``error_rate`` (per-packet loss on this link),
    ``tx_bytes`` (bytes started on the wire so far: the per-link byte counter),
    ``up`` (False once the link failed: the port is then held busy for good),
    ``ns3_time`` (serialize in whole ns as ns-3 does, :func:`ns3_tx_ps`; else in ps, rounded up),
    ``wire`` (packets on the link to a peer of the same heap, in arrival order, each with its
    ``arrive_ps`` and ``arrive_key``; only the first is an event in the heap: see :meth:`on_wire`).
    """

    __slots__ = (
        "node", "idx", "rate_bps", "delay_ps", "peer", "peer_idx", "arrive_kind", "remote", "heap",
        "busy", "paused", "error_rate", "tx_bytes", "qbytes", "up", "wire", "ns3_time",
    )

    def __init__(self, node, idx: int, rate_bps: int, delay_ps: int, error_rate: float):
        self.node = node
        self.idx = idx
        self.rate_bps = rate_bps
        self.delay_ps = delay_ps
        self.peer: Node = None  # type: ignore[assignment]  # None until Network._wire, right after
        self.peer_idx = -1
        self.arrive_kind = 0
        self.remote: list[tuple] | None = None
        # None until Node.attach, which runs before any event: the per-packet path pushes unchecked
        self.heap: EventQueue = None  # type: ignore[assignment]
        self.busy = False
        self.paused = [False] * N_PRIORITIES
        self.error_rate = error_rate
        self.tx_bytes = 0  # cumulative bytes started on the wire (INT txBytes)
        self.qbytes = 0  # bytes waiting in this port's queues
        self.up = True
        self.wire = Fifo()
        self.ns3_time = False

    def transmit(self, pkt, t: int) -> None:
        """Start serializing ``pkt`` at ``t``: schedule tx-done here and the arrival at the peer."""
        self.busy = True
        size = pkt.size_bytes
        if self.ns3_time:
            tx_ps = ns3_tx_ps(size, self.rate_bps)
        else:
            tx_ps = -((-size * PS_BITS) // self.rate_bps)
        self.tx_bytes += size
        node = self.node
        k = node.kbase + node.seq
        node.seq += 2
        self.heap.push(t + tx_ps, k, EV_TX_DONE, self, None)
        if self.error_rate and node.draw() < self.error_rate:
            node.lost += 1
            return
        pkt.inport = self.peer_idx
        arrive_ps = t + tx_ps + self.delay_ps
        if self.remote is None:
            # arrivals on one link come in the order sent (a port serializes one packet at a time)
            wire = self.wire
            if not wire.size():
                self.heap.push(arrive_ps, k + 1, EV_WIRE, self, None)
            pkt.arrive_ps = arrive_ps
            pkt.arrive_key = k + 1
            wire.push(pkt)
        else:
            self.remote.append((arrive_ps, k + 1, self.arrive_kind, self.peer, pkt))

    def on_wire(self, _arg, t: int) -> None:
        """The first packet on the wire reaches the peer; the next one's arrival becomes the event.

        Each packet's arrival keeps the time and key it was sent with, so events run in the
        same order as with one heap event per packet; the heap holds one per busy link."""
        wire = self.wire
        pkt = wire.pop()
        if wire.size():
            nxt = wire.first()
            self.heap.push(nxt.arrive_ps, nxt.arrive_key, EV_WIRE, self, None)
        self.peer.on_arrive(pkt, t)

    def on_tx_done(self, _arg, t: int) -> None:
        self.busy = False
        self.kick(t)

    def kick(self, t: int) -> None:  # pragma: no cover - overridden
        raise AssertionError("abstract")

    def pause(self, pg: int, on: bool, t: int) -> None:
        """A PFC frame from the peer pauses (``on``) or resumes priority ``pg`` here."""
        self.paused[pg] = on
        node = self.node
        node.pfc_log.append((t, node.node_id, 1 if node.is_switch else 0, self.idx + 1, 1 if on else 0))
        if on:
            node.pfc_pauses_rx += 1
        elif not self.busy:
            self.kick(t)

    def hold(self) -> bool:
        """Hold the port: it sends nothing (``kick`` returns, arrivals queue up) until
        :meth:`release`. Returns the busy state to release it with."""
        was = self.busy
        self.busy = True
        return was

    def release(self, was_busy: bool) -> None:
        """End a :meth:`hold` (the caller kicks the released ports once all are released)."""
        self.busy = was_busy

    def queued(self):
        """The packets waiting in this port's queues."""
        return ()

    def carried(self, b: int) -> None:
        """``b`` bytes crossed this port without packets (a fast-forward): its byte counter moves."""
        self.tx_bytes += b

    def skip_time(self, t0_ps: int, d_ps: int) -> None:
        """Its traffic was fast-forwarded from ``t0_ps`` by ``d_ps``: move its pending deadlines."""

    def take_down(self, t: int) -> int:
        """The link failed at ``t``: this port never sends again (held busy; its
        tx-done event is removed by the caller), holds no pause, and drops what
        is queued. Returns the packets dropped."""
        self.up = False
        self.busy = True
        self.paused = [False] * N_PRIORITIES
        return 0


class RouteTable(dict):
    """A node's routes once a link has failed: a destination it no longer
    reaches maps to ``drop`` (a list holding a port that discards)."""

    __slots__ = ("drop",)

    def __init__(self, routes, drop):
        super().__init__(routes)
        self.drop = drop

    def __missing__(self, dst):
        return self.drop


class Node:
    """Common state of hosts and switches: ports, event key counter, RNG, counters."""

    is_switch = False

    def __init__(self, node_id: int, seed: int):
        self.node_id = node_id
        self.kbase = node_id << KEY_NODE_SHIFT
        self.seq = 0
        self.rng_seed = seed
        self.rng: random.Random | None = None  # its random stream past the salt, made at its first draw
        self.salt = node_salt(seed, node_id)  # ECMP hash salt, per node so tiers do not polarize
        # (a Switch has SwitchPorts, a Host HostPorts: the subclasses say which)
        self.ports: Sequence[Port] = []
        self.routes: Mapping[int, Sequence[Port]] = {}  # dst node id -> list of egress ports (equal-cost next hops)
        self.sole_port: Port | None = None  # a host with one port: every destination leaves by it (routes unused)
        # None until attach (Network.fail_link tells attached nodes by it); events run only on attached nodes
        self.heap: EventQueue = None  # type: ignore[assignment]
        self.pfc_log: list[tuple] = []
        self.pfc_pauses_rx = 0
        self.lost = 0  # packets lost to link errors when sent from here
        self.drops = 0  # packets dropped by buffer admission here

    def attach(self, heap: EventQueue, remote_boxes: dict, pfc_log: list, finished: list, op_log: list,
               flow_start_log: list) -> None:
        """Where this node puts its events and records, each shared by the nodes of one heap:
        ``heap`` (pending events), ``remote_boxes`` (node id -> outbox of the events for a node
        served by another heap), ``pfc_log`` (PFC frames received); at hosts also ``finished``
        ((flow id, finish_ps, start_ps) of completed flows), ``op_log`` ((op id, start_ps, end_ps)
        of workload ops ended) and ``flow_start_log`` (flow ids whose QP started)."""
        self.heap = heap
        self.pfc_log = pfc_log
        for port in self.ports:
            port.heap = heap
            port.remote = remote_boxes.get(port.peer.node_id)

    def on_arrive(self, pkt, t: int) -> None:  # pragma: no cover - overridden
        raise AssertionError("abstract")

    def pick_port(self, dst: int, h: int):
        if self.sole_port is not None:
            return self.sole_port
        ports = self.routes[dst]
        if len(ports) == 1:
            return ports[0]
        return ports[ecmp_index(h, self.salt, len(ports))]

    def draw(self) -> float:
        """The next number in [0, 1) of this node's random stream, past its salt's bits (ECN marking
        between the thresholds, link errors)."""
        rng = self.rng
        if rng is None:
            rng = self.rng = node_rng(self.rng_seed, self.node_id)
            rng.getrandbits(62)  # (the salt's)
        return rng.random()
