"""Reader for SimAI/AICB training-workload files, and the parallel-group layout.

Source of the format: SimAI (aliyun/SimAI), ``astra-sim-alibabacloud/astra-sim/
workload/Workload.cc`` (``Workload::initialize_workload``), which reads the files
that AICB (aliyun/aicb) generates. Examples: SimAI ``example/microAllReduce.txt``,
``example/workload_analytical.txt``; AICB ``workload/simAI/**.txt``.

File layout::

    POLICY key: value key: value ...          line 1: header
    N                                         line 2: layer count
    name dep fwd_ns fwd_type fwd_bytes ig_ns ig_type ig_bytes wg_ns wg_type wg_bytes update_ns
    ...                                       N layer lines, 12 fields each

* ``POLICY``: SimAI's parallelism policy (:data:`POLICIES`); AICB writes
  ``HYBRID_TRANSFORMER_FWD_IN_BCKWD`` for training and ``MICRO`` for
  single-collective tests.
* Header keys (any order; a key is a token ending in ``:``, its value the next
  token; ``pp_comm`` is also accepted without the colon, as SimAI does):
  ``model_parallel_NPU_group`` (TP size), ``ep``, ``pp``, ``vpp``, ``ga``,
  ``all_gpus``, ``pp_comm`` (bytes sent per micro-batch across a pipeline
  boundary), ``checkpoints: K l1..lK`` and ``checkpoint_initiates: K l1..lK``
  (activation-checkpoint layer lists; kept in ``params``, not modelled). Other
  keys (e.g. ``DLRM_LAST_BOTTOM_LAYER``) are kept in ``params`` unchanged.
  Older AICB files carry only ``model_parallel_NPU_group`` and the checkpoint
  keys; missing keys take the defaults tp=ep=pp=vpp=ga=1, pp_comm=0.
  ``all_gpus`` can be given by the caller (it then wins over the file, which is
  how a big workload is replayed on a smaller cluster); when neither gives it,
  the smallest consistent cluster ``tp*pp*ep`` (dp = ep) is assumed, with a
  warning.
* Layer lines are read line by line (SimAI reads a token stream, but every
  known file has one layer per line, and this gives better error lines);
  blank lines are skipped; tabs, runs of spaces, CRLF and a BOM are fine.
  Lines after the N-th layer are ignored with a warning.
* Times are integer nanoseconds (SimAI ``Tick``), sizes integer bytes, both
  ``>= 0``; ``dep`` is an integer ``>= -1`` (kept, not interpreted).
* AICB unrolls gradient accumulation: the layer list already holds every
  micro-batch of one iteration (``workload_gpt7b_64g.txt``, ga=8, lists its 32
  transformer layers 8 times, between ``grad_norm`` and ``optimizer`` lines).
  ``ga`` says how many copies of one micro-batch's lines to look for
  (:func:`pwormhole.workload.training.micro_batch_layout`).
  With PP the list is what *one* pipeline stage runs; as in SimAI, every GPU
  runs the same list.

Comm types (SimAI's decoding): a base ``ALLREDUCE``, ``ALLGATHER``,
``REDUCESCATTER`` or ``ALLTOALL`` with an optional suffix ``_EP`` (expert-
parallel group) or ``_DP_EP`` (expert-data-parallel group). A bare type runs
on the TP group in the forward and input-gradient columns and on the DP group
in the weight-gradient column. ``NONE`` is no communication. Anything else
(AICB's ``BROADCAST``, which SimAI does not decode either; ``ALLREDUCE_ALL``;
``ALLREDUCEALLTOALL``) gives a warning naming file and line and the phase does
no communication. Under the ``DATA`` and ``MICRO`` policies SimAI never issues
forward or input-gradient collectives; such entries are dropped with a
warning. Whenever ``comm == "NONE"`` the phase's ``size_bytes`` is 0 (a size
written next to ``NONE``, as in ``workload_gpt7b_64g.txt``, is never sent).

Parallel groups (GPU ranks ``0..all_gpus-1``), Megatron-LM's default order
"tp-dp-pp": TP fastest, then DP, PP outermost::

    gpu = t + tp * (d + dp * p)      t < tp, d < dp, p < pp;  dp = all_gpus / (tp * pp)

* TP group: ``tp`` consecutive ranks (same d, p).
* DP group: same (t, p), stride ``tp``.
* PP group (a pipeline): same (t, d), stride ``tp*dp``, in stage order;
  ``pp_stage_of(gpu) = gpu // (tp*dp)``.
* EP group: ``ep`` consecutive members of a DP group (DP indices
  ``k*ep .. k*ep+ep-1``); ``ep`` must divide ``dp``.
* DP_EP group (expert data parallel): the members of a DP group with the same
  position in their EP group (DP indices ``j, j+ep, j+2ep, ...``), size dp/ep.

For pp = 1 this is exactly SimAI's MockNcclGroup (``MockNcclGroup.cc``): TP
ranks ``i*TP+j``; DP ranks ``i + j*(N/DP)``; EP = the k-th members of ``ep``
consecutive TP groups; DP_EP = the k-th members of TP groups ``i, i+ep, ...``.
SimAI's mainline sets PP_size = 1 when it builds groups (DP = all_gpus/TP); a
variant that honours pp strides DP by ``TP*PP`` (PP inside DP). pwormhole
follows Megatron (DP inside PP), so pipelines are contiguous blocks of
``tp*dp`` ranks.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

from pwormhole.errors import InputError
from pwormhole.inputs.tokens import open_text
from pwormhole.units import MAX_TIME_PS
from pwormhole.workload.flows import MAX_FLOW_BYTES

POLICIES = ("DATA", "HYBRID_TRANSFORMER", "HYBRID_TRANSFORMER_FWD_IN_BCKWD", "HYBRID_DLRM",
            "HYBRID_DLRM_ENHANCED", "MODEL", "HYBRID_DATA_MODEL", "HYBRID_MODEL_DATA",
            "HYBRID_CUSTOMIZED", "MICRO", "DISTRIBUTED_INFERENCE")
"""Policy tokens SimAI's ``Workload::decode_parallelsim`` accepts."""

COMM_KINDS = ("NONE", "ALLREDUCE", "ALLGATHER", "REDUCESCATTER", "ALLTOALL")
"""Normalized :attr:`Phase.comm` values."""

GROUP_KINDS = ("tp", "dp", "pp", "ep", "dp_ep")

_SUFFIX_GROUP = {"": None, "_EP": "ep", "_DP_EP": "dp_ep"}
_GROUP_SUFFIX = {"ep": "_EP", "dp_ep": "_DP_EP"}
_N_FIELDS = 12
_FIELDS = ("name", "dependency", "forward compute time", "forward comm type", "forward comm size",
           "input-gradient compute time", "input-gradient comm type", "input-gradient comm size",
           "weight-gradient compute time", "weight-gradient comm type", "weight-gradient comm size",
           "update time")
_INT_KEYS = {"model_parallel_NPU_group": 1, "ep": 1, "pp": 1, "vpp": 1, "ga": 1, "all_gpus": 1,
             "pp_comm": 0}  # key -> smallest allowed value
_LIST_KEYS = ("checkpoints", "checkpoint_initiates")
_BARE_KEYS = ("pp_comm",)  # accepted without a colon (SimAI: tokens[i]=="pp_comm")
# the header keys SimAI's Workload.cc reads (DLRM_LAST_BOTTOM_LAYER: its DLRM policy's); others are warned of
_KNOWN_KEYS = frozenset(_INT_KEYS) | frozenset(_LIST_KEYS) | {"DLRM_LAST_BOTTOM_LAYER"}
_INT = re.compile(r"^[+-]?\d+$")


@dataclass(frozen=True)
class Phase:
    """One column group of a layer: compute, then (optionally) one collective.

    Attributes:
        compute_ns: compute time before the collective, int ns.
        comm: one of :data:`COMM_KINDS`.
        group: ``"tp"``, ``"dp"``, ``"ep"``, ``"dp_ep"``, or ``"none"`` (exactly
            when ``comm == "NONE"``).
        size_bytes: S of the collective (0 when ``comm == "NONE"``). For
            all-gather and reduce-scatter it is the full buffer; for all-to-all
            the bytes each member holds (it sends ``S/N`` to each other member).
    """

    compute_ns: int
    comm: str
    group: str
    size_bytes: int


NO_PHASE = Phase(0, "NONE", "none", 0)


@dataclass(frozen=True)
class Layer:
    """One line of a workload file (or one generated layer)."""

    name: str
    dependency: int
    forward: Phase
    input_grad: Phase
    weight_grad: Phase
    update_ns: int
    line: int


@dataclass
class TrainingSpec:
    """A training iteration as SimAI describes it: parallel sizes and a layer list.

    ``all_gpus == tp * dp * pp``; every GPU runs ``layers`` (forward in list
    order, backward in reverse order, SimAI's FWD_IN_BCKWD loop).
    ``pp_comm_bytes``: bytes each GPU sends to the next stage (activations,
    forward) and to the previous stage (gradients, backward) per micro-batch.
    ``params``: header key -> value token as read (for ``checkpoints`` and
    ``checkpoint_initiates`` also ``<key>_layers``: the listed layer ints); for
    built-in models, the model configuration.
    """

    name: str
    policy: str
    tp: int
    dp: int
    pp: int
    ep: int
    vpp: int
    ga: int
    all_gpus: int
    pp_comm_bytes: int
    layers: list[Layer]
    source: str | None = None
    warnings: list[str] = field(default_factory=list)
    params: dict = field(default_factory=dict)
    param_allgather: Phase = NO_PHASE
    """Megatron's distributed optimizer (built-in models, ``dist_opt``): the parameter
    all-gather over the DP group after the update, blocking the next iteration.
    SimAI files have no column for it (AICB writes it on a ``grad_norm`` line)."""
    micro_batch_layers: int | None = None
    """Lines per micro-batch where the list is ``ga`` equal parts by construction (built-in
    models); None: the micro-batches are found from the repeats in the list
    (:func:`pwormhole.workload.training.micro_batch_layout`)."""

    def group_size(self, kind: str) -> int:
        """Size of a group of ``kind`` (``tp``, ``dp``, ``pp``, ``ep``, ``dp_ep``; ``none`` -> 1)."""
        return group_size(self, kind)


# ---------------------------------------------------------------------------
# reader


def looks_like_simai_workload(path: str | os.PathLike) -> bool:
    """True when the first token of ``path`` is a SimAI policy token (content sniffing)."""
    try:
        with open(path, "rb") as f:
            head = f.read(4096)
    except OSError:
        return False
    text = head.decode("utf-8", errors="replace").lstrip("\ufeff")
    toks = text.split(None, 1)
    return bool(toks) and toks[0] in POLICIES


def _int_field(tok: str, what: str, path: str, line: int, lo: int, hi: int = 2**62) -> int:
    if not _INT.match(tok):
        raise InputError(f"{what} {tok!r} is not an integer", path, line)
    v = int(tok)
    if v < lo:
        raise InputError(f"{what} {tok!r} must be >= {lo}", path, line)
    if v > hi:
        raise InputError(f"{what} {tok!r} is over the limit of {hi}", path, line)
    return v


def _decode_comm(tok: str, column: str) -> tuple[str, str] | None:
    """``(comm, group)`` for a comm-type token in ``column`` (fwd/ig/wg); None if unknown."""
    if tok == "NONE":
        return "NONE", "none"
    for base in ("ALLREDUCE", "ALLGATHER", "REDUCESCATTER", "ALLTOALL"):
        if tok.startswith(base):
            suffix = tok[len(base):]
            if suffix not in _SUFFIX_GROUP:
                return None
            group = _SUFFIX_GROUP[suffix] or ("dp" if column == "wg" else "tp")
            return base, group
    return None


def _parse_header(tokens: list[str], path: str, warnings: list[str]) -> tuple[str, dict]:
    policy = tokens[0]
    if policy not in POLICIES:
        raise InputError(f"unknown parallelism policy {policy!r} (first token of the file); "
                         f"expected one of {', '.join(POLICIES)}", path, 1)
    params: dict = {}
    i = 1
    while i < len(tokens):
        tok = tokens[i]
        if tok.endswith(":") and len(tok) > 1:
            key = tok[:-1]
        elif tok in _BARE_KEYS:
            key = tok
        else:
            warnings.append(f"{path}:1: unexpected header token {tok!r} (not a 'key: value' pair); ignored")
            i += 1
            continue
        if i + 1 >= len(tokens):
            raise InputError(f"header key {tok!r} has no value", path, 1)
        val = tokens[i + 1]
        if key not in _KNOWN_KEYS:
            warnings.append(f"{path}:1: header key {key!r} is not one SimAI reads; ignored")
        if key in params:
            warnings.append(f"{path}:1: header key {key!r} given twice; the last value {val!r} is used")
        params[key] = val
        i += 2
        if key in _LIST_KEYS:
            count = _int_field(val, f"header {key}", path, 1, 0)
            items = tokens[i:i + count]
            if len(items) < count:
                raise InputError(f"header {key} {val} announces {count} layer numbers, "
                                 f"found {len(items)}", path, 1)
            params[key + "_layers"] = [_int_field(t, f"header {key} layer", path, 1, 0) for t in items]
            i += count
    return policy, params


def _parse_layer(toks: list[str], n_fields: int, number: int, policy: str, path: str, lineno: int,
                 warnings: list[str]) -> Layer:
    if len(toks) != n_fields:
        raise InputError(f"layer {number} has {len(toks)} fields, expected {n_fields} "
                         f"({', '.join(_FIELDS)})", path, lineno)
    name = toks[0]
    dep = _int_field(toks[1], f"dependency of layer {name}", path, lineno, -1)
    drop_fwd_ig = policy in ("DATA", "MICRO")
    phases = []
    for col, (c_i, t_i, s_i), label in (("fwd", (2, 3, 4), "forward"),
                                        ("ig", (5, 6, 7), "input-gradient"),
                                        ("wg", (8, 9, 10), "weight-gradient")):
        comp = _int_field(toks[c_i], f"{label} compute time of layer {name}", path, lineno, 0, MAX_TIME_PS // 1000)
        size = _int_field(toks[s_i], f"{label} comm size of layer {name}", path, lineno, 0, MAX_FLOW_BYTES)
        dec = _decode_comm(toks[t_i], col)
        if dec is None:
            warnings.append(f"{path}:{lineno}: unknown {label} comm type {toks[t_i]!r} of layer {name}; "
                            f"the phase does no communication (SimAI does not decode it either)")
            dec = ("NONE", "none")
        elif drop_fwd_ig and col != "wg" and dec[0] != "NONE":
            warnings.append(f"{path}:{lineno}: {label} comm {toks[t_i]} of layer {name} is never issued "
                            f"under policy {policy} (SimAI runs only weight-gradient collectives there); "
                            f"ignored")
            dec = ("NONE", "none")
        comm, group = dec
        phases.append(Phase(comp, comm, group, size if comm != "NONE" else 0))
    upd = _int_field(toks[11], f"update time of layer {name}", path, lineno, 0, MAX_TIME_PS // 1000)
    return Layer(name, dep, phases[0], phases[1], phases[2], upd, lineno)


def read_simai_workload(path: str | os.PathLike, n_layers: int | None = None,
                        all_gpus: int | None = None) -> TrainingSpec:
    """Read a SimAI/AICB workload file (format in the module docstring).

    Args:
        path: the workload file.
        n_layers: keep only the first N layers (scaled-down runs); all lines
            are still checked. Must be >= 1; larger than the file's count keeps
            all.
        all_gpus: cluster size; overrides the file's ``all_gpus`` (default:
            the file's, else ``tp*pp*ep`` with a warning).

    Returns:
        The :class:`TrainingSpec` (``name`` = file stem, ``source`` = path,
        ``warnings`` = ``"FILE:LINE: message"`` strings).

    Raises:
        InputError naming the file, the line and the offending value for: a
        file that cannot be opened or is empty; an unknown policy; a header key
        without a value or with a bad number (sizes must be >= 1, pp_comm >= 0);
        ``all_gpus`` not divisible by ``tp*pp``; ``ep`` not dividing ``dp``; a
        missing or bad layer count; a layer line with the wrong number of
        fields, a non-integer or negative number, a dependency < -1; a file
        with fewer layer lines than declared.
    """
    spath = str(path)
    if n_layers is not None and (isinstance(n_layers, bool) or not isinstance(n_layers, int) or n_layers < 1):
        raise InputError(f"n_layers {n_layers!r} must be an integer >= 1", spath)
    with open_text(path, "SimAI workload file") as f:
        lines = [ln.rstrip("\n") for ln in f]  # universal newlines: CRLF/CR already folded
    warnings: list[str] = []

    if not lines or not lines[0].split():
        raise InputError("empty header: expected a parallelism policy such as "
                         "HYBRID_TRANSFORMER_FWD_IN_BCKWD on line 1", spath, 1)
    policy, params = _parse_header(lines[0].split(), spath, warnings)

    vals = {}
    for key, lo in _INT_KEYS.items():
        if key in params:
            vals[key] = _int_field(params[key], f"header {key}", spath, 1, lo, MAX_FLOW_BYTES)
    tp = vals.get("model_parallel_NPU_group", 1)
    ep = vals.get("ep", 1)
    pp = vals.get("pp", 1)
    vpp = vals.get("vpp", 1)
    ga = vals.get("ga", 1)
    pp_comm = vals.get("pp_comm", 0)
    if all_gpus is not None:
        if isinstance(all_gpus, bool) or not isinstance(all_gpus, int) or all_gpus < 1:
            raise InputError(f"all_gpus {all_gpus!r} must be an integer >= 1", spath)
        n = all_gpus
        where = f"all_gpus {n} (given by the caller)"
    elif "all_gpus" in vals:
        n = vals["all_gpus"]
        where = f"all_gpus {n}"
    else:
        n = tp * pp * ep
        where = f"all_gpus {n} (assumed)"
        warnings.append(f"{spath}:1: header has no all_gpus; assuming the smallest cluster "
                        f"tp*pp*ep = {n} (pass --gpus to choose the cluster size)")
    if n % (tp * pp):
        raise InputError(f"{where} is not divisible by tp*pp = {tp}*{pp} = {tp * pp}", spath, 1)
    dp = n // (tp * pp)
    if dp % ep:
        raise InputError(f"ep {ep} does not divide dp = all_gpus/(tp*pp) = {n}/{tp * pp} = {dp}", spath, 1)
    if pp > 1 and pp_comm == 0:
        warnings.append(f"{spath}:1: pp {pp} > 1 but pp_comm is 0: pipeline stages exchange nothing")
    if pp == 1 and pp_comm != 0:
        warnings.append(f"{spath}:1: pp_comm {pp_comm} with pp 1 is never sent")
    if policy == "HYBRID_CUSTOMIZED":
        warnings.append(f"{spath}:1: HYBRID_CUSTOMIZED per-layer policies (13th field) are ignored")

    if len(lines) < 2 or not lines[1].split():
        raise InputError("missing layer count on line 2", spath, 2 if len(lines) >= 2 else 1)
    count_toks = lines[1].split()
    if len(count_toks) != 1:
        raise InputError(f"line 2 must hold only the layer count, found {lines[1].strip()!r}", spath, 2)
    declared = _int_field(count_toks[0], "layer count", spath, 2, 1)

    n_fields = _N_FIELDS + (1 if policy == "HYBRID_CUSTOMIZED" else 0)
    layers: list[Layer] = []
    idx = 2  # 0-based index of the next line to read
    while len(layers) < declared:
        if idx >= len(lines):
            raise InputError(f"truncated file: line 2 declares {declared} layers, found {len(layers)}",
                             spath, max(len(lines), 2))
        lineno = idx + 1
        toks = lines[idx].split()
        idx += 1
        if not toks:
            continue
        layers.append(_parse_layer(toks, n_fields, len(layers) + 1, policy, spath, lineno, warnings))
    extra = [i + 1 for i in range(idx, len(lines)) if lines[i].strip()]
    if extra:
        warnings.append(f"{spath}:{extra[0]}: {len(extra)} non-blank line(s) after the {declared} "
                        f"declared layers ignored")
    if n_layers is not None:
        if n_layers > len(layers):
            warnings.append(f"{spath}: --layers {n_layers} is more than its {len(layers)} layer lines: all are run")
        layers = layers[:n_layers]
    name = os.path.splitext(os.path.basename(spath))[0]
    return TrainingSpec(name=name, policy=policy, tp=tp, dp=dp, pp=pp, ep=ep, vpp=vpp, ga=ga,
                        all_gpus=n, pp_comm_bytes=pp_comm, layers=layers, source=spath,
                        warnings=warnings, params=params)


def comm_type_token(phase: Phase, column: str) -> str:
    """The SimAI comm-type token for ``phase`` in ``column`` (``fwd``, ``ig`` or ``wg``).

    Raises ValueError when the group cannot be written in that column (SimAI
    has no spelling for a DP collective in the forward column, nor a TP one in
    the weight-gradient column).
    """
    if phase.comm == "NONE":
        return "NONE"
    default = "dp" if column == "wg" else "tp"
    if phase.group == default:
        return phase.comm
    if phase.group in _GROUP_SUFFIX:
        return phase.comm + _GROUP_SUFFIX[phase.group]
    raise ValueError(f"a {phase.comm} on group {phase.group!r} cannot be written in the {column} column")


def format_simai_workload(spec: TrainingSpec) -> str:
    """``spec`` as a SimAI workload file (the reader reads it back to the same layers).

    Raises:
        ValueError: ``spec.param_allgather`` is set (no SimAI column holds it).
    """
    if spec.param_allgather.comm != "NONE":
        raise ValueError("a distributed-optimizer parameter all-gather has no SimAI workload column")
    head = (f"{spec.policy}\tmodel_parallel_NPU_group: {spec.tp} ep: {spec.ep} pp: {spec.pp} "
            f"vpp: {spec.vpp} ga: {spec.ga} all_gpus: {spec.all_gpus} checkpoints: 0 "
            f"checkpoint_initiates: 0 pp_comm: {spec.pp_comm_bytes}")
    out = [head, str(len(spec.layers))]
    for ly in spec.layers:
        f, i, w = ly.forward, ly.input_grad, ly.weight_grad
        out.append("\t".join(map(str, (
            ly.name, ly.dependency,
            f.compute_ns, comm_type_token(f, "fwd"), f.size_bytes,
            i.compute_ns, comm_type_token(i, "ig"), i.size_bytes,
            w.compute_ns, comm_type_token(w, "wg"), w.size_bytes, ly.update_ns))))
    return "\n".join(out) + "\n"


# ---------------------------------------------------------------------------
# parallel groups (layout in the module docstring)


def check_layout(spec) -> None:
    """InputError unless ``tp*dp*pp == all_gpus`` (all >= 1) and ``ep`` divides ``dp``."""
    tp, dp, pp, ep, n = spec.tp, spec.dp, spec.pp, spec.ep, spec.all_gpus
    src = getattr(spec, "source", None)
    line = 1 if src else None
    for what, v in (("tp", tp), ("dp", dp), ("pp", pp), ("ep", ep)):
        if not isinstance(v, int) or v < 1:
            raise InputError(f"{what} {v!r} must be an integer >= 1", src, line)
    if tp * dp * pp != n:
        raise InputError(f"tp*dp*pp = {tp}*{dp}*{pp} = {tp * dp * pp} differs from all_gpus {n}", src, line)
    if dp % ep:
        raise InputError(f"ep {ep} does not divide dp {dp}", src, line)


def group_size(spec, kind: str) -> int:
    """Members in a group of ``kind``: tp, dp, pp, ep, dp/ep for dp_ep; 1 for none."""
    if kind == "tp":
        return spec.tp
    if kind == "dp":
        return spec.dp
    if kind == "pp":
        return spec.pp
    if kind == "ep":
        return spec.ep
    if kind == "dp_ep":
        return spec.dp // spec.ep
    if kind == "none":
        return 1
    raise ValueError(f"unknown group kind {kind!r}; expected one of {', '.join(GROUP_KINDS)} or none")


def _rank(spec, t: int, d: int, p: int) -> int:
    return t + spec.tp * (d + spec.dp * p)


def _coords(spec, gpu: int) -> tuple[int, int, int]:
    if not isinstance(gpu, int) or not 0 <= gpu < spec.all_gpus:
        raise ValueError(f"gpu {gpu!r} out of range 0..{spec.all_gpus - 1}")
    return gpu % spec.tp, (gpu // spec.tp) % spec.dp, gpu // (spec.tp * spec.dp)


def tp_groups(spec) -> list[list[int]]:
    """TP groups: blocks of ``tp`` consecutive ranks, in rank order."""
    check_layout(spec)
    return [[_rank(spec, t, d, p) for t in range(spec.tp)] for p in range(spec.pp) for d in range(spec.dp)]


def dp_groups(spec) -> list[list[int]]:
    """DP groups: same (TP index, stage), stride ``tp``; sorted by first member."""
    check_layout(spec)
    return [[_rank(spec, t, d, p) for d in range(spec.dp)] for p in range(spec.pp) for t in range(spec.tp)]


def pp_stage_of(spec, gpu: int) -> int:
    """Pipeline stage of ``gpu``: ``gpu // (tp*dp)``."""
    check_layout(spec)
    return _coords(spec, gpu)[2]


def pp_groups(spec) -> list[list[int]]:
    """Pipelines: the ``pp`` ranks sharing (TP index, DP index), in stage order."""
    check_layout(spec)
    return [[_rank(spec, t, d, p) for p in range(spec.pp)] for d in range(spec.dp) for t in range(spec.tp)]


def ep_groups(spec) -> list[list[int]]:
    """EP groups: ``ep`` consecutive members of each DP group; sorted by first member."""
    check_layout(spec)
    ep, k = spec.ep, spec.dp // spec.ep
    return [[_rank(spec, t, b * ep + j, p) for j in range(ep)]
            for p in range(spec.pp) for b in range(k) for t in range(spec.tp)]


def dp_ep_groups(spec) -> list[list[int]]:
    """DP_EP groups: DP-group members with the same EP position (size dp/ep); sorted by first member."""
    check_layout(spec)
    ep, k = spec.ep, spec.dp // spec.ep
    return [[_rank(spec, t, b * ep + j, p) for b in range(k)]
            for p in range(spec.pp) for j in range(ep) for t in range(spec.tp)]


def group_of(spec, gpu: int, kind: str) -> list[int]:
    """The members (ascending) of ``gpu``'s group of ``kind``: tp, dp, ep, dp_ep, pp (none -> [gpu])."""
    check_layout(spec)
    t, d, p = _coords(spec, gpu)
    if kind == "tp":
        return [_rank(spec, x, d, p) for x in range(spec.tp)]
    if kind == "dp":
        return [_rank(spec, t, x, p) for x in range(spec.dp)]
    if kind == "pp":
        return [_rank(spec, t, d, x) for x in range(spec.pp)]
    if kind == "ep":
        base = d - d % spec.ep
        return [_rank(spec, t, base + j, p) for j in range(spec.ep)]
    if kind == "dp_ep":
        j = d % spec.ep
        return [_rank(spec, t, b * spec.ep + j, p) for b in range(spec.dp // spec.ep)]
    if kind == "none":
        return [gpu]
    raise ValueError(f"unknown group kind {kind!r}; expected one of {', '.join(GROUP_KINDS)} or none")


__all__ = ["Phase", "Layer", "TrainingSpec", "NO_PHASE", "POLICIES", "COMM_KINDS", "GROUP_KINDS",
           "read_simai_workload", "looks_like_simai_workload", "format_simai_workload", "comm_type_token",
           "check_layout", "group_size", "tp_groups", "dp_groups", "pp_stage_of", "pp_groups", "ep_groups",
           "dp_ep_groups", "group_of"]
