"""The topology data model shared by every builder and reader.

Nodes are numbered ``0 .. n_nodes-1``. A node is a switch when its id is in
``switches``; every other node is a host (an RDMA NIC endpoint). Links are
full-duplex point-to-point channels with one rate and one propagation delay.
"""

from __future__ import annotations

from dataclasses import dataclass, field


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
    """

    n_nodes: int
    switches: frozenset[int]
    links: list[Link] = field(default_factory=list)
    name: str = "topology"
    source: str | None = None

    @property
    def hosts(self) -> list[int]:
        """Host node ids in increasing order."""
        sw = self.switches
        return [n for n in range(self.n_nodes) if n not in sw]

    def is_switch(self, node: int) -> bool:
        return node in self.switches
