"""Outputs are never lost, truncated under a final name or written outside ``--out``.

A full disk (simulated in-process, and on a real 64 KB tmpfs where mounting is
allowed), a memo cache in a missing folder, clashing output names from an HPCC
config, links planted in ``--out``, and existing files that a run replaces.
"""

import errno
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import ROOT

from pwormhole.commands import cli
from pwormhole.errors import InputError, OutputError
from pwormhole.inputs.hpcc_config import read_hpcc_config

INCAST = ROOT / "tests" / "data" / "incast"
# 8 hosts send 1 MB each to host 0 under PFC: 0.2 s; fct.txt 408 B (8 lines), pfc.txt 6239 B (211 pauses)
RUN = ["run", "--mode", "packet", "--topology", str(INCAST / "star9_topology.txt"),
       "--flows", str(INCAST / "incast8_flows.txt"), "--config", str(INCAST / "pfc_config.txt"), "--no-progress"]
OUTPUTS = ("fct.txt", "pfc.txt", "summary.json")


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """The files of an undisturbed run."""
    out = tmp_path_factory.mktemp("ref")
    assert cli.main(RUN + ["--out", str(out)]) == 0
    return {n: (out / n).read_bytes() for n in OUTPUTS}


def _stderr_lines(capsys) -> list[str]:
    return [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]


# -- a full disk --------------------------------------------------------------------------

class _FullDisk:
    """A file object that fails with ENOSPC once ``budget`` bytes were written (what fits is written)."""

    def __init__(self, fh, budget: int):
        self.fh, self.budget = fh, budget

    def write(self, data):
        room = self.budget
        self.budget -= len(data)
        if self.budget < 0:
            self.fh.write(data[:max(room, 0)])
            self.fh.flush()
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return self.fh.write(data)

    def writelines(self, lines):
        for ln in lines:
            self.write(ln)

    def __getattr__(self, name):
        return getattr(self.fh, name)


def _fill_disk(monkeypatch, budgets: dict[str, int]):
    """Files whose final name is in ``budgets`` fail after that many bytes."""
    from pwormhole.outfiles import PartFile

    orig_init = PartFile.__init__

    def init(self, path, binary=False):
        orig_init(self, path, binary)
        name = os.path.basename(path)
        if name in budgets:
            self.fh = _FullDisk(self.fh, budgets[name])

    monkeypatch.setattr(PartFile, "__init__", init)


def test_disk_full_on_fct_gives_one_line_exit_4_and_keeps_the_rest(tmp_path, monkeypatch, capsys, reference):
    _fill_disk(monkeypatch, {"fct.txt": 200})
    assert cli.main(RUN + ["--out", str(tmp_path)]) == 4
    err = _stderr_lines(capsys)
    msg = f"cannot write {tmp_path / 'fct.txt'}: No space left on device"
    assert err == [f"pwormhole: error: {msg}"]
    assert not (tmp_path / "fct.txt").exists()  # never a truncated file under the final name
    part = (tmp_path / "fct.txt.part").read_bytes()
    assert part == reference["fct.txt"][:200]  # what fitted, as written
    assert (tmp_path / "pfc.txt").read_bytes() == reference["pfc.txt"]  # the other outputs are complete
    s = json.loads((tmp_path / "summary.json").read_text())
    assert s["complete"] and s["flows_finished"] == 8 and s["output_errors"] == [msg]


def test_disk_full_everywhere_leaves_only_part_files(tmp_path, monkeypatch, capsys):
    _fill_disk(monkeypatch, {"fct.txt": 0, "pfc.txt": 100, "summary.json": 10})
    assert cli.main(RUN + ["--out", str(tmp_path)]) == 4
    err = _stderr_lines(capsys)
    assert len(err) == 1 and "Traceback" not in err[0]
    for n in OUTPUTS:
        assert f"cannot write {tmp_path / n}: No space left on device" in err[0]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(n + ".part" for n in OUTPUTS)
    assert len((tmp_path / "summary.json.part").read_bytes()) == 10


def _mount_tool():
    """How to mount a tmpfs for a child process: a private mount namespace (root), or a user namespace."""
    if not shutil.which("unshare") or sys.platform != "linux":
        return None
    return ["unshare", "-m"] if os.geteuid() == 0 else ["unshare", "-Urm"]


def test_disk_full_on_a_real_tmpfs(tmp_path, reference):
    """A 64 KB tmpfs filled up to two pages: the three outputs need four (pfc.txt is 6239 B)."""
    tool = _mount_tool()
    if tool is None:
        pytest.skip("needs unshare (Linux)")
    mnt, saved = tmp_path / "mnt", tmp_path / "saved"
    mnt.mkdir()
    saved.mkdir()
    script = f"""
mount -t tmpfs -o size=64k tmpfs {mnt} || exit 97
dd if=/dev/zero of={mnt}/filler bs=4096 2>/dev/null
truncate -s -8192 {mnt}/filler
{sys.executable} -m pwormhole {' '.join(RUN)} --out {mnt}/out
rc=$?
cp -a {mnt}/out/. {saved}/
exit $rc
"""
    r = subprocess.run(tool + ["sh", "-c", script], capture_output=True, text=True, cwd=ROOT, timeout=120)
    if r.returncode == 97:
        pytest.skip(f"mounting a tmpfs is not permitted here: {r.stderr.strip()}")
    assert r.returncode == 4, r.stderr
    err = r.stderr.splitlines()
    assert len(err) == 1 and err[0].startswith("pwormhole: error: cannot write ") and "Traceback" not in r.stderr
    failed = [n for n in OUTPUTS if f"cannot write {mnt}/out/{n}: No space left on device" in err[0]]
    assert "summary.json" in failed and len(failed) == 2  # the run's files took the two pages
    assert sorted(p.name for p in saved.iterdir()) == sorted(n + ".part" if n in failed else n for n in OUTPUTS)
    for n in OUTPUTS[:2]:  # a final name holds the whole file; a .part what fitted
        if n in failed:
            part = (saved / (n + ".part")).read_bytes()
            assert len(part) < len(reference[n]) and reference[n].startswith(part)
        else:
            assert (saved / n).read_bytes() == reference[n]


# -- the memo cache path, and summary.json before the optional outputs ---------------------------

def test_memo_cache_in_a_missing_folder_is_refused_before_simulating(tmp_path, capsys):
    out = tmp_path / "out"
    memo = tmp_path / "missing" / "memo.json"
    wormhole_run = [a for a in RUN if a not in ("--mode", "packet")]
    assert cli.main(wormhole_run + ["--out", str(out), "--memo-cache", str(memo)]) == 2
    err = _stderr_lines(capsys)
    assert len(err) == 1 and "--memo-cache" in err[0] and "does not exist" in err[0] and str(memo) in err[0]
    assert not out.exists()  # nothing simulated, nothing written (the folder made for the run removed)


def test_memo_cache_that_is_a_device_is_refused(tmp_path, capsys):
    """The save would replace /dev/null (as root) after the run."""
    wormhole_run = [a for a in RUN if a not in ("--mode", "packet")]
    assert cli.main(wormhole_run + ["--out", str(tmp_path), "--memo-cache", "/dev/null"]) == 2
    assert "'/dev/null': it is not a regular file" in _stderr_lines(capsys)[0]
    assert list(tmp_path.iterdir()) == [] and os.path.exists("/dev/null") and not os.path.isfile("/dev/null")


def test_memo_cache_clashing_with_an_output_is_refused(tmp_path, capsys):
    wormhole_run = [a for a in RUN if a not in ("--mode", "packet")]
    assert cli.main(wormhole_run + ["--out", str(tmp_path), "--memo-cache", str(tmp_path / "summary.json")]) == 2
    assert "--memo-cache" in _stderr_lines(capsys)[0]
    assert list(tmp_path.iterdir()) == []


def test_summary_is_written_before_a_failing_memo_cache_save(tmp_path, monkeypatch, capsys):
    from pwormhole.accel.memo import MemoCache

    memo_dir = tmp_path / "memo"
    memo_dir.mkdir()
    save = MemoCache.save

    def save_after_the_folder_went(self, path):  # the folder disappears during the run
        shutil.rmtree(memo_dir)
        return save(self, path)

    monkeypatch.setattr(MemoCache, "save", save_after_the_folder_went)
    out = tmp_path / "out"
    wormhole_run = [a for a in RUN if a not in ("--mode", "packet")]
    assert cli.main(wormhole_run + ["--out", str(out), "--memo-cache", str(memo_dir / "memo.json")]) == 4
    err = _stderr_lines(capsys)
    assert len(err) == 1 and err[0].startswith(f"pwormhole: error: cannot write {memo_dir / 'memo.json'}: ")
    s = json.loads((out / "summary.json").read_text())
    assert s["complete"] and s["flows_finished"] == 8 and s["mode"] == "wormhole"


# -- output names from config.txt ---------------------------------------------------------

def _config(tmp_path, *lines) -> Path:
    p = tmp_path / "config.txt"
    p.write_text("\n".join([f"TOPOLOGY_FILE {INCAST / 'star9_topology.txt'}",
                            f"FLOW_FILE {INCAST / 'incast8_flows.txt'}", "CC_MODE 1", "BUFFER_SIZE 1", *lines]) + "\n")
    return p


@pytest.mark.parametrize("lines,bad_line,value", [
    (["FCT_OUTPUT_FILE summary.json"], 5, "summary.json"),
    (["PFC_OUTPUT_FILE mix/collectives.csv"], 5, "mix/collectives.csv"),
    (["FCT_OUTPUT_FILE compare.json"], 5, "compare.json"),
    (["FCT_OUTPUT_FILE timeline.png"], 5, "timeline.png"),
    (["FCT_OUTPUT_FILE mix/out.txt", "PFC_OUTPUT_FILE other/out.txt"], 6, "out.txt"),
    (["PFC_OUTPUT_FILE fct.txt"], 5, "fct.txt"),  # FCT keeps its default name fct.txt
    (["FCT_OUTPUT_FILE .."], 5, ".."),
    (["PFC_OUTPUT_FILE mix/.."], 5, "mix/.."),
    (["FCT_OUTPUT_FILE pfc.txt.part"], 5, "pfc.txt.part"),
])
def test_clashing_output_names_are_refused_before_simulating(tmp_path, capsys, lines, bad_line, value):
    conf = _config(tmp_path, *lines)
    with pytest.raises(InputError) as e:
        read_hpcc_config(conf)
    assert e.value.path == str(conf) and e.value.line == bad_line and repr(value).strip("'") in e.value.message
    out = tmp_path / "out"
    assert cli.main(["run", "--mode", "packet", "--hpcc-config", str(conf), "--out", str(out), "--no-progress"]) == 2
    err = _stderr_lines(capsys)
    assert len(err) == 1 and err[0].startswith(f"pwormhole: error: {conf}:{bad_line}: ")
    assert not out.exists()


@pytest.mark.parametrize("fct,pfc,names", [
    ("mix/fct.txt", "mix/pfc.txt", ("fct.txt", "pfc.txt")),  # HPCC's own config
    ("{{OUTPUT_DIR}}/fct.txt", "{{OUTPUT_DIR}}/pfc.txt", ("fct.txt", "pfc.txt")),  # ASTRA-sim's template
    ("/etc/astra-sim/simulation/llama_hpn7_fct.txt", "/etc/astra-sim/simulation/llama_hpn7_pfc.txt",
     ("llama_hpn7_fct.txt", "llama_hpn7_pfc.txt")),  # SimAI's
    ("mix/pfc.txt", "mix/fct.txt", ("pfc.txt", "fct.txt")),  # swapped: no clash once both are read
])
def test_real_output_names_are_kept_as_base_names_in_out(tmp_path, capsys, fct, pfc, names):
    ref = tmp_path / "ref"
    assert cli.main(["run", "--mode", "packet", "--hpcc-config", str(_config(tmp_path)), "--out", str(ref),
                     "--no-progress"]) == 0
    conf = _config(tmp_path, f"FCT_OUTPUT_FILE {fct}", f"PFC_OUTPUT_FILE {pfc}")
    out = tmp_path / "out"
    assert cli.main(["run", "--mode", "packet", "--hpcc-config", str(conf), "--out", str(out), "--no-progress"]) == 0
    assert sorted(p.name for p in out.iterdir()) == sorted([*names, "summary.json"])
    assert (out / names[0]).read_bytes() == (ref / "fct.txt").read_bytes()
    assert (out / names[1]).read_bytes() == (ref / "pfc.txt").read_bytes() != b""


# -- links planted in --out are never followed ----------------------------------------------

def _plant(out: Path, outside: Path, names) -> dict[Path, bytes]:
    """``NAME`` and ``NAME.part`` in ``out`` as links to files in ``outside``; returns those files' contents."""
    out.mkdir(exist_ok=True)
    outside.mkdir(exist_ok=True)
    victims = {}
    for name in names:
        for link in (name, name + ".part"):
            victim = outside / f"victim-{link}"
            victim.write_bytes(f"precious {link}\n".encode())
            os.symlink(victim, out / link)
            victims[victim] = victim.read_bytes()
    return victims


def test_links_planted_in_out_are_replaced_not_followed(tmp_path, reference, capsys):
    out = tmp_path / "out"
    victims = _plant(out, tmp_path / "outside", OUTPUTS)
    assert cli.main(RUN + ["--out", str(out)]) == 0
    for victim, content in victims.items():
        assert victim.read_bytes() == content, victim
    for name in OUTPUTS:
        assert not (out / name).is_symlink() and not os.path.lexists(out / (name + ".part"))
    assert (out / "fct.txt").read_bytes() == reference["fct.txt"]
    assert (out / "pfc.txt").read_bytes() == reference["pfc.txt"]


def _write_plan(path):
    from pwormhole.partition.plan import PartitionPlan
    PartitionPlan(parts=1, owner=[0, 0]).to_json(path)


def _write_flows(path):
    from pwormhole.workload.flows import Flow
    from pwormhole.workload.gen_flows import write_hpcc_flows
    write_hpcc_flows(path, [Flow(0, 0, 1, 3, 100, 1000, 0, 10000)])


def _write_memo(path):
    from pwormhole.accel.memo import MemoCache
    MemoCache("fp").save(path)


def _write_csv(path):
    from pwormhole.report.training import write_collectives_csv
    write_collectives_csv(path, [])


def _write_trace(path):
    from types import SimpleNamespace

    from pwormhole.report.trace import write_trace
    write_trace(path, SimpleNamespace(name="t", dag=None, flows=[]), {}, {}, {}, [], "id")


def _write_png(path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from pwormhole.outfiles import save_figure
    save_figure(plt.figure(figsize=(1, 1)), path)


@pytest.mark.parametrize("writer", [_write_plan, _write_flows, _write_memo, _write_csv, _write_trace, _write_png])
def test_every_writer_replaces_planted_links(tmp_path, writer):
    out = tmp_path / "out"
    victims = _plant(out, tmp_path / "outside", ["file"])
    writer(str(out / "file"))
    for victim, content in victims.items():
        assert victim.read_bytes() == content, victim
    assert (out / "file").is_file() and not (out / "file").is_symlink() and (out / "file").stat().st_size > 0
    assert not os.path.lexists(out / "file.part")


def test_a_writer_error_is_one_line_and_keeps_the_part(tmp_path, monkeypatch):
    from pwormhole.outfiles import write_text
    _fill_disk(monkeypatch, {"plan.json": 3})
    with pytest.raises(OutputError) as e:
        write_text(str(tmp_path / "plan.json"), "0123456789")
    assert str(e.value) == f"cannot write {tmp_path / 'plan.json'}: No space left on device"
    assert not (tmp_path / "plan.json").exists() and (tmp_path / "plan.json.part").read_text() == "012"
    rc = cli.main(["partition", "--parts", "1", "--topology", str(INCAST / "star9_topology.txt"),
                   "--save", str(tmp_path / "missing" / "plan.json")])
    assert rc == 4


# -- existing files in --out ---------------------------------------------------------------

def test_replacing_existing_outputs_is_said_in_one_line(tmp_path, capsys):
    assert cli.main(RUN + ["--out", str(tmp_path)]) == 0
    assert not any("warning" in ln for ln in _stderr_lines(capsys))
    (tmp_path / "pfc.txt").unlink()
    assert cli.main(RUN + ["--out", str(tmp_path)]) == 0
    warning = f"pwormhole: warning: {tmp_path} held an earlier run's outputs: replacing fct.txt, summary.json"
    assert _stderr_lines(capsys) == [warning]


def test_inputs_are_never_written_over(tmp_path, capsys):
    """A run refuses, before simulating and writing nothing, a memo cache that is one of its inputs or
    a file that is no memo cache, and inputs where it writes its outputs; all stay as they were."""
    wormhole_run = [a for a in RUN if a not in ("--mode", "packet")]
    flows = tmp_path / "flows.txt"
    shutil.copy(INCAST / "incast8_flows.txt", flows)
    args = [a if a != str(INCAST / "incast8_flows.txt") else str(flows) for a in wormhole_run]
    notes = tmp_path / "notes.txt"
    notes.write_text("my notes\n")
    for memo, why in ((flows, "is an input of the run"), (notes, "is a file but not a memo cache of pwormhole")):
        assert cli.main(args + ["--out", str(tmp_path / "o"), "--memo-cache", str(memo)]) == 2
        assert why in _stderr_lines(capsys)[0]
    # the flow list where the run writes its summary
    inside = tmp_path / "o2"
    inside.mkdir()
    shutil.copy(flows, inside / "summary.json")
    moved = [a if a != str(flows) else str(inside / "summary.json") for a in args]
    assert cli.main(moved + ["--out", str(inside)]) == 2
    assert "an input of the run, is where it writes its output summary.json" in _stderr_lines(capsys)[0]
    assert flows.read_bytes() == (inside / "summary.json").read_bytes() == (INCAST / "incast8_flows.txt").read_bytes()
    assert notes.read_text() == "my notes\n" and not (tmp_path / "o").exists()


def test_a_folder_of_someone_elses_files_is_not_claimed(tmp_path, capsys):
    """Files with the names of pwormhole's outputs in a folder no run of pwormhole wrote (no
    summary.json) are not replaced nor removed: the run is refused."""
    (tmp_path / "timeline.csv").write_text("mine\n")
    (tmp_path / "report.html").write_text("mine\n")
    assert cli.main(RUN + ["--out", str(tmp_path)]) == 2
    err = _stderr_lines(capsys)
    assert len(err) == 1 and "holds report.html, timeline.csv but no summary.json" in err[0]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.html", "timeline.csv"]
    assert (tmp_path / "timeline.csv").read_text() == "mine\n"
