"""Built-in training workloads (GPT and MoE) in SimAI/AICB's layer structure.

:func:`build_model` produces the same :class:`~pwormhole.workload.simai.TrainingSpec`
as :func:`~pwormhole.workload.simai.read_simai_workload` does for an AICB file of
a Megatron-LM model, so both feed the same DAG builder, and
:func:`per_gpu_bytes` gives the closed-form bytes every GPU sends in one
iteration, for either.

Model configurations (:data:`MODELS`):

* ``gpt-350m``: GPT-3 Medium, 350M (same table as below): 24 layers, d_model
  1024, 16 heads, FFN 4*d; the default scenario of ``pwormhole run`` uses 4
  of its layers.
* ``gpt-7b``: GPT-3 6.7B (Brown et al., "Language Models are Few-Shot
  Learners", 2020, Table 2.1): 32 layers, d_model 4096, 32 heads, FFN 4*d.
* ``gpt-13b``: GPT-3 13B (same table): 40 layers, 40 heads, FFN 4*d. The paper
  gives d_model 5140; Megatron-LM and AICB (``Workload_spec_v1.1.csv``) use
  5120 so that TP divides it, and so do we.
* ``gpt-175b``: GPT-3 175B (same table): 96 layers, d_model 12288, 96 heads.
* ``gpt-22b``: the 22B GPT of Korthikanti et al., "Reducing Activation Recomputation in
  Large Transformer Models" (MLSys 2023), Table 3: 48 layers, hidden 6144, 64 heads,
  FFN 4*d (the Wormhole paper's 256-GPU configuration).
  All GPT models: vocabulary 50257, learned biases and LayerNorms.
* ``moe-8x7b``: Mixtral 8x7B (Jiang et al., "Mixtral of Experts", 2024,
  Table 1): 32 layers, dim 4096, 32 heads, 8 KV heads (head dim 128), SwiGLU
  experts of hidden 14336, 8 experts, top-2 routing, vocabulary 32000,
  RMSNorm, no biases. Same as AICB's ``Mistral_8*7B`` row.
* ``moe-8x22b``: Mixtral 8x22B (Mistral AI, 2024; ``config.json`` of ``Mixtral-8x22B-v0.1``): 56
  layers, dim 6144, 48 heads, 8 KV heads (head dim 128), SwiGLU experts of hidden 16384, 8
  experts, top-2 routing, vocabulary 32000, RMSNorm, no biases (141B parameters, 39B active).
* ``deepseek-moe-16b``: DeepSeekMoE 16B, fine-grained experts (Dai et al., "DeepSeekMoE: Towards
  Ultimate Expert Specialization in Mixture-of-Experts Language Models", 2024; ``config.json`` of
  ``deepseek-moe-16b-base``): 28 layers, dim 2048, 16 heads (head dim 128, no grouped KV), SwiGLU
  experts of hidden 1408, 64 routed experts with top-6 routing plus 2 shared experts every token
  goes through, vocabulary 102400, RMSNorm, no biases. Its first layer has a dense FFN (hidden
  10944) instead: here every layer is an MoE layer (every pipeline stage runs one layer list), 16.9B
  parameters against the model's 16.4B.

Layer list (what every GPU runs, one pipeline stage's view, as in AICB files;
forward in list order, backward in reverse list order)::

    for micro-batch m in 0..ga-1:                  (AICB unrolls GA the same way)
      for each of the stage's n_layers/pp transformer layers:
        "mb{m}.layer{i}.attention"
        dense:  "mb{m}.layer{i}.mlp"
        MoE:    "mb{m}.layer{i}.moe_dispatch", ".moe_experts", ".moe_combine",
                and with shared experts ".moe_shared"

with b = micro_batch, s = seq_len, h = hidden, T = b*s tokens, d = dtype_bytes,
``S_act = b*s*h*d`` and ``S_moe = b*s*top_k*h*d``:

=================  ======================  ======================  ===========================
layer              forward comm            input-grad comm         weight-grad comm (m == ga-1)
=================  ======================  ======================  ===========================
attention          ALLREDUCE tp S_act      ALLREDUCE tp S_act      ALLREDUCE dp ceil(P_attn/tp)*d
mlp                ALLREDUCE tp S_act      ALLREDUCE tp S_act      ALLREDUCE dp ceil(P_mlp/tp)*d
moe_dispatch       ALLTOALL ep S_moe       ALLTOALL ep S_moe       ALLREDUCE dp P_router*d
moe_experts        ALLREDUCE tp S_moe      ALLREDUCE tp S_moe      ALLREDUCE dp_ep (E/ep)*ceil(P_exp/tp)*d
moe_combine        ALLTOALL ep S_moe       ALLTOALL ep S_moe       NONE
moe_shared         ALLREDUCE tp S_act      ALLREDUCE tp S_act      ALLREDUCE dp n_sh*ceil(P_exp/tp)*d
=================  ======================  ======================  ===========================

(``n_sh`` shared experts: a dense FFN of ``n_sh`` experts' size on every token, replicated over
EP, so its gradients are all-reduced over all of DP.)

With ``dist_opt`` (Megatron's distributed optimizer, as SimAI's
``workload_gpt7b_64g.txt`` has it on its ``grad_norm`` line) no layer all-reduces
its gradients: the last micro-batch's ``layer0.attention``, whose weight
gradient is the last one computed, carries ``REDUCESCATTER dp P_stage*d`` with
``P_stage`` the stage's parameters per GPU (``layers/pp * (ceil(P_attn/tp) +
ceil(P_mlp/tp))``), and
``TrainingSpec.param_allgather`` is ``ALLGATHER dp P_stage*d``, run after the
update and before the next iteration. One bucket, no overlap with the backward
pass (``--overlap-grad-reduce`` off), as SimAI schedules it.

With ``zero=3`` (DeepSpeed ZeRO stage 3, PyTorch FSDP's full sharding) each DP member holds
``1/dp`` of every layer's parameters (``P_layer = ceil(P_attn/tp) + ceil(P_mlp/tp)`` per TP rank)
and no layer all-reduces its gradients. Two lines wrap each transformer layer::

    "mb{m}.layer{i}.zero_gather"   fwd: ALLGATHER dp P_layer*d          wg: REDUCESCATTER dp P_layer*d (m == ga-1)
    (attention, mlp)
    "mb{m}.layer{i}.zero_regather" ig:  ALLGATHER dp P_layer*d

so every micro-batch gathers a layer's parameters before its forward compute (blocking) and again
before its backward (the backward runs the list in reverse: ``zero_regather`` first), and the last
micro-batch reduce-scatters the layer's gradients after its weight gradients (not blocking, so it
overlaps the rest of the backward pass). That is FSDP with ``no_sync`` over the accumulation
steps; FSDP without it, and DeepSpeed ZeRO-3 (which refuses ``no_sync``), reduce-scatter every
micro-batch, so with ``ga > 1`` this schedule sends fewer gradient bytes than they do. Not
modelled: prefetch (a gather starts when the compute before it ended; FSDP's backward prefetch
and DeepSpeed's ``stage3_prefetch_bucket_size`` are on by default), the embedding and head
parameters, parameters DeepSpeed keeps whole (``stage3_param_persistence_threshold``). As for
every schedule here, the micro-batches' forward passes all run before their backward passes
(``training.py``). With pp > 1 each stage shards and gathers its own layers over its DP group
(FSDP with pipeline parallelism; DeepSpeed's pipeline engine refuses stage 3). Dense models only.

Megatron's tensor-parallel pattern (one all-reduce per block forward, one
backward), gradient all-reduce over DP once per iteration (it is put on the
last micro-batch's copies: ``training.py`` runs the micro-batches' backward
passes in order, so each layer's all-reduce starts when its gradient is
complete and overlaps the rest of the last backward pass), expert weights
sharded over TP as Megatron's default expert-TP = TP, each EP all-to-all
carries the micro-batch's top_k token copies, and expert gradients are
all-reduced over the expert-data-parallel group (DP_EP, size dp/ep).
Gradients travel in ``dtype_bytes`` (Megatron without
``--accumulate-allreduce-grads-in-fp32``). Embedding, LM head, loss and
optimizer step are left out; ``update_ns`` is 0. With pp > 1,
``pp_comm_bytes = S_act`` (activations forward, gradients backward, per
micro-batch per boundary; Megatron without scatter-gather).

Parameters per layer: GPT ``P_attn = 4h^2 + 4h (biases) + 2h (LayerNorm 1)``,
``P_mlp = 2*h*ffn + ffn + h (biases) + 2h (LayerNorm 2)``; Mixtral ``P_attn = 2h^2 + 2*h*kv + 2h``
(kv = kv_heads * h/heads; the RMSNorms of both blocks), ``P_router = h*E``,
``P_exp = 3*h*ffn``.

Compute-time model: ``ns = ceil(FLOPs / (gpu_tflops * 1e12 * efficiency) * 1e9)``,
per GPU and micro-batch, default 312 TFLOPS (A100 SXM dense BF16 peak) at an
assumed efficiency of 0.5. FLOPs: forward of a weight block ``2*T*ceil(P/tp)``
(experts: ``2*T*top_k*ceil(P_exp/tp)``, balanced routing; router
``2*T*P_router``), plus ``4*b*s^2*h/tp`` (QK^T and attention x V, ceil) in the
attention forward; input gradient = forward; weight gradient = the weight-block
part of the forward.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from fractions import Fraction

from pwormhole.errors import InputError
from pwormhole.workload.simai import NO_PHASE, Layer, Phase, TrainingSpec, check_layout, group_size
from pwormhole.workload.training import MAX_DAG_OPS, collective_ops

DEFAULT_GPU_TFLOPS = 312.0  # A100 SXM, dense BF16/FP16 tensor-core peak
DEFAULT_EFFICIENCY = 0.5  # assumed fraction of peak that layer kernels reach
POLICY = "HYBRID_TRANSFORMER_FWD_IN_BCKWD"


@dataclass(frozen=True)
class TransformerConfig:
    """A published model shape (citations in the module docstring)."""

    name: str
    n_layers: int
    hidden: int
    heads: int
    ffn: int
    kv_heads: int
    vocab: int
    experts: int = 0  # 0: dense
    top_k: int = 0
    shared_experts: int = 0  # experts every token also goes through (DeepSeekMoE), of the routed ones' size
    gated: bool = False  # SwiGLU (3 matrices) instead of GELU (2)
    biases: bool = True


MODELS: dict[str, TransformerConfig] = {
    "gpt-350m": TransformerConfig("gpt-350m", 24, 1024, 16, 4096, 16, 50257),
    "gpt-7b": TransformerConfig("gpt-7b", 32, 4096, 32, 16384, 32, 50257),
    "gpt-13b": TransformerConfig("gpt-13b", 40, 5120, 40, 20480, 40, 50257),
    "gpt-22b": TransformerConfig("gpt-22b", 48, 6144, 64, 24576, 64, 50257),
    "gpt-175b": TransformerConfig("gpt-175b", 96, 12288, 96, 49152, 96, 50257),
    "moe-8x7b": TransformerConfig("moe-8x7b", 32, 4096, 32, 14336, 8, 32000, experts=8, top_k=2,
                                  gated=True, biases=False),
    "moe-8x22b": TransformerConfig("moe-8x22b", 56, 6144, 48, 16384, 8, 32000, experts=8, top_k=2,
                                   gated=True, biases=False),
    "deepseek-moe-16b": TransformerConfig("deepseek-moe-16b", 28, 2048, 16, 1408, 16, 102400, experts=64,
                                          top_k=6, shared_experts=2, gated=True, biases=False),
}


def layer_params(cfg: TransformerConfig) -> dict[str, int]:
    """Parameter counts of one transformer layer: ``attn``, and ``mlp`` (dense) or ``router``/``expert``."""
    h = cfg.hidden
    kv = cfg.kv_heads * (h // cfg.heads)
    if cfg.biases:  # GPT: q,k,v,o with biases, two LayerNorms (weight + bias)
        attn = 2 * h * h + 2 * h * kv + (2 * h + 2 * kv) + 2 * h  # 4h^2 + 6h when kv == h
    else:  # Mixtral: no biases, two RMSNorms (weight only)
        attn = 2 * h * h + 2 * h * kv + h + h
    mats = 3 if cfg.gated else 2
    ffn = mats * h * cfg.ffn + ((cfg.ffn + h + 2 * h) if cfg.biases else 0)  # GPT: biases + LayerNorm 2
    if cfg.experts:
        return {"attn": attn, "router": h * cfg.experts, "expert": ffn}
    return {"attn": attn, "mlp": ffn}


def _pos_int(v, what: str, lo: int = 1) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or v < lo:
        raise InputError(f"{what} {v!r} must be an integer >= {lo}")
    return v


def build_model(name: str, n_gpus: int, tp: int = 1, dp: int | None = None, pp: int = 1, ep: int = 1,
                layers: int | None = None, gpu_tflops: float = DEFAULT_GPU_TFLOPS, micro_batch: int = 1,
                seq_len: int = 2048, ga: int = 1, dtype_bytes: int = 2,
                efficiency: float = DEFAULT_EFFICIENCY, dist_opt: bool = False, zero: int = 0) -> TrainingSpec:
    """One training iteration of a built-in model (structure in the module docstring).

    Args:
        name: one of :data:`MODELS` (case-insensitive).
        n_gpus: cluster size (= all_gpus).
        tp, pp, ep: tensor, pipeline, expert parallel sizes.
        dp: data-parallel size; default ``n_gpus / (tp*pp)``.
        layers: total transformer layer count (default: the model's); each of
            the ``pp`` stages runs ``layers/pp`` of them.
        gpu_tflops, efficiency: compute-time model (module docstring).
        micro_batch, seq_len, ga: micro-batch size, sequence length, micro-batches
            per iteration (gradient accumulation steps).
        dtype_bytes: bytes per activation / gradient element (2 = BF16).
        dist_opt: Megatron's distributed optimizer (``--use-distributed-optimizer``,
            as in SimAI's ``workload_gpt7b_64g.txt``): no per-layer gradient
            all-reduce; one reduce-scatter of the stage's gradients over DP after
            the backward pass and one all-gather of its parameters after the
            update (module docstring). Dense models only.
        zero: 3 for ZeRO stage 3 / FSDP full sharding (module docstring); 0: none. Dense models
            only, not with ``dist_opt``.

    Raises:
        InputError: unknown model (the message lists the known ones); a size
        < 1; ``tp*dp*pp != n_gpus`` (or n_gpus not divisible by tp*pp); ``ep``
        not dividing ``dp``; ep > 1 for a dense model; ``experts`` not divisible
        by ``ep``; heads or KV heads not divisible by ``tp``; the layer count
        not divisible by ``pp``; a non-positive throughput or an efficiency
        outside (0, 1]; ``dist_opt`` or ``zero`` for an MoE model; ``zero`` other than 0 or 3, or
        with ``dist_opt``.
    """
    key = name.lower() if isinstance(name, str) else name
    if key not in MODELS:
        raise InputError(f"unknown model {name!r}; known models: {', '.join(MODELS)}")
    cfg = MODELS[key]
    n_gpus = _pos_int(n_gpus, "--gpus")
    tp, pp, ep = _pos_int(tp, "tp"), _pos_int(pp, "pp"), _pos_int(ep, "ep")
    b, s = _pos_int(micro_batch, "micro_batch"), _pos_int(seq_len, "seq_len")
    ga, d = _pos_int(ga, "ga"), _pos_int(dtype_bytes, "dtype_bytes")
    if dp is None:
        if n_gpus % (tp * pp):
            raise InputError(f"--gpus {n_gpus} is not divisible by tp*pp = {tp}*{pp} = {tp * pp}")
        dp = n_gpus // (tp * pp)
    else:
        dp = _pos_int(dp, "dp")
        if tp * dp * pp != n_gpus:
            raise InputError(f"tp*dp*pp = {tp}*{dp}*{pp} = {tp * dp * pp} differs from --gpus {n_gpus}")
    if dp % ep:
        raise InputError(f"ep {ep} does not divide dp {dp}")
    if not cfg.experts and ep != 1:
        raise InputError(f"model {cfg.name} is dense (no experts); ep must be 1, got {ep}")
    if zero not in (0, 3):
        raise InputError(f"--zero {zero!r}: only ZeRO stage 3 is modelled (stages 1 and 2 shard the optimizer "
                         "state and gradients as --dist-opt does: use it)")
    if zero and dist_opt:
        raise InputError("--zero 3 and --dist-opt are two ways to shard over DP; give one")
    if zero and cfg.experts:
        raise InputError(f"ZeRO-3 is modelled for dense models only, not {cfg.name}")
    if dist_opt and cfg.experts:
        raise InputError(f"the distributed optimizer (dist_opt) is modelled for dense models only, not {cfg.name}")
    if cfg.experts and cfg.experts % ep:
        raise InputError(f"ep {ep} does not divide the {cfg.experts} experts of {cfg.name}")
    if cfg.heads % tp or cfg.kv_heads % tp:
        raise InputError(f"tp {tp} must divide the {cfg.heads} attention heads and {cfg.kv_heads} "
                         f"KV heads of {cfg.name}")
    n_layers = cfg.n_layers if layers is None else _pos_int(layers, "layers")
    if n_layers > cfg.n_layers:
        raise InputError(f"--layers {n_layers} is more than the {cfg.n_layers} layers of {cfg.name}")
    if n_layers % pp:
        raise InputError(f"{n_layers} layers cannot be split into pp = {pp} equal stages")
    if isinstance(gpu_tflops, bool) or not isinstance(gpu_tflops, (int, float)) or not gpu_tflops > 0 \
            or not math.isfinite(gpu_tflops):
        raise InputError(f"gpu_tflops {gpu_tflops!r} must be a positive number")
    if isinstance(efficiency, bool) or not isinstance(efficiency, (int, float)) or not 0 < efficiency <= 1:
        raise InputError(f"efficiency {efficiency!r} must be in (0, 1]")

    rate = Fraction(gpu_tflops) * Fraction(efficiency) * 1000  # FLOPs per ns

    def ns(flops: int) -> int:
        return math.ceil(Fraction(flops) / rate)

    prm = layer_params(cfg)
    h, T = cfg.hidden, b * s
    s_act = b * s * h * d
    attn_w = 2 * T * -(-prm["attn"] // tp)
    attn_f = attn_w + -(-4 * b * s * s * h // tp)

    def tp_phase(comp: int, size: int) -> Phase:
        return Phase(ns(comp), "ALLREDUCE", "tp", size)

    def wg(comp: int, group: str, size: int, first: bool) -> Phase:
        if first and not dist_opt and not zero:
            return Phase(ns(comp), "ALLREDUCE", group, size)
        return Phase(ns(comp), "NONE", "none", 0)

    lps = n_layers // pp
    blocks = (2 if not cfg.experts else 4 + (cfg.shared_experts > 0)) + (2 if zero else 0)  # lines per layer
    # each line's compute ops and its TP all-reduces (forward, input gradient): a lower bound, before the layers
    # are made (training.iteration_ops counts them all once they are)
    per_line = 3 * n_gpus + 2 * (n_gpus // tp) * collective_ops("allreduce", tp)
    if per_line * ga * lps * blocks > MAX_DAG_OPS:
        raise InputError(f"{cfg.name} on {n_gpus} GPUs with ga {ga} and {n_layers} layers has over "
                         f"{per_line * ga * lps * blocks:,} DAG ops per iteration, over the limit of {MAX_DAG_OPS:,} "
                         "(about 0.5 KB each before any simulation): fewer micro-batches (--ga), layers or GPUs")
    out: list[Layer] = []
    for m in range(ga):
        first = m == ga - 1  # the last micro-batch: its backward pass completes the gradients
        for i in range(lps):
            tag = f"mb{m}.layer{i}"
            if zero:
                shard_bytes = (-(-prm["attn"] // tp) + -(-prm["mlp"] // tp)) * d
                gather = Phase(0, "ALLGATHER", "dp", shard_bytes)
                scatter = Phase(0, "REDUCESCATTER", "dp", shard_bytes) if first else NO_PHASE
                out.append(Layer(f"{tag}.zero_gather", -1, gather, NO_PHASE, scatter, 0, 0))
            out.append(Layer(f"{tag}.attention", -1, tp_phase(attn_f, s_act), tp_phase(attn_f, s_act),
                             wg(attn_w, "dp", -(-prm["attn"] // tp) * d, first), 0, 0))
            if not cfg.experts:
                mlp_w = 2 * T * -(-prm["mlp"] // tp)
                out.append(Layer(f"{tag}.mlp", -1, tp_phase(mlp_w, s_act), tp_phase(mlp_w, s_act),
                                 wg(mlp_w, "dp", -(-prm["mlp"] // tp) * d, first), 0, 0))
                if zero:
                    out.append(Layer(f"{tag}.zero_regather", -1, NO_PHASE, gather, NO_PHASE, 0, 0))
                continue
            s_moe = b * s * cfg.top_k * h * d
            router = 2 * T * prm["router"]
            exp_w = 2 * T * cfg.top_k * -(-prm["expert"] // tp)
            exp_bytes = (cfg.experts // ep) * -(-prm["expert"] // tp) * d
            a2a = Phase(0, "ALLTOALL", "ep", s_moe)
            out.append(Layer(f"{tag}.moe_dispatch", -1, Phase(ns(router), "ALLTOALL", "ep", s_moe),
                             Phase(ns(router), "ALLTOALL", "ep", s_moe),
                             wg(router, "dp", prm["router"] * d, first), 0, 0))
            out.append(Layer(f"{tag}.moe_experts", -1, tp_phase(exp_w, s_moe), tp_phase(exp_w, s_moe),
                             wg(exp_w, "dp_ep", exp_bytes, first), 0, 0))
            out.append(Layer(f"{tag}.moe_combine", -1, a2a, a2a, Phase(0, "NONE", "none", 0), 0, 0))
            if cfg.shared_experts:
                shared = cfg.shared_experts * -(-prm["expert"] // tp)
                out.append(Layer(f"{tag}.moe_shared", -1, tp_phase(2 * T * shared, s_act),
                                 tp_phase(2 * T * shared, s_act), wg(2 * T * shared, "dp", shared * d, first), 0, 0))
    param_allgather = NO_PHASE
    if dist_opt:  # the stage's parameters, sharded over TP: reduce-scatter last in the backward pass
        stage_bytes = lps * (-(-prm["attn"] // tp) + -(-prm["mlp"] // tp)) * d
        k = (ga - 1) * len(out) // ga  # the last micro-batch's layer0.attention: its weight gradient is the
        ly0 = out[k]  # last one computed (training.py runs the micro-batches' backward passes in order)
        out[k] = Layer(ly0.name, ly0.dependency, ly0.forward, ly0.input_grad,
                       Phase(ly0.weight_grad.compute_ns, "REDUCESCATTER", "dp", stage_bytes), 0, 0)
        param_allgather = Phase(0, "ALLGATHER", "dp", stage_bytes)
    params = asdict(cfg)
    params.update(layers_total=n_layers, layers_per_stage=lps, micro_batch=b, seq_len=s,
                  dtype_bytes=d, gpu_tflops=gpu_tflops, efficiency=efficiency, dist_opt=dist_opt, zero=zero,
                  **prm)
    return TrainingSpec(name=cfg.name, policy=POLICY, tp=tp, dp=dp, pp=pp, ep=ep, vpp=1, ga=ga,
                        all_gpus=n_gpus, pp_comm_bytes=s_act if pp > 1 else 0, layers=out,
                        source=None, warnings=[], params=params, param_allgather=param_allgather,
                        micro_batch_layers=len(out) // ga)


def collective_send_bytes(comm: str, size_bytes: int, n: int) -> int:
    """Bytes one member of an ``n``-member ring collective of S = ``size_bytes`` sends.

    A ring step moves ``c = ceil(S/n)`` bytes: all-reduce ``2*(n-1)*c``;
    all-gather and reduce-scatter (S = full buffer) ``(n-1)*c``; all-to-all (S
    held by each member, ``c`` to each other member) ``(n-1)*c``. ``NONE``,
    ``n <= 1`` or ``S == 0``: 0.
    """
    if comm == "NONE" or n <= 1 or size_bytes <= 0:
        return 0
    c = -(-size_bytes // n)
    if comm == "ALLREDUCE":
        return 2 * (n - 1) * c
    if comm in ("ALLGATHER", "REDUCESCATTER", "ALLTOALL"):
        return (n - 1) * c
    raise ValueError(f"unknown collective {comm!r}")


def per_gpu_bytes(spec: TrainingSpec) -> dict[int, int]:
    """Bytes each GPU sends in one iteration of ``spec`` (built-in or read from a file).

    ``bytes[g] = sum over layers L, phases X of L (forward, input_grad,
    weight_grad): collective_send_bytes(X.comm, X.size_bytes, |group X.group|)
    + ga * pp_comm_bytes * ((stage(g) < pp-1) + (stage(g) > 0))``

    where group sizes are tp, dp, ep, dp/ep, and :func:`collective_send_bytes`
    uses ring chunks of ``ceil(S/N)`` bytes (all-reduce ``2(N-1)ceil(S/N)``,
    all-gather / reduce-scatter / all-to-all ``(N-1)ceil(S/N)``). Every GPU
    runs the whole layer list, which already holds every micro-batch; the
    pipeline term counts, per micro-batch, the activations sent to the next
    stage and the gradients sent to the previous one; ``spec.param_allgather``
    (distributed optimizer) counts once. ``vpp`` is not modelled.
    """
    check_layout(spec)
    base = 0
    phases = [ph for ly in spec.layers for ph in (ly.forward, ly.input_grad, ly.weight_grad)]
    for ph in phases + [spec.param_allgather]:
        base += collective_send_bytes(ph.comm, ph.size_bytes, group_size(spec, ph.group))
    stage_size = spec.tp * spec.dp
    out = {}
    for g in range(spec.all_gpus):
        st = g // stage_size
        out[g] = base + spec.ga * spec.pp_comm_bytes * ((st < spec.pp - 1) + (st > 0))
    return out


__all__ = ["MODELS", "TransformerConfig", "DEFAULT_GPU_TFLOPS", "DEFAULT_EFFICIENCY", "build_model",
           "layer_params", "collective_send_bytes", "per_gpu_bytes"]
