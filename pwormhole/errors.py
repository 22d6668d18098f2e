"""User-facing errors.

A :class:`InputError` is a mistake in what the user handed us (a file, a flag);
the CLI prints it as one line ``pwormhole: error: FILE:LINE: message`` and
exits with status 2, never with a traceback.
"""

from __future__ import annotations


class InputError(Exception):
    """Malformed or inconsistent user input.

    Args:
        message: what is wrong, naming the offending value.
        path: the file it came from (None for command-line values).
        line: 1-based line number inside ``path`` (None when not applicable).
    """

    def __init__(self, message: str, path: str | None = None, line: int | None = None):
        self.message = message
        self.path = path
        self.line = line
        super().__init__(self.__str__())

    def __str__(self) -> str:
        where = ""
        if self.path is not None:
            where = f"{self.path}:{self.line}: " if self.line is not None else f"{self.path}: "
        return where + self.message


class AgreedInputError(InputError):
    """An input mistake that every MPI rank knows of (found by one rank or more before the run's first
    window, and agreed on by all): rank 0 prints it once and every rank exits with status 2."""


class StuckError(Exception):
    """The run could not make progress (a PFC deadlock, flows whose packets
    can never arrive); the message lists the stuck flows and paused ports. The
    CLI prints it and exits with status 3; the outputs so far are kept."""


class Terminated(Exception):
    """SIGTERM arrived (e.g. Slurm's time limit); the CLI exits with status 143
    after the outputs so far are written (``summary.json`` says ``complete: false``)."""


class OutputError(Exception):
    """An output file could not be written (a full disk, a read-only folder);
    the message is one line ``cannot write PATH: REASON``. The CLI prints it and
    exits with status 4; the other outputs are still written, and the files not
    finished are left as ``NAME.part``."""
