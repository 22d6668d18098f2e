"""Untrusted files: a memo cache with edited values, plan files, topology headers and
iteration counts that would allocate without bound.

The memo cache is recorded from a tiny scenario with memo hits (two identical 2-to-1
incasts of 6 MB on a star, DCQCN: the second replays the first), then mutated.
"""

from __future__ import annotations

import copy
import json
import math
from dataclasses import asdict
from pathlib import Path

import pytest
from helpers import one_line_error, run_cli
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pwormhole.accel import memo as memo_mod
from pwormhole.accel.memo import MemoCache, MemoLimits
from pwormhole.commands.cli import main
from pwormhole.partition.plan import make_plan
from pwormhole.scenario import fat_tree_mix_scenario, from_files
from pwormhole.topology.model import MAX_LINKS, MAX_NODES

STAR = "7 1 6\n6\n" + "".join(f"{h} 6 100Gbps 1us 0\n" for h in range(6))
INCASTS = "4\n0 2 3 100 6000000 0\n1 2 3 100 6000000 0\n3 5 3 100 6000000 0.003\n4 5 3 100 6000000 0.003\n"




# -- memo cache (case 6) ------------------------------------------------------------------

@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    """``(folder, cache dict, FCTs of the recording run)``: the cache a run of the incasts saves."""
    d = tmp_path_factory.mktemp("memo")
    (d / "star.txt").write_text(STAR)
    (d / "incasts.txt").write_text(INCASTS)
    rc = main(["run", "--topology", str(d / "star.txt"), "--flows", str(d / "incasts.txt"), "--cc", "dcqcn",
               "--memo-cache", str(d / "memo.json"), "--out", str(d / "rec"), "--no-progress"])
    assert rc == 0
    s = json.loads((d / "rec" / "summary.json").read_text())
    assert (s["memo_hits"], s["memo_misses"], s["flows_finished"]) == (1, 1, 4)
    cache = json.loads((d / "memo.json").read_text())
    assert len(cache["entries"]) == 1 and len(cache["entries"][0]["flows"]) == 2
    return d, cache, fcts(d / "rec")


def fcts(out: Path) -> list[int]:
    return [int(line.split()[6]) for line in (out / "fct.txt").read_text().splitlines()]


def run_with_cache(capsys, d: Path, cache, out: Path) -> tuple[str, dict]:
    """Run the incasts with ``cache`` (a dict, or text) as ``--memo-cache``; ``(stderr, summary)``."""
    path = out.parent / (out.name + ".memo.json")
    path.write_text(cache if isinstance(cache, str) else json.dumps(cache))
    rc, _, err = run_cli(capsys, "run", "--topology", d / "star.txt", "--flows", d / "incasts.txt", "--cc", "dcqcn",
                         "--memo-cache", path, "--out", out, "--no-progress")
    assert rc == 0 and "Traceback" not in err, err
    return err, json.loads((out / "summary.json").read_text())


def limits_of(d: Path) -> MemoLimits:
    return MemoLimits.of(from_files(str(d / "star.txt"), str(d / "incasts.txt"), cc="dcqcn"))


BAD_VALUES = st.one_of(
    st.sampled_from([-1, 0, -10**12, 10**18, 10**30, 10**400, -10**400, 1e300, -1e-9, math.nan, math.inf, -math.inf,
                     "12", "", None, True, False, [1], {"a": 1}, 2.5]),
    st.integers(-10**20, 10**20), st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=4))
FLOW_FIELDS = ["bytes", "goodput", "rate_bps", "inflight_growth"]


EDITS = ["convergence_ps", "flow", "flow", "flow", "scale", "scale", "drop_flow", "add_flow", "node", "link", "key",
         "duplicate", "entry"]


@st.composite
def mutated_caches(draw, base, edits=tuple(EDITS)):
    """A copy of cache ``base`` with 1-3 ``edits``: a bad value in an entry or flow record, a
    plausible one (a value scaled), a record removed or added, a broken graph vertex or edge,
    a wrong key, a duplicate."""
    cache = copy.deepcopy(base)
    for _ in range(draw(st.integers(1, 3))):
        entries = cache["entries"]
        editable = [i for i, e in enumerate(entries) if isinstance(e, dict) and "flows" in e and "graph" in e]
        if not editable:
            break
        e = entries[draw(st.sampled_from(editable))]
        what = draw(st.sampled_from(edits))
        if what == "convergence_ps":
            e["convergence_ps"] = draw(BAD_VALUES)
        elif what == "scale":  # a plausible edit: a value scaled, kept in its type
            holder, field = draw(st.sampled_from([(e, "convergence_ps")] + [(r, f) for r in e["flows"].values()
                                                                           if isinstance(r, dict)
                                                                           for f in FLOW_FIELDS]))
            v = holder.get(field)
            if type(v) in (int, float) and math.isfinite(v):
                scaled = v * draw(st.sampled_from([0, 0.01, 0.5, 0.9, 1.1, 2, 10, 1000]))
                holder[field] = round(scaled) if type(v) is int else scaled
        elif what == "flow" and e["flows"]:
            rec = e["flows"][draw(st.sampled_from(sorted(e["flows"])))]
            rec[draw(st.sampled_from(FLOW_FIELDS))] = draw(BAD_VALUES)
        elif what == "drop_flow" and e["flows"]:
            e["flows"].pop(draw(st.sampled_from(sorted(e["flows"]))))
        elif what == "add_flow":
            e["flows"][str(len(e["flows"]))] = copy.deepcopy(next(iter(e["flows"].values()), {}))
        elif what == "node":
            node = e["graph"]["nodes"][draw(st.integers(0, len(e["graph"]["nodes"]) - 1))]
            node[draw(st.sampled_from(["id", "label"]))] = draw(BAD_VALUES)
        elif what == "link":
            link = e["graph"]["links"][draw(st.integers(0, len(e["graph"]["links"]) - 1))]
            link[draw(st.sampled_from(["source", "target", "role"]))] = draw(BAD_VALUES)
        elif what == "key":
            e["key"] = draw(BAD_VALUES)
        elif what == "duplicate":
            entries.extend(copy.deepcopy(e) for _ in range(draw(st.integers(1, 5))))
        else:
            entries[entries.index(e)] = draw(BAD_VALUES)
    return cache


_FUZZ = settings(max_examples=40, deadline=None, derandomize=True,
                 suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


def test_memo_cache_with_edited_values_never_breaks_a_run(recorded, tmp_path, capsys):
    """Hypothesis-mutated caches (negative, huge, NaN, inf, strings, wrong lengths, broken
    graphs, duplicates): every run finishes every flow with FCTs >= 0 and no traceback, and
    the run never finishes before the packet-level answer allows (each FCT at least the
    flow's 6 MB at the 100 Gb/s line rate, 480 us). Before the schema, a negative
    convergence time wrote negative FCTs, a huge one left every flow unfinished, and
    strings or NaN ended in a traceback."""
    d, base, _ = recorded
    runs = iter(range(10**6))
    replayed = []

    @_FUZZ
    @given(cache=mutated_caches(base, tuple(EDITS + ["scale"] * 6)))
    def check(cache):
        out = tmp_path / f"r{next(runs)}"
        err, s = run_with_cache(capsys, d, cache, out)
        assert s["complete"] and s["flows_finished"] == 4, err
        got = fcts(out)
        assert len(got) == 4 and all(f >= 480_000 for f in got), got
        assert len([ln for ln in err.splitlines() if "memo cache" in ln]) <= 1, err  # one warning at most
        replayed.append(s["memo_hits"] - s["memo_misses"] == 2)  # the edited entry itself was replayed

    check()
    assert any(replayed) and not all(replayed)


@settings(max_examples=150, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(data=st.data())
def test_memo_cache_loader_keeps_only_entries_within_the_bounds(recorded, tmp_path, data):
    """Many more mutations, loaded only: what the loader keeps is within the scenario's
    bounds, and it warns once (naming how many entries it dropped) or not at all."""
    d, base, _ = recorded
    cache = data.draw(mutated_caches(base))
    path = tmp_path / "m.json"
    path.write_text(json.dumps(cache))
    lim = limits_of(d)
    warnings = []
    memo = MemoCache.load(str(path), base["fingerprint"], warnings.append, lim)
    assert len(warnings) <= 1
    entries = [e for es in memo.entries.values() for e in es]
    assert len(entries) <= 1  # duplicates of the one recorded graph are dropped
    if isinstance(cache["entries"], list) and len(entries) < len(cache["entries"]):
        assert len(warnings) == 1 and f"of {len(cache['entries'])} entries" in warnings[0]
    for e in entries:
        assert 0 < e.convergence_ps <= lim.max_convergence_ps
        flow_vertices = [v for v, label in enumerate(e.graph.labels) if label[0] == "f"]
        assert sorted(e.flows) == flow_vertices
        for rec in e.flows.values():
            assert 0 <= rec["bytes"] <= lim.max_flow_bytes
            assert math.isfinite(rec["goodput"]) and 0 <= rec["goodput"] * 8e12 <= lim.max_rate_bps
            assert lim.min_rate_bps <= rec["rate_bps"] <= lim.max_rate_bps
            assert abs(rec["inflight_growth"]) <= lim.max_flow_bytes
            assert (rec["bytes"] + max(0, rec["inflight_growth"])) * 8 * 10**12 <= lim.max_rate_bps * e.convergence_ps


def test_valid_memo_cache_still_hits_and_duplicates_are_dropped(recorded, tmp_path, capsys):
    """The recorded cache, and the same with its entry repeated 500 times, load without
    (resp. with one) warning, replay both incasts (2 hits, no miss) and give the second
    incast the FCTs it had in the recording run (where it was the hit)."""
    d, base, rec_fcts = recorded
    err, s = run_with_cache(capsys, d, base, tmp_path / "valid")
    assert "memo cache" not in err and (s["memo_hits"], s["memo_misses"]) == (2, 0)
    got = fcts(tmp_path / "valid")
    assert got[2:] == rec_fcts[2:] and got[:2] == rec_fcts[2:]  # both incasts replay the same transient
    dup = copy.deepcopy(base)
    dup["entries"] *= 500
    err, s = run_with_cache(capsys, d, dup, tmp_path / "dup")
    assert "dropped 499 of 500 entries (499 duplicates); kept 1" in err and err.count("memo cache") == 1
    assert (s["memo_hits"], s["memo_misses"], s["memo_entries"]) == (2, 0, 1)
    assert fcts(tmp_path / "dup") == got


def _distinct_entries(base, n):
    """``n`` valid entries with different graphs (the recorded one with its flows' window label changed)."""
    out = []
    for i in range(n):
        e = copy.deepcopy(base["entries"][0])
        for node in e["graph"]["nodes"]:
            if node["label"][0] == "f":
                node["label"] = node["label"].replace("/w52000/", f"/w{52000 + i}/")
        out.append(e)
    return out


def test_memo_cache_size_and_entry_caps(recorded, tmp_path, monkeypatch):
    """A file over MAX_FILE_BYTES is refused from its size, without being opened; entries
    past MAX_ENTRIES are dropped with the warning; save never writes more than either cap,
    so a saved cache always loads whole."""
    d, base, _ = recorded
    lim = limits_of(d)
    fp = base["fingerprint"]
    big = tmp_path / "big.json"
    with open(big, "wb") as fh:  # sparse: no disk used
        fh.truncate(memo_mod.MAX_FILE_BYTES + 1)

    def no_open(*a, **k):
        raise AssertionError("the file was opened")

    monkeypatch.setattr(memo_mod, "_read_text", no_open)
    warnings = []
    assert len(MemoCache.load(str(big), fp, warnings.append, lim)) == 0
    assert warnings == [f"memo cache {big} is larger than the limit of {memo_mod.MAX_FILE_BYTES} bytes (64 MiB); "
                        "ignored"]
    monkeypatch.undo()
    warnings = []
    assert len(MemoCache.load(str(tmp_path), fp, warnings.append, lim)) == 0 and "not a regular file" in warnings[0]

    monkeypatch.setattr(memo_mod, "MAX_ENTRIES", 3)
    cache = dict(base, entries=_distinct_entries(base, 5))
    path = tmp_path / "five.json"
    path.write_text(json.dumps(cache))
    warnings = []
    memo = MemoCache.load(str(path), fp, warnings.append, lim)
    assert len(memo) == 3 and warnings == [f"memo cache {path}: dropped 2 of 5 entries (2 past the limit of 3 "
                                           "entries); kept 3"]
    monkeypatch.setattr(memo_mod, "MAX_ENTRIES", 5)
    memo = MemoCache.load(str(path), fp, warnings.append, lim)
    assert len(memo) == 5
    one = len(json.dumps(cache["entries"][0]))
    monkeypatch.setattr(memo_mod, "MAX_ENTRIES", 4)
    monkeypatch.setattr(memo_mod, "MAX_FILE_BYTES", 3 * one + 200)  # room for three entries and the header
    memo.save(str(tmp_path / "saved.json"))
    saved = json.loads((tmp_path / "saved.json").read_text())
    assert len(saved["entries"]) == 3 and (tmp_path / "saved.json").stat().st_size <= memo_mod.MAX_FILE_BYTES
    warnings = []
    assert len(MemoCache.load(str(tmp_path / "saved.json"), fp, warnings.append, lim)) == 3 and not warnings


# -- plan files, topology headers, iterations (case 7) -------------------------------------

@pytest.fixture(scope="module")
def plan_text():
    scn = fat_tree_mix_scenario()
    return json.dumps(asdict(make_plan(scn.topology, 2, scn.flows)), indent=1)  # the saved fields


@pytest.mark.parametrize("edit, needles", [
    (lambda d: d["owner"].__setitem__(3, "x"), [":7:", 'owner[3] "x"', "not a rank 0..1"]),
    (lambda d: d["owner"].__setitem__(4, 0.5), [":8:", "owner[4] 0.5", "not a rank 0..1"]),
    (lambda d: d["owner"].__setitem__(0, 7), [":4:", "owner[0] 7", "not a rank 0..1"]),
    (lambda d: d.__setitem__("parts", "2"), [":2:", 'parts "2"', "not an integer"]),
    (lambda d: d["cut_links"].__setitem__(0, [0, None]), ["cut_links[0] [0, null]", "not a pair of node ids"]),
    (lambda d: d.__setitem__("imbalance", "high"), ['imbalance "high"', "not a finite number"]),
    (lambda d: d.__setitem__("ranks", 2), ["unknown field 'ranks'"]),
])
def test_plan_with_bad_entries_is_one_line_exit_2(tmp_path, capsys, plan_text, edit, needles):
    """Before, a non-integer rank raised TypeError out of the CLI (a traceback)."""
    d = json.loads(plan_text)
    edit(d)
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps(d, indent=1))
    one_line_error(capsys, ["run", "--scenario", "fat-tree-mix", "--lps", "2", "--plan", plan, "--out", tmp_path / "o",
                            "--no-progress"], f"{plan}:", *needles)
    assert not (tmp_path / "o" / "fct.txt").exists()


def test_plan_that_is_not_an_object_or_not_json(tmp_path, capsys):
    plan = tmp_path / "plan.json"
    for text, needles in (("[0, 1]", [f"{plan}:1:", "expected a JSON object, got list"]),
                          ('{"parts": 2,\n "owner": [0, 1,]}', [f"{plan}:2:", "cannot read partition plan"])):
        plan.write_text(text)
        one_line_error(capsys, ["run", "--scenario", "fat-tree-mix", "--lps", "2", "--plan", plan, "--out",
                                tmp_path / "o"], *needles)


def _hpcc_files(tmp_path, topo_text):
    (tmp_path / "topo.txt").write_text(topo_text)
    (tmp_path / "flow.txt").write_text("1\n1 2 3 100 1000 0\n")
    return ["run", "--topology", tmp_path / "topo.txt", "--flows", tmp_path / "flow.txt", "--out", tmp_path / "o",
            "--no-progress"]


def test_hpcc_topology_header_with_a_billion_nodes(tmp_path, capsys):
    """Before, the header's count sized per-node tables (routing) until memory ran out."""
    args = _hpcc_files(tmp_path, "1000000000 1 2\n0\n0 1 100Gbps 1us 0\n0 2 100Gbps 1us 0\n")
    one_line_error(capsys, args, f"{tmp_path / 'topo.txt'}:1:", "node count 1000000000",
                   f"limit of {MAX_NODES} nodes")


def test_hpcc_topology_header_with_more_nodes_than_its_links_join(tmp_path, capsys):
    """Within the cap, a count the link rows cannot back (nodes without any link) is refused
    after the rows are read, the way a flow count is checked against the flow rows."""
    args = _hpcc_files(tmp_path, "50000 1 2\n0\n0 1 100Gbps 1us 0\n0 2 100Gbps 1us 0\n")
    one_line_error(capsys, args, f"{tmp_path / 'topo.txt'}:1:", "node count 50000 but its 2 links join at most 4 nodes")


def test_flow_header_with_a_trillion_flows_is_a_truncated_file(tmp_path, capsys):
    """How the flow reader treats a count (it held before): rows are read one by one, never
    preallocated, so a count without its rows is a truncated file."""
    args = _hpcc_files(tmp_path, "3 1 2\n0\n0 1 100Gbps 1us 0\n0 2 100Gbps 1us 0\n")
    (tmp_path / "flow.txt").write_text("1000000000000\n1 2 3 100 1000 0\n")
    one_line_error(capsys, args, f"{tmp_path / 'flow.txt'}:2:", "truncated file", "1000000000000 flows")


def test_simai_topology_header_with_a_billion_nodes(tmp_path, capsys):
    """A consistent SimAI file (10^9 GPUs, 8 per server, switch ids after them) of which only
    two GPUs are linked: before, the header's count sized per-node tables."""
    (tmp_path / "topo").write_text("1000000002 8 1 1 2 H20\n1000000000 1000000001\n"
                                   "0 1000000000 2880Gbps 0.000025ms 0\n1 1000000000 2880Gbps 0.000025ms 0\n")
    (tmp_path / "flow.txt").write_text("1\n0 1 3 100 1000 0\n")
    one_line_error(capsys, ["run", "--topology", tmp_path / "topo", "--flows", tmp_path / "flow.txt", "--out",
                            tmp_path / "o"], f"{tmp_path / 'topo'}:1:", "node count 1000000002",
                   f"limit of {MAX_NODES} nodes")


HTSIM_BILLION = """Nodes 1000000000
Tiers 2
Podsize 1000000000

Tier 0
Downlink_speed_Gbps 100
Radix_Down 8
Radix_Up 2
Downlink_Latency_ns 1000
Oversubscribed 4

Tier 1
Downlink_speed_Gbps 100
Radix_Down 125000000
Downlink_Latency_ns 1000
"""

HTSIM_BUNDLES = """Nodes 8
Tiers 3
Podsize 8

Tier 0
Downlink_speed_Gbps 10000000
Radix_Down 8
Radix_Up 1
Downlink_Latency_ns 1000
Oversubscribed 8

Tier 1
Downlink_speed_Gbps 10000000
Radix_Down 1
Radix_Up 10000000
Downlink_Latency_ns 1000

Tier 2
Downlink_speed_Gbps 1
Radix_Down 10000000
Bundle 10000000
Downlink_Latency_ns 1000
"""


@pytest.mark.parametrize("text, needles", [
    (HTSIM_BILLION, ["Nodes 1000000000 makes 1125000002 nodes and 1250000000 links", f"limit of {MAX_NODES} nodes"]),
    (HTSIM_BUNDLES, ["Nodes 8 makes 11 nodes and 10000009 links", f"{MAX_LINKS} links"]),
])
def test_htsim_topology_that_would_build_too_many_nodes_or_links(tmp_path, capsys, text, needles):
    """A consistent htsim description (htsim's own checks pass) of a billion hosts, or of 8
    hosts whose core links come in bundles of ten million: refused before the links are built."""
    (tmp_path / "big.topo").write_text(text)
    (tmp_path / "flow.txt").write_text("1\n1 2 3 100 1000 0\n")
    one_line_error(capsys, ["run", "--topology", tmp_path / "big.topo", "--flows", tmp_path / "flow.txt", "--out",
                            tmp_path / "o"], f"{tmp_path / 'big.topo'}:1:", *needles)


def test_iterations_beyond_the_dag_bound(tmp_path, capsys):
    """``--iterations 1000000`` of one GPT-350M layer on 16 GPUs (1,104 ops each) would be
    1.1e9 DAG ops (~500 GB); refused before the DAG is built. Before, it was accepted."""
    one_line_error(capsys, ["run", "--model", "gpt-350m", "--gpus", "16", "--layers", "1", "--iterations", "1000000",
                            "--out", tmp_path / "o"], "1000000 iterations of 1,104 DAG ops make 1,104,000,000",
                   "over the limit of 10,000,000")
    assert not (tmp_path / "o" / "summary.json").exists()
