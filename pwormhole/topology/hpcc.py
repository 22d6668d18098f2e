"""Reader for the HPCC ns-3 topology file (``TOPOLOGY_FILE`` of a config).

Source of the format: HPCC's ns-3 simulator, ``simulation/scratch/third.cc``
(alibaba-edu/High-Precision-Congestion-Control), which reads it with C++ ``>>``.
"""

from __future__ import annotations

import os
from pathlib import Path

from pwormhole.inputs.tokens import TokenReader, to_float, to_int
from pwormhole.topology.model import Link, Topology, check_node_count
from pwormhole.units import parse_rate_bps, parse_time_ps


def read_hpcc_topology(path: str | os.PathLike) -> Topology:
    """Read an HPCC ns-3 topology file into a :class:`Topology`.

    Format (a whitespace token stream; line breaks, tabs and CRLF do not matter)::

        n_nodes n_switches n_links
        <n_switches switch ids, which may span lines>
        src dst rate delay error_rate        (n_links records)

    * node ids are integers ``0 .. n_nodes-1``; every node that is not listed as
      a switch is a host;
    * ``rate`` is an ns-3 DataRate string (``100Gbps``, ``25Gb/s``; a bare number
      is bits/s) and must be > 0;
    * ``delay`` is an ns-3 Time string (``1000ns``, ``0.001ms``, ``1us``); a bare
      number is seconds, as ns-3 ``Time("...")`` treats it; it becomes int ps and
      must be a whole number of picoseconds;
    * ``error_rate`` is a per-packet loss probability ``0 <= p < 1``.

    Everything after the declared counts (extra link rows, the English notes of
    HPCC's example ``mix/topology.txt``) is ignored, exactly as ``third.cc``
    never reads it. Parallel links between the same two nodes are kept.

    Returns:
        ``Topology`` with links in file order, ``name`` = the file stem and
        ``source`` = ``str(path)``.

    Raises:
        InputError naming the file, the line and the offending value for: a file
        that cannot be opened; a truncated file (fewer tokens than the counts
        declare; the message says what was expected); counts that are not
        non-negative integers, ``n_nodes < 1``, ``n_nodes`` over
        :data:`~pwormhole.topology.model.MAX_NODES` or over twice the link count
        (nodes no link joins), or ``n_switches > n_nodes``; a
        switch id that is out of range or listed twice; a link end that is not
        an integer in range; a link from a node to itself; a rate that is zero,
        negative or unreadable; a bad delay; an error rate outside ``[0, 1)``.
    """
    spath = str(path)
    with TokenReader(path, "topology file") as r:
        n_nodes, nodes_line = r.take_int("node count (first value of the header)", lo=0)
        if n_nodes < 1:
            raise r.error(f"node count {n_nodes!r} must be at least 1", nodes_line)
        check_node_count(n_nodes, spath, nodes_line)  # the cap, before reading the rows
        n_sw, line = r.take_int("switch count (second value of the header)", lo=0)
        if n_sw > n_nodes:
            raise r.error(f"switch count {n_sw} exceeds node count {n_nodes}", line)
        n_links, _ = r.take_int("link count (third value of the header)", lo=0)

        switches: dict[int, int] = {}
        for i in range(n_sw):
            tok, line = r.take(f"{n_sw} switch ids after the header (found {i})")
            sid = to_int(tok, "switch id", spath, line, 0, n_nodes - 1)
            if sid in switches:
                raise r.error(f"switch id {sid} listed twice (first on line {switches[sid]})", line)
            switches[sid] = line

        links = read_link_rows(r, r.take, n_links, n_nodes, spath)
        check_node_count(n_nodes, spath, nodes_line, len(links))

    return Topology(n_nodes=n_nodes, switches=frozenset(switches), links=links,
                    name=Path(spath).stem, source=spath)


__all__ = ["read_hpcc_topology"]


def read_link_rows(r: TokenReader, take, n_links: int, n_nodes: int, spath: str) -> list[Link]:
    """The ``src dst rate delay error_rate`` link rows shared by HPCC and SimAI
    topology files; ``take(what)`` returns the next ``(token, line)``. Raises
    InputError (file, line, value) for an end out of range, a self-loop, a bad
    rate or delay, or an error rate outside ``[0, 1)``."""
    links: list[Link] = []
    for i in range(n_links):
        where = f"link {i + 1} of {n_links}"

        def field(name: str) -> tuple[str, int]:
            return take(f"{n_links} links of 5 values (src dst rate delay error_rate); {where} has no {name}")

        tok, line = field("src")
        a = to_int(tok, f"node id (src of {where})", spath, line, 0, n_nodes - 1)
        tok, line = field("dst")
        b = to_int(tok, f"node id (dst of {where})", spath, line, 0, n_nodes - 1)
        if a == b:
            raise r.error(f"link {a}-{b} connects node {a} to itself", line)
        tok, line = field("rate")
        try:
            rate = parse_rate_bps(tok)
        except ValueError as e:
            raise r.error(f"bad rate {tok!r} of link {a}-{b}: {e}", line) from None
        tok, line = field("delay")
        try:
            delay = parse_time_ps(tok, default_unit="s")
        except ValueError as e:
            raise r.error(f"bad delay {tok!r} of link {a}-{b}: {e}", line) from None
        tok, line = field("error_rate")
        err = to_float(tok, f"error rate of link {a}-{b}", spath, line)
        if not 0.0 <= err < 1.0:
            raise r.error(f"error rate {tok!r} of link {a}-{b} is outside [0, 1)", line)
        links.append(Link(a, b, rate, delay, err))
    return links
