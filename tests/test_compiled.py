"""The compiled engine (Cython-built hot path) against the pure-Python model: same bits.

Each identity case runs ``pwormhole run`` twice in subprocesses, with the engine the
install built and with ``PWORMHOLE_PURE=1``, and compares every output byte for byte
(the summary without its wall-clock keys and the engine's name). Where the compiled
engine is not built they are skipped, except under ``PWORMHOLE_REQUIRE_COMPILED=1``
(CI), where its absence is a failure.
"""

from __future__ import annotations

import hashlib
import heapq
import importlib.machinery
import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import DATA, MPIEXEC, needs_mpi

from pwormhole import compiled
from pwormhole.config import MAX_PAYLOAD_BYTES
from pwormhole.engine import events
from pwormhole.errors import InputError
from pwormhole.inputs.hpcc_config import read_hpcc_config

REF = DATA / "hpcc" / "reference"
COMPILED = compiled.engine() == "compiled"
REQUIRED = os.environ.get("PWORMHOLE_REQUIRE_COMPILED") == "1"
needs_compiled = pytest.mark.skipif(not COMPILED and not REQUIRED, reason=f"engine: {compiled.engine()}")
NOT_COMPARED = {"wall_s", "events_per_s", "sync_wall_s", "ready_wait_s", "cpu_s", "engine", "run_id"}
OUTPUTS = ("fct.txt", "pfc.txt", "collectives.csv", "iterations.csv", "qlen.txt", "link_util.csv")


def test_compiled_engine_built_where_required():
    """CI installs with a compiler: the compiled engine must be what runs there."""
    if not REQUIRED:
        pytest.skip("PWORMHOLE_REQUIRE_COMPILED is not set")
    assert compiled.engine() == "compiled"
    assert not events.__file__.endswith(".py")


def test_pure_switch_imports_the_sources():
    code = ("import pwormhole.compiled as c, pwormhole.net.host as n, pwormhole.engine.events as e;"
            "print(c.engine(), n.__file__.endswith('.py'), e.EventQueue.__name__)")
    out = subprocess.run([sys.executable, "-c", code], env={**os.environ, "PWORMHOLE_PURE": "1"},
                         capture_output=True, text=True, check=True).stdout.split()
    assert out == ["pure", "(PWORMHOLE_PURE", "is", "set)", "True", "HeapqQueue"]


def test_stale_or_missing_build_runs_pure(tmp_path, monkeypatch):
    """A manifest whose digests differ from the sources (an edit after the build) or no
    manifest at all: the pure modules run, with a warning that says how to fix it."""
    monkeypatch.delenv("PWORMHOLE_PURE", raising=False)
    monkeypatch.setattr(compiled, "PACKAGE_DIR", tmp_path)
    assert compiled._why_pure() == "the compiled engine is not built"
    stale = {m: "0" * 64 for m in compiled.COMPILED_MODULES}
    (tmp_path / compiled.MANIFEST).write_text(json.dumps(stale))
    for m in compiled.COMPILED_MODULES:  # sources and extensions where the finder looks for them
        src = tmp_path.joinpath(*m.split(".")[1:]).with_suffix(".py")
        src.parent.mkdir(parents=True, exist_ok=True)
        src.write_text("x = 1\n")
        src.with_suffix(".pxd").write_text("cdef int x\n")
        src.with_name(src.stem + importlib.machinery.EXTENSION_SUFFIXES[0]).write_bytes(b"")
    assert compiled._why_pure() == "the compiled engine is older than its source"
    (tmp_path / compiled.MANIFEST).write_text(json.dumps(compiled.source_digests()))
    assert compiled._why_pure() is None
    monkeypatch.setenv("PWORMHOLE_PURE", "1")
    assert compiled._why_pure() == "PWORMHOLE_PURE is set"


def test_payload_limit_keeps_serialization_in_64_bits(tmp_path):
    """The compiled engine times a packet in C 64-bit: wire bytes x 8e12 must stay below 2^63."""
    assert (MAX_PAYLOAD_BYTES + 200) * 8_000_000_000_000 < 2**63
    cfg = tmp_path / "config.txt"
    cfg.write_text(f"PACKET_PAYLOAD_SIZE {MAX_PAYLOAD_BYTES}\n")
    assert read_hpcc_config(str(cfg))[0].packet_payload_bytes == MAX_PAYLOAD_BYTES
    cfg.write_text(f"PACKET_PAYLOAD_SIZE {MAX_PAYLOAD_BYTES + 1}\n")
    with pytest.raises(InputError, match="PACKET_PAYLOAD_SIZE value"):
        read_hpcc_config(str(cfg))


class KindsOf(events.EventFilter):
    """Owns the events of some kinds."""

    def __init__(self, kinds):
        self.kinds = kinds

    def owns(self, kind, target, arg):
        return kind in self.kinds


@pytest.mark.parametrize("queue", [events.ArrayQueue, events.HeapqQueue])
def test_event_queue_pops_in_time_and_key_order(queue):
    """Both queues pop what heapq on event tuples pops, through growth, replace, take and events()."""
    rng = random.Random(7)
    for _ in range(40):
        ref: list = []
        got = queue()
        key = 0
        for _ in range(rng.randint(1, 700)):
            r = rng.random()
            if ref and r < 0.4:
                assert got.pop() == heapq.heappop(ref)
            elif r < 0.42:
                assert sorted(got.events()) == sorted(ref)
                keep = [ev for ev in ref if ev[1] % 3]
                got.replace(keep)
                ref = keep
                heapq.heapify(ref)
            elif r < 0.44:  # take the events of some kinds: the rest stay a heap
                kinds = set(rng.sample(range(10), rng.randint(1, 9)))
                taken = got.take(KindsOf(kinds))
                assert sorted(taken) == sorted(ev for ev in ref if ev[2] in kinds)
                ref = [ev for ev in ref if ev[2] not in kinds]
                heapq.heapify(ref)
            else:
                key += 1
                ev = (rng.randint(0, 40), key, rng.randint(0, 9), f"n{key}", key * 2)  # many equal times
                heapq.heappush(ref, ev)
                got.push(*ev)
            assert len(got) == len(ref) and got.next_time() == (ref[0][0] if ref else events.INF_PS)


def test_event_queue_run_stops_before_the_end():
    """run() handles every event before ``end_ps`` in order, with what handlers push meanwhile."""
    for queue in (events.ArrayQueue, events.HeapqQueue):
        q = queue([(5, 2, 0, "a", 1), (5, 1, 0, "b", 2), (9, 3, 0, "c", 3)])
        seen = []

        def handle(target, arg, t, q=q, seen=seen):
            seen.append((t, target, arg))
            if target == "b":
                q.push(7, 10, 0, "d", 4)

        assert q.run(9, (handle,)) == 3
        assert seen == [(5, "b", 2), (5, "a", 1), (7, "d", 4)] and q.events() == [(9, 3, 0, "c", 3)]


class _Recorder(events.Handler):
    """A handler object that records what it handles."""

    def __init__(self):
        self.seen = []

    def handle(self, target, arg, t_ps):
        self.seen.append((t_ps, target, arg))


def test_event_queue_run_calls_handler_objects():
    """A Handler in the table is called with the event's target, argument and time (compiled:
    through its vtable), beside a plain function, and is callable as one."""
    for queue in (events.ArrayQueue, events.HeapqQueue):
        rec = _Recorder()
        plain = []
        q = queue([(3, 1, 0, "a", 1), (4, 2, 1, "b", 2), (6, 3, 0, "c", 3)])
        assert q.run(10, (rec, lambda target, arg, t, plain=plain: plain.append((t, target, arg)))) == 3
        assert rec.seen == [(3, "a", 1), (6, "c", 3)] and plain == [(4, "b", 2)]
        rec(7, "d", 4)
        assert rec.seen[-1] == (4, 7, "d")
        wrapped = []  # the base Handler calls the function it holds
        q = queue([(5, 1, 0, "e", 9)])
        assert q.run(10, (events.Handler(lambda target, arg, t, out=wrapped: out.append((t, target, arg))),)) == 1
        assert wrapped == [(5, "e", 9)]


def _run(args: list, out: Path, pure: bool, ranks: int = 1) -> dict:
    env = {**os.environ, "PWORMHOLE_PURE": "1" if pure else "0"}
    cmd = [sys.executable, "-m", "pwormhole", "run", *map(str, args), "--out", str(out), "--no-progress"]
    if ranks > 1:
        cmd = [MPIEXEC, "-n", str(ranks), *cmd]
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    summary = json.loads((out / "summary.json").read_text())
    assert summary["engine"] == ("pure (PWORMHOLE_PURE is set)" if pure else "compiled")
    got = {k: v for k, v in summary.items() if k not in NOT_COMPARED}
    got["inputs"].pop("command")  # names the out folder
    for name in OUTPUTS:
        if (out / name).exists():
            got[name] = hashlib.sha256((out / name).read_bytes()).hexdigest()
    return got


def _incast(d: Path) -> list:
    """An 8-to-1 incast of 1 MB flows, 1 MB switch buffer, no ECN: PFC pauses."""
    (d / "topo.txt").write_text("10 1 9\n9\n" + "".join(f"{h} 9 100Gbps 0.001ms 0\n" for h in range(9)))
    (d / "flow.txt").write_text("8\n" + "".join(f"{s} 0 3 100 1000000 0\n" for s in range(1, 9)))
    (d / "config.txt").write_text("CC_MODE 1\nENABLE_QCN 0\nBUFFER_SIZE 1\n")
    return ["--topology", d / "topo.txt", "--flows", d / "flow.txt", "--config", d / "config.txt"]


def _link_down(d: Path) -> list:
    """k=4 fat tree, permutation of 1 MB flows, a core link failing mid-run (loss, go-back-N)."""
    (d / "perm.txt").write_text("16\n" + "".join(f"{h} {(h + 4) % 16} 3 100 1000000 2\n" for h in range(16)))
    (d / "down.txt").write_text("CC_MODE 1\nLINK_DOWN 133 29 34\n")
    return ["--topology", "fat-tree:k=4", "--flows", d / "perm.txt", "--config", d / "down.txt"]


def _hpcc_big_window(d: Path) -> list:
    """HPCC with windows over 1.15 MB (100 Gbps, 50 us links: a 2.5 MB BDP), in Wormhole mode:
    a window x 8e12 passes 2^63, so the snapshot's rate must be Python-int arithmetic."""
    (d / "topo.txt").write_text("5 1 4\n4\n" + "".join(f"{h} 4 100Gbps 0.05ms 0\n" for h in range(4)))
    (d / "flow.txt").write_text("3\n" + "".join(f"{s} 3 3 100 200000000 2\n" for s in range(3)))
    (d / "config.txt").write_text("CC_MODE 3\nHAS_WIN 1\nVAR_WIN 1\n")
    return ["--topology", d / "topo.txt", "--flows", d / "flow.txt", "--config", d / "config.txt",
            "--mode", "wormhole"]


def _hpcc_ref(name: str, until: str) -> list:
    s = REF / name
    return ["--topology", s / "topology.txt", "--flows", s / "flow.txt", "--config", s / "config.txt",
            "--until", until]


def _s2_as(d: Path, mode: int, extra: str = "") -> list:
    """HPCC's S2 mix (two 200 MB flows into host 1) under another CC_MODE, for 500 us."""
    src = REF / "s2_dcqcn"
    for name in ("topology.txt", "flow.txt", "trace.txt"):
        (d / name).write_bytes((src / name).read_bytes())
    (d / "config.txt").write_text((src / "config.txt").read_text().replace("CC_MODE 1", f"CC_MODE {mode}") + extra)
    return ["--hpcc-config", d / "config.txt", "--until", "2.0005"]


GPT = ["--model", "gpt-350m", "--gpus", "16", "--tp", "8", "--layers", "1"]
CASES = {
    "s1-hpcc": lambda d: _hpcc_ref("s1_hpcc", "2.0005"),
    "s2-dcqcn": lambda d: _hpcc_ref("s2_dcqcn", "2.0005"),
    "s3-incast": lambda d: ["--hpcc-config", REF / "s3_dcqcn" / "config.txt", "--until", "2.0002"],
    "pfc-incast": _incast,
    "pfc-incast-monitors": lambda d: _incast(d) + ["--monitor", "--monitor-interval", "50ns", "--link-interval", "1us"],
    "hpcc-big-window-wormhole": _hpcc_big_window,
    "link-down": _link_down,
    "fat-tree-mix-wormhole": lambda d: ["--scenario", "fat-tree-mix", "--mode", "wormhole"],
    "gpt-packet-hpcc": lambda d: GPT + ["--mode", "packet", "--cc", "hpcc"],
    "gpt-wormhole": lambda d: GPT + ["--mode", "wormhole"],
    "gpt-dopt-nvlink-packets": lambda d: GPT + ["--dist-opt", "--nvlink", "packet"],
    # NVLink by rates (accel/fluid.py): servers handed over to packets, stopped mid-flow; opt-in rates under DCQCN
    "gpt-nvlink-handover": lambda d: GPT + ["--topology", "rail-optimized:gpus=16,nvswitches=2", "--until", "0.00005"],
    "gpt-nvlink-nic-rates": lambda d: GPT + ["--nvlink-cc", "nic", "--nvlink", "fluid", "--until", "0.0003",
                                             "--monitor"],
    "s2-timely-rate-only": lambda d: _s2_as(d, 7, "HAS_WIN 0\n"),
    "s2-dctcp-rate-only": lambda d: _s2_as(d, 8, "HAS_WIN 0\n"),
    "gpt-wormhole-timely": lambda d: GPT + ["--mode", "wormhole", "--cc", "timely"],
    "fat-tree-mix-wormhole-dctcp": lambda d: ["--scenario", "fat-tree-mix", "--mode", "wormhole", "--cc", "dctcp"],
}


@needs_compiled
@pytest.mark.slow
@pytest.mark.parametrize("case", sorted(CASES))
def test_compiled_output_identical_to_pure(case, tmp_path):
    args = CASES[case](tmp_path)
    got = _run(args, tmp_path / "compiled", pure=False)
    assert got == _run(args, tmp_path / "pure", pure=True)
    assert got["events"] > 0
    if case == "gpt-nvlink-handover":  # the case covers what it says
        assert got["nvlink_servers_by_packets"] >= 1 and got["nvlink_by_packets_from_ns"] < 50_000
    if case == "gpt-nvlink-nic-rates":
        assert got["nvlink_model"] == "rates" and got["fluid_flows"] > 0


@needs_compiled
@needs_mpi
@pytest.mark.slow
def test_compiled_two_ranks_identical_to_pure(tmp_path):
    args = GPT + ["--mode", "wormhole"]
    got = _run(args, tmp_path / "compiled", pure=False, ranks=2)
    assert got["ranks"] == 2
    assert got == _run(args, tmp_path / "pure", pure=True, ranks=2)


class KindLead(events.Lead):
    """Leads by event kind."""

    def __init__(self, leads):
        self.leads = leads

    def lead_ps(self, kind, target, arg):
        return self.leads[kind]


@pytest.mark.parametrize("queue", [events.ArrayQueue, events.HeapqQueue])
def test_event_queue_horizon_is_the_least_time_plus_lead(queue):
    """horizon() is the least ``t + lead`` over every pending event (its pruned walk misses none),
    INF_PS when every lead is INF_PS; with 0 leads, the next event time."""
    rng = random.Random(11)
    inf = events.INF_PS
    for _ in range(300):
        leads = [rng.choice([0, 3, 50, 400, inf]) for _ in range(10)]
        q = queue()
        ref: list = []
        for key in range(rng.randint(0, 80)):
            ev = (rng.randint(0, 300), key, rng.randint(0, 9), None, None)
            q.push(*ev)
            heapq.heappush(ref, ev)
        for _ in range(rng.randint(0, len(ref))):  # popped entries leave stale slots behind
            assert q.pop() == heapq.heappop(ref)
        want = min((min(t + leads[k], inf) for t, _, k, _, _ in ref), default=inf)
        assert q.horizon(KindLead(leads)) == want
        assert q.horizon(events.Lead()) == q.next_time()
