"""The report of a run that could not make progress: ``summary.json``'s ``stuck`` and the error line.

``stuck`` = ``{at_ps, reason, flows: [{flow, src, dst, acked_bytes, size_bytes}],
paused_ports: [{node, port (1-based), priorities}]}``; under MPI every rank
knows its own flows and ports, and :func:`merge_ranks` joins them.
"""

from __future__ import annotations

from ..units import format_time

NO_EVENT = "no event left to simulate"


def no_byte_reason(d_ps: int) -> str:
    return f"no byte delivered for {format_time(d_ps)}"


def no_path_reason(cut_off: list[int], failed) -> str:
    """Flows ``cut_off`` by the link failures ``failed`` (``(t_ps, a, b, ...)``)."""
    down = "; ".join(f"link {a}-{b} down at {t / 10**6:.3f} us" for t, a, b, _ in failed)
    ids = ", ".join(map(str, cut_off[:10])) + (f" (+{len(cut_off) - 10} more)" if len(cut_off) > 10 else "")
    return f"no path left for flow {ids} ({down})"


def stuck_report(t_ps: int, why: str, nodes, active_flows) -> dict:
    """The report at ``t_ps``: the PFC-paused ports of ``nodes`` and the ``active_flows``
    (``(flow id, src, dst, acked bytes, size)``)."""
    paused = []
    for nd in nodes:
        for p in nd.ports:
            prios = [q for q, on in enumerate(p.paused) if on]
            if prios:
                paused.append({"node": nd.node_id, "port": p.idx + 1, "priorities": prios})
    flows = [{"flow": f, "src": s, "dst": d, "acked_bytes": a, "size_bytes": z} for f, s, d, a, z in active_flows]
    return {"at_ps": t_ps, "reason": why, "flows": flows, "paused_ports": paused}


def merge_ranks(stuck: dict, parts) -> None:
    """Put every rank's ``(flows, paused_ports)`` ``parts`` into ``stuck``, sorted."""
    stuck["flows"] = sorted((f for fl, _ in parts for f in fl), key=lambda f: f["flow"])
    stuck["paused_ports"] = sorted((p for _, pp in parts for p in pp), key=lambda p: (p["node"], p["port"]))


def stuck_message(st: dict, out_dir: str) -> str:
    """The one-line error of a stuck run (:class:`~pwormhole.errors.StuckError`)."""
    fl = ", ".join(f"{f['flow']} ({f['src']}->{f['dst']}, {f['acked_bytes']}/{f['size_bytes']} B)"
                   for f in st["flows"][:10]) or "none started"
    pp = ", ".join(f"node {p['node']} port {p['port']} prio {p['priorities']}"
                   for p in st["paused_ports"][:10]) or "none"
    more = "" if len(st["flows"]) <= 10 else f" (+{len(st['flows']) - 10} more)"
    return (f"no progress at {format_time(st['at_ps'])}: {st['reason']}; stuck flows: {fl}{more}; "
            f"paused ports: {pp}; partial outputs kept in {out_dir}")
