"""The comparison of packet mode (the reference) and Wormhole mode: errors, ``compare.json``, table and plot.

The driver that runs both modes is :mod:`pwormhole.commands.compare`. ``compare.json``
keys (docs/fidelity.md, "Measuring"):

* ``mean_fct_error``, ``p99_fct_error``, ``max_fct_error``: per-flow
  relative FCT error ``|wormhole - packet| / packet``, flows matched by
  ``(sip, dip, sport, dport)`` (null when no flow finished in both runs);
* ``fct_p50_shift``, ``fct_p99_shift``: signed relative shift of the median and the 99th
  percentile of the FCTs themselves (the FCT CDF, flows not paired); where one flow's FCT
  depends on the exact phase of its NIC's other flows (HPCC, several rings on one NIC:
  bench/RESULTS.md), the CDF is the stable answer (null when no flow is in both runs);
* ``iteration_time_error``: relative error of the last iteration time
  (training workloads, else null); ``collective_time_error``: the largest
  relative error of a collective instance's time (null without collectives);
* ``speedup_wall`` (packet wall / wormhole wall, same process, same
  scenario), ``speedup_events`` (events processed, ratio);
* ``skipped_time_fraction`` (flow-time spent frozen / total flow-time),
  ``memo_hits``, ``memo_misses``, ``memo_follows``, ``memo_follows_steady``, ``skips``;
  ``nvlink_model``, ``fluid_flows`` and ``nvlink_packet_flows`` (NVLink flows finished by rates, and by
  packets in servers where the rates stopped holding), ``fluid_shared_flows`` (under ``--nvlink-cc nic``:
  flows given rates that shared a port with another flow's data, whose FCTs are approximate);
* ``flows``, ``flows_compared`` and both runs' ``wall_s`` and ``events``.
"""

from __future__ import annotations

import csv
import json
import os

import numpy as np

from ..errors import InputError
from ..outfiles import matplotlib_installed, save_figure


def read_fct(path: str) -> dict[tuple[str, str, str, str], int]:
    """``(sip, dip, sport, dport) -> fct_ns`` of an ``fct.txt``."""
    out = {}
    try:
        with open(path, encoding="utf-8") as fh:
            for lineno, line in enumerate(fh, 1):
                parts = line.split()
                if len(parts) >= 8:
                    fct = parts[6]
                    if not (fct.isdigit() and len(fct) < 19):
                        raise InputError(f"fct.txt line has an FCT that is not a 64-bit count of ns: {fct!r}",
                                         path, lineno)
                    out[(parts[0], parts[1], parts[2], parts[3])] = int(fct)
    except (OSError, UnicodeDecodeError) as e:
        raise InputError(f"cannot read: {getattr(e, 'strerror', None) or e}", path) from None
    return out


def fct_errors(ref: dict, acc: dict) -> np.ndarray:
    """Relative errors of the flows present in both (reference ``ref``)."""
    keys = [k for k in ref if k in acc]
    return np.array([abs(acc[k] - ref[k]) / ref[k] if ref[k] > 0 else 0.0 for k in keys], dtype=float)


def fct_quantile_shifts(ref: dict, acc: dict, qs=(0.5, 0.99)) -> dict[float, float]:
    """Signed relative shift of each ``q``-quantile of the FCTs themselves (flows in both; the
    distribution an FCT CDF shows, where per-flow errors pair each flow with itself)."""
    keys = [k for k in ref if k in acc]
    if not keys:
        return {}
    r = np.array([ref[k] for k in keys], dtype=float)
    a = np.array([acc[k] for k in keys], dtype=float)
    out = {}
    for q in qs:
        rq = float(np.quantile(r, q, method="inverted_cdf"))
        out[q] = (float(np.quantile(a, q, method="inverted_cdf")) - rq) / rq if rq > 0 else 0.0
    return out


def collective_times(path: str) -> dict[str, int]:
    """``name -> time_ns`` of a ``collectives.csv`` (empty when there is none)."""
    if not os.path.exists(path):
        return {}
    with open(path) as fh:
        return {row["name"]: int(row["time_ns"]) for row in csv.DictReader(fh)}


def comparison(ps: dict, ws: dict, err: np.ndarray, pc: dict[str, int], wc: dict[str, int], shifts: dict) -> dict:
    """``compare.json`` of the packet run's summary ``ps`` and the Wormhole run's ``ws``, the
    per-flow errors ``err``, both runs' collective times ``pc`` and ``wc`` and the FCT quantile
    shifts ``shifts`` (:func:`fct_quantile_shifts`)."""
    it_err = None
    if ps.get("iteration_time_ns") and ws.get("iteration_time_ns") is not None:
        it_err = abs(ws["iteration_time_ns"] - ps["iteration_time_ns"]) / ps["iteration_time_ns"]
    coll_err = None
    if pc:
        coll_err = max((abs(wc[k] - v) / v for k, v in pc.items() if k in wc and v > 0), default=0.0)
    return {
        "scenario": ps["scenario"],
        "flows": ps["flows"],
        "flows_compared": int(err.size),
        "mean_fct_error": float(err.mean()) if err.size else None,
        "p99_fct_error": float(np.quantile(err, 0.99, method="inverted_cdf")) if err.size else None,
        "max_fct_error": float(err.max()) if err.size else None,
        "fct_p50_shift": shifts.get(0.5),
        "fct_p99_shift": shifts.get(0.99),
        "iteration_time_error": it_err,
        "collective_time_error": coll_err,
        "packet_wall_s": ps["wall_s"],
        "wormhole_wall_s": ws["wall_s"],
        "speedup_wall": ps["wall_s"] / ws["wall_s"] if ws["wall_s"] > 0 else None,
        "packet_events": ps["events"],
        "wormhole_events": ws["events"],
        "speedup_events": ps["events"] / ws["events"] if ws["events"] else None,
        "skips": ws.get("skips", 0),
        "skipped_time_fraction": ws.get("skipped_time_fraction", 0.0),
        "memo_hits": ws.get("memo_hits", 0),
        "memo_misses": ws.get("memo_misses", 0),
        "memo_follows": ws.get("memo_follows", 0),
        "memo_follows_steady": ws.get("memo_follows_steady", 0),
        "nvlink_model": ws.get("nvlink_model"),
        "fluid_flows": ws.get("fluid_flows", 0),
        "nvlink_packet_flows": ws.get("nvlink_packet_flows", 0),
        "fluid_shared_flows": ws.get("fluid_shared_flows", 0),
        "complete": bool(ps["complete"] and ws["complete"]),
    }


def compare_dirs(ref_dir: str, acc_dir: str, ps: dict | None = None, ws: dict | None = None) -> tuple[dict, np.ndarray]:
    """``(comparison, per-flow errors)`` of two runs' output folders (``ps``, ``ws``: their summaries
    when at hand, else read from ``summary.json``); flows from the reference's ``fct.txt`` name."""
    if ps is None:
        with open(os.path.join(ref_dir, "summary.json")) as fh:
            ps = json.load(fh)
    if ws is None:
        with open(os.path.join(acc_dir, "summary.json")) as fh:
            ws = json.load(fh)
    fct_name = ps["inputs"]["fct_file"]  # the config's FCT_OUTPUT_FILE
    ref, acc = read_fct(os.path.join(ref_dir, fct_name)), read_fct(os.path.join(acc_dir, fct_name))
    err = fct_errors(ref, acc)
    return comparison(ps, ws, err, collective_times(os.path.join(ref_dir, "collectives.csv")),
                      collective_times(os.path.join(acc_dir, "collectives.csv")), fct_quantile_shifts(ref, acc)), err


def table(r: dict) -> str:
    """A readable table of a comparison."""
    def pct(v):
        return "-" if v is None else f"{v * 100:.3f}%"

    def spct(v):
        return "-" if v is None else f"{v * 100:+.3f}%"
    rows = [
        ("flows compared", f"{r['flows_compared']} / {r['flows']}"
         + ("" if r["complete"] else "  (INCOMPLETE: a run stopped before every flow finished)")),
        ("FCT error mean / p99 / max",
         f"{pct(r['mean_fct_error'])} / {pct(r['p99_fct_error'])} / {pct(r['max_fct_error'])}"),
        ("FCT distribution shift p50 / p99", f"{spct(r.get('fct_p50_shift'))} / {spct(r.get('fct_p99_shift'))}"),
        ("iteration time error", pct(r["iteration_time_error"])),
        ("collective time error (max)", pct(r["collective_time_error"])),
        ("wall packet / wormhole", f"{r['packet_wall_s']:.2f} s / {r['wormhole_wall_s']:.2f} s"),
        ("speedup wall / events", f"{r['speedup_wall']:.1f}x / {r['speedup_events']:.1f}x"
         if r["speedup_wall"] and r["speedup_events"] else "-"),
        ("skips, skipped flow-time", f"{r['skips']}, {r['skipped_time_fraction'] * 100:.1f}%"),
        ("memo hits / misses", f"{r['memo_hits']} / {r['memo_misses']}"),
    ]
    if r.get("fluid_flows") or r.get("nvlink_packet_flows"):
        rows.append(("NVLink flows by rates / packets", f"{r['fluid_flows']} / {r.get('nvlink_packet_flows', 0)}"
                     + (f" ({r['fluid_shared_flows']} approximate)" if r.get("fluid_shared_flows") else "")))
    w = max(len(k) for k, _ in rows)
    return "\n".join(f"{k:<{w}}  {v}" for k, v in rows)


def plot_cdf(path: str, err: np.ndarray, title: str) -> bool:
    """``fct_error_cdf.png``: the CDF of the per-flow errors ``err``; False when matplotlib is missing."""
    if not matplotlib_installed():
        return False
    import matplotlib  # heavy (~1 s): loaded only when a plot is drawn
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    if err.size:
        x = np.sort(err) * 100
        ax.step(x, np.arange(1, x.size + 1) / x.size, where="post")
    ax.set_xlabel("per-flow FCT error vs packet mode (%)")
    ax.set_ylabel("CDF of flows")
    ax.set_title(f"{title}: Wormhole FCT error")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    save_figure(fig, path)
    return True
