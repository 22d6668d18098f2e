"""A Scenario = topology + flows + model configuration, from files or embedded.

Loaders:
* :func:`from_hpcc_config`: an HPCC ns-3 ``config.txt`` naming its topology and flow files;
* :func:`from_files`: a topology file and a flow file, optionally a config;
* :func:`default_scenario`: the embedded default (a k=4 fat-tree, 100 Gbps,
  1 us links, with a seeded mix of incast, permutation and all-to-some flows
  under DCQCN), which runs in well under a minute.
"""

from __future__ import annotations

import os
import random
from dataclasses import dataclass, field, replace

from .config import CC_DCQCN, ModelConfig
from .errors import InputError
from .hpcc_config import check_k_maps, read_hpcc_config
from .topology.builders import fat_tree
from .topology.hpcc import read_hpcc_topology
from .topology.model import Topology
from .units import PS_PER_US
from .workload.dag import Dag
from .workload.flows import Flow
from .workload.hpcc_flows import FIRST_SPORT, read_hpcc_flows, read_hpcc_trace


@dataclass
class Scenario:
    """Everything one run needs. ``warnings`` are shown once before the run."""

    name: str
    topology: Topology
    flows: list[Flow]
    config: ModelConfig
    warnings: list[str] = field(default_factory=list)
    dag: Dag | None = None  # a workload DAG whose flows are ``flows`` (training jobs, triggers)


def from_dag(name: str, topology: Topology, dag: Dag, config: ModelConfig, warnings=None) -> Scenario:
    """A scenario running a workload DAG (its flows start when their ops do)."""
    return Scenario(name, topology, dag.flows, config, list(warnings or []), dag)


def from_hpcc_config(path: str) -> Scenario:
    """Load the topology and flow files that an HPCC ``config.txt`` names."""
    cfg, warnings = read_hpcc_config(path)
    if not cfg.topology_file or not cfg.flow_file:
        raise InputError("config names no TOPOLOGY_FILE or FLOW_FILE", path)
    topo = read_hpcc_topology(cfg.topology_file)
    flows = read_hpcc_flows(cfg.flow_file, topo)
    if cfg.trace_file:
        read_hpcc_trace(cfg.trace_file, topo.n_nodes)
    check_k_maps(cfg, topo)
    name = os.path.basename(os.path.dirname(os.path.abspath(path))) or "hpcc"
    return Scenario(name, topo, flows, cfg, warnings)


def from_files(topology_path: str, flows_path: str, config_path: str | None = None) -> Scenario:
    """Load a topology file and a flow file (HPCC formats), with an optional config."""
    if config_path:
        cfg, warnings = read_hpcc_config(config_path)
    else:
        cfg, warnings = ModelConfig(), []
    topo = read_hpcc_topology(topology_path)
    flows = read_hpcc_flows(flows_path, topo)
    check_k_maps(cfg, topo)
    name = os.path.splitext(os.path.basename(flows_path))[0]
    return Scenario(name, topo, flows, cfg, warnings)


def number_sports(flows: list[Flow]) -> list[Flow]:
    """Give each source host's flows source ports 10000, 10001, ... in list order (as ``third.cc``)."""
    nxt: dict[int, int] = {}
    out = []
    for f in flows:
        sp = nxt.get(f.src, FIRST_SPORT)
        nxt[f.src] = sp + 1
        out.append(replace(f, sport=sp))
    return out


def default_scenario(seed: int = 7) -> Scenario:
    """The embedded default scenario (see module docstring)."""
    topo = fat_tree(4)
    hosts = topo.hosts
    rng = random.Random(seed)
    flows = []
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
    flows = [replace(f, flow_id=i) for i, f in enumerate(flows)]
    cfg = ModelConfig(cc_mode=CC_DCQCN)
    cfg.simulator_stop_ps = 100 * 10**9  # 100 ms
    return Scenario("default", topo, number_sports(flows), cfg)
