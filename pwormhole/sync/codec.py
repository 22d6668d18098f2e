"""Events bound for another rank as flat 64-bit integer arrays (the MPI exchange's wire format).

An event ``(t_ps, key, kind, target, packet)`` whose argument is a
:class:`~pwormhole.net.packet.Packet` becomes one row of ``ROW`` integers: the
event's time, key, kind and target node id, then every packet field, then the
number of INT hops (-1: none); the hops' ``(ts_ps, tx_bytes, qlen_bytes, rate_bps)``
follow in a second array. The MPI transport sends both arrays as they are, in
its int64 buffer (:mod:`.mpi`). Any other event (a workload DAG message) is
returned as ``(t_ps, key, kind, node id, arg)``. Decoding rebuilds equal packets
and events with the same keys.
"""

from __future__ import annotations

from array import array

from ..engine.events import ArrayQueue
from ..net.packet import Packet, new_packet

ROW = 20  # integers per packet event (see pack_events)
HOP = 4  # integers per INT hop


def pack_events(evs: list) -> tuple:
    """``(rows, hops, others)`` of events ``(t_ps, key, kind, target node, arg)``: packet
    events as int64 ``array`` rows, the others as ``(t_ps, key, kind, node id, arg)``."""
    n = 0
    n_hops = 0
    for ev in evs:
        arg = ev[4]
        if type(arg) is Packet:
            n += 1
            pkt = arg
            if pkt.int_hops is not None:
                n_hops += len(pkt.int_hops)
    rows = array("q", [0]) * (ROW * n)
    hops = array("q", [0]) * (HOP * n_hops)
    others = []
    r = rows  # compiled: typed views of the arrays (codec.pxd)
    h = hops
    i = 0
    j = 0
    for ev in evs:
        arg = ev[4]
        if type(arg) is not Packet:
            others.append((ev[0], ev[1], ev[2], ev[3].node_id, arg))
            continue
        pkt = arg  # compiled: a Packet, its fields read as C fields
        b = i * ROW
        r[b] = ev[0]
        r[b + 1] = ev[1]
        r[b + 2] = ev[2]
        r[b + 3] = ev[3].node_id
        r[b + 4] = pkt.kind
        r[b + 5] = pkt.fid
        r[b + 6] = pkt.seq
        r[b + 7] = pkt.size_bytes
        r[b + 8] = pkt.payload_bytes
        r[b + 9] = pkt.pg
        r[b + 10] = pkt.dst
        r[b + 11] = pkt.ecmp_hash
        r[b + 12] = 1 if pkt.ecn else 0
        r[b + 13] = pkt.pause
        r[b + 14] = pkt.sent_ps
        r[b + 15] = pkt.src
        r[b + 16] = pkt.inport
        r[b + 17] = pkt.arrive_ps
        r[b + 18] = pkt.arrive_key
        int_hops = pkt.int_hops
        if int_hops is None:
            r[b + 19] = -1
        else:
            r[b + 19] = len(int_hops)
            for hop in int_hops:
                h[j] = hop[0]
                h[j + 1] = hop[1]
                h[j + 2] = hop[2]
                h[j + 3] = hop[3]
                j += HOP
        i += 1
    return rows, hops, others


def earliest(evs: list, t_min_ps: int, horizon_ps: int, lead) -> tuple:
    """``(t_min_ps, horizon_ps)`` lowered by the events ``evs`` bound for another LP: by each event's
    time, and by its time plus the lead its receiver will see (``lead.lead_ps``, a
    :class:`~pwormhole.engine.events.Lead`)."""
    for ev in evs:
        t_ps = ev[0]
        if t_ps < t_min_ps:
            t_min_ps = t_ps
        if t_ps < horizon_ps:
            reach_ps = t_ps + lead.lead_ps(ev[2], ev[3], ev[4])
            if reach_ps < horizon_ps:
                horizon_ps = reach_ps
    return t_min_ps, horizon_ps


def unpack_events(rows, hops, others, nodes, heap) -> None:
    """Push the events :func:`pack_events` made into ``heap`` (``nodes``: node id -> node)."""
    r = rows  # compiled: typed views of the arrays (codec.pxd)
    h = hops
    aq = heap if type(heap) is ArrayQueue else None  # compiled: its push called in C, the integers unboxed
    n = len(rows) // ROW
    j = 0
    for i in range(n):
        b = i * ROW
        n_hops = r[b + 19]
        int_hops = None
        if n_hops >= 0:
            int_hops = []
            for _ in range(n_hops):
                int_hops.append((h[j], h[j + 1], h[j + 2], h[j + 3]))
                j += HOP
        pkt = new_packet(r[b + 4], r[b + 5], r[b + 6], r[b + 7], r[b + 8], r[b + 9], r[b + 10], r[b + 11],
                         r[b + 12] != 0, int_hops, r[b + 13], r[b + 14], r[b + 15])
        pkt.inport = r[b + 16]
        pkt.arrive_ps = r[b + 17]
        pkt.arrive_key = r[b + 18]
        if aq is not None:
            aq.push(r[b], r[b + 1], r[b + 2], nodes[r[b + 3]], pkt)
        else:
            heap.push(r[b], r[b + 1], r[b + 2], nodes[r[b + 3]], pkt)
    for t, k, kind, nid, arg in others:
        heap.push(t, k, kind, nodes[nid], arg)
