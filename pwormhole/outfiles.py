"""Writing output files safely: every writer of pwormhole goes through here.

Rules:

* a file is written as ``NAME.part`` and renamed to ``NAME`` only after every
  write and the close succeeded, so a final name never holds an empty or
  truncated file; on a write error the ``.part`` is kept;
* ``NAME.part`` is created fresh (``O_CREAT | O_EXCL | O_NOFOLLOW``) after any
  stale entry of that name is removed, so a link planted there is removed,
  never followed; ``os.replace`` onto ``NAME`` replaces a link at ``NAME``
  itself, never its target;
* a write error becomes :class:`~pwormhole.errors.OutputError` with one line
  ``cannot write PATH: REASON``.
"""

from __future__ import annotations

import errno
import importlib.util
import os
import sys
from contextlib import contextmanager

from .errors import InputError, OutputError

_CREATE_FLAGS = (os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
                 | getattr(os, "O_CLOEXEC", 0))

REPORT_NAME = "report.html"  # report.page
RECORD_NAME = "windows.npz"  # partition.record
# files pwormhole writes at the top of an output folder under these names (run, compare, scale)
OWN_FILE_NAMES = frozenset({"summary.json", "collectives.csv", "timeline.png", "timeline.csv", "per_layer.csv",
                            "trace.json", "report.html", "compare.json", "link_util.csv", "windows.npz",
                            "fct_error_cdf.png", "scaling.csv", "scaling.png", "prediction.csv"})
# names pwormhole writes itself, files and folders; config-file output names may not take them
OWN_OUTPUT_NAMES = OWN_FILE_NAMES | {"packet", "wormhole", "spread", "logs", "slurm"}
PART_SUFFIX = ".part"


def write_error(path: str, e: OSError) -> str:
    """The one-line message of a failed write of ``path``."""
    return f"cannot write {path}: {e.strerror or e}"


def create_fresh(path: str) -> int:
    """A new file at ``path`` opened for writing (a file descriptor), created
    with ``O_EXCL | O_NOFOLLOW``; an existing entry there (a stale file or a
    link) is removed first, never written through. OSError when impossible."""
    for _ in range(4):
        try:
            return os.open(path, _CREATE_FLAGS, 0o666)
        except FileExistsError:
            try:
                os.unlink(path)  # a link is removed itself
            except FileNotFoundError:
                pass
    raise OSError(errno.EEXIST, "the file keeps being re-created by someone else", path)


class PartFile:
    """``PATH.part`` open for writing (text in UTF-8, or bytes with ``binary``);
    :meth:`commit` closes it and renames it to ``PATH``. Errors are OSError."""

    def __init__(self, path: str, binary: bool = False):
        self.path = str(path)
        self.part = self.path + PART_SUFFIX
        fd = create_fresh(self.part)
        try:
            self.fh = self._open(fd, binary)
        except BaseException:
            os.close(fd)
            raise

    @staticmethod
    def _open(fd: int, binary: bool):
        if binary:
            return os.fdopen(fd, "wb")
        return os.fdopen(fd, "w", encoding="utf-8", newline="\n")

    def commit(self) -> None:
        """Close and rename to ``PATH`` (on an OSError the ``.part`` stays)."""
        self.fh.close()
        os.replace(self.part, self.path)

    def abandon(self) -> None:
        """Close without renaming: the ``.part`` is kept (close errors are ignored)."""
        try:
            self.fh.close()
        except OSError:
            pass


@contextmanager
def atomic(path: str, binary: bool = False):
    """``with atomic(path) as fh:`` writes ``PATH.part`` and renames it to
    ``PATH`` when the block ends; an OSError becomes OutputError (the ``.part``
    is kept)."""
    path = str(path)
    try:
        f = PartFile(path, binary)
    except OSError as e:
        raise OutputError(write_error(path, e)) from None
    try:
        yield f.fh
        f.commit()
    except OSError as e:
        f.abandon()
        raise OutputError(write_error(path, e)) from None
    except BaseException:
        f.abandon()
        raise


def write_text(path: str, text: str) -> None:
    """``text`` to ``path`` by :func:`atomic`."""
    with atomic(path) as fh:
        fh.write(text)


PLOT_INSTALL = "pip install 'pwormhole[plot]' (or matplotlib)"


def matplotlib_installed() -> bool:
    """Whether the PNG figures can be drawn (matplotlib is the ``plot`` extra; report.html needs none)."""
    return importlib.util.find_spec("matplotlib") is not None


def save_figure(fig, path: str, dpi: int = 110) -> None:
    """A matplotlib figure as a PNG at ``path`` by :func:`atomic`; the figure is closed."""
    import matplotlib.pyplot as plt  # heavy (~1 s): loaded only when a figure is saved

    try:
        with atomic(path, binary=True) as fh:
            fig.savefig(fh, format="png", dpi=dpi)
    finally:
        plt.close(fig)


def check_folder_writable(folder: str, what: str, create: bool = False) -> None:
    """InputError unless a file can be created in ``folder`` (made first with
    ``create``); checked with a probe file that is removed again."""
    folder = folder or "."
    try:
        if create:
            os.makedirs(folder, exist_ok=True)
        elif not os.path.isdir(folder):
            raise InputError(f"cannot write {what}: folder {folder!r} does not exist")
        probe = os.path.join(folder, f".pwormhole-write-test-{os.getpid()}")
        os.close(create_fresh(probe))
        os.remove(probe)
    except OSError as e:
        raise InputError(f"cannot write {what}: folder {folder!r}: {e.strerror or e}") from None


def check_file_writable(path: str, what: str) -> None:
    """InputError unless ``path`` can be written: its folder exists and is
    writable, and ``path`` is not a folder nor another file that is not a regular
    one (a device, a FIFO: the run would replace it; checked before any work)."""
    if os.path.isdir(path):
        raise InputError(f"cannot write {what} {path!r}: it is a folder")
    if os.path.exists(path) and not os.path.isfile(path):
        raise InputError(f"cannot write {what} {path!r}: it is not a regular file")
    check_folder_writable(os.path.dirname(os.path.abspath(path)), f"{what} {path!r}")


def check_output_name(name: str) -> str | None:
    """Why ``name`` cannot be an output file name inside ``--out`` (None when it can):
    it must be one plain name, not one of pwormhole's own outputs nor a ``.part``."""
    if name in ("", ".", "..") or "/" in name or "\\" in name:
        return "is not a file name inside --out"
    if any(ord(c) < 32 for c in name):
        return "has control characters"
    if name in OWN_OUTPUT_NAMES:
        return f"is the name of pwormhole's own {name}"
    if name.endswith(PART_SUFFIX):
        return f"ends with {PART_SUFFIX}, the suffix of unfinished outputs"
    return None


def existing(folder: str, names) -> list[str]:
    """The ``names`` that already exist in ``folder`` (files or links)."""
    return [n for n in names if os.path.lexists(os.path.join(folder, n))]


def earlier_outputs(folder: str, names_of_summary=()) -> list[str]:
    """The files in ``folder`` that an earlier run of pwormhole wrote there (or began, as ``.part``):
    pwormhole's own names and those of ``names_of_summary`` (the output names an earlier ``summary.json``
    lists) that are plain file names; files and links only, never folders."""
    names = set(OWN_FILE_NAMES) | {n for n in names_of_summary if isinstance(n, str) and
                                   (check_output_name(n) is None or n in OWN_OUTPUT_NAMES)}
    found = []
    for n in sorted(names | {n + PART_SUFFIX for n in names}):
        p = os.path.join(folder, n)
        if os.path.islink(p) or os.path.isfile(p):
            found.append(n)
    return found


# files that mark a folder as pwormhole's: a run's, compare's, scale's (or their unfinished .part)
OUT_DIR_MARKS = ("summary.json", "compare.json", "scaling.csv", "prediction.csv")


def check_claimable(folder: str, names_of_summary=(), found: list[str] | None = None) -> None:
    """InputError when ``folder`` holds files of pwormhole's output names (``found``, else
    :func:`earlier_outputs`) but nothing that marks it as an output folder of pwormhole
    (:data:`OUT_DIR_MARKS`): they are someone else's, and a run would replace or remove them."""
    if found is None:
        found = earlier_outputs(folder, names_of_summary)
    marks = set(OUT_DIR_MARKS) | {m + PART_SUFFIX for m in OUT_DIR_MARKS}
    if found and not marks.intersection(found):
        raise InputError(f"{folder} holds {', '.join(found)} but no {', '.join(OUT_DIR_MARKS[:-1])} or "
                         f"{OUT_DIR_MARKS[-1]}: not an output folder of pwormhole, and a run would write over "
                         "them; give a new or empty folder (--out), or remove them")


def claim_out_dir(folder: str, writes, names_of_summary=(), keep: str | None = None) -> None:
    """Make ``folder`` hold one run's outputs only: the earlier outputs there (:func:`earlier_outputs`)
    that the new run does not write (``writes``; their ``.part`` files it makes afresh) are removed,
    ``keep`` (a path: the memo cache the run reads) excepted; one warning line names what is replaced
    and what is removed. OutputError when a file cannot be removed; InputError when the folder is not
    pwormhole's (:func:`check_claimable`)."""
    found = earlier_outputs(folder, names_of_summary)
    check_claimable(folder, found=found)
    writes = set(writes)
    kept = {os.path.abspath(keep)} if keep else set()
    replaced = [n for n in found if n in writes]
    removed = [n for n in found if n not in writes and n.removesuffix(PART_SUFFIX) not in writes
               and os.path.abspath(os.path.join(folder, n)) not in kept]
    for n in removed:
        try:
            os.unlink(os.path.join(folder, n))
        except FileNotFoundError:
            pass
        except OSError as e:
            raise OutputError(f"cannot remove {os.path.join(folder, n)}, an earlier run's output: "
                              f"{e.strerror or e}") from None
    if replaced or removed:
        said = [f"replacing {', '.join(replaced)}"] if replaced else []
        if removed:
            said.append(f"removed {', '.join(removed)} (not written by this run)")
        print(f"pwormhole: warning: {folder} held an earlier run's outputs: {'; '.join(said)}", file=sys.stderr)


def discard_out_dir(made: tuple[str, str] | None) -> None:
    """``made``: ``(output folder, the outermost folder made for it)`` by ``report.writer.prepare_out_dir``
    for a run whose inputs were then refused: each of those folders is removed if empty, from the
    output folder up, so nothing is left behind."""
    if not made:
        return
    p, top = os.path.abspath(made[0]), made[1]
    while True:
        try:
            os.rmdir(p)
        except OSError:  # not empty, or gone: leave it and its parents
            return
        if p == top:
            return
        p = os.path.dirname(p)


__all__ = ["REPORT_NAME", "RECORD_NAME", "OWN_OUTPUT_NAMES", "OWN_FILE_NAMES", "OUT_DIR_MARKS", "check_claimable",
           "earlier_outputs", "claim_out_dir",
           "PartFile", "atomic", "write_text", "PLOT_INSTALL", "matplotlib_installed", "save_figure", "create_fresh",
           "write_error", "check_folder_writable", "check_file_writable", "check_output_name", "existing",
           "discard_out_dir"]
