"""bench/vs_peers.py with stand-in peers: what it passes them, what it reads back, how it interleaves."""

import csv
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import ROOT

sys.path.insert(0, str(ROOT / "bench"))

import vs_peers  # noqa: E402  (bench/ is not a package)


def fake(path: Path, body: str) -> str:
    path.write_text("#!/usr/bin/env bash\n" + body)
    path.chmod(0o755)
    return str(path)


def test_ns3_runs_in_a_copy_of_the_folder_and_checks_fct(tmp_path):
    # a stand-in third: refuses anything but `third config.txt`, "writes" fct.txt and counts
    third = fake(tmp_path / "third", '[ "$1" = config.txt ] && [ -f topology.txt ] || exit 3\n'
                                     'cp fct.ns3.txt fct.txt; echo "ns3_events 4242" >&2\n')
    (tmp_path / "a").mkdir()
    m, err = vs_peers.run_ns3(third, "s2", tmp_path / "a")
    assert (m.rc, m.check, vs_peers.counted(err, "ns3_events")) == (0, "fct=ref", 4242)
    wrong = fake(tmp_path / "wrong", "echo 1 2 3 > fct.txt\n")
    (tmp_path / "b").mkdir()
    assert vs_peers.run_ns3(wrong, "s2", tmp_path / "b")[0].check == "fct!=ref"
    assert not (vs_peers.REF / "s2_dcqcn" / "fct.txt").exists()


@pytest.mark.slow
def test_perm16_beside_a_stand_in_htsim(tmp_path):
    # a stand-in htsim_roce: refuses other inputs, reports 16 finished flows; its twin counts 777 events
    finish = 'for i in $(seq 16); do echo "Flow Roce_$i $i finished at 1.5 total bytes 2000000"; done\n'
    check = f'[ "$1 $2 $4 $6" = "-tm {vs_peers.PERM16_CM} 16 1000" ] || exit 3\n'
    htsim = fake(tmp_path / "htsim_roce", check + finish)
    count = fake(tmp_path / "htsim_roce_count", check + finish + 'echo "htsim_events 777" >&2\n')
    out = tmp_path / "out"
    r = subprocess.run([sys.executable, str(ROOT / "bench" / "vs_peers.py"), "--scenarios", "perm16",
                        "--htsim", htsim, "--htsim-count", count, "--repeat", "2", "--out", str(out)],
                       capture_output=True, text=True, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    rows = list(csv.DictReader(open(out / "runs.csv")))
    assert [(x["round"], x["simulator"]) for x in rows] == [("1", "pwormhole"), ("1", "htsim"),
                                                             ("2", "pwormhole"), ("2", "htsim")]
    assert {(x["simulator"], x["events"], x["check"], x["rc"]) for x in rows} == {
        ("pwormhole", "693765", "16/16flows", "0"), ("htsim", "777", "16/16flows", "0")}
    table = (out / "summary.md").read_text().splitlines()
    ours = next(line for line in table if line.startswith("| perm16 | pwormhole |"))
    assert "| 693,765 |" in ours and ours.rstrip(" |").endswith("x")
    assert next(line for line in table if line.startswith("| perm16 | htsim |")).count("| 777 |") == 1
