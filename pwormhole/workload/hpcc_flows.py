"""Readers for the HPCC ns-3 flow file (``FLOW_FILE``) and trace file (``TRACE_FILE``).

Source of the formats: HPCC's ns-3 simulator, ``simulation/scratch/third.cc``
(alibaba-edu/High-Precision-Congestion-Control), which reads both with C++ ``>>``.
"""

from __future__ import annotations

import os

from pwormhole.errors import InputError
from pwormhole.inputs.tokens import TokenReader, to_int
from pwormhole.topology.model import Topology
from pwormhole.units import parse_time_ps
from pwormhole.workload.flows import MAX_FLOW_BYTES, Flow

FIRST_SPORT = 10000  # third.cc: "each host use port number from 10000"
N_PRIORITIES = 8  # qbb queues per port (SwitchMmu::qCnt); pg indexes them

_FIELDS = ("src", "dst", "pg", "dport", "size", "start_time")


def read_hpcc_flows(path: str | os.PathLike, topology: Topology | None = None) -> list[Flow]:
    """Read an HPCC ns-3 flow file into a list of :class:`Flow`.

    Format (a whitespace token stream; line breaks, tabs and CRLF do not matter)::

        N
        src dst pg dport size start_time      (N records)

    * ``src``, ``dst``: host node ids (integers, different from each other);
    * ``pg``: priority group, integer ``0..7`` (HPCC's examples use 3);
    * ``dport``: destination port, integer ``0..65535``;
    * ``size``: bytes to send, integer > 0;
    * ``start_time``: seconds (``2``, ``2.000001``; an ns-3 unit such as ``2s``
      or ``1500us`` is also accepted); converted exactly (decimal arithmetic) to
      int picoseconds, so it must be a whole number of picoseconds.

    Only the first ``N`` records are read; rows and notes after them are ignored
    (HPCC's example ``mix/flow.txt`` declares 2 flows and lists 256). HPCC asks
    for records in ascending start time; unordered files are accepted, and
    ``flow_id`` is always the position in the file (0-based). ``sport`` is
    ``10000 + the number of earlier records with the same src``, the port
    numbering of ``third.cc`` (which keeps a per-host counter starting at 10000).

    Args:
        path: the flow file.
        topology: when given, endpoints are checked against it.

    Raises:
        InputError naming the file, the line and the offending value for: a file
        that cannot be opened; a truncated file (fewer records than ``N``); a
        field that is not an integer (or a start time that cannot be read); a
        size <= 0; ``src == dst``; a pg or dport out of range; and, with
        ``topology``, an unknown node id (``>= topology.n_nodes``) or an
        endpoint that is a switch (``third.cc`` asserts both are hosts).
    """
    spath = str(path)
    flows: list[Flow] = []
    next_sport: dict[int, int] = {}
    with TokenReader(path, "flow file") as r:
        n, _ = r.take_int("flow count (first value of the file)", lo=0)
        for i in range(n):
            vals: list[tuple[str, int]] = []
            for name in _FIELDS:
                vals.append(r.take(f"{n} flows of 6 values (src dst pg dport size start_time); "
                                   f"flow {i + 1} has no {name}"))
            (s_tok, s_line), (d_tok, d_line), (p_tok, p_line), (dp_tok, dp_line), \
                (z_tok, z_line), (t_tok, t_line) = vals
            src = to_int(s_tok, f"src node id of flow {i + 1}", spath, s_line, lo=0)
            dst = to_int(d_tok, f"dst node id of flow {i + 1}", spath, d_line, lo=0)
            pg = to_int(p_tok, f"priority group of flow {i + 1}", spath, p_line, 0, N_PRIORITIES - 1)
            dport = to_int(dp_tok, f"dport of flow {i + 1}", spath, dp_line, 0, 65535)
            size = to_int(z_tok, f"size of flow {i + 1}", spath, z_line, hi=MAX_FLOW_BYTES)  # (> 0: below)
            if size <= 0:
                raise InputError(f"size {z_tok!r} of flow {i + 1} must be a positive number of bytes",
                                 spath, z_line)
            try:
                start = parse_time_ps(t_tok, default_unit="s")
            except ValueError as e:
                raise InputError(f"bad start time {t_tok!r} of flow {i + 1}: {e}", spath, t_line) from None
            if src == dst:
                raise InputError(f"flow {i + 1} goes from node {src} to itself (src == dst == {src})",
                                 spath, d_line)
            if topology is not None:
                for node, tok, line, role in ((src, s_tok, s_line, "src"), (dst, d_tok, d_line, "dst")):
                    if node >= topology.n_nodes:
                        raise InputError(
                            f"unknown node id {tok} ({role} of flow {i + 1}); topology "
                            f"{topology.name} has nodes 0..{topology.n_nodes - 1}", spath, line)
                    if topology.is_switch(node):
                        raise InputError(
                            f"{role} {tok} of flow {i + 1} is a switch in topology {topology.name}; "
                            f"flows must run between hosts", spath, line)
            sport = next_sport.get(src, FIRST_SPORT)
            next_sport[src] = sport + 1
            flows.append(Flow(flow_id=i, src=src, dst=dst, pg=pg, dport=dport,
                              size_bytes=size, start_ps=start, sport=sport))
    return flows


def read_hpcc_trace(path: str | os.PathLike, n_nodes: int | None = None) -> list[int]:
    """Read an HPCC ns-3 trace file: the nodes whose packet events HPCC would trace.

    Format (whitespace token stream)::

        N
        <N node ids>

    Only the first ``N`` ids are read (HPCC's example ``mix/trace.txt`` is followed
    by English notes). Ids ``>= n_nodes`` are skipped, as ``third.cc`` skips them
    (its example lists 348 ids for a 66-node topology). pwormhole does not write
    a packet trace; the file is read only to validate it.

    Returns:
        The kept ids in file order.

    Raises:
        InputError naming the file and line for: a file that cannot be opened; a
        truncated file (fewer than ``N`` ids); a count or id that is not a
        non-negative integer.
    """
    ids: list[int] = []
    with TokenReader(path, "trace file") as r:
        n, _ = r.take_int("trace node count (first value of the file)", lo=0)
        for i in range(n):
            tok, line = r.take(f"{n} node ids after the count (found {i})")
            nid = to_int(tok, "trace node id", r.path, line, lo=0)
            if n_nodes is None or nid < n_nodes:
                ids.append(nid)
    return ids


__all__ = ["read_hpcc_flows", "read_hpcc_trace", "FIRST_SPORT"]
