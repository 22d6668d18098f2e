"""bench/ns3_spread.py without ns-3: the scenarios it writes, its perturbation, its metrics."""

import sys
from pathlib import Path

from helpers import ROOT

sys.path.insert(0, str(ROOT / "bench"))

import ns3_spread  # noqa: E402  (bench/ is not a package)


def fct_file(path: Path, rows) -> Path:
    """rows: (src host, size_bytes, start_ns, fct_ns)."""
    path.write_text("".join(f"0b00{h:02x}01 0b000101 10000 100 {s} {t0} {f} 1\n" for h, s, t0, f in rows))
    return path


def test_s3_hpcc_is_s3_under_cc_mode_3(tmp_path):
    ns3_spread.scenario_folder("s3_hpcc", tmp_path / "h")
    ns3_spread.scenario_folder("s3_dcqcn", tmp_path / "d")
    h, d = ((tmp_path / x / "config.txt").read_text().splitlines() for x in "hd")
    assert [i for i, (a, b) in enumerate(zip(h, d)) if a != b] == [h.index("CC_MODE 3")]
    assert "CC_MODE 1" in d
    assert (tmp_path / "h" / "flow.txt").read_text() == (tmp_path / "d" / "flow.txt").read_text()


def test_perturbation_moves_starts_within_2_5_ns_in_order_and_rate_ai_half_a_percent(tmp_path):
    for i, ai in ((1, "50.25Mb/s"), (2, "49.75Mb/s")):
        d = tmp_path / str(i)
        ns3_spread.scenario_folder("s3_dcqcn", d)
        ns3_spread.perturb(d, i)
        lines = (d / "flow.txt").read_text().split("\n")
        starts = [float(x.split()[5]) for x in lines[1:1 + int(lines[0])]]
        assert len(starts) == 100 and starts == sorted(starts)  # ns-3 reads flows in start order
        assert all(abs(t - 2.0) <= 2.5e-9 + 1e-15 for t in starts) and len(set(starts)) > 10
        assert f"RATE_AI {ai}\n" in (d / "config.txt").read_text()
        assert "DCTCP_RATE_AI 1000Mb/s" in (d / "config.txt").read_text()


def test_metrics_and_spread(tmp_path):
    a = ns3_spread.load(fct_file(tmp_path / "a", [(2, 1000, 0, 100), (3, 1000, 0, 200), (4, 5000, 0, 400)]))
    b = ns3_spread.load(fct_file(tmp_path / "b", [(2, 1000, 0, 110), (3, 1000, 0, 200), (4, 5000, 0, 380)]))
    m = ns3_spread.metrics(a, b)
    assert abs(m["mean"] - (0.1 + 0 + 0.05) / 3) < 1e-12 and abs(m["max"] - 0.1) < 1e-12
    assert abs(m["0.001 MB mean"] - (310 / 300 - 1)) < 1e-12 and m["0.001 MB last"] == 0
    assert abs(m["last completion"] - (-20 / 400)) < 1e-12
    c = ns3_spread.load(fct_file(tmp_path / "c", [(2, 1000, 0, 100), (3, 1000, 0, 200), (4, 5000, 0, 420)]))
    assert abs(ns3_spread.spread([a, b, c])["last completion"] - 0.05) < 1e-12
    rows = dict(ns3_spread.pooled([a], [b]))
    assert rows["last completion"].endswith("-5.00%")
