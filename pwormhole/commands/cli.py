"""Command line: ``pwormhole run | compare | report | partition | gen-flows | scale``.

User mistakes (``InputError``) print one line ``pwormhole: error: ...`` and
exit with status 2, never a traceback; so do output files that cannot be
written (``OutputError``, status 4). The options of ``run`` and ``compare`` become a
:class:`~pwormhole.options.RunOptions`. Each command imports what it runs inside its own
function: start-up time (``--help`` and an option mistake answer without loading the model,
numpy and networkx, about 0.1 s of CPU; the parsers of ``gen-flows`` and ``scale``, whose modules
load numpy, are built only for them).
"""

from __future__ import annotations

import argparse
import atexit
import dataclasses
import gc
import os
import sys

from .. import __version__
from ..accel.config import NVLINK_CHOICES
from ..config import CC_BY_NAME, EMBEDDED_SCENARIOS, INPUT_FORMATS, NVLINK_CC_CHOICES, NVLINK_CC_NONE, RUN_MODES
from ..errors import AgreedInputError, InputError, OutputError, StuckError, Terminated
from ..outfiles import discard_out_dir
from ..sync import interrupt
from ..sync.launcher import launched_under_mpi
from ..units import parse_time_ps


def _options(args):
    """The :class:`~pwormhole.options.RunOptions` of ``run``/``compare``'s parsed ``args``."""
    from ..options import RunOptions

    names = {f.name for f in dataclasses.fields(RunOptions)} - {"argv", "link_down"}
    given = [w.split("=", 1)[0] for w in args.argv]
    inputs = ("--hpcc-config", "--topology", "--flows", "--workload", "--model")
    if "--scenario" in given and any(flag in given for flag in inputs):
        raise InputError("--scenario runs an embedded scenario, not the input files given; give one or the other")
    return RunOptions(**{n: getattr(args, n) for n in names if hasattr(args, n)},
                      link_down=tuple(args.link_down or ()), argv=list(args.argv))


def _simulate(prep, comm=None) -> None:
    """Simulate a prepared run (:func:`pwormhole.options.prepare_run`); a refusal found while setting it up
    removes the folder made for it."""
    from ..simulate import simulate

    try:
        simulate(prep.scenario, prep.out, prep.settings, comm)
    except InputError:
        discard_out_dir(prep.made_out)
        raise


def _dry_run(prep, command: str) -> int:
    """``--dry-run``: print the scenario's layout, flows and packet-event estimate; nothing is simulated
    and the folder made for the outputs is removed again."""
    from ..report.dryrun import dry_run_text

    discard_out_dir(prep.made_out)
    print(dry_run_text(prep.scenario, command))
    return 0


def _run(args) -> int:
    from ..options import prepare_run
    from ..sync.mpi import world

    opts = _options(args)
    comm = world()
    if args.dry_run:
        return _dry_run(prepare_run(opts), "run") if comm is None or comm.rank == 0 else 0
    if comm is not None:
        return _run_mpi(comm, opts)
    interrupt.stop_recording(interrupt.raise_or_defer)  # one process (mpiexec -n 1): signals raise again
    prep = prepare_run(opts)
    _simulate(prep)
    out = prep.out
    report = prep.settings.report
    print(f"outputs in {out}/" + (f" (open {os.path.join(out, 'report.html')} in a browser)" if report else ""))
    return 0


def _run_mpi(comm, opts) -> int:
    """Run under MPI (one LP per rank; rank 0 prints and writes); returns the exit status of every rank.

    A mistake in the inputs, on any rank, is agreed on before the run's first
    collective: rank 0 prints one line and every rank exits 2. A failure
    mid-run ends every rank with that rank's message (MPI_Abort). A signal
    stops every rank at the same window boundary (:mod:`pwormhole.sync.interrupt`):
    rank 0 writes the outputs so far and every rank exits 143 (SIGTERM) or 130 (SIGINT).
    """
    from ..options import prepare_run
    from ..sync.mpi import abort

    interrupt.arm(lambda signum: _give_up(comm, signum), comm.rank)
    err = None
    prep = None
    made: list = [None]  # the folder made for the outputs, removed below if a rank refuses the run
    try:
        prep = prepare_run(opts, comm, made)
    except InputError as e:
        err = (2, str(e))
    except Exception as e:  # noqa: BLE001 - agreed below: a rank that left alone would hang the others
        err = (1, f"{type(e).__name__}: {e}")
    failed = [(r, e) for r, e in enumerate(comm.allgather(err)) if e is not None]
    if failed:
        discard_out_dir(made[0])
        if comm.rank == 0:
            r, (_, msg) = failed[0]
            everywhere = len(failed) == comm.size and all(e == failed[0][1] for _, e in failed)
            print(f"pwormhole: error: {msg if everywhere else f'rank {r}: {msg}'}", file=sys.stderr)
        return max(code for _, (code, _) in failed)
    assert prep is not None
    out = prep.out
    try:
        if os.environ.get("PWORMHOLE_FAIL_RANK") == str(comm.rank):  # fault-injection hook for the tests
            raise RuntimeError("injected failure (PWORMHOLE_FAIL_RANK)")
        _simulate(prep, comm)
    except AgreedInputError as e:  # found before the run, known to every rank
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
    from ..options import prepare_compare
    from ..report.page import write_report
    from .compare import compare

    opts = _options(args)
    try:
        jitter_ps = parse_time_ps(args.spread_jitter)
    except ValueError as e:
        raise InputError(f"--spread-jitter: {e}") from None
    if args.spread < 0:
        raise InputError(f"--spread must be >= 0, got {args.spread}")
    prep, rebuild = prepare_compare(opts)
    if args.dry_run:
        return _dry_run(prep, "compare")
    out = prep.out
    try:
        compare(rebuild, out, prep.accel, until_ps=prep.settings.until_ps, seed=opts.seed, n_lps=opts.lps,
                memo_cache=opts.memo_cache, first=prep.scenario, report=opts.report, spread=args.spread,
                spread_jitter_ps=jitter_ps, progress=False if opts.no_progress else None)
    except InputError:
        discard_out_dir(prep.made_out)
        raise
    if opts.report:
        write_report(out, prep.scenario.topology)
    print(f"outputs in {out}/" + (f" (open {os.path.join(out, 'report.html')} in a browser)" if opts.report else ""))
    return 0


def _report(args) -> int:
    from ..report.page import write_report

    path = write_report(args.out_dir)
    print(f"report written: {path}")
    return 0


def _partition(args) -> int:
    from ..partition.plan import make_plan, make_plan_from_record
    from ..partition.record import load_of_run, predict
    from ..scenario import default_scenario, from_files, from_hpcc_config, topology_from_arg

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
        if args.topology or args.flows:
            raise InputError("give either --hpcc-config or --topology/--flows, not both")
        scn = from_hpcc_config(args.hpcc_config)
        topo, flows = scn.topology, scn.flows
    elif args.topology:  # a file of any format, or a builder, as 'run' reads it
        topo = topology_from_arg(args.topology)
        flows = from_files(args.topology, args.flows, topology=topo).flows if args.flows else []
    elif args.flows:
        raise InputError("--flows needs --topology")
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
                   help="topology file (HPCC or SimAI format) or a builder: rail-optimized:gpus=16, "
                        "spectrum-x:gpus=64, alibaba-hpn:gpus=64[,planes=2], fat-tree:k=4, "
                        "leaf-spine:hosts=16,leaves=2,spines=2 (options: nic=, rate=, oversub=, delay=, ...)")
    r.add_argument("--flows", metavar="FILE", help="flow file: HPCC flow list or htsim connection matrix (.cm)")
    r.add_argument("--format", choices=INPUT_FORMATS,
                   help="force the format of the input files (default: detected from their content)")
    r.add_argument("--config", metavar="FILE", help="HPCC config file for model parameters")
    r.add_argument("--strict", action="store_true",
                   help="refuse a config key pwormhole does not know (default: warn and ignore it)")
    r.add_argument("--scenario", choices=EMBEDDED_SCENARIOS, default=EMBEDDED_SCENARIOS[0],
                   help="embedded scenario when no input is given: one iteration of GPT-7B on a 64-GPU "
                        "rail-optimized fabric with the distributed optimizer (default), of 4 GPT-3 Medium layers "
                        "on 16 GPUs, or a fat-tree flow mix")
    t = r.add_argument_group("training workloads")
    t.add_argument("--workload", metavar="FILE|DIR",
                   help="SimAI/AICB workload file, or a Chakra trace (folder or NAME prefix of NAME.<rank>.et files)")
    t.add_argument("--model", metavar="NAME",
                   help="built-in model: gpt-350m, gpt-7b, gpt-13b, gpt-22b, gpt-175b, moe-8x7b, moe-8x22b, "
                        "deepseek-moe-16b")
    t.add_argument("--gpus", type=int, help="GPU count (default: the workload's or the topology's)")
    for flag, what in (("tp", "tensor"), ("dp", "data"), ("pp", "pipeline"), ("ep", "expert")):
        t.add_argument(f"--{flag}", type=int, help=f"{what}-parallel size (--model only)")
    t.add_argument("--ga", type=int, help="micro-batches per iteration (--model only)")
    t.add_argument("--dist-opt", action="store_true",
                   help="Megatron's distributed optimizer: one gradient reduce-scatter and one parameter "
                        "all-gather over DP per iteration instead of per-layer all-reduces (--model only)")
    t.add_argument("--zero", type=int, metavar="3",
                   help="ZeRO stage 3 / FSDP full sharding: each layer's parameters all-gathered over DP before its "
                        "forward and again before its backward, its gradients reduce-scattered after (--model only)")
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
    r.add_argument("--mode", choices=RUN_MODES,
                   help="wormhole (default: fast-forward steady states, memoize transients) or packet (the "
                        "reference)")
    r.add_argument("--ns3-time", action="store_true",
                   help="serialize and pace in whole ns, rounded down, as HPCC's ns-3 does (a 1048-byte packet "
                        "goes 1%% fast at 100 Gb/s, 4.8%% at 400 Gb/s): for side-by-side runs with ns-3; --mode "
                        "packet only")
    w = r.add_argument_group("Wormhole acceleration")
    w.add_argument("--no-skip", action="store_true", help="do not fast-forward steady groups")
    w.add_argument("--no-memo", action="store_true", help="do not memoize transients")
    w.add_argument("--memo-cache", metavar="FILE", help="load the memo cache from FILE and save it back")
    w.add_argument("--no-successors", action="store_true",
                   help="under HPCC, do not let a ring's next step take the finished step's place in its group's "
                        "last steady state (it is then looked up and detected like any new flow)")
    w.add_argument("--no-parts", action="store_true",
                   help="do not fast-forward the steady parts of a group that is not steady as a whole (its flows "
                        "joined by loaded ports, while the rest of the group runs as packets)")
    w.add_argument("--no-line-rate", action="store_true",
                   help="under DCQCN, freeze a group whose flows all send at line rate only once their goodputs "
                        "are measured steady, not at once with their NICs' round-robin shares")
    w.add_argument("--no-ring-steps", action="store_true",
                   help="under HPCC, run every step of a lock-step ring (the distributed optimizer's reduce-scatter "
                        "and all-gather) as packets, instead of carrying its later steps from two agreeing packet "
                        "steps on each route")
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
    r.add_argument("--dry-run", action="store_true",
                   help="print the layout (topology, servers, parallel groups, micro-batches), the flows and their "
                        "bytes and the events a packet-level run would take, and exit without simulating")
    r.add_argument("--plan", metavar="FILE", help="partition plan JSON from 'pwormhole partition --save'")


def version_text() -> str:
    """``pwormhole VERSION (commit SHA[, modified])``: the package's version, and the commit of the
    checkout the package runs from (``unknown`` outside a git checkout)."""
    version = __version__  # pyproject.toml's too; importlib.metadata would cost 20 ms at every start
    here = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    import subprocess  # (loaded for --version only: 6 ms of every start otherwise)

    try:
        sha = subprocess.run(["git", "-C", here, "rev-parse", "--short=12", "HEAD"], capture_output=True, text=True,
                             timeout=5).stdout.strip()
        dirty = subprocess.run(["git", "-C", here, "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=5).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        sha, dirty = "", ""
    commit = (sha + (", modified" if dirty else "")) if sha else "unknown"
    return f"pwormhole {version} (commit {commit})"


class _Version(argparse.Action):
    """``--version``: :func:`version_text` (asked of git only when given)."""

    def __init__(self, option_strings, dest, help=None):
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, help=help)

    def __call__(self, parser, namespace, values, option_string=None):
        print(version_text())
        parser.exit(0)


class _Parser(argparse.ArgumentParser):
    """argparse with its errors as one line and exit 2, like every other input mistake (its
    subcommands' parsers are of this class too)."""

    def error(self, message):
        self.exit(2, f"pwormhole: error: {message} (see '{self.prog} --help')\n")


# the subcommands whose modules load numpy: their own parsers are built only when one is the command
LAZY_HELP = {"gen-flows": "write an HPCC flow file: Poisson arrivals at a target load, sizes from a CDF",
             "scale": "speedup-scaling study: run a scenario over rank counts and modes"}


def command_of(argv: list[str]) -> str | None:
    """The subcommand ``argv`` names: its first word that is not an option (the top level's take no value)."""
    return next((a for a in argv if not a.startswith("-")), None)


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser of ``pwormhole``; ``command``: the subcommand to parse, whose parser is built whole
    (the others in :data:`LAZY_HELP` only name themselves, for ``--help``)."""
    p = _Parser(prog="pwormhole", description="Packet-level RDMA network simulation of training traffic.")
    p.add_argument("-V", "--version", action=_Version, help="print the version and the commit, and exit")
    sub = p.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run", help="simulate a scenario (default: one GPT-7B iteration on 64 GPUs)",
                       description="Simulate a scenario: an HPCC flow list, a training workload (SimAI/AICB file "
                                   "or built-in model) on a topology, or an embedded scenario.")
    add_run_arguments(r)
    r.add_argument("--record-windows", action="store_true",
                   help="also write windows.npz: events and seconds per window and per indivisible unit (one "
                        "in-process LP each), for 'partition --from-run' and 'scale --predict'")
    r.add_argument("--trace", action="store_true",
                   help="also write trace.json, the timeline in Chrome's Trace Event Format (Perfetto, "
                        "chrome://tracing): per GPU its compute ops and collectives, per NIC its flows")
    r.add_argument("--trace-limit", metavar="SIZE",
                   help="refuse a run whose trace.json could grow past SIZE (default 256MB; sizes as 500MB, 2GB)")
    r.set_defaults(func=_run)
    c = sub.add_parser("compare", help="run packet and Wormhole modes on one scenario and report the error and speedup",
                       description="Run the scenario (same arguments as run) in packet mode and in Wormhole mode and "
                                   "write compare.json, a table and a CDF plot of the per-flow FCT error.")
    add_run_arguments(c)
    c.add_argument("--spread", type=int, default=0, metavar="K",
                   help="also run K packet runs under perturbations that should not matter (compute ops or flow "
                        "starts jittered, RATE_AI moved by 0.5%%, other seeds), in parallel processes, and judge "
                        "Wormhole's errors against the packet run's own spread (the fidelity rule)")
    c.add_argument("--spread-jitter", metavar="TIME", default="5ns",
                   help="the width of the compute (or flow start) jitter of --spread (default 5ns)")
    c.set_defaults(func=_compare)
    rp = sub.add_parser("report", help="write report.html of an output folder of run, compare or scale",
                        description="Write OUT_DIR/report.html: one self-contained page (inline SVG figures, no "
                                    "network fetches) of the run, comparison or scaling study in OUT_DIR.")
    rp.add_argument("out_dir", metavar="OUT_DIR", help="output folder of pwormhole run, compare or scale")
    rp.set_defaults(func=_report)
    pa = sub.add_parser("partition", help="split a topology into LPs with METIS and print the plan")
    pa.add_argument("--parts", type=int, required=True, help="number of LPs (ranks)")
    pa.add_argument("--hpcc-config", metavar="FILE", help="HPCC config naming the topology and flows")
    pa.add_argument("--topology", metavar="FILE|SPEC",
                    help="topology file (HPCC, SimAI or htsim) or a builder spec, as 'run' reads it")
    pa.add_argument("--flows", metavar="FILE", help="flow file, HPCC or htsim (weights come from it)")
    pa.add_argument("--save", metavar="FILE", help="write the plan as JSON (for run --plan)")
    pa.add_argument("--from-run", metavar="OUT_DIR",
                    help="weights from a run's windows.npz ('run --record-windows'): its recorded work per unit "
                         "and window, balanced window by window; servers stay whole")
    pa.set_defaults(func=_partition)
    if command == "gen-flows":
        from ..workload import gen_flows
        gen_flows.add_parser(sub)
    else:
        sub.add_parser("gen-flows", help=LAZY_HELP["gen-flows"])
    if command == "scale":
        from .scale import add_parser as add_scale_parser
        add_scale_parser(sub)
    else:
        sub.add_parser("scale", help=LAZY_HELP["scale"])
    return p


def main(argv: list[str] | None = None) -> int:
    """Exit status: 0 done, 2 input error, 3 no progress (stuck), 4 an output file
    could not be written (disk full; the others are written, unfinished ones left
    as ``NAME.part``), 130 SIGINT, 143 SIGTERM."""
    import signal

    words = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(command_of(words))
    args = parser.parse_args(words)
    args.argv = words
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
        print(f"pwormhole: error: {e}", file=sys.stderr)
        return 2
    except StuckError as e:
        print(f"pwormhole: stuck: {e}", file=sys.stderr)
        return 3
    except OutputError as e:
        print(f"pwormhole: error: {e}", file=sys.stderr)
        return 4
    except KeyboardInterrupt:
        print(f"pwormhole: {_SIGNAL_WORDS[130]}; outputs so far, if any, are written", file=sys.stderr)
        return 130
    except Terminated:
        print(f"pwormhole: {_SIGNAL_WORDS[143]}; outputs so far, if any, are written", file=sys.stderr)
        return 143


def entry() -> None:
    """The console script and ``python -m pwormhole``: :func:`main`, then the exit handlers, and the
    process ends without freeing its objects one by one (about 0.1 s of CPU after a default run).
    The interpreter exits as usual under MPI (MPI finalizes after the exit handlers; ending ranks at
    once after finalizing made MPICH kill one now and then) and while a thread other than a daemon
    still runs (it is waited for)."""
    import signal
    import threading

    # numpy's OpenBLAS starts a thread per core that spins a while after loading, about 0.1 s of CPU
    # on the default run; pwormhole's numpy is vector arithmetic, which runs on the calling thread
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    # one run, then the process ends: no collection needs to walk its DAG and network (pwormhole.gcpause);
    # compare and scale run several and collect between them
    if command_of(sys.argv[1:]) == "run":
        gc.disable()
    code = main()
    if "mpi4py" in sys.modules or any(t.is_alive() and not t.daemon for t in threading.enumerate()
                                      if t is not threading.main_thread()):
        # the interpreter's collection at exit then skips the objects a run leaves (~0.7 million, 0.3 s
        # of each rank's exit after GPT-22B on 256 GPUs at 2 ranks)
        gc.freeze()
        sys.exit(code)
    for sig in (signal.SIGTERM, signal.SIGINT):  # a signal now ends the process at once, as it would
        signal.signal(sig, signal.SIG_DFL)
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:  # (None: started with that stream closed)
                stream.flush()
        except (OSError, ValueError):  # a closed pipe or stream: what it took is all it gets
            pass
    os._exit(code)


if __name__ == "__main__":
    entry()
