"""Packet and event layout of the packet-level model.

A packet is a plain ``list`` indexed by the ``P_*`` constants below (a list,
not an object, to keep the per-packet path cheap; it is mutable because
switches mark ECN and push INT hops into it). An event is a plain tuple
``(t_ps, key, kind, target, arg)`` (DESIGN.md invariant 2); ``kind`` is one of
the ``EV_*`` constants and indexes the handler table (``nodes.handler_table``).

Wire sizes follow the HPCC ns-3 simulator (``simulation/src/point-to-point``):
a data packet is payload + PPP (2) + IPv4 (20) + UDP (8) + SeqTs (6) bytes,
plus the INT header (``IntHeader::GetStaticSize``: 5 hops x 8 + 2 = 42 bytes
under HPCC, an 8-byte timestamp under TIMELY, none otherwise); an ACK/NACK (a
12-byte qbb header plus that INT header) is padded to at least 60 bytes before the
IP and PPP headers, i.e. 48 bytes without INT or with TIMELY's and 76 bytes with
HPCC's (``RdmaHw::ReceiveUdp``).
"""

# packet fields
P_TYPE = 0  # T_DATA, T_ACK, T_NACK, T_PFC
P_FLOW = 1  # flow id
P_SEQ = 2  # data: first payload byte; ACK/NACK: next expected byte (cumulative)
P_SIZE = 3  # wire bytes
P_PAY = 4  # payload bytes (0 for control packets)
P_PG = 5  # priority group
P_DST = 6  # destination node id (routing key)
P_HASH = 7  # ECMP hash of the flow's 5-tuple
P_ECN = 8  # CE mark (data) / CNP flag (ACK echoes the mark, HPCC ns-3 style)
P_INT = 9  # HPCC INT hop records: list of (ts_ps, tx_bytes, qlen_bytes, rate_bps); None otherwise
P_INPORT = 10  # index of the port the packet arrived on at the current node
P_PAUSE = 11  # PFC frames: 1 = pause, 0 = resume
P_TS = 11  # data under TIMELY: when its sender built it (ps; TS-mode INT), else 0; ACK/NACK: echoed from the data
P_SRC = 12  # source node id

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
N_EVENT_KINDS = 10

N_PRIORITIES = 8  # HPCC qbb devices have 8 queues; queue 0 is strict priority

DATA_HEADER_BYTES = 2 + 20 + 8 + 6
INT_HEADER_BYTES = 42
TS_HEADER_BYTES = 8  # IntHeader in TS mode (TIMELY): one u64 timestamp
ACK_MIN_BYTES = 48
ACK_INT_BYTES = 76
ACK_BASE_BYTES = 2 + 20 + 12  # PPP, IPv4, qbb header (ports, flags, PG, seq) without INT
INT_BYTES_BY_CC = {3: INT_HEADER_BYTES, 7: TS_HEADER_BYTES}  # CC_MODE -> IntHeader size (third.cc's mode)


def overhead_bytes(int_bytes: int) -> tuple[int, int]:
    """``(data packet header, ACK size)`` in bytes with an INT header of ``int_bytes``
    (:data:`INT_BYTES_BY_CC`; 0: none)."""
    return DATA_HEADER_BYTES + int_bytes, max(ACK_MIN_BYTES, ACK_BASE_BYTES + int_bytes)
PFC_FRAME_BYTES = 64


def ecmp_hash(src: int, dst: int, sport: int, dport: int) -> int:
    """Deterministic 5-tuple hash of a flow (same in every process and run)."""
    return hash((src, dst, sport, dport, 17)) & 0x7FFFFFFFFFFFFFFF
