"""Reader for SimAI topology files (the ``-n`` topology of SimAI's ns-3 backend).

Source of the format: aliyun/SimAI, written by
``astra-sim-alibabacloud/inputs/topo/gen_Topo_Template.py`` and read with C++
``>>`` by ns-3-alibabacloud's ``SetupNetwork`` (``entry.h`` / ``common.h``).
"""

from __future__ import annotations

import os
from pathlib import Path

from pwormhole.errors import InputError
from pwormhole.inputs.tokens import TokenReader, to_int
from pwormhole.topology.hpcc import read_link_rows
from pwormhole.topology.model import Topology, check_node_count

_HEADER = "nodes gpus_per_server nvswitches switches links [gpu_type [ngpus_per_node]]"


def read_simai_topology(path: str | os.PathLike) -> Topology:
    """Read a SimAI topology file into a :class:`Topology` with NVSwitches.

    Format (a whitespace token stream, as SimAI reads it; CRLF and tabs do not
    matter)::

        node_num gpus_per_server nvswitch_num switch_num link_num [gpu_type [ngpus_per_node]]
        <nvswitch_num NVSwitch ids> <switch_num switch ids>     (may span lines)
        src dst rate delay error_rate                           (link_num records)

    * the GPU count is ``node_num - nvswitch_num - switch_num`` (the header is
      trusted, not the file name: ``Rail_Opti_SingleToR_64gpu_...`` holds 8
      GPUs); the GPUs are the nodes not listed as switches and must be ids
      ``0 .. gpus-1`` (SimAI runs rank ``r`` on node ``r``), and their count must
      be a multiple of ``gpus_per_server`` (>= 1);
    * the first ``nvswitch_num`` listed ids are NVSwitches, the rest network
      switches; every listed id is also a switch of the returned topology;
    * ``gpu_type`` (``H100``, ``A100``, ...) is the rest of the header's line;
      it is missing in older files. Some forks add ``ngpus_per_node`` after it
      (an integer, read and ignored);
    * ``rate`` is an ns-3 DataRate (``400Gbps``), ``delay`` an ns-3 Time
      (``0.0005ms``; a bare number is seconds), ``error_rate`` in ``[0, 1)``.

    Rows after the declared link count are ignored, as SimAI never reads them
    (the HPCC reader does the same). Parallel links are kept.

    Returns:
        ``Topology`` with links in file order, ``nvswitches``,
        ``gpus_per_server``, ``gpu_type``, ``name`` = the file's base name
        (without a ``.txt`` or ``.topo`` suffix) and ``source`` = ``str(path)``.

    Raises:
        InputError naming the file, the line and the offending value: the file
        cannot be opened; it ends early (fewer ids or links than declared); a
        count is not a non-negative integer, ``node_num < 1``, ``node_num`` over
        :data:`~pwormhole.topology.model.MAX_NODES` or over twice ``link_num``,
        ``gpus_per_server < 1``, the switches leave no GPU, or the GPU count is
        not a multiple of ``gpus_per_server``; the header line has unexpected
        values; a switch id is out of range, listed twice or below the GPU
        count; a link end is not an integer in range or the link is a loop; a
        rate, delay or error rate is unreadable or out of range.
    """
    spath = str(path)
    with TokenReader(path, "SimAI topology file") as r:
        n_nodes, nodes_line = r.take_int("node count (node_num, first value of the header)", lo=0)
        if n_nodes < 1:
            raise r.error(f"node count {n_nodes!r} must be at least 1", nodes_line)
        check_node_count(n_nodes, spath, nodes_line)  # the cap, before reading the rows
        gps, gps_line = r.take_int("GPUs per server (gpus_per_server, second value of the header)", lo=0)
        if gps < 1:
            raise r.error(f"gpus_per_server {gps!r} must be at least 1", gps_line)
        n_nv, nv_line = r.take_int("NVSwitch count (nvswitch_num, third value of the header)", lo=0)
        n_sw, sw_line = r.take_int("switch count (switch_num, fourth value of the header)", lo=0)
        n_links, links_line = r.take_int("link count (link_num, fifth value of the header)", lo=0)
        if n_nv + n_sw >= n_nodes:
            raise r.error(f"{n_nv} NVSwitches + {n_sw} switches leave no GPU among {n_nodes} nodes", sw_line)
        n_gpus = n_nodes - n_nv - n_sw
        if n_gpus % gps:
            raise r.error(f"GPU count {n_gpus} (node_num {n_nodes} - nvswitch_num {n_nv} - switch_num {n_sw}) "
                          f"is not a multiple of gpus_per_server {gps}", gps_line)

        # The rest of the header's line: gpu_type and ngpus_per_node, both optional.
        pending: list[tuple[str, int]] = []
        extras: list[tuple[str, int]] = []
        while True:
            try:
                tok, line = r.take("more")
            except InputError:
                break  # end of file: reported below if ids or links are still expected
            if line != links_line:
                pending.append((tok, line))
                break
            extras.append((tok, line))
        gpu_type = extras[0][0] if extras else None
        if len(extras) >= 2:
            to_int(extras[1][0], "ngpus_per_node (seventh value of the header)", spath, extras[1][1], lo=0)
        if len(extras) > 2:
            tok, line = extras[2]
            raise r.error(f"unexpected value {tok!r} on the header line (expected {_HEADER})", line)

        def take(what: str) -> tuple[str, int]:
            return pending.pop() if pending else r.take(what)

        switch_line: dict[int, int] = {}
        nvswitches: list[int] = []
        n_ids = n_nv + n_sw
        for i in range(n_ids):
            kind = "NVSwitch id" if i < n_nv else "switch id"
            tok, line = take(f"{n_nv} NVSwitch ids and {n_sw} switch ids after the header (found {i})")
            sid = to_int(tok, kind, spath, line, 0, n_nodes - 1)
            if sid in switch_line:
                raise r.error(f"{kind} {sid} listed twice (first on line {switch_line[sid]})", line)
            if sid < n_gpus:
                raise r.error(f"{kind} {sid} is a GPU id: SimAI numbers the {n_gpus} GPUs "
                              f"0..{n_gpus - 1} and the switches after them", line)
            switch_line[sid] = line
            if i < n_nv:
                nvswitches.append(sid)

        links = read_link_rows(r, take, n_links, n_nodes, spath)
        check_node_count(n_nodes, spath, nodes_line, len(links))

    name = Path(spath).name
    for suffix in (".txt", ".topo"):
        if name.endswith(suffix) and len(name) > len(suffix):
            name = name[: -len(suffix)]
    return Topology(n_nodes=n_nodes, switches=frozenset(switch_line), links=links, name=name, source=spath,
                    nvswitches=frozenset(nvswitches), gpus_per_server=gps, gpu_type=gpu_type)


__all__ = ["read_simai_topology"]
