"""The Python API (``pwormhole.api``): the same run as the command, its results as Python objects."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import ROOT

from pwormhole.api import load, simulate
from pwormhole.errors import InputError
from pwormhole.options import RunOptions

MODEL = {"model": "gpt-350m", "gpus": 16, "tp": 8, "layers": 2, "dist_opt": True}


def test_options_of_keywords_are_typed_and_keep_their_command_line():
    opts = RunOptions.of_keywords(model="gpt-7b", gpus=64, dist_opt=True, plot=False, until=None, hpcc_config="c.txt",
                                  out=Path("o"), link_down="5us:1-2")
    assert (opts.model, opts.gpus, opts.dist_opt, opts.plot, opts.until, opts.out) == ("gpt-7b", 64, True, False, None,
                                                                                      "o")
    assert opts.link_down == ("5us:1-2",)
    assert opts.argv == ["run", "--model", "gpt-7b", "--gpus", "64", "--dist-opt", "--hpcc-config", "c.txt", "--out",
                         "o", "--link-down", "5us:1-2"]


def test_simulate_is_the_command_run(tmp_path):
    res = simulate(**MODEL, out=str(tmp_path / "api"))
    s = res.summary
    assert s["complete"] and s["mode"] == "wormhole" and len(s["gpus"]) == 16
    assert s["inputs"]["command"] == ("pwormhole run --model gpt-350m --gpus 16 --tp 8 --layers 2 --dist-opt "
                                      f"--out {tmp_path / 'api'}")
    assert len(res.fcts.fct_ns) == s["flows_finished"] == s["flows"]
    assert res.fcts.fct_ns.max() * 1000 <= s["sim_time_ps"]
    assert len(res.collectives) == s["collectives"]["count"]
    assert {r["kind"] for r in res.collectives} == {"allreduce", "reducescatter", "allgather"}
    assert {r["gpu"] for r in res.timeline} == set(range(16))  # numbers typed
    assert all(isinstance(c["busbw_gbps"], float) and c["busbw_gbps"] > 0 for c in res.collectives)
    # printed (a notebook cell's value): one line, not every row
    assert repr(res) == (f"Result(out_dir={str(tmp_path / 'api')!r}, scenario={s['scenario']!r}, mode='wormhole', "
                         f"flows_finished={s['flows']}, iteration_time_ns={s['iteration_time_ns']}, "
                         f"collectives=<{len(res.collectives)} rows>, timeline=<{len(res.timeline)} rows>)")
    # the command gives the same fct.txt
    r = subprocess.run([sys.executable, "-m", "pwormhole", "run", "--model", "gpt-350m", "--gpus", "16", "--tp", "8",
                        "--layers", "2", "--dist-opt", "--out", str(tmp_path / "cli"),
                        "--no-progress"], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "cli" / "fct.txt").read_bytes() == (tmp_path / "api" / "fct.txt").read_bytes()
    cli_summary = json.loads((tmp_path / "cli" / "summary.json").read_text())
    assert cli_summary["iteration_time_ns"] == s["iteration_time_ns"]
    # a finished folder loads back; its report is written on demand
    again = load(str(tmp_path / "cli"))
    assert again.summary["events"] == cli_summary["events"] and again.pfc is not None
    assert Path(again.report()).name == "report.html" and (tmp_path / "cli" / "report.html").is_file()


def test_simulate_errors_are_input_errors(tmp_path):
    with pytest.raises(InputError, match=r"^--gpus 16 is not divisible by tp\*pp = 3\*1 = 3$"):
        simulate(out=str(tmp_path / "x"), model="gpt-7b", gpus=16, tp=3)
    with pytest.raises(InputError, match="simulate\\(\\) got an unexpected keyword argument 'colour'"):
        simulate(out=str(tmp_path / "x"), colour="blue")
    with pytest.raises(InputError, match="--mode must be one of wormhole, packet, got 'fast'"):
        simulate(out=str(tmp_path / "x"), mode="fast")
    out = tmp_path / "new" / "out"  # refused once the outputs are named: the folders made for it go again
    with pytest.raises(InputError, match="is the name of an output of pwormhole"):
        simulate(out=str(out), model="gpt-350m", gpus=8, memo_cache=str(out / "fct.txt"))
    assert not (tmp_path / "new").exists() and not (tmp_path / "x").exists()


def test_flows_as_columns_and_a_dataframe_nic_apart_from_nvlink(tmp_path):
    """A 16-GPU run in two servers of 8: a flow is NVLink exactly when both ends are in one server;
    slowdown is FCT / standalone; the DataFrame holds the same columns."""
    pd = pytest.importorskip("pandas")  # in the 'all' extra that CI installs
    res = simulate(**MODEL, out=str(tmp_path / "r"))
    cols = res.flow_columns()
    s = res.summary
    inside = (cols["src"] // 8) == (cols["dst"] // 8)
    assert (cols["nvlink"] == inside).all()
    assert int(cols["nvlink"].sum()) == s["nvlink"]["flows"] and int((~cols["nvlink"]).sum()) == s["nic"]["flows"]
    assert (cols["slowdown"] == cols["fct_ns"] / cols["standalone_ns"]).all() and (cols["slowdown"] >= 1).all()
    df = res.flows_frame()
    assert list(df.columns) == ["src", "dst", "size_bytes", "start_ns", "fct_ns", "standalone_ns", "slowdown", "nvlink"]
    assert len(df) == s["flows"] and df["size_bytes"].sum() == cols["size_bytes"].sum()
    assert df.groupby("nvlink")["fct_ns"].count().to_dict() == {False: s["nic"]["flows"], True: s["nvlink"]["flows"]}
    assert isinstance(df, pd.DataFrame) and res.link_util() is None and res.qlen() is None


def test_a_flow_list_run_has_empty_collectives_and_its_monitors(tmp_path):
    """A flow-list run has no collectives or timeline ([] not None); with --monitor its link_util.csv and
    qlen.txt read back: no interval carries more than its link's capacity and one packet, and the bytes
    add up to at least the payload delivered."""
    inc = ROOT / "tests" / "data" / "incast"
    res = simulate(topology=str(inc / "star9_topology.txt"), flows=str(inc / "incast8_flows.txt"),
                   config=str(inc / "pfc_config.txt"), monitor=True, out=str(tmp_path / "m"))
    assert res.collectives == [] and res.timeline == []
    u, q = res.link_util(), res.qlen()
    assert u is not None and q is not None and len(u.time_ns) > 0
    busy = u.utilization > 0
    capacity_bytes = u.bytes[busy] / u.utilization[busy]  # the link's bytes per interval
    assert (u.bytes[busy] <= capacity_bytes + 1100).all()  # a packet counts whole where it starts: one over at most
    assert int(u.bytes.sum()) >= res.summary["bytes_delivered"]
    assert q.ports and all(h.sum() > 0 for h in q.ports.values())


def test_a_runoptions_made_by_hand_is_checked_as_keywords_are(tmp_path):
    """RunOptions(gpus="16") raised TypeError deep in the set-up, monitor="no" ran with the monitors
    on, a dict or a string as the options an AttributeError; load(None) a TypeError: InputErrors
    now, before any folder is made."""
    cases = [(lambda: simulate(RunOptions(model="gpt-350m", gpus="16", tp=8, layers=1, out=str(tmp_path / "a"))),
              "simulate(): gpus must be an int, not str '16'"),
             (lambda: simulate(RunOptions(scenario="fat-tree-mix", monitor="no", out=str(tmp_path / "b"))),
              "simulate(): monitor must be True or False, not str 'no'"),
             (lambda: simulate({"model": "gpt-350m"}), "simulate() takes a RunOptions as its one positional argument"),
             (lambda: simulate("gpt-350m"), "simulate() takes a RunOptions as its one positional argument"),
             (lambda: load(None), "load() takes an output folder's path, not NoneType None")]
    for call, message in cases:
        with pytest.raises(InputError) as e:
            call()
        assert str(e.value).startswith(message), str(e.value)
    assert list(tmp_path.iterdir()) == []
