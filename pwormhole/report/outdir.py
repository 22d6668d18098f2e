"""Reading the output folder of ``run``, ``compare`` or ``scale`` back for a report.

A folder holds one run (``summary.json``, the FCT and PFC files, a training
run's ``collectives.csv`` and ``timeline.csv``), a comparison (``compare.json``
with ``packet/`` and ``wormhole/`` runs) or a scaling study (``scaling.csv``
with ``<mode>/ranks<R>/`` runs). A file that is there but cannot be read is an
InputError naming the file and line.
"""

from __future__ import annotations

import csv
import json
import os
from typing import NamedTuple

import numpy as np

from ..errors import InputError

# where the run a report describes lies in each kind of folder, in order of preference
RUN_FOLDERS = (".", "wormhole", "packet", os.path.join("wormhole", "ranks1"), os.path.join("packet", "ranks1"))


class Fcts(NamedTuple):
    """The columns of an ``fct.txt`` (one entry per finished flow, in file order)."""
    size_bytes: np.ndarray
    start_ns: np.ndarray
    fct_ns: np.ndarray
    standalone_ns: np.ndarray


class Pfc(NamedTuple):
    """The rows of a ``pfc.txt``: ``time_ns node node_type if_index kind`` (1 pause, 0 resume)."""
    time_ns: np.ndarray
    node: np.ndarray
    node_type: np.ndarray
    kind: np.ndarray


class RunFiles(NamedTuple):
    """One run's outputs (None where a file is not there)."""
    folder: str
    summary: dict
    fcts: Fcts | None
    pfc: Pfc | None
    collectives: list[dict] | None
    timeline: list[dict] | None


class OutDir(NamedTuple):
    """What a report can show of a folder: its run, and a comparison or a scaling study."""
    path: str
    run: RunFiles | None
    compare: dict | None
    compare_runs: tuple[RunFiles, RunFiles] | None  # (packet, wormhole)
    scaling: list[dict] | None


def read_json(path: str) -> dict:
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
    except json.JSONDecodeError as e:
        raise InputError(f"not valid JSON: {e.msg}", path, e.lineno) from None
    except (OSError, UnicodeDecodeError) as e:
        raise InputError(f"cannot read: {e}", path) from None
    if not isinstance(data, dict):
        raise InputError("not a JSON object", path, 1)
    return data


def _rows(path: str, n_cols: int, what: str, hex_cols: int = 0) -> np.ndarray:
    """The integer columns of a whitespace-separated file (at least ``n_cols`` per line; the first
    ``hex_cols`` in hexadecimal)."""
    out = []
    try:
        with open(path, encoding="utf-8") as fh:
            for lineno, line in enumerate(fh, 1):
                f = line.split()
                if not f:
                    continue
                if len(f) < n_cols:
                    raise InputError(f"{what} line has {len(f)} columns, expected {n_cols}: {line.strip()!r}",
                                     path, lineno)
                try:
                    out.append([int(x, 16 if i < hex_cols else 10) for i, x in enumerate(f[:n_cols])])
                except ValueError:
                    raise InputError(f"{what} line has a value that is not an integer: {line.strip()!r}",
                                     path, lineno) from None
    except (OSError, UnicodeDecodeError) as e:
        raise InputError(f"cannot read: {e}", path) from None
    return np.array(out, dtype=np.int64).reshape(-1, n_cols)


def read_fcts(path: str) -> Fcts:
    """An HPCC ``fct.txt``: ``sip dip sport dport size_bytes start_ns fct_ns standalone_fct_ns``."""
    a = _rows(path, 8, "fct.txt", hex_cols=2)
    return Fcts(a[:, 4], a[:, 5], a[:, 6], a[:, 7])


def read_pfc(path: str) -> Pfc:
    a = _rows(path, 5, "pfc.txt")
    return Pfc(a[:, 0], a[:, 1], a[:, 2], a[:, 4])


def read_csv(path: str) -> list[dict]:
    try:
        with open(path, encoding="utf-8", newline="") as fh:
            return list(csv.DictReader(fh))
    except (OSError, UnicodeDecodeError, csv.Error) as e:
        raise InputError(f"cannot read: {e}", path) from None


def _optional(path: str, reader):
    return reader(path) if os.path.isfile(path) else None


def read_run(folder: str) -> RunFiles:
    """The outputs of the run in ``folder`` (its ``summary.json`` must be there)."""
    summary = read_json(os.path.join(folder, "summary.json"))
    files = summary.get("inputs") or {}
    fct_name = files.get("fct_file") or "fct.txt"
    pfc_name = files.get("pfc_file") or "pfc.txt"
    return RunFiles(folder, summary, _optional(os.path.join(folder, fct_name), read_fcts),
                    _optional(os.path.join(folder, pfc_name), read_pfc),
                    _optional(os.path.join(folder, "collectives.csv"), read_csv),
                    _optional(os.path.join(folder, "timeline.csv"), read_csv))


def read_out_dir(path: str) -> OutDir:
    """What ``path`` holds (InputError when it is no output folder of pwormhole)."""
    if not os.path.isdir(path):
        raise InputError(f"output folder {path!r} does not exist")
    run = next((read_run(os.path.normpath(os.path.join(path, d))) for d in RUN_FOLDERS
                if os.path.isfile(os.path.join(path, d, "summary.json"))), None)
    compare = compare_runs = None
    if os.path.isfile(os.path.join(path, "compare.json")):
        compare = read_json(os.path.join(path, "compare.json"))
        if all(os.path.isfile(os.path.join(path, m, "summary.json")) for m in ("packet", "wormhole")):
            compare_runs = (read_run(os.path.join(path, "packet")), read_run(os.path.join(path, "wormhole")))
    scaling = _optional(os.path.join(path, "scaling.csv"), read_csv)
    if run is None and compare is None and scaling is None:
        raise InputError(f"{path!r} holds no summary.json, compare.json nor scaling.csv: not an output folder of "
                         "pwormhole run, compare or scale")
    return OutDir(path, run, compare, compare_runs, scaling)
