"""A sender's state as a flow-level observer reads it (``SendQP.snapshot``): Wormhole's samples."""

from __future__ import annotations


class QPSnapshot:
    """A sender's state at a moment, as a flow-level observer reads it (:meth:`SendQP.snapshot`):
    eight integers in a small object (compiled: a C struct; a sampler takes one per QP of the groups
    it samples at each boundary, and keeps thousands)."""

    __slots__ = ("t_ps", "cc_rate_bps", "una_bytes", "una_ps", "sent_bytes", "rate_change_ps", "cnps", "rate_bps")

    def __init__(self, t_ps: int, cc_rate_bps: int, una_bytes: int, una_ps: int, sent_bytes: int,
                 rate_change_ps: int, cnps: int, rate_bps: int):
        self.t_ps = t_ps  # the moment it was read
        self.cc_rate_bps = cc_rate_bps  # DCQCN: its rate; HPCC: its window over its base RTT (without one: its rate)
        self.una_bytes = una_bytes  # bytes acknowledged
        self.una_ps = una_ps  # when the last ACK advanced una_bytes
        self.sent_bytes = sent_bytes  # highest byte sent (after a go-back-N, packets up to it are still in flight)
        self.rate_change_ps = rate_change_ps  # DCQCN: when its rate next changes without a CNP (-1: none; HPCC: -1)
        self.cnps = cnps  # CNPs received so far
        self.rate_bps = rate_bps  # its pacing rate

    def fields(self) -> tuple:
        """The eight integers, in the order of :meth:`__init__`'s arguments."""
        return (self.t_ps, self.cc_rate_bps, self.una_bytes, self.una_ps, self.sent_bytes, self.rate_change_ps,
                self.cnps, self.rate_bps)

    def __eq__(self, other) -> bool:
        return isinstance(other, QPSnapshot) and self.fields() == other.fields()

    def __repr__(self) -> str:
        return f"QPSnapshot({', '.join(map(str, self.fields()))})"
