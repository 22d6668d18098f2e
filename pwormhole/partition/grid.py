"""The window grid of a topology (docs/design.md invariant 3): units, the window ``L``, the cut-link rule.

A link to an NVSwitch, or shorter than half the median link delay, binds its
ends into one indivisible *unit* (so a server is never split: its NVLink
flows stay in one LP); ``L`` is the smallest delay among the other links (or
among all, when there are no others), a property of the topology alone. An LP
assignment may cut only links at least ``L`` long and no NVSwitch link, so a
packet sent to another LP lands in a later window.
"""

from __future__ import annotations

from ..errors import InputError
from ..topology.model import Topology


def _short(delay_ps: int, median_ps: int) -> bool:
    """A link short enough to bind its ends into one unit."""
    return 2 * delay_ps < median_ps


def _binds(topo: Topology, ln, median_ps: int) -> bool:
    """A link whose ends share a unit: an NVLink (to an NVSwitch) or a short link."""
    return _short(ln.delay_ps, median_ps) or ln.a in topo.nvswitches or ln.b in topo.nvswitches


def units_of(topo: Topology) -> list[int]:
    """``unit[node]``: nodes joined by NVSwitch links or links shorter than half the median
    delay share a unit."""
    parent = list(range(topo.n_nodes))

    def find(x):
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    delays = sorted(ln.delay_ps for ln in topo.links)
    median = delays[len(delays) // 2] if delays else 0
    for ln in topo.links:
        if _binds(topo, ln, median):
            parent[find(ln.a)] = find(ln.b)
    roots: dict[int, int] = {}
    return [roots.setdefault(find(n), len(roots)) for n in range(topo.n_nodes)]


def window_ps(topo: Topology) -> int:
    """The window ``L``: the smallest delay among the links between units. InputError
    when the topology has no links or that delay is not positive."""
    delays = sorted(ln.delay_ps for ln in topo.links)
    if not delays:
        raise InputError("topology has no links", topo.source)
    median = delays[len(delays) // 2]
    L = min((ln.delay_ps for ln in topo.links if not _binds(topo, ln, median)), default=delays[0])
    if L <= 0:
        zero = next(ln for ln in topo.links if ln.delay_ps <= 0 and not _binds(topo, ln, median))
        raise InputError(f"link {zero.a}-{zero.b} has zero propagation delay: the window L (the shortest link "
                         "between units, the lookahead of the synchronization) must be > 0; give it a delay",
                         topo.source)
    return L


class WindowGrid:
    """The synchronization grid of a topology: ``unit[node]`` and the window ``window_ps``.

    Reading ``window_ps`` raises the topology's InputError when it has no window
    (:func:`window_ps`); the units are always there. Plain data: it travels with
    a partition plan (the MPI broadcast).
    """

    def __init__(self, topo: Topology):
        self.unit = units_of(topo)
        self._window_ps = 0
        self._error: tuple[str, str | None] | None = None
        try:
            self._window_ps = window_ps(topo)
        except InputError as e:
            self._error = (e.message, e.path)

    @property
    def window_ps(self) -> int:
        if self._error is not None:
            raise InputError(*self._error)
        return self._window_ps


def round_robin_owner(grid: WindowGrid, n_lps: int) -> list[int]:
    """``owner[node]`` with the units dealt round robin over ``n_lps`` LPs (no short link is cut)."""
    if n_lps == 1:
        return [0] * len(grid.unit)
    return [u % n_lps for u in grid.unit]


def check_cut_links(topo: Topology, owner: list[int], window_ps: int) -> None:
    """InputError when ``owner`` cuts an NVSwitch link or one shorter than the window (docs/design.md invariant 3)."""
    nvs = topo.nvswitches
    for ln in topo.links:
        if owner[ln.a] != owner[ln.b] and (ln.a in nvs or ln.b in nvs):
            raise InputError(f"LP assignment cuts NVLink {ln.a}-{ln.b} (to an NVSwitch); keep each server in one LP")
        if owner[ln.a] != owner[ln.b] and ln.delay_ps < window_ps:
            raise InputError(f"LP assignment cuts link {ln.a}-{ln.b} ({ln.delay_ps} ps), shorter than the "
                             f"window ({window_ps} ps); keep its ends in one LP")
