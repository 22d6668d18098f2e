"""SimAI/AICB workload reader, parallel-group layout and built-in model generator."""

import math
import re

import pytest
from helpers import ROOT

from pwormhole.errors import InputError
from pwormhole.workload.models import MODELS, build_model, collective_send_bytes, layer_params, per_gpu_bytes
from pwormhole.workload.simai import (
    Layer,
    Phase,
    TrainingSpec,
    dp_ep_groups,
    dp_groups,
    ep_groups,
    format_simai_workload,
    group_of,
    looks_like_simai_workload,
    pp_groups,
    pp_stage_of,
    read_simai_workload,
    tp_groups,
)

DATA = ROOT / "tests" / "data" / "simai"
SHARED = ROOT.parent / "shared" / "real_inputs"
MICRO = DATA / "simai" / "example" / "microAllReduce.txt"
ANALYTICAL = DATA / "simai" / "example" / "workload_analytical.txt"
GPT7B = DATA / "simai" / "pr_examples" / "workload_gpt7b_64g.txt"
MODEL_DIR = DATA / "aicb" / "simAI" / "model_workload"

# declared (and present) layer counts of every workload file in tests/data/simai
LAYER_COUNTS = {
    "microAllReduce.txt": 2, "workload_analytical.txt": 1789, "microAllReduce_128g.txt": 2,
    "microAllReduce_16g.txt": 2, "microAllReduce_32g.txt": 2, "microAllReduce_dp.txt": 2,
    "workload_gpt7b_64g.txt": 1058, "workload_oxc_32g.txt": 4, "workload_oxc_trigger.txt": 4,
    "all_gather.txt": 19, "all_reduce.txt": 19, "all_to_all.txt": 19, "muti_all_reduce.txt": 19,
    "G13B-M1-C01_GPT13B_megatron_tp8_pp1_mbs1_A100.txt": 92,
    "G13B-M1-C02_GPT13B_megatron_tp8_pp1_mbs1_sp_A100.txt": 172,
    "G175B-M1-C03_GPT175B_megatron_tp8_pp1_mbs1_A100.txt": 33,
    "L65B_D1_C08_Llama65B_deepspeed_zero3_A100.txt": 12,
    "L7B-D1-C02_Llama7B_deepspeed_zero3_A100.txt": 12,
    "L7B-M1-C04_Llama7B_megatron_tp2_pp1_mbs1_A100.txt": 76,
}
NOT_WORKLOADS = {"gpu_compute_timing.txt", "busbw.yaml", "Rail_Opti_SingleToR_16g_8gps_200Gbps_H20", "SOURCES.md"}
ALL_FILES = sorted(p for p in DATA.rglob("*") if p.is_file())


def write(tmp_path, text, name="w.txt", mode="w"):
    p = tmp_path / name
    if mode == "wb":
        p.write_bytes(text)
    else:
        p.write_text(text)
    return p


HDR = "HYBRID_TRANSFORMER_FWD_IN_BCKWD model_parallel_NPU_group: 2 ep: 1 pp: 1 vpp: 1 ga: 1 all_gpus: 8\n"
ROW = "l{i}\t-1\t10\tALLREDUCE\t100\t20\tNONE\t0\t30\tALLREDUCE\t200\t5\n"


def rows(n):
    return "".join(ROW.format(i=i) for i in range(n))


# ----------------------------------------------------------------------------- real files


def test_data_folder_holds_every_file():
    names = {p.name for p in ALL_FILES}
    assert set(LAYER_COUNTS) | NOT_WORKLOADS == names


@pytest.mark.parametrize("path", ALL_FILES, ids=lambda p: p.name)
def test_every_real_file_parses_or_is_recognised_as_other(path):
    if not looks_like_simai_workload(path):
        assert path.name in NOT_WORKLOADS
        return
    spec = read_simai_workload(path)
    assert len(spec.layers) == LAYER_COUNTS[path.name]
    assert spec.tp * spec.dp * spec.pp == spec.all_gpus
    for ly in spec.layers:
        for ph in (ly.forward, ly.input_grad, ly.weight_grad):
            assert ph.comm in ("NONE", "ALLREDUCE", "ALLGATHER", "REDUCESCATTER", "ALLTOALL")
            assert (ph.comm == "NONE") == (ph.group == "none")
            assert ph.comm != "NONE" or ph.size_bytes == 0
    # the layer-line numbers are consecutive from 3 (no blank lines in the real files)
    assert [ly.line for ly in spec.layers] == list(range(3, 3 + len(spec.layers)))
    assert per_gpu_bytes(spec)[0] >= 0


@pytest.mark.skipif(not SHARED.is_dir(), reason="shared real_inputs not present")
def test_copies_match_shared_real_inputs():
    origin = {"simai/example": "simai/example", "simai/pr_examples": "simai/pr_examples",
              "simai/topo": "simai/inputs/topo", "aicb/simAI": "aicb/simAI"}
    n = 0
    for p in ALL_FILES:
        rel = p.relative_to(DATA).as_posix()
        for here, there in origin.items():
            if rel.startswith(here + "/"):
                assert p.read_bytes() == (SHARED / there / rel[len(here) + 1:]).read_bytes(), rel
                n += 1
    assert n == len(ALL_FILES) - 1  # all but SOURCES.md


def test_micro_allreduce_exact_fields():
    spec = read_simai_workload(MICRO)
    assert (spec.name, spec.policy) == ("microAllReduce", "HYBRID_TRANSFORMER_FWD_IN_BCKWD")
    assert (spec.tp, spec.dp, spec.pp, spec.ep, spec.vpp, spec.ga, spec.all_gpus, spec.pp_comm_bytes) == \
        (8, 1, 1, 1, 8, 1, 8, 0)
    assert spec.warnings == []
    assert spec.params["model_parallel_NPU_group"] == "8" and spec.params["checkpoints"] == "0"
    assert spec.params["checkpoints_layers"] == [] and spec.source == str(MICRO)
    assert spec.layers[0] == Layer("embedding_layer", -1, Phase(556000, "ALLREDUCE", "tp", 16777216),
                                   Phase(1, "NONE", "none", 0), Phase(1, "NONE", "none", 0), 1, 3)
    assert spec.layers[1].forward == Phase(556000, "ALLREDUCE", "tp", 67108864)
    assert spec.layers[1].line == 4  # last line has no newline, trailing blank


def test_micro_allreduce_16g_per_gpu_bytes():
    spec = read_simai_workload(DATA / "simai" / "pr_examples" / "microAllReduce_16g.txt")
    assert (spec.tp, spec.dp) == (8, 2)
    expect = 2 * 7 * (16777216 // 8) + 2 * 7 * (67108864 // 8)
    assert set(per_gpu_bytes(spec).values()) == {expect}


def test_workload_analytical_moe_pp_header_and_suffixes():
    spec = read_simai_workload(ANALYTICAL)
    assert (spec.tp, spec.ep, spec.pp, spec.vpp, spec.ga, spec.all_gpus, spec.dp) == (2, 16, 12, 8, 24, 9216, 384)
    assert spec.pp_comm_bytes == 50331648  # "pp_comm 50331648": no colon
    assert spec.warnings == []
    ly = spec.layers
    assert ly[0].name == "grad_gather" and ly[0].weight_grad == Phase(1, "ALLGATHER", "dp", 2807758848)
    assert ly[4].name == "moe_grad_norm1" and ly[4].weight_grad == Phase(1, "ALLGATHER", "dp_ep", 19327352832)
    assert ly[5].weight_grad == Phase(1, "REDUCESCATTER", "dp_ep", 38654705664)
    # attention_column: ig REDUCESCATTER of size 0 on TP
    assert ly[7].name == "attention_column" and ly[7].input_grad == Phase(875420, "REDUCESCATTER", "tp", 0)
    moe = [x for x in ly if x.name == "mlp_moelayer"]
    assert moe[1].forward == Phase(1, "ALLTOALL", "tp", 25165824)
    assert moe[2].forward == Phase(1, "ALLTOALL", "ep", 100663296)
    assert sum(x.name == "embedding_layer" for x in ly) == 24  # GA unrolled: one per micro-batch


def test_gpt7b_64g_fields_and_dp_groups():
    spec = read_simai_workload(GPT7B)
    assert (spec.tp, spec.dp, spec.pp, spec.ep, spec.vpp, spec.ga, spec.all_gpus) == (8, 8, 1, 1, 32, 8, 64)
    assert spec.params["pp_comm"] == "0" and spec.pp_comm_bytes == 0
    emb = spec.layers[3]
    assert emb.name == "embedding_layer"
    assert emb.forward == Phase(1, "NONE", "none", 0)  # "NONE 16777216": size never sent
    assert spec.layers[1].weight_grad == Phase(1, "ALLGATHER", "dp_ep", 0)
    assert spec.layers[-1] == Layer("optimizer4", -1, Phase(0, "ALLREDUCE", "tp", 4), Phase(0, "NONE", "none", 0),
                                    Phase(0, "NONE", "none", 0), 100, 1060)
    groups = dp_groups(spec)
    assert len(groups) == 8
    assert groups[0] == [0, 8, 16, 24, 32, 40, 48, 56]
    assert groups[5] == [5, 13, 21, 29, 37, 45, 53, 61]
    assert group_of(spec, 13, "dp") == [5, 13, 21, 29, 37, 45, 53, 61]
    assert group_of(spec, 13, "tp") == list(range(8, 16))
    assert group_of(spec, 63, "dp") == [7, 15, 23, 31, 39, 47, 55, 63]
    assert pp_groups(spec) == [[g] for g in range(64)]


def test_aicb_broadcast_and_missing_all_gpus_warn():
    path = MODEL_DIR / "G13B-M1-C01_GPT13B_megatron_tp8_pp1_mbs1_A100.txt"
    spec = read_simai_workload(path)
    assert (spec.tp, spec.all_gpus, spec.dp) == (8, 8, 1)
    assert any(w.startswith(f"{path}:1: header has no all_gpus") for w in spec.warnings)
    bc = [w for w in spec.warnings if "BROADCAST" in w]
    assert len(bc) == 1 and bc[0].startswith(f"{path}:3: unknown forward comm type 'BROADCAST'")
    assert spec.layers[0].forward == Phase(0, "NONE", "none", 0)
    assert spec.layers[1].forward == Phase(14565000, "ALLGATHER", "tp", 3248619520)
    assert spec.layers[1].weight_grad == Phase(1, "REDUCESCATTER", "dp", 6497239040)
    # the caller gives the cluster size
    spec = read_simai_workload(path, all_gpus=64)
    assert (spec.all_gpus, spec.dp) == (64, 8)
    assert not any("all_gpus" in w for w in spec.warnings)


def test_aicb_mixed_tabs_spaces_and_no_final_newline():
    spec = read_simai_workload(MODEL_DIR / "L7B-D1-C02_Llama7B_deepspeed_zero3_A100.txt", all_gpus=16)
    assert (spec.tp, spec.dp) == (1, 16)
    first = spec.layers[0]  # "Llama_layer1\t-1\t 14356000\tNONE\t0   4756000\tALLGATHER\t357468\t 1\t..."
    assert first == Layer("Llama_layer1", -1, Phase(14356000, "NONE", "none", 0),
                          Phase(4756000, "ALLGATHER", "tp", 357468),
                          Phase(1, "REDUCESCATTER", "dp", 1889785610), 100, 3)
    g175 = read_simai_workload(MODEL_DIR / "G175B-M1-C03_GPT175B_megatron_tp8_pp1_mbs1_A100.txt")
    assert g175.layers[0].weight_grad == Phase(1, "ALLGATHER", "dp", 1)
    assert g175.layers[-1].name == "cross_entropy3" and g175.layers[-1].forward.size_bytes == 8192


def test_micro_policy_runs_on_all_gpus_when_sized():
    path = DATA / "aicb" / "simAI" / "micro_test" / "all_reduce.txt"
    spec = read_simai_workload(path, all_gpus=16)
    assert (spec.policy, spec.tp, spec.dp) == ("MICRO", 1, 16)
    sizes = [ly.weight_grad.size_bytes for ly in spec.layers]
    assert sizes[0] == 4096 and sizes[-1] == 4096 * 2 ** 18
    assert all(ly.weight_grad.group == "dp" and ly.weight_grad.comm == "ALLREDUCE" for ly in spec.layers)
    assert set(per_gpu_bytes(spec).values()) == {sum(2 * 15 * math.ceil(s / 16) for s in sizes)}


def test_oxc_dependency_column_kept():
    spec = read_simai_workload(DATA / "simai" / "pr_examples" / "workload_oxc_32g.txt")
    assert [ly.dependency for ly in spec.layers] == [-1, 0, 1, 2]
    assert spec.layers[1].weight_grad == Phase(1, "ALLREDUCE", "dp", 16777216)


def test_n_layers_and_all_gpus_override():
    assert len(read_simai_workload(GPT7B, n_layers=5).layers) == 5
    short = read_simai_workload(MICRO, n_layers=50)
    assert len(short.layers) == 2 and short.warnings == [f"{MICRO}: --layers 50 is more than its 2 layer lines: all "
                                                         "are run"]
    for bad in (0, -1):
        with pytest.raises(InputError, match="n_layers"):
            read_simai_workload(MICRO, n_layers=bad)
    assert read_simai_workload(ANALYTICAL, all_gpus=384).dp == 16
    with pytest.raises(InputError) as e:
        read_simai_workload(ANALYTICAL, all_gpus=100)
    assert str(e.value).startswith(f"{ANALYTICAL}:1: all_gpus 100 (given by the caller) is not divisible by tp*pp")
    with pytest.raises(InputError, match=r"ep 16 does not divide dp = all_gpus/\(tp\*pp\) = 48/24 = 2"):
        read_simai_workload(ANALYTICAL, all_gpus=48)


# ----------------------------------------------------------------------------- malformed inputs


def test_missing_layers_names_file_and_line(tmp_path):
    p = write(tmp_path, HDR + "3\n" + rows(2))
    with pytest.raises(InputError) as e:
        read_simai_workload(p)
    assert str(e.value) == f"{p}:4: truncated file: line 2 declares 3 layers, found 2"
    assert (e.value.path, e.value.line) == (str(p), 4)


def test_bad_numbers_name_file_line_and_value(tmp_path):
    cases = [
        (ROW.format(i=0).replace("\t10\t", "\tabc\t"), 3, "forward compute time of layer l0 'abc' is not an integer"),
        (ROW.format(i=0).replace("\t200\t", "\t-5\t"), 3, "weight-gradient comm size of layer l0 '-5' must be >= 0"),
        (ROW.format(i=0).replace("\t100\t", "\t1.5\t"), 3, "forward comm size of layer l0 '1.5' is not an integer"),
        (ROW.format(i=0).replace("\t-1\t", "\t-2\t"), 3, "dependency of layer l0 '-2' must be >= -1"),
        (ROW.format(i=0).replace("\t5\n", "\n"), 3, "layer 2 has 11 fields, expected 12 (name, dependency,"),
    ]
    for row, line, msg in cases:
        p = write(tmp_path, HDR + "2\n" + ROW.format(i=9) + "\n" + row)
        with pytest.raises(InputError) as e:
            read_simai_workload(p)
        assert str(e.value).startswith(f"{p}:{line + 2}: {msg}"), str(e.value)


def test_bad_headers(tmp_path):
    cases = [
        ("FOO model_parallel_NPU_group: 2\n", 1, "unknown parallelism policy 'FOO'"),
        ("\n", 1, "empty header"),
        (HDR.replace("ga: 1", "ga: x"), 1, "header ga 'x' is not an integer"),
        (HDR.replace("ga: 1", "ga: 0"), 1, "header ga '0' must be >= 1"),
        (HDR.rstrip("\n") + " pp_comm:\n", 1, "header key 'pp_comm:' has no value"),
        (HDR.replace("all_gpus: 8", "all_gpus: 9"), 1, "all_gpus 9 is not divisible by tp*pp = 2*1 = 2"),
        (HDR.replace("ep: 1", "ep: 3"), 1, "ep 3 does not divide dp = all_gpus/(tp*pp) = 8/2 = 4"),
        (HDR.rstrip("\n") + " checkpoints: 2 4\n", 1, "header checkpoints 2 announces 2 layer numbers, found 1"),
    ]
    for hdr, line, msg in cases:
        p = write(tmp_path, hdr + "1\n" + rows(1))
        with pytest.raises(InputError) as e:
            read_simai_workload(p)
        assert str(e.value).startswith(f"{p}:{line}: {msg}"), str(e.value)
    for count, msg in (("x", "layer count 'x' is not an integer"), ("0", "layer count '0' must be >= 1"),
                       ("2 3", "line 2 must hold only the layer count")):
        p = write(tmp_path, HDR + count + "\n" + rows(2))
        with pytest.raises(InputError) as e:
            read_simai_workload(p)
        assert str(e.value).startswith(f"{p}:2: {msg}"), str(e.value)
    p = write(tmp_path, HDR)
    with pytest.raises(InputError, match=r":1: missing layer count on line 2"):
        read_simai_workload(p)
    with pytest.raises(InputError, match="cannot open SimAI workload file"):
        read_simai_workload(tmp_path / "nope.txt")


def test_unknown_comm_type_warns_naming_line(tmp_path):
    row = ROW.format(i=1).replace("\tALLREDUCE\t200", "\tALLREDUCE_ALL\t200")
    p = write(tmp_path, HDR + "2\n" + rows(1) + row)
    spec = read_simai_workload(p)
    assert spec.warnings == [f"{p}:4: unknown weight-gradient comm type 'ALLREDUCE_ALL' of layer l1; "
                             f"the phase does no communication (SimAI does not decode it either)"]
    assert spec.layers[1].weight_grad == Phase(30, "NONE", "none", 0)
    assert spec.layers[1].forward == Phase(10, "ALLREDUCE", "tp", 100)


def test_suffixes_and_columns(tmp_path):
    row = "x -1 1 ALLGATHER_EP 8 2 REDUCESCATTER_DP_EP 16 3 ALLTOALL 32 0\n"
    hdr = HDR.replace("ep: 1", "ep: 2")
    spec = read_simai_workload(write(tmp_path, hdr + "1\n" + row))
    ly = spec.layers[0]
    assert ly.forward == Phase(1, "ALLGATHER", "ep", 8)
    assert ly.input_grad == Phase(2, "REDUCESCATTER", "dp_ep", 16)
    assert ly.weight_grad == Phase(3, "ALLTOALL", "dp", 32)


def test_crlf_tabs_blanks_bom_and_extra_lines(tmp_path):
    ref = read_simai_workload(write(tmp_path, HDR + "2\n" + rows(2), "ref.txt"))
    messy = ("\ufeff" + HDR.replace(" ", "\t", 3).rstrip("\n") + "   \r\n  2  \r\n"
             + ROW.format(i=0).replace("\t", "  \t ").replace("\n", "  \r\n") + "\r\n\r\n"
             + ROW.format(i=1).replace("\n", "\t\r\n") + "trailing notes\r\nmore\r\n")
    p = write(tmp_path, messy.encode("utf-8"), "messy.txt", mode="wb")
    spec = read_simai_workload(p)
    assert [(ly.name, ly.forward, ly.input_grad, ly.weight_grad, ly.update_ns) for ly in spec.layers] == \
        [(ly.name, ly.forward, ly.input_grad, ly.weight_grad, ly.update_ns) for ly in ref.layers]
    assert [ly.line for ly in spec.layers] == [3, 6]
    assert spec.warnings == [f"{p}:7: 2 non-blank line(s) after the 2 declared layers ignored"]


def test_header_oddities_kept_with_warnings(tmp_path):
    hdr = (HDR.rstrip("\n") + " checkpoints: 2 0 1 checkpoint_initiates: 0 DLRM_LAST_BOTTOM_LAYER: 3 stray ga: 2"
           " foo: 3\n")
    p = write(tmp_path, hdr + "1\n" + rows(1))
    spec = read_simai_workload(p)
    assert spec.params["checkpoints"] == "2" and spec.params["checkpoints_layers"] == [0, 1]
    assert spec.params["DLRM_LAST_BOTTOM_LAYER"] == "3" and spec.ga == 2
    assert spec.warnings == [f"{p}:1: unexpected header token 'stray' (not a 'key: value' pair); ignored",
                             f"{p}:1: header key 'ga' given twice; the last value '2' is used",
                             f"{p}:1: header key 'foo' is not one SimAI reads; ignored"]


def test_micro_policy_drops_forward_comm_with_warning(tmp_path):
    p = write(tmp_path, "MICRO\n1\n" + rows(1))
    spec = read_simai_workload(p, all_gpus=4)
    assert spec.layers[0].forward == Phase(10, "NONE", "none", 0)
    assert spec.layers[0].weight_grad == Phase(30, "ALLREDUCE", "dp", 200)
    assert spec.warnings == [f"{p}:3: forward comm ALLREDUCE of layer l0 is never issued under policy MICRO "
                             f"(SimAI runs only weight-gradient collectives there); ignored"]


def test_pp_comm_consistency_warnings(tmp_path):
    p = write(tmp_path, HDR.replace("pp: 1", "pp: 2").replace("all_gpus: 8", "all_gpus: 16") + "1\n" + rows(1))
    assert read_simai_workload(p).warnings == [f"{p}:1: pp 2 > 1 but pp_comm is 0: pipeline stages exchange nothing"]


def test_looks_like_workload(tmp_path):
    assert looks_like_simai_workload(MICRO)
    assert not looks_like_simai_workload(DATA / "simai" / "pr_examples" / "gpu_compute_timing.txt")
    assert not looks_like_simai_workload(tmp_path / "missing")
    assert not looks_like_simai_workload(write(tmp_path, ""))


# ----------------------------------------------------------------------------- groups


def spec_of(tp, dp, pp, ep=1):
    return TrainingSpec("t", "HYBRID_TRANSFORMER_FWD_IN_BCKWD", tp, dp, pp, ep, 1, 1, tp * dp * pp, 0, [])


def test_hand_layout_tp2_dp4_pp2_ep2():
    s = spec_of(2, 4, 2, 2)
    assert tp_groups(s) == [[2 * i, 2 * i + 1] for i in range(8)]
    assert dp_groups(s) == [[0, 2, 4, 6], [1, 3, 5, 7], [8, 10, 12, 14], [9, 11, 13, 15]]
    assert pp_groups(s) == [[g, g + 8] for g in range(8)]
    assert ep_groups(s) == [[0, 2], [1, 3], [4, 6], [5, 7], [8, 10], [9, 11], [12, 14], [13, 15]]
    assert dp_ep_groups(s) == [[0, 4], [1, 5], [2, 6], [3, 7], [8, 12], [9, 13], [10, 14], [11, 15]]
    assert [pp_stage_of(s, g) for g in (0, 7, 8, 15)] == [0, 0, 1, 1]
    assert group_of(s, 13, "ep") == [13, 15] and group_of(s, 13, "dp_ep") == [9, 13]
    assert group_of(s, 13, "pp") == [5, 13] and group_of(s, 13, "none") == [13]


@pytest.mark.parametrize("tp,dp,pp,ep", [(1, 8, 1, 1), (2, 4, 3, 2), (4, 6, 2, 3), (8, 8, 1, 4), (1, 1, 1, 1)])
def test_groups_partition_and_agree_with_group_of(tp, dp, pp, ep):
    s = spec_of(tp, dp, pp, ep)
    n = tp * dp * pp
    funcs = {"tp": tp_groups, "dp": dp_groups, "pp": pp_groups, "ep": ep_groups, "dp_ep": dp_ep_groups}
    sizes = {"tp": tp, "dp": dp, "pp": pp, "ep": ep, "dp_ep": dp // ep}
    for kind, fn in funcs.items():
        groups = fn(s)
        assert sorted(g for grp in groups for g in grp) == list(range(n)), kind
        assert all(len(grp) == sizes[kind] == s.group_size(kind) for grp in groups)
        for grp in groups:
            for g in grp:
                assert group_of(s, g, kind) == sorted(grp)
                assert all(pp_stage_of(s, x) == pp_stage_of(s, g) for x in grp) or kind == "pp"
    assert [pp_stage_of(s, g) for g in pp_groups(s)[0]] == list(range(pp))


def test_pp1_groups_match_simai_mock_nccl_group():
    """SimAI MockNcclGroup (pp=1): TP i*TP+j; DP i+j*(N/DP); EP and DP_EP built from TP groups."""
    tp, dp, ep = 2, 8, 4
    s, n = spec_of(tp, dp, 1, ep), tp * dp
    simai_tp = [[i * tp + j for j in range(tp)] for i in range(n // tp)]
    simai_dp = [[i + j * (n // dp) for j in range(dp)] for i in range(n // dp)]
    simai_ep = [[simai_tp[l][k] for l in range(i * ep, i * ep + ep)]
                for i in range(len(simai_tp) // ep) for k in range(tp)]
    dpep = dp // ep
    simai_dp_ep = [[simai_tp[l][k] for l in range(i, i + dpep * ep, ep)]
                   for i in range(len(simai_tp) // dpep) for k in range(tp)]
    norm = lambda gs: sorted(sorted(g) for g in gs)  # noqa: E731
    assert norm(tp_groups(s)) == norm(simai_tp)
    assert norm(dp_groups(s)) == norm(simai_dp)
    assert norm(ep_groups(s)) == norm(simai_ep)
    assert norm(dp_ep_groups(s)) == norm(simai_dp_ep)


def test_pp_gt1_ep_groups_of_workload_analytical():
    spec = read_simai_workload(ANALYTICAL)  # tp 2, dp 384, pp 12, ep 16
    assert group_of(spec, 0, "tp") == [0, 1]
    assert group_of(spec, 0, "dp") == list(range(0, 768, 2))
    assert group_of(spec, 769, "dp") == list(range(769, 1536, 2))
    assert group_of(spec, 0, "pp") == [768 * k for k in range(12)]
    assert group_of(spec, 0, "ep") == list(range(0, 32, 2))
    assert group_of(spec, 35, "ep") == list(range(33, 64, 2))
    assert group_of(spec, 0, "dp_ep") == list(range(0, 768, 32))
    assert [pp_stage_of(spec, g) for g in (0, 767, 768, 9215)] == [0, 0, 1, 11]
    assert len(pp_groups(spec)) == 768 and len(ep_groups(spec)) == 9216 // 16


def test_group_errors():
    with pytest.raises(InputError, match="ep 3 does not divide dp 4"):
        ep_groups(spec_of(2, 4, 1, 3))
    bad = spec_of(2, 4, 1)
    bad.all_gpus = 10
    with pytest.raises(InputError, match=r"tp\*dp\*pp = 2\*4\*1 = 8 differs from all_gpus 10"):
        dp_groups(bad)
    with pytest.raises(ValueError, match="unknown group kind"):
        group_of(spec_of(2, 2, 1), 0, "xp")
    with pytest.raises(ValueError, match="out of range"):
        group_of(spec_of(2, 2, 1), 4, "tp")


# ----------------------------------------------------------------------------- built-in models


def test_gpt_22b_has_22_billion_parameters():
    """48 layers of 12 d^2 weights at d = 6144 (Korthikanti et al., Table 3): 21.7 B, plus biases
    and LayerNorms; TP8-DP8-PP4 on 256 GPUs (the Wormhole paper's configuration)."""
    p = layer_params(MODELS["gpt-22b"])
    assert p == {"attn": 4 * 6144 ** 2 + 6 * 6144, "mlp": 8 * 6144 ** 2 + 24576 + 3 * 6144}
    assert abs(48 * (p["attn"] + p["mlp"]) - 21.75e9) < 0.01e9
    s = build_model("gpt-22b", 256, tp=8, pp=4, layers=4)
    assert (s.tp, s.dp, s.pp, s.all_gpus) == (8, 8, 4, 256)


def test_gpt_shapes_and_dp_inference():
    s = build_model("gpt-7b", 16, tp=2)
    assert (s.tp, s.dp, s.pp, s.ep, s.ga, s.all_gpus, s.pp_comm_bytes) == (2, 8, 1, 1, 1, 16, 0)
    assert len(s.layers) == 64 and s.layers[0].name == "mb0.layer0.attention" and s.layers[1].name == "mb0.layer0.mlp"
    act = 2048 * 4096 * 2
    p = layer_params(MODELS["gpt-7b"])
    assert p == {"attn": 4 * 4096 ** 2 + 6 * 4096, "mlp": 8 * 4096 ** 2 + 16384 + 3 * 4096}
    a = s.layers[0]
    assert (a.forward.comm, a.forward.group, a.forward.size_bytes) == ("ALLREDUCE", "tp", act)
    assert a.input_grad.size_bytes == act and a.input_grad.group == "tp"
    assert a.weight_grad.group == "dp" and a.weight_grad.size_bytes == math.ceil(p["attn"] / 2) * 2
    assert s.layers[1].weight_grad.size_bytes == math.ceil(p["mlp"] / 2) * 2
    assert all(ly.line == 0 and ly.dependency == -1 for ly in s.layers)
    # compute model: 312 TFLOPS at 0.5 -> 156000 FLOPs per ns
    mlp_flops = 2 * 2048 * math.ceil(p["mlp"] / 2)
    assert s.layers[1].forward.compute_ns == math.ceil(mlp_flops / 156000)
    assert s.layers[1].weight_grad.compute_ns == s.layers[1].input_grad.compute_ns == s.layers[1].forward.compute_ns
    attn_flops = 2 * 2048 * math.ceil(p["attn"] / 2) + 4 * 2048 * 2048 * 4096 // 2
    assert a.forward.compute_ns == math.ceil(attn_flops / 156000)
    assert a.weight_grad.compute_ns == math.ceil(2 * 2048 * math.ceil(p["attn"] / 2) / 156000)
    fast = build_model("gpt-7b", 16, tp=2, gpu_tflops=624)
    assert fast.layers[1].forward.compute_ns == math.ceil(mlp_flops / 312000)
    assert build_model("GPT-175B", 64, tp=8, pp=8).dp == 1


def test_ga_pp_and_layer_override():
    s = build_model("gpt-13b", 32, tp=4, pp=2, layers=4, ga=3)
    assert (s.dp, s.pp, s.ga) == (4, 2, 3)
    assert len(s.layers) == 3 * 2 * 2  # ga x layers/pp x (attention, mlp)
    assert [ly.name for ly in s.layers[:4]] == ["mb0.layer0.attention", "mb0.layer0.mlp",
                                                "mb0.layer1.attention", "mb0.layer1.mlp"]
    assert s.layers[4].name == "mb1.layer0.attention"
    with_wg = [ly.name for ly in s.layers if ly.weight_grad.comm != "NONE"]
    assert with_wg == [ly.name for ly in s.layers[-4:]]  # DP all-reduce once, on the last micro-batch
    assert s.pp_comm_bytes == 2048 * 5120 * 2
    assert s.params["layers_per_stage"] == 2 and s.params["hidden"] == 5120


def test_moe_layers_and_groups():
    s = build_model("moe-8x7b", 16, tp=2, ep=4, layers=2)
    assert (s.dp, s.ep) == (8, 4) and len(s.layers) == 2 * 4
    names = [ly.name.split(".")[-1] for ly in s.layers[:4]]
    assert names == ["attention", "moe_dispatch", "moe_experts", "moe_combine"]
    tok = 2048 * 2 * 4096 * 2
    d, e, c = s.layers[1], s.layers[2], s.layers[3]
    assert d.forward.comm == "ALLTOALL" and d.forward.group == "ep" and d.forward.size_bytes == tok
    assert c.input_grad == Phase(0, "ALLTOALL", "ep", tok)
    assert e.forward.group == "tp" and e.forward.size_bytes == tok
    p = layer_params(MODELS["moe-8x7b"])
    assert p["expert"] == 3 * 4096 * 14336
    assert e.weight_grad == Phase(e.weight_grad.compute_ns, "ALLREDUCE", "dp_ep", 2 * (p["expert"] // 2) * 2)
    assert d.weight_grad.group == "dp" and d.weight_grad.size_bytes == 4096 * 8 * 2
    assert s.group_size("dp_ep") == 2
    # 46.7B parameters in total (Mixtral paper: 46.7B incl. embeddings)
    assert abs(32 * (p["attn"] + p["router"] + 8 * p["expert"]) + 2 * 32000 * 4096 - 46.7e9) < 0.05e9


def test_mixtral_8x22b_has_its_published_size():
    """Mixtral 8x22B: 141B parameters, 39B active per token (two experts), embeddings included;
    its all-to-all carries the two experts' copies of each token (top-2) at dim 6144."""
    p = layer_params(MODELS["moe-8x22b"])
    assert p == {"attn": 2 * 6144 * 6144 + 2 * 6144 * 1024 + 2 * 6144, "router": 6144 * 8, "expert": 3 * 6144 * 16384}
    embeddings = 2 * 32000 * 6144
    assert abs(56 * (p["attn"] + p["router"] + 8 * p["expert"]) + embeddings - 141e9) < 0.5e9
    assert abs(56 * (p["attn"] + p["router"] + 2 * p["expert"]) + embeddings - 39e9) < 0.5e9
    s = build_model("moe-8x22b", 64, tp=8, ep=4, pp=2, layers=4)
    assert (s.dp, s.ep, len(s.layers)) == (4, 4, 2 * 4) and s.group_size("dp_ep") == 1
    assert s.layers[1].forward == Phase(s.layers[1].forward.compute_ns, "ALLTOALL", "ep", 2048 * 2 * 6144 * 2)


def test_deepseek_moe_16b_fine_grained_experts_with_shared_ones():
    """DeepSeekMoE 16B: 64 routed experts of hidden 1408 (top-6) and 2 shared ones every token goes
    through: 16.4B parameters (2.8B active) with its dense first layer, 16.9B as modelled (every
    layer MoE); the shared experts are a fifth layer line, a dense FFN whose gradients are
    all-reduced over all of DP."""
    p = layer_params(MODELS["deepseek-moe-16b"])
    assert p == {"attn": 4 * 2048 * 2048 + 2 * 2048, "router": 2048 * 64, "expert": 3 * 2048 * 1408}
    moe_layer = p["attn"] + p["router"] + (64 + 2) * p["expert"]
    dense_first = p["attn"] + 3 * 2048 * 10944
    embeddings = 2 * 102400 * 2048
    assert abs(27 * moe_layer + dense_first + embeddings - 16.4e9) < 0.05e9
    assert abs(28 * moe_layer + embeddings - 16.9e9) < 0.05e9
    assert abs(28 * (p["attn"] + p["router"] + (6 + 2) * p["expert"]) + embeddings - 2.8e9) < 0.05e9
    s = build_model("deepseek-moe-16b", 32, tp=2, ep=8, layers=1)
    assert [ly.name.split(".")[-1] for ly in s.layers] == ["attention", "moe_dispatch", "moe_experts",
                                                            "moe_combine", "moe_shared"]
    dispatch, shared = s.layers[1], s.layers[4]
    assert dispatch.forward.size_bytes == 2048 * 6 * 2048 * 2  # each token to its 6 experts
    assert shared.forward == Phase(shared.forward.compute_ns, "ALLREDUCE", "tp", 2048 * 2048 * 2)
    assert shared.weight_grad == Phase(shared.weight_grad.compute_ns, "ALLREDUCE", "dp", 2 * (p["expert"] // 2) * 2)
    assert shared.forward.compute_ns == s.layers[2].forward.compute_ns * 2 // 6  # 2 shared vs 6 routed, per token


def test_build_model_errors():
    cases = [
        (("gpt-9b", 8), {},
         "unknown model 'gpt-9b'; known models: gpt-350m, gpt-7b, gpt-13b, gpt-22b, gpt-175b, moe-8x7b, moe-8x22b, "
         "deepseek-moe-16b"),
        (("gpt-7b", 10), {"tp": 4}, "--gpus 10 is not divisible by tp*pp = 4*1 = 4"),
        (("gpt-7b", 16), {"tp": 2, "dp": 4}, "tp*dp*pp = 2*4*1 = 8 differs from --gpus 16"),
        (("moe-8x7b", 16), {"tp": 2, "ep": 3}, "ep 3 does not divide dp 8"),
        (("moe-8x7b", 64), {"tp": 1, "ep": 16}, "ep 16 does not divide the 8 experts"),
        (("gpt-7b", 16), {"ep": 2}, "model gpt-7b is dense"),
        (("gpt-7b", 6), {"tp": 3}, "tp 3 must divide the 32 attention heads"),
        (("moe-8x7b", 16), {"tp": 16}, "tp 16 must divide the 32 attention heads and 8 KV heads"),
        (("gpt-7b", 8), {"pp": 2, "layers": 3}, "3 layers cannot be split into pp = 2"),
        (("gpt-7b", 0), {}, "--gpus 0 must be an integer >= 1"),
        (("gpt-7b", 8), {"ga": 0}, "ga 0 must be an integer >= 1"),
        (("gpt-7b", 8), {"layers": 0}, "layers 0 must be an integer >= 1"),
        (("gpt-350m", 8), {"layers": 48}, "--layers 48 is more than the 24 layers of gpt-350m"),
        (("gpt-7b", 8), {"gpu_tflops": 0}, "gpu_tflops 0 must be a positive number"),
        (("gpt-7b", 8), {"efficiency": 1.5}, "efficiency 1.5 must be in (0, 1]"),
    ]
    for args, kw, msg in cases:
        with pytest.raises(InputError, match=re.escape(msg)):
            build_model(*args, **kw)


def test_collective_send_bytes_ring_chunks():
    assert collective_send_bytes("ALLREDUCE", 10, 3) == 2 * 2 * 4
    assert collective_send_bytes("ALLGATHER", 10, 3) == 2 * 4
    assert collective_send_bytes("REDUCESCATTER", 1, 8) == 7
    assert collective_send_bytes("ALLTOALL", 12, 4) == 9
    assert collective_send_bytes("ALLREDUCE", 10, 1) == 0
    assert collective_send_bytes("ALLREDUCE", 0, 4) == 0
    assert collective_send_bytes("NONE", 10, 4) == 0


def test_per_gpu_bytes_hand_case():
    # tp 2, dp 3, pp 3: 18 GPUs; ga 2; pp_comm 100
    layers = [
        Layer("a", -1, Phase(1, "ALLREDUCE", "tp", 10), Phase(1, "ALLGATHER", "tp", 7),
              Phase(1, "ALLREDUCE", "dp", 10), 0, 0),
        Layer("b", -1, Phase(1, "ALLTOALL", "ep", 50), Phase(0, "NONE", "none", 0),
              Phase(1, "REDUCESCATTER", "dp", 1), 0, 0),
    ]
    s = TrainingSpec("h", "HYBRID_TRANSFORMER_FWD_IN_BCKWD", 2, 3, 3, 1, 1, 2, 18, 100, layers)
    # a: tp all-reduce 2*1*5 = 10, tp all-gather 1*4 = 4, dp all-reduce 2*2*4 = 16; b: ep size 1 -> 0,
    # dp reduce-scatter of 1 byte: 2*1 = 2  => 32 per GPU; pipeline: 2 micro-batches x 100 per neighbour
    expect = {g: 32 + 200 * (1 if g < 6 or g >= 12 else 2) for g in range(18)}
    assert per_gpu_bytes(s) == expect


def test_per_gpu_bytes_of_built_model_by_hand():
    s = build_model("gpt-7b", 4, tp=2, layers=1, ga=2)
    p = layer_params(MODELS["gpt-7b"])
    act = 2048 * 4096 * 2
    # 4 layers (2 micro-batches x attention, mlp) x (fwd, ig): TP all-reduce of act on 2 members
    tp_part = 4 * 2 * (2 * 1 * (act // 2))
    # micro-batch 0 only: DP all-reduce (2 members) of ceil(P/2)*2 bytes -> 2 * 1 * ceil(P/2)
    dp_part = 2 * math.ceil(p["attn"] / 2) + 2 * math.ceil(p["mlp"] / 2)
    assert set(per_gpu_bytes(s).values()) == {tp_part + dp_part}
    s = build_model("gpt-7b", 8, tp=2, pp=2, layers=2, ga=3)
    b = per_gpu_bytes(s)
    assert len(set(b.values())) == 1  # both stages have one neighbour
    base = per_gpu_bytes(build_model("gpt-7b", 4, tp=2, layers=1, ga=3))[0]
    assert b[0] == base + 3 * act


def test_format_round_trip(tmp_path):
    for spec in (build_model("moe-8x7b", 16, tp=2, ep=4, pp=1, layers=2, ga=2),
                 build_model("gpt-7b", 16, tp=2, pp=2, layers=2)):
        p = write(tmp_path, format_simai_workload(spec))
        back = read_simai_workload(p)
        assert back.warnings == []
        assert (back.tp, back.dp, back.pp, back.ep, back.ga, back.all_gpus, back.pp_comm_bytes) == \
            (spec.tp, spec.dp, spec.pp, spec.ep, spec.ga, spec.all_gpus, spec.pp_comm_bytes)
        assert [(ly.name, ly.forward, ly.input_grad, ly.weight_grad) for ly in back.layers] == \
            [(ly.name, ly.forward, ly.input_grad, ly.weight_grad) for ly in spec.layers]
        assert per_gpu_bytes(back) == per_gpu_bytes(spec)
    real = read_simai_workload(GPT7B)
    again = read_simai_workload(write(tmp_path, format_simai_workload(real), "g.txt"))
    assert [ly.weight_grad for ly in again.layers] == [ly.weight_grad for ly in real.layers]
