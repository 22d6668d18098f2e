#!/usr/bin/env python3
"""Wall time and events of pwormhole's packet mode beside HPCC's ns-3 and htsim on the same inputs (a benchmark).

Scenarios:

* ``s1``, ``s2``, ``s3``: HPCC's reference scenarios (``tests/data/hpcc/reference/``, as
  ``bench/events_per_s.py``): ns-3 runs ``third config.txt`` in a copy of the folder,
  pwormhole ``run --hpcc-config``;
* ``perm16``: htsim's ``perm_16n_16c_2MB.cm`` (16 x 2 MB flows at t = 0) on a k=4 fat tree,
  100 Gbps, 1 us links, 1000-byte packets: ``htsim_roce -nodes 16 -mtu 1000 -strat ecmp_host
  -paths 1 -end 10000``, pwormhole ``run --topology fat-tree:k=4 --flows`` (its default CC, HPCC).

Every run is a whole process; its wall and CPU seconds (user + system) and peak memory are
measured. Runs are interleaved (each round runs every scenario on every simulator) and the
medians of ``--repeat`` rounds reported. Events: pwormhole's ``summary.json``; ns-3's and
htsim's from counting builds (``--ns3-count``, ``--htsim-count``: the same programs printing
``ns3_events N`` / ``htsim_events N`` on stderr at exit; see bench/vs_peers.md), run once per
scenario, untimed; without ``--ns3-count``, the counts of ns-3's reference README (ns-3's
counts do not vary from run to run); without ``--htsim-count``, none.

Each run is appended to ``<out>/runs.csv`` as it ends; the table of medians and ratios is
printed and written to ``<out>/summary.md`` at the end.

    python bench/vs_peers.py [--ns3 third] [--ns3-count third_count] [--htsim htsim_roce]
                             [--htsim-count htsim_roce_count] [--repeat 3] [--pure] [--out DIR]
"""

from __future__ import annotations

import argparse
import csv
import filecmp
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import NamedTuple

from events_per_s import NAMES, REF, ROOT

PERM16_CM = ROOT / "tests" / "data" / "htsim" / "connection_matrices" / "perm_16n_16c_2MB.cm"
HTSIM_ARGS = ["-nodes", "16", "-mtu", "1000", "-strat", "ecmp_host", "-paths", "1", "-end", "10000"]
# ns-3's events on S1-S3 (tests/data/hpcc/reference/README.ns3.md), used without --ns3-count
NS3_REFERENCE_EVENTS = {"s1": 3_651_307, "s2": 3_200_268, "s3": 11_755_376}
GNU_TIME = "/usr/bin/time" if os.path.isfile("/usr/bin/time") else None  # for the children's peak memory
SCENARIOS = ("s1", "s2", "s3", "perm16")
PEER_OF = {"s1": "ns3", "s2": "ns3", "s3": "ns3", "perm16": "htsim"}
PeerEvents = dict[tuple[str, str], tuple[int | None, str]]  # (scenario, peer) -> (events, where from)
CSV_FIELDS = ("round", "scenario", "simulator", "wall_s", "cpu_s", "sim_wall_s", "peak_rss_mib", "events", "check",
              "rc")


class Measured(NamedTuple):
    """One whole-process run: seconds, peak memory, exit status, and what its outputs say."""
    wall_s: float
    cpu_s: float
    peak_rss_mib: int
    rc: int
    events: int | None
    check: str  # a one-word sanity check of the outputs (flows done, fct.txt as reference)
    sim_wall_s: float | None = None  # pwormhole: the simulation's own wall (summary.json), set-up excluded


def timed(cmd: list[str], cwd: Path, stdout_path: Path,
          env: dict[str, str] | None = None) -> tuple[float, float, int, int]:
    """Run ``cmd`` to the end; its wall and CPU seconds, peak RSS (MiB, -1 without GNU time) and exit code.

    A child's own ru_maxrss counts the memory of the Python process it was forked from, so
    the peak comes from GNU time, whose child is forked from a small process."""
    rss_path = stdout_path.with_suffix(".rss")
    wrap = [GNU_TIME, "-f", "%M", "-o", str(rss_path)] if GNU_TIME else []
    with open(stdout_path, "w") as out, open(stdout_path.with_suffix(".err"), "w") as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen(wrap + cmd, cwd=cwd, stdout=out, stderr=err, env=env)
        _, status, ru = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    rss_kib = rss_path.read_text().split()[-1] if GNU_TIME and rss_path.exists() else ""
    return wall, ru.ru_utime + ru.ru_stime, int(rss_kib) // 1024 if rss_kib.isdigit() else -1, proc.returncode


def counted(stderr_text: str, key: str) -> int | None:
    """The ``KEY N`` line a counting build prints at exit."""
    m = re.search(rf"^{key} (\d+)$", stderr_text, re.M)
    return int(m.group(1)) if m else None


def run_pwormhole(scenario: str, work: Path, pure: bool) -> Measured:
    out = work / "out"
    if scenario == "perm16":
        inputs = ["--topology", "fat-tree:k=4", "--flows", str(PERM16_CM)]
    else:
        inputs = ["--hpcc-config", str(REF / NAMES[scenario] / "config.txt")]
    cmd = [sys.executable, "-m", "pwormhole", "run", *inputs, "--mode", "packet", "--no-progress", "--out", str(out)]
    env = dict(os.environ, PWORMHOLE_PURE="1" if pure else "0")
    wall, cpu, rss, rc = timed(cmd, ROOT, work / "stdout.txt", env)
    if rc != 0:
        return Measured(wall, cpu, rss, rc, None, "failed")
    summary = json.loads((out / "summary.json").read_text())
    engine = summary.get("engine", "?")
    if not engine.startswith("pure" if pure else "compiled"):
        print(f"  warning: pwormhole ran the {engine} engine", flush=True)
    check = f"{summary['flows_finished']}/{summary['flows']}flows"
    return Measured(wall, cpu, rss, rc, summary["events"], check, summary["wall_s"])


def run_ns3(binary: str, scenario: str, work: Path) -> tuple[Measured, str]:
    """``third config.txt`` in a copy of the scenario's folder; check: fct.txt as ns-3's stored one."""
    folder = work / NAMES[scenario]
    shutil.copytree(REF / NAMES[scenario], folder)
    wall, cpu, rss, rc = timed([binary, "config.txt"], folder, work / "stdout.txt")
    same = (folder / "fct.txt").exists() and filecmp.cmp(folder / "fct.txt", folder / "fct.ns3.txt", shallow=False)
    err = (work / "stdout.err").read_text()
    return Measured(wall, cpu, rss, rc, None, "fct=ref" if same else "fct!=ref"), err


def run_htsim(binary: str, work: Path) -> tuple[Measured, str]:
    """``htsim_roce -tm perm_16n_16c_2MB.cm ...``; check: the flows its stdout says finished."""
    wall, cpu, rss, rc = timed([binary, "-tm", str(PERM16_CM), *HTSIM_ARGS, "-o", str(work / "logout.dat")],
                               work, work / "stdout.txt")
    done = len(re.findall(r"^Flow \S+ \d+ finished at", (work / "stdout.txt").read_text(), re.M))
    return Measured(wall, cpu, rss, rc, None, f"{done}/16flows"), (work / "stdout.err").read_text()


def peer_events(a: argparse.Namespace, scenarios: list[str], tmp: Path) -> PeerEvents:
    """(scenario, peer) -> (events, source), from the counting builds (one untimed run each) or the reference."""
    found: PeerEvents = {}
    for s in scenarios:
        peer = PEER_OF[s]
        work = Path(tempfile.mkdtemp(dir=tmp))
        if peer == "ns3" and a.ns3:
            if a.ns3_count:
                print(f"counting ns-3's events on {s} ...", flush=True)
                _, err = run_ns3(a.ns3_count, s, work)
                found[(s, peer)] = (counted(err, "ns3_events"), "counted")
            else:
                found[(s, peer)] = (NS3_REFERENCE_EVENTS[s], "reference")
        elif peer == "htsim" and a.htsim:
            if a.htsim_count:
                print(f"counting htsim's events on {s} ...", flush=True)
                _, err = run_htsim(a.htsim_count, work)
                found[(s, peer)] = (counted(err, "htsim_events"), "counted")
            else:
                found[(s, peer)] = (None, "none")
    return found


def fmt_int(n: int | None) -> str:
    return "-" if n is None else f"{n:,}"


class Medians(NamedTuple):
    """One simulator on one scenario over the rounds."""
    wall_s: float
    cpu_s: float
    setup_s: float | None  # pwormhole: whole-process wall less the simulation's own
    peak_rss_mib: int
    events: int | None
    check: str


def medians(rows: list[dict], events: PeerEvents, scenario: str, sim: str) -> Medians | None:
    got = [r for r in rows if r["scenario"] == scenario and r["simulator"] == sim and r["rc"] == 0]
    if not got:
        return None
    ours = sim.startswith("pwormhole")
    return Medians(statistics.median(r["wall_s"] for r in got), statistics.median(r["cpu_s"] for r in got),
                   statistics.median(r["wall_s"] - r["sim_wall_s"] for r in got) if ours else None,
                   max(r["peak_rss_mib"] for r in got),
                   got[0]["events"] if ours else events.get((scenario, sim), (None, ""))[0],
                   "/".join(sorted({r["check"] for r in got})))


def summary_table(rows: list[dict], events: PeerEvents, scenarios: list[str], simulators: list[str]) -> str:
    """Medians per (scenario, simulator), and ours over the peer's wall and CPU seconds."""
    lines = ["| scenario | simulator | wall s | of which set-up s | CPU s | events | events / wall s | "
             "events / CPU s | peak MiB | check | ours / peer wall | ours / peer CPU |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for s in scenarios:
        med = {sim: m for sim in simulators if (m := medians(rows, events, s, sim)) is not None}
        peer = med.get(PEER_OF[s])
        for sim, m in med.items():
            eps = "-" if m.events is None else f"{m.events / m.wall_s:,.0f}"
            epc = "-" if m.events is None else f"{m.events / m.cpu_s:,.0f}"
            ratio_w = ratio_c = ""
            if peer is not None and sim != PEER_OF[s]:
                ratio_w, ratio_c = f"{m.wall_s / peer.wall_s:.2f}x", f"{m.cpu_s / peer.cpu_s:.2f}x"
            src = events.get((s, sim), (None, ""))[1]
            ev_txt = fmt_int(m.events) + (f" ({src})" if src == "reference" else "")
            setup = "" if m.setup_s is None else f"{m.setup_s:.2f}"
            rss = str(m.peak_rss_mib) if m.peak_rss_mib >= 0 else "-"
            lines.append(f"| {s} | {sim} | {m.wall_s:.2f} | {setup} | {m.cpu_s:.2f} | {ev_txt} | {eps} | {epc} | "
                         f"{rss} | {m.check} | {ratio_w} | {ratio_c} |")
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ns3", metavar="BIN", help="HPCC ns-3's third program (optimized build)")
    ap.add_argument("--ns3-count", metavar="BIN", help="the same built with the event counter (untimed, for events)")
    ap.add_argument("--htsim", metavar="BIN", help="htsim's htsim_roce program")
    ap.add_argument("--htsim-count", metavar="BIN", help="the same built with the event counter (untimed, for events)")
    ap.add_argument("--scenarios", default=",".join(SCENARIOS),
                    help=f"comma-separated subset of {','.join(SCENARIOS)} (default: all)")
    ap.add_argument("--repeat", type=int, default=3, help="rounds; medians are reported (default 3)")
    ap.add_argument("--pure", action="store_true", help="also run pwormhole's pure-Python engine (PWORMHOLE_PURE=1)")
    ap.add_argument("--out", default="bench-out/vs_peers", help="folder for runs.csv and summary.md")
    a = ap.parse_args()
    scenarios = [s for s in a.scenarios.split(",") if s]
    bad = [s for s in scenarios if s not in SCENARIOS]
    if bad or a.repeat < 1:
        ap.error(f"unknown scenario {bad[0]!r}" if bad else "--repeat must be >= 1")
    for flag in ("ns3", "ns3_count", "htsim", "htsim_count"):
        path = getattr(a, flag)
        if path and not (os.path.isfile(path) and os.access(path, os.X_OK)):
            ap.error(f"--{flag.replace('_', '-')}: {path} is not an executable file")
    simulators = ["pwormhole"] + (["pwormhole-pure"] if a.pure else [])
    simulators += [p for p in ("ns3", "htsim") if getattr(a, p)]
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    rows: list[dict] = []
    with tempfile.TemporaryDirectory() as tmp_name, open(out / "runs.csv", "w", newline="") as fh:
        tmp = Path(tmp_name)
        writer = csv.DictWriter(fh, fieldnames=CSV_FIELDS)
        writer.writeheader()
        events = peer_events(a, scenarios, tmp)
        for rnd in range(1, a.repeat + 1):
            for s in scenarios:
                for sim in simulators:
                    if sim in ("ns3", "htsim") and PEER_OF[s] != sim:
                        continue
                    work = Path(tempfile.mkdtemp(dir=tmp))
                    if sim.startswith("pwormhole"):
                        m = run_pwormhole(s, work, pure=sim == "pwormhole-pure")
                    elif sim == "ns3":
                        m = run_ns3(a.ns3, s, work)[0]
                    else:
                        m = run_htsim(a.htsim, work)[0]
                    shutil.rmtree(work)
                    ev = m.events if m.events is not None else events.get((s, sim), (None, ""))[0]
                    row = {"round": rnd, "scenario": s, "simulator": sim, "wall_s": round(m.wall_s, 4),
                           "cpu_s": round(m.cpu_s, 4),
                           "sim_wall_s": None if m.sim_wall_s is None else round(m.sim_wall_s, 4),
                           "peak_rss_mib": m.peak_rss_mib, "events": ev,
                           "check": m.check, "rc": m.rc}
                    rows.append(row)
                    writer.writerow(row)
                    fh.flush()
                    print(f"[round {rnd}/{a.repeat}] {s:6} {sim:14} wall {m.wall_s:7.2f} s  cpu {m.cpu_s:7.2f} s  "
                          f"events {fmt_int(ev):>11}  {m.check}" + (f"  EXIT {m.rc}" if m.rc else ""), flush=True)
    table = summary_table(rows, events, scenarios, simulators)
    load = os.getloadavg()
    note = (f"medians of {a.repeat} interleaved rounds; whole processes; load average at the end "
            f"{load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f} on {os.cpu_count()} CPUs")
    print("\n" + table + "\n\n" + note)
    (out / "summary.md").write_text(table + "\n\n" + note + "\n")
    failed = [r for r in rows if r["rc"] != 0]
    if failed:
        print(f"vs_peers: {len(failed)} run(s) failed (rc != 0 in {out / 'runs.csv'})", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
