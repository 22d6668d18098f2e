"""The MPI exchange's wire format for events (pwormhole.sync.codec): what is decoded is what was sent."""

import pickle

from pwormhole.net.packet import T_ACK, T_DATA, T_PFC, new_packet
from pwormhole.sync.codec import pack_events, unpack_events

ROW = 20  # integers per packet event (codec.ROW, a C constant when compiled)

FIELDS = ("kind", "fid", "seq", "size_bytes", "payload_bytes", "pg", "dst", "ecmp_hash", "ecn", "int_hops",
          "inport", "pause", "sent_ps", "src", "arrive_ps", "arrive_key")


class Node:
    def __init__(self, node_id):
        self.node_id = node_id


class Heap:
    def __init__(self):
        self.events = []

    def push(self, t, key, kind, target, arg):
        self.events.append((t, key, kind, target, arg))


def _events(nodes):
    data = new_packet(T_DATA, 7, 123_000, 1_048, 1_000, 3, 5, 2**63 - 1, True,
                      [(2_000_000, 10_000, 4_096, 100 * 10**9), (2_001_000, 20_000, 0, 400 * 10**9)], 0, 0, 2)
    data.inport, data.arrive_ps, data.arrive_key = 4, 2_002_000, 99
    ack = new_packet(T_ACK, 7, 124_000, 76, 0, 3, 2, 2**40 + 3, False, [], 0, 17, 5)
    pfc = new_packet(T_PFC, -1, 0, 64, 0, 3, -1, 0, False, None, 1, 0, 6)
    return [(2_002_000, 99, 4, nodes[3], data), (2_003_000, 100, 5, nodes[1], ack),
            (2_004_000, 7, 6, nodes[2], ("op", 12)),  # not a packet (a DAG message): as it is
            (2_000_500, 101, 4, nodes[0], pfc)]


def test_every_field_and_key_comes_back():
    nodes = [Node(i) for i in range(4)]
    sent = _events(nodes)
    rows, hops, others = pickle.loads(pickle.dumps(pack_events(sent), pickle.HIGHEST_PROTOCOL))
    assert len(rows) == 3 * ROW and len(hops) == 2 * 4 and others == [(2_004_000, 7, 6, 2, ("op", 12))]
    heap = Heap()
    unpack_events(rows, hops, others, nodes, heap)
    got = {ev[1]: ev for ev in heap.events}
    assert sorted(got) == sorted(ev[1] for ev in sent)
    for t, key, kind, target, arg in sent:
        t2, _, kind2, target2, arg2 = got[key]
        assert (t2, kind2) == (t, kind) and target2 is target
        if key == 7:
            assert arg2 == arg
            continue
        for f in FIELDS:
            assert getattr(arg2, f) == getattr(arg, f), f
        assert arg2 is not arg


def test_nothing_to_send():
    rows, hops, others = pack_events([])
    assert len(rows) == 0 and len(hops) == 0 and others == []
    heap = Heap()
    unpack_events(rows, hops, others, [], heap)
    assert heap.events == []
