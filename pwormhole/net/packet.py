"""Packet and event layout of the packet-level model.

A packet is a :class:`Packet` built by :func:`new_packet` (compiled, a C struct
whose integer fields need no Python objects); it is mutable because switches
mark ECN and push INT hops into it. An event is a plain tuple
``(t_ps, key, kind, target, arg)`` (docs/design.md invariant 2); ``kind`` is one of
the ``EV_*`` constants and indexes the handler table (``nodes.handler_table``).

Wire sizes follow the HPCC ns-3 simulator (``simulation/src/point-to-point``):
a data packet is payload + PPP (14) + IPv4 (20) + UDP (8) + SeqTs (6) bytes,
plus the INT header (``IntHeader::GetStaticSize``: 5 hops x 8 + 2 = 42 bytes
under HPCC, an 8-byte timestamp under TIMELY, none otherwise); an ACK/NACK (a
12-byte qbb header plus that INT header) is padded to at least 26 bytes, then
gets the IP and PPP headers: 60 bytes without INT or with TIMELY's and 88 bytes
with HPCC's (``RdmaHw::ReceiveUdp``: ``60 - 14 - 20`` bytes at least). HPCC's
``PppHeader`` is 14 bytes, the size of an Ethernet header (``ppp-header.cc``,
``PppHeader::GetStaticSize``; plain ns-3's is 2): a 1000-byte payload is 1048
bytes on the wire under DCQCN, 1090 under HPCC.
"""


class Packet:
    """A data packet, ACK/NACK or PFC frame (fields as HPCC ns-3's headers carry them).

    ``kind``: T_DATA, T_ACK, T_NACK or T_PFC; ``fid``: flow id (-1: PFC); ``seq``: data: first
    payload byte, ACK/NACK: next expected byte (cumulative); ``size_bytes``: on the wire;
    ``payload_bytes``: 0 for control packets; ``pg``: priority group; ``dst``/``src``: node ids
    (``dst`` is the routing key); ``ecmp_hash``: the flow's 5-tuple hash; ``ecn``: CE mark
    (data) or CNP flag (an ACK echoes the mark, HPCC ns-3 style); ``int_hops``: HPCC INT
    records ``(ts_ps, tx_bytes, qlen_bytes, rate_bps)``, else None; ``inport``: the port it
    arrived on at the current node; ``pause``: PFC frames: 1 pause, 0 resume; ``sent_ps``:
    data under TIMELY, when its sender built it (TS-mode INT), else 0; an ACK/NACK echoes it;
    ``arrive_ps``, ``arrive_key``: on a wire (``Port.wire``), the time and key of its arrival event.
    """

    __slots__ = ("kind", "fid", "seq", "size_bytes", "payload_bytes", "pg", "dst", "ecmp_hash", "ecn",
                 "int_hops", "inport", "pause", "sent_ps", "src", "arrive_ps", "arrive_key")

    kind: int
    fid: int
    seq: int
    size_bytes: int
    payload_bytes: int
    pg: int
    dst: int
    ecmp_hash: int
    ecn: bool
    int_hops: list | None
    inport: int
    pause: int
    sent_ps: int
    src: int
    arrive_ps: int
    arrive_key: int


def new_packet(kind: int, fid: int, seq: int, size_bytes: int, payload_bytes: int, pg: int, dst: int,
               ecmp_hash: int, ecn: bool, int_hops: list | None, pause: int, sent_ps: int, src: int) -> Packet:
    """A :class:`Packet` (``inport`` 0 until it crosses a link)."""
    pkt = Packet.__new__(Packet)
    pkt.kind = kind
    pkt.fid = fid
    pkt.seq = seq
    pkt.size_bytes = size_bytes
    pkt.payload_bytes = payload_bytes
    pkt.pg = pg
    pkt.dst = dst
    pkt.ecmp_hash = ecmp_hash
    pkt.ecn = ecn
    pkt.int_hops = int_hops
    pkt.inport = 0
    pkt.pause = pause
    pkt.sent_ps = sent_ps
    pkt.src = src
    pkt.arrive_ps = 0
    pkt.arrive_key = 0
    return pkt

T_DATA = 0
T_ACK = 1
T_NACK = 2
T_PFC = 3

# event kinds (index into the handler table)
EV_ARRIVE_HOST = 0  # target: Host, arg: packet
EV_ARRIVE_SWITCH = 1  # target: Switch, arg: packet
EV_TX_DONE = 2  # target: Port, arg: None
EV_NIC_WAKE = 3  # target: HostPort, arg: None (pacing timer of the NIC)
EV_FLOW_START = 4  # target: Host, arg: flow id
EV_TIMER = 5  # target: Host, arg: (SendQP, timer kind, generation)
EV_OP_START = 6  # target: Host, arg: op id (a DAG op whose dependencies are met; waits for not_before)
EV_OP_DONE = 7  # target: Host, arg: op id (a compute op ends)
EV_NOTIFY = 8  # target: Host, arg: op id (a dependency that ended on another host)
EV_MODEL = 9  # target and arg: those of a model that registers its handler (LogicalProcess.set_handler)
EV_WIRE = 10  # target: Port, arg: None (the first packet on its wire reaches the peer: Port.on_wire)
N_EVENT_KINDS = 11

# QP timer kinds (EV_TIMER's arg[1]): DCQCN's timers (net/cc.py) and the retransmission timer
TM_ALPHA = 0
TM_DECREASE = 1
TM_RP = 2
TM_RTO = 3

N_PRIORITIES = 8  # HPCC qbb devices have 8 queues; queue 0 is strict priority

PPP_HEADER_BYTES = 14  # HPCC ns-3's PppHeader::GetStaticSize (an Ethernet header's size)
DATA_HEADER_BYTES = PPP_HEADER_BYTES + 20 + 8 + 6  # PPP, IPv4, UDP, SeqTs
INT_HEADER_BYTES = 42
TS_HEADER_BYTES = 8  # IntHeader in TS mode (TIMELY): one u64 timestamp
ACK_MIN_BYTES = 60  # RdmaHw::ReceiveUdp pads the qbb header to 60 - 14 - 20 bytes
ACK_INT_BYTES = PPP_HEADER_BYTES + 20 + 12 + INT_HEADER_BYTES
ACK_BASE_BYTES = PPP_HEADER_BYTES + 20 + 12  # PPP, IPv4, qbb header (ports, flags, PG, seq) without INT
INT_BYTES_BY_CC = {3: INT_HEADER_BYTES, 7: TS_HEADER_BYTES}  # CC_MODE -> IntHeader size (third.cc's mode)


def overhead_bytes(int_bytes: int) -> tuple[int, int]:
    """``(data packet header, ACK size)`` in bytes with an INT header of ``int_bytes``
    (:data:`INT_BYTES_BY_CC`; 0: none)."""
    return DATA_HEADER_BYTES + int_bytes, max(ACK_MIN_BYTES, ACK_BASE_BYTES + int_bytes)
PFC_FRAME_BYTES = 64
FIFO_COMPACT = 1024  # a Fifo drops its popped slots once this many and half its list are popped


def ecmp_hash(src: int, dst: int, sport: int, dport: int) -> int:
    """Deterministic 5-tuple hash of a flow (same in every process and run)."""
    return hash((src, dst, sport, dport, 17)) & 0x7FFFFFFFFFFFFFFF


class Fifo:
    """A first-in first-out queue (of packets, or of ``(arrive_ps, key, packet)`` on a wire).

    A list and the index of its head: compiled, pushing and popping are C calls, where a
    ``collections.deque`` costs a Python method call each. ``closed`` (a failed link's queue)
    discards what is pushed.
    """

    __slots__ = ("items", "head", "closed")

    def __init__(self) -> None:
        self.items: list = []
        self.head = 0
        self.closed = False

    def push(self, item) -> None:
        if not self.closed:
            self.items.append(item)

    def pop(self):
        """Remove and return the first item (the queue must not be empty)."""
        items = self.items
        head = self.head
        item = items[head]
        head += 1
        if head == len(items):
            items.clear()
            head = 0
        elif head >= FIFO_COMPACT and head + head >= len(items):
            del items[:head]
            head = 0
        else:
            items[head - 1] = None
        self.head = head
        return item

    def first(self):
        """The first item, left in place (the queue must not be empty)."""
        return self.items[self.head]

    def size(self) -> int:
        return len(self.items) - self.head

    def __len__(self) -> int:
        return len(self.items) - self.head

    def __bool__(self) -> bool:
        return len(self.items) > self.head

    def __iter__(self):
        return iter(self.items[self.head:])

    def clear(self) -> None:
        self.items.clear()
        self.head = 0

    def close(self) -> None:
        """Empty it for good: later pushes are discarded."""
        self.clear()
        self.closed = True
