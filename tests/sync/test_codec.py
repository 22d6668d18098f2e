"""The MPI exchange's wire format for events (pwormhole.sync.codec): what is decoded is what was sent."""

import ast
import os
import pickle
import subprocess
import sys

import numpy as np
import pytest
from helpers import ROOT

from pwormhole.accel.sampling import sample_of
from pwormhole.engine.events import Lead
from pwormhole.net.packet import T_ACK, T_DATA, T_PFC, new_packet
from pwormhole.sync.codec import earliest, pack_events, unpack_events
from pwormhole.sync.mpi import _common_sections, _decode, _event_sections, _to0_sections

ROW = 20  # integers per packet event (codec.ROW, a C constant when compiled)
PACKET_SOURCE = ROOT / "pwormhole" / "net" / "packet.py"


def _packet_fields() -> tuple:
    """``Packet.__slots__`` as the model (packet.py) declares them (a compiled Packet has none)."""
    tree = ast.parse(PACKET_SOURCE.read_text())
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Packet")
    slots = next(n for n in cls.body if isinstance(n, ast.Assign) and n.targets[0].id == "__slots__")
    return ast.literal_eval(slots.value)


FIELDS = _packet_fields()


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


def test_every_field_of_the_model_is_checked():
    assert len(FIELDS) == 16 and "int_hops" in FIELDS and "arrive_key" in FIELDS


@pytest.mark.skipif(os.environ.get("PWORMHOLE_PURE", "") not in ("", "0"), reason="this is the pure run")
def test_pure_codec_too():
    out = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", __file__, "-k",
                          "every_field_and_key or nothing_to_send or earliest or mpi_wire"],
                         env={**os.environ, "PWORMHOLE_PURE": "1"}, capture_output=True, text=True)
    assert out.returncode == 0 and "4 passed" in out.stdout, out.stdout + out.stderr


def test_nothing_to_send():
    rows, hops, others = pack_events([])
    assert len(rows) == 0 and len(hops) == 0 and others == []
    heap = Heap()
    unpack_events(rows, hops, others, [], heap)
    assert heap.events == []


class MessageLead(Lead):
    """A DAG message (kind 6) leads 5 us after its time; packets at once."""

    def lead_ps(self, kind, target, arg):
        return 5_000_000 if kind == 6 else 0


def test_earliest_of_what_is_sent():
    """The rank's minimum and horizon take in the events it sends: each one's time, and its time plus the
    lead its receiver sees."""
    sent = _events([Node(i) for i in range(4)])  # times 2.0005 (PFC), 2.002, 2.003 us; the message at 2.004 us
    assert earliest(sent, 10**12, 10**12, Lead()) == (2_000_500, 2_000_500)
    assert earliest(sent, 10**12, 10**12, MessageLead()) == (2_000_500, 2_000_500)
    assert earliest(sent[2:3], 10**12, 10**12, MessageLead()) == (2_004_000, 7_004_000)
    assert earliest(sent[2:3], 3_000_000, 6_000_000, MessageLead()) == (2_004_000, 6_000_000)  # the heap's horizon
    assert earliest([], 5, 9, Lead()) == (5, 9)


def test_mpi_wire_message_comes_back():
    """A window's message between two ranks as int64 sections (``sync/mpi.py``): events bound for the
    peer, the common part (minimum, horizon, counts, signal, flush flag, tracked completions, Wormhole's
    report with its samples) and what only rank 0 gets (PFC records, held records and their lines)."""
    nodes = [Node(i) for i in range(4)]
    sent = _events(nodes)
    sent[2] = (2_004_000, 7, 6, nodes[2], 12)  # a DAG message: its argument is an op id
    samples = [(3, sample_of((2_000_000, 10**11, 4096, 1_999_000, 8192, -1, 0, 10**11))),
               (9, sample_of((2_000_000, 5 * 10**10, 0, 0, 1048, 2_100_000, 2, 5 * 10**10)))]
    mine = (2_000_500, 2_000_500, [(3, 1_500_000, 1_000)], 1, 2, ([3, 9], samples), 15, True)
    fin = np.array([[3, 1_500_000, 1_000], [4, 1_600_000, 0]], dtype=np.int64)
    ops = np.array([[11, 0, 5_000]], dtype=np.int64)
    lines = "3 line\n4 line\n"  # 14 bytes: padded to two int64s
    pfc = [(1_000, 7, 1, 2, 1), (2_000, 7, 1, 2, 0)]
    ints = np.concatenate(_event_sections(pack_events(sent)) + _common_sections(mine)
                          + _to0_sections(pfc, (fin, ops, lines)))
    evs, to0, got = _decode(ints.copy(), sample_of)
    assert got == mine and got[5][1][1][1].una_ps == 0 and got[5][1][0][1].una_bytes == 4096
    assert to0[0] == pfc and to0[1][2] == lines
    assert to0[1][0].tolist() == fin.tolist() and to0[1][1].tolist() == ops.tolist()
    assert evs[2] == [(2_004_000, 7, 6, 2, 12)]
    heap = Heap()
    unpack_events(evs[0], evs[1], [], nodes, heap)
    got_pkts = {ev[1]: ev for ev in heap.events}
    assert sorted(got_pkts) == [99, 100, 101]
    for t, key, kind, target, arg in sent:
        if key in got_pkts:
            assert got_pkts[key][:4] == (t, key, kind, target)
            assert all(getattr(got_pkts[key][4], f) == getattr(arg, f) for f in FIELDS)
            assert type(got_pkts[key][0]) is int and type(got_pkts[key][4].seq) is int  # not numpy's int64
    assert type(got_pkts[99][4].int_hops[0][0]) is int
    # nothing to send, no report, and not a hand-on window: rank 0's part has no batch
    ints = np.concatenate(_event_sections(None) + _common_sections((5, 6, [], 0, 0, None, 0, False))
                          + _to0_sections([], None))
    assert _decode(ints, sample_of) == (None, ([], None), (5, 6, [], 0, 0, None, 0, False))
    ints = np.concatenate(_event_sections(None) + _common_sections((5, 6, [], 0, 0, ([], None), 0, False)))
    assert _decode(ints, sample_of) == (None, None, (5, 6, [], 0, 0, ([], None), 0, False))
    # a report with a third part: two lists of integer pairs (carried ring steps' starts, receipts)
    rep = ([7], None, ([(7, 3_000_000), (8, 3_100_000)], [(5, 2_900_000)]))
    ints = np.concatenate(_event_sections(None) + _common_sections((5, 6, [], 0, 0, rep, 0, False)))
    assert _decode(ints, sample_of)[2][5] == rep
    rep = ([], samples, ([], []))
    ints = np.concatenate(_event_sections(None) + _common_sections((5, 6, [], 0, 0, rep, 0, False)))
    assert _decode(ints, sample_of)[2][5] == rep
