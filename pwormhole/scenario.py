"""A Scenario = topology + flows + model configuration, from files or embedded.

Loaders:
* :func:`from_hpcc_config`: an HPCC ns-3 ``config.txt`` naming its topology and flow files;
* :func:`from_files`: a topology file and a flow file, optionally a config;
* :func:`training_scenario`: training iterations of a SimAI/AICB or built-in
  workload on a topology;
* :func:`default_scenario`: one iteration of GPT-7B on 64 GPUs (distributed optimizer);
* :func:`small_gpt_scenario`: one iteration of a small GPT on 16 GPUs;
* :func:`fat_tree_mix_scenario`: a k=4 fat-tree, 100 Gbps, 1 us links, with a
  seeded mix of incast, permutation and all-to-some flows under DCQCN.
"""

from __future__ import annotations

import os
import random
import typing
from dataclasses import dataclass, field
from difflib import get_close_matches

from .config import CC_BY_NAME, CC_DCQCN, EMBEDDED_SCENARIOS, ModelConfig
from .errors import InputError
from .inputs.formats import FLOWS_FORMATS, TOPOLOGY_FORMATS, load_flows, load_topology
from .inputs.hpcc_config import check_k_maps, read_hpcc_config
from .topology import builders
from .topology.builders import fat_tree
from .topology.hpcc import read_hpcc_topology
from .topology.model import Topology
from .units import PS_PER_US, parse_rate_bps, parse_time_ps
from .workload.dag import Dag
from .workload.flows import Flow, FlowColumns, HostPairs, flow_columns, host_pairs
from .workload.hpcc_flows import FIRST_SPORT, read_hpcc_flows, read_hpcc_trace
from .workload.models import build_model
from .workload.simai import TrainingSpec, tp_groups
from .workload.training import build_training_dag, schedule_notes


@dataclass
class Scenario:
    """Everything one run needs. ``warnings`` are shown once before the run."""

    name: str
    topology: Topology
    flows: list[Flow]
    config: ModelConfig
    warnings: list[str] = field(default_factory=list)
    dag: Dag | None = None  # a workload DAG whose flows are ``flows`` (training jobs, triggers)
    command: str | None = None  # the command line that asked for it (reports)
    spec: TrainingSpec | None = None  # the training workload of ``dag`` (its layers and parallel groups)
    _columns: FlowColumns | None = field(default=None, init=False, repr=False, compare=False)
    _pairs: HostPairs | None = field(default=None, init=False, repr=False, compare=False)
    _columns_of: list | None = field(default=None, init=False, repr=False, compare=False)  # (the list they are of)

    def flow_columns(self) -> FlowColumns:
        """:func:`~.workload.flows.flow_columns` of ``flows``, made at the first call and again for
        another list or one that has grown (a flow replaced in place is not seen: replace the list)."""
        if self._columns is None or self._columns_of is not self.flows or len(self._columns.src) != len(self.flows):
            self._columns = flow_columns(self.flows)
            self._columns_of = self.flows
            self._pairs = None
        return self._columns

    def input_files(self) -> list[str]:
        """The files the scenario was read from (topology, config, flow list, workload) that exist as
        files (a builder, a Chakra folder and an embedded scenario name none)."""
        paths = [self.topology.source, self.config.source, self.config.flow_file,
                 self.spec.source if self.spec is not None else None]
        return [p for p in dict.fromkeys(paths) if isinstance(p, str) and os.path.isfile(p)]

    def host_pairs(self) -> HostPairs:
        """:func:`~.workload.flows.host_pairs` of ``flows``, made at the first call (as :meth:`flow_columns`)."""
        cols = self.flow_columns()
        if self._pairs is None:
            self._pairs = host_pairs(cols, self.topology.n_nodes)
        return self._pairs


def from_dag(name: str, topology: Topology, dag: Dag, config: ModelConfig, warnings=None) -> Scenario:
    """A scenario running a workload DAG (its flows start when their ops do)."""
    return Scenario(name, topology, dag.flows, config, list(warnings or []), dag)


BUILDERS = ("rail-optimized", "spectrum-x", "alibaba-hpn", "fat-tree", "leaf-spine")
RAIL_KEYS = {"gpus", "gpus_per_server", "nic", "delay", "oversub", "nvlink", "nvswitches", "spines", "uplink",
             "servers_per_segment"}
BUILDER_KEYS = {"rail-optimized": RAIL_KEYS, "spectrum-x": RAIL_KEYS, "alibaba-hpn": RAIL_KEYS | {"planes"},
                "fat-tree": {"k", "rate", "delay"},
                "leaf-spine": {"hosts", "leaves", "spines", "rate", "oversub", "delay"}}
# The defaults of SimAI's templates (aliyun/SimAI, astra-sim-alibabacloud/inputs/topo/gen_Topo_Template.py,
# ``analysis_template``) that differ from rail-optimized's: 0.0005 ms links, and for Spectrum-X
# 400 Gbps NICs, 64 NICs per leaf (nics_per_aswitch) and 64 spines (psw_switch_num) at 400 Gbps;
# for AlibabaHPN dual ToRs of 200 Gbps NIC ports, 128 NICs per leaf and 120 spines at 400 Gbps.
RAIL_PRESETS: dict[str, dict[str, typing.Any]] = {
    "rail-optimized": {},
    "spectrum-x": {"nic_rate_bps": 400 * 10**9, "delay_ps": 500_000, "servers_per_segment": 64, "spines": 64,
                   "uplink_rate_bps": 400 * 10**9},
    "alibaba-hpn": {"nic_rate_bps": 200 * 10**9, "delay_ps": 500_000, "servers_per_segment": 128, "spines": 120,
                    "uplink_rate_bps": 400 * 10**9, "dual_tor": True},
}


def topology_from_arg(text: str, fmt: str | None = None) -> Topology:
    """A topology from ``--topology``: an existing file (HPCC, SimAI or htsim
    format, detected from its content) or a builder spec ``NAME:key=value,...``:

    * ``rail-optimized:gpus=16[,gpus_per_server=8,nic=200Gbps,nvlink=2880Gbps,nvswitches=1,spines=8,uplink=400Gbps,
      oversub=1,delay=1us,servers_per_segment=N]`` (``nvswitches``: per server; with several, NVLink traffic spreads
      over them by ECMP; ``servers_per_segment``: servers under one set of rail leaves, default all)
    * ``spectrum-x:gpus=N[,...]``: rail-optimized with SimAI's Spectrum-X defaults (400 Gbps NICs, 64 servers per
      segment, 64 spines at 400 Gbps, 500 ns links); the same keys
    * ``alibaba-hpn:gpus=N[,planes=1|2,...]``: rail-optimized with dual ToRs (two 200 Gbps ports per NIC, each to
      a leaf of its rail), 128 servers per segment, 120 spines at 400 Gbps, 500 ns links, as SimAI's AlibabaHPN
      template; ``planes=2``: dual plane (the first leaves reach the first half of the spines, the second leaves
      the second half)
    * ``fat-tree:k=4[,rate=100Gbps,delay=1us]``
    * ``leaf-spine:hosts=16,leaves=2,spines=2[,rate=100Gbps,oversub=1,delay=1us]``

    ``fmt`` forces a file format (``hpcc``, ``simai``, ``htsim``; other values are ignored).
    Raises InputError for an unknown builder or key, a bad value, or a file that cannot be read.
    """

    name, _, rest = text.partition(":")
    if name not in BUILDERS or os.path.exists(text):
        if not os.path.exists(text) and ("=" in rest or get_close_matches(name, BUILDERS, 1)):
            # a builder's name misspelt, not a file
            raise InputError(f"--topology {text}: no such file, and {name!r} is not a builder "
                             f"(known: {', '.join(BUILDERS)})")
        return load_topology(text, fmt if fmt in TOPOLOGY_FORMATS else None)
    kv: dict[str, str] = {}
    for item in filter(None, rest.split(",")):
        k, eq, v = item.partition("=")
        if not eq:
            raise InputError(f"--topology {text}: expected key=value, got {item!r}")
        if k.strip() in kv:
            raise InputError(f"--topology {text}: {k.strip()} is given twice")
        kv[k.strip()] = v.strip()

    def take(key, conv, default=None):
        if key not in kv:
            if default is None:
                odd = sorted(set(kv) - BUILDER_KEYS[name])
                unknown = f" (unknown: {', '.join(odd)})" if odd else ""
                raise InputError(f"--topology {text}: {name} needs {key}=...{unknown}")
            return default
        v = kv.pop(key)
        try:
            return conv(v)
        except ValueError as e:
            raise InputError(f"--topology {text}: bad {key}={v!r}: {e}") from None

    def count(v: str) -> int:  # a builder's count of things (GPUs, switches, ports)
        if not v.isdigit() or int(v) < 1:
            raise ValueError("not a whole number >= 1")
        return int(v)

    us = parse_time_ps("1us")
    if name in RAIL_PRESETS:
        gpus = take("gpus", count)
        gps = take("gpus_per_server", count, 8)
        if gpus < 1 or gps < 1 or gpus % gps:
            raise InputError(f"--topology {text}: gpus ({gpus}) must be a positive multiple of gpus_per_server ({gps})")
        kw: dict[str, typing.Any] = {"nic_rate_bps": 200 * 10**9, "delay_ps": us, **RAIL_PRESETS[name]}
        for key, arg, conv in (("nic", "nic_rate_bps", parse_rate_bps), ("delay", "delay_ps", parse_time_ps),
                               ("oversub", "oversubscription", float), ("nvlink", "nvlink_rate_bps", parse_rate_bps),
                               ("nvswitches", "nvswitches_per_server", count), ("spines", "spines", count),
                               ("uplink", "uplink_rate_bps", parse_rate_bps),
                               ("servers_per_segment", "servers_per_segment", count), ("planes", "planes", count)):
            if key in kv and key in BUILDER_KEYS[name]:
                if key == "oversub" and "uplink" not in kv:
                    kw.pop("uplink_rate_bps", None)  # an oversubscription sets the uplinks' rate
                kw[arg] = take(key, conv)
        planes = kw.get("planes", 1)
        if planes not in (1, 2) or (planes == 2 and kw.get("spines", 1) % 2):
            raise InputError(f"--topology {text}: planes must be 1 or 2, and 2 needs an even number of spines "
                             f"(got planes={planes}, spines={kw.get('spines')})")
        topo = builders.rail_optimized(gpus // gps, gps, **kw)
        if name != "rail-optimized":
            topo.name = f"{name}-{gpus}gpu"
    elif name == "fat-tree":
        rate = take("rate", parse_rate_bps, 100 * 10**9)
        topo = builders.fat_tree(take("k", count), rate, rate, take("delay", parse_time_ps, us))
    else:
        topo = builders.leaf_spine(take("hosts", count), take("leaves", count), take("spines", count),
                                   take("rate", parse_rate_bps, 100 * 10**9), take("oversub", float, 1.0),
                                   take("delay", parse_time_ps, us))
    if kv:
        raise InputError(f"--topology {text}: unknown key(s) {', '.join(sorted(kv))} for {name}")
    return topo


def training_scenario(spec, topology: Topology, config: ModelConfig | None = None, iterations: int = 1,
                      name: str | None = None) -> Scenario:
    """A scenario running ``iterations`` training iterations of ``spec`` (a
    :class:`~pwormhole.workload.simai.TrainingSpec`) on the GPUs of ``topology``.

    Raises InputError when the topology has fewer GPUs than the workload needs.
    """

    cfg = config or ModelConfig(cc_mode=CC_DCQCN)
    if cfg.source is None:
        cfg.fill_k_maps({ln.rate_bps for ln in topology.links})
    check_k_maps(cfg, topology)
    dag = build_training_dag(spec, topology.gpus, iterations)
    notes = schedule_notes(spec)
    span = tp_span_note(spec, topology)
    if span:
        notes.append(span)
    scn = from_dag(name or spec.name, topology, dag, cfg, spec.warnings + notes)
    scn.spec = spec
    return scn


def tp_span_note(spec, topology: Topology) -> str | None:
    """One line when a TP group of ``spec`` has GPUs in more than one server of ``topology`` (its
    collectives then cross the NIC fabric instead of NVLink); None otherwise."""
    servers = topology.servers()
    if servers is None or spec.tp < 2:
        return None
    gpus = topology.gpus
    for grp in tp_groups(spec):
        where = [servers[gpus[g]] for g in grp]
        if len(set(where)) > 1:
            size = sum(1 for s in servers.values() if s == where[0])
            return (f"TP groups of {spec.tp} GPUs span servers of {size} GPUs (the first: GPUs {grp[0]}-{grp[-1]} "
                    f"in {len(set(where))} servers): their collectives cross the NIC fabric between servers, not "
                    "only NVLink")
    return None


def from_hpcc_config(path: str, strict: bool = False) -> Scenario:
    """Load the topology and flow files that an HPCC ``config.txt`` names (``strict``: refuse
    unknown keys)."""
    cfg, warnings = read_hpcc_config(path, strict=strict)
    if not cfg.topology_file or not cfg.flow_file:
        raise InputError("config names no TOPOLOGY_FILE or FLOW_FILE", path)
    topo = read_hpcc_topology(cfg.topology_file)
    flows = read_hpcc_flows(cfg.flow_file, topo)
    if cfg.trace_file:
        read_hpcc_trace(cfg.trace_file, topo.n_nodes)
    check_k_maps(cfg, topo)
    return Scenario(hpcc_run_name(path, cfg.flow_file), topo, flows, cfg, warnings)


def hpcc_run_name(config_path: str, flow_path: str) -> str:
    """A run's name from its HPCC config: the config's own name (HPCC's ``run.py`` writes
    ``mix/config_<topo>_<trace>_<cc>.txt``), or, for a plain ``config.txt``, its folder and flow
    file (``mix-flow``)."""
    stem = os.path.splitext(os.path.basename(config_path))[0]
    if stem != "config":
        return stem
    folder = os.path.basename(os.path.dirname(os.path.abspath(config_path)))
    flows = os.path.splitext(os.path.basename(flow_path))[0]
    return f"{folder}-{flows}" if folder else flows


def from_files(topology_path: str, flows_path: str, config_path: str | None = None, fmt: str | None = None,
               topology: Topology | None = None, cc: str | None = None, strict: bool = False) -> Scenario:
    """Load a topology (HPCC, SimAI, htsim ``.topo`` or a builder spec) and a flow
    file (HPCC flow list or htsim connection matrix), with an optional HPCC
    config (or ``cc`` without one; the files it names are not read: these are the inputs);
    formats are detected from the content unless ``fmt`` forces one; ``strict`` refuses the config's
    unknown keys."""

    if config_path:
        cfg, warnings = read_hpcc_config(config_path, input_files=False, strict=strict)
    else:  # ``cc`` (a name of config.CC_NAMES); default HPCC, as HPCC's config.txt
        cfg, warnings = ModelConfig(cc_mode=CC_BY_NAME.get(cc or "", ModelConfig().cc_mode)), []
    topo = topology if topology is not None else topology_from_arg(topology_path, fmt)
    flows, dag = load_flows(flows_path, topo, fmt if fmt in FLOWS_FORMATS else None)
    cfg.flow_file = os.path.abspath(flows_path)
    if cfg.source is None:
        cfg.fill_k_maps({ln.rate_bps for ln in topo.links})
    check_k_maps(cfg, topo)
    name = os.path.splitext(os.path.basename(flows_path))[0]
    return Scenario(name, topo, flows, cfg, warnings, dag)


def number_sports(flows: list[Flow]) -> list[Flow]:
    """Give each source host's flows source ports 10000, 10001, ... in list order (as ``third.cc``)."""
    nxt: dict[int, int] = {}
    out = []
    for f in flows:
        sp = nxt.get(f.src, FIRST_SPORT)
        nxt[f.src] = sp + 1
        out.append(f._replace(sport=sp))
    return out


DEFAULT_SCENARIO = EMBEDDED_SCENARIOS[0]


def default_scenario() -> Scenario:
    """The default of ``pwormhole run``: one training iteration of GPT-7B (``gpt-7b``, 32 layers,
    TP 8 inside each server, PP 2, DP 4, Megatron's distributed optimizer) on a 64-GPU
    rail-optimized fabric (200 Gbps NICs, NVLink inside servers), under DCQCN: its DP
    reduce-scatter and all-gather are long steady flows that Wormhole fast-forwards."""
    spec = build_model("gpt-7b", 64, tp=8, pp=2, dist_opt=True)
    return training_scenario(spec, topology_from_arg("rail-optimized:gpus=64"), name=DEFAULT_SCENARIO)


def small_gpt_scenario() -> Scenario:
    """One training iteration of a small GPT (4 layers of GPT-3 Medium ``gpt-350m``, sequence
    1024, TP 8 inside each server, DP 2 across the two servers, a gradient all-reduce per
    layer) on a 16-GPU rail-optimized fabric, under DCQCN."""
    spec = build_model("gpt-350m", 16, tp=8, layers=4, seq_len=1024)
    return training_scenario(spec, topology_from_arg("rail-optimized:gpus=16"), name="gpt-350m-16gpu")


def fat_tree_mix_scenario(seed: int = 7) -> Scenario:
    """The embedded flow mix (see module docstring)."""
    topo = fat_tree(4)
    hosts = topo.hosts
    rng = random.Random(seed)
    flows: list[Flow] = []
    t0 = 10 * PS_PER_US

    def add(src, dst, size, start):
        flows.append(Flow(len(flows), src, dst, 3, 100, size, start))

    for src in hosts[1:9]:  # 8-to-1 incast into host 0
        add(src, hosts[0], 200_000, t0)
    perm = hosts[:]
    rng.shuffle(perm)
    for src, dst in zip(hosts, perm):  # a permutation of 1 MB flows (fabric traffic)
        if src != dst:
            add(src, dst, 1_000_000, t0 + rng.randrange(0, 20) * PS_PER_US)
    for _ in range(32):  # short flows between random pairs
        src, dst = rng.sample(hosts, 2)
        add(src, dst, rng.choice([4_000, 20_000, 64_000, 100_000]), t0 + rng.randrange(0, 200) * PS_PER_US)
    flows.sort(key=lambda f: (f.start_ps, f.flow_id))
    flows = [f._replace(flow_id=i) for i, f in enumerate(flows)]
    cfg = ModelConfig(cc_mode=CC_DCQCN)
    cfg.simulator_stop_ps = 100 * 10**9  # 100 ms
    return Scenario("fat-tree-mix", topo, number_sports(flows), cfg)


# the embedded scenarios of ``pwormhole run --scenario`` (when no input is given), by config.EMBEDDED_SCENARIOS
EMBEDDED = dict(zip(EMBEDDED_SCENARIOS, (default_scenario, small_gpt_scenario, fat_tree_mix_scenario)))
