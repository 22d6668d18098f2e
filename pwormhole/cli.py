"""Command line: ``pwormhole run | ...``.

User mistakes (``InputError``) print one line ``pwormhole: error: ...`` and
exit with status 2, never a traceback.
"""

from __future__ import annotations

import argparse
import os
import sys

from .errors import InputError
from .units import parse_time_ps


def _run(args) -> int:
    from .scenario import default_scenario, from_files, from_hpcc_config
    from .simulation import simulate

    if args.mode != "packet":
        raise InputError(f"--mode {args.mode!r} is not available yet (only 'packet')")
    if args.hpcc_config:
        if args.topology or args.flows:
            raise InputError("give either --hpcc-config or --topology/--flows, not both")
        scn = from_hpcc_config(args.hpcc_config)
    elif args.topology or args.flows:
        if not (args.topology and args.flows):
            raise InputError("--topology and --flows go together")
        scn = from_files(args.topology, args.flows, args.config)
    else:
        if args.config:
            raise InputError("--config needs --topology and --flows (or use --hpcc-config)")
        scn = default_scenario()
    for w in scn.warnings:
        print(f"pwormhole: warning: {w}", file=sys.stderr)
    until_ps = None
    if args.until:
        try:
            until_ps = parse_time_ps(args.until)
        except ValueError as e:
            raise InputError(f"--until: {e}") from None
    out = args.out or os.path.join("pwormhole-out", scn.name)
    simulate(scn, out, until_ps=until_ps, seed=args.seed, progress=None if not args.no_progress else False)
    print(f"outputs in {out}/")
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="pwormhole", description="Packet-level RDMA network simulation of training traffic.")
    sub = p.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run", help="simulate a scenario (default: the embedded fat-tree mix)")
    r.add_argument("--hpcc-config", metavar="FILE", help="HPCC ns-3 config.txt naming TOPOLOGY_FILE and FLOW_FILE")
    r.add_argument("--topology", metavar="FILE", help="HPCC topology file")
    r.add_argument("--flows", metavar="FILE", help="HPCC flow file")
    r.add_argument("--config", metavar="FILE", help="HPCC config file for model parameters (with --topology/--flows)")
    r.add_argument("--out", metavar="DIR", help="output folder (default pwormhole-out/<scenario>)")
    r.add_argument("--until", metavar="TIME", help="stop time, e.g. 10ms or 2.5 (seconds); default SIMULATOR_STOP_TIME")
    r.add_argument("--seed", type=int, default=1, help="seed of the per-node random streams (default 1)")
    r.add_argument("--mode", default="packet", help="simulation mode: packet (the reference)")
    r.add_argument("--no-progress", action="store_true", help="never show the progress bar")
    r.set_defaults(func=_run)
    return p


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except InputError as e:
        print(f"pwormhole: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("pwormhole: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
