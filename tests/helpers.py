"""Shared by the tests in every folder: the repository root and tests/data, small scenario builders,
where mpiexec is, and apt installs."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pwormhole.config import CC_DCQCN, CC_HPCC, ModelConfig
from pwormhole.run import Run
from pwormhole.scenario import Scenario, number_sports
from pwormhole.topology.model import Link, Topology
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


__all__ = ["ROOT", "DATA", "G100", "MPIEXEC", "US", "needs_mpi", "flows_of", "config", "run", "star_topo", "line_topo"]


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
