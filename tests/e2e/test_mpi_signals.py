"""Signals and setup errors under a real mpiexec: every rank ends together, outputs so far are kept.

Each run is the small GPT scenario (gpt-350m-16gpu) in packet mode on 2 ranks (about 40 s of
wall time on 2 cores), signalled once its first flow completions are on disk,
so the signal always lands mid-run.
"""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers import MPIEXEC, ROOT, needs_mpi

from pwormhole.errors import Terminated
from pwormhole.sync import interrupt

MIX = ROOT / "tests" / "data" / "hpcc" / "mix" / "config.txt"  # 66 nodes (a star), flows among 4 of them


def _children(pid: int) -> list[int]:
    kids = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/stat") as fh:
                    ppid = int(fh.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            if ppid == pid:
                kids.append(int(d))
    return kids


def _descendants(pid: int) -> list[int]:
    out = []
    for c in _children(pid):
        out += [c, *_descendants(c)]
    return out


def _rank_pids(pid: int) -> dict[int, int]:
    """``{rank: pid}`` of the processes mpiexec ``pid`` started (PMI_RANK in their environment)."""
    ranks = {}
    for q in _descendants(pid):
        try:
            with open(f"/proc/{q}/environ", "rb") as fh:
                env = fh.read().split(b"\0")
        except OSError:
            continue
        for e in env:
            if e.startswith(b"PMI_RANK="):
                ranks[int(e[9:])] = q
    return ranks


def _start(out: Path, n: int = 2) -> subprocess.Popen:
    # a test runner started in the background hands its children SIGINT ignored: restore the default
    # three iterations of 4 GPT-350M layers (~10 s at 2 ranks here): rank 0 writes its first completions
    # (a batch: every 64 windows or a second) ~1 s in, so a signal then lands well inside the window loop
    return subprocess.Popen([MPIEXEC, "-n", str(n), sys.executable, "-m", "pwormhole", "run", "--model", "gpt-350m",
                             "--gpus", "16", "--tp", "8", "--layers", "4", "--iterations", "3", "--topology",
                             "rail-optimized:gpus=16", "--mode", "packet", "--out", str(out), "--no-progress"],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))


def _wait_mid_run(p: subprocess.Popen, out: Path, n: int = 2) -> dict[int, int]:
    """Wait until rank 0 wrote its first flow completions; the ranks' pids."""
    part = out / "fct.txt.part"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and p.poll() is None:
        if part.exists() and part.stat().st_size > 0:
            break
        time.sleep(0.05)
    ranks = _rank_pids(p.pid)
    assert p.poll() is None and len(ranks) == n, "the run ended before it could be signalled"
    return ranks


def _finish(p: subprocess.Popen, t0: float, limit_s: float = 30) -> tuple[str, str, float]:
    try:
        so, se = p.communicate(timeout=limit_s)
    except subprocess.TimeoutExpired:
        for q in _descendants(p.pid):
            try:
                os.kill(q, signal.SIGKILL)
            except ProcessLookupError:
                pass
        p.kill()
        so, se = p.communicate()
        pytest.fail(f"the job still ran after {limit_s:g} s (hung)\n{se[-3000:]}")
    return so, se, time.monotonic() - t0


def _mpiexec(*args, limit_s: float = 60) -> tuple[int, str, str]:
    """Run ``mpiexec ARGS`` to its end; a hang fails the test (and its processes are killed)."""
    p = subprocess.Popen([MPIEXEC, *map(str, args)], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)
    so, se, _ = _finish(p, time.monotonic(), limit_s)
    return p.returncode, so, se


def _whole_lines(path: Path) -> list[str]:
    text = path.read_text()
    assert text.endswith("\n"), f"{path.name} ends inside a line"
    lines = text.splitlines()
    assert all(len(ln.split()) == 8 for ln in lines), f"{path.name} has a partial line"
    return lines


@needs_mpi
@pytest.mark.parametrize("target,sig,code,name", [
    ("rank0", signal.SIGTERM, 143, "SIGTERM"),
    ("rank1", signal.SIGTERM, 143, "SIGTERM"),
    ("mpiexec", signal.SIGTERM, 143, "SIGTERM"),
    ("mpiexec", signal.SIGINT, 130, "SIGINT"),
])
def test_signal_ends_every_rank_with_outputs_so_far(tmp_path, target, sig, code, name):
    """A signal to one rank, or to mpiexec (which forwards it to every rank), stops both ranks at the same
    window boundary: the end-of-run reductions and rank 0's writing run, and every rank exits 128 + signal."""
    out = tmp_path / "out"
    p = _start(out)
    ranks = _wait_mid_run(p, out)
    t0 = time.monotonic()
    if target == "mpiexec":
        p.send_signal(sig)
    else:
        os.kill(ranks[int(target[-1])], sig)
    so, se, dt = _finish(p, t0)
    assert p.returncode == code, se[-3000:]
    assert dt < 10, f"ended {dt:.1f} s after the signal"
    assert "Traceback" not in se and "MPI_Abort" not in se, se[-3000:]
    assert se.count(f"({name}); outputs so far are written") == 1, se[-3000:]
    s = json.loads((out / "summary.json").read_text())
    assert s["complete"] is False and s["interrupted"] == name and s["ranks"] == 2
    assert 0 < s["sim_time_ps"]
    assert 0 < s["flows_finished"] < s["flows"]
    assert len(_whole_lines(out / "fct.txt")) == s["flows_finished"]
    assert s["events"] == sum(s["events_by_rank"]) and all(e > 0 for e in s["events_by_rank"])
    assert not (out / "fct.txt.part").exists() and not (out / "summary.json.part").exists()


@pytest.mark.slow
@needs_mpi
def test_stuck_rank_does_not_hang_the_job(tmp_path):
    """Rank 1 frozen (SIGSTOP: a rank stuck in a long computation) and SIGTERM to rank 0, which waits for it
    inside the window exchange: the stop watchdog writes what rank 0 has and ends every rank, exit 143."""
    out = tmp_path / "out"
    p = _start(out)
    ranks = _wait_mid_run(p, out)
    os.kill(ranks[1], signal.SIGSTOP)
    t0 = time.monotonic()
    os.kill(ranks[0], signal.SIGTERM)
    so, se, dt = _finish(p, t0)
    assert p.returncode == 143, se[-3000:]
    assert dt < 10, f"ended {dt:.1f} s after the signal"
    assert "did not stop together" in se and "Traceback" not in se, se[-3000:]
    s = json.loads((out / "summary.json").read_text())
    assert s["complete"] is False and s["interrupted"] == "SIGTERM" and "aborted" in s
    assert 0 < s["flows_finished"] == len(_whole_lines(out / "fct.txt.part"))


TINY_TOPOLOGY = "3 1 2\n2\n0 2 100Gbps 1000ns 0\n1 2 100Gbps 1000ns 0\n"  # two hosts on one switch: 3 units


@needs_mpi
def test_more_ranks_than_units_is_one_line(tmp_path):
    (tmp_path / "topo.txt").write_text(TINY_TOPOLOGY)
    (tmp_path / "flows.txt").write_text("1\n0 1 3 100 10000 0\n")
    rc, so, se = _mpiexec("-n", "4", sys.executable, "-m", "pwormhole", "run", "--topology", tmp_path / "topo.txt",
                          "--flows", tmp_path / "flows.txt", "--out", tmp_path / "out", "--no-progress")
    assert rc == 2
    assert se.splitlines() == ["pwormhole: error: 4 ranks for a topology of 3 indivisible units (3 nodes): "
                               "use at most 3 ranks"], se
    assert "outputs in" not in so and so == ""
    assert not (tmp_path / "out").exists()  # nothing written, the folder made for the run removed


@needs_mpi
def test_setup_error_on_one_rank_ends_every_rank(tmp_path):
    """An input error on rank 1 only (mpiexec's MPMD form gives it a flow file that does not exist): every rank
    agrees before the first collective of the run; one line naming the rank, exit 2, no hang."""
    (tmp_path / "topo.txt").write_text(TINY_TOPOLOGY)
    (tmp_path / "flows.txt").write_text("1\n0 1 3 100 10000 0\n")
    cmd = [sys.executable, "-m", "pwormhole", "run", "--topology", tmp_path / "topo.txt", "--out", tmp_path / "out",
           "--no-progress", "--flows"]
    rc, so, se = _mpiexec("-n", "1", *cmd, tmp_path / "flows.txt", ":", "-n", "1", *cmd, tmp_path / "missing.txt")
    assert rc == 2
    assert se.splitlines() == [f"pwormhole: error: rank 1: {tmp_path / 'missing.txt'}: cannot open flow file: "
                               "no such file"], se
    assert so == ""


def test_too_many_lps_warn_once_and_metis_is_silent(tmp_path):
    """64 LPs on a 66-node star whose flows touch 4 nodes: one warning, no METIS text (it prints from C)."""
    r = subprocess.run([sys.executable, "-m", "pwormhole", "run", "--mode", "packet", "--hpcc-config", MIX,
                        "--lps", "64", "--until", "3us", "--out", tmp_path / "o", "--no-progress"],
                       capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "***" not in r.stdout + r.stderr and "METIS" not in r.stdout + r.stderr
    warn = [ln for ln in r.stderr.splitlines() if "warning" in ln and "is not modelled by pwormhole" not in ln
            and "queue monitor took no sample" not in ln]  # (mix's QLEN_MON_START is 2 s, the run stops at 3 us)
    assert warn == ["pwormhole: warning: 64 LPs but the flows cross only 4 of the 66 indivisible units: 60 LPs "
                    "or more will have no events; use at most 4"], r.stderr


def test_plan_balance_warning_and_silent_metis(capfd):
    from pwormhole.partition.plan import make_plan
    from pwormhole.scenario import from_hpcc_config
    scn = from_hpcc_config(str(MIX))
    capfd.readouterr()
    plan = make_plan(scn.topology, 64, scn.flows)
    o, e = capfd.readouterr()
    assert o == "" and e == ""
    assert plan.traffic_units == 4 and plan.warning("ranks").startswith(
        "64 ranks but the flows cross only 4 of the 66 indivisible units: 60 ranks or more")
    fine = make_plan(scn.topology, 4, scn.flows)
    assert fine.warning("ranks") is None and make_plan(scn.topology, 8).warning("ranks") is None  # no flows: no claim
    assert capfd.readouterr() == ("", "")


def test_a_signal_inside_a_deferred_block_raises_at_its_end():
    """One process: the handler raises at once, or, inside deferred_signals(), when the block ends
    (a batch of finished flows is counted and written whole)."""
    with pytest.raises(Terminated):
        interrupt.raise_or_defer(signal.SIGTERM)
    done = []
    with pytest.raises(KeyboardInterrupt):
        with interrupt.deferred_signals():
            interrupt.raise_or_defer(signal.SIGINT)
            with interrupt.deferred_signals():
                interrupt.raise_or_defer(signal.SIGINT)
                done.append(1)  # the inner end does not raise: the outer block is still open
            done.append(2)
    assert done == [1, 2]
    with pytest.raises(Terminated):  # SIGTERM wins over SIGINT
        with interrupt.deferred_signals():
            interrupt.raise_or_defer(signal.SIGINT)
            interrupt.raise_or_defer(signal.SIGTERM)
