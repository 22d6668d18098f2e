"""Rate solvers of the steadiness tests (pure numerics over ports and flows).

* :func:`max_min_shares`: water-filling of max-min shares over saturated ports (HPCC fairness).
* :func:`fifo_solve`: the long-run shares of window-bound flows at FIFO switch queues: each
  keeps its window ``W`` in flight, so by Little's law gets ``min(W / (rtt + d), paced rate)``
  where ``d`` sums its queues' delays; one equation per saturated port (the shares fill its
  rate less its ACKs), solved by Gauss-Seidel sweeps and bisection.
* :func:`max_min`: progressive filling with the ACKs served first (NVLink flows by rates), and
  :func:`max_min_holds`: whether packets without end-to-end CC share the ports so.
"""

from __future__ import annotations

import heapq
from itertools import chain

from ..net.switch import SwitchPort
from ..units import PS_PER_S
from .config import BPS_PER_BYTE_PS, FIFO_SWEEPS, FIFO_TOLERANCE, MAX_MIN_ROUNDS


def max_min_shares(room: dict, crossing: dict, data_ports: dict) -> dict:
    """Flow id -> max-min share (bytes/ps) of the flows crossing the ports of ``room`` (port ->
    capacity, bytes/ps; consumed); ``crossing``: port -> flow ids; ``data_ports``: flow id ->
    the ports its data cross. The tightest port (ties by node id and index) is filled first.
    The ports wait in a heap by their level, an entry made again whenever a fill changes it
    (O(F log P) for F flows on P ports, where a scan of every port at each level was O(P^2))."""
    share: dict = {}
    left = {p: len(crossing[p]) for p in room}  # of each port, its flows without a share
    on: dict = {}  # flow id -> the ports of room it crosses
    for p in room:
        for f in crossing[p]:
            on.setdefault(f, []).append(p)
    tie = {p: (p.node.node_id, p.idx) for p in room}
    level: dict = {}  # of each port with flows without a share: its level now

    def push(p) -> None:
        r = room[p]
        lv = level[p] = (r if r > 0.0 else 0.0) / left[p]  # (max(0.0, r))
        heapq.heappush(heap, (lv, tie[p], p))

    heap: list = []
    for p in room:
        if left[p]:
            push(p)
    while heap:
        best_level, _, p = heapq.heappop(heap)
        if p not in room or not left[p] or level[p] != best_level:
            continue  # (an entry made before a later fill, or a port filled)
        changed = set()
        for f in crossing[p]:
            if f not in share:
                share[f] = best_level
                for q in on[f]:
                    left[q] -= 1
                    changed.add(q)
                for q in data_ports[f]:
                    if q in room:
                        room[q] -= best_level
                        changed.add(q)
        del room[p]
        for q in changed:
            if q in room and left[q]:
                push(q)
    return share


def fifo_solve(flows: list, bound: set, crossing: dict, saturated: set, ack_load: dict, win: dict, pace: dict,
               ack_queued: bool):
    """``{flow id: payload bytes/ps}`` of the window-bound flows (``bound``) modelled at the
    ``saturated`` switch ports, or None (nothing modelled, or the sweeps did not settle).

    ``crossing``: port -> the FlowStates whose data cross it; ``ack_load``: port -> ACK bytes/ps;
    ``win``: flow id -> wire bytes it keeps in flight; ``pace``: flow id -> its paced rate
    (wire bytes/ps); ``ack_queued``: ACKs wait in their flow's priority queue. Modelled: ports
    whose data are of one priority and whose ACK load is under their rate, and the flows all of
    whose saturated ports are modelled (a NIC is round robin, never modelled)."""
    ports = [p for p in crossing if p in saturated and isinstance(p, SwitchPort)
             and p.rate_bps / BPS_PER_BYTE_PS > ack_load.get(p, 0.0)
             and all(fs.pg == crossing[p][0].pg for fs in crossing[p])]
    modelled = [fs for fs in flows if fs.fid in bound]
    while ports:  # drop flows crossing a saturated port not modelled, and the ports they cross
        keep = set(ports)
        fss = [fs for fs in modelled
               if all(p in keep for p in chain(fs.data_ports, fs.ack_ports) if p in saturated)]
        on = {fs.fid for fs in fss}
        ports2 = [p for p in ports if all(fs.fid in on for fs in crossing[p])]
        if len(ports2) == len(ports) and len(fss) == len(modelled):
            break
        ports, modelled = ports2, fss
    if not ports:
        return None
    delay = {p: 0.0 for p in ports}  # ps
    pg = {p: crossing[p][0].pg for p in ports}  # the priority of each modelled port's data
    queues = {}
    for fs in modelled:  # the modelled queues its packets wait in: its data's, and its ACKs' where shared
        queues[fs.fid] = [p for p in fs.data_ports if p in delay] + [
            p for p in fs.ack_ports if p in delay and ack_queued and pg[p] == fs.pg]
    modelled = [fs for fs in modelled if queues[fs.fid]]  # the others keep their measured goodputs

    def share(fs, d_ps):  # wire bytes/ps at a total queue delay d_ps
        return min(win[fs.fid] / (fs.path_rtt_ps + d_ps), pace[fs.fid])

    for sweep in range(FIFO_SWEEPS):
        for p in (ports if sweep % 2 == 0 else reversed(ports)):  # symmetric sweeps
            cap = p.rate_bps / BPS_PER_BYTE_PS - ack_load.get(p, 0.0)
            terms = [(fs, sum(delay[x] for x in queues[fs.fid]) - delay[p]) for fs in crossing[p]]
            lo, hi = 0.0, float(max(fs.path_rtt_ps + d for fs, d in terms))
            if sum(share(fs, d) for fs, d in terms) <= cap:
                hi = 0.0  # the windows (or the paced rates) do not fill it: no queue
            else:
                while sum(share(fs, d + hi) for fs, d in terms) > cap:
                    hi *= 2
                for _ in range(40):  # to 2^-40 of the bracket
                    mid = (lo + hi) / 2
                    if sum(share(fs, d + mid) for fs, d in terms) > cap:
                        lo = mid
                    else:
                        hi = mid
            delay[p] = hi
        # settled when every port's equation holds at once (to FIFO_TOLERANCE of its rate)
        total = {fs.fid: share(fs, sum(delay[x] for x in queues[fs.fid])) for fs in modelled}
        for p in ports:
            cap = p.rate_bps / BPS_PER_BYTE_PS - ack_load.get(p, 0.0)
            err = sum(total[fs.fid] for fs in crossing[p]) - cap
            if err > FIFO_TOLERANCE * cap or (delay[p] > 0 and err < -FIFO_TOLERANCE * cap):
                break
        else:
            return {fs.fid: total[fs.fid] * fs.mtu / fs.wire_bytes for fs in modelled}
    return None


def max_min(data_users: dict, ack_users: dict, flows) -> dict:
    """Max-min fair data rates of ``flows`` (wire bytes/ps) over the ports of ``data_users``
    (port -> fids sending data on it), each port's capacity less the ACKs crossing it
    (``ack_users``: port -> [(fid, ACK wire bytes per data wire byte)]): a NIC sends its ACKs
    first, and a flow is never held back by a port that carries only its ACKs. Progressive
    filling with the ACK bytes counted is exact unless a port fills while a flow with only ACKs
    on it is still rising; then the ACK loads and the rates are iterated to a fixed point (each
    round shrinks the change by the ACK-to-data ratio, ~1/20)."""
    rate = _fill(data_users, ack_users, flows)
    if rate is not None:
        return rate
    cap = {p: p.rate_bps / 8 / PS_PER_S for p in set(data_users) | set(ack_users)}  # bytes per ps
    ack_load = dict.fromkeys(cap, 0.0)
    rates: dict = {}
    for _ in range(MAX_MIN_ROUNDS):
        rates = _fill(data_users, {}, flows, {p: max(0.0, cap[p] - ack_load[p]) for p in cap}) or {}
        new = {p: sum(rates[f] * c for f, c in ack_users.get(p, ())) for p in cap}
        if all(abs(new[p] - ack_load[p]) <= 1e-12 * cap[p] for p in cap):
            break
        ack_load = new
    return rates


def _fill(data_users: dict, ack_users: dict, flows, room: dict | None = None) -> dict | None:
    """Progressive filling: equal increments to every rising flow (its ACKs rising with it) until
    a port's ``room`` (default: its capacity) is used, which stops the flows with data on it.
    None when a port fills while a flow with only ACKs on it still rises."""
    ports = set(data_users) | set(ack_users)
    residual = dict(room) if room is not None else {p: p.rate_bps / 8 / PS_PER_S for p in ports}
    full_at = {p: 1e-9 * residual[p] for p in ports}
    users = {p: [(f, 1.0) for f in data_users.get(p, ())] + list(ack_users.get(p, ())) for p in ports}
    rate = dict.fromkeys(flows, 0.0)
    open_ = {f for fids in data_users.values() for f in fids}
    while open_:
        best = None
        for p, us in users.items():
            w = sum(c for f, c in us if f in open_)
            if w > 0:
                lvl = residual[p] / w
                if best is None or lvl < best:
                    best = lvl
        if best is None:
            break
        for f in open_:
            rate[f] += best
        full = []
        for p, us in users.items():
            w = sum(c for f, c in us if f in open_)
            if w > 0:
                residual[p] -= best * w
                if residual[p] <= full_at[p]:
                    full.append(p)
        stopped = {f for p in full for f in data_users.get(p, ()) if f in open_}
        if any(f in open_ and f not in stopped for p in full for f, _ in ack_users.get(p, ())):
            return None
        open_ -= stopped
    return rate


def max_min_holds(data_users: dict, ack_users: dict, first_hop: dict, flows) -> bool:
    """Whether packets without end-to-end CC share the ports as max-min does. Their senders
    split each NIC port's capacity equally after its ACKs (round robin: the rates ``first_hop``
    computes over the first hops alone) and an NVSwitch port serves its arrivals first in,
    first out, so max-min holds when no NVSwitch port is overloaded at the first-hop rates, or
    when the flows into an overloaded one arrive at equal rates, each alone on its NIC port, and
    nothing else crosses it (they then get equal shares, as max-min gives them, and no other
    flow's packets or ACKs wait in the queue they build)."""
    for p in set(data_users) | set(ack_users):
        if not p.node.is_switch:
            continue
        into = data_users.get(p, [])
        acks = ack_users.get(p, [])
        load = sum(first_hop[f] for f in into) + sum(first_hop[f] * c for f, c in acks)
        if load <= p.rate_bps / 8 / PS_PER_S * (1 + 1e-9):
            continue
        if not into or acks or any(len(data_users[flows[f].data_ports[0]]) != 1 for f in into):
            return False
        lo, hi = min(first_hop[f] for f in into), max(first_hop[f] for f in into)
        if hi - lo > 1e-9 * hi:
            return False
    return True
