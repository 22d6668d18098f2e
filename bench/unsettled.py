#!/usr/bin/env python3
"""Wormhole where little or nothing settles, against packet mode (a benchmark, not a test).

Rows (``--rows``; all but ``perm1024-hpcc`` by default):

* ``fbhdp50-dcqcn``: ``pwormhole gen-flows`` with HPCC's FbHdp size distribution, 50% load, 200 us
  of arrivals, seed 1, on the 320-host fat tree of ``tests/data/hpcc/mix/fat.txt``, DCQCN: thousands
  of short flows, so the conflict groups change at almost every boundary and few are ever steady;
* ``fbhdp30-dcqcn``: the same at 30% load;
* ``websearch30-dcqcn``, ``websearch70-dcqcn``: the same with the WebSearch distribution at 30% and
  70% load (fewer, longer flows);
* ``s3-dcqcn``, ``s3-hpcc``: HPCC's S3 (100-flow incast, ``tests/data/hpcc/reference/s3_dcqcn``),
  under its own DCQCN config and under that config with ``CC_MODE 3``;
* ``perm16-hpcc``: htsim's ``perm_16n_16c_2MB.cm`` on a k=4 fat tree, HPCC;
* ``incast64-hpcc``, ``incast64-dcqcn``: 64 flows of 1 GB from hosts 0-63 into host 64 of
  ``leaf-spine:hosts=72,leaves=4,spines=2`` at t = 0, first 2 ms: long flows that never finish there,
  one port's group whose flows' rates keep cycling (only the aggregate is steady);
* ``perm1024-hpcc`` (slow): a permutation of 1024 x 2 MB flows at t = 0 (htsim's connection-matrix
  format, drawn as htsim's ``gen_permutation.py`` draws one, seed 1) on htsim's
  ``fat_tree_1024.topo``, HPCC, first 200 us.

Each round runs every row in packet mode, then in Wormhole mode, each a child ``pwormhole run``;
per row it prints the events and the median simulation CPU seconds (``cpu_s``) of each mode over
the rounds, their ratios and the per-flow FCT error (mean / p99 / max) of Wormhole against packet
mode. Seconds drift on a shared machine; ``--instructions`` also counts each mode's instructions
inside the window loop under callgrind (as ``bench/loop_instructions.py`` does; minutes a row), which
do not. ``--parts`` counts, in one more callgrind run of Wormhole mode per row, the instructions
inside each part of Wormhole's boundary hook (:data:`PARTS`; each part is called through a C
function of its own, whose inclusive count is the part's).
Rows are appended to ``<out>/results.md`` and ``results.jsonl``.

    python3 bench/unsettled.py [--rows NAME,...] [--rounds 3] [--instructions] [--parts] [--out bench-out/unsettled]
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import sysconfig
import tempfile
from collections.abc import Callable
from pathlib import Path

from loop_instructions import HELPER, loop_counts
from loop_instructions import child as loop_child
from results_log import ResultsLog

from pwormhole.report.compare import compare_dirs

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data"
FAT = DATA / "hpcc" / "mix" / "fat.txt"
TRAFFIC = DATA / "traffic_gen"
S3 = DATA / "hpcc" / "reference" / "s3_dcqcn"
HTSIM = DATA / "htsim"
CLI = [sys.executable, "-m", "pwormhole"]
SEED = "1"
PERM1024_HOSTS, PERM1024_FLOW_BYTES = 1024, 2_000_000
INCAST64_FLOW_BYTES = 10**9


def gen_flows(out: Path, cdf: str, load: str) -> list[str]:
    """``gen-flows`` on fat.txt, 200 us of arrivals, seed 1; the run arguments (DCQCN)."""
    flows = out / f"{Path(cdf).stem}-{load}.txt"
    if not flows.exists():
        subprocess.run([*CLI, "gen-flows", "--cdf", str(TRAFFIC / cdf), "--load", load, "--duration", "200us",
                        "--topology", str(FAT), "--seed", SEED, "--out", str(flows)], cwd=ROOT, check=True,
                       stdout=subprocess.DEVNULL)
    return ["--topology", str(FAT), "--flows", str(flows), "--cc", "dcqcn"]


def s3_hpcc(out: Path) -> list[str]:
    """S3's topology and flows under its config with ``CC_MODE 3`` (HPCC)."""
    cfg = out / "s3-hpcc-config.txt"
    cfg.write_text(re.sub(r"^CC_MODE \d+", "CC_MODE 3", (S3 / "config.txt").read_text(), flags=re.M))
    return ["--topology", str(S3 / "topology.txt"), "--flows", str(S3 / "flow.txt"), "--config", str(cfg)]


def incast64(cc: str) -> Callable[[Path], list[str]]:
    """The 64-to-1 incast of 1 GB flows (HPCC's flow-file format), first 2 ms, under ``cc``."""
    def args(out: Path) -> list[str]:
        flows = out / "incast64.txt"
        flows.write_text("64\n" + "".join(f"{h} 64 3 100 {INCAST64_FLOW_BYTES} 0\n" for h in range(64)))
        return ["--topology", "leaf-spine:hosts=72,leaves=4,spines=2", "--flows", str(flows), "--cc", cc,
                "--until", "2ms"]
    return args


def perm1024(out: Path) -> list[str]:
    """A random permutation in htsim's connection-matrix format: sources and destinations shuffled
    (seed 1), a host paired with itself swapping destinations with the next pair."""
    cm = out / f"perm_{PERM1024_HOSTS}n_{PERM1024_HOSTS}c_0u_{PERM1024_FLOW_BYTES}b.cm"
    rng = random.Random(int(SEED))
    src, dst = list(range(PERM1024_HOSTS)), list(range(PERM1024_HOSTS))
    rng.shuffle(src)
    rng.shuffle(dst)
    for i in range(PERM1024_HOSTS):
        if src[i] == dst[i]:
            j = (i + 1) % PERM1024_HOSTS
            dst[i], dst[j] = dst[j], dst[i]
    cm.write_text(f"Nodes {PERM1024_HOSTS}\nConnections {PERM1024_HOSTS}\n" + "".join(
        f"{s}->{d} id {i + 1} start 0 size {PERM1024_FLOW_BYTES}\n" for i, (s, d) in enumerate(zip(src, dst))))
    return ["--topology", str(HTSIM / "topologies" / "fat_tree_1024.topo"), "--flows", str(cm), "--cc", "hpcc",
            "--until", "200us"]


# name -> the run arguments (bar --mode and --out), given the bench's output folder
ROWS: dict[str, Callable[[Path], list[str]]] = {
    "fbhdp50-dcqcn": lambda out: gen_flows(out, "FbHdp_distribution.txt", "0.5"),
    "fbhdp30-dcqcn": lambda out: gen_flows(out, "FbHdp_distribution.txt", "0.3"),
    "websearch30-dcqcn": lambda out: gen_flows(out, "WebSearch_distribution.txt", "0.3"),
    "websearch70-dcqcn": lambda out: gen_flows(out, "WebSearch_distribution.txt", "0.7"),
    "s3-dcqcn": lambda out: ["--hpcc-config", str(S3 / "config.txt")],
    "s3-hpcc": s3_hpcc,
    "perm16-hpcc": lambda out: ["--topology", "fat-tree:k=4", "--flows",
                                str(HTSIM / "connection_matrices" / "perm_16n_16c_2MB.cm"), "--cc", "hpcc"],
    "incast64-hpcc": incast64("hpcc"),
    "incast64-dcqcn": incast64("dcqcn"),
    "perm1024-hpcc": perm1024,
}
SLOW = {"perm1024-hpcc"}

# the parts of Wormhole's hook counted by --parts: (label, module, owner, attribute)
PARTS = [
    ("hook: local_report", "pwormhole.accel.wormhole", "Wormhole", "local_report"),
    ("hook: on_boundary", "pwormhole.accel.wormhole", "Wormhole", "on_boundary"),
    ("departures (FlowTable.remove)", "pwormhole.accel.groups", "FlowTable", "remove"),
    ("starts (_flow_started)", "pwormhole.accel.wormhole", "Wormhole", "_flow_started"),
    ("take_samples", "pwormhole.accel.wormhole", None, "take_samples"),
    ("store_samples", "pwormhole.accel.wormhole", None, "store_samples"),
    ("memo: replay.due", "pwormhole.accel.replay", None, "due"),
    ("memo: _memo_lookup", "pwormhole.accel.wormhole", "Wormhole", "_memo_lookup"),
    ("_decide", "pwormhole.accel.wormhole", "Wormhole", "_decide"),
    ("_decide: _early_goodputs (HPCC)", "pwormhole.accel.wormhole", "Wormhole", "_early_goodputs"),
    ("_decide: hpcc_model", "pwormhole.accel.steady", None, "hpcc_model"),
    ("freezes (_freeze)", "pwormhole.accel.wormhole", "Wormhole", "_freeze"),
    ("wakes (_wake)", "pwormhole.accel.wormhole", "Wormhole", "_wake"),
    ("_checks_due", "pwormhole.accel.wormhole", "Wormhole", "_checks_due"),
    ("parts: find", "pwormhole.accel.parts", "Parts", "find"),
    ("parts: check_loads", "pwormhole.accel.parts", "Parts", "check_loads"),
    ("parts: changed", "pwormhole.accel.parts", "Parts", "changed"),
    ("parts: wake", "pwormhole.accel.parts", "Parts", "wake"),
    ("memo: group_parts", "pwormhole.accel.wormhole", None, "group_parts"),
    ("memo: wl_hash", "pwormhole.accel.memo", None, "wl_hash"),
]
PARTS_C = """#define PY_SSIZE_T_CLEAN
#include <Python.h>
static PyObject *call_rest(PyObject *args, PyObject *kw) {
    PyObject *rest = PyTuple_GetSlice(args, 1, PyTuple_GET_SIZE(args));
    if (rest == NULL) return NULL;
    PyObject *r = PyObject_Call(PyTuple_GET_ITEM(args, 0), rest, kw);
    Py_DECREF(rest);
    return r;
}
""" + "".join(f"static PyObject *part{i}(PyObject *s, PyObject *a, PyObject *k) {{ return call_rest(a, k); }}\n"
              for i in range(len(PARTS))) + "static PyMethodDef methods[] = {" + "".join(
    f'{{"part{i}", (PyCFunction)(void (*)(void))part{i}, METH_VARARGS | METH_KEYWORDS, NULL}}, '
    for i in range(len(PARTS))) + """{NULL, NULL, 0, NULL}};
static struct PyModuleDef mod = {PyModuleDef_HEAD_INIT, "cgparts", NULL, -1, methods};
PyMODINIT_FUNC PyInit_cgparts(void) { return PyModule_Create(&mod); }
"""
"""An extension module whose ``partN(f, *args)`` calls ``f(*args)``: C functions that callgrind sees
called from the interpreter (a ctypes call hides its callee behind libffi's frame)."""

HEADER = ("| row | flows | packet: events, CPU | Wormhole: events, CPU | CPU ratio | events ratio (packet / "
          "Wormhole) | FCT err mean / p99 / max | skips, memo hits / misses |\n|---|---|---|---|---|---|---|---|")


def run_mode(args: list[str], mode: str, out: Path, launcher: list[str] = CLI) -> dict:
    """One ``pwormhole run`` in ``mode`` (``launcher``: the command before ``run``); its summary."""
    cmd = [*launcher, "run", *args, "--mode", mode, "--out", str(out), "--no-progress"]
    got = subprocess.run(cmd, cwd=ROOT, env=dict(os.environ, PYTHONHASHSEED="0"), stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, text=True)
    if got.returncode != 0:
        raise SystemExit(f"unsettled: {mode} run failed (exit {got.returncode}):\n{got.stderr[-2000:]}")
    return json.loads((out / "summary.json").read_text())


def helper_lib(tmp: Path) -> Path:
    """The callgrind client-request helper, and beside it the ``cgparts`` module of :data:`PARTS_C`."""
    lib = tmp / "libloop.so"
    if not lib.exists():
        (tmp / "loop.c").write_text(HELPER)
        subprocess.run(["gcc", "-O2", "-shared", "-fPIC", "-o", str(lib), str(tmp / "loop.c")], check=True)
        (tmp / "cgparts.c").write_text(PARTS_C)
        # -O0: each part is a real call (no tail jump), so callgrind counts it inclusively
        subprocess.run(["gcc", "-O0", "-shared", "-fPIC", f"-I{sysconfig.get_paths()['include']}", "-o",
                        str(tmp / f"cgparts{sysconfig.get_config_var('EXT_SUFFIX')}"), str(tmp / "cgparts.c")],
                       check=True)
    return lib


def callgrind(args: list[str], mode: str, out: Path, tmp: Path, parts: bool) -> Path:
    """One run under callgrind collecting inside the window loop only; its dump."""
    dump = tmp / f"{mode}{'-parts' if parts else ''}.cg"
    run_mode(args, mode, out, ["valgrind", "--tool=callgrind", "--collect-atstart=no", "--instr-atstart=no",
                               f"--callgrind-out-file={dump}", sys.executable, __file__,
                               "--child-parts" if parts else "--child", str(helper_lib(tmp))])
    return Path(f"{dump}.1")  # the part dumped as the loop ends


def part_counts(dump: Path) -> dict[str, int]:
    """Inclusive instructions of each part's C function in a callgrind dump."""
    listing = subprocess.run(["callgrind_annotate", "--inclusive=yes", "--threshold=100", str(dump)],
                             capture_output=True, text=True, check=True).stdout
    got = {}
    for line in listing.splitlines():
        m = re.match(r"\s*([\d,]+) \(.*\)\s+\S+:part(\d+) ", line)
        if m:
            got[PARTS[int(m.group(2))][0]] = int(m.group(1).replace(",", ""))
    return got


def child_parts(lib: str, argv: list[str]) -> int:
    """The CLI under callgrind, collecting inside ``run_windows``, each part of :data:`PARTS` called
    through its C function."""
    sys.path.insert(0, str(Path(lib).parent))
    cgparts = importlib.import_module("cgparts")
    for i, (_label, module, owner, attr) in enumerate(PARTS):
        mod = importlib.import_module(module)
        where = getattr(mod, owner) if owner else mod
        setattr(where, attr, through(getattr(cgparts, f"part{i}"), getattr(where, attr)))
    return loop_child(lib, argv)


def through(part, fn):
    """``fn`` called through the C function ``part``."""
    def wrapped(*args, **kwargs):
        return part(fn, *args, **kwargs)
    return wrapped


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", default=",".join(n for n in ROWS if n not in SLOW),
                    help="comma-separated rows: " + ", ".join(ROWS))
    ap.add_argument("--rounds", type=int, default=3, help="rounds of CPU seconds (0: instructions alone)")
    ap.add_argument("--instructions", action="store_true", help="also count the loops' instructions (callgrind)")
    ap.add_argument("--parts", action="store_true", help="also count the parts of Wormhole's hook (callgrind)")
    ap.add_argument("--out", default=str(ROOT / "bench-out" / "unsettled"))
    a = ap.parse_args()
    names = a.rows.split(",")
    for n in names:
        if n not in ROWS:
            ap.error(f"unknown row {n!r}")
    if (a.instructions or a.parts) and not all(shutil.which(t) for t in ("valgrind", "callgrind_annotate", "gcc")):
        print("unsettled: --instructions and --parts need valgrind and gcc", file=sys.stderr)
        return 2
    log = ResultsLog(a.out, HEADER)
    args = {n: ROWS[n](log.out) for n in names}
    runs: dict = {n: [] for n in names}
    for _ in range(a.rounds):  # interleaved: each round runs every row in both modes
        for n in names:
            pdir, wdir = log.out / n / "packet", log.out / n / "wormhole"
            ps = run_mode(args[n], "packet", pdir)
            ws = run_mode(args[n], "wormhole", wdir)
            cmp, _ = compare_dirs(str(pdir), str(wdir), ps, ws)
            runs[n].append((ps, ws, cmp))
    for n in names if a.rounds else ():
        ps, ws, cmp = runs[n][-1]
        row = {"row": n, "args": args[n], "flows": ps["flows"], "engine": ws["engine"],
               "packet_events": ps["events"], "wormhole_events": ws["events"],
               "packet_cpu_s": [r[0]["cpu_s"] for r in runs[n]], "wormhole_cpu_s": [r[1]["cpu_s"] for r in runs[n]],
               **{k: cmp[k] for k in ("mean_fct_error", "p99_fct_error", "max_fct_error")},
               **{k: ws[k] for k in ("skips", "memo_hits", "memo_misses")}}
        log.add(line(row), row)
    if a.instructions or a.parts:
        ilog = ResultsLog(a.out, "| row | window-loop instructions: packet | Wormhole | ratio |\n|---|---|---|---|")
        with tempfile.TemporaryDirectory() as tmpd:
            tmp = Path(tmpd)
            for n in names:
                cg = log.out / n / "callgrind"
                if a.instructions:
                    counts = {m: loop_counts(str(callgrind(args[n], m, cg / m, tmp, False)))[0]
                              for m in ("packet", "wormhole")}
                    pk, wh = counts["packet"], counts["wormhole"]
                    ilog.add(f"| {n} | {pk / 1e9:.3f} G | {wh / 1e9:.3f} G | {wh / pk:.3f}x |",
                             {"row": n, "instructions": counts})
                if a.parts:
                    dump = callgrind(args[n], "wormhole", cg / "parts", tmp, True)
                    total = loop_counts(str(dump))[0]
                    got = part_counts(dump)
                    print(f"{n}: parts of Wormhole's hook (instructions inside each, loop {total / 1e9:.3f} G "
                          "with the parts' calls)")
                    for label, _m, _o, _a in PARTS:
                        print(f"  {label:<32} {got.get(label, 0) / 1e6:9.2f} M")
                    with open(log.out / "results.jsonl", "a") as fh:
                        fh.write(json.dumps({"row": n, "parts": got, "loop_with_part_calls": total}) + "\n")
    return 0


def line(r: dict) -> str:
    def pct(v):
        return "-" if v is None else f"{v * 100:.3f}%"
    pc, wc = statistics.median(r["packet_cpu_s"]), statistics.median(r["wormhole_cpu_s"])
    return (f"| {r['row']} | {r['flows']} | {r['packet_events'] / 1e6:.2f} M, {pc:.2f} s | "
            f"{r['wormhole_events'] / 1e6:.2f} M, {wc:.2f} s | {wc / pc:.2f}x | "
            f"{r['packet_events'] / r['wormhole_events']:.3f}x | "
            f"{pct(r['mean_fct_error'])} / {pct(r['p99_fct_error'])} / {pct(r['max_fct_error'])} | "
            f"{r['skips']}, {r['memo_hits']} / {r['memo_misses']} |")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        sys.exit(loop_child(sys.argv[2], sys.argv[3:]))
    if sys.argv[1:2] == ["--child-parts"]:
        sys.exit(child_parts(sys.argv[2], sys.argv[3:]))
    sys.exit(main())
