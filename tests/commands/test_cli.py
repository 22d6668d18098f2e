"""CLI behaviour: default run, outputs, user errors as one line with exit 2."""

import dataclasses
import gc
import json
import os
import subprocess
import sys

import numpy as np
import pytest
from helpers import ROOT

from pwormhole import options
from pwormhole.commands import scale
from pwormhole.commands.cli import build_parser, command_of
from pwormhole.commands.cli import main as cli_main
from pwormhole.report import compare as report_compare
from pwormhole.workload import gen_flows

DATA = ROOT / "tests" / "data" / "hpcc"


def cli(*args):
    return subprocess.run([sys.executable, "-m", "pwormhole", *map(str, args)], capture_output=True, text=True,
                          cwd=ROOT, timeout=300)


@pytest.mark.slow
def test_flow_mix_run_writes_outputs(tmp_path):
    r = cli("run", "--scenario", "fat-tree-mix", "--out", tmp_path, "--no-progress")
    assert r.returncode == 0, r.stderr
    s = json.loads((tmp_path / "summary.json").read_text())
    for key in ("mode", "ranks", "sim_time_ps", "wall_s", "events", "events_per_s", "flows", "flows_finished",
                "fct_ns", "slowdown", "bytes_sent", "bytes_delivered", "drops", "pfc_pauses"):
        assert key in s
    assert s["mode"] == "wormhole" and s["ranks"] == 1 and s["complete"]  # the default mode
    assert s["flows"] == s["flows_finished"] == len((tmp_path / "fct.txt").read_text().splitlines())
    assert set(s["fct_ns"]) == {"mean", "p50", "p99", "max"}
    assert s["fct_ns"]["p50"] <= s["fct_ns"]["p99"] <= s["fct_ns"]["max"]
    assert s["slowdown"]["mean"] >= 1.0
    assert not list(tmp_path.glob("*.part"))


def test_the_process_ends_with_main_s_status_and_all_its_output(tmp_path):
    """The console entry ends the process itself (no teardown): a run's last line is there when its
    output is a pipe, and an error's status is 2 with stdout or stderr closed."""
    r = cli("run", "--scenario", "fat-tree-mix", "--out", tmp_path / "o", "--no-progress")
    assert r.returncode == 0 and r.stdout.splitlines()[-1] == f"outputs in {tmp_path / 'o'}/", r.stderr
    for fd in (1, 2):  # (closed before the interpreter starts: sys.stdout or sys.stderr is None)
        p = subprocess.run([sys.executable, "-m", "pwormhole", "report", str(tmp_path / "none")], cwd=ROOT,
                           timeout=60, preexec_fn=lambda fd=fd: os.close(fd), capture_output=False)
        assert p.returncode == 2, fd


def test_until_stops_early_and_says_so(tmp_path):
    r = cli("run", "--scenario", "fat-tree-mix", "--out", tmp_path, "--until", "50us", "--no-progress")
    assert r.returncode == 0
    s = json.loads((tmp_path / "summary.json").read_text())
    assert not s["complete"] and s["flows_finished"] < s["flows"]
    assert s["sim_time_ps"] == 50_000_000
    assert "unfinished" in r.stdout


def test_until_before_the_first_flow_says_the_stop_time_is_absolute(tmp_path):
    """HPCC's flow files start at 2 s; ``--until 1ms`` stops before any flow starts."""
    flows = tmp_path / "flows.txt"
    flows.write_text("2\n0 1 3 100 1000 2.0\n2 3 3 100 1000 2.5\n")
    r = cli("run", "--topology", "fat-tree:k=4", "--flows", flows, "--until", "1ms", "--out", tmp_path / "o",
            "--no-progress")
    assert r.returncode == 0, r.stderr
    assert ("stopped at 1.000 ms with 2 flows unfinished (before the first flow starts at 2.000 s: the stop time "
            "is absolute, as HPCC's SIMULATOR_STOP_TIME)") in r.stdout


def _write_variant(tmp_path, name, transform):
    src = DATA / "reference" / "s1_hpcc"
    for f in ("config.txt", "topology.txt", "flow.txt", "trace.txt"):
        (tmp_path / f).write_bytes((src / f).read_bytes())
    p = tmp_path / name
    p.write_text(transform(p.read_text()))
    return tmp_path / "config.txt"


@pytest.mark.parametrize("name,transform,needle", [
    ("flow.txt", lambda s: s.replace("2 1 3 100 200000000 2", "2 1 3 100 -5 2", 1), "-5"),
    ("flow.txt", lambda s: s.replace("2 1 3 100", "2 70 3 100", 1), "70"),
    ("flow.txt", lambda s: s.replace("2 1 3 100", "2 0 3 100", 1), "switch"),
    ("topology.txt", lambda s: s.replace("0 1 100Gbps", "0 1 0Gbps", 1), "0Gbps"),
    ("topology.txt", lambda s: "\n".join(s.splitlines()[:5]), "topology.txt"),
    ("config.txt", lambda s: s.replace("CC_MODE 3", "CC_MODE 10"), "CC_MODE"),
    ("config.txt", lambda s: s.replace("KMIN_MAP 3 25000000000 100 50000000000 200 100000000000 400",
                                       "KMIN_MAP 2 25000000000 100 50000000000 200"), "KMIN_MAP"),
])
def test_bad_input_is_one_line_exit_2(tmp_path, name, transform, needle):
    cfg = _write_variant(tmp_path, name, transform)
    out = tmp_path / "out"
    r = cli("run", "--hpcc-config", cfg, "--out", out)
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("pwormhole: error:"), r.stderr
    assert "Traceback" not in r.stderr
    assert needle in lines[0]
    assert not out.exists()  # the folder made for the run is removed again: nothing left behind


@pytest.mark.parametrize("args,needle", [
    (["--mode", "wormhol"], "argument --mode: invalid choice: 'wormhol'"),
    (["--topology", "rail-optimised:gpus=8"],
     "'rail-optimised' is not a builder (known: rail-optimized, spectrum-x, alibaba-hpn, fat-tree"),
    (["--topology", "rail-optimised"], "no such file, and 'rail-optimised' is not a builder"),
    (["--topology", "rail-optimized:gpu=8"], "rail-optimized needs gpus=... (unknown: gpu)"),
    (["--topology", "rail-optimized:gpus=8,planes=2"], "unknown key(s) planes for rail-optimized"),
    (["--topology", "alibaba-hpn:gpus=8,planes=3"], "alibaba-hpn:gpus=8,planes=3: planes must be 1 or 2"),
    (["--topology", "alibaba-hpn:gpus=8,planes=2,spines=3"],
     "2 needs an even number of spines (got planes=2, spines=3)"),
])
def test_option_mistakes_are_one_line_and_leave_no_folder(tmp_path, args, needle):
    out = tmp_path / "new" / "out"
    r = cli("run", "--model", "gpt-350m", "--gpus", "8", *args, "--out", out)
    assert r.returncode == 2 and r.stderr.startswith("pwormhole: error:") and r.stderr.count("\n") == 1, r.stderr
    assert needle in r.stderr and not (tmp_path / "new").exists()  # the folders made for the run, removed
    out.mkdir(parents=True)  # folders that were there before stay
    assert cli("run", "--model", "gpt-350m", "--gpus", "8", *args, "--out", out).returncode == 2 and out.is_dir()


@pytest.mark.skipif(os.geteuid() == 0, reason="root can write anywhere; covered by the file-as-folder case")
def test_unwritable_out_dir_readonly(tmp_path):
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    r = cli("run", "--out", ro / "x")
    assert r.returncode == 2 and "cannot write output folder" in r.stderr


def test_out_dir_that_is_a_file_fails_before_simulating(tmp_path):
    f = tmp_path / "afile"
    f.write_text("x")
    r = cli("run", "--out", f / "sub")
    assert r.returncode == 2
    assert r.stderr.startswith("pwormhole: error: cannot write output folder")
    assert r.stdout == ""  # nothing simulated, nothing printed


def test_wormhole_flags_in_packet_mode_are_a_clear_error(tmp_path):
    r = cli("run", "--mode", "packet", "--theta", "0.1", "--out", tmp_path)
    assert r.returncode == 2 and "--theta applies to --mode wormhole only" in r.stderr
    r = cli("run", "--theta", "2", "--out", tmp_path)
    assert r.returncode == 2 and "--theta must be between 0 and 1" in r.stderr


def test_ns3_time_is_for_packet_mode_only(tmp_path):
    r = cli("run", "--ns3-time", "--out", tmp_path / "a")
    assert r.returncode == 2 and "--ns3-time applies to --mode packet only" in r.stderr and r.stdout == ""
    r = cli("compare", "--ns3-time", "--out", tmp_path / "b")
    assert r.returncode == 2 and "--ns3-time applies to --mode packet only" in r.stderr and r.stdout == ""
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()


def test_cc_applies_to_flow_files(tmp_path):
    flows = ROOT / "tests" / "data" / "wormhole" / "fat_tree_pairs.txt"
    for cc in ("dcqcn", "hpcc"):
        r = cli("run", "--topology", "fat-tree:k=4", "--flows", flows, "--cc", cc, "--until", "20us", "--out",
                tmp_path / cc, "--no-progress")
        assert r.returncode == 0, r.stderr
        assert json.loads((tmp_path / cc / "summary.json").read_text())["cc"] == cc
        assert "iteration time" not in r.stdout  # a flow list has no iterations


def test_cc_applies_to_the_embedded_scenarios_and_conflicts_with_hpcc_config(tmp_path):
    r = cli("run", "--scenario", "fat-tree-mix", "--cc", "hpcc", "--until", "20us", "--out", tmp_path / "m",
            "--no-progress")
    assert r.returncode == 0, r.stderr
    assert json.loads((tmp_path / "m" / "summary.json").read_text())["cc"] == "hpcc"
    r = cli("run", "--cc", "hpcc", "--nvlink-cc", "nic", "--fluid-nvlink", "--out", tmp_path / "f")  # default GPT
    assert r.returncode == 2 and "HPCC also runs on NVLink" in r.stderr and "Traceback" not in r.stderr
    r = cli("run", "--hpcc-config", ROOT / "tests" / "data" / "hpcc" / "mix" / "config.txt", "--cc", "dcqcn",
            "--out", tmp_path / "h")
    assert r.returncode == 2 and "--cc and --hpcc-config both set the congestion control" in r.stderr


def test_options_that_were_taken_silently_or_with_a_traceback(tmp_path):
    """--config beside --hpcc-config (it was ignored), --monitor-limit 0 (a division by zero),
    --scenario beside input files (it was ignored) and gen-flows with a negative seed (numpy's
    error): one line each, exit 2, nothing written."""
    mix = ROOT / "tests" / "data" / "hpcc" / "mix"
    cases = [
        (("run", "--hpcc-config", mix / "config.txt", "--config", mix / "config.txt", "--out", tmp_path / "a"),
         "--config and --hpcc-config are both a run's configuration; give one"),
        (("run", "--scenario", "fat-tree-mix", "--monitor", "--monitor-limit", "0", "--out", tmp_path / "b"),
         "--monitor-limit must be more than 0 bytes, got '0'"),
        (("run", "--scenario", "fat-tree-mix", "--hpcc-config", mix / "config.txt", "--out", tmp_path / "c"),
         "--scenario runs an embedded scenario, not the input files given; give one or the other"),
        (("run", "--scenario", "fat-tree-mix", "--until", "", "--out", tmp_path / "f"),
         "--until is empty: give a time (e.g. 2.01 for seconds, 50us)"),
        (("run", "--scenario", "fat-tree-mix", "--link-down", "1us:16-24", "--link-down", "1us:24-16", "--out",
          tmp_path / "h"), "--link-down '1us:24-16': that link already fails then (given twice)"),
        (("run", "--scenario", "fat-tree-mix", "--seed", "18446744073709551616", "--out", tmp_path / "e"),
         "--seed must be within +-(2^63 - 1), got 18446744073709551616"),
        (("run", "--topology", mix / "topology.txt", "--flows", mix / "flow.txt", "--format", "chakra", "--out",
          tmp_path / "d"), "--format chakra is a workload's format (--workload), not a topology's (hpcc, simai, "
         "htsim) nor a flow file's (hpcc, htsim)"),
        (("gen-flows", "--cdf", ROOT / "tests" / "data" / "traffic_gen" / "WebSearch_distribution.txt", "--load",
          "0.3", "--duration", "100us", "--hosts", "4", "--rate", "100Gbps", "--seed", "-5", "--out",
          tmp_path / "g.txt"), "--seed must be >= 0, got -5"),
    ]
    for args, message in cases:
        r = cli(*args)
        assert r.returncode == 2 and r.stderr.strip() == f"pwormhole: error: {message}", r.stderr
    assert list(tmp_path.iterdir()) == []


def test_version_prints_the_version_and_the_commit():
    for flag in ("--version", "-V"):
        r = cli(flag)
        assert r.returncode == 0, r.stderr
        head = subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], capture_output=True, text=True,
                              cwd=ROOT).stdout.strip()
        assert r.stdout.startswith("pwormhole 0.1.0 (commit ") and (not head or head in r.stdout), r.stdout


def test_strict_refuses_a_misspelt_config_key_and_writes_nothing(tmp_path):
    """Without --strict a misspelt key warns with the key it resembles and the run goes on with the
    default; with --strict: exit 2, one line naming the file and line, no output folder."""
    inc = ROOT / "tests" / "data" / "incast"
    conf = tmp_path / "config.txt"
    lines = (inc / "pfc_config.txt").read_text().splitlines()
    conf.write_text("\n".join([*lines, "CC_MODEE 3"]) + "\n")
    args = ["--topology", inc / "star9_topology.txt", "--flows", inc / "incast8_flows.txt", "--config", conf,
            "--mode", "packet", "--no-progress"]
    r = cli("run", *args, "--out", tmp_path / "warned")
    assert r.returncode == 0, r.stderr
    assert f"{conf}:{len(lines) + 1}: unknown key CC_MODEE ignored (did you mean CC_MODE?)" in r.stderr
    r = cli("run", *args, "--strict", "--out", tmp_path / "refused")
    assert r.returncode == 2
    assert r.stderr.strip().splitlines() == [
        f"pwormhole: error: {conf}:{len(lines) + 1}: unknown key CC_MODEE (did you mean CC_MODE?); "
        "--strict refuses unknown keys"]
    assert not (tmp_path / "refused").exists()


def test_lps_in_one_process_are_not_called_ranks(tmp_path):
    """--lps 3 runs 3 LPs in one process: summary.json has ranks 1 and lps 3, and the console says both."""
    inc = ROOT / "tests" / "data" / "incast"
    r = cli("run", "--topology", inc / "star9_topology.txt", "--flows", inc / "incast8_flows.txt", "--config",
            inc / "pfc_config.txt", "--lps", "3", "--out", tmp_path, "--no-progress")
    assert r.returncode == 0, r.stderr
    s = json.loads((tmp_path / "summary.json").read_text())
    assert (s["ranks"], s["lps"]) == (1, 3)
    assert r.stdout.splitlines()[0].endswith("ranks 1  LPs 3")


def test_help_lists_every_command_without_loading_numpy():
    """``--help`` names gen-flows and scale without building their parsers (their modules load numpy),
    with the words their own parsers give; each of them, when it is the command, gets its own parser."""
    code = ("import sys\nfrom pwormhole.commands import cli\ntry:\n    cli.main(['--help'])\nexcept SystemExit:\n"
            "    pass\nprint('numpy loaded:', 'numpy' in sys.modules)")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert r.returncode == 0 and "gen-flows" in r.stdout and "scale" in r.stdout, r.stderr
    assert r.stdout.rstrip().endswith("numpy loaded: False")
    lazy = build_parser().format_help()
    assert build_parser("gen-flows").format_help() == lazy == build_parser("scale").format_help()
    args = build_parser("gen-flows").parse_args(["gen-flows", "--cdf", "c", "--load", "0.5", "--duration", "1ms",
                                                 "--out", "f"])
    assert args.func is gen_flows.main and build_parser("scale").parse_args(["scale"]).func is scale.main
    assert command_of(["-V"]) is None and command_of(["scale", "--ranks", "1,2"]) == "scale"


def test_pngs_without_matplotlib(tmp_path, monkeypatch, capsys):
    """matplotlib is optional (report.html draws its own figures): --plot is refused before anything is
    made, and compare's fct_error_cdf.png is left out."""
    monkeypatch.setattr(options, "matplotlib_installed", lambda: False)
    out = tmp_path / "o"
    assert cli_main(["run", "--scenario", "fat-tree-mix", "--plot", "--out", str(out), "--no-progress"]) == 2
    assert "--plot draws timeline.png with matplotlib, which is not installed" in capsys.readouterr().err
    assert not out.exists()
    monkeypatch.setattr(report_compare, "matplotlib_installed", lambda: False)
    assert report_compare.plot_cdf(str(tmp_path / "cdf.png"), np.array([0.01]), "t") is False
    assert not (tmp_path / "cdf.png").exists()


def test_under_mpi_a_refused_run_leaves_its_folder_to_the_agreement(tmp_path):
    """Every rank checks the output folder: a rank refused first must not remove it while another
    rank still writes its probe there (that rank then said 'cannot write output folder', and the
    agreed error came out as 'rank 0: ...'). Under a communicator the caller removes it, after
    every rank has agreed; without one, prepare_run does."""
    class FourRanks:
        rank, size = 0, 4

    (tmp_path / "t.txt").write_text("3 1 2\n2\n0 2 100Gbps 1000ns 0\n1 2 100Gbps 1000ns 0\n")  # 3 units
    (tmp_path / "f.txt").write_text("1\n0 1 3 100 10000 0\n")
    opts = options.RunOptions(topology=str(tmp_path / "t.txt"), flows=str(tmp_path / "f.txt"),
                              out=str(tmp_path / "o"))
    made: list = [None]
    with pytest.raises(options.InputError, match="4 ranks for a topology of 3 indivisible units"):
        options.prepare_run(opts, FourRanks(), made)
    assert (tmp_path / "o").is_dir() and made[0] == (str(tmp_path / "o"), str(tmp_path / "o"))
    for comm in (FourRanks(), None):  # no list to hand it back in, or no MPI: removed at once
        with pytest.raises(options.InputError):
            options.prepare_run(dataclasses.replace(opts, out=str(tmp_path / "p"), lps=0), comm)
        assert not (tmp_path / "p").exists()


def test_run_in_process_leaves_the_garbage_collector_as_it_was(tmp_path):
    """The set-up and the run pause Python's cyclic collector (pwormhole.gcpause); ``main`` called from
    Python gives it back on and off as it found it (only the console script leaves it off, then exits)."""
    for enabled in (True, False):
        (gc.enable if enabled else gc.disable)()
        try:
            assert cli_main(["run", "--scenario", "fat-tree-mix", "--out", str(tmp_path / str(enabled)),
                             "--no-progress"]) == 0
            assert gc.isenabled() is enabled
        finally:
            gc.enable()


def test_messages_that_named_the_wrong_cause(tmp_path):
    """--flows without --topology said '--topology needs --flows'; report of a file said the folder
    does not exist; an empty --out wrote into the default folder."""
    flows = ROOT / "tests" / "data" / "incast" / "incast8_flows.txt"
    for args, message in ((("run", "--flows", flows, "--out", tmp_path / "a"), "--flows needs --topology"),
                          (("report", flows), f"output folder '{flows}' is a file, not a folder"),
                          (("run", "--scenario", "fat-tree-mix", "--out", ""), "--out is empty: give a folder")):
        r = cli(*args)
        assert r.returncode == 2 and r.stderr.strip() == f"pwormhole: error: {message}", r.stderr
    assert list(tmp_path.iterdir()) == []
