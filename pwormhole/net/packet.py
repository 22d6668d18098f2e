"""Packet and event layout of the packet-level model.

A packet is a plain ``list`` indexed by the ``P_*`` constants below (a list,
not an object, to keep the per-packet path cheap; it is mutable because
switches mark ECN and push INT hops into it). An event is a plain tuple
``(t_ps, key, kind, target, arg)`` (DESIGN.md invariant 2); ``kind`` is one of
the ``EV_*`` constants and indexes the handler table (``nodes.handler_table``).

Wire sizes follow the HPCC ns-3 simulator (``simulation/src/point-to-point``):
a data packet is payload + PPP (2) + IPv4 (20) + UDP (8) + SeqTs (6) bytes,
plus the INT header (``IntHeader::GetStaticSize``: 5 hops x 8 + 2 = 42 bytes)
under HPCC; an ACK/NACK is padded to at least 60 bytes before the IP and PPP
headers, i.e. 48 bytes without INT and 76 bytes with it (``RdmaHw::ReceiveUdp``).
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
ACK_MIN_BYTES = 48
ACK_INT_BYTES = 76


def overhead_bytes(int_telemetry: bool) -> tuple[int, int]:
    """``(data packet header, ACK size)`` in bytes, with HPCC's INT header and ACK INT fields or without."""
    if int_telemetry:
        return DATA_HEADER_BYTES + INT_HEADER_BYTES, ACK_INT_BYTES
    return DATA_HEADER_BYTES, ACK_MIN_BYTES
PFC_FRAME_BYTES = 64


def ecmp_hash(src: int, dst: int, sport: int, dport: int) -> int:
    """Deterministic 5-tuple hash of a flow (same in every process and run)."""
    return hash((src, dst, sport, dport, 17)) & 0x7FFFFFFFFFFFFFFF
