"""HPCC-format output files: ``fct.txt`` and ``pfc.txt``.

``fct.txt`` has one line per finished flow, in completion order, with the
columns of HPCC's ``third.cc``: ``sip dip sport dport size_bytes start_ns
fct_ns standalone_fct_ns``; IPs are HPCC's host numbering
``0x0b000001 + (id // 256) * 0x10000 + (id % 256) * 0x100`` in 8 hex digits.
``pfc.txt`` has one line per PFC frame received: ``time_ns node_id
node_type(1 switch, 0 host) if_index(1-based port) kind(1 pause, 0 resume)``.
"""

from __future__ import annotations

from functools import cache

from ..errors import OutputError
from ..outfiles import PartFile, write_error


@cache  # one string per node: every fct.txt line names two
def hpcc_ip(node_id: int) -> str:
    """HPCC's IPv4 address of a node, as 8 hex digits (``third.cc`` node_id_to_ip)."""
    return f"{0x0B000001 + (node_id // 256) * 0x10000 + (node_id % 256) * 0x100:08x}"


def fct_line(flow, finish_ps: int, standalone_ns: int, start_ps: int | None = None) -> str:
    """One ``fct.txt`` line; ``start_ps`` defaults to the flow's own start (DAG flows pass theirs)."""
    if start_ps is None:
        start_ps = flow.start_ps
    fct_ns = (finish_ps - start_ps + 500) // 1000
    return (f"{hpcc_ip(flow.src)} {hpcc_ip(flow.dst)} {flow.sport} {flow.dport} {flow.size_bytes} "
            f"{start_ps // 1000} {fct_ns} {standalone_ns}\n")


def pfc_line(rec) -> str:
    t_ps, node, node_type, if_index, kind = rec
    return f"{t_ps // 1000} {node} {node_type} {if_index} {kind}\n"


class IncrementalFile:
    """A text file written as results come in, as ``NAME.part`` (created fresh,
    never through a link), renamed to ``NAME`` by :meth:`commit` only when every
    write and the close succeeded (so a finished name is never half-written).

    A write error does not stop the run: its one-line message is kept in
    ``error``, later lines are dropped and the ``.part`` stays. Creating the
    file raises OutputError (nothing was simulated yet).
    """

    def __init__(self, path: str):
        self.path = path
        self.part = path + ".part"
        self.error: str | None = None
        try:
            self._file = PartFile(path)
        except OSError as e:
            raise OutputError(write_error(path, e)) from None

    def write_lines(self, lines) -> None:
        if self.error is not None:
            return
        try:
            self._file.fh.writelines(lines)
            self._file.fh.flush()
        except OSError as e:
            self.error = write_error(self.path, e)
            self._file.abandon()

    def commit(self) -> str | None:
        """Rename to ``NAME`` and return None; after a write error return ``error`` (the ``.part`` stays)."""
        if self.error is None:
            try:
                self._file.commit()
                return None
            except OSError as e:
                self.error = write_error(self.path, e)
                self._file.abandon()
        return self.error

    def close_partial(self) -> None:
        """Close without renaming (a failed run): the ``.part`` file is kept."""
        self._file.abandon()
