"""Wormhole's errors judged against the packet run's own spread: the project's fidelity rule.

A comparison (:mod:`.compare`) measures Wormhole's error against one packet run. Where the packet
answer itself moves under perturbations that should not matter (a few ns of compute jitter, a
constant of the CC moved by half a percent, another random seed), a per-flow figure measures chance
rather than the model. The *spread* of a metric is the largest deviation, from the reference packet
run, among ``K`` packet runs so perturbed (:func:`spread_of`); each of Wormhole's errors is then
reported beside it (:func:`judge`).

The fidelity rule (docs/fidelity.md): a Wormhole result passes when its per-flow mean FCT error is
under 1%, its iteration time and every collective's time under 0.1%, and its per-flow p99 FCT error
and its FCT distribution's shifts (p50, p99) each under 3% or within 1.5 times the spread.
"""

from __future__ import annotations

from typing import NamedTuple

# metric -> (limit, multiple of the spread that also passes: None for an absolute limit); max_fct_error has no rule
RULE: dict[str, tuple[float | None, float | None]] = {
    "mean_fct_error": (0.01, None),
    "p99_fct_error": (0.03, 1.5),
    "max_fct_error": (None, None),
    "fct_p50_shift": (0.03, 1.5),
    "fct_p99_shift": (0.03, 1.5),
    "iteration_time_error": (0.001, None),
    "collective_time_error": (0.001, None),
}
METRICS = tuple(RULE)
WORST_COLLECTIVES = 10  # collectives listed in compare.json, the farthest outside the spread first


class Verdict(NamedTuple):
    """One metric of a comparison by the rule: Wormhole's ``error`` (absolute value), the ``spread``
    (None: no perturbed run measured it), whether the error is within the spread, and whether the
    metric passes the rule (None: no rule for it, or not measured)."""
    error: float | None
    spread: float | None
    within_spread: bool | None
    passes: bool | None

    def as_dict(self) -> dict:
        return self._asdict()


def spread_of(comparisons: list[dict]) -> dict[str, float | None]:
    """Per metric, the largest absolute deviation among ``comparisons`` (each a comparison of a
    perturbed packet run against the reference, :func:`~.compare.comparison`)."""
    out: dict[str, float | None] = {}
    for m in METRICS:
        vals = [abs(c[m]) for c in comparisons if c.get(m) is not None]
        out[m] = max(vals) if vals else None
    return out


def verdict(metric: str, error: float | None, spread: float | None) -> Verdict:
    """``metric``'s error by the rule (:data:`RULE`)."""
    if error is None:
        return Verdict(None, spread, None, None)
    e = abs(error)
    within = None if spread is None else e <= spread
    limit, multiple = RULE[metric]
    if limit is None:
        return Verdict(e, spread, within, None)
    passes = e < limit or (multiple is not None and spread is not None and e <= multiple * spread)
    return Verdict(e, spread, within, passes)


def judge(comparison: dict, spread: dict[str, float | None]) -> dict[str, Verdict]:
    """Every metric of Wormhole's ``comparison`` beside its ``spread`` (:func:`spread_of`)."""
    return {m: verdict(m, comparison.get(m), spread.get(m)) for m in METRICS}


def collective_spread(ref: dict[str, int], acc: dict[str, int], perturbed: list[dict[str, int]]) -> dict:
    """Each collective's time: Wormhole's relative error (``acc`` against ``ref``, name -> ns) beside
    the largest deviation among the ``perturbed`` packet runs'. Returns the count, how many are
    outside the spread and over the rule's 0.1%, and the worst ones (:data:`WORST_COLLECTIVES`)."""
    rows = []
    for name, t in ref.items():
        if t <= 0 or name not in acc:
            continue
        err = abs(acc[name] - t) / t
        devs = [abs(p[name] - t) / t for p in perturbed if name in p]
        rows.append((name, err, max(devs) if devs else None))
    limit = RULE["collective_time_error"][0]
    outside = [r for r in rows if r[2] is not None and r[1] > r[2]]
    worst = sorted(rows, key=lambda r: (-(r[1] - (r[2] or 0.0)), r[0]))[:WORST_COLLECTIVES]
    return {"count": len(rows), "outside_spread": len(outside),
            "over_limit": sum(1 for r in rows if limit is not None and r[1] >= limit),
            "worst": [{"name": n, "error": e, "spread": s} for n, e, s in worst]}


def passes(verdicts: dict[str, Verdict]) -> bool:
    """Whether every metric with a rule that was measured passes it."""
    return all(v.passes for v in verdicts.values() if v.passes is not None)


def table(verdicts: dict[str, Verdict]) -> str:
    """A readable table: metric, Wormhole's error, the spread, within it or by how much outside, verdict."""
    def pct(v):
        return "-" if v is None else f"{v * 100:.3f}%"

    rows = []
    for m, v in verdicts.items():
        if v.error is None:
            continue
        if v.spread is None:
            where = "-"
        elif v.within_spread:
            where = "within"
        else:
            where = f"outside ({v.error / v.spread:.1f}x)" if v.spread > 0 else "outside (spread 0)"
        limit, multiple = RULE[m]
        if v.passes is None:
            rule = "-"
        elif not v.passes:
            rule = "FAILS"
        elif limit is not None and v.error < limit:
            rule = f"passes (under {limit * 100:g}%)"
        else:
            rule = f"passes (within {multiple:g}x the spread)"
        rows.append((m, pct(v.error), pct(v.spread), where, rule))
    head = ("metric", "Wormhole", "spread", "against the spread", "rule")
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in [head, *rows])


__all__ = ["RULE", "METRICS", "Verdict", "spread_of", "verdict", "judge", "collective_spread", "passes", "table"]
