"""Runs that cannot progress, and runs stopped by a signal."""

import json
import signal
import subprocess
import sys
import time

import pytest
from helpers import G100, ROOT, US, config, flows_of, star_topo

from pwormhole.commands import cli
from pwormhole.errors import InputError, StuckError
from pwormhole.run import Run
from pwormhole.scenario import Scenario
from pwormhole.simulate import simulate
from pwormhole.topology.model import Link, Topology


def test_unreachable_host_is_refused_before_simulating():
    topo = Topology(5, frozenset({3, 4}), [Link(0, 3, G100, US), Link(1, 3, G100, US), Link(2, 4, G100, US)])
    with pytest.raises(InputError, match="flow 0: host 2 is unreachable from host 0"):
        Run(Scenario("t", topo, flows_of([(0, 2, 1000, 0)]), config()))


def _pause_forever(run):
    """A NIC whose priority 3 is paused and never resumed (a PFC storm that never ends)."""
    run.net.nodes[0].ports[0].paused[3] = True


def test_pfc_paused_sender_is_detected_with_its_flows_and_ports(tmp_path, monkeypatch):
    orig = Run.__init__

    def init(self, *a, **kw):
        orig(self, *a, **kw)
        _pause_forever(self)

    monkeypatch.setattr(Run, "__init__", init)
    scn = Scenario("t", star_topo(3), flows_of([(0, 2, 100_000, 0), (1, 2, 50_000, 0)]), config())
    with pytest.raises(StuckError) as e:
        simulate(scn, str(tmp_path), quiet=True)
    msg = str(e.value)
    assert "stuck flows: 0 (0->2, 0/100000 B)" in msg and "paused ports: node 0 port 1 prio [3]" in msg
    s = json.loads((tmp_path / "summary.json").read_text())
    assert not s["complete"] and s["flows_finished"] == 1  # flow 1 (host 1) finished; its line is kept
    assert s["stuck"]["paused_ports"] == [{"node": 0, "port": 1, "priorities": [3]}]
    assert len((tmp_path / "fct.txt").read_text().splitlines()) == 1 and not list(tmp_path.glob("*.part"))
    # via the CLI: exit status 3 and one message
    out = tmp_path / "cli"
    assert cli.main(["run", "--scenario", "fat-tree-mix", "--mode", "packet", "--out", str(out), "--no-progress"]) == 3


def test_all_senders_paused_stops_at_once_not_at_the_stop_time():
    """Nothing left to simulate while flows are unfinished: stopped at once (the stall bound is the other path)."""
    scn = Scenario("t", star_topo(3), flows_of([(0, 2, 100_000, 0), (1, 2, 10**9, 0)]), config())
    run = Run(scn)
    run.stall_ps = 2 * 10**9
    _pause_forever(run)
    run.net.nodes[1].ports[0].paused[3] = True
    run.run(until_ps=10**12)
    assert run.stuck is not None and run.stuck["at_ps"] <= 4 * 10**9
    assert {f["flow"] for f in run.stuck["flows"]} == {0, 1}


@pytest.mark.parametrize("sig,code,name", [(signal.SIGTERM, 143, "SIGTERM"), (signal.SIGINT, 130, "SIGINT")])
def test_signal_flushes_outputs(tmp_path, sig, code, name):
    # a test runner started in the background (`cmd &` in a script) hands its children SIGINT
    # ignored, and Python then leaves it ignored: restore the default so the run sees it
    p = subprocess.Popen([sys.executable, "-m", "pwormhole", "run", "--scenario", "gpt-350m-16gpu", "--mode", "packet",
                          "--out", tmp_path, "--no-progress"], cwd=ROOT, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True,
                         preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + 60
    while not list(tmp_path.glob("fct.txt.part")) and time.monotonic() < deadline:
        time.sleep(0.1)
    time.sleep(1.5)  # mid-run: this scenario simulates for about 12 s
    p.send_signal(sig)
    _, err = p.communicate(timeout=60)
    assert p.returncode == code, err
    assert f"({name})" in err and "Traceback" not in err
    s = json.loads((tmp_path / "summary.json").read_text())
    assert s["complete"] is False and s["interrupted"] == name
    assert s["sim_time_ps"] > 0  # where it stopped
    assert s["flows_finished"] == len((tmp_path / "fct.txt").read_text().splitlines()) > 0
