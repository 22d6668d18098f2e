"""Ranks after Wormhole: identical outputs at 1, 2, 4 and 8 ranks, window records, plans balanced
from a record, the scaling prediction, and the fluid model's rate memo."""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from helpers import MPIEXEC, ROOT, config, flows_of, needs_mpi

from pwormhole.accel import fluid
from pwormhole.accel.wormhole import AccelConfig, Wormhole
from pwormhole.errors import InputError
from pwormhole.partition.plan import make_plan_from_record
from pwormhole.partition.record import WindowRecord, exchange_s, predict, refine
from pwormhole.run import Run
from pwormhole.scenario import Scenario, topology_from_arg, training_scenario
from pwormhole.simulate import simulate
from pwormhole.workload.models import build_model

# two 8-GPU servers (TP 8 over NVLink by rates, DP 2 over the rails): 18 indivisible units
TRAINING = ["--model", "gpt-350m", "--gpus", "16", "--tp", "8", "--layers", "1", "--topology",
            "rail-optimized:gpus=16", "--no-progress"]
OUTPUTS = ("fct.txt", "pfc.txt", "collectives.csv")
PER_RUN = {"wall_s", "events_per_s", "sync_wall_s", "ready_wait_s", "cpu_s", "inputs", "events_by_rank", "ranks",
           "partition", "windows", "run_id", "outputs", "lps"}


def _run(out, *args, ranks=1):
    cmd = [sys.executable, "-m", "pwormhole", "run", *TRAINING, *map(str, args), "--out", str(out)]
    if ranks > 1:
        cmd = [MPIEXEC, "-n", str(ranks), *cmd]
    r = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert r.returncode == 0, r.stderr
    return json.loads((Path(out) / "summary.json").read_text())


def _answer(out):
    s = json.loads((Path(out) / "summary.json").read_text())
    return [(Path(out) / n).read_bytes() for n in OUTPUTS] + [{k: v for k, v in s.items() if k not in PER_RUN}]


@needs_mpi
def test_wormhole_training_identical_at_1_2_4_8_ranks(tmp_path):
    """8 ranks on this machine are oversubscribed; the answer may not depend on it, nor on the plan
    (the 2-rank run takes a plan balanced from a recorded run), nor may the windows."""
    one = _run(tmp_path / "r1", "--record-windows")
    assert one["complete"] and one["fluid_flows"] > 0 and one["skips"] > 0
    plan = subprocess.run([sys.executable, "-m", "pwormhole", "partition", "--from-run", tmp_path / "r1", "--parts",
                           "2", "--save", tmp_path / "plan2.json"], capture_output=True, text=True, cwd=ROOT,
                          timeout=120)
    assert plan.returncode == 0, plan.stderr
    assert "predicted: wall" in plan.stdout
    ref = _answer(tmp_path / "r1")
    assert ref[0].count(b"\n") == one["flows"]
    for ranks in (2, 4, 8):
        extra = ["--plan", tmp_path / "plan2.json"] if ranks == 2 else []
        s = _run(tmp_path / f"r{ranks}", *extra, ranks=ranks)
        assert s["ranks"] == ranks and len(s["events_by_rank"]) == ranks
        assert s["ready_wait_s"] >= 0  # the wait for the other ranks' set-up, kept out of wall_s
        assert sum(s["events_by_rank"]) == one["events"]
        assert s["windows"] == one["windows"]  # the same boundaries: the hook decides at the same times
        assert _answer(tmp_path / f"r{ranks}") == ref, f"{ranks} ranks differ from 1"


def test_record_has_every_event_and_keeps_servers_whole(tmp_path):
    spec = build_model("gpt-350m", 16, tp=8, layers=1)
    scn = training_scenario(spec, topology_from_arg("rail-optimized:gpus=16"))
    s = simulate(scn, str(tmp_path), quiet=True, accel=AccelConfig(), record_windows=True)
    rec = WindowRecord.load(str(tmp_path / "windows.npz"))
    assert rec.windows == s["windows"] and int(rec.events.sum()) == s["events"]
    assert rec.n_units == 18 and rec.window_ps == 1_000_000  # 2 servers (8 GPUs + NVSwitch), 8 rail, 8 spine switches
    assert (rec.unit_s >= 0).all() and rec.unit_s.sum() > 0
    assert (rec.writer_s >= 0).all() and rec.writer_s.sum() > 0  # 1,088 fct lines written
    assert rec.local_s is not None and (rec.local_s >= 0).all() and rec.local_s.sum() > 0  # groups froze and woke
    assert rec.sent is not None and rec.sent[:, 3].sum() > 0 and (rec.sent[:, 1] != rec.sent[:, 2]).all()
    plan = make_plan_from_record(rec, 2)
    for u in range(rec.n_units):
        assert len({plan.owner[n] for n in range(rec.unit.size) if rec.unit[n] == u}) == 1
    assert sorted(set(plan.owner)) == [0, 1] and plan.lookahead_ps == 1_000_000


def _record(unit_s, boundary_s=0.0, writer_s=0.0):
    unit_s = np.array(unit_s, dtype=float)
    w, u = unit_s.shape
    return WindowRecord(np.arange(1, w + 1) * 1000, np.ones((w, u), dtype=np.int64), unit_s,
                        np.full(w, boundary_s), np.arange(u), np.zeros((0, 3), dtype=np.int64), 1000,
                        np.full(w, writer_s))


def test_the_writers_seconds_are_shared_by_the_ranks():
    # 4 equal units, 0.2 s of output lines a window: each of 2 ranks makes half of them
    rec = _record([[0.1, 0.1, 0.1, 0.1]] * 2, writer_s=0.2)
    assert predict(rec, [0, 0, 1, 1], 2).compute_s == pytest.approx(2 * 0.3)
    assert predict(rec, [0, 0, 0, 0], 1).compute_s == pytest.approx(2 * 0.6)
    assert predict(rec, [0, 1, 2, 3], 4).compute_s == pytest.approx(2 * 0.15)


def test_the_heaps_seconds_are_shared_by_the_ranks(tmp_path):
    # Wormhole's freezes and wakes touch each rank's own heap: 0.4 s a window, a quarter on each of 4 ranks
    rec = _record([[0.1, 0.1, 0.1, 0.1]] * 2)._replace(local_s=np.full(2, 0.4))
    assert predict(rec, [0, 0, 1, 1], 2).compute_s == pytest.approx(2 * 0.4)
    assert predict(rec, [0, 1, 2, 3], 4).compute_s == pytest.approx(2 * 0.2)
    assert predict(rec, [0, 0, 0, 0], 1).compute_s == pytest.approx(2 * 0.8)
    rec.save(str(tmp_path / "w.npz"))
    assert (WindowRecord.load(str(tmp_path / "w.npz")).local_s == 0.4).all()


def test_events_crossing_ranks_are_packed_and_unpacked(tmp_path):
    # window 0: unit 0 sends unit 1 1,000 events; window 1: unit 1 sends unit 0 10
    rec = _record([[0.1, 0.1]] * 2)._replace(sent=np.array([[0, 0, 1, 1000], [1, 1, 0, 10]]))
    assert predict(rec, [0, 1], 2).compute_s == pytest.approx(0.1 + 1000 * 0.3e-6 + 0.1 + 10 * 0.3e-6)
    assert predict(rec, [0, 0], 1).compute_s == pytest.approx(0.4)  # the same LP: nothing crosses
    rec.save(str(tmp_path / "w.npz"))
    assert WindowRecord.load(str(tmp_path / "w.npz")).sent.tolist() == [[0, 0, 1, 1000], [1, 1, 0, 10]]


def test_refine_spreads_units_busy_in_the_same_windows():
    # units 0 and 1 work in window 0 only, units 2 and 3 in window 1 only (two pipeline stages)
    rec = _record([[1.0, 1.0, 0.0, 0.0], [0.0, 0.0, 1.0, 1.0]])
    assert predict(rec, [0, 0, 1, 1], 2).compute_s == 2.0 + 2.0  # balanced in total, not per window
    best = refine(rec, [0, 0, 1, 1], 2)
    assert best[0] != best[1] and best[2] != best[3]
    assert predict(rec, best, 2).compute_s == 1.0 + 1.0


def test_predict_adds_the_boundaries():
    rec = _record([[0.3, 0.1], [0.1, 0.3]], boundary_s=0.01)
    one = predict(rec, [0, 0], 1)
    assert one.compute_s == pytest.approx(0.8) and one.boundary_s == pytest.approx(0.02)
    two = predict(rec, [0, 1], 2, exchange_us=50)
    assert two.compute_s == pytest.approx(0.6)
    assert two.boundary_s == pytest.approx(2 * (0.01 + 50e-6)) and two.imbalance == pytest.approx(0.0)
    assert exchange_s(8, 50) == pytest.approx(150e-6) and exchange_s(1, 50) == 0.0


def test_bad_record_is_an_input_error(tmp_path):
    p = tmp_path / "windows.npz"
    p.write_bytes(b"not a zip")
    with pytest.raises(InputError, match="cannot read window record"):
        WindowRecord.load(str(p))
    np.savez(p, events=np.zeros((2, 2)))
    with pytest.raises(InputError, match="no 't_end_ps'"):
        WindowRecord.load(str(p))


def _incast_twice() -> Scenario:
    """Three flows into GPU 0 beside two pairs of other sizes, all inside one server, the same again
    2 ms later (unequal rates, several port layouts as flows leave, each met twice), then four
    disjoint pairs (as many flows as a layout met before, on other ports), then the first wave
    with its flows numbered in another order (the same ports, the rates in another order)."""
    topo = topology_from_arg("rail-optimized:gpus=8")
    cfg = config("dcqcn")
    cfg.fill_k_maps({ln.rate_bps for ln in topo.links})
    wave = [(1, 0, 1_000_000), (2, 0, 1_000_000), (3, 0, 1_000_000), (4, 5, 1_500_000), (6, 7, 500_000)]
    specs = [(s, d, size, t) for t in (0, 2_000_000_000) for s, d, size in wave]
    specs += [(s, (s + 1) % 8, 1_000_000, 4_000_000_000) for s in (1, 3, 5, 7)]
    specs += [(s, d, size, 6_000_000_000) for s, d, size in wave[::-1]]
    return Scenario("incast-twice", topo, flows_of(specs), cfg)


def test_rate_memo_gives_the_rates_of_a_fresh_solve(tmp_path, monkeypatch):
    solves = {"n": 0}
    max_min = fluid.max_min

    def counted(*args):
        solves["n"] += 1
        return max_min(*args)

    def ring_step(out):  # one layout repeated by every ring step: the memo's common case
        spec = build_model("gpt-350m", 8, tp=8, layers=1)
        scn = training_scenario(spec, topology_from_arg("rail-optimized:gpus=8"))
        simulate(scn, str(tmp_path / out), quiet=True, accel=AccelConfig())
        return (tmp_path / out / "fct.txt").read_bytes()

    def incast():  # several layouts, each met twice: a memo that mixed them up would move the finish times
        sim = Run(_incast_twice(), accel=AccelConfig()).run()
        assert not any(d.packet_fids for d in sim.accel.fluid_domains.values())  # all by rates
        return sorted(sim.finish_ps.items())

    def solved(fn, arg=None):
        solves["n"] = 0
        got = fn(arg) if arg is not None else fn()
        return got, solves["n"]

    monkeypatch.setattr(fluid, "max_min", counted)  # (a module global: patched in the compiled module too)
    memo_ring, solves_memo_ring = solved(ring_step, "memo")
    memo_incast, solves_memo_incast = solved(incast)
    monkeypatch.setattr(fluid, "RATE_MEMO_LAYOUTS", 0)  # no memo: every recomputation solves
    fresh_ring, solves_fresh_ring = solved(ring_step, "fresh")
    fresh_incast, solves_fresh_incast = solved(incast)
    assert solves_fresh_ring > 10 * solves_memo_ring > 0  # the ring steps share one layout
    assert solves_fresh_incast > solves_memo_incast > 0
    assert fresh_ring == memo_ring
    assert fresh_incast == memo_incast


def test_the_completions_that_travel_are_those_wormhole_saw_start(monkeypatch):
    """Under MPI a completion travels in its window only when the boundary hook tracks the flow (its start was
    reported: every flow but the NVLink flows completed by rates); the others stay on their rank until a batch."""
    started: set = set()
    flow_started = Wormhole._flow_started

    def seen(self, fid, t):
        started.add(fid)
        return flow_started(self, fid, t)

    monkeypatch.setattr(Wormhole, "_flow_started", seen)
    spec = build_model("gpt-350m", 16, tp=8, layers=1)
    sim = Run(training_scenario(spec, topology_from_arg("rail-optimized:gpus=16")), accel=AccelConfig()).run()
    tracked = sim._tracked()
    assert sim.complete and tracked is not None
    done = [(f, t, sim.start_ps[f]) for f, t in sorted(sim.finish_ps.items())]
    assert {rec[0] for rec in tracked(done)} == started
    assert 0 < len(started) < len(sim.finish_ps)
