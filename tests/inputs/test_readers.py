"""HPCC ns-3 input readers: topology, flow, trace and config files.

The real files are copies (tests/data/hpcc/, see SOURCES.md there) of HPCC's
``simulation/mix`` examples, of the inputs of the HPCC ns-3 reference runs and
of ns-3-alibabacloud's incast example. Malformed variants are generated from
them in ``tmp_path``.
"""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

import pytest
from helpers import ROOT

from pwormhole.config import ModelConfig
from pwormhole.errors import InputError
from pwormhole.inputs.hpcc_config import check_k_maps, read_hpcc_config
from pwormhole.scenario import hpcc_run_name
from pwormhole.topology.hpcc import read_hpcc_topology
from pwormhole.topology.model import Link
from pwormhole.units import MAX_TIME_PS
from pwormhole.workload.flows import Flow
from pwormhole.workload.hpcc_flows import read_hpcc_flows, read_hpcc_trace

DATA = ROOT / "tests" / "data" / "hpcc"
MIX = DATA / "mix"
REF = DATA / "reference"
ALI = DATA / "ns3-alibabacloud" / "mix" / "incast"

G = 10**9
US = 10**6
S = 10**12


@pytest.fixture
def shared_dir() -> Path:
    """The project's ``shared/`` folder, a sibling of the repository root."""
    p = ROOT.parent / "shared"
    if not p.is_dir():
        pytest.skip(f"shared/ not found beside the repository root ({p}); the copies in tests/data are used")
    return p


@pytest.fixture
def mix_copy(tmp_path: Path) -> Path:
    """A writable copy of HPCC's mix/ folder at tmp_path/mix."""
    dst = tmp_path / "mix"
    shutil.copytree(MIX, dst)
    for f in dst.iterdir():
        f.chmod(0o644)
    return dst


def lines_of(path: Path) -> list[str]:
    return path.read_text().splitlines()


def write_variant(src: Path, dst: Path, edits: dict[int, str] | None = None, keep: int | None = None) -> Path:
    """Copy ``src`` to ``dst`` with 1-based line ``n`` replaced by ``edits[n]``, or cut after ``keep`` lines."""
    lines = lines_of(src)
    for n, text in (edits or {}).items():
        lines[n - 1] = text
    if keep is not None:
        lines = lines[:keep]
    dst.parent.mkdir(parents=True, exist_ok=True)
    dst.write_text("\n".join(lines) + "\n")
    return dst


def raises_at(fn, path: Path, line: int | None, *values: str) -> InputError:
    """Call ``fn``; it must raise InputError naming ``path``'s name, ``line`` and each of ``values``."""
    with pytest.raises(InputError) as ei:
        fn()
    msg = str(ei.value)
    assert path.name in msg, msg
    if line is not None:
        assert f"{path.name}:{line}:" in msg, msg
        assert ei.value.line == line
    for v in values:
        assert v in msg, (v, msg)
    return ei.value


def crlf_tabs(src: Path, dst: Path) -> Path:
    """The same content with tabs between tokens and CRLF line ends."""
    text = "\r\n".join("\t".join(l.split(" ")) for l in lines_of(src)) + "\r\n"
    dst.write_bytes(text.encode())
    return dst


# --------------------------------------------------------------------------- copies


def test_copies_match_shared(shared_dir: Path):
    pairs = [(MIX, shared_dir / "real_inputs/hpcc/mix"),
             (ALI, shared_dir / "real_inputs/ns3-alibabacloud/mix/incast")]
    pairs += [(REF / s, shared_dir / "reference/hpcc-ns3" / s) for s in ("s1_hpcc", "s2_dcqcn", "s3_dcqcn")]
    for ours, theirs in pairs:
        for f in ours.iterdir():
            assert f.read_bytes() == (theirs / f.name).read_bytes(), f


# --------------------------------------------------------------------------- topology


def test_topology_star():
    t = read_hpcc_topology(MIX / "topology.txt")
    assert t.n_nodes == 66
    assert t.switches == frozenset({0})
    assert len(t.links) == 65  # the file lists more rows and a footer: not read
    assert all(l.rate_bps == 100 * G and l.delay_ps == 1_000_000 and l.error_rate == 0.0 for l in t.links)
    assert t.links[0] == Link(0, 1, 100 * G, 1_000_000, 0.0)
    assert [l.b for l in t.links] == list(range(1, 66))
    assert t.name == "topology" and t.source == str(MIX / "topology.txt")
    assert t.hosts == list(range(1, 66))


def test_topology_fat_tree():
    t = read_hpcc_topology(MIX / "fat.txt")
    assert (t.n_nodes, len(t.switches), len(t.links)) == (376, 56, 480)
    assert t.switches == frozenset(range(320, 376))
    for l in t.links:
        host_link = not (t.is_switch(l.a) and t.is_switch(l.b))
        assert l.rate_bps == (100 * G if host_link else 400 * G)
        assert l.delay_ps == 1_000_000
    assert sum(1 for l in t.links if l.rate_bps == 100 * G) == 320
    assert t.name == "fat"


def test_topology_ali_dual_homed():
    t = read_hpcc_topology(MIX / "ali_32host_10rack.txt")
    assert (t.n_nodes, len(t.switches), len(t.links)) == (348, 28, 800)
    host_links = [l for l in t.links if not t.is_switch(l.a)]
    assert len(host_links) == 640 and all(l.rate_bps == 25 * G for l in host_links)
    assert all(l.rate_bps == 100 * G for l in t.links if t.is_switch(l.a))


def test_topology_crlf_tabs_and_wrapped_switch_ids(tmp_path: Path):
    ref = read_hpcc_topology(MIX / "fat.txt")
    v = read_hpcc_topology(crlf_tabs(MIX / "fat.txt", tmp_path / "fat.txt"))
    assert (v.n_nodes, v.switches, v.links) == (ref.n_nodes, ref.switches, ref.links)
    # switch ids one per line, link rows split over lines: a token stream
    lines = lines_of(MIX / "fat.txt")
    text = lines[0] + "\n" + "\n".join(lines[1].split()) + "\n" + "\n".join(
        " ".join(l.split()[:2]) + "\n  " + " ".join(l.split()[2:]) for l in lines[2:]) + "\n"
    (tmp_path / "wrapped.txt").write_text(text)
    w = read_hpcc_topology(tmp_path / "wrapped.txt")
    assert (w.switches, w.links) == (ref.switches, ref.links)


def test_topology_units_and_parallel_links(tmp_path: Path):
    p = tmp_path / "t.txt"
    p.write_text("4 1 4\n0\n0 1 25Gb/s 1us 0\n0 2 40000000000 0.000002 0.01\n0 3 100Gbps 500ns 0\n"
                 "0 3 100Gbps 500ns 0\n")
    t = read_hpcc_topology(p)
    assert [(l.rate_bps, l.delay_ps, l.error_rate) for l in t.links] == [
        (25 * G, 1 * US, 0.0), (40 * G, 2 * US, 0.01), (100 * G, 500_000, 0.0), (100 * G, 500_000, 0.0)]


def test_topology_truncated(tmp_path: Path):
    bad = write_variant(MIX / "topology.txt", tmp_path / "topology.txt", keep=40)
    e = raises_at(lambda: read_hpcc_topology(bad), bad, 40, "truncated", "expected 65 links", "link 39 of 65")
    assert "src" in e.message
    # cut inside a record: the missing field is named
    bad2 = write_variant(MIX / "topology.txt", tmp_path / "t2.txt", edits={10: "0 8 100Gbps"}, keep=10)
    raises_at(lambda: read_hpcc_topology(bad2), bad2, 10, "truncated", "link 8 of 65 has no delay")
    bad3 = tmp_path / "t3.txt"
    bad3.write_text("376 56 480\n320 321 322\n")
    raises_at(lambda: read_hpcc_topology(bad3), bad3, 2, "truncated", "56 switch ids", "found 3")


@pytest.mark.parametrize("line, text, values", [
    (1, "66x 1 65", ["node count", "'66x'", "not an integer"]),
    (1, "66 1 -1", ["link count", "'-1'"]),
    (1, "66 67 65", ["switch count 67 exceeds node count 66"]),
    (2, "66", ["switch id", "'66'", "out of range 0..65"]),
    (5, "0 70 100Gbps 0.001ms 0", ["node id", "'70'", "out of range 0..65", "link 3 of 65"]),
    (5, "0 0 100Gbps 0.001ms 0", ["link 0-0", "to itself"]),
    (5, "0 3 0Gbps 0.001ms 0", ["bad rate", "'0Gbps'", "link 0-3"]),
    (5, "0 3 -5Gbps 0.001ms 0", ["bad rate", "'-5Gbps'"]),
    (5, "0 3 100Gbits 0.001ms 0", ["bad rate", "'100Gbits'"]),
    (5, "0 3 100Gbps 1fortnight 0", ["bad delay", "'1fortnight'"]),
    (5, "0 3 100Gbps -1us 0", ["bad delay", "'-1us'"]),
    (5, "0 3 100Gbps 0.001ms 1.5", ["error rate", "'1.5'", "[0, 1)"]),
    (5, "0 3 100Gbps 0.001ms oops", ["error rate", "'oops'", "not a number"]),
])
def test_topology_errors(tmp_path: Path, line: int, text: str, values: list[str]):
    bad = write_variant(MIX / "topology.txt", tmp_path / "bad_topology.txt", edits={line: text})
    raises_at(lambda: read_hpcc_topology(bad), bad, line, *values)


def test_topology_duplicate_switch(tmp_path: Path):
    ids = lines_of(MIX / "fat.txt")[1].split()
    assert ids[-1] == "375"
    line2 = " ".join(ids[:40]) + "\n" + " ".join(ids[40:-1]) + " 320"
    bad = write_variant(MIX / "fat.txt", tmp_path / "fat.txt", edits={2: line2})
    raises_at(lambda: read_hpcc_topology(bad), bad, 3, "switch id 320 listed twice", "first on line 2")


def test_missing_file(tmp_path: Path):
    raises_at(lambda: read_hpcc_topology(tmp_path / "nope.txt"), tmp_path / "nope.txt", None, "cannot open")


# --------------------------------------------------------------------------- flows and trace


def test_flows_mix():
    t = read_hpcc_topology(MIX / "topology.txt")
    flows = read_hpcc_flows(MIX / "flow.txt", t)  # header says 2; 256 rows and a footer follow
    assert flows == [
        Flow(flow_id=0, src=2, dst=1, pg=3, dport=100, size_bytes=200_000_000, start_ps=2 * S, sport=10000),
        Flow(flow_id=1, src=3, dst=1, pg=3, dport=100, size_bytes=200_000_000, start_ps=2 * S, sport=10000),
    ]


def test_flows_crlf_tabs(tmp_path: Path):
    assert read_hpcc_flows(crlf_tabs(MIX / "flow.txt", tmp_path / "flow.txt")) == read_hpcc_flows(MIX / "flow.txt")


def test_flows_sport_ids_and_times(tmp_path: Path):
    p = tmp_path / "flows.txt"
    p.write_text("5\n2 1 3 100 1000 2.000001\n3 1 3 100 1000 2\n2 4 0 7 1 1.5\n2 1 3 100 5 2.0000000015\n"
                 "4 2 3 100 9 1500us\nnot read\n")
    fl = read_hpcc_flows(p)
    assert [f.flow_id for f in fl] == [0, 1, 2, 3, 4]  # file order even though start times are unordered
    assert [f.sport for f in fl] == [10000, 10000, 10001, 10002, 10000]
    assert [f.start_ps for f in fl] == [2 * S + 1 * US, 2 * S, 3 * S // 2, 2 * S + 1500, 1500 * US]


def test_flows_alibabacloud_incast():
    fl = read_hpcc_flows(ALI / "flow1.txt")  # header says 100; 256 rows follow
    assert len(fl) == 100
    assert {f.dst for f in fl} == {1} and [f.src for f in fl] == list(range(2, 102))
    assert sum(f.size_bytes for f in fl) == 2 * 2_000_000 + 1_500_000 + 60 * 5_000_000 + 37 * 10_000_000


@pytest.mark.parametrize("line, text, values, with_topo", [
    (3, "3 1 3 100 -5 2", ["size", "'-5'", "positive"], False),
    (3, "3 1 3 100 0 2", ["size", "'0'", "positive"], False),
    (3, "3 1 3 100 2e8 2", ["size of flow 2", "'2e8'", "not an integer"], False),
    (3, "3 1 x3 100 200000000 2", ["priority group", "'x3'"], False),
    (3, "3 1 9 100 200000000 2", ["priority group", "'9'", "0..7"], False),
    (3, "3 1 3 100 200000000 soon", ["start time", "'soon'"], False),
    (3, "3 3 3 100 200000000 2", ["to itself", "src == dst == 3"], False),
    (3, "99 1 3 100 200000000 2", ["unknown node id 99", "src of flow 2"], True),
    (3, "3 0 3 100 200000000 2", ["dst 0 of flow 2 is a switch"], True),
])
def test_flow_errors(tmp_path: Path, line: int, text: str, values: list[str], with_topo: bool):
    topo = read_hpcc_topology(MIX / "topology.txt") if with_topo else None
    bad = write_variant(MIX / "flow.txt", tmp_path / "bad_flow.txt", edits={line: text})
    raises_at(lambda: read_hpcc_flows(bad, topo), bad, line, *values)


def test_flow_unknown_node_needs_topology(tmp_path: Path):
    ok = write_variant(MIX / "flow.txt", tmp_path / "flow.txt", edits={3: "99 1 3 100 200000000 2"})
    assert read_hpcc_flows(ok)[1].src == 99


def test_flows_truncated(tmp_path: Path):
    bad = tmp_path / "flow.txt"
    bad.write_text("3\n2 1 3 100 200 2\n3 1 3 100\n")
    raises_at(lambda: read_hpcc_flows(bad), bad, 3, "truncated", "expected 3 flows", "flow 2 has no size")


def test_trace():
    ids = read_hpcc_trace(MIX / "trace.txt", n_nodes=66)
    assert ids == list(range(66))  # 348 listed; ids >= 66 skipped as third.cc does
    assert read_hpcc_trace(MIX / "trace.txt") == list(range(348))


def test_trace_errors(tmp_path: Path):
    bad = tmp_path / "trace.txt"
    bad.write_text("3\n0 1\n")
    raises_at(lambda: read_hpcc_trace(bad), bad, 2, "truncated", "3 node ids")
    bad.write_text("3\n0 one 2\n")
    raises_at(lambda: read_hpcc_trace(bad), bad, 2, "'one'", "not an integer")


# --------------------------------------------------------------------------- config


def _unmodelled_mix_warnings(path) -> list[str]:
    """The warnings of HPCC's example config: the keys pwormhole accepts and does not model."""
    return [f"{path}:50: ENABLE_TRACE 1 is not modelled by pwormhole (no packet trace (TRACE_OUTPUT_FILE) is "
            "written); ignored"]


def test_config_mix():
    cfg, warns = read_hpcc_config(MIX / "config.txt")
    assert warns == _unmodelled_mix_warnings(MIX / "config.txt")
    assert cfg.cc_mode == 3 and cfg.cc_name == "hpcc"
    assert cfg.buffer_size_bytes == 32 * 2**20
    assert cfg.kmin_map_bytes == {25 * G: 100_000, 50 * G: 200_000, 100 * G: 400_000}
    assert cfg.kmax_map_bytes == {25 * G: 400_000, 50 * G: 800_000, 100 * G: 1_600_000}
    assert cfg.pmax_map == {25 * G: 0.2, 50 * G: 0.2, 100 * G: 0.2}
    assert cfg.rp_timer_ps == 900_000_000
    assert cfg.alpha_resume_interval_ps == 1 * US and cfg.rate_decrease_interval_ps == 4 * US
    assert (cfg.rate_ai_bps, cfg.rate_hai_bps, cfg.min_rate_bps, cfg.dctcp_rate_ai_bps) == (
        50_000_000, 100_000_000, 100_000_000, 1_000_000_000)
    assert cfg.simulator_stop_ps == 4 * S
    assert cfg.link_down == ()
    assert (cfg.has_win, cfg.global_t, cfg.var_win, cfg.fast_react, cfg.rate_bound) == (True,) * 5
    assert (cfg.multi_rate, cfg.sample_feedback, cfg.ack_high_prio, cfg.l2_back_to_zero) == (False,) * 4
    assert (cfg.l2_chunk_size, cfg.l2_ack_interval, cfg.mi_thresh, cfg.int_multi) == (4000, 1, 0, 1)
    assert cfg.u_target == 0.95 and cfg.ewma_gain == 0.00390625
    # "mix/topology.txt" in mix/config.txt means the topology.txt beside it
    assert Path(cfg.topology_file) == MIX / "topology.txt" and Path(cfg.topology_file).is_file()
    assert Path(cfg.flow_file) == MIX / "flow.txt" and Path(cfg.trace_file) == MIX / "trace.txt"
    assert (cfg.fct_output_name, cfg.pfc_output_name) == ("fct.txt", "pfc.txt")
    # the queue monitor: QLEN_MON_START 2000000000, QLEN_MON_END 2010000000 (ns)
    assert (cfg.qlen_mon_file, cfg.qlen_mon_start_ps, cfg.qlen_mon_end_ps) == ("qlen.txt", 2 * S, 2_010_000_000_000)
    assert cfg.source == str(MIX / "config.txt")
    check_k_maps(cfg, read_hpcc_topology(cfg.topology_file))


def _fields(cfg: ModelConfig) -> dict:
    d = dataclasses.asdict(cfg)
    d.pop("source")
    return d


def test_config_doc_and_crlf_tabs_equal(tmp_path: Path, mix_copy: Path):
    ref, _ = read_hpcc_config(MIX / "config.txt")
    doc, warns = read_hpcc_config(MIX / "config_doc.txt")  # {...} annotations stripped
    assert warns == _unmodelled_mix_warnings(MIX / "config_doc.txt") and _fields(doc) == _fields(ref)
    # config.txt is CRLF upstream; an LF + tabs rewrite reads the same
    lf = mix_copy / "config_lf.txt"
    lf.write_text("\n".join("\t".join(l.split()) for l in lines_of(MIX / "config.txt")) + "\n")
    assert _fields(read_hpcc_config(lf)[0]) == _fields(read_hpcc_config(mix_copy / "config.txt")[0])
    assert _fields(read_hpcc_config(crlf_tabs(MIX / "config_doc.txt", mix_copy / "c2.txt"))[0]) == \
        _fields(read_hpcc_config(mix_copy / "config.txt")[0])


def test_reference_scenarios():
    for name, cc, n_nodes, n_flows in (("s1_hpcc", 3, 66, 2), ("s2_dcqcn", 1, 66, 2), ("s3_dcqcn", 1, 102, 100)):
        cfg, warns = read_hpcc_config(REF / name / "config.txt")
        assert warns == [] and cfg.cc_mode == cc
        # QLEN_MON_START 5000000000 is after the 4 s stop (and after QLEN_MON_END): ns-3 samples nothing
        assert (cfg.qlen_mon_file, cfg.qlen_mon_start_ps, cfg.qlen_mon_end_ps) == ("qlen.txt", 5 * S,
                                                                                   2_010_000_000_000)
        t = read_hpcc_topology(cfg.topology_file)
        assert t.n_nodes == n_nodes and len(t.links) == n_nodes - 1 and t.switches == {0}
        assert len(read_hpcc_flows(cfg.flow_file, t)) == n_flows
        assert read_hpcc_trace(cfg.trace_file, t.n_nodes) == list(range(n_nodes))
        check_k_maps(cfg, t)


def test_alibabacloud_config(tmp_path: Path):
    # the HPN topology it names is not stored: the error names the key and line
    cfg_path = ALI / "config_example.sh"
    raises_at(lambda: read_hpcc_config(cfg_path), cfg_path, 5, "TOPOLOGY_FILE",
              "HPN_7_0_512_gpus_8_in_one_server_with_100Gbps_A100", "not found")
    # laid out as in its repository (simulation/mix/incast/...), it parses; paths resolve via an ancestor
    inc = tmp_path / "simulation" / "mix" / "incast"
    inc.mkdir(parents=True)
    shutil.copy(cfg_path, inc / "config_example.sh")
    shutil.copy(ALI / "flow1.txt", inc / "flow1.txt")
    shutil.copy(MIX / "topology.txt", inc / "HPN_7_0_512_gpus_8_in_one_server_with_100Gbps_A100")
    cfg, warns = read_hpcc_config(inc / "config_example.sh")
    assert Path(cfg.topology_file).parent == inc and Path(cfg.flow_file) == inc / "flow1.txt"
    assert cfg.trace_file is None  # TRACE_FILE is commented out with '#'
    assert (cfg.has_win, cfg.global_t) == (False, False)
    assert cfg.simulator_stop_ps == MAX_TIME_PS  # 4e13 s, past any run: never
    assert len(cfg.kmax_map_bytes) == 8 and cfg.kmax_map_bytes[1920 * G] == 3_200_000
    assert cfg.pmax_map[96 * G] == 1.0
    unknown = [w for w in warns if "unknown key" in w]
    assert any("unknown key BW_MON_FILE ignored" in w for w in unknown)
    assert any("ns3::IbvInterface::PollTimeInterval" in w for w in unknown)
    assert all(w.startswith(str(inc / "config_example.sh") + ":") for w in warns)


def test_config_path_resolution(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    run = tmp_path / "run"
    run.mkdir()
    shutil.copy(MIX / "topology.txt", tmp_path / "topo.txt")
    (run / "flows.txt").write_text("0\n")
    cfg_path = run / "config.txt"
    cfg_path.write_text("TOPOLOGY_FILE topo.txt\nFLOW_FILE flows.txt\nTRACE_FILE none.txt\n")
    cfg, warns = read_hpcc_config(cfg_path)
    assert cfg.topology_file == str(tmp_path / "topo.txt")  # found in the parent folder
    assert cfg.flow_file == str(run / "flows.txt")  # the config's own folder first
    assert cfg.trace_file is None and len(warns) == 1 and "TRACE_FILE 'none.txt' not found" in warns[0]
    # the current directory is the last resort
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "only_here.txt").write_text("0\n")
    cfg_path.write_text("FLOW_FILE only_here.txt\n")
    monkeypatch.chdir(elsewhere)
    assert read_hpcc_config(cfg_path)[0].flow_file == str(elsewhere / "only_here.txt")
    cfg_path.write_text("\n\nFLOW_FILE nowhere.txt\n")
    raises_at(lambda: read_hpcc_config(cfg_path), cfg_path, 3, "FLOW_FILE", "'nowhere.txt'", "not found")


def test_config_keys_not_modelled_warn_by_name(tmp_path: Path):
    p = tmp_path / "config.txt"
    p.write_text("ENABLE_TRACE 0\nUSE_DYNAMIC_PFC_THRESHOLD 0\nMULTI_RATE 1\nSAMPLE_FEEDBACK 1\nPAUSE_TIME 5\n"
                 "PINT_PROB 1.0\nTRACE_OUTPUT_FILE mix.tr\nMULTI_RATE 0\n")
    cfg, warns = read_hpcc_config(p)
    assert warns == [
        f"{p}:2: USE_DYNAMIC_PFC_THRESHOLD 0 is not modelled by pwormhole (switches always use the dynamic PFC "
        "threshold); ignored",
        f"{p}:3: MULTI_RATE 1 is not modelled by pwormhole (HPCC runs MULTI_RATE 0); ignored",
        f"{p}:4: SAMPLE_FEEDBACK 1 is not modelled by pwormhole (HPCC runs SAMPLE_FEEDBACK 0); ignored",
        f"{p}:5: PAUSE_TIME is not modelled by pwormhole; ignored",
        f"{p}:8: MULTI_RATE given again (first on line 3); the last value is used"]
    assert cfg.multi_rate is False and cfg.sample_feedback is True  # read as given; the model runs 0
    p.write_text("ENABLE_TRACE yes\n")
    raises_at(lambda: read_hpcc_config(p), p, 1, "ENABLE_TRACE value 'yes' must be 0 or 1")


def test_a_misspelt_key_names_the_key_it_resembles_and_strict_refuses_it(mix_copy: Path):
    """``CC_MODEE`` and ``BUFER_SIZE`` (one letter off) are named with the key they resemble; ``FOO``
    resembles none; with ``strict`` the first unknown key is an error at its line, a known key
    that pwormhole does not model (PAUSE_TIME) still only warns."""
    p = mix_copy / "config.txt"
    n = len(lines_of(MIX / "config.txt"))
    p.write_text(p.read_text() + "\nPAUSE_TIME 5\nCC_MODEE 3\nBUFER_SIZE 32\nFOO 1\n")
    _, warns = read_hpcc_config(p)
    assert f"{p}:{n + 3}: unknown key CC_MODEE ignored (did you mean CC_MODE?)" in warns
    assert f"{p}:{n + 4}: unknown key BUFER_SIZE ignored (did you mean BUFFER_SIZE?)" in warns
    assert f"{p}:{n + 5}: unknown key FOO ignored" in warns
    raises_at(lambda: read_hpcc_config(p, strict=True), p, n + 3,
              "unknown key CC_MODEE (did you mean CC_MODE?); --strict refuses unknown keys")
    p.write_text((MIX / "config.txt").read_text() + "\nPAUSE_TIME 5\n")
    _, warns = read_hpcc_config(p, strict=True)
    assert any("PAUSE_TIME is not modelled" in w for w in warns)


def test_config_values(mix_copy: Path):
    p = mix_copy / "config.txt"
    extra = ("\nENABLE_PFC 0\nRP_TIMER 1.5\nLINK_DOWN 100 0 1\nFCT_OUTPUT_FILE out/fct_hpcc.txt\n"
             "PFC_OUTPUT_FILE pfc_x.txt {a note}\nFOO 12\nCC_MODE 1\n")
    p.write_text(p.read_text() + extra)
    n = len(lines_of(MIX / "config.txt"))
    cfg, warns = read_hpcc_config(p)
    assert cfg.enable_pfc is False and cfg.rp_timer_ps == 1_500_000
    # 100 us after the traffic starts (third.cc: Seconds(2) + MicroSeconds(a), where HPCC's flows start)
    assert [d[:3] for d in cfg.link_down] == [(100 * US, 0, 1)]
    assert cfg.link_down[0].path == f"{p}:{n + 4}"
    assert (cfg.fct_output_name, cfg.pfc_output_name) == ("fct_hpcc.txt", "pfc_x.txt")
    assert cfg.cc_mode == 1
    assert f"{p}:{n + 7}: unknown key FOO ignored" in warns
    assert any(f"{p}:{n + 8}: CC_MODE given again" in w for w in warns)
    assert any(f"{p}:{n + 3}: RP_TIMER given again" in w for w in warns)


@pytest.mark.parametrize("key, text, values", [
    ("CC_MODE", "CC_MODE 2", ["CC_MODE 2 is not implemented", "1=DCQCN", "3=HPCC", "7=TIMELY", "8=DCTCP"]),
    ("CC_MODE", "CC_MODE 10", ["CC_MODE 10 is not implemented (HPCC-PINT", "per-port utilization"]),
    ("CC_MODE", "CC_MODE hpcc", ["CC_MODE", "'hpcc'", "not an integer"]),
    ("RATE_AI", "RATE_AI fast", ["RATE_AI", "'fast'", "not a rate"]),
    ("MIN_RATE", "MIN_RATE 0Mb/s", ["MIN_RATE", "'0Mb/s'"]),
    ("KMIN_MAP", "KMIN_MAP 3 25000000000 100 50000000000 200", ["KMIN_MAP declares 3 pairs", "4 values"]),
    ("KMAX_MAP", "KMAX_MAP 3 25000000000 400 50000000000 800 100000000000 -1", ["KMAX_MAP", "'-1'"]),
    ("KMAX_MAP", "KMAX_MAP 3 25000000000 400 50000000000 800 fastest 1600", ["KMAX_MAP rate", "'fastest'"]),
    ("PMAX_MAP", "PMAX_MAP 3 25000000000 0.2 50000000000 0.2 100000000000 1.2", ["PMAX_MAP", "'1.2'"]),
    ("BUFFER_SIZE", "BUFFER_SIZE -32", ["BUFFER_SIZE", "'-32'"]),
    ("BUFFER_SIZE", "BUFFER_SIZE", ["BUFFER_SIZE takes one value", "no value"]),
    ("ENABLE_QCN", "ENABLE_QCN 2", ["ENABLE_QCN", "'2'", "0 or 1"]),
    ("ENABLE_QCN", "ENABLE_QCN 1 0", ["ENABLE_QCN takes one value", "'1 0'"]),
    ("RP_TIMER", "RP_TIMER -900", ["RP_TIMER", "'-900'"]),
    ("RP_TIMER", "RP_TIMER 0", ["RP_TIMER", "'0'", "> 0"]),
    ("SIMULATOR_STOP_TIME", "SIMULATOR_STOP_TIME four", ["SIMULATOR_STOP_TIME", "'four'"]),
    ("U_TARGET", "U_TARGET 1.5", ["U_TARGET", "'1.5'", "(0, 1]"]),
    ("ERROR_RATE_PER_LINK", "ERROR_RATE_PER_LINK 1", ["ERROR_RATE_PER_LINK", "'1'", "[0, 1)"]),
    ("PACKET_PAYLOAD_SIZE", "PACKET_PAYLOAD_SIZE 0", ["PACKET_PAYLOAD_SIZE", "'0'"]),
    ("L2_ACK_INTERVAL", "L2_ACK_INTERVAL 1.5", ["L2_ACK_INTERVAL", "'1.5'", "not an integer"]),
    ("LINK_DOWN", "LINK_DOWN 100 3", ["LINK_DOWN takes 3 values", "'100 3'"]),
])
def test_config_errors(mix_copy: Path, key: str, text: str, values: list[str]):
    src = lines_of(MIX / "config.txt")
    line = next(i for i, l in enumerate(src, start=1) if l.split() and l.split()[0] == key)
    bad = write_variant(MIX / "config.txt", mix_copy / "bad_config.txt", edits={line: text})
    raises_at(lambda: read_hpcc_config(bad), bad, line, *values)


def test_k_map_missing_rate(mix_copy: Path):
    src = lines_of(MIX / "config.txt")
    line = next(i for i, l in enumerate(src, start=1) if l.startswith("KMIN_MAP"))
    bad = write_variant(MIX / "config.txt", mix_copy / "config.txt",
                        edits={line: "KMIN_MAP 2 25000000000 100 50000000000 200"})
    cfg, _ = read_hpcc_config(bad)
    topo = read_hpcc_topology(cfg.topology_file)
    raises_at(lambda: check_k_maps(cfg, topo), bad, line,
              "no KMIN_MAP entry for 100Gbps = 100000000000 bps", "(link 0-1 in topology.txt)")
    # fat.txt needs 400G entries too, which the example maps lack
    cfg_ok, _ = read_hpcc_config(MIX / "config.txt")
    kmin_line = next(i for i, l in enumerate(src, start=1) if l.startswith("KMIN_MAP"))
    raises_at(lambda: check_k_maps(cfg_ok, read_hpcc_topology(MIX / "fat.txt")), MIX / "config.txt", kmin_line,
              "no KMIN_MAP entry for 400Gbps", "in fat.txt")
    # without ECN marking the maps are not needed
    cfg_ok.enable_qcn = False
    check_k_maps(cfg_ok, read_hpcc_topology(MIX / "fat.txt"))


def test_an_hpcc_run_is_named_after_its_config_or_its_flow_file():
    """HPCC's run.py names each config after the run (``config_<topo>_<trace>_<cc>.txt``): that name;
    a plain ``mix/config.txt`` takes its folder and flow file."""
    assert hpcc_run_name("mix/config_fat_fb50_hp95ai50.txt", "mix/fb50.txt") == "config_fat_fb50_hp95ai50"
    assert hpcc_run_name("/x/mix/config.txt", "/x/mix/flow.txt") == "mix-flow"
