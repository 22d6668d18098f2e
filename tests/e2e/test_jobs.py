"""jobs/ launchers, ``pwormhole scale`` and the plain-srun (singleton) detection."""

from __future__ import annotations

import csv
import os
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import ROOT

from pwormhole.commands import scale
from pwormhole.errors import InputError
from pwormhole.sync import mpi as sync_mpi
from pwormhole.sync.launcher import LAUNCHER_ENV

JOBS = ROOT / "jobs"
MPIEXEC = Path(sys.executable).parent / "mpiexec"
SCENARIO = ("--scenario", "fat-tree-mix")


def _mpi_ok() -> bool:
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        return False
    return MPIEXEC.exists()


needs_mpi = pytest.mark.skipif(not _mpi_ok(), reason="mpi4py/mpiexec not installed next to this Python "
                                                     "(pip install -e '.[mpi]')")


def _clean_env(**extra) -> dict:
    """This environment without Slurm or MPI launcher variables, plus ``extra``."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("SLURM_", "PMI_", "PMIX_", "OMPI_", "HYDRA_", "MPI_LOCAL"))}
    env.update(PWORMHOLE_PYTHON=sys.executable, **extra)
    return env


def _sh(*cmd, env=None, timeout=180):
    return subprocess.run([str(c) for c in cmd], capture_output=True, text=True, cwd=ROOT, timeout=timeout,
                          env=env or _clean_env(), stdin=subprocess.DEVNULL)


# ---------------------------------------------------------------- jobs/ scripts

@pytest.mark.parametrize("script", ["mpirun.sh", "slurm/run.sbatch", "slurm/scaling.sbatch"])
def test_scripts_are_valid_bash(script):
    r = _sh("bash", "-n", JOBS / script)
    assert r.returncode == 0, r.stderr
    assert os.access(JOBS / "mpirun.sh", os.X_OK)


@pytest.mark.slow
@needs_mpi
def test_mpirun_sh_two_ranks_identical_to_one(tmp_path):
    r1 = _sh(JOBS / "mpirun.sh", 1, *SCENARIO, "--out", tmp_path / "one", "--no-progress")
    assert r1.returncode == 0, r1.stderr
    r2 = _sh(JOBS / "mpirun.sh", 2, *SCENARIO, "--out", tmp_path / "two", "--no-progress")
    assert r2.returncode == 0, r2.stderr
    assert "(2 ranks)" in r2.stdout
    assert (tmp_path / "one" / "fct.txt").read_bytes() == (tmp_path / "two" / "fct.txt").read_bytes()


def test_mpirun_sh_explains_a_missing_mpiexec(tmp_path):
    r = _sh(JOBS / "mpirun.sh", 2, *SCENARIO, env=_clean_env(PWORMHOLE_MPIEXEC=str(tmp_path / "nope")))
    assert r.returncode == 2
    assert "no mpiexec" in r.stderr and "pip install" in r.stderr
    r = _sh(JOBS / "mpirun.sh", "two")
    assert r.returncode == 2 and "RANKS must be a positive integer" in r.stderr


@pytest.mark.slow
@needs_mpi
def test_run_sbatch_outside_slurm_with_mpiexec(tmp_path):
    """The batch script's argument and output-folder handling, run by bash with the mpiexec launcher."""
    env = _clean_env(SLURM_NTASKS="2", SLURM_SUBMIT_DIR=str(ROOT), PWORMHOLE_LAUNCHER="mpiexec",
                     PWORMHOLE_OUT=str(tmp_path / "o"))
    r = _sh("bash", JOBS / "slurm" / "run.sbatch", *SCENARIO, env=env)
    assert r.returncode == 0, r.stderr
    assert "(2 ranks)" in r.stdout and (tmp_path / "o" / "fct.txt").exists()
    r = _sh("bash", JOBS / "slurm" / "run.sbatch", env=dict(env, PWORMHOLE_LAUNCHER="bogus"))
    assert r.returncode == 2 and "PWORMHOLE_LAUNCHER" in r.stderr


# ---------------------------------------------------------------- singleton detection

SINGLETON = {"SLURM_STEP_NUM_TASKS": "2", "SLURM_NTASKS": "2", "SLURM_PROCID": "1", "SLURM_STEPID": "0"}


def test_plain_srun_singleton_is_refused(tmp_path):
    r = _sh(sys.executable, "-m", "pwormhole", "run", *SCENARIO, "--out", tmp_path / "x", "--no-progress",
            env=_clean_env(**SINGLETON))
    assert r.returncode == 2
    assert r.stderr.startswith("pwormhole: error: Slurm started 2 tasks but MPI sees 1 rank"), r.stderr
    assert "srun --mpi=pmi2" in r.stderr and "mpiexec" in r.stderr
    assert not (tmp_path / "x" / "fct.txt").exists()


def test_singleton_check_does_not_import_mpi4py():
    code = ("import sys\nfrom pwormhole.sync.mpi import check_launch\nfrom pwormhole.errors import InputError\n"
            "try:\n    check_launch()\nexcept InputError:\n    print('refused', 'mpi4py' in sys.modules)\n")
    r = _sh(sys.executable, "-c", code, env=_clean_env(**SINGLETON))
    assert r.stdout.strip() == "refused False", r.stderr


def test_check_launch_cases(monkeypatch):
    for k in list(os.environ):
        if k.startswith("SLURM_") or k in LAUNCHER_ENV:
            monkeypatch.delenv(k)
    sync_mpi.check_launch()  # outside Slurm
    # a batch script (sbatch -n 2) or salloc shell: no step variables, one process is legitimate
    monkeypatch.setenv("SLURM_NTASKS", "2")
    monkeypatch.setenv("SLURM_PROCID", "0")
    sync_mpi.check_launch()
    assert sync_mpi.world() is None
    # an srun step of 2 tasks: fine when MPI agrees, refused when each task is alone
    monkeypatch.setenv("SLURM_STEP_NUM_TASKS", "2")
    sync_mpi.check_launch(size=2)
    with pytest.raises(InputError, match="srun --mpi=pmi2"):
        sync_mpi.check_launch(size=1)
    with pytest.raises(InputError, match="MPI sees 1 rank"):
        sync_mpi.check_launch()  # no launcher variables at all
    with pytest.raises(InputError):
        sync_mpi.world()
    # older Slurm without SLURM_STEP_NUM_TASKS: SLURM_NTASKS counts inside a step
    monkeypatch.delenv("SLURM_STEP_NUM_TASKS")
    monkeypatch.setenv("SLURM_STEPID", "0")
    with pytest.raises(InputError):
        sync_mpi.check_launch()
    monkeypatch.setenv("SLURM_NTASKS", "1")
    sync_mpi.check_launch()


# ---------------------------------------------------------------- pwormhole scale

def _scale(*argv, capsys=None) -> tuple[int, str]:
    rc = scale.cli([str(a) for a in argv])
    out = capsys.readouterr() if capsys else None
    return rc, (out.out + out.err) if out else ""


@pytest.mark.slow
@needs_mpi
def test_scale_packet_1_2_ranks(tmp_path, capsys):
    rc, text = _scale("--ranks", "1,2", "--modes", "packet", "--out", tmp_path / "s", "--", *SCENARIO,
                      capsys=capsys)
    assert rc == 0, text
    assert "[1/2] packet ranks 1: ok" in text and "[2/2] packet ranks 2: ok" in text
    table = [ln.split() for ln in text.splitlines() if ln.startswith("packet ")]
    assert [(t[1], t[-2], t[-1]) for t in table] == [("1", "identical", "0.000%"), ("2", "identical", "0.000%")]
    with open(tmp_path / "s" / "scaling.csv", newline="") as fh:
        reader = csv.DictReader(fh)
        assert tuple(reader.fieldnames) == scale.COLUMNS
        rows = list(reader)
    assert [(r["mode"], r["ranks"], r["status"]) for r in rows] == [("packet", "1", "ok"), ("packet", "2", "ok")]
    one, two = rows
    assert float(one["speedup"]) == 1.0 and float(one["efficiency"]) == 1.0
    assert all(r["identical"] == "True" and float(r["max_rel_fct_diff"]) == 0.0 for r in rows)
    assert float(two["sync_wall_s"]) > 0 and int(two["events"]) == int(one["events"]) > 0
    assert float(two["speedup"]) == pytest.approx(float(one["wall_s"]) / float(two["wall_s"]), rel=1e-4)
    assert float(two["efficiency"]) == pytest.approx(float(two["speedup"]) / 2, rel=1e-4)
    assert (tmp_path / "s" / "packet" / "ranks2" / "summary.json").exists()
    png = tmp_path / "s" / "scaling.png"
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        assert not png.exists() and "matplotlib is not installed" in text
    else:
        data = png.read_bytes()
        assert data.startswith(b"\x89PNG\r\n\x1a\n") and len(data) > 1000


def test_scale_reports_a_failed_run(tmp_path, capsys, monkeypatch):
    """A run that fails once under way (here the Wormhole run's command, made to fail as a run
    does) is a failed row with run's error line, not a crash; packet@1 is added."""
    real = scale._run_command
    fail = [sys.executable, "-c", "import sys; sys.stderr.write('pwormhole: error: boom\\n'); sys.exit(2)"]
    monkeypatch.setattr(scale, "_run_command", lambda run, args: fail if run.mode == "wormhole" else real(run, args))
    rc, text = _scale("--ranks", "1", "--modes", "wormhole", "--out", tmp_path / "s", "--", *SCENARIO,
                      capsys=capsys)
    assert rc == 1
    assert "wormhole ranks 1: FAILED" in text
    rows = list(csv.DictReader(open(tmp_path / "s" / "scaling.csv", newline="")))
    assert [(r["mode"], r["status"]) for r in rows] == [("packet", "ok"), ("wormhole", "failed")]
    assert "boom" in rows[1]["error"] and "error" in rows[1]["error"] and rows[1]["speedup"] == ""
    assert (tmp_path / "s" / "logs" / "wormhole-ranks1.log").exists()


def test_scale_refuses_a_study_that_cannot_run_before_running(tmp_path, capsys):
    """An unknown mode, a run argument 'run' refuses (checked by a dry run) and --dry-run itself: one
    line, exit 2, no folder."""
    for args, said in ((("--modes", "no-such-mode", "--", *SCENARIO), "--modes: 'no-such-mode' is not a mode"),
                       (("--", *SCENARIO, "--bogus"), "unrecognized arguments: --bogus"),
                       (("--", *SCENARIO, "--dry-run"), "leave --dry-run out of the run arguments")):
        rc, text = _scale("--ranks", "1", "--out", tmp_path / "s", *args, capsys=capsys)
        assert rc == 2 and said in text
        assert not (tmp_path / "s").exists()


def test_scale_rejects_flags_it_sets(tmp_path, capsys):
    rc, text = _scale("--ranks", "1", "--out", tmp_path / "s", "--", "--out", "elsewhere", capsys=capsys)
    assert rc == 2 and "--out is set by 'scale'" in text
    rc, text = _scale("--ranks", "0", "--out", tmp_path / "s", capsys=capsys)
    assert rc == 2 and "--ranks" in text


def test_scale_sbatch_script(tmp_path):
    run = scale.Run("packet", 4, str(tmp_path / "r4"))
    text = scale.sbatch_script(run, ["--hpcc-config", "a b/config.txt"], str(tmp_path / "r4.log"),
                               ["--partition=debug"])
    assert "#SBATCH --ntasks=4\n" in text and "#SBATCH --exclusive\n" in text and "#SBATCH --partition=debug\n" in text
    assert 'srun --mpi="${PWORMHOLE_SRUN_MPI:-pmi2}" -n 4 ' in text
    assert "'a b/config.txt' --mode packet --out " in text
    assert "--exclusive" not in scale.sbatch_script(run, [], "l", [], exclusive=False)


def test_max_rel_fct_diff():
    ref = b"0b000001 0b000101 10000 100 1000 0 2000 1000\n0b000001 0b000201 10001 100 1000 0 4000 1000\n"
    same_other_order = b"0b000001 0b000201 10001 100 1000 0 4000 1000\n0b000001 0b000101 10000 100 1000 0 2000 1000\n"
    slower = b"0b000001 0b000101 10000 100 1000 0 2100 1000\n0b000001 0b000201 10001 100 1000 0 4000 1000\n"
    assert scale.max_rel_fct_diff(same_other_order, ref) == 0.0
    assert scale.max_rel_fct_diff(slower, ref) == pytest.approx(0.05)
    assert scale.max_rel_fct_diff(ref.splitlines(keepends=True)[0], ref) == float("inf")
