"""Reader for ASTRA-sim 2.x Chakra execution traces (``.et``), one file per rank.

Format. A Chakra ET file is a stream of protobuf messages, each preceded by its
length as a base-128 varint (protobuf's ``writeDelimitedTo``): first one
``GlobalMetadata``, then one ``Node`` per operation. The schema is
``schema/protobuf/et_def.proto`` of mlcommons/chakra (package
``ChakraProtoMsg``; ASTRA-sim's examples carry version ``0.0.4``). No Chakra
package is published on PyPI, so this module decodes the protobuf wire format
itself (varint, 64-bit, length-delimited and 32-bit fields; unknown fields are
skipped, as protobuf does) and reads only these fields::

    message GlobalMetadata { string version = 1; repeated AttributeProto attr = 2; }
    message Node {
      uint64 id = 1; string name = 2; NodeType type = 3;
      repeated uint64 ctrl_deps = 4; repeated uint64 data_deps = 5;
      uint64 start_time_micros = 6; uint64 duration_micros = 7;
      repeated AttributeProto attr = 10;
    }
    message AttributeProto { string name = 1; oneof value { double double_val = 3; ...
                             int64 int64_val = 9; ... bool bool_val = 27; string string_val = 29; ... } }
    enum NodeType { COMP_NODE = 4; COMM_SEND_NODE = 5; COMM_RECV_NODE = 6; COMM_COLL_NODE = 7; ... }
    enum CollectiveCommType { ALL_REDUCE = 0; REDUCE = 1; ALL_GATHER = 2; GATHER = 3; SCATTER = 4;
                              BROADCAST = 5; ALL_TO_ALL = 6; REDUCE_SCATTER = 7;
                              REDUCE_SCATTER_BLOCK = 8; BARRIER = 9; }

Node attributes used: ``comm_type`` (a CollectiveCommType), ``comm_size``
(bytes), ``comm_src`` / ``comm_dst`` (peer ranks of a receive / send),
``comm_tag``, ``pg_name`` (the process group of a collective).

Files. ``read_chakra(P, gpu_hosts)`` takes a directory holding
``NAME.0.et``, ``NAME.1.et``, ... (one NAME) or the prefix ``DIR/NAME`` (or
``DIR/NAME.``); ranks must be ``0 .. N-1``; rank ``r`` runs on
``gpu_hosts[r]``.

Mapping to the workload DAG:

* ``COMP_NODE``: ``dag.compute`` of ``duration_micros`` on the rank's GPU (one
  compute stream per GPU; ASTRA-sim's roofline from ``num_ops`` is not used).
* ``COMM_COLL_NODE``: one collective instance across the ranks taking part,
  built with :func:`pwormhole.workload.collectives.collective` in rank order.
  The ranks are those whose traces hold collectives of the node's ``pg_name``
  (all ranks when it has none, ASTRA-sim's default group) or, with
  ``comm_groups``, the ranks listed for that ``pg_name``. The ``k``-th
  collective of a group in one rank's file (file order) is the same instance as
  the ``k``-th in every other member's file; their type and size must agree.
  Types: ``ALL_REDUCE`` -> ring all-reduce of ``comm_size``;
  ``REDUCE_SCATTER``/``REDUCE_SCATTER_BLOCK`` -> reduce-scatter of
  ``comm_size``; ``ALL_TO_ALL`` -> all-to-all of ``comm_size``;
  ``ALL_GATHER`` -> all-gather of ``comm_size * N``, because ASTRA-sim's ring
  all-gather sends ``comm_size`` bytes per step (its ``final_data_size`` is
  ``comm_size * N``) while ours sends ``S / N``; ``BARRIER`` -> a zero-byte
  join: each member's done mark waits for every member's dependencies.
  ``REDUCE``, ``GATHER``, ``SCATTER`` and ``BROADCAST`` are rejected, as
  ASTRA-sim's system layer has no implementation of them either.
* ``COMM_SEND_NODE`` (``comm_dst``) and ``COMM_RECV_NODE`` (``comm_src``):
  matched in file order per ``(sender, receiver, comm_tag)``, sizes must
  agree; together one flow from the sender's GPU to the receiver's. The flow
  starts when the send node's dependencies are met; the send node is done on
  the last ACK (the flow op at its source); the receive node is a mark on the
  receiver that waits for the flow and for the receive node's own
  dependencies.
* Any other node type (``METADATA_NODE``, ``MEM_LOAD_NODE``, ...): a compute op
  of its ``duration_micros`` (a mark when 0), keeping the dependencies.
* ``ctrl_deps`` and ``data_deps`` within a rank become DAG dependencies (on
  the op that ends the node: the collective member's done mark, the send's
  flow, the receive's mark, the compute op).

Ops are added in an order that respects dependencies across all ranks
(collective instances and send/receive pairs are single units); a cycle is
an error.
"""

from __future__ import annotations

import glob
import heapq
import os
import re
import struct
from dataclasses import dataclass, field
from typing import Any

from pwormhole.errors import InputError
from pwormhole.units import PS_PER_US
from pwormhole.workload.collectives import collective
from pwormhole.workload.dag import Collective, Dag

# NodeType (et_def.proto)
NODE_TYPES = {0: "INVALID_NODE", 1: "METADATA_NODE", 2: "MEM_LOAD_NODE", 3: "MEM_STORE_NODE", 4: "COMP_NODE",
              5: "COMM_SEND_NODE", 6: "COMM_RECV_NODE", 7: "COMM_COLL_NODE", 8: "STORAGE_NODE", 9: "BATCH_NODE",
              10: "CHECKPOINT_NODE"}
COMP_NODE, COMM_SEND_NODE, COMM_RECV_NODE, COMM_COLL_NODE = 4, 5, 6, 7
# CollectiveCommType (et_def.proto)
COMM_TYPES = {0: "ALL_REDUCE", 1: "REDUCE", 2: "ALL_GATHER", 3: "GATHER", 4: "SCATTER", 5: "BROADCAST",
              6: "ALL_TO_ALL", 7: "REDUCE_SCATTER", 8: "REDUCE_SCATTER_BLOCK", 9: "BARRIER"}
_OUR_KIND = {"ALL_REDUCE": "allreduce", "ALL_GATHER": "allgather", "REDUCE_SCATTER": "reducescatter",
             "REDUCE_SCATTER_BLOCK": "reducescatter", "ALL_TO_ALL": "alltoall", "BARRIER": "barrier"}


# -- protobuf wire format ---------------------------------------------------------

class _WireError(Exception):
    pass


def _varint(buf: bytes, pos: int, end: int) -> tuple[int, int]:
    result = 0
    shift = 0
    while True:
        if pos >= end:
            raise _WireError("truncated varint")
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, pos
        shift += 7
        if shift >= 70:
            raise _WireError("varint longer than 10 bytes")


def _fields(buf: bytes, pos: int, end: int):
    """Yield ``(field_number, wire_type, value)``; value: int (0, 1, 5) or ``(start, stop)`` (2)."""
    v: Any
    while pos < end:
        key, pos = _varint(buf, pos, end)
        num, wt = key >> 3, key & 7
        if num == 0:
            raise _WireError("field number 0")
        if wt == 0:
            v, pos = _varint(buf, pos, end)
        elif wt == 1:
            if pos + 8 > end:
                raise _WireError("truncated 64-bit field")
            v = int.from_bytes(buf[pos:pos + 8], "little")
            pos += 8
        elif wt == 2:
            n, pos = _varint(buf, pos, end)
            if pos + n > end:
                raise _WireError(f"length-delimited field {num} runs past the end of its message")
            v = (pos, pos + n)
            pos += n
        elif wt == 5:
            if pos + 4 > end:
                raise _WireError("truncated 32-bit field")
            v = int.from_bytes(buf[pos:pos + 4], "little")
            pos += 4
        else:
            raise _WireError(f"unsupported wire type {wt} (field {num})")
        yield num, wt, v


def _signed64(v: int) -> int:
    return v - (1 << 64) if v >= 1 << 63 else v


def _zigzag(v: int) -> int:
    return (v >> 1) ^ -(v & 1)


def _packed_or_one(buf: bytes, wt: int, v) -> list[int]:
    """A repeated varint field: one value (unpacked) or a packed run."""
    if wt == 0:
        return [v]
    if wt != 2:
        raise _WireError(f"repeated integer field of wire type {wt}")
    out = []
    pos, end = v
    while pos < end:
        x, pos = _varint(buf, pos, end)
        out.append(x)
    return out


def _attribute(buf: bytes, start: int, end: int) -> tuple[str, object]:
    """Decode an AttributeProto into ``(name, value)``."""
    name = ""
    value: Any = None
    for num, wt, v in _fields(buf, start, end):
        if num == 1 and wt == 2:
            name = buf[v[0]:v[1]].decode("utf-8", "replace")
        elif num == 2:
            continue  # doc_string
        elif num in (7, 9) and wt == 0:  # int32 / int64
            value = _signed64(v)
        elif num in (11, 13) and wt == 0:  # uint32 / uint64
            value = v
        elif num in (15, 17) and wt == 0:  # sint32 / sint64
            value = _zigzag(v)
        elif num == 27 and wt == 0:
            value = bool(v)
        elif num in (29, 31) and wt == 2:  # string / bytes
            raw = buf[v[0]:v[1]]
            value = raw.decode("utf-8", "replace") if num == 29 else raw
        elif num == 3 and wt == 1:
            value = struct.unpack("<d", v.to_bytes(8, "little"))[0]
        elif num == 5 and wt == 5:
            value = struct.unpack("<f", v.to_bytes(4, "little"))[0]
        elif num in (19, 23) and wt == 5:  # fixed32 / sfixed32
            value = v if num == 19 else (v - (1 << 32) if v >= 1 << 31 else v)
        elif num in (21, 25) and wt == 1:  # fixed64 / sfixed64
            value = v if num == 21 else _signed64(v)
        elif 4 <= num <= 32 and num % 2 == 0 and wt == 2:  # *List messages: repeated values = 1
            vals: list[Any] = []
            for n2, w2, v2 in _fields(buf, v[0], v[1]):
                if n2 != 1:
                    continue
                if w2 == 2 and num in (30, 32):
                    raw = buf[v2[0]:v2[1]]
                    vals.append(raw.decode("utf-8", "replace") if num == 30 else raw)
                elif w2 == 2:
                    p, e = v2
                    if num in (4,):  # packed doubles
                        vals.extend(struct.unpack(f"<{(e - p) // 8}d", buf[p:e]))
                    elif num == 6:
                        vals.extend(struct.unpack(f"<{(e - p) // 4}f", buf[p:e]))
                    elif num in (20, 24):
                        vals.extend(int.from_bytes(buf[i:i + 4], "little") for i in range(p, e, 4))
                    elif num in (22, 26):
                        vals.extend(int.from_bytes(buf[i:i + 8], "little") for i in range(p, e, 8))
                    else:
                        xs = _packed_or_one(buf, 2, v2)
                        if num in (8, 10):
                            xs = [_signed64(x) for x in xs]
                        elif num in (16, 18):
                            xs = [_zigzag(x) for x in xs]
                        elif num == 28:
                            xs = [bool(x) for x in xs]
                        vals.extend(xs)
                else:
                    vals.append(v2)
            value = vals
    return name, value


@dataclass
class ChakraNode:
    """The fields of one Chakra ``Node`` that the reader uses."""

    id: int
    name: str
    type: int
    ctrl_deps: list[int] = field(default_factory=list)
    data_deps: list[int] = field(default_factory=list)
    duration_micros: int = 0
    attrs: dict[str, Any] = field(default_factory=dict)
    index: int = 0  # position in the file (0-based, after the metadata record)
    offset: int = 0  # byte offset of the record in the file

    @property
    def type_name(self) -> str:
        return NODE_TYPES.get(self.type, f"node type {self.type}")


@dataclass
class ChakraTrace:
    """One rank's trace: metadata version and attributes, and its nodes in file order."""

    path: str
    version: str
    metadata: dict[str, object]
    nodes: list[ChakraNode]


def _node(buf: bytes, start: int, end: int) -> ChakraNode:
    n = ChakraNode(0, "", 0)
    for num, wt, v in _fields(buf, start, end):
        if num == 1 and wt == 0:
            n.id = v
        elif num == 2 and wt == 2:
            n.name = buf[v[0]:v[1]].decode("utf-8", "replace")
        elif num == 3 and wt == 0:
            n.type = v
        elif num == 4:
            n.ctrl_deps.extend(_packed_or_one(buf, wt, v))
        elif num == 5:
            n.data_deps.extend(_packed_or_one(buf, wt, v))
        elif num == 7 and wt == 0:
            n.duration_micros = v
        elif num == 10 and wt == 2:
            k, val = _attribute(buf, v[0], v[1])
            n.attrs[k] = val
    return n


def read_chakra_trace(path: str | os.PathLike) -> ChakraTrace:
    """Decode one ``.et`` file: the metadata record, then every node record.

    Raises:
        InputError naming the file and the byte offset of the bad record for: a
        file that cannot be read; an empty file; a record whose length prefix
        or content is not valid protobuf wire format (truncated, unknown wire
        type); a node id given twice.
    """
    spath = str(path)
    try:
        with open(path, "rb") as fh:
            buf = fh.read()
    except OSError as e:
        raise InputError(f"cannot open Chakra trace: {e.strerror or e}", spath) from None
    if not buf:
        raise InputError("empty Chakra trace (expected a GlobalMetadata record)", spath)
    pos = 0
    version = ""
    meta: dict[str, object] = {}
    nodes: list[ChakraNode] = []
    ids: dict[int, int] = {}
    rec = 0
    while pos < len(buf):
        at = pos
        try:
            n, pos = _varint(buf, pos, len(buf))
            if pos + n > len(buf):
                raise _WireError(f"record of {n} bytes runs past the end of the file ({len(buf) - pos} left)")
            if rec == 0:
                for num, wt, v in _fields(buf, pos, pos + n):
                    if num == 1 and wt == 2:
                        version = buf[v[0]:v[1]].decode("utf-8", "replace")
                    elif num == 2 and wt == 2:
                        k, val = _attribute(buf, v[0], v[1])
                        meta[k] = val
            else:
                node = _node(buf, pos, pos + n)
                node.index = rec - 1
                node.offset = at
                if node.id in ids:
                    raise InputError(f"node id {node.id} appears twice (node records {ids[node.id]} and {rec - 1}, "
                                     f"the second at byte {at})", spath)
                ids[node.id] = rec - 1
                nodes.append(node)
        except _WireError as e:
            what = "GlobalMetadata record" if rec == 0 else f"node record {rec - 1}"
            raise InputError(f"not a Chakra trace: {what} at byte {at} is not valid protobuf ({e})", spath) from None
        pos += n
        rec += 1
    return ChakraTrace(spath, version, meta, nodes)


def find_rank_files(path: str | os.PathLike) -> list[str]:
    """Rank files of a trace: ``path`` is a directory, a ``DIR/NAME`` (``DIR/NAME.``) prefix or one
    rank file ``DIR/NAME.<rank>.et`` (standing for all of its ranks).

    Returns the files ``NAME.0.et .. NAME.(N-1).et`` in rank order. Raises
    InputError when none is found, a directory holds several NAMEs, or a rank
    is missing.
    """
    spath = str(path)
    pat = re.compile(r"^(.*)\.(\d+)\.et$")
    if os.path.isdir(spath):
        cands = glob.glob(os.path.join(glob.escape(spath), "*.et"))
    else:
        one = pat.match(spath) if os.path.isfile(spath) else None
        prefix = one.group(1) if one else spath[:-1] if spath.endswith(".") else spath
        cands = glob.glob(glob.escape(prefix) + ".*.et")
    by_name: dict[str, dict[int, str]] = {}
    for c in cands:
        m = pat.match(c)
        if m:
            by_name.setdefault(m.group(1), {})[int(m.group(2))] = c
    if not by_name:
        raise InputError("no Chakra trace files NAME.<rank>.et found (give a folder or the prefix DIR/NAME)", spath)
    if len(by_name) > 1:
        names = sorted(os.path.basename(k) for k in by_name)
        raise InputError(f"several traces in one folder ({', '.join(names[:5])}); give the prefix DIR/NAME", spath)
    ranks = next(iter(by_name.values()))
    n = max(ranks) + 1
    missing = [r for r in range(n) if r not in ranks]
    if missing:
        raise InputError(f"rank file(s) missing for rank(s) {missing[:8]} (found ranks {sorted(ranks)[:8]}...)", spath)
    return [ranks[r] for r in range(n)]


def _int_attr(node: ChakraNode, key: str, where: str, required: bool = True, default: int = 0) -> int:
    v = node.attrs.get(key)
    if v is None:
        if required:
            raise InputError(f"{node.type_name} {node.id} ({node.name!r}) has no {key} attribute", where)
        return default
    if isinstance(v, bool) or not isinstance(v, int):
        raise InputError(f"{node.type_name} {node.id} ({node.name!r}): {key} {v!r} is not an integer", where)
    return v


def read_chakra(path: str | os.PathLike, gpu_hosts: list[int],
                comm_groups: dict[str, list[int]] | None = None) -> Dag:
    """Read a Chakra trace (one ``.et`` file per rank) into a :class:`Dag`.

    Args:
        path: the folder of the rank files or their prefix (see :func:`find_rank_files`).
        gpu_hosts: host node id per rank (``topo.gpus``); rank ``r`` runs on ``gpu_hosts[r]``.
        comm_groups: optional ``pg_name -> ranks`` (ASTRA-sim's
            ``--comm-group-configuration`` JSON); without it a group's ranks are
            those whose traces use that ``pg_name``.

    Returns:
        The DAG (mapping in the module docstring) with ``gpu_of_host`` set,
        ``collectives`` holding one instance per collective, and labels
        ``r<rank>:<node name>``.

    Raises:
        InputError naming the rank file and the node for: unreadable files
        (:func:`read_chakra_trace`); more ranks than ``gpu_hosts``; a
        dependency on a node id absent from the rank's file; a collective
        type we do not simulate or a missing ``comm_type``/``comm_size``;
        collective instances whose members disagree on type or size, or
        members with different numbers of collectives in a group; a send or
        receive without its counterpart, with a peer rank out of range or
        equal to itself, or with a size differing from its counterpart's;
        dependencies that form a cycle.
    """
    files = find_rank_files(path)
    n_ranks = len(files)
    if n_ranks > len(gpu_hosts):
        raise InputError(f"the trace has {n_ranks} ranks but the topology has only {len(gpu_hosts)} GPUs", str(path))
    traces = [read_chakra_trace(f) for f in files]

    # units: ("node", rank, idx) | ("coll", group key, k) | ("p2p", key, k); every node -> one unit
    unit_of: dict[tuple[int, int], tuple] = {}
    units: dict[tuple, list[tuple[int, int]]] = {}
    coll_seq: dict[str, dict[int, list[int]]] = {}  # group -> rank -> node indexes (file order)
    sends: dict[tuple[int, int, int], list[int]] = {}  # (src, dst, tag) -> node indexes on src
    recvs: dict[tuple[int, int, int], list[int]] = {}
    for r, tr in enumerate(traces):
        for i, nd in enumerate(tr.nodes):
            if nd.type == COMM_COLL_NODE:
                ct = _int_attr(nd, "comm_type", tr.path)
                cname = COMM_TYPES.get(ct)
                if cname not in _OUR_KIND:
                    raise InputError(f"COMM_COLL_NODE {nd.id} ({nd.name!r}): collective type "
                                     f"{cname or ct} is not supported (supported: ALL_REDUCE, ALL_GATHER, "
                                     f"REDUCE_SCATTER, REDUCE_SCATTER_BLOCK, ALL_TO_ALL, BARRIER)", tr.path)
                _int_attr(nd, "comm_size", tr.path, required=cname != "BARRIER")
                pg = nd.attrs.get("pg_name")
                group = pg if isinstance(pg, str) and pg else ""
                coll_seq.setdefault(group, {}).setdefault(r, []).append(i)
            elif nd.type in (COMM_SEND_NODE, COMM_RECV_NODE):
                send = nd.type == COMM_SEND_NODE
                peer = _int_attr(nd, "comm_dst" if send else "comm_src", tr.path)
                if not 0 <= peer < n_ranks or peer == r:
                    raise InputError(f"{nd.type_name} {nd.id} ({nd.name!r}): peer rank {peer} is out of range "
                                     f"0..{n_ranks - 1} or this rank", tr.path)
                tag = _int_attr(nd, "comm_tag", tr.path, required=False)
                _int_attr(nd, "comm_size", tr.path)
                key = (r, peer, tag) if send else (peer, r, tag)
                (sends if send else recvs).setdefault(key, []).append(i)
            else:
                u: tuple = ("node", r, i)
                unit_of[(r, i)] = u
                units[u] = [(r, i)]

    # collective instances
    coll_info: dict[tuple, tuple[str, int, list[int]]] = {}
    for group, per_rank in coll_seq.items():
        if comm_groups is not None and group:
            if group not in comm_groups:
                raise InputError(f"pg_name {group!r} is not in the communicator groups given", str(path))
            members = sorted(comm_groups[group])
            for r in per_rank:
                if r not in members:
                    raise InputError(f"rank {r} runs collectives of pg_name {group!r} but is not in its group "
                                     f"{members}", files[r])
        elif group:
            members = sorted(per_rank)
        else:
            members = list(range(n_ranks))
        counts = {r: len(per_rank.get(r, [])) for r in members}
        k_max = max(counts.values())
        for r in members:
            if counts[r] != k_max:
                gname = f"pg_name {group!r}" if group else "the default group (all ranks)"
                raise InputError(f"rank {r} has {counts[r]} collectives of {gname} but rank "
                                 f"{max(counts, key=lambda q: counts[q])} has {k_max}: collectives are matched "
                                 f"across ranks by order", files[r])
        for k in range(k_max):
            u = ("coll", group, k)
            first_r = members[0]
            ref = traces[first_r].nodes[per_rank[first_r][k]]
            ref_t, ref_s = ref.attrs["comm_type"], ref.attrs.get("comm_size", 0)
            lst = []
            for r in members:
                nd = traces[r].nodes[per_rank[r][k]]
                if nd.attrs["comm_type"] != ref_t or nd.attrs.get("comm_size", 0) != ref_s:
                    raise InputError(
                        f"collective #{k + 1} of {'pg_name ' + repr(group) if group else 'all ranks'} differs "
                        f"between ranks: rank {first_r} node {ref.id} is {COMM_TYPES[ref_t]} of {ref_s} B, rank {r} "
                        f"node {nd.id} ({nd.name!r}) is {COMM_TYPES.get(nd.attrs['comm_type'])} of "
                        f"{nd.attrs.get('comm_size', 0)} B", files[r])
                unit_of[(r, per_rank[r][k])] = u
                lst.append((r, per_rank[r][k]))
            units[u] = lst
            coll_info[u] = (COMM_TYPES[ref_t], int(ref_s), members)

    # send/receive pairs
    for key in sorted(set(sends) | set(recvs)):
        s_list, r_list = sends.get(key, []), recvs.get(key, [])
        src, dst, tag = key
        if len(s_list) != len(r_list):
            more, fewer = (src, dst) if len(s_list) > len(r_list) else (dst, src)
            kind = "COMM_SEND" if len(s_list) > len(r_list) else "COMM_RECV"
            extra = (s_list if len(s_list) > len(r_list) else r_list)[min(len(s_list), len(r_list))]
            nd = traces[more].nodes[extra]
            raise InputError(f"{kind} node {nd.id} ({nd.name!r}) of rank {more} (rank {src} -> rank {dst}, tag {tag}) "
                             f"has no matching {'COMM_RECV' if kind == 'COMM_SEND' else 'COMM_SEND'} in rank "
                             f"{fewer}'s trace", files[more])
        for k, (si, ri) in enumerate(zip(s_list, r_list)):
            sn, rn = traces[src].nodes[si], traces[dst].nodes[ri]
            if sn.attrs["comm_size"] != rn.attrs["comm_size"]:
                raise InputError(f"COMM_SEND node {sn.id} of rank {src} sends {sn.attrs['comm_size']} B but the "
                                 f"matching COMM_RECV node {rn.id} of rank {dst} receives {rn.attrs['comm_size']} B",
                                 files[dst])
            u = ("p2p", key, k)
            unit_of[(src, si)] = u
            unit_of[(dst, ri)] = u
            units[u] = [(src, si), (dst, ri)]

    # dependencies: node -> node indexes in the same rank
    id_index = [{nd.id: i for i, nd in enumerate(tr.nodes)} for tr in traces]
    node_deps: dict[tuple[int, int], list[int]] = {}
    for r, tr in enumerate(traces):
        for i, nd in enumerate(tr.nodes):
            ds = []
            for d in list(dict.fromkeys(nd.ctrl_deps + nd.data_deps)):
                j = id_index[r].get(d)
                if j is None:
                    raise InputError(f"node {nd.id} ({nd.name!r}) depends on node {d}, which is not in the trace",
                                     tr.path)
                ds.append(j)
            node_deps[(r, i)] = ds

    # order units so that each comes after the units its nodes depend on
    order_key = {}
    for u, unit_nodes in units.items():
        order_key[u] = min((traces[r].nodes[i].index, r) for r, i in unit_nodes)
    indeg = {u: 0 for u in units}
    children: dict[tuple, list[tuple]] = {u: [] for u in units}
    for u, unit_nodes in units.items():
        pre = set()
        for r, i in unit_nodes:
            for j in node_deps[(r, i)]:
                v = unit_of[(r, j)]
                if v != u:
                    pre.add(v)
        for v in pre:
            children[v].append(u)
        indeg[u] = len(pre)
    heap = [(order_key[u], _sortable(u), u) for u in units if indeg[u] == 0]
    heapq.heapify(heap)
    order = []
    while heap:
        _, _, u = heapq.heappop(heap)
        order.append(u)
        for c in children[u]:
            indeg[c] -= 1
            if indeg[c] == 0:
                heapq.heappush(heap, (order_key[c], _sortable(c), c))
    if len(order) < len(units):
        stuck = [u for u in units if indeg[u] > 0]
        r, i = units[stuck[0]][0]
        nd = traces[r].nodes[i]
        raise InputError(f"dependencies form a cycle (e.g. through node {nd.id} ({nd.name!r}) of rank {r}, "
                         f"with collectives or sends matched across ranks)", files[r])

    dag = Dag()
    for r in range(n_ranks):
        dag.gpu_of_host[gpu_hosts[r]] = r
    end_op: dict[tuple[int, int], int] = {}

    def deps_of(r: int, i: int) -> list[int]:
        return [end_op[(r, j)] for j in node_deps[(r, i)]]

    for u in order:
        unit_nodes = units[u]
        if u[0] == "node":
            r, i = unit_nodes[0]
            nd = traces[r].nodes[i]
            label = f"r{r}:{nd.name}"
            if nd.duration_micros > 0 or nd.type == COMP_NODE:
                end_op[(r, i)] = dag.compute(gpu_hosts[r], nd.duration_micros * PS_PER_US, deps_of(r, i), label)
            else:
                end_op[(r, i)] = dag.mark(gpu_hosts[r], deps_of(r, i), label)
        elif u[0] == "p2p":
            (s, si), (d, ri) = unit_nodes
            sn, rn = traces[s].nodes[si], traces[d].nodes[ri]
            size = int(sn.attrs["comm_size"])
            if size > 0:
                f = dag.flow(gpu_hosts[s], gpu_hosts[d], size, deps_of(s, si), f"r{s}:{sn.name}")
                end_op[(s, si)] = f
                end_op[(d, ri)] = dag.mark(gpu_hosts[d], [f] + deps_of(d, ri), f"r{d}:{rn.name}")
            else:
                f = dag.mark(gpu_hosts[s], deps_of(s, si), f"r{s}:{sn.name}")
                end_op[(s, si)] = f
                end_op[(d, ri)] = dag.mark(gpu_hosts[d], [f] + deps_of(d, ri), f"r{d}:{rn.name}")
        else:
            cname, size, ranks = coll_info[u]
            hosts = [gpu_hosts[r] for r, _ in unit_nodes]
            r0, i0 = unit_nodes[0]
            name = traces[r0].nodes[i0].name or f"{cname.lower()}#{u[2]}"
            per_member = [deps_of(r, i) for r, i in unit_nodes]
            kind = _OUR_KIND[cname]
            if kind == "barrier":
                everyone = sorted({d for ds in per_member for d in ds})
                first = len(dag)
                done = [dag.mark(h, everyone, f"{name}.done") for h in hosts]
                dag.collectives.append(Collective(name, "barrier", [r for r, _ in unit_nodes], 0, done, first, len(dag),
                                                  dag.iteration))
            else:
                s = size * len(unit_nodes) if kind == "allgather" else size
                done = collective(dag, kind, hosts, s, per_member, name, gpus=[r for r, _ in unit_nodes])
            for (r, i), m in zip(unit_nodes, done):
                end_op[(r, i)] = m
    return dag


def _sortable(u: tuple) -> tuple:
    """A total order on unit keys of mixed shapes (for deterministic ties)."""
    return tuple(str(x) for x in u)


def names_et_files(path: str | os.PathLike) -> bool:
    """True when ``path`` names ``.et`` files (a folder holding some, a ``DIR/NAME`` prefix of some, or one
    ``.et`` file), whether or not they make a whole trace: the reader then says what is wrong."""
    spath = str(path)
    if os.path.isdir(spath):
        return bool(glob.glob(os.path.join(glob.escape(spath), "*.et")))
    if os.path.isfile(spath):
        return spath.endswith(".et")
    prefix = spath[:-1] if spath.endswith(".") else spath
    return bool(glob.glob(glob.escape(prefix) + ".*.et"))


def looks_like_chakra(path: str | os.PathLike) -> bool:
    """True when ``path`` is a folder/prefix of ``NAME.<rank>.et`` files or one ``.et`` file whose first
    record decodes as a Chakra ``GlobalMetadata``."""
    spath = str(path)
    try:
        files = [spath] if os.path.isfile(spath) else find_rank_files(spath)
    except InputError:
        return False
    try:
        with open(files[0], "rb") as fh:
            head = fh.read(4096)
    except OSError:
        return False
    try:
        n, pos = _varint(head, 0, len(head))
        if n == 0 or pos + n > len(head):
            return n == 0 and len(head) > pos
        got_version = False
        for num, wt, v in _fields(head, pos, pos + n):
            if num == 1 and wt == 2:
                head[v[0]:v[1]].decode("utf-8")
                got_version = True
            elif num not in (1, 2):
                return False
        return got_version
    except (_WireError, UnicodeDecodeError):
        return False


__all__ = ["read_chakra", "read_chakra_trace", "find_rank_files", "looks_like_chakra", "ChakraNode", "ChakraTrace",
           "NODE_TYPES", "COMM_TYPES"]
