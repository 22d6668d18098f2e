"""The Slurm launchers against a real single-node Slurm started by this test.

Needs root and Debian's packages: installs ``slurmctld slurmd slurm-client
munge`` with apt-get when they are missing, writes a private ``slurm.conf``
(own ports, state and logs in a temporary folder), starts munged, slurmctld
and slurmd in the foreground as child processes, and stops them by process id
at the end. Skipped when not root or when apt-get cannot install Slurm, or
with ``PWORMHOLE_SKIP_SLURM=1``; ``PWORMHOLE_REQUIRE_SLURM=1`` (set by
``.ci/run``) turns the skips for a failed setup into failures.
"""

from __future__ import annotations

import csv
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from helpers import ROOT, apt_install

SBIN_PATH = os.pathsep.join([os.environ.get("PATH", ""), "/usr/sbin", "/usr/bin", "/sbin"])
TOOLS = ("slurmctld", "slurmd", "sbatch", "squeue", "sinfo", "srun", "scancel", "munged", "munge")
PACKAGES = ("slurmctld", "slurmd", "slurm-client", "munge")
SCENARIO = ("--scenario", "fat-tree-mix")

pytestmark = [pytest.mark.slurm]


def _require() -> bool:
    return os.environ.get("PWORMHOLE_REQUIRE_SLURM") == "1"


def _unavailable(reason: str):
    """Skip, or fail when PWORMHOLE_REQUIRE_SLURM=1 (CI must not skip this silently)."""
    if _require():
        pytest.fail(f"Slurm required (PWORMHOLE_REQUIRE_SLURM=1) but: {reason}")
    pytest.skip(reason)


def _missing_tools() -> list[str]:
    return [t for t in TOOLS if not shutil.which(t, path=SBIN_PATH)]


def _install_slurm() -> None:
    if not _missing_tools():
        return
    if not shutil.which("apt-get", path=SBIN_PATH):
        _unavailable(f"Slurm is not installed ({', '.join(_missing_tools())} missing) and there is no apt-get")
    why = apt_install(list(PACKAGES), SBIN_PATH)
    if why:
        _unavailable(why)
    if _missing_tools():
        _unavailable(f"installed {' '.join(PACKAGES)} but {', '.join(_missing_tools())} still missing")


def _free_ports(n: int) -> list[int]:
    socks = []
    try:
        for _ in range(n):
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


SLURM_CONF = """\
ClusterName=pwtest
FirstJobId={first_job}
SlurmctldHost={host}(127.0.0.1)
SlurmctldPort={ctld_port}
SlurmdPort={slurmd_port}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={d}/munge/munge.socket
MpiDefault=pmi2
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SlurmdParameters=config_overrides
ReturnToService=2
StateSaveLocation={d}/state
SlurmdSpoolDir={d}/spool
SlurmctldPidFile={d}/slurmctld.pid
SlurmdPidFile={d}/slurmd.pid
SlurmctldLogFile={d}/log/slurmctld.log
SlurmdLogFile={d}/log/slurmd.log
NodeName={host} NodeAddr=127.0.0.1 CPUs=4 State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
"""


class Cluster:
    """A single-node Slurm in folder ``d`` (munged, slurmctld, slurmd as child processes)."""

    def __init__(self):
        self.d = Path(tempfile.mkdtemp(prefix="pwormhole-slurm-", dir="/tmp"))
        self.procs: list[subprocess.Popen] = []
        self.host = socket.gethostname().split(".")[0]
        self.env = dict(os.environ, SLURM_CONF=str(self.d / "slurm.conf"), PATH=SBIN_PATH,
                        PWORMHOLE_PYTHON=sys.executable)
        for k in [k for k in self.env if k.startswith("SLURM_") and k != "SLURM_CONF"]:
            del self.env[k]  # a test run inside some other Slurm job must not leak into this cluster

    def start(self) -> None:
        d = self.d
        os.chmod(d, 0o755)  # munged wants its socket folder reachable by all
        for sub, mode in (("key", 0o700), ("munge", 0o755), ("state", 0o700), ("spool", 0o755), ("log", 0o755)):
            (d / sub).mkdir()
            os.chmod(d / sub, mode)
        key = d / "key" / "munge.key"
        key.write_bytes(os.urandom(1024))
        os.chmod(key, 0o600)
        ctld_port, slurmd_port = _free_ports(2)
        # job ids unlike another test cluster's on this machine: MPICH names its shared memory after the
        # PMI job id ("<job>.<step>"), so two clusters' job 1 on one host would talk to each other
        first_job = random.SystemRandom().randrange(1000, 60_000_000)
        (d / "slurm.conf").write_text(SLURM_CONF.format(host=self.host, d=d, ctld_port=ctld_port,
                                                        slurmd_port=slurmd_port, first_job=first_job))
        self._spawn("munged", ["munged", "-F", f"--key-file={key}", f"--socket={d}/munge/munge.socket",
                               f"--pid-file={d}/munge/munged.pid", f"--log-file={d}/log/munged.log",
                               f"--seed-file={d}/munge/seed"])
        self._wait(lambda: (d / "munge" / "munge.socket").exists(), 20, "munged did not create its socket")
        conf = str(d / "slurm.conf")
        self._spawn("slurmctld", ["slurmctld", "-D", "-f", conf])
        self._spawn("slurmd", ["slurmd", "-D", "-f", conf, "-N", self.host])
        self._wait(self._node_idle, 90, "the node did not become idle")

    def _spawn(self, name: str, cmd: list[str]) -> None:
        exe = shutil.which(cmd[0], path=SBIN_PATH)
        with open(self.d / "log" / f"{name}.stdout", "w") as out:
            self.procs.append(subprocess.Popen([exe, *cmd[1:]], stdout=out, stderr=subprocess.STDOUT,
                                               stdin=subprocess.DEVNULL, env=self.env))

    def _node_idle(self) -> bool:
        p = self.run(["sinfo", "-h", "-N", "-o", "%N %T"], check=False, timeout=30)
        return p.returncode == 0 and "idle" in p.stdout

    def _wait(self, ok, seconds: float, what: str) -> None:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            dead = [p for p in self.procs if p.poll() is not None]
            if dead:
                raise RuntimeError(f"{what}: {dead[0].args[0]} exited with {dead[0].returncode}\n{self.logs()}")
            if ok():
                return
            time.sleep(0.5)
        raise RuntimeError(f"{what} within {seconds:g} s\n{self.logs()}")

    def logs(self) -> str:
        parts = []
        for f in sorted((self.d / "log").glob("*")):
            parts.append(f"--- {f.name}\n" + "\n".join(f.read_text(errors="replace").splitlines()[-15:]))
        return "\n".join(parts)

    def run(self, cmd, check=True, timeout=120, **kw) -> subprocess.CompletedProcess:
        p = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=timeout, env=self.env,
                           cwd=ROOT, stdin=subprocess.DEVNULL, **kw)
        if check and p.returncode != 0:
            raise AssertionError(f"{cmd[0]} failed ({p.returncode}): {p.stderr}{p.stdout}")
        return p

    def wait_job(self, job: str, seconds: float = 180) -> None:
        """Poll squeue until ``job`` left the queue."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            p = self.run(["squeue", "-h", "-o", "%i %T", "-j", job], check=False)
            if p.returncode != 0 and "invalid job id" in p.stderr.lower():
                return
            if p.returncode == 0 and not p.stdout.strip():
                return
            time.sleep(0.5)
        self.run(["scancel", job], check=False)
        raise AssertionError(f"job {job} still in the queue after {seconds:g} s\n{self.logs()}")

    def stop(self) -> None:
        if any(p.poll() is None for p in self.procs[1:]):
            self.run(["scancel", "--user", "root"], check=False, timeout=30)
        for p in reversed(self.procs):  # slurmd, slurmctld, munged: each by its own process id
            if p.poll() is None:
                os.kill(p.pid, signal.SIGTERM)
                try:
                    p.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    os.kill(p.pid, signal.SIGKILL)
                    p.wait(timeout=10)
        shutil.rmtree(self.d, ignore_errors=True)


@pytest.fixture(scope="module")
def cluster():
    if os.environ.get("PWORMHOLE_SKIP_SLURM") == "1":
        pytest.skip("PWORMHOLE_SKIP_SLURM=1")
    if not sys.platform.startswith("linux"):
        _unavailable("a Slurm test cluster needs Linux")
    if os.geteuid() != 0:
        _unavailable("starting a Slurm test cluster needs root (slurmd, apt-get)")
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        _unavailable("mpi4py not installed (pip install -e '.[mpi]')")
    _install_slurm()
    c = Cluster()
    try:
        c.start()
    except RuntimeError as e:
        c.stop()
        _unavailable(f"the Slurm test cluster did not start: {e}")
    try:
        yield c
    finally:
        c.stop()


def _local_one_rank(tmp_path: Path) -> bytes:
    r = subprocess.run([sys.executable, "-m", "pwormhole", "run", *SCENARIO, "--out", tmp_path / "local",
                        "--no-progress"], capture_output=True, text=True, cwd=ROOT, timeout=180)
    assert r.returncode == 0, r.stderr
    return (tmp_path / "local" / "fct.txt").read_bytes()


@pytest.mark.slow
def test_run_sbatch_two_tasks_matches_one_rank(cluster, tmp_path):
    out, log = tmp_path / "slurm-out", tmp_path / "job.log"
    p = cluster.run(["sbatch", "--parsable", "-n", "2", "-o", log, "--chdir", ROOT,
                     "--export", f"ALL,PWORMHOLE_OUT={out}", ROOT / "jobs" / "slurm" / "run.sbatch", *SCENARIO])
    job = p.stdout.strip().split(";")[0]
    cluster.wait_job(job)
    text = log.read_text() if log.exists() else "(no job log)"
    assert (out / "fct.txt").exists(), f"job {job} wrote no fct.txt:\n{text}\n{cluster.logs()}"
    assert "(2 ranks)" in text, text
    assert (out / "fct.txt").read_bytes() == _local_one_rank(tmp_path)


def test_plain_srun_is_refused(cluster, tmp_path):
    p = cluster.run(["srun", "--mpi=none", "-n", "2", sys.executable, "-m", "pwormhole", "run", *SCENARIO,
                     "--out", tmp_path / "x", "--no-progress"], check=False, timeout=120)
    assert p.returncode != 0
    assert "srun --mpi=pmi2" in p.stderr and "MPI sees 1 rank" in p.stderr, p.stderr
    assert not (tmp_path / "x" / "fct.txt").exists()


@pytest.mark.slow
def test_scale_slurm_submits_and_collects(cluster, tmp_path):
    out = tmp_path / "study"
    p = cluster.run([sys.executable, "-m", "pwormhole.commands.scale", "--slurm", "--poll", "0.5", "--timeout", "300",
                     "--ranks", "1,2", "--modes", "packet", "--out", out, "--", *SCENARIO], check=False, timeout=400)
    assert p.returncode == 0, p.stdout + p.stderr + cluster.logs()
    rows = list(csv.DictReader((out / "scaling.csv").open()))
    assert [(r["mode"], r["ranks"], r["status"], r["identical"]) for r in rows] == [
        ("packet", "1", "ok", "True"), ("packet", "2", "ok", "True")]
    assert "#SBATCH --ntasks=2" in (out / "slurm" / "packet-ranks2.sbatch").read_text()
