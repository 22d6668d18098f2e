"""The memo cache (``accel.memo``): lookups and their keys, link rates in the key, cache files,
matching that does not depend on the process."""

import json
import random
import subprocess
import sys

import pytest
from helpers import G100, ROOT, US, both, config, flows_of, pattern, star_topo

from pwormhole.accel import memo as memo_mod
from pwormhole.accel.memo import (
    FILE_HEAD,
    FORMAT,
    MemoCache,
    config_fingerprint,
    flow_match,
    group_key,
    parts_graph,
    wl_hash,
)
from pwormhole.accel.wormhole import AccelConfig
from pwormhole.run import Run
from pwormhole.scenario import Scenario


def _group_graph(topo):
    specs = [(0, 2, 6_000_000, 0), (1, 2, 6_000_000, 0)]
    cfg = config()
    cfg.fill_k_maps({ln.rate_bps for ln in topo.links})
    run = Run(Scenario("t", topo, flows_of(specs), cfg), accel=AccelConfig(skip=False, memo=False))
    run.run(until_ps=20 * US)
    wh = run.accel
    (g,) = wh.groups.values()
    return group_key(wh, g)


def test_memo_entries_never_shared_across_link_rates():
    k100, g100, _ = _group_graph(star_topo(3))
    k100b, g100b, _ = _group_graph(star_topo(3))
    k40, g40, _ = _group_graph(star_topo(3, rate=40 * 10**9))
    cache = MemoCache("t")
    cache.insert(k100, g100, 5 * US, {0: {"bytes": 1, "goodput": 0.1, "rate_bps": G100},
                                     1: {"bytes": 1, "goodput": 0.1, "rate_bps": G100}})
    assert k100 == k100b and cache.find(k100b, g100b) is not None
    assert k40 != k100 and cache.find(k40, g40) is None
    # and a graph with the same hash is still checked for isomorphism with its attributes
    cache.entries[k40] = cache.entries[k100]
    assert cache.find(k40, g40) is None


# three flows over three ports: flows 0 and 1 alike but for flow 2's ACKs on flow 0's first port
LABELS = ["f3n/w0/g3", "f3n/w0/g3", "f5o/w0/g3", "p100/1000", "p100/1000", "p40/1000"]
EDGES = {(0, 3): "d0", (0, 5): "d1", (1, 4): "d0", (1, 5): "d1", (2, 5): "d0", (2, 3): "a"}


def _renumbered(labels, edges, perm):
    """The group parts with vertex ``v`` numbered ``perm[v]``."""
    out = [""] * len(labels)
    for v, label in enumerate(labels):
        out[perm[v]] = label
    return out, {(perm[u], perm[v]): role for (u, v), role in edges.items()}


def test_keys_and_matches_follow_the_graph_not_its_numbering():
    g = parts_graph(LABELS, EDGES)
    perm = [2, 0, 1, 4, 5, 3]  # flows among flows, ports among ports
    h = parts_graph(*_renumbered(LABELS, EDGES, perm))
    assert h != g and wl_hash(h) == wl_hash(g)
    assert wl_hash(g) == "bd5f0489e94e63f67fd14e10d00e0d16"  # a new key needs a new FORMAT
    assert flow_match(g, g) == {0: 0, 1: 1, 2: 2}
    assert flow_match(h, g) == {perm[v]: v for v in range(3)}  # the one isomorphism (VF2)
    # a role or a port's rate changed: another graph, another key, no match
    for labels, edges in ((LABELS, {**EDGES, (2, 3): "d1"}), (LABELS[:5] + ["p100/1000"], EDGES)):
        other = parts_graph(labels, edges)
        assert wl_hash(other) != wl_hash(g) and flow_match(other, g) is None and flow_match(g, other) is None


def test_keys_of_a_large_group_follow_the_graph_not_its_numbering():
    """An incast's group (64 flows over their own NIC and uplink into one shared port, ACKs back),
    renumbered at random: the same key; one flow's hop moved, or a vertex without edges added
    (keyed apart from the arrays' runs), another key, which renumbering keeps too."""
    rng = random.Random(7)
    labels = [f"f{rng.choice((1, 2))}o/w0/g3" for _ in range(64)] + ["p100/1000"] * 128 + ["p100/1000/s1"]
    edges = {}
    for f in range(64):
        edges[(f, 64 + 2 * f)] = "d0"
        edges[(f, 65 + 2 * f)] = "d1"
        edges[(f, 192)] = "d2"
    key = wl_hash(parts_graph(labels, edges))
    moved = {**edges, (5, 192): "d1"}
    lone = (labels + ["p400/10"], edges)
    for other_labels, other_edges in ((labels, moved), lone):
        other = wl_hash(parts_graph(other_labels, other_edges))
        assert other != key
        perm = list(range(len(other_labels)))
        rng.shuffle(perm)
        assert wl_hash(parts_graph(*_renumbered(other_labels, other_edges, perm))) == other
    for _ in range(3):
        perm = list(range(len(labels)))
        rng.shuffle(perm)
        assert wl_hash(parts_graph(*_renumbered(labels, edges, perm))) == key


def _vf2_match(graph, other):
    """flow_match as networkx's VF2 alone answers it."""
    import networkx as nx

    gm = nx.isomorphism.GraphMatcher(memo_mod._nx_graph(nx, graph), memo_mod._nx_graph(nx, other),
                                     node_match=lambda a, b: a["label"] == b["label"],
                                     edge_match=lambda a, b: a["role"] == b["role"])
    if not gm.is_isomorphic():
        return None
    return {v: gm.mapping[v] for v, label in enumerate(graph.labels) if label[0] == "f"}


def _edge_swap(edges: dict, rng) -> dict:
    """The edges with two of one role swapped between their flows where that makes new edges:
    (f1, p1), (f2, p2) -> (f1, p2), (f2, p1); degrees and role counts kept."""
    out = dict(edges)
    keys = sorted(out)
    for _ in range(20):
        (f1, p1), (f2, p2) = rng.sample(keys, 2) if len(keys) > 1 else (keys[0], keys[0])
        if f1 != f2 and p1 != p2 and out[(f1, p1)] == out[(f2, p2)] and (f1, p2) not in out and (f2, p1) not in out:
            role = out.pop((f1, p1))
            del out[(f2, p2)]
            out[(f1, p2)] = out[(f2, p1)] = role
            return out
    return out


def test_matches_read_off_the_colours_are_vf2s():
    """Random small group graphs against a renumbering of themselves, a graph with one role
    changed and one with two edges swapped: flow_match answers as VF2 does (where every flow gets
    a colour of its own, the flows' mapping is the only one, found without networkx). And a pair
    colour refinement cannot tell apart (the incidence graphs of a 6-cycle and of two 3-cycles:
    every vertex of degree 2): not isomorphic, as VF2 finds."""
    rng = random.Random(11)
    shortcut = twins = 0
    for _ in range(400):
        nf, nport = rng.randint(1, 5), rng.randint(1, 6)
        labels = [f"f{rng.randint(1, 2)}o/w0/g3" for _ in range(nf)] + [f"p{rng.randint(1, 2)}/1" for _ in range(nport)]
        edges = {}
        for f in range(nf):
            for hop, p in enumerate(rng.sample(range(nf, nf + nport), rng.randint(1, nport))):
                edges[(f, p)] = rng.choice((f"d{hop}", "a"))
        g = parts_graph(labels, edges)
        perm = list(range(nf)) + [nf + i for i in rng.sample(range(nport), nport)]
        fperm = rng.sample(range(nf), nf)
        perm[:nf] = fperm
        h = parts_graph(*_renumbered(labels, edges, perm))
        k = rng.choice(list(edges))
        changed = parts_graph(labels, {**edges, k: "a" if edges[k] != "a" else "d9"})
        swapped = parts_graph(labels, _edge_swap(edges, rng))  # the same degrees and roles
        for a, b in ((h, g), (g, h), (changed, g), (swapped, g), (g, swapped)):
            assert flow_match(a, b) == _vf2_match(a, b)
            colours = memo_mod._stable_colours(a, b)
            if colours is not None and memo_mod._distinct_flows_match(a, *colours) is not None:
                shortcut += 1
                twins += len(set(colours[0])) < len(a.labels)  # (ports alike: not every vertex told apart)
    assert shortcut > 300 and twins > 20
    ring = {(f, 6 + f): "d0" for f in range(6)} | {(f, 6 + (f + 1) % 6): "d0" for f in range(6)}
    rings = {(f, 6 + f): "d0" for f in range(6)} | {(f, 6 + 3 * (f // 3) + (f + 1) % 3): "d0" for f in range(6)}
    labels = ["f1o/w0/g3"] * 6 + ["p1/1"] * 6
    one, two = parts_graph(labels, ring), parts_graph(labels, rings)
    assert memo_mod._stable_colours(one, two) is not None
    assert flow_match(one, two) is None and _vf2_match(one, two) is None


def test_vf2_stops_after_its_steps(monkeypatch):
    """An incast's group graph (64 alike flows, each on its own NIC and uplink, into one port)
    renumbered: colour refinement cannot tell its flows apart, so VF2 matches it, in at most
    MATCH_STEPS_PER_VERTEX candidate pairs a vertex; with no step allowed the lookup is a miss
    (None), as a search past its steps is."""
    rng = random.Random(3)
    labels = ["f1o/w0/g3"] * 64 + ["p100/1000"] * 128 + ["p100/1000/s1"]
    edges = {}
    for f in range(64):
        edges[(f, 64 + 2 * f)] = "d0"
        edges[(f, 65 + 2 * f)] = "d1"
        edges[(f, 192)] = "d2"
    g = parts_graph(labels, edges)
    perm = rng.sample(range(64), 64) + [64 + i for i in range(128)] + [192]
    h = parts_graph(*_renumbered(labels, edges, perm))
    colours = memo_mod._stable_colours(h, g)
    assert colours is not None and memo_mod._distinct_flows_match(h, *colours) is None  # (VF2's case)
    m = flow_match(h, g)
    assert m is not None and sorted(m.values()) == list(range(64))  # (any bijection of alike flows is one)
    monkeypatch.setattr(memo_mod, "MATCH_STEPS_PER_VERTEX", 0)
    assert flow_match(h, g) is None


def test_a_pair_vf2_searches_for_minutes_is_a_miss_within_its_steps(monkeypatch):
    """Two real group graphs of overlapping rings (tests/data/wormhole/vf2_hard_pair.json) that
    colour refinement cannot tell apart and that VF2 alone searched for over 100 s: a miss after
    MATCH_STEPS_PER_VERTEX candidate pairs a vertex (counted; a search past four times that fails
    here instead of running on)."""
    import networkx as nx

    pair = json.loads((ROOT / "tests" / "data" / "wormhole" / "vf2_hard_pair.json").read_text())

    def graph(nl):
        labels = [n["label"] for n in sorted(nl["nodes"], key=lambda n: n["id"])]
        return parts_graph(labels, {(e["source"], e["target"]): e["role"] for e in nl["links"]})

    a, b = graph(pair["graph"]), graph(pair["other"])
    colours = memo_mod._stable_colours(a, b)
    assert colours is not None and memo_mod._distinct_flows_match(a, *colours) is None
    limit = memo_mod.MATCH_STEPS_PER_VERTEX * len(a.labels)
    base = nx.isomorphism.GraphMatcher.syntactic_feasibility
    steps = [0]

    def counted(self, u, v):
        steps[0] += 1
        assert steps[0] <= 4 * limit, "VF2 searched past its steps"
        return base(self, u, v)

    monkeypatch.setattr(nx.isomorphism.GraphMatcher, "syntactic_feasibility", counted)
    assert flow_match(a, b) is None
    assert limit <= steps[0] <= limit + 1


def test_a_graph_found_not_to_match_an_entry_is_not_matched_again(monkeypatch):
    """The incidence graphs of a 6-cycle and of two 3-cycles share their key (colour refinement
    cannot tell them apart) and do not match: the second lookup of the 6-cycle against the entry of
    the two 3-cycles is answered without matching them again (a VF2 search past its steps costs tens
    of ms, and identical rails look the same graph up again and again)."""
    ring = {(f, 6 + f): "d0" for f in range(6)} | {(f, 6 + (f + 1) % 6): "d0" for f in range(6)}
    rings = {(f, 6 + f): "d0" for f in range(6)} | {(f, 6 + 3 * (f // 3) + (f + 1) % 3): "d0" for f in range(6)}
    labels = ["f1o/w0/g3"] * 6 + ["p1/1"] * 6
    cache = MemoCache("t")
    hit, key, graph = cache.lookup(labels, rings)
    cache.insert(key, graph, 1000, {i: {"bytes": 1} for i in range(6)})
    calls = []
    real = memo_mod.flow_match
    monkeypatch.setattr(memo_mod, "flow_match", lambda a, b: calls.append(1) or real(a, b))
    assert cache.lookup(labels, ring)[0] is None and len(calls) == 1
    assert cache.lookup(labels, dict(ring))[0] is None and len(calls) == 1
    assert cache.lookup(labels, rings)[0] is not None


def test_memo_lookups_load_no_networkx():
    """networkx (VF2, ~70 ms to import) is loaded only to match graphs numbered otherwise whose
    flows are alike: not by importing the CLI, nor by lookups of groups numbered as their entry,
    nor of groups numbered otherwise whose colour refinement tells every flow apart."""
    perm = [2, 0, 1, 4, 5, 3]
    other = _renumbered(LABELS, EDGES, perm)
    script = ("import sys\n"
              "import pwormhole.commands.cli, pwormhole.simulate\n"
              "from pwormhole.accel.memo import MemoCache\n"
              f"labels, edges = {LABELS!r}, {EDGES!r}\n"
              "cache = MemoCache('t')\n"
              "hit, key, graph = cache.lookup(labels, edges)\n"
              "cache.insert(key, graph, 1000, {i: {'bytes': 1} for i in range(3)})\n"
              "(entry, mapping), _, _ = cache.lookup(list(labels), dict(edges))\n"
              "assert hit is None and mapping == {0: 0, 1: 1, 2: 2}\n"
              f"(entry, mapping), _, _ = cache.lookup(*{other!r})\n"
              f"assert mapping == {({perm[v]: v for v in range(3)})!r}, mapping\n"
              "print('networkx' in sys.modules)\n")
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["False"]


@pytest.mark.slow
def test_memo_cache_file_round_trip_and_corrupt_file(tmp_path):
    fp = config_fingerprint(config(), AccelConfig())
    # theta 0 picks the CC's default: the same configuration as that value set by hand
    assert fp == config_fingerprint(config(), AccelConfig(theta=0.02))
    assert fp != config_fingerprint(config(), AccelConfig(theta=0.03))
    hpcc = config_fingerprint(config("hpcc"), AccelConfig())
    assert hpcc == config_fingerprint(config("hpcc"), AccelConfig(theta=0.005))
    memo = MemoCache(fp)
    both(star_topo(6), pattern(0, 3_000 * US), memo=memo)
    path = tmp_path / "memo.json"
    memo.save(str(path))
    assert MemoCache.is_cache_file(str(path)) and path.read_bytes().startswith(FILE_HEAD)
    warnings = []
    loaded = MemoCache.load(str(path), fp, warnings.append)
    assert len(loaded) == len(memo) and not warnings
    assert len(MemoCache.load(str(path), "other", warnings.append)) == 0 and "another configuration" in warnings[-1]
    older = json.loads(path.read_text()) | {"format": "pwormhole-memo-9"}  # keys of another version
    path.write_text(json.dumps(older))
    assert len(MemoCache.load(str(path), fp, warnings.append)) == 0
    assert warnings[-1] == (f"memo cache {path} was made by another version of pwormhole (pwormhole-memo-9, this one "
                            f"reads {FORMAT}); ignored")
    path.write_text("{not json")
    assert len(MemoCache.load(str(path), fp, warnings.append)) == 0 and "unreadable" in warnings[-1]
    def run():
        return subprocess.run([sys.executable, "-m", "pwormhole", "run", "--scenario", "fat-tree-mix", "--memo-cache",
                               path, "--out", tmp_path / "out", "--no-progress"], capture_output=True, text=True,
                              cwd=ROOT, timeout=300)
    # a file that is no memo cache is refused, untouched (the run would write over it) ...
    r = run()
    assert r.returncode == 2 and "is a file but not a memo cache of pwormhole" in r.stderr
    assert path.read_text() == "{not json" and not (tmp_path / "out").exists()
    # ... a memo cache cut short is unreadable: ignored, and replaced by a good cache
    path.write_bytes(FILE_HEAD + b'10", "fingerprint"')
    r = run()
    assert r.returncode == 0 and "unreadable" in r.stderr and "ignored" in r.stderr
    assert json.loads(path.read_text())["format"] == FORMAT


@pytest.mark.slow
def test_memo_decisions_do_not_depend_on_the_process(tmp_path):
    """Graph matching must not follow Python's per-process string hashing: an MoE iteration whose
    expert all-to-all pairs hit the memo gives the same FCTs under different PYTHONHASHSEED values (it did not, before
    the memo graphs used int vertices)."""
    script = (
        "from pwormhole.workload.models import build_model\n"
        "from pwormhole.scenario import training_scenario, topology_from_arg\n"
        "from pwormhole.run import Run\n"
        "from pwormhole.accel.wormhole import AccelConfig\n"
        "from pwormhole.accel.memo import MemoCache\n"
        "spec = build_model('moe-8x7b', 16, tp=8, ep=2, layers=1, seq_len=256)\n"
        "scn = training_scenario(spec, topology_from_arg('rail-optimized:gpus=16'))\n"
        "r = Run(scn, accel=AccelConfig(), memo=MemoCache('t')).run()\n"
        "assert r.complete and r.accel.memo_hits > 0\n"
        "print(sorted(r.finish_ps.items()))\n")
    outs = []
    for seed in ("1", "2"):
        import os
        r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=ROOT, timeout=300,
                           env=dict(os.environ, PYTHONHASHSEED=seed, PYTHONPATH=str(ROOT)))
        assert r.returncode == 0, r.stderr
        outs.append(r.stdout)
    assert outs[0] == outs[1]


def test_a_graph_is_hashed_once_and_only_where_an_entry_has_its_size(monkeypatch):
    """A group whose graph size (vertices, edges) no entry has misses without its hash (its key is
    made when its recording goes in); identical groups (rails) that miss one after another are
    hashed once and get the same key and graph; once a recording is in they hit (after one hit,
    without a graph)."""
    hashed = []
    monkeypatch.setattr(memo_mod, "wl_hash", lambda graph: hashed.append(1) or wl_hash(graph))
    cache = MemoCache("t")
    labels, edges = ["f3n/w0/g3", "f3n/w0/g3", "p100/1000"], {(0, 2): "d0", (1, 2): "d0"}
    assert cache.lookup(labels, edges)[:2] == (None, None) and hashed == []
    other = ["f3n/w0/g3", "f4n/w0/g3", "p100/1000"]  # the same size, another graph
    _, _, other_graph = cache.lookup(other, edges)
    cache.insert(None, other_graph, 5 * US, {0: {"bytes": 1}, 1: {"bytes": 1}})
    assert len(hashed) == 1
    hit, key, graph = cache.lookup(labels, edges)
    again = cache.lookup(labels, dict(edges))
    assert hit is None and key == wl_hash(graph) and again == (None, key, graph) and len(hashed) == 2
    cache.insert(key, graph, 7 * US, {0: {"bytes": 1}, 1: {"bytes": 1}})
    (entry, mapping), hit_key, _ = cache.lookup(labels, dict(edges))
    assert entry.convergence_ps == 7 * US and sorted(mapping) == [0, 1] and hit_key == key
    assert cache.lookup(labels, dict(edges)) == ((entry, mapping), None, None) and len(hashed) == 2
