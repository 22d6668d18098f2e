"""The output files of a run, written under its output folder.

``fct.txt`` and ``pfc.txt`` (names from the config) are written as results
come in, as ``NAME.part``, renamed when the run ends (:mod:`pwormhole.report.fct`);
then ``summary.json``, ``collectives.csv``, ``timeline.csv``, ``per_layer.csv``, ``timeline.png`` and
the memo cache (and ``report.html`` when asked). A write error does not stop the run nor the other outputs: the file
stays as ``NAME.part`` and the error is listed (:class:`RunWriter`).
"""

from __future__ import annotations

import json
import os
import threading

import numpy as np

from ..accel.memo import MemoCache
from ..errors import InputError, OutputError
from ..outfiles import (
    OWN_FILE_NAMES,
    OWN_OUTPUT_NAMES,
    RECORD_NAME,
    REPORT_NAME,
    check_claimable,
    check_file_writable,
    check_output_name,
    claim_out_dir,
    create_fresh,
    earlier_outputs,
)
from ..sync.interrupt import deferred_signals
from .fct import IncrementalFile, fct_line, pfc_line
from .outdir import Fcts
from .per_layer import PER_LAYER_NAME, write_per_layer_csv
from .summary import write_json_atomic
from .trace import TRACE_NAME
from .training import plot_timeline, write_collectives_csv, write_timeline_csv


def prepare_out_dir(out_dir: str) -> str | None:
    """Create ``out_dir`` and check it is writable, before any simulation (InputError otherwise).
    Returns the outermost folder made here (None: ``out_dir`` was there), which
    ``outfiles.discard_out_dir`` removes again if the run then fails on its inputs."""
    made = None
    p = os.path.abspath(out_dir)
    while not os.path.exists(p):
        made, p = p, os.path.dirname(p)
    try:
        os.makedirs(out_dir, exist_ok=True)
        probe = os.path.join(out_dir, f".pwormhole-write-test-{os.getpid()}")
        os.close(create_fresh(probe))
        os.remove(probe)
    except OSError as e:
        raise InputError(f"cannot write output folder {out_dir!r}: {e.strerror or e}") from None
    return made


def output_names(scn, plot: bool = False, record_windows: bool = False, report: bool = False,
                 trace: bool = False) -> list[str]:
    """The files a run writes in its output folder: the config's FCT and PFC names first (then its
    queue monitor's, when on), then pwormhole's own."""
    cfg = scn.config
    names = [cfg.fct_output_name, cfg.pfc_output_name]
    if cfg.qlen_mon_file:  # the monitors (pwormhole.report.monitor)
        names.append(cfg.qlen_mon_file)
    names.append("summary.json")
    if cfg.qlen_mon_file:
        names.append("link_util.csv")
    if scn.dag is not None and (scn.dag.collectives or scn.dag.gpu_of_host):
        names += ["collectives.csv", "timeline.csv"]
        if scn.spec is not None:
            names.append(PER_LAYER_NAME)
        if plot:
            names.append("timeline.png")
    if trace:
        names.append(TRACE_NAME)
    if record_windows:
        names.append(RECORD_NAME)
    if report:
        names.append(REPORT_NAME)
    return names


def _same_file(a: str, b: str) -> bool:
    """``a`` and ``b`` name one file (their folders resolved, their last parts not followed)."""
    def norm(p):
        p = os.path.abspath(p)
        return os.path.join(os.path.realpath(os.path.dirname(p)), os.path.basename(p))
    return norm(a) == norm(b)


def summary_output_names(out_dir: str) -> list[str]:
    """The output names the ``summary.json`` in ``out_dir`` lists (its ``outputs`` and its inputs' file
    names); none when there is no readable one."""
    try:
        with open(os.path.join(out_dir, "summary.json"), encoding="utf-8") as fh:
            old = json.load(fh)
    except (OSError, ValueError, RecursionError):
        return []
    if not isinstance(old, dict):
        return []
    outputs = old.get("outputs")
    inputs = old.get("inputs")
    names = list(outputs) if isinstance(outputs, list) else []
    if isinstance(inputs, dict):
        names += [inputs.get(k) for k in ("fct_file", "pfc_file", "qlen_file")]
    return [n for n in names if isinstance(n, str)]


def check_outputs(out_dir: str, names: list[str], source: str | None = None, memo_cache: str | None = None,
                  inputs=()) -> None:
    """Before simulating: the output ``names`` of :func:`output_names` (the config's, from ``source``, first)
    are plain distinct names, none of them pwormhole's own but where pwormhole names it, none is a folder
    in ``out_dir``, none is one of the run's ``inputs`` (files); a ``memo_cache`` can be written, is no
    output of this run nor of an earlier run in ``out_dir``, no input, and no file but a memo cache
    (it is written over; InputError otherwise)."""
    own = [i for i, n in enumerate(names) if n in OWN_FILE_NAMES]
    configured = names[:own[0]] if own else names
    for name in configured:
        why = check_output_name(name)
        if why:
            raise InputError(f"output file name {name!r} {why}", source)
    for i, name in enumerate(names):
        if name in names[:i]:
            raise InputError(f"two outputs of the run have the same name {name!r}", source)
    for name in names:
        if os.path.isdir(os.path.join(out_dir, name)):
            raise InputError(f"cannot write {os.path.join(out_dir, name)}: it is a folder")
    earlier = earlier_outputs(out_dir, summary_output_names(out_dir))
    check_claimable(out_dir, found=earlier)
    taken = set(names) | set(earlier)  # (files of this run or of the earlier run it replaces)
    written = taken | OWN_FILE_NAMES
    for path in inputs:
        for name in sorted(written):
            if _same_file(path, os.path.join(out_dir, name)) or _same_file(path, os.path.join(out_dir, name + ".part")):
                raise InputError(f"{path!r}, an input of the run, is where it writes its output {name} in {out_dir}: "
                                 "write the outputs to another folder (--out)")
    if memo_cache:
        check_file_writable(memo_cache, "--memo-cache")
        for path in inputs:
            if _same_file(memo_cache, path):
                raise InputError(f"--memo-cache {memo_cache!r} is an input of the run (it would be written over); "
                                 "give another file")
        if os.path.isfile(memo_cache) and os.path.getsize(memo_cache):
            try:
                ours = MemoCache.is_cache_file(memo_cache)
            except OSError as e:
                raise InputError(f"cannot read --memo-cache {memo_cache!r}: {e.strerror or e}") from None
            if not ours:
                raise InputError(f"--memo-cache {memo_cache!r} is a file but not a memo cache of pwormhole (it "
                                 "would be written over); give another file, or remove it")
        for name in sorted(taken | OWN_OUTPUT_NAMES):
            for p in (os.path.join(out_dir, name), os.path.join(out_dir, name + ".part")):
                if _same_file(memo_cache, p) or _same_file(memo_cache + ".part", p):
                    raise InputError(f"--memo-cache {memo_cache!r} is the name of an output of pwormhole in "
                                     f"{out_dir} ({p}); give another file")


def claim(out_dir: str, names: list[str], memo_cache: str | None = None) -> None:
    """Just before simulating: ``out_dir`` keeps no earlier run's outputs but those this run replaces
    (:func:`~pwormhole.outfiles.claim_out_dir`; one warning line)."""
    claim_out_dir(out_dir, names, summary_output_names(out_dir), keep=memo_cache)


class RunWriter:
    """The outputs of one run of ``scn`` under ``out_dir``; files only when ``enabled`` (rank 0).

    :meth:`on_flows` and :meth:`on_pfc` are the run's output hooks (completions
    ``(flow id, finish_ps, start_ps)`` and PFC records, at window boundaries);
    every rank keeps the FCTs (``fcts_ns``) and slowdowns (against
    ``standalone_ns``, flow id -> ns) for the summary. ``errors``: one line per
    output not written. ``lock`` keeps whole lines, also when the MPI stop
    watchdog (another thread) writes the partial summary.
    """

    def __init__(self, scn, out_dir: str, standalone_ns, enabled: bool):
        self.scn = scn
        self.out_dir = out_dir
        self.standalone_ns = standalone_ns
        self._standalone_rows: np.ndarray | None = None  # the same as int64, made once (for int64 completions)
        self.enabled = enabled
        self.fct_file: IncrementalFile | None = None
        self.pfc_file: IncrementalFile | None = None
        if enabled:
            self.fct_file = IncrementalFile(os.path.join(out_dir, scn.config.fct_output_name))
            self.pfc_file = IncrementalFile(os.path.join(out_dir, scn.config.pfc_output_name))
        self.fids: list[int] = []  # the flows of fcts_ns and slowdowns, in their order
        self.fcts_ns: list[int] = []
        self.starts_ns: list[int] = []  # (fct.txt's start column)
        self.slowdowns: list[float] = []
        self.errors: list[str] = []
        self.lock = threading.Lock()

    def fct_lines(self, done) -> list[str]:
        """The ``fct.txt`` lines of completions ``done``."""
        flows = self.scn.flows
        standalone = self.standalone_ns
        return [fct_line(flows[fid], t_fin, standalone[fid], t_start) for fid, t_fin, t_start in done]

    def on_flows(self, done, lines: list[str] | None = None) -> None:
        """Completions ``done`` (``lines``: their ``fct.txt`` lines when made elsewhere, under MPI
        by the ranks where the flows finished; ``done`` may then be int64 rows)."""
        standalone = self.standalone_ns
        if lines is None:
            lines = self.fct_lines(done) if self.fct_file else []  # (made on the rank that writes only)
        with deferred_signals():  # a signal's exception must not split fct.txt from the counts
            if isinstance(done, np.ndarray):  # the same values as below, computed for all at once
                fct_ns = (done[:, 1] - done[:, 2] + 500) // 1000
                if self._standalone_rows is None:
                    self._standalone_rows = np.asarray(standalone, dtype=np.int64)
                alone = self._standalone_rows[done[:, 0]]
                self.fids.extend(done[:, 0].tolist())
                self.fcts_ns.extend(fct_ns.tolist())
                self.starts_ns.extend((done[:, 2] // 1000).tolist())
                self.slowdowns.extend(np.where(alone > 0, fct_ns / np.maximum(alone, 1), 1.0).tolist())
            else:
                for fid, t_fin, t_start in done:
                    fct_ns = (t_fin - t_start + 500) // 1000
                    self.fids.append(fid)
                    self.fcts_ns.append(fct_ns)
                    self.starts_ns.append(t_start // 1000)
                    self.slowdowns.append(fct_ns / standalone[fid] if standalone[fid] else 1.0)
            if self.fct_file:
                with self.lock:
                    self.fct_file.write_lines(lines)

    def fcts(self) -> Fcts:
        """The columns of the ``fct.txt`` written so far, as :func:`~.outdir.read_fcts` reads them back."""
        fids = np.asarray(self.fids, dtype=np.int64)
        cols = self.scn.flow_columns()
        size, src, dst = cols.size_bytes[fids], cols.src[fids], cols.dst[fids]
        standalone = np.asarray(self.standalone_ns, dtype=np.int64)[fids] if len(fids) else np.zeros(0, np.int64)
        return Fcts(size, np.asarray(self.starts_ns, dtype=np.int64), np.asarray(self.fcts_ns, dtype=np.int64),
                    standalone, src, dst)

    def on_pfc(self, recs) -> None:
        if self.pfc_file:
            with self.lock:
                self.pfc_file.write_lines(pfc_line(r) for r in recs)

    def abandon(self) -> None:
        """A failed run: ``fct.txt`` and ``pfc.txt`` stay as ``.part``."""
        if self.enabled:
            with self.lock:
                for f in (self.fct_file, self.pfc_file):
                    if f is not None:  # both set when enabled
                        f.close_partial()

    def commit(self) -> None:
        """The run ended: rename ``fct.txt`` and ``pfc.txt`` (their write errors go to ``errors``)."""
        if self.enabled:
            with self.lock:
                errors = [f.commit() for f in (self.fct_file, self.pfc_file) if f is not None]  # both when enabled
                self.errors += [e for e in errors if e is not None]

    def write_partial_summary(self, summary: dict) -> None:
        """The summary of a run the watchdog ends (its thread); ``fct.txt.part`` and ``pfc.txt.part``
        stay as written. The lock is never released: the job ends next."""
        if not self.lock.acquire(timeout=2):
            return
        write_json_atomic(os.path.join(self.out_dir, "summary.json"), summary)

    def finish(self, summary: dict, training: dict | None, plot: bool, memo=None,
               memo_cache: str | None = None) -> None:
        """Write ``summary.json`` first (the main result), then ``collectives.csv`` and
        ``timeline.png`` of a ``training`` report, then the ``memo`` cache; a failed
        output does not stop the others (its error goes to ``errors``)."""
        def attempt(write, *args):
            try:
                write(*args)
            except OutputError as e:
                self.errors.append(str(e))

        out_dir = self.out_dir
        attempt(write_json_atomic, os.path.join(out_dir, "summary.json"), summary)
        if training is not None:
            attempt(write_collectives_csv, os.path.join(out_dir, "collectives.csv"), training["collectives"])
            attempt(write_timeline_csv, os.path.join(out_dir, "timeline.csv"), training)
            if "per_layer" in training:
                attempt(write_per_layer_csv, os.path.join(out_dir, PER_LAYER_NAME), training["per_layer"])
            if plot:
                attempt(plot_timeline, os.path.join(out_dir, "timeline.png"), training, self.scn.name)
        if memo is not None and memo_cache:
            attempt(memo.save, memo_cache)

