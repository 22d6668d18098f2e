"""What ``run --dry-run`` and ``compare --dry-run`` print: the layout of a scenario (topology,
servers, parallel groups, micro-batches), its flows and bytes, and the events a packet-level run
of it would take, without simulating.

The estimate is 4 events per packet and hop (a data packet's and its ACK's transmission and
arrival at each link), ECMP paths averaged: the packet runs of the embedded scenarios (GPT-7B on
64 GPUs, gpt-350m on 16 GPUs, the fat-tree mix) take 4.00-4.02 per packet and hop; PFC frames and
CNPs add more (+19% on an 8-to-1 incast under PFC).
"""

from __future__ import annotations

import numpy as np

from ..topology.routing import adjacency, hop_distances, nic_switch, share_nvswitch
from ..workload import simai
from ..workload.training import micro_batch_layout
from .summary import approx

EVENTS_PER_PACKET_HOP = 4

_GROUPS = (("tp", "TP groups", simai.tp_groups), ("dp", "DP groups", simai.dp_groups),
           ("pp", "pipelines", simai.pp_groups), ("ep", "EP groups", simai.ep_groups),
           ("dp_ep", "DP_EP groups", simai.dp_ep_groups))


def packet_events_estimate(scn) -> int:
    """Events a packet-level run of ``scn``'s flows would take: :data:`EVENTS_PER_PACKET_HOP` per
    packet and hop of its path (every ECMP path of a host pair has its hop count)."""
    payload = scn.config.packet_payload_bytes
    topo = scn.topology
    if not scn.flows:
        return 0
    cols = scn.flow_columns()
    first, of_flow = scn.host_pairs()
    pair_packets = np.zeros(len(first), np.int64)
    np.add.at(pair_packets, of_flow, -(-cols.size_bytes // payload))
    adj = adjacency(topo)
    dist: dict = {}  # node -> hop counts toward it
    packet_hops = 0
    for src, dst, packets in zip(cols.src[first].tolist(), cols.dst[first].tolist(), pair_packets.tolist()):
        # a host is one hop past its NIC switch (hosts do not forward; NVSwitch peers are 2 hops apart):
        # one BFS per switch
        via = nic_switch(topo, adj, dst)
        if via is not None and share_nvswitch(topo, adj, src, dst):
            packet_hops += packets * 2
            continue
        to = dst if via is None else via
        to_dst = dist.get(to)
        if to_dst is None:
            to_dst = dist[to] = hop_distances(topo, adj, to)
        packet_hops += packets * (to_dst.get(src, -1) + 1 if via is not None else to_dst.get(src, 0))
    return EVENTS_PER_PACKET_HOP * packet_hops


def _members(gpus: list[int], limit: int = 8) -> str:
    """``0-7`` for a run of consecutive GPUs, else ``0, 8, 16, ...`` (at most ``limit`` shown)."""
    if len(gpus) > 2 and gpus == list(range(gpus[0], gpus[-1] + 1)):
        return f"{gpus[0]}-{gpus[-1]}"
    shown = ", ".join(map(str, gpus[:limit]))
    return shown + (f", ... ({len(gpus)})" if len(gpus) > limit else "")


def _size(n_bytes: int) -> str:
    return f"{n_bytes:,} bytes ({n_bytes / 1e9:,.3f} GB)"


def _layout_lines(spec, topo, servers: dict[int, int] | None) -> list[str]:
    lay = micro_batch_layout(spec)
    head = f"layout     {spec.all_gpus} GPUs: TP {spec.tp} x DP {spec.dp} x PP {spec.pp}"
    if spec.ep > 1:
        head += f", EP {spec.ep}"
    mbs = f"{len(lay.batches)} micro-batch" + ("es" if len(lay.batches) > 1 else "")
    if lay.found == "repeats":
        mbs += (f" of {len(lay.batches[0])} lines, {len(lay.before)} lines before them and {len(lay.after)} "
                "after")
    lines = [head + f"; {len(spec.layers)} layer lines per GPU, {mbs}"]
    gpu_hosts = topo.gpus
    for kind, label, groups_of in _GROUPS:
        size = simai.group_size(spec, kind)
        if size < 2 or (kind in ("ep", "dp_ep") and spec.ep < 2):
            continue
        groups = groups_of(spec)
        first = groups[0]
        what = "stages" if kind == "pp" else "GPUs"
        text = f"  {label:<12} {len(groups)} of {size} {what}; the first: GPUs {_members(first)}"
        if servers is not None:
            on = sorted({servers[gpu_hosts[g]] for g in first})
            most = max(len({servers[gpu_hosts[g]] for g in grp}) for grp in groups)
            text += (f" on server{'s' if len(on) > 1 else ''} {_members(on)}; "
                     + ("each group in one server" if most == 1 else f"up to {most} servers per group"))
        lines.append(text)
    return lines


def dry_run_text(scn, command: str = "run") -> str:
    """The lines ``--dry-run`` prints for ``scn`` (``command``: ``run`` or ``compare``)."""
    topo = scn.topology
    servers = topo.servers()
    lines = [f"dry run of {scn.name}: nothing simulated"]
    n_sw = len(topo.switches)
    topo_line = (f"topology   {topo.source or topo.name}: {len(topo.hosts)} hosts, {n_sw} "
                 f"switch{'es' if n_sw != 1 else ''}" + (f" ({len(topo.nvswitches)} NVSwitches)" if topo.nvswitches
                                                         else "") + f", {len(topo.links)} links")
    if servers is not None:
        per: dict[int, int] = {}
        for s in servers.values():
            per[s] = per.get(s, 0) + 1
        sizes = sorted(set(per.values()))
        topo_line += (f"; {len(per)} servers of {sizes[0]} GPUs" if len(sizes) == 1
                      else f"; {len(per)} servers of {sizes[0]}-{sizes[-1]} GPUs")
    lines.append(topo_line)
    if scn.spec is not None:
        lines += _layout_lines(scn.spec, topo, servers)
    dag = scn.dag
    if dag is not None:
        lines.append(f"DAG        {dag.iterations} iteration{'s' if dag.iterations > 1 else ''}: {len(dag):,} ops, "
                     f"{len(dag.collectives):,} collectives")
    flows = scn.flows
    total = sum(f.size_bytes for f in flows)
    line = f"flows      {len(flows):,} flows, {_size(total)}"
    if topo.nvswitches and servers is not None and flows:
        inside = [f for f in flows if servers.get(f.src) == servers.get(f.dst)]
        nv = sum(f.size_bytes for f in inside)
        line += (f"\n  inside servers (NVLink) {len(inside):,} flows, {_size(nv)}; between servers (NICs) "
                 f"{len(flows) - len(inside):,} flows, {_size(total - nv)}")
    lines.append(line)
    est = packet_events_estimate(scn)
    lines.append(f"packet-level events ~{approx(est)} ({est:,}; estimate: {EVENTS_PER_PACKET_HOP} per packet and hop)"
                 + (", for each of compare's packet runs" if command == "compare" else ""))
    return "\n".join(lines)


__all__ = ["dry_run_text", "packet_events_estimate", "EVENTS_PER_PACKET_HOP"]
