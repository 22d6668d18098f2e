"""The micro-batches of a layer list (training.micro_batch_layout), what the schedule does not run
(training.schedule_notes), and TP groups that span servers (scenario.tp_span_note)."""

import pytest
from helpers import ROOT

from pwormhole.scenario import topology_from_arg, training_scenario
from pwormhole.simulate import simulate
from pwormhole.workload.models import build_model
from pwormhole.workload.simai import read_simai_workload
from pwormhole.workload.training import build_training_dag, micro_batch_layout, schedule_notes

SIMAI = ROOT / "tests" / "data" / "simai" / "simai"
GPT7B = SIMAI / "pr_examples" / "workload_gpt7b_64g.txt"
ANALYTICAL = SIMAI / "example" / "workload_analytical.txt"

HEAD = ("HYBRID_TRANSFORMER_FWD_IN_BCKWD model_parallel_NPU_group: 1 ep: 1 pp: {pp} vpp: 1 ga: 2 all_gpus: {pp} "
        "checkpoints: 0 checkpoint_initiates: 0 pp_comm: {pp_comm}\n")
# AICB's layout in small: a line before the micro-batches, two copies of (embedding, block), two lines
# after; 7 lines, so ga 2 does not divide them (fwd, ig, wg compute in ns; no collective)
LINES = ["grad_norm -1 1000 NONE 0 2000 NONE 0 3000 NONE 0 0",
         "embedding -1 10000 NONE 0 20000 NONE 0 30000 NONE 0 0",
         "block -1 40000 NONE 0 50000 NONE 0 60000 NONE 0 0",
         "embedding -1 10000 NONE 0 20000 NONE 0 31000 NONE 0 0",  # (weight-gradient columns may differ)
         "block -1 40000 NONE 0 50000 NONE 0 60000 NONE 0 0",
         "optimizer -1 5000 NONE 0 6000 NONE 0 7000 NONE 0 0",
         "optimizer -1 3000 NONE 0 4000 NONE 0 1000 NONE 0 0"]


def small_file(tmp_path, pp=2, pp_comm=1000, lines=LINES, head=HEAD):
    p = tmp_path / "mb.txt"
    p.write_text(head.format(pp=pp, pp_comm=pp_comm) + f"{len(lines)}\n" + "\n".join(lines) + "\n")
    return read_simai_workload(p)


def test_aicb_files_hold_ga_copies_between_lines_before_and_after():
    """SimAI's GPT-7B (ga 8): grad_norm lines, 8 copies of 131 lines (embedding, 32 layers of 4 lines,
    final and norm lines), loss and optimizer lines; SimAI's MoE example (ga 24, pp 12) alike."""
    spec = read_simai_workload(GPT7B)
    lay = micro_batch_layout(spec)
    assert (lay.found, len(lay.before), len(lay.batches), len(lay.after)) == ("repeats", 3, 8, 7)
    assert {len(b) for b in lay.batches} == {131} and 3 + 8 * 131 + 7 == len(spec.layers)
    assert [spec.layers[i].name for i in lay.before] == ["grad_norm", "moe_grad_norm1", "moe_grad_norm2"]
    assert [spec.layers[b[0]].name for b in lay.batches] == ["embedding_layer"] * 8
    assert [spec.layers[i].name for i in lay.after][-1] == "optimizer4"
    assert schedule_notes(spec) == []
    spec = read_simai_workload(ANALYTICAL)
    lay = micro_batch_layout(spec)
    assert (lay.found, len(lay.before), len(lay.batches), {len(b) for b in lay.batches}, len(lay.after)) == (
        "repeats", 6, 24, {74}, 7)
    assert schedule_notes(spec) == [f"{ANALYTICAL}:1: vpp 8 (interleaved pipeline stages) is not modelled: each "
                                    "GPU runs its layer list as one of 12 stages"]


def test_built_in_models_are_ga_equal_parts():
    spec = build_model("gpt-350m", 8, tp=2, pp=2, layers=2, seq_len=256, ga=3)
    lay = micro_batch_layout(spec)
    assert (lay.found, lay.before, lay.after) == ("equal parts", [], [])
    assert lay.batches == [[0, 1], [2, 3], [4, 5]]  # one layer per stage: attention, mlp


def test_lines_before_run_first_forward_and_last_backward(tmp_path):
    """At pp 1 the compute order is SimAI's: the whole list forward, then in reverse (the two
    copies being alike, which copy runs first backward does not change a time)."""
    spec = small_file(tmp_path, pp=1, pp_comm=0)
    dag = build_training_dag(spec, [0])
    order = [dag.label[op].split(".", 1)[1] for op in range(len(dag)) if dag.kind[op] == 0]
    names = [ln.split()[0] for ln in LINES]
    fwd = [f"{n}.fwd" for n in names]
    bwd = [f"{n}.{p}" for n in reversed(names) for p in ("ig", "wg")]
    assert order == fwd + bwd  # (update times 0: the update is a mark, no compute op)


def test_two_micro_batches_pipeline_over_two_stages(tmp_path):
    """pp 2, ga 2 over NVLink: stage 1 runs micro-batch 0 while stage 0 runs micro-batch 1 (as one
    micro-batch, the stages would run one after the other). Compute by hand (us): stage 0 forward
    grad_norm+embedding+block = 51, then embedding+block+optimizers = 58; backward of the first
    chunk (optimizers, block, embedding: ig+wg) 13+5+110+50 = 178, of the second (block, embedding,
    grad_norm) 110+51+5 = 166; d: a pipeline send's arrival after its start."""
    spec = small_file(tmp_path)
    s = simulate(training_scenario(spec, topology_from_arg("rail-optimized:gpus=8")), str(tmp_path / "o"),
                 quiet=True)
    rows = [r.split(",") for r in (tmp_path / "o" / "timeline.csv").read_text().splitlines()[1:]]
    comp = {g: [(int(a), int(b)) for gg, k, a, b in rows if int(gg) == g and k == "compute"] for g in (0, 1)}
    us = 1000
    d = comp[1][0][0] - 51 * us  # stage 1 starts micro-batch 0 when its activations arrive
    assert 0 < d < us
    assert comp[1] == [(51 * us + d, 102 * us + d), (109 * us + d, (109 + 58 + 178 + 166) * us + d)]
    back = comp[0][1][0] - ((109 + 58 + 178) * us + d)  # stage 1 sends micro-batch 0's gradients back
    assert abs(back - d) <= 1  # (the file's ns are rounded down from ps)
    assert comp[0] == [(0, 109 * us), (comp[0][1][0], comp[0][1][0] + (178 + 166) * us)]
    assert abs(s["iterations"][0] - comp[0][1][1]) <= 1
    sends = [r.split(",")[0] for r in (tmp_path / "o" / "collectives.csv").read_text().splitlines()[1:]]
    assert sends == ["it0.mb0.pp_fwd.s0.gpu0", "it0.mb1.pp_fwd.s0.gpu0", "it0.mb0.pp_bwd.s1.gpu1",
                     "it0.mb1.pp_bwd.s1.gpu1"]


def test_a_list_without_ga_copies_runs_as_one_micro_batch_and_says_so(tmp_path):
    spec = small_file(tmp_path, lines=LINES[:3] + LINES[5:])  # one copy only
    lay = micro_batch_layout(spec)
    assert (lay.found, lay.batches) == ("none", [[0, 1, 2, 3, 4]])
    assert schedule_notes(spec) == [
        f"{tmp_path / 'mb.txt'}:1: ga 2: the 5 layer lines are not 2 copies of one micro-batch's lines (with lines "
        "before and after them); they run as one micro-batch, forward then backward in reverse, as SimAI runs every "
        "list (no micro-batch pipelining)"]


def test_vpp_and_checkpoints_are_said_not_modelled(tmp_path):
    head = HEAD.replace("vpp: 1", "vpp: 4").replace("checkpoints: 0", "checkpoints: 2 1 2")
    spec = small_file(tmp_path, head=head)
    where = f"{tmp_path / 'mb.txt'}:1:"
    assert schedule_notes(spec) == [
        f"{where} vpp 4 (interleaved pipeline stages) is not modelled: each GPU runs its layer list as one of 2 stages",
        f"{where} checkpoints: activation recomputation is not modelled (no forward pass re-run in the backward "
        "pass), as in SimAI, whose reader never marks a layer to start one"]
    assert schedule_notes(small_file(tmp_path, pp=1, pp_comm=0, head=head.replace("checkpoints: 2 1 2",
                                                                                  "checkpoints: 0"))) == []


@pytest.mark.parametrize("topo, tp, note", [
    ("rail-optimized:gpus=16", 16, "TP groups of 16 GPUs span servers of 8 GPUs (the first: GPUs 0-15 in 2 servers)"),
    ("rail-optimized:gpus=16,gpus_per_server=4", 8, "TP groups of 8 GPUs span servers of 4 GPUs (the first: GPUs "
                                                    "0-7 in 2 servers)"),
    ("rail-optimized:gpus=16", 8, None),
    ("leaf-spine:hosts=16,leaves=2,spines=2", 16, None),  # no servers: nothing to say
])
def test_tp_groups_across_servers_are_warned(topo, tp, note):
    spec = build_model("gpt-350m", 16, tp=tp, layers=1, seq_len=128)
    scn = training_scenario(spec, topology_from_arg(topo))
    said = [w for w in scn.warnings if w.startswith("TP groups")]
    assert said == ([] if note is None else [f"{note}: their collectives cross the NIC fabric between servers, not "
                                             "only NVLink"])


def test_servers_of_a_simai_topology_and_of_a_builder():
    topo = topology_from_arg("rail-optimized:gpus=16,nvswitches=2")
    servers = topo.servers()
    assert servers is not None and [servers[g] for g in topo.gpus] == [0] * 8 + [1] * 8
    assert topology_from_arg("fat-tree:k=4").servers() is None
