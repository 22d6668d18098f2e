"""The steadiness checks alone (``accel.steady``): FIFO shares at a saturated port, goodput spans
free of CNPs, paced rates that fill a queue."""

from collections import deque
from types import SimpleNamespace

from helpers import G100, US, config, flows_of, star_topo

from pwormhole.accel.sampling import Sample
from pwormhole.accel.steady import enforced_window, fifo_shares, fills_a_queue, goodput
from pwormhole.accel.wormhole import AccelConfig
from pwormhole.run import Run
from pwormhole.scenario import Scenario
from pwormhole.topology.model import Link, Topology


def test_a_queue_fills_where_paced_rates_overload_a_switch_port():
    """``steady.fills_a_queue`` (``HAS_WIN 0``): what a flow sends is its paced rate, or
    its max-min share of its NIC; a queue grows at a switch port receiving more than its
    rate. QPs sharing a NIC below its rate get less than their rates (each packet waits
    for the other's) without any queue: comparing paced rates with goodputs flagged them."""
    specs = [(0, 4, 10**7, 0), (1, 4, 10**7, 0), (2, 3, 10**7, 0), (2, 1, 10**7, 0)]
    run = Run(Scenario("t", star_topo(5), flows_of(specs), config(has_win=False)), accel=AccelConfig())
    run.run(until_ps=2 * US)
    w = run.accel

    def fills(gbps):
        for fid, r in gbps.items():
            w.flows[fid].samples = deque([Sample(0, r * 10**9, 0, 0, 0, -1, 0, r * 10**9)])
        return fills_a_queue([w.flows[f] for f in sorted(gbps)], {fid: 0.0 for fid in gbps}, w.facts)

    assert fills({0: 60, 1: 45})  # 105 Gb/s into the port to host 4
    assert not fills({0: 60, 1: 40})
    assert fills({0: 100, 1: 10})
    assert not fills({2: 100, 3: 100})  # one NIC: 50 Gb/s each, into different ports
    assert not fills({2: 45, 3: 30})
    # with windows: a flow whose window (scaled by VAR_WIN to its rate) is full is capped; a
    # port only fills when a flow crossing it is not (goodputs of window-full flows can read high)
    run = Run(Scenario("t", star_topo(5), flows_of(specs), config()), accel=AccelConfig())
    run.run(until_ps=2 * US)
    w = run.accel
    win = w.flows[0].win_bytes

    def fills_win(flows, goodput_gbps):
        for fid, (r, inflight) in flows.items():
            w.flows[fid].samples = deque([Sample(0, r * 10**9, 0, 0, inflight, -1, 0, r * 10**9)])
        goodput = {f: g / 8000 for f, g in goodput_gbps.items()}
        return fills_a_queue([w.flows[f] for f in sorted(flows)], goodput, w.facts)

    assert not fills_win({0: (100, win), 1: (100, win)}, {0: 52, 1: 52})  # both capped
    assert fills_win({0: (100, win), 1: (60, win // 2)}, {0: 52, 1: 52})  # flow 1 paced at 60 Gb/s
    assert not fills_win({0: (100, win), 1: (50, win // 2)}, {0: 52, 1: 45})  # flow 1 full at its cut window


def test_a_line_rate_flow_must_acknowledge_its_share_of_its_nic():
    """``fills_a_queue`` with ``theta``: flow 0 (host 0 -> 2, no window) at the line rate has
    host 0's NIC to itself (host 0 receives nothing, so sends no ACKs): 100 Gb/s of wire bytes,
    100 x 1000 / 1048 = 95.42 Gb/s of payload. A goodput more than theta (2%) under it, 93.51
    Gb/s, means its bytes in flight grow: not steady. Paced under the line rate it is not
    compared (QPs sharing a NIC get less than their rates without any queue)."""
    run = Run(Scenario("t", star_topo(3), flows_of([(0, 2, 10**7, 0)]), config(has_win=False)),
              accel=AccelConfig())
    run.run(until_ps=2 * US)
    w = run.accel
    fs = w.flows[0]

    def fills(rate_gbps, goodput_gbps, theta=0.02):
        fs.samples = deque([Sample(0, rate_gbps * 10**9, 0, 0, 0, -1, 0, rate_gbps * 10**9)])
        return fills_a_queue([fs], {0: goodput_gbps / 8000}, w.facts, theta)

    assert not fills(100, 95.42) and not fills(100, 93.6)
    assert fills(100, 93.4)
    assert not fills(100, 93.4, theta=0.0)  # (without theta only overloaded ports count)
    assert not fills(60, 40)  # paced at 60 Gb/s, reading 40


def test_fifo_shares_only_at_a_saturated_port_of_window_bound_flows():
    """``steady.fifo_shares``: flows whose windows are full and whose only bottleneck is
    one switch port share its rate as ``W / (rtt + q)`` (equal windows and paths: equally),
    in place of their measured goodputs; otherwise the measured goodputs stand."""
    specs = [(0, 4, 10**7, 0), (1, 4, 10**7, 0), (2, 4, 10**7, 0), (0, 3, 10**7, 0)]
    run = Run(Scenario("t", star_topo(5), flows_of(specs), config()), accel=AccelConfig())
    run.run(until_ps=2 * US)
    w = run.accel
    win = w.flows[0].win_bytes
    share_gbps = 100 / 3 * w.mtu / (w.mtu + w.hdr_bytes)  # no ACKs cross the port to host 4

    def shares(inflight, goodput_gbps):
        for fid, x in inflight.items():
            w.flows[fid].samples = deque([Sample(0, 100 * 10**9, 0, 0, x, -1, 0, 100 * 10**9)] * 4)
        goodput = {f: g / 8000 for f, g in goodput_gbps.items()}
        fifo_shares([w.flows[f] for f in sorted(set(inflight))], goodput, w.samples, w.facts)
        return {f: round(g * 8000, 3) for f, g in goodput.items()}

    full = {0: win, 1: win, 2: win}
    assert shares(full, {0: 34, 1: 33, 2: 30}) == {f: round(share_gbps, 3) for f in full}
    assert shares(full, {0: 32, 1: 31, 2: 30}) == {0: 32, 1: 31, 2: 30}  # under 98% of the port
    # flow 3 (host 0 to host 3, window full) crosses no saturated port: its goodput stands
    s = round(share_gbps, 3)
    assert shares({**full, 3: win}, {0: 34, 1: 33, 2: 30, 3: 45}) == {0: s, 1: s, 2: s, 3: 45}
    assert shares({0: win, 1: win, 2: win // 2}, {0: 34, 1: 33, 2: 30}) == {0: 34, 1: 33, 2: 30}  # flow 2 paced
    # flow 0 also fills host 0's NIC with flow 3: two bottlenecks, no FIFO share at port 4
    assert shares({**full, 3: win}, {0: 34, 1: 33, 2: 30, 3: 62}) == {0: 34, 1: 33, 2: 30, 3: 62}
    w.flows[2].pg = 4  # another priority queue of the port: served round robin, not FIFO
    assert shares(full, {0: 34, 1: 33, 2: 30}) == {0: 34, 1: 33, 2: 30}
    w.flows[2].pg = 3

    def shares_at(rates_gbps, goodput_gbps):  # every window full at its rate (VAR_WIN)
        for fid, r in rates_gbps.items():
            x = enforced_window(w.flows[fid], r * 10**9, w.facts)
            w.flows[fid].samples = deque([Sample(0, r * 10**9, 0, 0, x, -1, 0, r * 10**9)] * 4)
        goodput = {f: g / 8000 for f, g in goodput_gbps.items()}
        fifo_shares([w.flows[f] for f in sorted(set(rates_gbps))], goodput, w.samples, w.facts)
        return {f: round(g * 8000, 3) for f, g in goodput.items()}

    # flows 0 and 1 paced at 49 Gb/s (their windows, scaled to it, are in flight too), spans
    # reading a little high: the port counts as saturated, but a share is never more than the
    # paced rate (uncapped, W / rtt would give each half the port: 47.71 Gb/s)
    paced = round(49 * w.mtu / (w.mtu + w.hdr_bytes), 3)
    assert shares_at({0: 49, 1: 49}, {0: 47.6, 1: 47.6}) == {0: paced, 1: paced}
    # flow 2 cut to 7 Gb/s: its window 3640 bytes, 4 packets in flight (the sender sends while
    # less than the window is), so it gets 4 / (52 + 52 + 4) of the port, not 3.64 / 107.64
    got = shares_at({0: 100, 1: 100, 2: 7}, {0: 46, 1: 46, 2: 5})
    assert enforced_window(w.flows[2], 7 * 10**9, w.facts) == 3640
    # (to a few FIFO_TOLERANCE: the sweeps stop when every port's equation holds to 1e-6 of its rate)
    assert abs(got[2] / got[0] - 4 / 52) < 1e-5 and abs(sum(got.values()) - 3 * share_gbps) < 1e-3


def test_fifo_shares_over_two_ports_in_series():
    """A parking lot: host 0 -> 3 crosses the link between the switches (shared with
    1 -> 2) and the port to host 3 (shared with 4 -> 3). Both ports saturated: the delays
    solved at both give 36.59 / 58.83 / 58.83 Gb/s (the packet run: 36.49 / 58.94 / 58.94,
    each port full at 100 x 1000 / 1048 Gb/s). A port read just under saturation, thus not
    modelled at first, joins the model when the shares would overload it (solved without it:
    47.71 / 47.71 / 56.13 Gb/s, the port to host 3 at 109%)."""
    topo = Topology(7, frozenset({5, 6}), [Link(0, 5, G100, US), Link(1, 5, G100, US), Link(5, 6, G100, US),
                                           Link(2, 6, G100, US), Link(3, 6, G100, US), Link(4, 6, G100, US)])
    specs = [(0, 3, 10**8, 0), (1, 2, 10**8, 0), (4, 3, 10**8, 0)]
    run = Run(Scenario("t", topo, flows_of(specs), config()), accel=AccelConfig())
    run.run(until_ps=2 * US)
    w = run.accel
    for fid in range(3):
        fs = w.flows[fid]
        fs.samples = deque([Sample(0, 10**11, 0, 0, enforced_window(fs, 10**11, w.facts), -1, 0, 10**11)] * 4)

    def shares(goodput_gbps):
        goodput = {f: g / 8000 for f, g in goodput_gbps.items()}
        fifo_shares([w.flows[f] for f in sorted({0, 1, 2})], goodput, w.samples, w.facts)
        return {f: round(g * 8000, 2) for f, g in goodput.items()}

    assert shares({0: 37.29, 1: 59.4, 2: 59.75}) == {0: 36.59, 1: 58.83, 2: 58.83}
    assert shares({0: 37.29, 1: 59.4, 2: 56.13}) == {0: 36.59, 1: 58.83, 2: 58.83}  # port to 3 read at 97.9%


def _steady_flow(cnps):
    """A Wormhole view of one flow acknowledged at 50 Gb/s (6.25 bytes/ns), sampled every
    1 us for 40 us, with ``cnps[i]`` CNPs received by sample ``i``."""
    wh = SimpleNamespace(samples=4, min_span_packets=100, theta=0.02, cfg=AccelConfig())
    fs = SimpleNamespace(samples=deque(), mtu=1000, path_rtt_ps=4 * US)
    for i in range(40):
        t = (i + 1) * US
        una = 6250 * i // 1000 * 1000  # whole packets acknowledged by sample i
        # ACK i at una / 6.25 ns
        fs.samples.append(Sample(t, 50 * 10**9, una, una * 160, una + 20_000, -1, cnps[i], 50 * 10**9))
    return wh, fs


def _run_goodput(wh, fs):
    """:func:`steady.goodput` since 0 with the run's thresholds (those of ``wh``)."""
    return goodput(fs, 0, 0, wh.samples, wh.theta, wh.min_span_packets)


def test_a_flow_getting_cnps_is_not_steady():
    """A CNP during the goodput span makes the next decrease check cut the rate by alpha / 2,
    less than theta once alpha has decayed, but cut after cut while the queue stays over the
    ECN threshold: the span must be CNP-free. A CNP awaiting its decrease check is reported as
    a rate change due now, so the flow is neither frozen nor looked up."""
    wh, fs = _steady_flow([0] * 40)
    gp = _run_goodput(wh, fs)
    assert gp is not None and abs(gp * 1000 - 6.25) < 0.1  # bytes per ns
    wh, fs = _steady_flow([0] * 30 + [1] * 10)
    assert _run_goodput(wh, fs) is None
    wh, fs = _steady_flow([3] * 40)  # CNPs before the span: steady
    assert _run_goodput(wh, fs) is not None
    wh, fs = _steady_flow([0] * 10 + [1] * 30)  # a CNP before the 100-packet span (the last 17 samples)
    assert _run_goodput(wh, fs) is not None
    wh, fs = _steady_flow([0] * 24 + [1] * 16)  # one inside it
    assert _run_goodput(wh, fs) is None
    # the report: a QP with a CNP pending and its rate still at the line rate
    topo = star_topo(2)
    run = Run(Scenario("t", topo, flows_of([(0, 1, 20_000_000, 0)]), config()), accel=AccelConfig())
    run.run(until_ps=8 * US)  # before its first skip
    w = run.accel
    qp = run.net.nodes[0].sqp[0]
    assert qp.rate_bps == qp.max_rate_bps and qp.rp_due_ps == -1
    w.next_sample_ps = 0
    assert w.local_report(8 * US)[1][0][1].rate_change_ps == -1
    qp.decrease_cnp = True
    assert w.local_report(8 * US)[1][0][1].rate_change_ps == 8 * US
