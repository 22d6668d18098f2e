"""TIMELY (CC_MODE 7) and DCTCP (CC_MODE 8), as HPCC ns-3's ``RdmaHw`` runs them.

Unit tests feed one ACK at a time to a QP and check every state change against numbers
worked out by hand from ``UpdateRateTimely`` / ``HandleAckDctcp``; the run tests check
fair shares, completion of the S2 mix with each CC, and Wormhole against packet mode.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from helpers import DATA, G100, US, flows_of, star_topo

from pwormhole.accel.memo import MemoCache
from pwormhole.accel.wormhole import AccelConfig
from pwormhole.config import CC_DCQCN, CC_DCTCP, CC_HPCC, CC_TIMELY, ModelConfig
from pwormhole.engine.events import EventQueue
from pwormhole.errors import InputError
from pwormhole.inputs.hpcc_config import read_hpcc_config
from pwormhole.net import cc
from pwormhole.net.build import Network
from pwormhole.net.host import SendQP
from pwormhole.net.packet import T_ACK, TM_DECREASE, new_packet
from pwormhole.run import Run
from pwormhole.scenario import Scenario, from_hpcc_config

REF = DATA / "hpcc" / "reference"


def cfg_of(mode: int, **kw) -> ModelConfig:
    cfg = ModelConfig(cc_mode=mode)
    cfg.fill_k_maps({G100})
    for k, v in kw.items():
        setattr(cfg, k, v)
    return cfg


def new_qp(mode: int, **kw):
    cfg = cfg_of(mode, **kw)
    net = Network(star_topo(2), flows_of([(0, 1, 10_000_000, 0)]), cfg)
    host = net.nodes[0]
    host.heap = EventQueue()
    flow = net.flows[0]
    rtt, win = net.qp_window(flow)
    return cfg, SendQP(flow, host, host.ports[0], G100, win, rtt, cfg, host.hdr_bytes)


def ack(seq: int, ts_ps: int = 0, marked: bool = False):
    return new_packet(T_ACK, 0, seq, 48, 0, 3, 0, 0, marked, None, 0, ts_ps, 1)


def test_timely_reactions_to_rtts():
    """One full update per RTT of data; T_low 50 us, T_high 500 us, min RTT 20 us, alpha 0.875,
    beta 0.8 (RdmaHw's defaults), RATE_AI 50 Mb/s, RATE_HAI 100 Mb/s."""
    cfg, qp = new_qp(CC_TIMELY)
    assert (cfg.timely_t_low_ps, cfg.timely_t_high_ps, cfg.timely_min_rtt_ps) == (50 * US, 500 * US, 20 * US)
    cc.assign_rate(qp, 40 * 10**9)
    qp.cur_rate_bps = 40 * 10**9
    t = 1000 * US
    qp.snd_nxt = 10_000
    cc.timely_on_ack(qp, ack(1000, t - 50 * US), cfg, t)  # first RTT: only recorded
    assert (qp.rate_bps, qp.last_update_seq, qp.last_rtt_ps, qp.rtt_diff_ps) == (40 * 10**9, 10_000, 50 * US, 0.0)
    cc.timely_on_ack(qp, ack(10_000, t - 70 * US), cfg, t)  # not past last_update_seq: FastReactTimely, nothing
    assert (qp.rate_bps, qp.last_rtt_ps) == (40 * 10**9, 50 * US)
    # RTT 55 us in [T_low, T_high]: diff = 0.875 x 5 us = 4.375 us, gradient 0.21875 > 0,
    # c = 1 - 0.8 x 0.21875 = 0.825: rate = 33 Gb/s
    qp.snd_nxt = 20_000
    cc.timely_on_ack(qp, ack(10_001, t - 55 * US), cfg, t)
    assert qp.rtt_diff_ps == 4_375_000.0
    assert qp.rate_bps == qp.cur_rate_bps == 33_000_000_000 and qp.inc_stage == 0
    assert (qp.last_update_seq, qp.last_rtt_ps) == (20_000, 55 * US)
    # RTT 30 us < T_low: + RATE_AI; diff = 0.125 x 4.375 + 0.875 x (30 - 55) = -21.328125 us
    qp.snd_nxt = 30_000
    cc.timely_on_ack(qp, ack(20_001, t - 30 * US), cfg, t)
    assert qp.rate_bps == 33_050_000_000 and qp.inc_stage == 1 and qp.rtt_diff_ps == -21_328_125.0
    # RTT 40 us (still < T_low) after 5 increases in a row: + RATE_HAI
    qp.inc_stage = 5
    qp.snd_nxt = 40_000
    cc.timely_on_ack(qp, ack(30_001, t - 40 * US), cfg, t)
    assert qp.rate_bps == 33_150_000_000 and qp.inc_stage == 6
    # RTT 600 us > T_high: c = 1 - 0.8 x (1 - 500/600) = 13/15, rate truncated to whole bps
    qp.snd_nxt = 50_000
    cc.timely_on_ack(qp, ack(40_001, t - 600 * US), cfg, t)
    assert qp.rate_bps == int(33_150_000_000 * (1 - 0.8 * (1 - 500 / 600))) == 28_730_000_000
    assert qp.inc_stage == 0
    # RTT 450 us, far above the last 600: gradient < 0, increase (stage 0: RATE_AI)
    qp.snd_nxt = 60_000
    cc.timely_on_ack(qp, ack(50_001, t - 450 * US), cfg, t)
    assert qp.rate_bps == 28_780_000_000
    # a steep rise (RTT 100 -> 480 us): c < 0 clamps to 0, the rate to MIN_RATE
    qp.rtt_diff_ps = 0.0
    qp.last_rtt_ps = 100 * US
    qp.snd_nxt = 70_000
    cc.timely_on_ack(qp, ack(60_001, t - 480 * US), cfg, t)
    assert qp.rate_bps == qp.cur_rate_bps == cfg.min_rate_bps == 100_000_000


def test_timely_and_dctcp_assign_the_rate_without_moving_the_pacing_deadline():
    """ns-3's TIMELY and DCTCP set ``m_rate`` (no ``ChangeRate``); the window follows (VAR_WIN)."""
    cfg, qp = new_qp(CC_DCTCP)
    qp.next_avail_ps = 123
    qp.last_pkt_bytes = 1048
    cc.assign_rate(qp, 25 * 10**9)
    assert qp.next_avail_ps == 123 and qp.cur_win == qp.win_bytes // 4
    cc.set_rate(qp, 50 * 10**9)  # DCQCN/HPCC: the deadline moves by the serialization difference
    assert qp.next_avail_ps == 123 - (1048 * 8_000_000_000_000 // (25 * 10**9) - 1048 * 8_000_000_000_000
                                      // (50 * 10**9))


def test_dctcp_batches_alpha_cut_and_cwr():
    """g = EWMA_GAIN (1/256), DCTCP_RATE_AI 1 Gb/s, MTU 1000."""
    cfg, qp = new_qp(CC_DCTCP)
    g = cfg.ewma_gain
    assert g == 1 / 256 and cfg.dctcp_rate_ai_bps == 10**9 and qp.mtu == 1000 and qp.alpha == 1.0
    cc.assign_rate(qp, 40 * 10**9)
    qp.snd_nxt = 5000
    cc.dctcp_on_ack(qp, ack(1000), cfg)  # first batch: its size only, then + AI
    assert (qp.batch_pkts, qp.last_update_seq, qp.alpha, qp.rate_bps) == (6, 5000, 1.0, 41 * 10**9)
    qp.snd_nxt = 8000
    cc.dctcp_on_ack(qp, ack(2000, marked=True), cfg)  # a mark: cut by alpha/2, enter CWR until 8000
    assert (qp.rate_bps, qp.cwr, qp.high_seq, qp.ecn_cnt) == (20_500_000_000, True, 8000, 1)
    qp.snd_nxt = 12_000
    cc.dctcp_on_ack(qp, ack(6000, marked=True), cfg)  # closes the batch: 2 marks of 6; in CWR: no cut, no AI
    assert qp.alpha == (1 - g) * 1.0 + g * (2 / 6)
    assert (qp.ecn_cnt, qp.batch_pkts, qp.last_update_seq, qp.rate_bps, qp.cwr) == (0, 7, 12_000, 20_500_000_000, True)
    cc.dctcp_on_ack(qp, ack(9000), cfg)  # past high_seq: CWR ends; no new batch, no AI
    assert (qp.cwr, qp.rate_bps) == (False, 20_500_000_000)
    qp.snd_nxt = 15_000
    alpha = qp.alpha
    cc.dctcp_on_ack(qp, ack(12_001), cfg)  # a batch without marks: alpha decays, + AI
    assert qp.alpha == (1 - g) * alpha and qp.batch_pkts == 3 and qp.rate_bps == 21_500_000_000
    cc.dctcp_on_ack(qp, ack(13_000, marked=True), cfg)  # alpha = (383/384)(255/256) = 97665/98304
    assert qp.alpha == 97665 / 98304
    assert qp.rate_bps == 21_500_000_000 * (196608 - 97665) // 196608 == 10_819_877_624


def test_dctcp_alpha_decays_by_the_batches_a_skip_closed():
    """50 KB in flight, the batch closing at 40 KB with 10 KB acknowledged: packet ACKs close
    batches at 41, 92 and 143 KB (each at the first ACK past the in-flight end before)."""
    for b, batches in ((132_999, 2), (133_000, 3), (30_999, 0), (31_000, 1)):
        cfg, qp = new_qp(CC_DCTCP)
        qp.snd_nxt, qp.snd_una, qp.last_update_seq, qp.high_seq = 60_000, 10_000, 40_000, 20_000
        qp.advance(b, 0, 0)
        assert qp.alpha == (1 - cfg.ewma_gain) ** batches, b
        assert (qp.last_update_seq, qp.high_seq) == (40_000 + b, 20_000 + b)


def test_header_sizes_follow_the_int_mode():
    """TIMELY adds IntHeader's 8-byte timestamp to data packets (ACKs stay padded to 60 B); DCTCP none."""
    for mode, hdr, ack_b in ((CC_TIMELY, 56, 60), (CC_DCTCP, 48, 60), (3, 90, 88), (1, 48, 60)):
        net = Network(star_topo(2), flows_of([(0, 1, 1000, 0)]), cfg_of(mode))
        assert (net.nodes[0].hdr_bytes, net.nodes[0].ack_bytes, net.nodes[0].ports[0].hdr_bytes) == (hdr, ack_b, hdr)


def test_config_accepts_timely_and_dctcp_and_refuses_pint(tmp_path):
    p = tmp_path / "config.txt"
    for mode in (7, 8):
        p.write_text(f"CC_MODE {mode}\nDCTCP_RATE_AI 2Gb/s\n")
        cfg, _ = read_hpcc_config(p)
        assert cfg.cc_mode == mode and cfg.cc_name == {7: "timely", 8: "dctcp"}[mode]
        assert cfg.dctcp_rate_ai_bps == 2 * 10**9
    p.write_text("CC_MODE 10\n")
    with pytest.raises(InputError, match=r"config.txt:1: CC_MODE 10 is not implemented \(HPCC-PINT"):
        read_hpcc_config(p)


@pytest.mark.parametrize("mode", [CC_TIMELY, CC_DCTCP])
def test_two_flows_converge_to_fair_shares(mode):
    """Two rate-only senders (HAS_WIN 0, so the CC alone shares the link) into one host, the
    second 100 us later: over 10-50 ms each gets half of the link within 5% (DCTCP's split
    swings slowly about it: 1.09 over 10-20 ms, 0.96 over 40-50). (With windows both are
    window-bound below the marking threshold: equal shares without any CC reaction.)"""
    cfg = cfg_of(mode, has_win=False)
    scn = Scenario("t", star_topo(3), flows_of([(0, 2, 900_000_000, 0), (1, 2, 900_000_000, 100 * US)]), cfg)
    r = Run(scn)
    acked = []
    for t_us in (10_000, 50_000):
        r.run(t_us * US)
        acked.append([r.net.nodes[i].sqp[i].snd_una for i in (0, 1)])
    got = [acked[1][i] - acked[0][i] for i in (0, 1)]
    assert abs(got[0] / got[1] - 1) < 0.05, got
    hdr = 56 if mode == CC_TIMELY else 48
    # and the link stays busy: DCTCP fills it (1000 / 1048 of 100 Gb/s in payload), TIMELY 95%
    assert sum(got) * 8 / (40_000 * US / 10**12) > 0.93 * G100 * 1000 / (1000 + hdr)
    if mode == CC_DCTCP:
        assert r.net.nodes[0].sqp[0].cnps_rx > 0 and r.net.nodes[1].sqp[1].cnps_rx > 0  # the CC did react
    else:
        assert r.net.nodes[0].sqp[0].rate_bps < G100 and r.net.nodes[1].sqp[1].rate_bps < G100


@pytest.mark.parametrize("mode", [CC_TIMELY, CC_DCTCP])
def test_s2_mix_runs_to_completion(mode, tmp_path):
    """HPCC's S2 mix (65 hosts on one switch, two long flows into host 1) with CC_MODE 7/8 and
    the flows cut to 4 MB: both finish, sharing the link (their FCTs within 3% of 8 MB at
    100 Gb/s plus headers)."""
    src = REF / "s2_dcqcn"
    for name in ("topology.txt", "trace.txt"):
        (tmp_path / name).write_bytes((src / name).read_bytes())
    (tmp_path / "flow.txt").write_text("2\n2 1 3 100 4000000 2\n3 1 3 100 4000000 2\n")
    (tmp_path / "config.txt").write_text((src / "config.txt").read_text().replace("CC_MODE 1", f"CC_MODE {mode}"))
    scn = from_hpcc_config(tmp_path / "config.txt")
    assert scn.config.cc_mode == mode
    r = Run(scn).run()
    assert sorted(r.finish_ps) == [0, 1]
    hdr = 56 if mode == CC_TIMELY else 48
    ideal_ps = 2 * 4000 * (1000 + hdr) * 8 * 10**12 // G100
    for f in (0, 1):
        assert 1.0 < (r.finish_ps[f] - r.start_ps[f]) / ideal_ps < 1.03


def _compare(mode, specs, has_win, n_hosts):
    runs = []
    for acc in (None, AccelConfig()):
        scn = Scenario("t", star_topo(n_hosts), flows_of(specs), cfg_of(mode, has_win=has_win))
        runs.append(Run(scn, accel=acc, memo=MemoCache("t") if acc else None).run())
    ref, fast = runs
    errs = [abs((fast.finish_ps[f] - fast.start_ps[f]) - (ref.finish_ps[f] - ref.start_ps[f]))
            / (ref.finish_ps[f] - ref.start_ps[f]) for f in ref.finish_ps]
    return ref, fast, errs


@pytest.mark.parametrize("has_win", [True, False])
@pytest.mark.parametrize("mode", [CC_TIMELY, CC_DCTCP])
def test_wormhole_skips_line_rate_flows_on_time(mode, has_win):
    """Host 0 sends 3, 6 and 9 MB to hosts 1-3 (NIC-bound, line rate: steady), send times shift
    with the skip (TIMELY measures RTTs from them), no memo replay for these CCs."""
    ref, fast, errs = _compare(mode, [(0, 1, 3_000_000, 0), (0, 2, 6_000_000, 0), (0, 3, 9_000_000, 0)], has_win, 4)
    assert fast.accel.skips >= 3 and fast.events < ref.events / 10 and max(errs) < 0.002
    assert fast.accel.memo is None and "no memo replay" in fast.accel.cc_limits
    c = fast.counters()
    assert c["bytes_sent"] == c["bytes_delivered"] == 18_000_000


@pytest.mark.parametrize("mode", [CC_TIMELY, CC_DCTCP])
def test_wormhole_does_not_skip_congested_flows_below_line_rate(mode):
    """Two rate-only flows into one host: they settle below line rate, where TIMELY and DCTCP change
    their rates every RTT; Wormhole must not freeze them (their sampled rate may look flat)."""
    specs = [(0, 2, 10_000_000, 0), (1, 2, 10_000_000, 30 * US)]
    ref, fast, errs = _compare(mode, specs, False, 3)
    assert fast.events > 0.9 * ref.events  # the shared part ran packet by packet
    assert max(errs) < 0.005


def test_cli_runs_them_and_the_summary_names_wormholes_limits(tmp_path):
    for cc_name in ("timely", "dctcp"):
        out = tmp_path / cc_name
        r = subprocess.run([sys.executable, "-m", "pwormhole", "run", "--scenario", "fat-tree-mix", "--mode",
                            "wormhole", "--cc", cc_name, "--out", str(out), "--no-progress"],
                           capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stderr
        summary = json.loads((out / "summary.json").read_text())
        assert summary["cc"] == cc_name and summary["flows_finished"] == summary["flows"] == 56
        assert summary["accel_cc_limits"].startswith(f"{cc_name}: groups below line rate are never fast-forwarded")
        assert "Wormhole limits  " + summary["accel_cc_limits"] in r.stdout


def test_ns3_time_paces_and_changes_rate_in_whole_ns():
    """With ns-3's time a QP's pacing gap and HPCC's ChangeRate deadline shift are whole ns, rounded
    down (``RdmaHw::UpdateNextAvail``, ``ChangeRate``): a 1090-byte HPCC packet takes 348.8 ns at
    25 Gb/s (348 ns) and 174.4 ns at 50 Gb/s (174 ns); in ps, rounded up, 348,800 and 174,400 ps."""
    for ns3_time, gap_25g, gap_50g in ((True, 348_000, 174_000), (False, 348_800, 174_400)):
        cfg, qp = new_qp(CC_HPCC, ns3_time=ns3_time)
        cc.set_rate(qp, 25 * 10**9)
        pkt = qp.next_packet(1_000_000)
        assert pkt.size_bytes == 1090 and qp.next_avail_ps == 1_000_000 + gap_25g
        cc.set_rate(qp, 50 * 10**9)
        assert qp.next_avail_ps == 1_000_000 + gap_50g


def test_dcqcn_sets_its_rate_without_moving_the_pacing_deadline():
    """ns-3's DCQCN assigns ``m_rate`` (``CheckRateDecreaseMlx``, ``RateIncEventTimerMlx``), never
    through ChangeRate: a rate cut leaves the deadline of the packet just sent where it was."""
    cfg, qp = new_qp(CC_DCQCN)
    host = qp.host
    qp.next_packet(0)
    deadline = qp.next_avail_ps
    assert deadline == 83_840
    qp.decrease_cnp = True
    qp.alpha = 1.0
    cc.dcqcn_timer(qp, host, TM_DECREASE, 0, 1000)
    assert qp.rate_bps == 50 * 10**9 and qp.next_avail_ps == deadline
