"""The queue-length and link monitors: HPCC ns-3's qlen.txt, link_util.csv (pwormhole.report.monitor)."""

import csv
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from helpers import MPIEXEC, ROOT, config, flows_of, needs_mpi, star_topo

from pwormhole.accel.wormhole import AccelConfig
from pwormhole.errors import InputError
from pwormhole.inputs.hpcc_config import read_hpcc_config
from pwormhole.net.packet import overhead_bytes
from pwormhole.report.monitor import QLEN_BUCKET_BYTES
from pwormhole.report.monitor_read import QlenHist, queue_stats, read_qlen
from pwormhole.run import Run
from pwormhole.scenario import Scenario, from_hpcc_config
from pwormhole.simulate import simulate

S3 = ROOT / "tests" / "data" / "hpcc" / "reference" / "s3_dcqcn"
PAIRS = ["--topology", "fat-tree:k=4", "--flows", ROOT / "tests" / "data" / "wormhole" / "fat_tree_pairs.txt"]
HDR, ACK = overhead_bytes(False)  # DCQCN data header and ACK sizes (bytes)


def s3_copy(d: Path, start_ns: int = 2_000_000_000, end_ns: int = 2_000_100_000) -> Path:
    """HPCC's S3 (100 x 2 MB DCQCN flows into host 1 through switch 0) with a sampled window."""
    for f in S3.iterdir():
        shutil.copy(f, d / f.name)
    text = (d / "config.txt").read_text()
    text = text.replace("QLEN_MON_START 5000000000", f"QLEN_MON_START {start_ns}")
    (d / "config.txt").write_text(text.replace("QLEN_MON_END 2010000000", f"QLEN_MON_END {end_ns}"))
    return d / "config.txt"


def qlen_blocks(path: Path) -> dict:
    """``time_ns -> {(switch, port): [count per KB bucket]}``."""
    blocks: dict = {}
    for line in path.read_text().splitlines():
        if line.startswith("time: "):
            cur = blocks[int(line[6:])] = {}
        else:
            node, port, *counts = map(int, line.split())
            cur[(node, port)] = counts
    return blocks


def link_rows(path: Path) -> list[dict]:
    with open(path, newline="") as fh:
        return [{k: (float(v) if k == "utilization" else int(v)) for k, v in r.items()} for r in csv.DictReader(fh)]


def test_qlen_on_s3_incast_shows_the_bottleneck(tmp_path):
    """Window 2 s .. 2.0001 s: samples at 0, 100, ..., 100000 ns (1001; ns-3 goes on while the
    sample before was before the end). The 100 senders start at 0 ns at 100 Gb/s; their first
    packets (1048 B: 1000 + the DCQCN header) reach the switch at 1048 x 8 / 100 Gb/s + 1 us =
    1083.84 ns, so the bottleneck port (switch 0, port 1, toward host 1) is empty at the 11
    samples 0..1000 ns, and at 1100 ns holds the 99 packets not yet on its wire: 103,752 B,
    bucket 103. The ports toward the senders carry ACKs only (60 B each): bucket 0 always."""
    cfg_path = s3_copy(tmp_path)
    out = tmp_path / "out"
    simulate(from_hpcc_config(str(cfg_path)), str(out), until_ps=2_000_200_000_000, quiet=True)
    blocks = qlen_blocks(out / "qlen.txt")
    # a block at 2 s (a multiple of ns-3's 100 ms dump interval: 1 sample), and one at the last sample
    assert sorted(blocks) == [2_000_000_000, 2_000_100_000]
    first, last = blocks[2_000_000_000], blocks[2_000_100_000]
    assert sorted(first) == sorted(last) == [(0, p) for p in range(1, 102)]
    assert all(c == [1] for c in first.values())
    assert all(sum(c) == 1001 for c in last.values())
    assert all(last[(0, p)] == [1001] for p in range(2, 102))
    bottleneck = last[(0, 1)]
    assert bottleneck[0] == 11 and bottleneck[99 * (1000 + HDR) // QLEN_BUCKET_BYTES] >= 1
    assert sum(bottleneck[100:]) >= 980  # a queue of 100 KB and more from 1.1 us on
    # link_util.csv: the bottleneck link (index 0: switch 0 -> host 1) busy from 1083.84 ns on: a
    # 1048 B packet every 83.84 ns, 119.27 per 10 us interval, each counted where it starts
    rows = [r for r in link_rows(out / "link_util.csv") if (r["src"], r["dst"]) == (0, 1)]
    assert [r["time_ns"] for r in rows] == [2_000_000_000 + 10_000 * j for j in range(10)]
    assert rows[0]["bytes"] == 107 * (1000 + HDR)  # starts at 1083.84 + 83.84 i < 10000 ns: i < 106.3
    assert all(r["bytes"] in (119 * (1000 + HDR), 120 * (1000 + HDR)) for r in rows[1:])
    assert sum(r["bytes"] for r in rows) == 1180 * (1000 + HDR)  # i <= (100000 - 1083.84) / 83.84 = 1179.8


def test_window_after_the_run_writes_empty_files(tmp_path, capsys):
    """S3 as HPCC ships it: QLEN_MON_START 5 s is after the 4 s stop, so ns-3's monitor never
    samples: an empty qlen.txt, a link_util.csv with its header only, and a warning."""
    out = tmp_path / "out"
    simulate(from_hpcc_config(str(S3 / "config.txt")), str(out), until_ps=2_000_020_000_000, quiet=True)
    assert (out / "qlen.txt").read_text() == ""
    assert (out / "link_util.csv").read_text() == "time_ns,link,src,dst,bytes,utilization\n"
    assert "the queue monitor took no sample: it starts at 5.000 s (QLEN_MON_START)" in capsys.readouterr().err


def _monitored(specs, n_hosts, accel=None, n_lps=1):
    cfg = config("dcqcn")
    cfg.qlen_mon_file, cfg.qlen_mon_end_ps = "qlen.txt", None  # --monitor: the whole run
    sim = Run(Scenario("t", star_topo(n_hosts), flows_of(specs), cfg), n_lps=n_lps, accel=accel).run()
    assert sim.complete
    return sim, sim.monitor_data()


@pytest.mark.parametrize("mode", ["packet", "wormhole"])
def test_link_bytes_are_conserved(mode):
    """Host 0 sends 3, 6 and 9 MB to hosts 1, 2, 3 (switch 4). Each direction carries exactly its
    packets: data 1000 + 48 B per 1000 B of payload, one 60 B ACK per data packet. In Wormhole
    mode the skipped bytes are spread over the frozen spans: every full 10 us interval of host
    0's link carries at least 97% of 100 Gb/s, as in packet mode (not 0 while frozen)."""
    sizes = {1: 3_000_000, 2: 6_000_000, 3: 9_000_000}
    sim, data = _monitored([(0, h, b, 0) for h, b in sizes.items()], 4,
                           AccelConfig() if mode == "wormhole" else None)
    if mode == "wormhole":
        assert sim.accel.skips >= 3
    per_dir = {(s, d): sum(u.values()) for (_, s, d), u in data.links.items()}
    pkts = {h: b // 1000 for h, b in sizes.items()}
    want = {(0, 4): sum(b + pkts[h] * HDR for h, b in sizes.items()), (4, 0): sum(pkts.values()) * ACK}
    for h, b in sizes.items():
        want[(4, h)] = b + pkts[h] * HDR
        want[(h, 4)] = pkts[h] * ACK
    assert per_dir == want
    assert sum(per_dir.values()) == sum(p.tx_bytes for nd in sim.net.nodes for p in nd.ports)
    assert sum(sizes.values()) == sim.counters()["bytes_delivered"]
    up = next(u for (_, s, d), u in data.links.items() if (s, d) == (0, 4))
    full = sorted(up)[1:-1]
    assert len(full) > 100 and min(up[j] for j in full) >= 0.97 * 125_000


def test_training_link_bytes_same_in_both_modes(tmp_path):
    """A GPT iteration on 8 GPUs (2 servers of 4): in Wormhole mode the NVLink flows go by rates
    and some groups are frozen, yet every link direction carries exactly the bytes of packet mode
    (the rates' bytes are whole at each flow's last byte; ACKs in proportion)."""
    args = ["--model", "gpt-350m", "--gpus", "8", "--tp", "4", "--layers", "1", "--topology",
            "rail-optimized:gpus=8,gpus_per_server=4", "--monitor"]
    per_dir = {}
    for mode in ("packet", "wormhole"):
        _run([*args, "--mode", mode], tmp_path / mode)
        d: dict = {}
        for r in link_rows(tmp_path / mode / "link_util.csv"):
            d[(r["link"], r["src"], r["dst"])] = d.get((r["link"], r["src"], r["dst"]), 0) + r["bytes"]
        per_dir[mode] = d
    # 12 B more of header on each data packet and each ACK than with a 2-byte PPP header: 24 B x
    # 503,616 packet-hops over the 545,726,720 bytes it was
    assert len(per_dir["packet"]) == 32 and sum(per_dir["packet"].values()) == 557_813_504
    assert per_dir["wormhole"] == per_dir["packet"]


def test_frozen_port_keeps_its_queue():
    """A 3-to-1 incast of 20 MB flows under Wormhole: the bottleneck queue while the group is
    frozen is the one it froze with (sampled, not 0): its histogram matches packet mode's."""
    specs = [(s, 0, 20_000_000, 0) for s in (1, 2, 3)]
    ref, ref_data = _monitored(specs, 4)
    fast, fast_data = _monitored(specs, 4, AccelConfig())
    assert fast.accel.skips >= 1 and fast.events < ref.events / 2
    key = (4, 1)  # switch 4's port toward host 0
    total = ref_data.samples
    assert abs(fast_data.samples - total) / total < 0.01

    def queued_share(d):
        return sum(n for b, n in d.qlen[key].items() if b >= 1) / d.samples

    assert queued_share(ref_data) > 0.9 and abs(queued_share(fast_data) - queued_share(ref_data)) < 0.05


def test_same_files_on_1_and_3_lps(tmp_path):
    cfg_path = s3_copy(tmp_path)
    scn = from_hpcc_config(str(cfg_path))
    for n, out in ((1, "one"), (3, "three")):
        simulate(scn, str(tmp_path / out), until_ps=2_000_150_000_000, n_lps=n, quiet=True)
    for name in ("qlen.txt", "link_util.csv"):
        assert (tmp_path / "one" / name).read_bytes() == (tmp_path / "three" / name).read_bytes()


def _run(args, out, n=1):
    cmd = [sys.executable, "-m", "pwormhole", "run", *map(str, args), "--out", str(out), "--no-progress"]
    if n > 1:
        cmd = [MPIEXEC, "-n", str(n), *cmd]
    r = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert r.returncode == 0, r.stderr


@needs_mpi
@pytest.mark.parametrize("name", ["s3-packet", "pairs-wormhole"])
def test_same_files_on_1_and_2_ranks(tmp_path, name):
    if name == "s3-packet":
        args = ["--hpcc-config", s3_copy(tmp_path), "--until", "2.00015", "--mode", "packet"]
    else:
        args = [*PAIRS, "--mode", "wormhole", "--monitor", "--link-interval", "2us"]
    _run(args, tmp_path / "one")
    _run(args, tmp_path / "two", n=2)
    for f in ("qlen.txt", "link_util.csv"):
        one = (tmp_path / "one" / f).read_bytes()
        assert one.count(b"\n") > 50 and one == (tmp_path / "two" / f).read_bytes()


def test_config_keys_are_read(tmp_path):
    p = tmp_path / "c.txt"
    p.write_text("QLEN_MON_FILE mix/q.txt\nQLEN_MON_START 2000000000\nQLEN_MON_END 2000500000\n")
    cfg, warns = read_hpcc_config(p)
    assert warns == [] and (cfg.qlen_mon_file, cfg.qlen_mon_start_ps, cfg.qlen_mon_end_ps) == (
        "q.txt", 2 * 10**12, 2_000_500_000_000)
    p.write_text("QLEN_MON_START 2000000000\nQLEN_MON_END 2000500000\n")
    cfg, warns = read_hpcc_config(p)
    assert cfg.qlen_mon_file is None and warns == [
        f"{p}:1: QLEN_MON_START without QLEN_MON_FILE: no queue-length monitor runs; ignored"]
    p.write_text("FCT_OUTPUT_FILE a.txt\nQLEN_MON_FILE a.txt\n")
    with pytest.raises(InputError, match=r"c.txt:2: QLEN_MON_FILE names the file 'a.txt' of both FCT_OUTPUT_FILE "):
        read_hpcc_config(p)
    for bad in ("QLEN_MON_START -1", "QLEN_MON_END 2.5", "QLEN_MON_FILE link_util.csv"):
        p.write_text(bad + "\n")
        with pytest.raises(InputError, match=r"c.txt:1: QLEN_MON_"):
            read_hpcc_config(p)


def test_cli_monitor_flags(tmp_path):
    flows = tmp_path / "f.txt"
    flows.write_text("1\n0 1 3 100 100000 0\n")
    base = ["run", "--topology", "fat-tree:k=4", "--flows", flows, "--no-progress"]
    for extra, msg in ((["--monitor-interval", "100ns"], "--monitor-interval needs --monitor"),
                       (["--monitor", "--monitor-interval", "1.5ns"], "whole number of ns"),
                       (["--monitor", "--link-interval", "150ns"], "must be a multiple of the sampling interval")):
        r = subprocess.run([sys.executable, "-m", "pwormhole", *map(str, base + extra), "--out", tmp_path / "o"],
                           capture_output=True, text=True, cwd=ROOT, timeout=60)
        assert r.returncode == 2 and msg in r.stderr and r.stderr.count("\n") == 1, r.stderr


def test_queue_stats_by_hand(tmp_path):
    """10 samples: 2 empty, 3 at 2 KB, 5 at 3 KB: 80% with a queue, mean 2.1 KB, p99 and max 3 KB."""
    (s,) = queue_stats(QlenHist(5, {(0, 1): np.array([2, 0, 3, 5])}))
    assert (s.samples, s.queued, s.mean_kb, s.p99_kb, s.max_kb) == (10, 0.8, 2.1, 3, 3)
    p = tmp_path / "q.txt"
    p.write_text("time: 1\n0 1 1\ntime: 5\n0 1 2 0 3 5\n3 2 10\n")
    h = read_qlen(p)
    assert h.time_ns == 5 and {k: v.tolist() for k, v in h.ports.items()} == {(0, 1): [2, 0, 3, 5], (3, 2): [10]}
    p.write_text("time: 1\n0 x 1\n")
    with pytest.raises(InputError, match=r"q.txt:2: not a qlen.txt line"):
        read_qlen(p)


def test_report_shows_the_bottleneck_queue_and_link(tmp_path):
    cfg_path = s3_copy(tmp_path)
    out = tmp_path / "out"
    simulate(from_hpcc_config(str(cfg_path)), str(out), until_ps=2_000_200_000_000, quiet=True, report=True)
    text = (out / "report.html").read_text()
    net = text[text.index('<section id="network">'):]
    queues = net[net.index("Queue lengths of monitored ports"):]
    # the one port with a queue: 1001 samples, 990 of them with 1 KB or more (11 empty, see above)
    assert "<tbody><tr><td>ToR 0</td><td>1</td><td>1,001</td><td>98.9%</td>" in queues  # its role in the topology
    assert "101 switch ports sampled 1,001 times up to 2,000,100,000 ns; 100 of them never held 1 KB" in queues
    links = net[net.index("Hottest links"):net.index("Queue lengths of monitored ports")]
    assert "<tbody><tr><td>0</td><td>ToR 0 -&gt; host 1</td><td>1,236,640</td>" in links  # 1180 packets of 1048 B
    assert links.count("<svg") == 1 and queues.count("<svg") >= 1
