"""Reading the output folder of ``run``, ``compare`` or ``scale`` back for a report.

A folder holds one run (``summary.json``, the FCT and PFC files, a training
run's ``collectives.csv`` and ``timeline.csv``), a comparison (``compare.json``
with ``packet/`` and ``wormhole/`` runs) or a scaling study (``scaling.csv``
with ``<mode>/ranks<R>/`` runs). A file that is there but cannot be read is an
InputError naming the file and line.
"""

from __future__ import annotations

import csv
import math
import os
from typing import NamedTuple

import numpy as np

from ..errors import InputError
from ..inputs.tokens import read_json
from ..outfiles import RECORD_NAME

INT64_MAX = 2**63 - 1
# where the run a report describes lies in each kind of folder, in order of preference
RUN_FOLDERS = (".", "wormhole", "packet", os.path.join("wormhole", "ranks1"), os.path.join("packet", "ranks1"))


class Fcts(NamedTuple):
    """The columns of an ``fct.txt`` (one entry per finished flow, in file order); ``src`` and ``dst``:
    the node ids of its HPCC addresses."""
    size_bytes: np.ndarray
    start_ns: np.ndarray
    fct_ns: np.ndarray
    standalone_ns: np.ndarray
    src: np.ndarray | None = None
    dst: np.ndarray | None = None

    def select(self, mask: np.ndarray) -> Fcts:
        """The flows where ``mask`` is true."""
        src = None if self.src is None else self.src[mask]
        dst = None if self.dst is None else self.dst[mask]
        return Fcts(self.size_bytes[mask], self.start_ns[mask], self.fct_ns[mask], self.standalone_ns[mask], src, dst)


def node_of_ip(ip: np.ndarray) -> np.ndarray:
    """Node ids of HPCC addresses (``report.fct.hpcc_ip``'s inverse)."""
    x = ip - 0x0B000001
    return (x // 0x10000) * 256 + (x % 0x10000) // 0x100


def nvlink_mask(f: Fcts, gpus_per_server: int) -> np.ndarray | None:
    """Which flows run inside a server (both ends among the same ``gpus_per_server`` GPUs, over its
    NVSwitches, as the training fabrics are laid out); None without servers or node columns."""
    if gpus_per_server <= 0 or f.src is None or f.dst is None:
        return None
    return f.src // gpus_per_server == f.dst // gpus_per_server


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


def _rows(path: str, n_cols: int, what: str, hex_cols: int = 0) -> np.ndarray:
    """The integer columns of a whitespace-separated file (at least ``n_cols`` per line; the first
    ``hex_cols`` in hexadecimal)."""
    try:
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
    except (OSError, UnicodeDecodeError) as e:
        raise InputError(f"cannot read: {e}", path) from None
    lines = text.split("\n")
    fast = _columns(text, lines, n_cols, hex_cols)
    if fast is not None:
        return fast
    out = []
    for lineno, line in enumerate(lines, 1):
        f = line.split()
        if not f:
            continue
        if len(f) < n_cols:
            raise InputError(f"{what} line has {len(f)} columns, expected {n_cols}: {line.strip()!r}", path, lineno)
        try:
            row = [int(x, 16 if i < hex_cols else 10) for i, x in enumerate(f[:n_cols])]
        except ValueError:
            raise InputError(f"{what} line has a value that is not an integer: {line.strip()!r}",
                             path, lineno) from None
        if not all(-INT64_MAX <= v <= INT64_MAX for v in row):
            raise InputError(f"{what} line has a value outside the 64-bit integers: {line.strip()!r}",
                             path, lineno)
        out.append(row)
    return np.array(out, dtype=np.int64).reshape(-1, n_cols)


def _columns(text: str, lines: list[str], n_cols: int, hex_cols: int) -> np.ndarray | None:
    """The columns of a file of ``n_cols`` integers on every line that is not empty, each converted
    at once by numpy (as ``int`` does), the hexadecimal ones once per distinct value; None when a
    line differs or a value does not convert within the 64-bit integers (the line-by-line reading
    says which)."""
    tokens = text.split()
    if len(tokens) != n_cols * (len(lines) - lines.count("")):
        return None
    out = np.empty((len(tokens) // n_cols, n_cols), dtype=np.int64)
    try:
        for i in range(n_cols):
            column = tokens[i::n_cols]
            if i < hex_cols:
                value = {x: int(x, 16) for x in set(column)}
                out[:, i] = [value[x] for x in column]
            else:
                out[:, i] = np.array(column, dtype=np.int64)
    except (ValueError, OverflowError):
        return None
    if out.size and out.min() < -INT64_MAX:
        return None
    return out


def read_fcts(path: str) -> Fcts:
    """An HPCC ``fct.txt``: ``sip dip sport dport size_bytes start_ns fct_ns standalone_fct_ns``."""
    a = _rows(path, 8, "fct.txt", hex_cols=2)
    return Fcts(a[:, 4], a[:, 5], a[:, 6], a[:, 7], node_of_ip(a[:, 0]), node_of_ip(a[:, 1]))


def read_pfc(path: str) -> Pfc:
    a = _rows(path, 5, "pfc.txt")
    return Pfc(a[:, 0], a[:, 1], a[:, 2], a[:, 4])


def read_csv(path: str) -> list[dict]:
    """The rows of a CSV file with a header, as ``csv.DictReader`` gives them (empty lines skipped, a
    short row's missing cells None, a long row's extra cells a list under the key None), faster."""
    try:
        with open(path, encoding="utf-8", newline="") as fh:
            rows = csv.reader(fh)
            header = next(rows, None)
            if header is None:
                return []
            n = len(header)
            return [dict(zip(header, r)) if len(r) == n else _ragged(header, r) for r in rows if r]
    except (OSError, UnicodeDecodeError, csv.Error) as e:
        raise InputError(f"cannot read: {e}", path) from None


def _ragged(header: list[str], row: list[str]) -> dict:
    d: dict = dict(zip(header, row))
    if len(row) > len(header):
        d[None] = row[len(header):]
    for key in header[len(row):]:
        d[key] = None
    return d


def _optional(path: str, reader):
    return reader(path) if os.path.isfile(path) else None


_INT_KEYS = ("ranks", "seed", "sim_time_ps", "events", "windows", "window_ps", "flows", "flows_finished",
             "bytes_sent", "bytes_delivered", "drops", "lost_packets", "pfc_pauses", "ecn_marks", "cnps", "nacks",
             "retransmitted_bytes", "skips", "memo_hits", "memo_misses", "memo_follows", "memo_follows_steady",
             "memo_successors", "memo_successors_after_end", "ring_steps_carried", "ring_steps_handed_back",
             "memo_entries", "memo_bytes", "wakes_interrupted", "part_skips", "line_rate_freezes",
             "hpcc_crowded_nic_flows",
             "fluid_flows", "nvlink_packet_flows", "fluid_shared_flows", "eventless_bytes", "packet_events_est",
             "iteration_time_ns", "nvlink_servers_by_packets", "nvlink_by_packets_from_ns")
_NULL_KEYS = ("iteration_time_ns", "packet_events_est")  # null where a run stopped early (or sent nothing)
_FLOAT_KEYS = ("wall_s", "events_per_s", "sync_wall_s", "cpu_s", "ready_wait_s", "skipped_time_fraction")
_STR_KEYS = ("mode", "scenario", "cc", "nvlink_cc", "engine", "run_id", "nvlink_model", "nvlink_packets_reason",
             "interrupted", "aborted")
_NUMBER_DICT_KEYS = ("fct_ns", "slowdown", "collectives", "partition")
_DICT_KEYS = ("inputs", "accel", "monitors", "stuck", "nic", "nvlink")
_INT_LIST_KEYS = ("events_by_rank", "iterations")


def _is_int(v) -> bool:
    return type(v) is int and -INT64_MAX <= v <= INT64_MAX


def _is_number(v) -> bool:
    return _is_int(v) or (type(v) is float and math.isfinite(v))


def check_summary(summary: dict, path: str) -> None:
    """InputError naming ``path`` and the key unless every key a report reads has the kind of value a
    run writes there (integers within int64, finite numbers, strings, lists and objects of them)."""
    def bad(key: str, what: str):
        return InputError(f"summary key {key!r} is not {what}: {str(summary[key])[:60]!r}", path)

    for k in _INT_KEYS:
        if k in summary and not _is_int(summary[k]) and not (k in _NULL_KEYS and summary[k] is None):
            raise bad(k, "an integer")
    for k in _FLOAT_KEYS:
        if k in summary and not _is_number(summary[k]):
            raise bad(k, "a finite number")
    for k in _STR_KEYS:
        if summary.get(k) is not None and not isinstance(summary[k], str):
            raise bad(k, "a string")
    if "complete" in summary and not isinstance(summary["complete"], bool):
        raise bad("complete", "true or false")
    for k in _NUMBER_DICT_KEYS:
        v = summary.get(k)
        if v is not None and not (isinstance(v, dict) and all(x is None or _is_number(x) for x in v.values())):
            raise bad(k, "an object of numbers")
    for k in _DICT_KEYS:
        v = summary.get(k)
        if v is not None and not (isinstance(v, dict) and all(x is None or isinstance(x, (str, bool, dict, list))
                                                              or _is_number(x) for x in v.values())):
            raise bad(k, "an object")
    for k in _INT_LIST_KEYS:
        v = summary.get(k)
        if v is not None and not (isinstance(v, list) and all(_is_int(x) for x in v)):
            raise bad(k, "a list of integers")
    gpus = summary.get("gpus")
    if gpus is not None and not (isinstance(gpus, list) and all(
            isinstance(g, dict) and all(_is_int(x) for x in g.values()) for g in gpus)):
        raise bad("gpus", "a list of objects of integers")
    outputs = summary.get("outputs")
    if not (isinstance(outputs, list) and all(isinstance(n, str) for n in outputs)
            and isinstance(summary.get("run_id"), str)):
        raise InputError("names no 'outputs' and 'run_id': not a summary of this version of pwormhole (run it "
                         "again)", path)


# the columns a report reads of a run's CSV files, as numbers: file -> (integer columns, finite-number columns)
_CSV_NUMBERS = {"collectives.csv": (("members", "size_bytes", "start_ns", "time_ns"), ("busbw_gbps",)),
                "timeline.csv": (("gpu", "start_ns", "end_ns"), ())}


def _checked_rows(path: str, rows: list[dict]) -> list[dict]:
    """``rows`` of the CSV at ``path`` (:func:`read_csv`'s), InputError naming the line and the value
    unless each has its header's columns and the numbers a report reads (:data:`_CSV_NUMBERS`)."""
    if not rows:
        return rows
    n = len(rows[0]) - (None in rows[0])
    for line, row in enumerate(rows, start=2):  # (line 1: the header)
        if len(row) != n or None in row.values():  # (a long row's extra cells are under None)
            header = [k for k in row if k is not None]
            cells = sum(row[k] is not None for k in header) + len(row.get(None) or ())
            raise InputError(f"a row of {cells} cells where the header has {len(header)}", path, line)
    ints, floats = _CSV_NUMBERS.get(os.path.basename(path), ((), ()))
    for col in ints:  # read as the report reads them: int(); the row at fault found only when one is
        if col in rows[0]:
            values = [row[col] for row in rows]
            try:
                list(map(int, values))
            except ValueError:
                line, v = next((i, v) for i, v in enumerate(values, start=2) if not _is_int_text(v))
                raise InputError(f"{col} {v!r} is not an integer", path, line) from None
    for col in floats:
        if col in rows[0]:
            for line, row in enumerate(rows, start=2):
                if not _finite(row[col]):
                    raise InputError(f"{col} {row[col]!r} is not a finite number", path, line)
    return rows


def _is_int_text(text: str) -> bool:
    try:
        int(text)
    except ValueError:
        return False
    return True


def _finite(text: str) -> bool:
    try:
        return math.isfinite(float(text))
    except ValueError:
        return False


def _read_checked_csv(path: str) -> list[dict]:
    return _checked_rows(path, read_csv(path))


# files of a run that a report reads besides its FCT and PFC files, the monitors' included
_RUN_FILES = ("collectives.csv", "timeline.csv", "per_layer.csv", "trace.json", "link_util.csv", RECORD_NAME)


def read_run(folder: str, fcts: Fcts | None = None) -> RunFiles:
    """The outputs of the run in ``folder`` (its ``summary.json`` must be there; ``fcts``: its FCT file's
    columns when the caller holds them, as the run that wrote them does). InputError when a file of a
    run is there that the summary does not list as its output (left by another run)."""
    path = os.path.join(folder, "summary.json")
    summary = read_json(path)
    check_summary(summary, path)
    files = summary.get("inputs") or {}
    outputs = set(summary["outputs"])
    names = {n for n in (files.get("fct_file"), files.get("pfc_file"), files.get("qlen_file"), *_RUN_FILES)
             if isinstance(n, str) and n}
    for n in sorted(names - outputs):
        if os.path.isfile(os.path.join(folder, n)):
            raise InputError(f"{n} here is not an output of the run in summary.json (an earlier run's?): remove "
                             "it, or run again into an empty folder", os.path.join(folder, n))
    fct_name = files.get("fct_file") or "fct.txt"
    pfc_name = files.get("pfc_file") or "pfc.txt"
    fct_path = os.path.join(folder, fct_name)
    if os.path.exists(fct_path) and not os.path.isfile(fct_path):
        raise InputError("is not a file", fct_path)
    held = fcts is not None and os.path.isfile(fct_path)
    if not held:
        fcts = _optional(fct_path, read_fcts)
        finished = summary.get("flows_finished")
        if fcts is not None and isinstance(finished, int) and len(fcts.fct_ns) != finished:
            raise InputError(f"holds {len(fcts.fct_ns)} flows where summary.json says {finished} finished (cut short "
                             "or edited?)", fct_path)
    csv_reader = read_csv if held else _read_checked_csv  # (the run that wrote them need not check its own)
    return RunFiles(folder, summary, fcts,
                    _optional(os.path.join(folder, pfc_name), read_pfc),
                    _optional(os.path.join(folder, "collectives.csv"), csv_reader),
                    _optional(os.path.join(folder, "timeline.csv"), csv_reader))


def read_out_dir(path: str, fcts: Fcts | None = None) -> OutDir:
    """What ``path`` holds (InputError when it is no output folder of pwormhole; ``fcts``: the columns of
    the FCT file of a run in ``path`` itself, held by the caller)."""
    if not os.path.isdir(path):
        raise InputError(f"output folder {path!r} " + ("is a file, not a folder" if os.path.exists(path)
                                                        else "does not exist"))
    run = next((read_run(os.path.normpath(os.path.join(path, d)), fcts if d == "." else None) for d in RUN_FOLDERS
                if os.path.isfile(os.path.join(path, d, "summary.json"))), None)
    compare = compare_runs = None
    if os.path.isfile(os.path.join(path, "compare.json")):
        compare = read_json(os.path.join(path, "compare.json"))
        if all(os.path.isfile(os.path.join(path, m, "summary.json")) for m in ("packet", "wormhole")):
            compare_runs = (read_run(os.path.join(path, "packet")), read_run(os.path.join(path, "wormhole")))
            ids = {"packet": compare_runs[0].summary["run_id"], "wormhole": compare_runs[1].summary["run_id"]}
            if compare.get("runs") != ids:
                raise InputError("compare.json is not the comparison of the runs in packet/ and wormhole/ (their "
                                 "run_id differ): run compare again", os.path.join(path, "compare.json"))
    scaling = _optional(os.path.join(path, "scaling.csv"), read_csv)
    if run is None and compare is None and scaling is None:
        raise InputError(f"{path!r} holds no summary.json, compare.json nor scaling.csv: not an output folder of "
                         "pwormhole run, compare or scale")
    return OutDir(path, run, compare, compare_runs, scaling)
