"""The topology data model shared by every builder and reader.

Nodes are numbered ``0 .. n_nodes-1``. A node is a switch when its id is in
``switches``; every other node is a host (an RDMA NIC endpoint; in a training
topology, a GPU). Links are full-duplex point-to-point channels with one rate
and one propagation delay.

Some switches may be NVSwitches (``nvswitches``, a subset of ``switches``): the
intra-server fabric of SimAI-style topologies, one (or a few) per server, linked
to that server's GPUs by short, fast NVLink links. Routing
(:mod:`pwormhole.topology.routing`) sends traffic between two GPUs of the same
NVSwitch through it, and never uses an NVSwitch for any other traffic.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..errors import InputError

MAX_NODES = 200_000
"""Largest topology accepted (a built network takes ~33 KB of memory per node before any
traffic: 200,000 nodes ~ 7 GB)."""

MAX_LINKS = 10 * MAX_NODES
"""Most links a generated topology (htsim ``.topo``) may have; a file's link rows are read one by one."""


def check_node_count(n_nodes: int, path: str | None, line: int | None, n_links: int | None = None) -> None:
    """InputError (file, line, value) when a declared node count exceeds :data:`MAX_NODES`
    or, given the count of links read, the ``2 * n_links`` nodes they can join: a header is
    checked against the rows that back it before anything is sized by it."""
    if n_nodes > MAX_NODES:
        raise InputError(f"node count {n_nodes} exceeds the limit of {MAX_NODES} nodes", path, line)
    if n_links is not None and n_nodes > 2 * n_links:
        raise InputError(f"node count {n_nodes} but its {n_links} links join at most {2 * n_links} nodes: "
                         f"at least {n_nodes - 2 * n_links} nodes would have no link", path, line)


@dataclass(frozen=True)
class Link:
    """One full-duplex link.

    Attributes:
        a, b: node ids of the two ends.
        rate_bps: line rate of each direction (int bits/s, > 0).
        delay_ps: propagation delay (int picoseconds, >= 0).
        error_rate: per-packet loss probability on this link (0 <= p < 1),
            HPCC's ``error_rate`` topology column.
    """

    a: int
    b: int
    rate_bps: int
    delay_ps: int
    error_rate: float = 0.0


@dataclass
class Topology:
    """A network: node count, which nodes are switches, and the links.

    Attributes:
        n_nodes: number of nodes.
        switches: ids of switch nodes.
        links: the links, in file order.
        name: short label used for output folders.
        source: the file it was read from, or None when built.
        nvswitches: ids of NVSwitch nodes (intra-server NVLink fabric), a subset
            of ``switches``; empty for a plain datacenter network. An NVSwitch
            forwards only between hosts that are both linked to it.
        gpus_per_server: GPUs per server (SimAI's ``gpus_per_server``), or 0
            when unknown / not a GPU cluster.
        gpu_type: GPU model named by a SimAI topology header (``H100``,
            ``A100``, ...), or None.

    Raises:
        InputError when ``nvswitches`` is not a subset of ``switches`` or
        ``gpus_per_server`` is negative.
    """

    n_nodes: int
    switches: frozenset[int]
    links: list[Link] = field(default_factory=list)
    name: str = "topology"
    source: str | None = None
    nvswitches: frozenset[int] = frozenset()
    gpus_per_server: int = 0
    gpu_type: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.nvswitches, frozenset):
            self.nvswitches = frozenset(self.nvswitches)
        if self.nvswitches and not self.nvswitches <= self.switches:
            extra = sorted(self.nvswitches - self.switches)
            raise InputError(f"NVSwitch ids {extra[:5]} are not switches")
        if self.gpus_per_server < 0:
            raise InputError(f"gpus_per_server must be >= 0, got {self.gpus_per_server}")

    @property
    def hosts(self) -> list[int]:
        """Host node ids in increasing order."""
        sw = self.switches
        return [n for n in range(self.n_nodes) if n not in sw]

    @property
    def gpus(self) -> list[int]:
        """GPU node ids in increasing order: rank ``r`` of a workload runs on
        ``gpus[r]``. Every host is a GPU, so this equals :attr:`hosts`."""
        return self.hosts

    def servers(self) -> dict[int, int] | None:
        """Host id -> server index: hosts linked to one NVSwitch (or to NVSwitches linked through a
        shared host) are one server, numbered by their lowest host; a host linked to no NVSwitch is a
        server of its own. Without NVSwitches, ``gpus_per_server`` consecutive GPUs; None when
        neither says (a plain datacenter network)."""
        hosts = self.hosts
        if not self.nvswitches:
            if self.gpus_per_server <= 0:
                return None
            return {h: i // self.gpus_per_server for i, h in enumerate(hosts)}
        parent = {n: n for n in range(self.n_nodes)}

        def root(n: int) -> int:
            while parent[n] != n:
                parent[n] = parent[parent[n]]
                n = parent[n]
            return n

        for ln in self.links:
            if ln.a in self.nvswitches or ln.b in self.nvswitches:
                ra, rb = root(ln.a), root(ln.b)
                if ra != rb:
                    parent[max(ra, rb)] = min(ra, rb)
        index: dict[int, int] = {}
        return {h: index.setdefault(root(h), len(index)) for h in hosts}

    def is_nvswitch(self, node: int) -> bool:
        return node in self.nvswitches

    def is_switch(self, node: int) -> bool:
        return node in self.switches

    def roles(self) -> list[str]:
        """Per node, its role: ``GPU`` (a host of a GPU cluster) or ``host``, ``NVSwitch``, ``ToR`` (a
        switch linked to a host), ``spine`` (a switch linked to a ToR) or ``core`` (one above)."""
        host = "GPU" if self.gpus_per_server else "host"
        out = ["core" if n in self.switches else host for n in range(self.n_nodes)]
        for n in self.nvswitches:
            out[n] = "NVSwitch"
        for tier, below in (("ToR", host), ("spine", "ToR")):
            for ln in self.links:
                for a, b in ((ln.a, ln.b), (ln.b, ln.a)):
                    if out[a] == "core" and out[b] == below:
                        out[a] = tier
        return out
