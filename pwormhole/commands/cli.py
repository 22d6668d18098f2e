"""Command line: ``pwormhole run | ...``.

User mistakes (``InputError``) print one line ``pwormhole: error: ...`` and
exit with status 2, never a traceback; so do output files that cannot be
written (``OutputError``, status 4).
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys

from .. import compiled
from ..accel.config import NVLINK_CHOICES
from ..config import CC_BY_NAME, NVLINK_CC_CHOICES, NVLINK_CC_NONE, LinkDown
from ..errors import AgreedInputError, InputError, OutputError, StuckError, Terminated
from ..inputs.hpcc_config import LINK_DOWN_BASE_PS
from ..outfiles import discard_out_dir
from ..sync import interrupt
from ..units import format_time, parse_size_bytes, parse_time_ps
from ..workload.flows import traffic_start_ps


def _positive(name: str, v: int | None) -> None:
    if v is not None and v < 1:
        raise InputError(f"--{name} must be >= 1, got {v}")


def _training_scenario(args):
    """The scenario of a training workload (``--workload`` or ``--model``), or None."""
    from ..config import CC_DCQCN, ModelConfig
    from ..scenario import topology_from_arg, training_scenario

    if not (args.workload or args.model):
        for flag in ("tp", "dp", "pp", "ep", "ga"):
            if getattr(args, flag) is not None:
                raise InputError(f"--{flag} needs --model (a workload file sets its own)")
        if args.dist_opt:
            raise InputError("--dist-opt needs --model")
        for flag in ("gpus", "layers", "iterations"):
            if getattr(args, flag) is not None:
                raise InputError(f"--{flag} needs --workload or --model")
        return None
    if args.model:
        from ..workload.models import MODELS
        if args.model.lower() not in MODELS:
            raise InputError(f"unknown model {args.model!r}; known models: {', '.join(MODELS)}")
    if args.cc and args.config:
        raise InputError("--cc and --config both set the congestion control; give one")
    if args.workload and args.model:
        raise InputError("give either --workload or --model, not both")
    for flag in ("gpus", "tp", "dp", "pp", "ep", "ga", "layers", "iterations"):
        _positive(flag, getattr(args, flag))
    if args.flows or args.hpcc_config:
        raise InputError("--flows/--hpcc-config cannot be combined with a training workload")
    topo = topology_from_arg(args.topology, args.format) if args.topology else None
    if args.workload and args.dist_opt:
        raise InputError("--dist-opt applies to --model only (a workload file lists its own collectives)")
    if args.workload and (args.format == "chakra" or (args.format is None and _is_chakra(args.workload))):
        return _chakra_scenario(args, topo)
    if args.workload:
        from ..workload.simai import read_simai_workload
        for flag in ("tp", "dp", "pp", "ep", "ga"):
            if getattr(args, flag) is not None:
                raise InputError(f"--{flag} comes from the workload file; it applies to --model only")
        spec = read_simai_workload(args.workload, args.layers, args.gpus)
    else:
        from ..workload.models import build_model
        n = args.gpus or (len(topo.gpus) if topo is not None else None)
        if n is None:
            raise InputError("--model needs --gpus or a --topology")
        kw = {k: getattr(args, k) for k in ("tp", "dp", "pp", "ep", "ga") if getattr(args, k) is not None}
        kw["dist_opt"] = args.dist_opt
        spec = build_model(args.model, n, layers=args.layers, **kw)
    if topo is None:  # a rail-optimized fabric of 8-GPU servers with enough GPUs
        servers = -(-spec.all_gpus // 8)
        topo = topology_from_arg(f"rail-optimized:gpus={servers * 8}")
    if args.config:
        from ..inputs.hpcc_config import read_hpcc_config
        cfg, warnings = read_hpcc_config(args.config, input_files=False)
        spec.warnings.extend(warnings)
    else:
        cfg = ModelConfig(cc_mode=CC_BY_NAME.get(args.cc, CC_DCQCN))  # training default: DCQCN
    return training_scenario(spec, topo, cfg, args.iterations or 1)


def _is_chakra(path: str) -> bool:
    from ..inputs.formats import detect_workload_format
    return detect_workload_format(path) == "chakra"


def _chakra_scenario(args, topo):
    """A Chakra (ASTRA-sim) trace on ``topo`` (default: a rail-optimized fabric with enough GPUs)."""
    from ..config import CC_DCQCN, ModelConfig
    from ..inputs.formats import load_chakra
    from ..scenario import from_dag, topology_from_arg
    from ..workload.chakra import find_rank_files

    for flag in ("tp", "dp", "pp", "ep", "ga", "layers", "iterations"):
        if getattr(args, flag) is not None:
            raise InputError(f"--{flag} does not apply to a Chakra trace")
    if topo is None:
        ranks = len(find_rank_files(args.workload))
        topo = topology_from_arg(f"rail-optimized:gpus={-(-ranks // 8) * 8}")
    dag = load_chakra(args.workload, topo)
    if args.config:
        from ..inputs.hpcc_config import read_hpcc_config
        cfg, warnings = read_hpcc_config(args.config, input_files=False)
    else:
        cfg, warnings = ModelConfig(cc_mode=CC_BY_NAME.get(args.cc, CC_DCQCN)), []
        cfg.fill_k_maps({ln.rate_bps for ln in topo.links})
    name = os.path.basename(os.path.normpath(args.workload)).rstrip(".") or "chakra"
    return from_dag(name, topo, dag, cfg, warnings)


def _load_scenario(args):
    scn = _read_scenario(args)
    scn.config.nvlink_cc = args.nvlink_cc
    _monitor_settings(args, scn.config)
    _link_down_settings(args, scn)
    scn.command = shlex.join(["pwormhole", *map(str, getattr(args, "argv", []))])
    return scn


def _link_down_settings(args, scn) -> None:
    """``--link-down TIME:A-B`` (repeatable) added to the config's ``LINK_DOWN``; a note where a flow
    list does not start at 2 s, where HPCC's ns-3 would fail the config's link."""
    cfg = scn.config
    for text in getattr(args, "link_down", None) or ():
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
        cfg.link_down += (LinkDown(t_ps, int(a), int(b), f"--link-down {text}"),)
    start_ps = traffic_start_ps(scn.flows, scn.dag)
    for d in cfg.link_down:  # (a workload starts at 0: that its ns-3 run never fails the link goes unsaid)
        if d.path is not None and scn.dag is None and start_ps != LINK_DOWN_BASE_PS:
            scn.warnings.append(f"{d.path}: {d.given} fails the link {format_time(d.after_ps)} after the traffic "
                                f"starts (at {format_time(start_ps + d.after_ps)}); HPCC's ns-3 fails it at 2 s + "
                                f"{format_time(d.after_ps)}, where its flow files start")


def _monitor_settings(args, cfg) -> None:
    """``--monitor``, ``--monitor-interval``, ``--link-interval`` into ``cfg`` (the monitors of
    :mod:`pwormhole.report.monitor`; a config's QLEN_MON_FILE turns them on too, over its window)."""
    if args.monitor and cfg.qlen_mon_file is None:
        cfg.qlen_mon_file = "qlen.txt"  # over the whole run
        cfg.qlen_mon_end_ps = None
        if cfg.qlen_mon_file in (cfg.fct_output_name, cfg.pfc_output_name):
            raise InputError("--monitor writes qlen.txt, the name the config gives another output; "
                             "name it with QLEN_MON_FILE", cfg.source)
    for flag, fld in (("monitor_interval", "monitor_interval_ps"), ("link_interval", "link_interval_ps")):
        text = getattr(args, flag)
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
    if args.monitor_limit is not None:
        if cfg.qlen_mon_file is None:
            raise InputError("--monitor-limit needs --monitor (or QLEN_MON_FILE in the config)")
        try:
            cfg.monitor_limit_bytes = parse_size_bytes(args.monitor_limit)
        except ValueError as e:
            raise InputError(f"--monitor-limit: {e}") from None
    iv = cfg.monitor_interval_ps
    if cfg.link_interval_ps % iv:
        if args.link_interval is not None:
            raise InputError(f"--link-interval {args.link_interval} must be a multiple of the sampling interval "
                             f"({iv // 1000} ns)")
        cfg.link_interval_ps = max(1, cfg.link_interval_ps // iv) * iv  # the default, to the sampling's grid


def _read_scenario(args):
    from ..scenario import default_scenario, fat_tree_mix_scenario, from_files, from_hpcc_config, small_gpt_scenario

    scn = _training_scenario(args)
    if scn is not None:
        return scn
    if args.hpcc_config:
        if args.topology or args.flows:
            raise InputError("give either --hpcc-config or --topology/--flows, not both")
        if args.cc:
            raise InputError("--cc and --hpcc-config both set the congestion control (its CC_MODE); give one")
        return from_hpcc_config(args.hpcc_config)
    if args.topology or args.flows:
        if not (args.topology and args.flows):
            raise InputError("--topology needs --flows (or a training workload: --workload or --model)")
        if args.cc and args.config:
            raise InputError("--cc and --config both set the congestion control; give one")
        return from_files(args.topology, args.flows, args.config, args.format, cc=args.cc)
    if args.config:
        raise InputError("--config needs --topology and --flows, a training workload, or --hpcc-config")
    embedded = {"fat-tree-mix": fat_tree_mix_scenario, "gpt-350m-16gpu": small_gpt_scenario}
    scn = embedded.get(args.scenario, default_scenario)()
    if args.cc:  # the embedded scenarios run under DCQCN unless told otherwise
        scn.config.cc_mode = CC_BY_NAME[args.cc]
    return scn


def _run(args) -> int:
    from ..run import simulate
    from ..sync.mpi import world

    comm = world()
    if comm is not None:
        return _run_mpi(comm, args)
    interrupt.stop_recording(interrupt.raise_or_defer)  # one process (mpiexec -n 1): signals raise again
    scn, out, until_ps, owner, accel = _run_setup(args, None)
    report = _wants_report(args)
    simulate(scn, out, until_ps=until_ps, seed=args.seed, n_lps=args.lps, owner=owner,
             progress=None if not args.no_progress else False, plot=args.plot, accel=accel,
             memo_cache=args.memo_cache, record_windows=args.record_windows, report=report)
    print(f"outputs in {out}/" + (f" (open {os.path.join(out, 'report.html')} in a browser)" if report else ""))
    return 0


def _wants_report(args) -> bool:
    """``--report``, or the default scenario (``pwormhole run`` with no inputs: a first run shows its page)."""
    from ..scenario import DEFAULT_SCENARIO

    inputs = (args.hpcc_config, args.topology, args.flows, args.workload, args.model)
    return args.report or (not any(inputs) and args.scenario == DEFAULT_SCENARIO)


def _until_ps(args) -> int | None:
    """``--until`` in ps (None: not given); InputError for a bad time."""
    if not args.until:
        return None
    try:
        return parse_time_ps(args.until)
    except ValueError as e:
        raise InputError(f"--until: {e}") from None


def _prepare_out(args) -> None:
    """Create and check ``--out``; what it made is kept in ``args.made_out``, removed again if
    the inputs are then refused (``outfiles.discard_out_dir``)."""
    from ..report.writer import prepare_out_dir

    made = prepare_out_dir(args.out) if args.out else None
    if made is not None:
        args.made_out = (args.out, made)


def _run_setup(args, comm):
    """Read and check the inputs of ``run`` (InputError on a mistake, before any simulation).

    Returns ``(scenario, out folder, until_ps, owner, accel config)``.
    """
    _prepare_out(args)  # before any work: a bad folder is reported at once
    _check_memo_cache(args)
    scn = _load_scenario(args)
    if comm is None or comm.rank == 0:
        for w in scn.warnings:
            print(f"pwormhole: warning: {w}", file=sys.stderr)
        if compiled.warning():
            print(f"pwormhole: {compiled.warning()}", file=sys.stderr)
    until_ps = _until_ps(args)
    out = args.out or os.path.join("pwormhole-out", scn.name)
    if comm is not None and args.lps != 1:
        raise InputError("--lps is for in-process LPs; under mpirun the rank count sets the LPs")
    if getattr(args, "record_windows", False) and (comm is not None or args.lps != 1 or args.plan):
        raise InputError("--record-windows runs one in-process LP per unit: not with mpiexec, --lps or --plan")
    owner = None
    if args.plan:
        from ..partition.plan import PartitionPlan
        plan = PartitionPlan.from_json(args.plan, scn.topology)
        want = comm.size if comm is not None else args.lps
        if plan.parts != want:
            raise InputError(f"plan has {plan.parts} parts but the run has {want} LPs", args.plan)
        owner = plan.owner
    elif comm is not None:
        from ..partition.plan import check_parts
        check_parts(scn.topology, comm.size)  # on every rank (rank 0 alone makes the plan)
    if args.lps < 1:
        raise InputError(f"--lps must be >= 1, got {args.lps}")
    accel = _accel_config(args, comm)
    return scn, out, until_ps, owner, accel


def _check_memo_cache(args) -> None:
    """A ``--memo-cache`` that cannot be saved is reported before any work (as ``--out`` is)."""
    if args.memo_cache and not args.no_memo and (args.mode or "wormhole") == "wormhole":
        from ..outfiles import check_file_writable
        check_file_writable(args.memo_cache, "--memo-cache")


def _accel_config(args, comm):
    """The Wormhole settings of ``run`` (None in packet mode)."""
    from ..accel.wormhole import AccelConfig
    from ..units import parse_time_ps

    mode = args.mode or "wormhole"
    if mode not in ("wormhole", "packet"):
        raise InputError(f"--mode must be wormhole or packet, got {mode!r}")
    if mode == "packet":
        for flag in ("no_memo", "no_skip", "memo_cache", "theta", "samples", "sample", "nvlink", "follow",
                     "no_successors"):
            if getattr(args, flag) not in (None, False):
                raise InputError(f"--{flag.replace('_', '-')} applies to --mode wormhole only")
        return None
    cfg = AccelConfig()
    if args.theta is not None:
        if not 0 < args.theta < 1:
            raise InputError(f"--theta must be between 0 and 1, got {args.theta}")
        cfg.theta = args.theta
    if args.samples is not None:
        if args.samples < 2:
            raise InputError(f"--samples must be >= 2, got {args.samples}")
        cfg.samples = args.samples
    if args.sample is not None:
        try:
            cfg.sample_ps = parse_time_ps(args.sample)
        except ValueError as e:
            raise InputError(f"--sample: {e}") from None
        if cfg.sample_ps <= 0:
            raise InputError(f"--sample must be positive, got {args.sample}")
    cfg.skip = not args.no_skip
    cfg.memo = not args.no_memo
    cfg.follow = args.follow
    cfg.successors = not args.no_successors
    if args.nvlink is not None:
        cfg.nvlink = args.nvlink
    if args.memo_cache and not cfg.memo:
        raise InputError("--memo-cache needs memoization (drop --no-memo)")
    return cfg


def _run_mpi(comm, args) -> int:
    """Run under MPI (one LP per rank; rank 0 prints and writes); returns the exit status of every rank.

    A mistake in the inputs, on any rank, is agreed on before the run's first
    collective: rank 0 prints one line and every rank exits 2. A failure
    mid-run ends every rank with that rank's message (MPI_Abort). A signal
    stops every rank at the same window boundary (:mod:`pwormhole.sync.interrupt`):
    rank 0 writes the outputs so far and every rank exits 143 (SIGTERM) or 130 (SIGINT).
    """
    from ..run import simulate
    from ..sync.mpi import abort

    interrupt.arm(lambda signum: _give_up(comm, signum), comm.rank)
    err = None
    try:
        scn, out, until_ps, owner, accel = _run_setup(args, comm)
    except InputError as e:
        err = (2, str(e))
    except Exception as e:  # noqa: BLE001 - agreed below: a rank that left alone would hang the others
        err = (1, f"{type(e).__name__}: {e}")
    failed = [(r, e) for r, e in enumerate(comm.allgather(err)) if e is not None]
    if failed:
        discard_out_dir(getattr(args, "made_out", None))
        if comm.rank == 0:
            r, (_, msg) = failed[0]
            everywhere = len(failed) == comm.size and all(e == failed[0][1] for _, e in failed)
            print(f"pwormhole: error: {msg if everywhere else f'rank {r}: {msg}'}", file=sys.stderr)
        return max(code for _, (code, _) in failed)
    try:
        if os.environ.get("PWORMHOLE_FAIL_RANK") == str(comm.rank):  # fault-injection hook for the tests
            raise RuntimeError("injected failure (PWORMHOLE_FAIL_RANK)")
        simulate(scn, out, until_ps=until_ps, seed=args.seed, owner=owner, comm=comm,
                 progress=None if not args.no_progress else False, plot=args.plot, accel=accel,
                 memo_cache=args.memo_cache, report=_wants_report(args))
    except AgreedInputError as e:  # found before the run, known to every rank
        discard_out_dir(getattr(args, "made_out", None))
        if comm.rank == 0:
            print(f"pwormhole: error: {e}", file=sys.stderr)
        return 2
    except (Terminated, KeyboardInterrupt) as e:  # raised on every rank at the same boundary
        code = 143 if isinstance(e, Terminated) else 130
        if comm.rank == 0:
            print(f"pwormhole: {_SIGNAL_WORDS[code]}; outputs so far are written in {out}/", file=sys.stderr)
        return code
    except StuckError as e:  # every rank, after rank 0 wrote the outputs
        if comm.rank == 0:
            print(f"pwormhole: stuck: {e}", file=sys.stderr)
        return 3
    except Exception as e:  # noqa: BLE001 - any failure must stop all ranks, not hang them
        msg = str(e) if isinstance(e, (InputError, OutputError)) else f"{type(e).__name__}: {e}"
        if isinstance(e, InputError):
            discard_out_dir(getattr(args, "made_out", None))
        print(f"pwormhole: error: rank {comm.rank}: {msg}", file=sys.stderr, flush=True)
        abort(comm, 2 if isinstance(e, InputError) else 4 if isinstance(e, OutputError) else 1)
    if comm.rank == 0:
        print(f"outputs in {out}/ ({comm.size} ranks)")
    signum = interrupt.pending()
    if signum:  # after the last boundary: the run had ended, its outputs are complete
        print(f"pwormhole: {_SIGNAL_WORDS[128 + signum]} after the run ended; the outputs are complete",
              file=sys.stderr)
        return 128 + signum
    return 0


_SIGNAL_WORDS = {130: "interrupted (SIGINT)", 143: "terminated (SIGTERM)"}


def _give_up(comm, signum: int) -> None:
    """The stop watchdog's action (its own thread): the ranks did not stop together in time; never returns."""
    from ..sync.mpi import abort

    grace = interrupt.GRACE_RANK0_S if comm.rank == 0 else interrupt.GRACE_PEER_S
    why = f"the ranks did not stop together within {grace:g} s"
    print(f"pwormhole: {_SIGNAL_WORDS[128 + signum]}: {why}; ending every rank (outputs so far as *.part)",
          file=sys.stderr, flush=True)
    if comm.rank == 0:
        interrupt.write_partial(signum, why)
    abort(comm, 128 + signum)


def _compare(args) -> int:
    from .compare import compare

    if args.mode is not None:
        raise InputError("compare runs both modes; drop --mode")
    _prepare_out(args)
    _check_memo_cache(args)
    scn = _load_scenario(args)
    for w in scn.warnings:
        print(f"pwormhole: warning: {w}", file=sys.stderr)
    args.mode = "wormhole"
    accel = _accel_config(args, None)
    until_ps = _until_ps(args)
    out = args.out or os.path.join("pwormhole-out", scn.name + "-compare")
    compare(lambda: _load_scenario(args), out, accel, until_ps=until_ps, seed=args.seed, n_lps=args.lps,
            memo_cache=args.memo_cache, first=scn, report=args.report)
    if args.report:
        from ..report.page import write_report
        write_report(out)
    print(f"outputs in {out}/" + (f" (open {os.path.join(out, 'report.html')} in a browser)" if args.report else ""))
    return 0


def _report(args) -> int:
    from ..report.page import write_report

    path = write_report(args.out_dir)
    print(f"report written: {path}")
    return 0


def _partition(args) -> int:
    from ..partition.plan import make_plan, make_plan_from_record
    from ..partition.record import load_of_run, predict
    from ..scenario import default_scenario, from_files, from_hpcc_config
    from ..topology.hpcc import read_hpcc_topology

    if args.from_run:
        if args.hpcc_config or args.topology or args.flows:
            raise InputError("--from-run takes the topology and the work from the run: no --hpcc-config, "
                             "--topology or --flows")
        rec = load_of_run(args.from_run)
        plan = make_plan_from_record(rec, args.parts)
        unit_owner = {int(u): r for u, r in zip(rec.unit, plan.owner)}
        pred = predict(rec, [unit_owner.get(u, 0) for u in range(rec.n_units)], args.parts)
        print(plan.describe().replace("weight", "recorded us"))
        print(f"predicted: wall {pred.wall_s:.2f} s (busiest rank per window {pred.compute_s:.2f} s, boundaries "
              f"{pred.boundary_s:.2f} s), imbalance {pred.imbalance * 100:.1f}% of the recorded work")
        if args.save:
            plan.to_json(args.save)
            print(f"plan saved to {args.save}")
        return 0
    if args.hpcc_config:
        scn = from_hpcc_config(args.hpcc_config)
        topo, flows = scn.topology, scn.flows
    elif args.topology:
        topo = read_hpcc_topology(args.topology)
        flows = from_files(args.topology, args.flows).flows if args.flows else []
    else:
        scn = default_scenario()
        topo, flows = scn.topology, scn.flows
    plan = make_plan(topo, args.parts, flows)
    if plan.warning():
        print(f"pwormhole: warning: {plan.warning()}", file=sys.stderr)
    print(plan.describe())
    if args.save:
        plan.to_json(args.save)
        print(f"plan saved to {args.save}")
    return 0


def add_run_arguments(r) -> None:
    """The scenario and mode arguments shared by ``run`` and ``compare``."""
    r.add_argument("--hpcc-config", metavar="FILE", help="HPCC ns-3 config.txt naming TOPOLOGY_FILE and FLOW_FILE")
    r.add_argument("--topology", metavar="FILE|SPEC",
                   help="topology file (HPCC or SimAI format) or a builder: rail-optimized:gpus=16, fat-tree:k=4, "
                        "leaf-spine:hosts=16,leaves=2,spines=2 (options: nic=, rate=, oversub=, delay=, ...)")
    r.add_argument("--flows", metavar="FILE", help="flow file: HPCC flow list or htsim connection matrix (.cm)")
    r.add_argument("--format", choices=("hpcc", "simai", "htsim", "chakra"),
                   help="force the format of the input files (default: detected from their content)")
    r.add_argument("--config", metavar="FILE", help="HPCC config file for model parameters")
    r.add_argument("--scenario", choices=("gpt-7b-64gpu", "gpt-350m-16gpu", "fat-tree-mix"), default="gpt-7b-64gpu",
                   help="embedded scenario when no input is given: one iteration of GPT-7B on a 64-GPU "
                        "rail-optimized fabric with the distributed optimizer (default), of 4 GPT-3 Medium layers "
                        "on 16 GPUs, or a fat-tree flow mix")
    t = r.add_argument_group("training workloads")
    t.add_argument("--workload", metavar="FILE|DIR",
                   help="SimAI/AICB workload file, or a Chakra trace (folder or NAME prefix of NAME.<rank>.et files)")
    t.add_argument("--model", metavar="NAME",
                   help="built-in model: gpt-350m, gpt-7b, gpt-13b, gpt-22b, gpt-175b, moe-8x7b")
    t.add_argument("--gpus", type=int, help="GPU count (default: the workload's or the topology's)")
    for flag, what in (("tp", "tensor"), ("dp", "data"), ("pp", "pipeline"), ("ep", "expert")):
        t.add_argument(f"--{flag}", type=int, help=f"{what}-parallel size (--model only)")
    t.add_argument("--ga", type=int, help="micro-batches per iteration (--model only)")
    t.add_argument("--dist-opt", action="store_true",
                   help="Megatron's distributed optimizer: one gradient reduce-scatter and one parameter "
                        "all-gather over DP per iteration instead of per-layer all-reduces (--model only)")
    t.add_argument("--layers", type=int, help="keep only the first N layers (scaled-down runs)")
    t.add_argument("--iterations", type=int, help="training iterations to simulate (default 1)")
    t.add_argument("--cc", choices=tuple(CC_BY_NAME),
                   help="congestion control when no --config is given (default: dcqcn for training workloads, "
                        "hpcc for flow files, as HPCC's own default)")
    t.add_argument("--nvlink-cc", choices=NVLINK_CC_CHOICES, default=NVLINK_CC_NONE,
                   help="congestion control on NVLink (links to NVSwitches): none (default; line rate, "
                        "link-level backpressure only, as the hardware) or nic (the NIC's CC also on NVLink, "
                        "as SimAI's ns-3)")
    t.add_argument("--plot", action="store_true", help="also write timeline.png, a per-GPU Gantt chart")
    r.add_argument("--out", metavar="DIR", help="output folder (default pwormhole-out/<scenario>)")
    r.add_argument("--until", metavar="TIME",
                   help="stop time, e.g. 10ms or 2.5 (seconds); default: the config's SIMULATOR_STOP_TIME (4 s)")
    r.add_argument("--seed", type=int, default=1, help="seed of the per-node random streams (default 1)")
    r.add_argument("--link-down", metavar="TIME:A-B", action="append",
                   help="the link between nodes A and B fails TIME after the traffic starts (its first flow; 0 for "
                        "a training workload), e.g. 50us:3-7; repeat for more failures (with the config's LINK_DOWN)")
    r.add_argument("--mode", choices=("wormhole", "packet"),
                   help="wormhole (default: fast-forward steady states, memoize transients) or packet (the "
                        "reference)")
    w = r.add_argument_group("Wormhole acceleration")
    w.add_argument("--no-skip", action="store_true", help="do not fast-forward steady groups")
    w.add_argument("--no-memo", action="store_true", help="do not memoize transients")
    w.add_argument("--memo-cache", metavar="FILE", help="load the memo cache from FILE and save it back")
    w.add_argument("--no-successors", action="store_true",
                   help="under HPCC, do not let a ring's next step take the finished step's place in its group's "
                        "last steady state (it is then looked up and detected like any new flow)")
    w.add_argument("--follow", action="store_true",
                   help="under HPCC, a group of new flows that misses the memo cache where an identical one "
                        "missed at the same boundary follows it (experimental: identical rails lose their "
                        "lockstep; see bench/RESULTS.md)")
    w.add_argument("--theta", type=float,
                   help="steadiness threshold on (max-min)/mean of the rates, on the goodput span's halves and "
                        "on the drift of the bytes in flight (default 0.02 under DCQCN, 0.005 under HPCC)")
    w.add_argument("--samples", "--window", type=int, dest="samples",
                   help="samples a flow must be steady over (default 4 under DCQCN, 8 under HPCC; "
                        "--window is its old name)")
    w.add_argument("--sample", metavar="TIME", help="sampling period (default: the synchronization window)")
    w.add_argument("--nvlink", choices=NVLINK_CHOICES,
                   help="NVLink flows (inside each server's NVSwitches): auto (default: by max-min rates where "
                        "NVLink runs no end-to-end CC and they hold, else packets), fluid (rates; refused where "
                        "they do not hold) or packet (check the rates against packets)")
    w.add_argument("--fluid-nvlink", dest="nvlink", action="store_const", const="fluid",
                   help="the old name of --nvlink fluid")
    m = r.add_argument_group("monitors")
    m.add_argument("--monitor", action="store_true",
                   help="write qlen.txt (queue-length histograms of the switch ports, as HPCC ns-3's QLEN_MON_FILE) "
                        "and link_util.csv (bytes per link per interval) over the whole run; a config's "
                        "QLEN_MON_FILE turns them on over its QLEN_MON_START..QLEN_MON_END")
    m.add_argument("--monitor-interval", metavar="TIME",
                   help="queue sampling interval (default 100ns, ns-3's qlen_mon_interval)")
    m.add_argument("--link-interval", metavar="TIME",
                   help="link_util.csv interval, a multiple of the sampling interval (default 10us)")
    m.add_argument("--monitor-limit", metavar="SIZE",
                   help="refuse a run whose link_util.csv could grow past SIZE over its expected length (default "
                        "1GB; sizes as 500MB, 4GB)")
    r.add_argument("--no-progress", action="store_true", help="never show the progress bar")
    r.add_argument("--report", action="store_true",
                   help="also write report.html, a self-contained page of the results (always for the default "
                        "scenario)")
    r.add_argument("--lps", type=int, default=1, help="in-process logical processes (same answer for any count)")
    r.add_argument("--plan", metavar="FILE", help="partition plan JSON from 'pwormhole partition --save'")


class _Parser(argparse.ArgumentParser):
    """argparse with its errors as one line and exit 2, like every other input mistake (its
    subcommands' parsers are of this class too)."""

    def error(self, message):
        self.exit(2, f"pwormhole: error: {message} (see '{self.prog} --help')\n")


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="pwormhole", description="Packet-level RDMA network simulation of training traffic.")
    sub = p.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run", help="simulate a scenario (default: one GPT-7B iteration on 64 GPUs)",
                       description="Simulate a scenario: an HPCC flow list, a training workload (SimAI/AICB file "
                                   "or built-in model) on a topology, or an embedded scenario.")
    add_run_arguments(r)
    r.add_argument("--record-windows", action="store_true",
                   help="also write windows.npz: events and seconds per window and per indivisible unit (one "
                        "in-process LP each), for 'partition --from-run' and 'scale --predict'")
    r.set_defaults(func=_run)
    c = sub.add_parser("compare", help="run packet and Wormhole modes on one scenario and report the error and speedup",
                       description="Run the scenario (same arguments as run) in packet mode and in Wormhole mode and "
                                   "write compare.json, a table and a CDF plot of the per-flow FCT error.")
    add_run_arguments(c)
    c.set_defaults(func=_compare)
    rp = sub.add_parser("report", help="write report.html of an output folder of run, compare or scale",
                        description="Write OUT_DIR/report.html: one self-contained page (inline SVG figures, no "
                                    "network fetches) of the run, comparison or scaling study in OUT_DIR.")
    rp.add_argument("out_dir", metavar="OUT_DIR", help="output folder of pwormhole run, compare or scale")
    rp.set_defaults(func=_report)
    pa = sub.add_parser("partition", help="split a topology into LPs with METIS and print the plan")
    pa.add_argument("--parts", type=int, required=True, help="number of LPs (ranks)")
    pa.add_argument("--hpcc-config", metavar="FILE", help="HPCC config naming the topology and flows")
    pa.add_argument("--topology", metavar="FILE", help="HPCC topology file")
    pa.add_argument("--flows", metavar="FILE", help="HPCC flow file (weights come from it)")
    pa.add_argument("--save", metavar="FILE", help="write the plan as JSON (for run --plan)")
    pa.add_argument("--from-run", metavar="OUT_DIR",
                    help="weights from a run's windows.npz ('run --record-windows'): its recorded work per unit "
                         "and window, balanced window by window; servers stay whole")
    pa.set_defaults(func=_partition)
    from ..workload import gen_flows
    gen_flows.add_parser(sub)
    from .scale import add_parser as add_scale_parser
    add_scale_parser(sub)
    return p


def main(argv: list[str] | None = None) -> int:
    """Exit status: 0 done, 2 input error, 3 no progress (stuck), 4 an output file
    could not be written (disk full; the others are written, unfinished ones left
    as ``NAME.part``), 130 SIGINT, 143 SIGTERM."""
    import signal

    from ..sync.mpi import launched_under_mpi

    parser = build_parser()
    args = parser.parse_args(argv)
    args.argv = list(sys.argv[1:] if argv is None else argv)
    try:
        if args.func is _run and launched_under_mpi():  # signals are recorded: every rank stops together
            interrupt.record_signals()
        else:
            signal.signal(signal.SIGTERM, interrupt.raise_or_defer)
            if signal.getsignal(signal.SIGINT) is signal.default_int_handler:  # (not when started with it ignored)
                signal.signal(signal.SIGINT, interrupt.raise_or_defer)
    except ValueError:  # not the main thread (embedded use)
        pass
    try:
        return args.func(args)
    except InputError as e:
        discard_out_dir(getattr(args, "made_out", None))
        print(f"pwormhole: error: {e}", file=sys.stderr)
        return 2
    except StuckError as e:
        print(f"pwormhole: stuck: {e}", file=sys.stderr)
        return 3
    except OutputError as e:
        print(f"pwormhole: error: {e}", file=sys.stderr)
        return 4
    except KeyboardInterrupt:
        print(f"pwormhole: {_SIGNAL_WORDS[130]}; outputs so far are written", file=sys.stderr)
        return 130
    except Terminated:
        print(f"pwormhole: {_SIGNAL_WORDS[143]}; outputs so far are written", file=sys.stderr)
        return 143


if __name__ == "__main__":
    sys.exit(main())
