"""``report.html``: one self-contained page about an output folder (``pwormhole report OUT_DIR``).

Sections, by element id, always present (saying what is missing when a file
is not there): ``run`` (inputs, settings, timing, what Wormhole skipped, a
comparison's error and speedup), ``fct`` (slowdown by flow size, FCT CDF),
``training`` (iteration time, timeline, per-GPU breakdown, collectives),
``network`` (PFC pauses per node; link utilization and queue lengths when
written), ``scaling`` (a ``scale`` study). Figures are inline SVG, tables HTML;
a Content-Security-Policy forbids every fetch, so the page shows the same
offline. Nodes are named by their role in the topology (``GPU 3``, ``ToR 72``) when the
run's topology is at hand (given, or its file named in the summary), else as ``pfc.txt`` and
``qlen.txt`` type them (``host 3``, ``switch 72``).
"""

from __future__ import annotations

import html
import os
from collections import defaultdict
from collections.abc import Callable
from functools import cache, partial

import numpy as np

from ..errors import InputError
from ..inputs.formats import load_topology
from ..outfiles import REPORT_NAME, write_text
from ..topology.model import Topology
from ..units import format_time
from . import analysis, charts, monitor_read
from .compare import fct_errors, read_fct
from .outdir import Fcts, OutDir, RunFiles, nvlink_mask, read_out_dir
from .summary import approx

SECTIONS = (("run", "Run"), ("fct", "Flow completion times"), ("training", "Training"), ("network", "Network"),
            ("scaling", "Scaling"))
MAX_TABLE_ROWS = 400

_CSS = """
body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;margin:0;color:#1d1d1f;background:#fff}
header{background:#1f3b57;color:#fff;padding:14px 28px}
header h1{margin:0;font-size:22px} header p{margin:4px 0 0;opacity:.85}
nav a{color:#cfe3f7;margin-right:16px;text-decoration:none;font-size:14px}
main{padding:8px 28px 40px;max-width:1200px}
section{border-bottom:1px solid #ddd;padding:10px 0 18px}
h2{font-size:19px;margin:14px 0 8px;color:#1f3b57} h3{font-size:15px;margin:14px 0 6px}
table{border-collapse:collapse;font-size:13px;margin:6px 0}
td,th{border:1px solid #d0d7de;padding:3px 8px;text-align:right} th{background:#f0f3f6}
td:first-child,th:first-child{text-align:left}
table.kv td:first-child{font-weight:600;background:#f7f9fb}
.cards{display:flex;flex-wrap:wrap;gap:10px;margin:8px 0}
.card{border:1px solid #d0d7de;border-radius:6px;padding:8px 14px;min-width:150px;background:#f7f9fb}
.card b{display:block;font-size:20px;color:#1f3b57} .card span{font-size:12px;color:#57606a}
.missing{color:#8a6d3b;background:#fcf8e3;border:1px solid #faebcc;padding:6px 10px;border-radius:4px}
.warn{color:#a94442} figure{margin:8px 0} svg{max-width:100%;height:auto}
details summary{cursor:pointer;margin:6px 0}
code{background:#f0f3f6;padding:1px 4px;border-radius:3px}
"""


def esc(x) -> str:
    return html.escape(str(x))


def table(headers, rows, cls: str = "") -> str:
    head = "".join(f"<th>{esc(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{esc(c)}</td>" for c in r) + "</tr>" for r in rows)
    return f'<table class="{cls}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def kv(rows) -> str:
    return ('<table class="kv"><tbody>' + "".join(f"<tr><td>{esc(k)}</td><td>{esc(v)}</td></tr>" for k, v in rows)
            + "</tbody></table>")


def cards(items) -> str:
    return '<div class="cards">' + "".join(f'<div class="card"><b>{esc(v)}</b><span>{esc(k)}</span></div>'
                                           for k, v in items) + "</div>"


def missing(text: str) -> str:
    return f'<p class="missing">{esc(text)}</p>'


def figure(svg: str, caption: str) -> str:
    return f"<figure>{svg}<figcaption>{esc(caption)}</figcaption></figure>"


def _pct(v) -> str:
    return "-" if v is None else f"{v * 100:.3f}%"


def _ns(v) -> str:
    return "-" if v is None else format_time(int(v) * 1000)


# -- sections ------------------------------------------------------------------------------
def run_section(d: OutDir) -> str:
    out = []
    r = d.run
    if r is None:
        out.append(missing("no run summary (summary.json) in this folder"))
    else:
        if os.path.normpath(r.folder) != os.path.normpath(d.path):
            out.append(f"<p>the run in <code>{esc(os.path.relpath(r.folder, d.path))}/</code></p>")
        s = r.summary
        inp = s.get("inputs") or {}
        if inp.get("command"):
            out.append(f"<p>command: <code>{esc(inp['command'])}</code></p>")
        done = f"{s.get('flows_finished', 0)} / {s.get('flows', 0)}"
        items = [("scenario", s.get("scenario", "?")), ("mode", s.get("mode", "?")),
                 ("congestion control", s.get("cc", "?")), ("ranks", s.get("ranks", 1)),
                 ("LPs", s.get("lps", s.get("ranks", 1))),
                 ("simulated time", format_time(int(s.get("sim_time_ps", 0)))),
                 ("wall time", f"{s.get('wall_s', 0):.2f} s"), ("events", f"{s.get('events', 0):,}"),
                 ("flows finished", done)]
        if s.get("packet_events_est") and s["packet_events_est"] > 1.05 * s.get("events", 0):
            items.append(("packet-level events they stand for (estimate)", f"~{approx(s['packet_events_est'])}"))
        out.append(cards(items))
        if not s.get("complete", True):
            why = (s.get("stuck") or {}).get("reason") or s.get("interrupted") or "stopped before every flow finished"
            out.append(f'<p class="warn">INCOMPLETE run: {esc(why)}</p>')
        rows = [("inputs: topology", f"{inp.get('topology', '?')} ({inp.get('hosts', '?')} hosts, "
                                     f"{inp.get('switches', '?')} switches, {inp.get('links', '?')} links)"
                 if inp else "?"),
                ("inputs: config file", inp.get("config") or "none (built-in settings)"),
                *([("inputs: flow file", inp["flow_file"])] if inp.get("flow_file") else []),
                ("NVLink congestion control", s.get("nvlink_cc", "-")), ("seed", s.get("seed", "-")),
                ("windows", f"{s.get('windows', 0):,} of {format_time(int(s.get('window_ps', 0)))}"),
                ("events per second", f"{s.get('events_per_s', 0):,.0f}"),
                ("CPU time", f"{s['cpu_s']:.2f} s" if "cpu_s" in s else "-"),
                ("bytes sent / delivered", f"{s.get('bytes_sent', 0):,} / {s.get('bytes_delivered', 0):,}"),
                ("drops, PFC pauses, ECN marks, CNPs",
                 f"{s.get('drops', 0)}, {s.get('pfc_pauses', 0)}, {s.get('ecn_marks', 0)}, {s.get('cnps', 0)}")]
        out.append(kv(rows))
        if s.get("mode") == "wormhole":
            out.append("<h3>Wormhole</h3>")
            skipped = s.get("skipped_time_fraction", 0.0)
            acc = s.get("accel") or {}
            wrows = [("skips (groups fast-forwarded)", s.get("skips", 0)),
                     ("skipped flow-time", f"{skipped * 100:.1f}%"),
                     ("memo hits / misses", f"{s.get('memo_hits', 0)} / {s.get('memo_misses', 0)}"),
                     ("bytes moved without events", f"{s.get('eventless_bytes', 0):,}"),
                     ("NVLink flows", f"{s.get('nvlink_model', '-')}: {s.get('fluid_flows', 0)} by rates, "
                                      f"{s.get('nvlink_packet_flows', 0)} by packets"),
                     ("settings", ", ".join(f"{k} {v}" for k, v in acc.items()))]
            out.append(kv(wrows))
            if not s.get("skips") and not s.get("memo_hits"):
                out.append(missing("Wormhole skipped nothing in this run: no group of flows stayed steady "
                                   "long enough"))
    out.append("<h3>Wormhole against packet mode</h3>")
    if d.compare is None:
        out.append(missing("no compare.json here (pwormhole compare writes one)"))
    else:
        c = d.compare
        sw, se = c.get("speedup_wall"), c.get("speedup_events")
        out.append(kv([("flows compared", f"{c.get('flows_compared')} / {c.get('flows')}"),
                       ("FCT error mean / p99 / max", f"{_pct(c.get('mean_fct_error'))} / "
                        f"{_pct(c.get('p99_fct_error'))} / {_pct(c.get('max_fct_error'))}"),
                       ("iteration time error", _pct(c.get("iteration_time_error"))),
                       ("collective time error (max)", _pct(c.get("collective_time_error"))),
                       ("wall packet / Wormhole", f"{c.get('packet_wall_s', 0):.2f} s / "
                                                  f"{c.get('wormhole_wall_s', 0):.2f} s"),
                       ("speedup wall / events", f"{sw:.1f}x / {se:.1f}x" if sw and se else "-"),
                       ("skipped flow-time", f"{c.get('skipped_time_fraction', 0) * 100:.1f}%")]))
        sp = c.get("spread")
        if isinstance(sp, dict) and isinstance(sp.get("metrics"), dict):
            spread_rows = []
            for m, v in sp["metrics"].items():
                if not isinstance(v, dict) or v.get("error") is None:
                    continue
                where = "-" if v.get("within_spread") is None else ("within" if v["within_spread"] else "outside")
                rule = "-" if v.get("passes") is None else ("passes" if v["passes"] else "fails")
                spread_rows.append((m, _pct(v.get("error")), _pct(v.get("spread")), where, rule))
            out.append(f"<h3>Against the packet run's own spread ({sp.get('runs')} perturbed packet runs)</h3>")
            out.append(table(("metric", "Wormhole", "spread", "against the spread", "fidelity rule"), spread_rows))
        if d.compare_runs and all(r.fcts is not None for r in d.compare_runs):
            ref = read_fct(_fct_path(d.compare_runs[0]))
            err = fct_errors(ref, read_fct(_fct_path(d.compare_runs[1])))
            band = []
            if isinstance(sp, dict):
                fct_name = os.path.basename(_fct_path(d.compare_runs[0]))
                for folder in sp.get("folders") or []:
                    path = os.path.join(d.path, str(folder), fct_name)
                    if os.path.isfile(path):
                        band.append(fct_errors(ref, read_fct(path)) * 100)
            if err.size and band:
                out.append(figure(charts.cdf_with_band(err * 100, band, "per-flow FCT error against the packet run "
                                                       "(%)", "Wormhole", "perturbed packet runs (the spread)"),
                                  f"error CDF over {err.size} flows, beside the packet run's own spread"))
            elif err.size:
                out.append(figure(charts.cdf(err * 100, "per-flow FCT error of Wormhole against packet mode (%)",
                                             logx=False), f"error CDF over {err.size} flows"))
    return "".join(out)


def _fct_path(r: RunFiles) -> str:
    return os.path.join(r.folder, (r.summary.get("inputs") or {}).get("fct_file") or "fct.txt")


def fct_section(d: OutDir) -> str:
    r = d.run
    if r is None or r.fcts is None:
        return missing("no FCT file here")
    f = r.fcts
    if not len(f.fct_ns):
        return missing("FCT: none finished")
    gps = (r.summary.get("inputs") or {}).get("gpus_per_server") or 0
    mask = nvlink_mask(f, gps) if r.summary.get("nvlink") else None
    if mask is None or mask.all() or not mask.any():
        return _fct_part(f, "")
    return (f"<p>{int((~mask).sum()):,} flows cross the NICs' fabric, {int(mask.sum()):,} run inside a server on "
            f"NVLink: apart below.</p><h3>NIC flows</h3>" + _fct_part(f.select(~mask), "NIC ")
            + "<h3>NVLink flows</h3>" + _fct_part(f.select(mask), "NVLink "))


def _rank(values, q: float) -> float:
    """The nearest-rank percentile ``q`` (as ``summary.json`` and the console give them)."""
    return float(np.quantile(values, q, method="inverted_cdf"))


def _fct_part(f, what: str) -> str:
    """Cards, the slowdown by size and the FCT CDF of the flows ``f`` (``what``: their kind, in captions)."""
    sd = analysis.slowdowns(f, at_least_one=False)
    out = [cards([(f"{what}flows finished", f"{len(f.fct_ns):,}"), ("FCT p50", _ns(_rank(f.fct_ns, 0.5))),
                  ("FCT p99", _ns(_rank(f.fct_ns, 0.99))), ("slowdown p50", f"{_rank(sd, 0.5):.3f}"),
                  ("slowdown p99", f"{_rank(sd, 0.99):.3f}")])]
    buckets = analysis.slowdown_by_size(f)
    out.append(f"<h4>Slowdown of the {what}flows by size (as HPCC's fct_analysis.py)</h4>")
    out.append(figure(charts.slowdown_by_size(buckets), f"FCT / standalone FCT per 5% bucket of {what}flows sorted "
                                                        "by size"))
    out.append(table(("flows (percentile of size)", "flows", "largest size (bytes)", "p50", "p95", "p99"),
                     [(f"{b.lo_pct}-{b.hi_pct}%", b.flows, f"{b.max_size_bytes:,}", f"{b.p50:.3f}", f"{b.p95:.3f}",
                       f"{b.p99:.3f}") for b in buckets]))
    out.append(f"<h4>FCT CDF of the {what}flows</h4>")
    out.append(figure(charts.time_cdf(f.fct_ns, "FCT"), f"{what}flow completion times"))
    return "".join(out)


def training_section(d: OutDir) -> str:
    r = d.run
    if r is None or r.collectives is None:
        return missing("not a training run: no collectives.csv here (training runs: --model, --workload)")
    s = r.summary
    out = []
    its = s.get("iterations") or []
    gpus = s.get("gpus") or []
    items = [("iteration time", ", ".join(_ns(t) for t in its) or "not finished"), ("GPUs", len(gpus)),
             ("collectives", len(r.collectives))]
    if gpus:
        n = len(gpus)
        items += [("compute per GPU (mean)", _ns(sum(g["compute_ns"] for g in gpus) / n)),
                  ("communication per GPU (mean)", _ns(sum(g["comm_ns"] for g in gpus) / n)),
                  ("exposed communication (mean)", _ns(sum(g["exposed_comm_ns"] for g in gpus) / n)),
                  ("idle, the pipeline bubble (mean)",
                   _ns(max(0.0, sum(its) - sum(g["compute_ns"] + g["exposed_comm_ns"] for g in gpus) / n)))]
    out.append(cards(items))
    out.append("<h3>Timeline</h3>")
    if r.timeline is None:
        out.append(missing("no timeline.csv here (written by runs of this version)"))
    else:
        rows, what = analysis.timeline_rows(r.timeline, int((s.get("inputs") or {}).get("gpus_per_server") or 0))
        if rows:
            out.append(figure(charts.timeline(rows), f"compute, communication and exposed communication, "
                                                           f"one row per {what}"))
    if gpus:
        total_ns = sum(its)
        span = "the iteration" if len(its) == 1 else f"the {len(its)} iterations"
        out.append("<h3>Per GPU</h3>")
        out.append(figure(charts.gpu_breakdown(analysis.gpu_times(gpus, total_ns)),
                          f"per GPU: compute, communication not overlapped by compute (exposed) and idle time (the "
                          f"bubble), adding up to {span} ({_ns(total_ns)}); communication overlapped by compute: "
                          f"{_ns(sum(g['comm_ns'] - g['exposed_comm_ns'] for g in gpus) / len(gpus))} per GPU "
                          "(mean)"))
    out.append("<h3>Collectives</h3>")
    groups: dict = defaultdict(list)
    for c in r.collectives:
        groups[(c["kind"], int(c["members"]), int(c["size_bytes"]))].append(c)
    rows_g = []
    for (kind, members, size), cs in sorted(groups.items(), key=lambda kv_: -sum(int(c["time_ns"]) for c in kv_[1])):
        t = np.array([int(c["time_ns"]) for c in cs])
        bw = np.array([float(c["busbw_gbps"]) for c in cs])
        rows_g.append((kind, members, f"{size:,}", len(cs), _ns(t.sum()), _ns(t.mean()), f"{bw.mean():.1f}",
                       f"{bw.min():.1f}"))
    out.append(table(("kind", "members", "size (bytes)", "count", "total time", "mean time",
                      "bus bandwidth mean (Gbps)", "min (Gbps)"), rows_g))
    shown = r.collectives[:MAX_TABLE_ROWS]
    more = len(r.collectives) - len(shown)
    out.append(f"<details><summary>every collective ({len(r.collectives)}"
               f"{f', first {len(shown)} shown; all in collectives.csv' if more else ''})</summary>")
    out.append(table(("name", "kind", "members", "size (bytes)", "start", "time", "bus bandwidth (Gbps)"),
                     [(c["name"], c["kind"], c["members"], c["size_bytes"], _ns(c["start_ns"]), _ns(c["time_ns"]),
                       c["busbw_gbps"]) for c in shown]))
    out.append("</details>")
    return "".join(out)


def traffic_start_ns(r: RunFiles) -> int | None:
    """When the run's traffic started, as the run counts it (``traffic_start_ps``): 0 for a training
    run, else its first finished flow's start (None without one)."""
    if r.collectives is not None:
        return 0
    if r.fcts is not None and len(r.fcts.start_ns):
        return int(r.fcts.start_ns.min())
    return None


def node_namer(r: RunFiles, topology: Topology | None):
    """A node's name in the report, by its id: its role in ``topology`` (else in the topology file the
    summary names, when it can be read), else switch or host as ``pfc.txt`` and ``qlen.txt`` say."""
    if topology is None:
        path = (r.summary.get("inputs") or {}).get("topology")
        if isinstance(path, str) and os.path.isfile(path):
            try:
                topology = load_topology(path)
            except InputError:
                topology = None
    if topology is not None:
        roles = topology.roles()
        return lambda n: f"{roles[n]} {n}" if 0 <= n < len(roles) else f"node {n}"
    switches = set(monitor_read.qlen_switches(r.folder, r.summary))
    if r.pfc is not None:
        switches.update(int(n) for n, t in analysis.node_types(r.pfc).items() if t == 1)
    return lambda n: f"{'switch' if n in switches else 'host'} {n}"


def network_section(d: OutDir, topology: Topology | None = None) -> str:
    r = d.run
    if r is None:
        return "".join(["<h3>Hottest links</h3>", missing("no run here"), "<h3>Queue lengths of monitored ports</h3>",
                        missing("no run here"), "<h3>PFC pauses over time</h3>", missing("no PFC file here")])
    namer = cache(partial(node_namer, r, topology))  # (reads files: made when a node is first named)

    def name(n: int) -> str:
        return namer()(n)
    start_ns = traffic_start_ns(r)
    links, queues = monitor_read.network_parts(r.folder, r.summary, table, figure, missing, name, start_ns)
    out = ["<h3>Hottest links</h3>", links, "<h3>Queue lengths of monitored ports</h3>", queues,
           "<h3>PFC pauses over time</h3>"]
    if r.pfc is None:
        out.append(missing("no PFC file here"))
        return "".join(out)
    t0 = start_ns if start_ns is not None else (int(r.pfc.time_ns.min()) if len(r.pfc.time_ns) else 0)
    edges, counts, left = analysis.pause_counts(r.pfc, t0, top=16)
    if not counts:
        out.append(f"<p>no PFC pause frame in this run ({int(r.summary.get('pfc_pauses', 0))} pauses sent)</p>")
        return "".join(out)
    labels = {n: name(n) for n in counts}
    out.append(figure(charts.pauses(edges, counts, labels, int(edges[0])),
                      "PFC pause frames received per node (its port toward the pausing neighbour stops; the "
                      f"nodes with the most); time since the traffic's start{_at(int(edges[0]))}"
                      + (f"; {left} more nodes in the PFC file" if left else "")))
    totals = sorted(((labels[n], int(c.sum())) for n, c in counts.items()), key=lambda x: -x[1])
    out.append(table(("node", "pause frames received"), totals))
    return "".join(out)


def _at(t_ns: int) -> str:
    """`` at 2.000 s``: when the traffic started (nothing at 0)."""
    return f" at {format_time(t_ns * 1000)}" if t_ns else " (0)"


def scaling_section(d: OutDir) -> str:
    if d.scaling is None:
        return missing("no scaling.csv here (pwormhole scale writes one)")
    rows = d.scaling
    ok = [r for r in rows if r.get("status") == "ok"]
    out = []
    if ok:
        out.append(figure(charts.scaling(ok), "speedup and parallel efficiency per mode"))
    cols = [c for c in ("mode", "ranks", "status", "wall_s", "cpu_s", "sync_wall_s", "events", "speedup",
                        "efficiency", "identical", "max_rel_fct_diff") if rows and c in rows[0]]
    out.append(table(cols, [[r.get(c, "") for c in cols] for r in rows]))
    high = [r for r in ok if r.get("efficiency") and float(r["efficiency"]) > 1.0]
    if high:
        which = ", ".join(f"{r['mode']} on {r['ranks']} ranks" for r in high)
        out.append(f'<p class="warn">efficiency above 1.0 for {esc(which)}: other load on the machine slowed '
                   "the 1-rank runs; compare the CPU times</p>")
    return "".join(out)


_BUILDERS = {"run": run_section, "fct": fct_section, "training": training_section, "network": network_section,
             "scaling": scaling_section}


def render(d: OutDir, topology: Topology | None = None) -> str:
    """The page of output folder ``d`` (``topology``: its run's, to name nodes by role)."""
    s = d.run.summary if d.run is not None else {}
    title = s.get("scenario") or (d.compare or {}).get("scenario") or os.path.basename(os.path.abspath(d.path))
    nav = "".join(f'<a href="#{sid}">{esc(name)}</a>' for sid, name in SECTIONS)
    builders: dict[str, Callable[[OutDir], str]] = {**_BUILDERS, "network": partial(network_section,
                                                                                   topology=topology)}
    body = "".join(f'<section id="{sid}"><h2>{esc(name)}</h2>'
                   f'{builders[sid](d)}</section>' for sid, name in SECTIONS)
    csp = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            f'<meta http-equiv="Content-Security-Policy" content="{csp}">'
            f"<title>pwormhole report: {esc(title)}</title><style>{_CSS}</style></head>"
            f"<body><header><h1>pwormhole report: {esc(title)}</h1><p>{esc(os.path.abspath(d.path))}</p>"
            f"<nav>{nav}</nav></header><main>{body}</main></body></html>\n")


def write_report(out_dir: str, topology: Topology | None = None, fcts: Fcts | None = None) -> str:
    """Write ``report.html`` of ``out_dir`` (InputError when it is no output folder; ``topology``: its
    run's, to name nodes by role; ``fcts``: the columns of its FCT file, from the run that wrote it, which
    then is not read back); returns its path."""
    d = read_out_dir(out_dir, fcts)
    path = os.path.join(out_dir, REPORT_NAME)
    write_text(path, render(d, topology))
    return path
