"""Input files by format: detect a file's format from its content, then read it.

Formats (detection looks at the first meaningful lines or bytes, never at the
file name alone):

* topology: ``hpcc`` (HPCC ns-3: a first line of three integers ``nodes
  switches links``), ``simai`` (SimAI: five integers ``nodes gpus_per_server
  nvswitches switches links``, optionally a GPU type word and one more
  integer), ``htsim`` (an htsim fat-tree ``.topo``: ``Nodes``/``Tiers``/
  ``Podsize`` keys);
* flows: ``hpcc`` (a flow count alone on its line, then ``src dst pg dport size start``), ``htsim``
  (a connection matrix: ``Nodes``/``Connections`` keys or ``src->dst`` lines);
* workload: ``simai`` (a SimAI/AICB text workload), ``chakra`` (ASTRA-sim
  Chakra ``.et`` traces: a folder or ``DIR/NAME`` prefix of ``NAME.<rank>.et``
  files, or one such file).

A file that matches none raises a one-line InputError naming the formats tried.
Every ``load_*`` takes ``fmt`` to skip detection (the CLI's ``--format``).
"""

from __future__ import annotations

import os

from ..errors import InputError
from ..topology.hpcc import read_hpcc_topology
from ..topology.htsim import looks_like_htsim_topology, read_htsim_topology
from ..topology.model import Topology
from ..topology.simai import read_simai_topology
from ..workload.chakra import looks_like_chakra, names_et_files, read_chakra
from ..workload.dag import Dag
from ..workload.flows import Flow
from ..workload.hpcc_flows import read_hpcc_flows
from ..workload.htsim import looks_like_htsim_cm, read_htsim_cm
from .tokens import token_lines

TOPOLOGY_FORMATS = ("hpcc", "simai", "htsim")
FLOWS_FORMATS = ("hpcc", "htsim")
WORKLOAD_FORMATS = ("simai", "chakra")


def _is_int(tok: str) -> bool:
    t = tok[1:] if tok[:1] in "+-" else tok
    return t.isdigit()


def _first_lines(path: str, what: str, n: int = 3) -> list[tuple[int, list[str]]]:
    """The first ``n`` non-blank, non-``#`` lines as token lists with their line numbers."""
    if os.path.isdir(path):
        raise InputError(f"{what} is a folder, not a file", path)
    out = []
    try:
        with open(path, encoding="utf-8-sig", errors="replace") as f:
            for lineno, toks in token_lines(f):
                out.append((lineno, toks))
                if len(out) >= n:
                    break
    except OSError as e:
        raise InputError(f"cannot open {what}: {e.strerror or e}", path) from None
    return out


def _is_binary(path: str) -> bool:
    try:
        with open(path, "rb") as fh:
            head = fh.read(1024)
    except OSError:
        return False
    if b"\0" in head:
        return True
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as e:
        return e.start < len(head) - 4  # a multi-byte character cut at the end is still text
    return False


def detect_topology_format(path: str | os.PathLike) -> str:
    """``'hpcc'``, ``'simai'`` or ``'htsim'`` from the file's first lines; InputError when none fits."""
    spath = str(path)
    if not os.path.isdir(spath) and looks_like_htsim_topology(spath):
        return "htsim"
    if _is_binary(spath):
        raise InputError(f"unknown topology format: a binary file (tried {', '.join(TOPOLOGY_FORMATS)})", spath)
    lines = _first_lines(spath, "topology file", 1)
    if lines:
        toks = lines[0][1]
        if len(toks) >= 5 and all(_is_int(t) for t in toks[:5]) and (len(toks) == 5 or not _is_int(toks[5])):
            if len(toks) <= 7:
                return "simai"
        if len(toks) >= 3 and all(_is_int(t) for t in toks[:3]):
            return "hpcc"
    first = " ".join(lines[0][1])[:60] if lines else "an empty file"
    raise InputError(f"unknown topology format (tried hpcc: 'nodes switches links'; simai: 'nodes gpus_per_server "
                     f"nvswitches switches links [gpu_type]'; htsim: 'Nodes/Tiers/Podsize' keys), "
                     f"found {first!r}", spath, lines[0][0] if lines else None)


def detect_flows_format(path: str | os.PathLike) -> str:
    """``'hpcc'`` or ``'htsim'`` from the file's first lines; InputError when neither fits."""
    spath = str(path)
    if not os.path.isdir(spath) and looks_like_htsim_cm(spath):
        return "htsim"
    if _is_binary(spath):
        raise InputError(f"unknown flow file format: a binary file (tried {', '.join(FLOWS_FORMATS)})", spath)
    lines = _first_lines(spath, "flow file", 1)
    if lines and _is_int(lines[0][1][0]) and (len(lines[0][1]) - 1) % 6 == 0:
        return "hpcc"
    first = " ".join(lines[0][1])[:60] if lines else "an empty file"
    raise InputError(f"unknown flow file format (tried hpcc: a flow count then 'src dst pg dport size start'; "
                     f"htsim: 'Nodes N' / 'Connections M' / 'src->dst ...' lines), found {first!r}",
                     spath, lines[0][0] if lines else None)


def detect_workload_format(path: str | os.PathLike) -> str:
    """``'simai'`` or ``'chakra'``: Chakra for ``.et`` traces (a folder, a ``DIR/NAME`` prefix or
    one file whose first record is a Chakra GlobalMetadata), SimAI for a text workload."""
    spath = str(path)
    if looks_like_chakra(spath) or names_et_files(spath):
        return "chakra"  # (a trace with a rank missing or a bad file: its reader says which)
    if os.path.isfile(spath) and not _is_binary(spath):
        lines = _first_lines(spath, "workload file", 2)
        if lines:
            return "simai"
    if not os.path.exists(spath) and not os.path.isdir(os.path.dirname(spath) or "."):
        raise InputError("cannot open workload: no such file or folder", spath)
    if not os.path.exists(spath):
        raise InputError("cannot open workload: no such file, folder or NAME.<rank>.et prefix", spath)
    raise InputError("unknown workload format (tried simai: a SimAI/AICB text workload; chakra: "
                     "NAME.<rank>.et protobuf traces)", spath)


def _check(fmt: str, allowed: tuple[str, ...], what: str) -> None:
    if fmt not in allowed:
        raise InputError(f"unknown {what} format {fmt!r} (known: {', '.join(allowed)})")


def load_topology(path: str | os.PathLike, fmt: str | None = None) -> Topology:
    """Read a topology file in ``fmt`` (detected when None)."""
    spath = str(path)
    if fmt is None:
        if not os.path.exists(spath):
            raise InputError("cannot open topology file: no such file", spath)
        fmt = detect_topology_format(spath)
    _check(fmt, TOPOLOGY_FORMATS, "topology")
    if fmt == "hpcc":
        return read_hpcc_topology(spath)
    if fmt == "simai":
        return read_simai_topology(spath)
    return read_htsim_topology(spath)


def load_flows(path: str | os.PathLike, topo: Topology, fmt: str | None = None) -> tuple[list[Flow], Dag | None]:
    """Read a flow file in ``fmt`` (detected when None) for ``topo``.

    Returns ``(flows, None)`` for an HPCC flow list, ``(dag.flows, dag)`` for an
    htsim connection matrix (htsim node ``i`` = ``topo.hosts[i]``).
    """
    spath = str(path)
    if fmt is None:
        if not os.path.exists(spath):
            raise InputError("cannot open flow file: no such file", spath)
        fmt = detect_flows_format(spath)
    _check(fmt, FLOWS_FORMATS, "flow file")
    if fmt == "hpcc":
        return read_hpcc_flows(spath, topo), None
    dag = read_htsim_cm(spath, topo.hosts)
    return dag.flows, dag


def load_chakra(path: str | os.PathLike, topo: Topology, comm_groups: dict[str, list[int]] | None = None) -> Dag:
    """Read a Chakra trace (a folder, a ``DIR/NAME`` prefix, or one ``NAME.<rank>.et`` standing for
    all its ranks) for ``topo``: rank ``r`` runs on ``topo.gpus[r]``."""
    return read_chakra(str(path), topo.gpus, comm_groups)


__all__ = ["detect_topology_format", "detect_flows_format", "detect_workload_format", "load_topology", "load_flows",
           "load_chakra", "TOPOLOGY_FORMATS", "FLOWS_FORMATS", "WORKLOAD_FORMATS"]
