"""Shared by the tests in every folder: the repository root and tests/data, small scenario builders,
where mpiexec is, and apt installs."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pwormhole.accel.memo import MemoCache
from pwormhole.accel.wormhole import AccelConfig
from pwormhole.commands.cli import main as cli_main
from pwormhole.config import CC_DCQCN, CC_HPCC, ModelConfig
from pwormhole.run import Run
from pwormhole.scenario import Scenario, from_dag, number_sports
from pwormhole.topology.model import Link, Topology
from pwormhole.workload.dag import Dag
from pwormhole.workload.flows import Flow

ROOT = Path(__file__).resolve().parents[1]  # the repository root
DATA = ROOT / "tests" / "data"
G100 = 100 * 10**9
# mpiexec of this Python's environment (the mpich wheel), else one on PATH
MPIEXEC = shutil.which("mpiexec", path=str(Path(sys.executable).parent)) or shutil.which("mpiexec")


def _mpi_ok() -> bool:
    if not MPIEXEC:
        return False
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        return False
    return True


needs_mpi = pytest.mark.skipif(not _mpi_ok(), reason="mpi4py/mpiexec not installed (pip install -e '.[mpi]')")
US = 1_000_000


def run_on_1_and_2_ranks(tmp_path, specs, topology):
    """``specs`` as a flow list on ``topology`` (a builder spec), DCQCN, run by the CLI in one process
    and under ``mpiexec -n 2`` into ``tmp_path/one`` and ``two``: their two summaries."""
    flows = tmp_path / "flows.txt"
    flows.write_text(f"{len(specs)}\n" + "".join(f"{s} {d} 3 100 {b} {t / 1e12:.12f}\n" for s, d, b, t in specs))
    args = ["--topology", topology, "--flows", str(flows), "--cc", "dcqcn", "--no-progress"]
    for ranks, out in ((1, "one"), (2, "two")):
        cmd = [sys.executable, "-m", "pwormhole", "run", *args, "--out", str(tmp_path / out)]
        r = subprocess.run([MPIEXEC, "-n", "2", *cmd] if ranks == 2 else cmd, capture_output=True, text=True,
                           cwd=ROOT, timeout=180)
        assert r.returncode == 0, r.stderr
    return tuple(json.loads((tmp_path / d / "summary.json").read_text()) for d in ("one", "two"))


def flows_of(specs):
    """specs: (src, dst, size_bytes, start_ps) tuples -> numbered flows."""
    return number_sports([Flow(i, s, d, 3, 100, size, start) for i, (s, d, size, start) in enumerate(specs)])


def config(cc="dcqcn", **kw) -> ModelConfig:
    cfg = ModelConfig(cc_mode=CC_DCQCN if cc == "dcqcn" else CC_HPCC)
    for k, v in kw.items():
        setattr(cfg, k, v)
    return cfg


def run(topo, specs, cfg, until_ps=None, seed=1, n_lps=1, owner=None):
    scn = Scenario("t", topo, flows_of(specs), cfg)
    return Run(scn, seed, n_lps, owner).run(until_ps)


def star_topo(n_hosts, rate=G100, delay=US):
    """Hosts 0..n-1 on switch n."""
    return Topology(n_hosts + 1, frozenset({n_hosts}), [Link(h, n_hosts, rate, delay) for h in range(n_hosts)])


def line_topo():
    """host 0 - switch 2 - switch 3 - host 1: a 3-hop path at 100 Gbps, 1 us per link."""
    return Topology(4, frozenset({2, 3}), [Link(0, 2, G100, US), Link(2, 3, G100, US), Link(3, 1, G100, US)])


# Wormhole against packet mode (tests/e2e/test_wormhole_*.py, tests/accel/test_memo.py)


def both(topo, specs, cc="dcqcn", acc=None, memo=None, n_lps=1, cfg=None):
    """The packet run and the Wormhole run (``acc``, default settings, on ``n_lps`` LPs) of ``specs``."""
    cfg = cfg or config(cc)
    ref = Run(Scenario("t", topo, flows_of(specs), cfg)).run()
    fast = Run(Scenario("t", topo, flows_of(specs), cfg), n_lps=n_lps, accel=acc or AccelConfig(),
                     memo=memo).run()
    return ref, fast


def fct(run, fid):
    """Flow ``fid``'s completion time in ``run``, in ps."""
    return run.finish_ps[fid] - run.start_ps[fid]


def pattern(first_start, second_start):
    """Two 2-to-1 incasts of identical shape: hosts 0,1 -> 2, then hosts 3,4 -> 5 (all on one switch)."""
    return [(0, 2, 6_000_000, first_start), (1, 2, 6_000_000, first_start),
            (3, 5, 6_000_000, second_start), (4, 5, 6_000_000, second_start)]


def joining(size_bytes, cfg=None, memo=None):
    """20 MB from host 0 to host 2; ``size_bytes`` from host 1 joins it at 400.3 us (DAG-triggered:
    the group is frozen when it comes); the same on hosts 3, 4 -> 5 at 3000 and 3400.3 us.
    Returns the packet run and the Wormhole run."""
    dag = Dag()
    for a, b, c, t0 in ((0, 1, 2, 0), (3, 4, 5, 3000 * US)):
        dag.flow(a, c, 20_000_000, deps=[dag.compute(a, t0)])
        dag.flow(b, c, size_bytes, deps=[dag.compute(b, t0 + 400 * US + 3 * US // 10)])
    memo = memo if memo is not None else MemoCache("t")
    return [Run(from_dag("t", star_topo(6), dag, cfg or config()), accel=acc, memo=memo).run()
            for acc in (None, AccelConfig())]


__all__ = ["ROOT", "DATA", "G100", "MPIEXEC", "US", "needs_mpi", "flows_of", "config", "run", "star_topo",
           "line_topo", "both", "fct", "pattern", "joining"]


def apt_install(packages: list[str], path: str) -> str | None:
    """Install Debian ``packages`` with apt-get (``path``: the PATH to run it with); None when
    done, else why not (no apt-get, a timeout, a failure)."""
    if not shutil.which("apt-get", path=path):
        return "there is no apt-get"
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive", PATH=path)
    for cmd in (["apt-get", "update", "-q"], ["apt-get", "install", "-y", "-q", "--no-install-recommends", *packages]):
        try:
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=900, env=env, stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            return f"'{' '.join(cmd)}' timed out"
        if p.returncode != 0:
            return f"'{' '.join(cmd)}' failed: {(p.stderr or p.stdout).strip()[-500:]}"
    return None


def run_cli(capsys, *args) -> tuple[int, str, str]:
    """``pwormhole ARGS`` in this process: (exit code, stdout, stderr)."""
    rc = cli_main([str(a) for a in args])
    out, err = capsys.readouterr()
    return rc, out, err


def one_line_error(capsys, args, *needles) -> str:
    """``pwormhole ARGS`` exits 2 with one line ``pwormhole: error: ...`` holding every needle, no
    traceback; the line."""
    rc, _, err = run_cli(capsys, *args)
    lines = err.strip().splitlines()
    assert rc == 2 and len(lines) == 1 and lines[0].startswith("pwormhole: error: "), err
    assert "Traceback" not in err
    for n in needles:
        assert n in lines[0], (n, lines[0])
    return lines[0]
