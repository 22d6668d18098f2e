"""Whitespace token streams with line numbers, for the HPCC ns-3 input readers.

HPCC's ``third.cc`` reads its topology, flow and trace files with C++ ``>>``:
the files are token streams, line breaks carry no meaning, and whatever follows
the declared counts (extra rows, English notes) is never read. A
:class:`TokenReader` reads the same way, lazily, while remembering the line of
every token so that errors can name it. CRLF line ends, tabs and a UTF-8 byte
order mark make no difference.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Generator, Iterator

from pwormhole.errors import InputError

_INT = re.compile(r"^[+-]?\d+$")


def open_text(path: str | os.PathLike, what: str = "file"):
    """Open ``path`` for reading text (universal newlines, BOM dropped).

    Raises InputError naming the path when it cannot be opened.
    """
    try:
        return open(path, encoding="utf-8-sig", errors="replace", newline=None)
    except OSError as e:
        raise InputError(f"cannot open {what}: {e.strerror or e}", str(path)) from None


class TokenReader:
    """Lazy ``(token, line)`` stream over one file.

    ``take(what)`` returns the next token and its 1-based line, or raises
    InputError ``truncated file: expected <what>, found end of file`` at the last
    line of the file.
    """

    def __init__(self, path: str | os.PathLike, what: str = "file"):
        self.path = str(path)
        self._f = open_text(path, what)
        self._it = self._tokens()
        self.last_line = 0

    def _tokens(self) -> Generator[tuple[str, int], None, None]:
        with self._f:
            for lineno, text in enumerate(self._f, start=1):
                self.last_line = lineno
                for tok in text.split():
                    yield tok, lineno

    def close(self) -> None:
        self._it.close()
        self._f.close()

    def __enter__(self) -> TokenReader:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def take(self, what: str) -> tuple[str, int]:
        """Next token and its line; InputError (truncated file) at end of file."""
        try:
            return next(self._it)
        except StopIteration:
            raise InputError(f"truncated file: expected {what}, found end of file",
                             self.path, max(self.last_line, 1)) from None

    def error(self, message: str, line: int) -> InputError:
        return InputError(message, self.path, line)

    def take_int(self, what: str, lo: int | None = None, hi: int | None = None) -> tuple[int, int]:
        """Next token as an int in ``[lo, hi]`` (either bound optional), with its line."""
        tok, line = self.take(what)
        return to_int(tok, what, self.path, line, lo, hi), line


def to_int(tok: str, what: str, path: str | None, line: int | None,
           lo: int | None = None, hi: int | None = None) -> int:
    """``tok`` as an int within ``[lo, hi]``; InputError naming ``what`` and the value otherwise."""
    if not _INT.match(tok):
        raise InputError(f"{what} {tok!r} is not an integer", path, line)
    v = int(tok)
    if (lo is not None and v < lo) or (hi is not None and v > hi):
        lo_s = "" if lo is None else str(lo)
        hi_s = "" if hi is None else str(hi)
        raise InputError(f"{what} {tok!r} is out of range {lo_s}..{hi_s}", path, line)
    return v


def to_float(tok: str, what: str, path: str | None, line: int | None) -> float:
    """``tok`` as a finite float; InputError naming ``what`` and the value otherwise."""
    try:
        v = float(tok)
    except ValueError:
        raise InputError(f"{what} {tok!r} is not a number", path, line) from None
    if not math.isfinite(v):
        raise InputError(f"{what} {tok!r} is not a finite number", path, line)
    return v


def read_json(path: str) -> dict:
    """The JSON object in ``path`` (one of pwormhole's own outputs, read back); InputError naming the
    file, and the line where the parser stopped, when it is not one (also nested past Python's limit)."""
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
    except json.JSONDecodeError as e:
        raise InputError(f"not valid JSON: {e.msg}", path, e.lineno) from None
    except RecursionError:
        raise InputError("not valid JSON here: nested too deep", path) from None
    except (OSError, UnicodeDecodeError) as e:
        raise InputError(f"cannot read: {getattr(e, 'strerror', None) or e}", path) from None
    if not isinstance(data, dict):
        raise InputError("not a JSON object", path, 1)
    return data


def token_lines(f) -> Iterator[tuple[int, list[str]]]:
    """``(line number, tokens)`` of the lines of the open text file ``f`` that are neither blank nor
    ``#`` comments (the line-oriented readers: htsim, CDF files)."""
    for lineno, text in enumerate(f, start=1):
        toks = text.split()
        if toks and not toks[0].startswith("#"):
            yield lineno, toks


def head_tokens(path: str | os.PathLike, max_lines: int = 50) -> Iterator[list[str]]:
    """Tokens of the first ``max_lines`` lines that are neither blank nor ``#``
    comments (format detection); nothing when the file cannot be opened."""
    try:
        with open(path, encoding="utf-8-sig", errors="replace") as f:
            for n, text in enumerate(f):
                if n > max_lines:
                    return
                toks = text.split()
                if toks and not toks[0].startswith("#"):
                    yield toks
    except OSError:
        return
