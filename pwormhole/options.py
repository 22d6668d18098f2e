"""The options of a run, one typed object for the command line and the Python API, and the checks
and assembly that turn them into a run's scenario and settings (:func:`prepare_run`).

:class:`RunOptions` has a field per option of ``pwormhole run`` (``--dist-opt`` is ``dist_opt``);
``commands/cli.py`` fills it from the command line, :func:`pwormhole.api.simulate` from keyword
arguments (checked for their types by :meth:`RunOptions.of_keywords`: no value is ever read as
another option). :func:`prepare_run` checks every option against the others and the inputs, builds
the scenario and the Wormhole settings, and reports a mistake as one
:class:`~pwormhole.errors.InputError` before anything is simulated.
"""

from __future__ import annotations

import dataclasses
import os
import shlex
import sys
import typing
from dataclasses import dataclass, field
from typing import NamedTuple

from . import compiled
from .accel.config import NVLINK_CHOICES, AccelConfig
from .config import (
    CC_BY_NAME,
    CC_DCQCN,
    EMBEDDED_SCENARIOS,
    INPUT_FORMATS,
    NVLINK_CC_CHOICES,
    NVLINK_CC_NONE,
    RUN_MODES,
    LinkDown,
    ModelConfig,
)
from .errors import InputError
from .gcpause import cyclic_gc_paused
from .inputs.formats import FLOWS_FORMATS, TOPOLOGY_FORMATS, detect_workload_format, load_chakra
from .inputs.hpcc_config import LINK_DOWN_BASE_PS, read_hpcc_config
from .outfiles import PLOT_INSTALL, check_file_writable, discard_out_dir, matplotlib_installed
from .partition.plan import PartitionPlan, check_parts
from .report.trace import DEFAULT_TRACE_LIMIT_BYTES
from .report.writer import prepare_out_dir
from .scenario import (
    DEFAULT_SCENARIO,
    EMBEDDED,
    Scenario,
    from_dag,
    from_files,
    from_hpcc_config,
    topology_from_arg,
    training_scenario,
)
from .simulate import RunSettings
from .units import format_time, parse_size_bytes, parse_time_ps
from .workload.chakra import find_rank_files
from .workload.flows import traffic_start_ps
from .workload.models import MODELS, build_model
from .workload.simai import read_simai_workload


@dataclass
class RunOptions:
    """The options of one run (those of ``pwormhole run``; None: not given)."""

    # inputs
    hpcc_config: str | None = None
    topology: str | None = None
    flows: str | None = None
    format: str | None = None
    config: str | None = None
    strict: bool = False
    scenario: str = DEFAULT_SCENARIO
    workload: str | None = None
    model: str | None = None
    gpus: int | None = None
    tp: int | None = None
    dp: int | None = None
    pp: int | None = None
    ep: int | None = None
    ga: int | None = None
    dist_opt: bool = False
    zero: int | None = None
    layers: int | None = None
    iterations: int | None = None
    cc: str | None = None
    nvlink_cc: str = NVLINK_CC_NONE
    link_down: tuple[str, ...] = ()
    # the run
    out: str | None = None
    until: str | int | float | None = None
    seed: int = 1
    mode: str | None = None
    ns3_time: bool = False
    lps: int = 1
    plan: str | None = None
    record_windows: bool = False
    no_progress: bool = False
    # outputs
    report: bool = False
    plot: bool = False
    monitor: bool = False
    monitor_interval: str | None = None
    link_interval: str | None = None
    monitor_limit: str | None = None
    trace: bool = False
    trace_limit: str | None = None
    # Wormhole
    no_skip: bool = False
    no_memo: bool = False
    memo_cache: str | None = None
    no_successors: bool = False
    no_parts: bool = False
    no_line_rate: bool = False
    follow: bool = False
    no_ring_steps: bool = False
    theta: float | None = None
    samples: int | None = None
    sample: str | None = None
    nvlink: str | None = None
    # the command line these came from (summary.json's inputs.command)
    argv: list[str] = field(default_factory=list)

    @classmethod
    def of_keywords(cls, caller: str = "simulate()", **kw) -> RunOptions:
        """Options from keyword arguments, each checked for its field's type (a path may be any
        ``os.PathLike``, a whole number an ``int``, a number an ``int`` or ``float``, an on/off option
        ``True`` or ``False``; None leaves an option unset). InputError, worded for Python, otherwise."""
        hints = typing.get_type_hints(cls)
        names = {f.name for f in dataclasses.fields(cls)} - {"argv"}
        given = {}
        for name, value in kw.items():
            if name not in names:
                raise InputError(f"{caller} got an unexpected keyword argument {name!r}")
            given[name] = _typed(caller, name, value, hints[name])
        return cls(**given, argv=_argv_of(given))

    def given(self) -> dict:
        """The options that differ from their defaults."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)
                if f.name != "argv" and getattr(self, f.name) != f.default}


def _typed(caller: str, name: str, value, hint):
    """``value`` as option ``name`` takes it (see :meth:`RunOptions.of_keywords`)."""
    args = set(typing.get_args(hint)) or {hint}
    if value is None:
        if type(None) in args:
            return None
        raise InputError(f"{caller}: {name} cannot be None")
    if bool in args:
        if type(value) is not bool:
            raise InputError(f"{caller}: {name} must be True or False, not {type(value).__name__} {value!r}")
        return value
    if tuple[str, ...] in args or hint == tuple[str, ...]:
        items = [value] if isinstance(value, (str, os.PathLike)) else value
        if not isinstance(items, (list, tuple)) or not all(isinstance(v, (str, os.PathLike)) for v in items):
            raise InputError(f"{caller}: {name} must be a string or a list of strings, not "
                             f"{type(value).__name__} {value!r}")
        return tuple(os.fspath(v) for v in items)
    if str in args:
        numbers = int in args or float in args  # a time: "10ms" or a number of seconds
        if isinstance(value, os.PathLike) and not numbers:
            return os.fspath(value)
        if isinstance(value, str) or (type(value) in (int, float) and numbers):
            return value
        kind = "a string or a number" if numbers else "a string or a path"
        raise InputError(f"{caller}: {name} must be {kind}, not {type(value).__name__} {value!r}")
    if float in args:
        if type(value) not in (int, float):
            raise InputError(f"{caller}: {name} must be a number, not {type(value).__name__} {value!r}")
        return value
    if int in args:
        if type(value) is not int:
            raise InputError(f"{caller}: {name} must be an int, not {type(value).__name__} {value!r}")
        return value
    return value


def _check_choices(opts: RunOptions) -> None:
    """Options that take one of a few names (the command line's parser checks them too)."""
    for name, choices in (("format", INPUT_FORMATS), ("scenario", EMBEDDED_SCENARIOS), ("cc", tuple(CC_BY_NAME)),
                          ("nvlink_cc", NVLINK_CC_CHOICES), ("mode", RUN_MODES), ("nvlink", NVLINK_CHOICES)):
        v = getattr(opts, name)
        if v is not None and v not in choices:
            raise InputError(f"--{name.replace('_', '-')} must be one of {', '.join(choices)}, got {v!r}")
    if opts.plot and not matplotlib_installed():
        raise InputError(f"--plot draws timeline.png with matplotlib, which is not installed: {PLOT_INSTALL}")
    if isinstance(opts.seed, int) and not -2**63 < opts.seed < 2**63:  # (summary.json keeps int64)
        raise InputError(f"--seed must be within +-(2^63 - 1), got {opts.seed}")


class Prepared(NamedTuple):
    """A run ready to simulate: its scenario, output folder and settings (for
    :func:`~pwormhole.simulate.simulate`), and the folder made for the outputs (removed again if the
    run is refused)."""
    scenario: Scenario
    out: str
    settings: RunSettings
    made_out: tuple[str, str] | None

    @property
    def accel(self) -> AccelConfig | None:
        return self.settings.accel


def prepare_run(opts: RunOptions, comm=None, made: list | None = None) -> Prepared:
    """Check ``opts`` and assemble the run they describe (``comm``: an MPI communicator, one LP per
    rank). InputError on a mistake, before anything is simulated; a folder made for the outputs is
    removed again then, unless ``made`` is given under ``comm``: every rank checks the folder, so
    the caller removes it (``made[0]``) once every rank has agreed (a rank refused first would
    remove it under another still checking it)."""
    deferred = comm is not None and made is not None
    made = made if made is not None else [None]
    try:
        with cyclic_gc_paused():  # (the scenario's DAG: a million objects, no cycles)
            return _prepare(opts, comm, made)
    except InputError:
        if not deferred:
            discard_out_dir(made[0])
        raise


def _positive(name: str, v: int | None) -> None:
    if v is not None and v < 1:
        raise InputError(f"--{name} must be >= 1, got {v}")


def _training_scenario(opts):
    """The scenario of a training workload (``--workload`` or ``--model``), or None."""

    if not (opts.workload or opts.model):
        for flag in ("tp", "dp", "pp", "ep", "ga"):
            if getattr(opts, flag) is not None:
                raise InputError(f"--{flag} needs --model (a workload file sets its own)")
        if opts.dist_opt:
            raise InputError("--dist-opt needs --model")
        if opts.zero is not None:
            raise InputError("--zero needs --model")
        for flag in ("gpus", "layers", "iterations"):
            if getattr(opts, flag) is not None:
                raise InputError(f"--{flag} needs --workload or --model")
        return None
    if opts.model:
        if opts.model.lower() not in MODELS:
            raise InputError(f"unknown model {opts.model!r}; known models: {', '.join(MODELS)}")
    if opts.cc and opts.config:
        raise InputError("--cc and --config both set the congestion control; give one")
    if opts.workload and opts.model:
        raise InputError("give either --workload or --model, not both")
    for flag in ("gpus", "tp", "dp", "pp", "ep", "ga", "layers", "iterations"):
        _positive(flag, getattr(opts, flag))
    if opts.flows or opts.hpcc_config:
        raise InputError("--flows/--hpcc-config cannot be combined with a training workload")
    topo = topology_from_arg(opts.topology, opts.format) if opts.topology else None
    if opts.workload and opts.dist_opt:
        raise InputError("--dist-opt applies to --model only (a workload file lists its own collectives)")
    if opts.workload and opts.zero is not None:
        raise InputError("--zero applies to --model only (a workload file lists its own collectives)")
    if opts.workload and (opts.format == "chakra" or (opts.format is None and _is_chakra(opts.workload))):
        return _chakra_scenario(opts, topo)
    if opts.workload:
        for flag in ("tp", "dp", "pp", "ep", "ga"):
            if getattr(opts, flag) is not None:
                raise InputError(f"--{flag} comes from the workload file; it applies to --model only")
        spec = read_simai_workload(opts.workload, opts.layers, opts.gpus)
    else:
        n = opts.gpus or (len(topo.gpus) if topo is not None else None)
        if n is None:
            raise InputError("--model needs --gpus or a --topology")
        kw = {k: getattr(opts, k) for k in ("tp", "dp", "pp", "ep", "ga") if getattr(opts, k) is not None}
        kw["dist_opt"] = opts.dist_opt
        kw["zero"] = opts.zero or 0
        spec = build_model(opts.model, n, layers=opts.layers, **kw)
    if topo is None:  # a rail-optimized fabric of 8-GPU servers with enough GPUs
        servers = -(-spec.all_gpus // 8)
        topo = topology_from_arg(f"rail-optimized:gpus={servers * 8}")
    if opts.config:
        cfg, warnings = read_hpcc_config(opts.config, input_files=False, strict=opts.strict)
        spec.warnings.extend(warnings)
    else:
        cfg = ModelConfig(cc_mode=CC_BY_NAME.get(opts.cc, CC_DCQCN))  # training default: DCQCN
    return training_scenario(spec, topo, cfg, opts.iterations or 1)


def _is_chakra(path: str) -> bool:
    return detect_workload_format(path) == "chakra"


def _chakra_scenario(opts, topo):
    """A Chakra (ASTRA-sim) trace on ``topo`` (default: a rail-optimized fabric with enough GPUs)."""

    for flag in ("tp", "dp", "pp", "ep", "ga", "layers", "iterations"):
        if getattr(opts, flag) is not None:
            raise InputError(f"--{flag} does not apply to a Chakra trace")
    if topo is None:
        ranks = len(find_rank_files(opts.workload))
        topo = topology_from_arg(f"rail-optimized:gpus={-(-ranks // 8) * 8}")
    dag = load_chakra(opts.workload, topo)
    if opts.config:
        cfg, warnings = read_hpcc_config(opts.config, input_files=False, strict=opts.strict)
    else:
        cfg, warnings = ModelConfig(cc_mode=CC_BY_NAME.get(opts.cc, CC_DCQCN)), []
        cfg.fill_k_maps({ln.rate_bps for ln in topo.links})
    name = os.path.basename(os.path.normpath(opts.workload)).rstrip(".") or "chakra"
    return from_dag(name, topo, dag, cfg, warnings)


def _load_scenario(opts):
    scn = _read_scenario(opts)
    scn.config.nvlink_cc = opts.nvlink_cc
    _monitor_settings(opts, scn.config)
    _link_down_settings(opts, scn)
    scn.command = shlex.join(["pwormhole", *map(str, opts.argv or _argv_of(opts.given()))])
    return scn


def _link_down_settings(opts, scn) -> None:
    """``--link-down TIME:A-B`` (repeatable) added to the config's ``LINK_DOWN``; a note where a flow
    list does not start at 2 s, where HPCC's ns-3 would fail the config's link."""
    cfg = scn.config
    for text in opts.link_down:
        time_text, sep, ends = text.rpartition(":")
        a, dash, b = ends.partition("-")
        if not (sep and dash and a.isdigit() and b.isdigit()):
            raise InputError(f"--link-down {text!r}: expected TIME:A-B (the link between nodes A and B fails "
                             "TIME after the traffic starts, e.g. 50us:3-7)")
        try:
            t_ps = parse_time_ps(time_text)
        except ValueError as e:
            raise InputError(f"--link-down {text!r}: {e}") from None
        if int(a) == int(b):
            raise InputError(f"--link-down {text!r}: link {a}-{b} connects a node to itself")
        if any((d.after_ps, {d.node_a, d.node_b}) == (t_ps, {int(a), int(b)}) for d in cfg.link_down):
            raise InputError(f"--link-down {text!r}: that link already fails then (given twice)")
        cfg.link_down += (LinkDown(t_ps, int(a), int(b), f"--link-down {text}"),)
    start_ps = traffic_start_ps(scn.flows, scn.dag)
    for d in cfg.link_down:  # (a workload starts at 0: that its ns-3 run never fails the link goes unsaid)
        if d.path is not None and scn.dag is None and start_ps != LINK_DOWN_BASE_PS:
            scn.warnings.append(f"{d.path}: {d.given} fails the link {format_time(d.after_ps)} after the traffic "
                                f"starts (at {format_time(start_ps + d.after_ps)}); HPCC's ns-3 fails it at 2 s + "
                                f"{format_time(d.after_ps)}, where its flow files start")


def _monitor_settings(opts, cfg) -> None:
    """``--monitor``, ``--monitor-interval``, ``--link-interval`` into ``cfg`` (the monitors of
    :mod:`pwormhole.report.monitor`; a config's QLEN_MON_FILE turns them on too, over its window)."""
    if opts.monitor and cfg.qlen_mon_file is None:
        cfg.qlen_mon_file = "qlen.txt"  # over the whole run
        cfg.qlen_mon_end_ps = None
        if cfg.qlen_mon_file in (cfg.fct_output_name, cfg.pfc_output_name):
            raise InputError("--monitor writes qlen.txt, the name the config gives another output; "
                             "name it with QLEN_MON_FILE", cfg.source)
    for flag, fld in (("monitor_interval", "monitor_interval_ps"), ("link_interval", "link_interval_ps")):
        text = getattr(opts, flag)
        if text is None:
            continue
        name = "--" + flag.replace("_", "-")
        if cfg.qlen_mon_file is None:
            raise InputError(f"{name} needs --monitor (or QLEN_MON_FILE in the config)")
        try:
            ps = parse_time_ps(text)
        except ValueError as e:
            raise InputError(f"{name}: {e}") from None
        if ps <= 0 or ps % 1000:
            raise InputError(f"{name} must be a positive whole number of ns, got {text!r}")
        setattr(cfg, fld, ps)
    if opts.monitor_limit is not None:
        if cfg.qlen_mon_file is None:
            raise InputError("--monitor-limit needs --monitor (or QLEN_MON_FILE in the config)")
        try:
            cfg.monitor_limit_bytes = parse_size_bytes(opts.monitor_limit)
        except ValueError as e:
            raise InputError(f"--monitor-limit: {e}") from None
        if cfg.monitor_limit_bytes <= 0:
            raise InputError(f"--monitor-limit must be more than 0 bytes, got {opts.monitor_limit!r}")
    iv = cfg.monitor_interval_ps
    if cfg.link_interval_ps % iv:
        if opts.link_interval is not None:
            raise InputError(f"--link-interval {opts.link_interval} must be a multiple of the sampling interval "
                             f"({iv // 1000} ns)")
        cfg.link_interval_ps = max(1, cfg.link_interval_ps // iv) * iv  # the default, to the sampling's grid


def _read_scenario(opts):

    scn = _training_scenario(opts)
    if scn is not None:
        return scn
    if opts.hpcc_config:
        if opts.topology or opts.flows:
            raise InputError("give either --hpcc-config or --topology/--flows, not both")
        if opts.cc:
            raise InputError("--cc and --hpcc-config both set the congestion control (its CC_MODE); give one")
        if opts.config:
            raise InputError("--config and --hpcc-config are both a run's configuration; give one")
        return from_hpcc_config(opts.hpcc_config, strict=opts.strict)
    if opts.topology or opts.flows:
        if not (opts.topology and opts.flows):
            raise InputError("--topology needs --flows (or a training workload: --workload or --model)" if opts.topology
                             else "--flows needs --topology")
        if opts.cc and opts.config:
            raise InputError("--cc and --config both set the congestion control; give one")
        if opts.format and opts.format not in TOPOLOGY_FORMATS + FLOWS_FORMATS:
            raise InputError(f"--format {opts.format} is a workload's format (--workload), not a topology's "
                             f"({', '.join(TOPOLOGY_FORMATS)}) nor a flow file's ({', '.join(FLOWS_FORMATS)})")
        return from_files(opts.topology, opts.flows, opts.config, opts.format, cc=opts.cc, strict=opts.strict)
    if opts.config:
        raise InputError("--config needs --topology and --flows, a training workload, or --hpcc-config")
    scn = EMBEDDED[opts.scenario]()
    if opts.cc:  # the embedded scenarios run under DCQCN unless told otherwise
        scn.config.cc_mode = CC_BY_NAME[opts.cc]
    return scn


def _wants_report(opts) -> bool:
    """``--report``, or the default scenario (``pwormhole run`` with no inputs: a first run shows its page)."""

    inputs = (opts.hpcc_config, opts.topology, opts.flows, opts.workload, opts.model)
    return opts.report or (not any(inputs) and opts.scenario == DEFAULT_SCENARIO)


def _until_ps(opts) -> int | None:
    """``--until`` in ps (None: not given); InputError for a bad time."""
    if opts.until is None:
        return None
    if isinstance(opts.until, str) and not opts.until.strip():
        raise InputError("--until is empty: give a time (e.g. 2.01 for seconds, 50us)")
    try:
        return parse_time_ps(opts.until)
    except ValueError as e:
        raise InputError(f"--until: {e}") from None


def _prepare_out(opts) -> tuple[str, str] | None:
    """Create and check ``--out``; returns ``(folder, the outermost folder made for it)`` (None: it was
    there), removed again if the inputs are then refused (``outfiles.discard_out_dir``)."""
    made = prepare_out_dir(opts.out) if opts.out else None
    return (opts.out, made) if made is not None else None


def _prepare(opts: RunOptions, comm, made: list) -> Prepared:
    """:func:`prepare_run`; ``made[0]``: the folder made for the outputs, once made."""
    _check_choices(opts)
    made[0] = _prepare_out(opts)  # before any work: a bad folder is reported at once
    _check_memo_cache(opts)
    scn = _load_scenario(opts)
    if opts.ns3_time:
        if opts.mode != "packet":
            raise InputError("--ns3-time applies to --mode packet only (Wormhole's rates are the links' own)")
        scn.config.ns3_time = True
    if comm is None or comm.rank == 0:
        for w in scn.warnings:
            print(f"pwormhole: warning: {w}", file=sys.stderr)
        if compiled.warning():
            print(f"pwormhole: {compiled.warning()}", file=sys.stderr)
    until_ps = _until_ps(opts)
    out = _out_dir(opts.out) or os.path.join("pwormhole-out", scn.name)
    if comm is not None and opts.lps != 1:
        raise InputError("--lps is for in-process LPs; under mpirun the rank count sets the LPs")
    if opts.record_windows and (comm is not None or opts.lps != 1 or opts.plan):
        raise InputError("--record-windows runs one in-process LP per unit: not with mpiexec, --lps or --plan")
    owner = None
    if opts.plan:
        plan = PartitionPlan.from_json(opts.plan, scn.topology)
        want = comm.size if comm is not None else opts.lps
        if plan.parts != want:
            raise InputError(f"plan has {plan.parts} parts but the run has {want} LPs", opts.plan)
        owner = plan.owner
    elif comm is not None:
        check_parts(scn.topology, comm.size)  # on every rank (rank 0 alone makes the plan)
    if opts.lps < 1:
        raise InputError(f"--lps must be >= 1, got {opts.lps}")
    accel = _accel_config(opts, comm)
    settings = RunSettings(until_ps, opts.seed, opts.lps, owner, accel, opts.memo_cache, opts.record_windows, opts.plot,
                           _wants_report(opts), None if not opts.no_progress else False,
                           trace=opts.trace, trace_limit_bytes=_trace_limit(opts))
    return Prepared(scn, out, settings, made[0])


def _trace_limit(opts) -> int:
    """``--trace-limit`` in bytes (the default without it); InputError for a bad size or without ``--trace``."""
    if opts.trace_limit is None:
        return DEFAULT_TRACE_LIMIT_BYTES
    if not opts.trace:
        raise InputError("--trace-limit needs --trace")
    try:
        return parse_size_bytes(opts.trace_limit)
    except ValueError as e:
        raise InputError(f"--trace-limit: {e}") from None


def _out_dir(out: str | None) -> str | None:
    """``--out`` as given (None: not given); InputError for an empty one (it is no folder)."""
    if out is not None and not out.strip():
        raise InputError("--out is empty: give a folder")
    return out


def _check_memo_cache(opts) -> None:
    """A ``--memo-cache`` that cannot be saved is reported before any work (as ``--out`` is)."""
    if opts.memo_cache and not opts.no_memo and (opts.mode or "wormhole") == "wormhole":
        check_file_writable(opts.memo_cache, "--memo-cache")


def _accel_config(opts, comm):
    """The Wormhole settings of ``run`` (None in packet mode)."""

    mode = opts.mode or "wormhole"
    if mode not in ("wormhole", "packet"):
        raise InputError(f"--mode must be wormhole or packet, got {mode!r}")
    if mode == "packet":
        for flag in ("no_memo", "no_skip", "memo_cache", "theta", "samples", "sample", "nvlink", "follow",
                     "no_successors", "no_ring_steps", "no_parts", "no_line_rate"):
            if getattr(opts, flag) not in (None, False):
                raise InputError(f"--{flag.replace('_', '-')} applies to --mode wormhole only")
        return None
    cfg = AccelConfig()
    if opts.theta is not None:
        if not 0 < opts.theta < 1:
            raise InputError(f"--theta must be between 0 and 1, got {opts.theta}")
        cfg.theta = opts.theta
    if opts.samples is not None:
        if opts.samples < 2:
            raise InputError(f"--samples must be >= 2, got {opts.samples}")
        cfg.samples = opts.samples
    if opts.sample is not None:
        try:
            cfg.sample_ps = parse_time_ps(opts.sample)
        except ValueError as e:
            raise InputError(f"--sample: {e}") from None
        if cfg.sample_ps <= 0:
            raise InputError(f"--sample must be positive, got {opts.sample}")
    cfg.skip = not opts.no_skip
    cfg.memo = not opts.no_memo
    cfg.follow = opts.follow
    cfg.successors = not opts.no_successors
    cfg.parts = not opts.no_parts
    cfg.line_rate = not opts.no_line_rate
    cfg.ring_steps = not opts.no_ring_steps
    if opts.nvlink is not None:
        cfg.nvlink = opts.nvlink
    if opts.memo_cache and not cfg.memo:
        raise InputError("--memo-cache needs memoization (drop --no-memo)")
    return cfg


def prepare_compare(opts: RunOptions) -> tuple[Prepared, typing.Callable[[], Scenario]]:
    """The runs of ``pwormhole compare`` (both modes, the Wormhole settings of ``opts``): the prepared
    packet run, and how to build its scenario again for the Wormhole run. InputError as
    :func:`prepare_run`."""
    made: list = [None]
    try:
        _check_choices(opts)
        if opts.mode is not None:
            raise InputError("compare runs both modes; drop --mode")
        if opts.trace or opts.trace_limit is not None:
            raise InputError("--trace applies to run (compare writes no trace.json)")
        if opts.ns3_time:
            raise InputError("--ns3-time applies to --mode packet only: compare runs Wormhole too")
        made[0] = _prepare_out(opts)
        _check_memo_cache(opts)
        scn = _load_scenario(opts)
        for w in scn.warnings:
            print(f"pwormhole: warning: {w}", file=sys.stderr)
        accel = _accel_config(dataclasses.replace(opts, mode="wormhole"), None)
        until_ps = _until_ps(opts)
    except InputError:
        discard_out_dir(made[0])
        raise
    out = _out_dir(opts.out) or os.path.join("pwormhole-out", scn.name + "-compare")
    settings = RunSettings(until_ps, opts.seed, opts.lps, None, accel, opts.memo_cache, report=opts.report)
    return Prepared(scn, out, settings, made[0]), lambda: _load_scenario(opts)


def _argv_of(options: dict) -> list[str]:
    """The ``pwormhole run`` command line of ``options`` (name -> value, in their order; for summary.json)."""
    argv = ["run"]
    for name, v in options.items():
        if v is None or v is False:
            continue
        flag = "--" + name.replace("_", "-")
        for x in (v if isinstance(v, tuple) else (v,)):
            if x is True:
                argv.append(flag)
            elif str(x).startswith("-"):  # joined, so that it is not read as an option
                argv.append(f"{flag}={x}")
            else:
                argv += [flag, str(x)]
    return argv


__all__ = ["RunOptions", "Prepared", "prepare_run", "prepare_compare"]
