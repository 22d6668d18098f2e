"""Runs that used to end with exit 0 and a wrong answer."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import MPIEXEC, ROOT

from pwormhole.commands import cli
from pwormhole.engine.lp import INF_PS, next_due_ps

CONFIG = ROOT / "tests" / "data" / "hpcc" / "mix" / "config.txt"


def _ring_deadlock(d: Path) -> list[str]:
    """Five switches in a ring, two hosts on each; every host sends 100 MB to the host two
    switches on (the shortest path crosses the next switch), no ECN, a 1 MB buffer: the
    PFC pauses form a cycle of buffer dependencies. Returns the ``run`` arguments."""
    n_sw, hosts = 5, 10
    links = [(2 * i + j, hosts + i) for i in range(n_sw) for j in range(2)]
    links += [(hosts + i, hosts + (i + 1) % n_sw) for i in range(n_sw)]
    (d / "topo.txt").write_text(f"{hosts + n_sw} {n_sw} {len(links)}\n" + " ".join(str(hosts + i) for i in range(n_sw))
                                + "\n" + "".join(f"{a} {b} 100Gbps 0.001ms 0\n" for a, b in links))
    flows = [(2 * i + j, 2 * ((i + 2) % n_sw) + j) for i in range(n_sw) for j in range(2)]
    (d / "flow.txt").write_text(f"{len(flows)}\n" + "".join(f"{s} {t} 3 100 100000000 0\n" for s, t in flows))
    keep = [ln for ln in CONFIG.read_text().splitlines()
            if not ln.startswith(("TOPOLOGY_FILE", "FLOW_FILE", "TRACE_", "FCT_OUTPUT", "PFC_OUTPUT", "QLEN_MON",
                                  "BUFFER_SIZE", "ENABLE_QCN"))]
    (d / "config.txt").write_text("\n".join(keep + ["ENABLE_QCN 0", "BUFFER_SIZE 1"]) + "\n")
    return ["--topology", d / "topo.txt", "--flows", d / "flow.txt", "--config", d / "config.txt", "--no-progress"]


def _assert_deadlock_reported(out: Path) -> None:
    s = json.loads((out / "summary.json").read_text())
    assert s["complete"] is False and s["flows_finished"] == 0
    st = s["stuck"]
    assert st["reason"] == "no event left to simulate" and st["at_ps"] < 100 * 10**6  # ~25 us, not the 4 s stop
    assert [f["flow"] for f in st["flows"]] == list(range(10))
    assert all(0 < f["acked_bytes"] < f["size_bytes"] for f in st["flows"])
    # the ring's five switch-to-switch ports are paused at priority 3
    assert len(st["paused_ports"]) == 5 and {p["node"] for p in st["paused_ports"]} == {10, 11, 12, 13, 14}


def test_next_due_ps_tells_no_wake_from_a_wake():
    assert next_due_ps(INF_PS, INF_PS) == INF_PS  # nothing pending: the loop must see it as such
    assert next_due_ps(5_000, INF_PS) == 5_000
    assert next_due_ps(INF_PS, 3_000) == 2_999  # a wake at boundary 3000 runs the window ending there
    assert next_due_ps(1_000, 3_000) == 1_000


@pytest.mark.parametrize("mode,extra", [("packet", []), ("wormhole", []), ("wormhole", ["--no-skip", "--no-memo"]),
                                        ("packet", ["--lps", "3"]), ("wormhole", ["--lps", "3"])])
def test_pfc_deadlock_is_reported_in_every_mode(tmp_path, capsys, mode, extra):
    args = _ring_deadlock(tmp_path)
    out = tmp_path / "out"
    assert cli.main(["run", *map(str, args), "--mode", mode, *extra, "--out", str(out)]) == 3
    assert "pwormhole: stuck: no progress at 25.000 us" in capsys.readouterr().err
    _assert_deadlock_reported(out)


@pytest.mark.skipif(MPIEXEC is None, reason="mpiexec not installed")
@pytest.mark.parametrize("mode", ["packet", "wormhole"])
def test_pfc_deadlock_is_reported_under_mpiexec(tmp_path, mode):
    args = _ring_deadlock(tmp_path)
    out = tmp_path / "out"
    r = subprocess.run([MPIEXEC, "-n", "2", sys.executable, "-m", "pwormhole", "run", *map(str, args), "--mode", mode,
                        "--out", str(out)], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert r.returncode == 3, r.stderr
    assert r.stderr.count("pwormhole: stuck:") == 1 and "MPI_Abort" not in r.stderr
    _assert_deadlock_reported(out)  # both ranks' stuck flows and paused ports, gathered


def _counters(out: Path) -> dict:
    return json.loads((out / "summary.json").read_text())


@pytest.mark.parametrize("name", ["s1_hpcc", "s2_dcqcn"])
def test_until_counts_fast_forwarded_bytes(tmp_path, name):
    """Stopped 1.5 ms into HPCC's reference incast (two 200 MB flows into one host, frozen by
    then): the byte counters equal packet mode's over the same interval within 1%."""
    d = ROOT / "tests" / "data" / "hpcc" / "reference" / name
    args = ["--topology", d / "topology.txt", "--flows", d / "flow.txt", "--config", d / "config.txt",
            "--until", "2.0015", "--no-progress"]
    got = {}
    for mode in ("packet", "wormhole"):
        assert cli.main(["run", *map(str, args), "--mode", mode, "--out", str(tmp_path / mode)]) == 0
        got[mode] = _counters(tmp_path / mode)
    p, w = got["packet"], got["wormhole"]
    assert w["skips"] >= 1 and w["events"] < p["events"] / 3 and not w["complete"]
    assert p["bytes_sent"] > 10**7  # ~1.5 ms at 100 Gb/s into the receiver
    for key in ("bytes_sent", "bytes_delivered"):
        assert abs(w[key] - p[key]) <= 0.01 * p[key], (key, w[key], p[key])


def test_until_counts_rate_level_nvlink_bytes(tmp_path):
    """--fluid-nvlink flows stopped mid-way count the bytes their rates moved by then."""
    args = ["--model", "gpt-350m", "--gpus", "16", "--tp", "8", "--layers", "1", "--until", "30us", "--no-progress"]
    assert cli.main(["run", *args, "--mode", "packet", "--out", str(tmp_path / "p")]) == 0
    assert cli.main(["run", *args, "--fluid-nvlink", "--out", str(tmp_path / "f")]) == 0
    p, f = _counters(tmp_path / "p"), _counters(tmp_path / "f")
    assert f["fluid_flows"] > 0 and p["flows_finished"] == f["flows_finished"] < p["flows"]
    for key in ("bytes_sent", "bytes_delivered"):
        assert abs(f[key] - p[key]) <= 0.01 * p[key], (key, f[key], p[key])


@pytest.mark.parametrize("cc", ["dcqcn", "hpcc"])
@pytest.mark.parametrize("mode", ["packet", "wormhole"])
def test_a_flow_alone_has_slowdown_one(tmp_path, cc, mode):
    """100 B, one packet, 1 MB and 3 MB + 77 B flows, each alone on a 3-tier fat tree (across
    pods: six links), have FCT equal to their standalone FCT in packet mode. HPCC's formula,
    which the column held before, gave slowdowns of 0.968 (100 B) and 0.990 (1 MB, DCQCN's
    36-byte headers)."""
    for size in (100, 1000, 1_000_000, 3_000_077):
        (tmp_path / "flow.txt").write_text(f"1\n0 15 3 100 {size} 0\n")
        out = tmp_path / f"{size}"
        assert cli.main(["run", "--topology", "fat-tree:k=4", "--flows", str(tmp_path / "flow.txt"), "--cc", cc,
                         "--mode", mode, "--out", str(out), "--no-progress"]) == 0
        cols = (out / "fct.txt").read_text().split()
        fct_ns, standalone_ns = int(cols[6]), int(cols[7])
        if mode == "packet":
            assert abs(fct_ns - standalone_ns) <= max(1, standalone_ns // 10_000), (size, fct_ns, standalone_ns)
            assert f"{json.loads((out / 'summary.json').read_text())['slowdown']['mean']:.3f}" == "1.000"
        else:  # fast-forwarded: Wormhole's own error (HPCC's slow drift to U_TARGET: 0.2% at 3 MB)
            assert abs(fct_ns - standalone_ns) <= standalone_ns * 0.003, (size, fct_ns, standalone_ns)


def test_standalone_of_a_route_of_zero_delay_links(tmp_path):
    """Two hosts joined through their switch by zero-delay links (the rest of the fabric has
    1 us links, so the run's window is 1 us): the lone copy of their route takes the run's
    window instead of failing to find one of its own."""
    (tmp_path / "topo.txt").write_text("6 1 5\n2\n0 2 100Gbps 0ns 0\n1 2 100Gbps 0ns 0\n3 2 100Gbps 1us 0\n"
                                       "4 2 100Gbps 1us 0\n5 2 100Gbps 1us 0\n")
    (tmp_path / "flow.txt").write_text("1\n0 1 3 100 100000 0\n")
    out = tmp_path / "out"
    assert cli.main(["run", "--topology", str(tmp_path / "topo.txt"), "--flows", str(tmp_path / "flow.txt"),
                     "--cc", "dcqcn", "--mode", "packet", "--out", str(out), "--no-progress"]) == 0
    cols = (out / "fct.txt").read_text().split()
    assert int(cols[6]) == int(cols[7]) > 0
