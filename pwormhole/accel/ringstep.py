"""Lock-step ring steps carried without packets: a ring's steps as one object.

A ring reduce-scatter or all-gather whose steps each run alone on their routes (the
distributed optimizer's) repeats one step N-1 times: each step starts on the route of the step
before it, as that step ends, among the same flows (the ring's own). Two such steps on a route
that ran as packets, each handed its predecessor's steady state (:mod:`.successor`, "after
end") and each taking the same time from its start to its last byte received and to its last
ACK (within :data:`~.config.RING_TEMPLATE_TOLERANCE`), make the route's template. A later flow of
the same size on that route is then carried by this model, with no QP and no packets, when it
meets what its template met: only ring members (flows handed over so, or carried) cross its ports,
and no flow's data crosses its data ports but its predecessor's on its route, near that one's end
(another ring on the same route halves its rate, as a ZeRO-3 reduce-scatter beside a re-gather
does). Its last byte reaches the destination and its last ACK the source at the template's offsets
from its start, where the DAG's next step starts as it would after packets. Its bytes reach the
link monitors at its end, not the ports' byte counters (HPCC's INT txBytes).

A flow that starts on a carried flow's ports and is not a ring member hands the carried flow back
to packets at the next boundary, unless its last byte has arrived: its QP opens there with the
bytes the template had acknowledged by then, its FCT counted from its own start (as the NVLink rate
model hands over). A link failure hands back the same way every carried flow still to deliver.

Same answer on any LP or rank count: the decision at a start reads only what the last boundary
left (templates, the flow table); the source logs the start (its LP's flow-start log, so the
boundary comes) and keys the last ACK's event; every rank learns the carried starts and the ring
members' receipts at the next boundary (Wormhole's report), where the destination's owner keys
and queues the last byte's event and every rank registers the flow, and releases it when its
completion is exchanged.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

from ..net.packet import EV_MODEL
from ..units import serialization_ps
from .config import RING_TEMPLATE_TOLERANCE


class Template(NamedTuple):
    """A route's ring step: its payload, and from its start to its last byte received and to its last ACK."""

    size_bytes: int
    rx_ps: int
    fct_ps: int


class Carried(NamedTuple):
    """A flow the model carries: its start, its template and the ports it crosses (data and ACKs)."""

    start_ps: int
    template: Template
    ports: tuple


class RingEnd:
    """The target of the model's events at one host (an event names the node whose LP runs it)."""

    __slots__ = ("node_id", "model")

    def __init__(self, node_id: int, model: RingSteps) -> None:
        self.node_id = node_id
        self.model = model

    def on_event(self, arg, t: int) -> None:
        self.model.on_event(arg, t)

    def lead_ps(self, _flow_end_ps) -> int:
        return 0  # (its DAG children may start at once)


def call_on_event(target, arg, t: int) -> None:
    """The pure engine's ``EV_MODEL`` handler when several models share the kind."""
    target.on_event(arg, t)


def push(host, t: int, end: RingEnd, arg) -> None:
    """An event of the model at ``t`` in ``host``'s heap, keyed by ``host``'s counter."""
    key = host.kbase + host.seq
    host.seq += 1
    host.heap.push(t, key, EV_MODEL, end, arg)


class RingSteps:
    """The model and its templates. ``on``: HPCC runs with successors and a DAG; ``fids``: the flows
    it may carry (NIC flows), each given to it as its flow model at its source if that is local
    (``lps``: this process's LPs).

    Counters: ``carried_flows`` (flows carried, to their end or handed back), ``handed_back``,
    ``carried_bytes`` (payload of the flows carried to their end)."""

    def __init__(self, net, lps, fids, on: bool, pure_handler, window_ps: int) -> None:
        self.on = on and net.dag_rt is not None
        self.net = net
        self.nodes = net.nodes
        self.flows = net.flows
        self.mtu = net.cfg.packet_payload_bytes
        self.window_ps = window_ps
        self.templates: dict = {}  # route -> Template (two agreeing packet steps)
        self.last: dict = {}  # route -> Template of its last packet step handed over after end
        self.carried: dict[int, Carried] = {}  # registered at the boundary after the start, on every rank
        self.on_port: dict = {}  # port -> ids of the carried flows crossing it
        self.started: list = []  # (flow id, start_ps) carried from a local source since the last boundary
        self.fct_start: dict = {}  # flow id -> its FCT's start, for a local source's flow held behind another
        self.received_local: dict = {}  # flow id -> when its last byte arrived at a local host (the hosts write it)
        self.received_ps: dict = {}  # ring members' receipts, every rank's (from the reports)
        self.routes: dict = {}  # flow id -> (data ports, priority group)
        self.ends: dict = {}  # local host id -> RingEnd
        self.carried_flows = self.handed_back = self.carried_bytes = 0
        self.on_carried: Callable[[dict, int, int], None] | None = None  # monitors' hook: port -> bytes, t0_ps, d_ps
        # set by the boundary hook: whether flow fid, starting at t with a template, meets what the template met
        self.fits: Callable[[int, int, Template], bool] = lambda _fid, _t, _tpl: False
        if not self.on:
            return
        for lp in lps:
            for nd in lp.nodes:
                if not nd.is_switch:
                    nd.rx_done_ps = self.received_local
                    self.ends[nd.node_id] = RingEnd(nd.node_id, self)
            lp.set_handler(EV_MODEL, pure_handler)
        for fid in sorted(fids):
            if self.flows[fid].src in self.ends:
                net.set_flow_model(fid, self)

    def route(self, fid: int) -> tuple:
        r = self.routes.get(fid)
        if r is None:
            r = self.routes[fid] = (tuple(self.net.path_of(fid)), self.flows[fid].pg)
        return r

    def ports(self, fid: int) -> tuple:
        """The ports flow ``fid`` crosses, data then ACKs, once each."""
        return tuple(dict.fromkeys(list(self.net.path_of(fid)) + list(self.net.path_of(fid, acks=True))))

    # -- at a flow's start (in the event loop; reads only what the last boundary left) ---------
    def start(self, host, fid: int, t: int, start_ps: int) -> None:
        """Flow ``fid`` starts at ``t`` on ``host``: carried when its route has a template of its
        size and it meets what the template met (:attr:`fits`), else by a QP; its FCT counts from
        ``start_ps`` (earlier when it queued behind another flow of its connection)."""
        tpl = self.templates.get(self.route(fid)) if self.templates else None  # (no route looked up before any)
        flow = self.flows[fid]
        if tpl is None or tpl.size_bytes != flow.size_bytes or not self.fits(fid, t, tpl):
            self.routes.pop(fid, None)  # (a QP from here on)
            host.open_qp(fid, t, start_ps, 0)
            return
        if start_ps != t:
            self.fct_start[fid] = start_ps
        self.started.append((fid, t))
        host.flow_start_log.append(fid)  # (the boundary after it must come)
        host.model_sent(flow.size_bytes)
        host.model_sends_until(fid, t + self.sent_offset_ps(fid, tpl))  # (a flow queued behind it starts then)
        push(host, t + tpl.fct_ps, self.ends[flow.src], ("ack", fid))

    def sent_offset_ps(self, fid: int, tpl: Template) -> int:
        """When a carried flow's last byte leaves its source, from its start: its last byte's
        arrival less, on each link of its route, the delay and the last packet's serialization (a
        lock-step ring's packets do not queue)."""
        ports = self.route(fid)[0]
        size, mtu = self.flows[fid].size_bytes, self.mtu
        last_wire = size - (-(-size // mtu) - 1) * mtu + ports[0].hdr_bytes
        return max(0, tpl.rx_ps - sum(p.delay_ps + serialization_ps(last_wire, p.rate_bps) for p in ports))

    def sent_ps(self, fid: int) -> int:
        """When carried flow ``fid``'s last byte leaves its source."""
        c = self.carried[fid]
        return c.start_ps + self.sent_offset_ps(fid, c.template)

    def on_event(self, arg, t: int) -> None:
        what, fid = arg
        c = self.carried.get(fid)
        if c is None:
            return  # handed back to packets
        flow = self.flows[fid]
        if what == "recv":
            self.nodes[flow.dst].model_delivered(fid, flow.size_bytes, t, True)
        else:
            self.nodes[flow.src].flow_completed(fid, t, self.fct_start.pop(fid, c.start_ps))

    # -- at boundaries ------------------------------------------------------------------------
    def local_report(self, flows: dict) -> tuple:
        """``(carried starts, ring members' receipts)`` of this process since the last boundary."""
        started, self.started = self.started, []
        got = self.received_local
        receipts = [(f, t) for f, t in got.items() if f in flows and flows[f].ring] if got else []
        got.clear()
        return started, receipts

    def boundary(self, t: int, report, heap_of: dict) -> list:
        """Every rank's carried starts and receipts, at boundary ``t``: the receipts are kept, the
        starts registered and their last byte's events queued where the destination is local
        (``heap_of``); a start that meets a flow carried from the same window (which it could not
        see) goes back to packets here (returned, their ids)."""
        started, receipts = report
        self.received_ps.update(receipts)
        for fid, start_ps in started:
            tpl = self.templates[self.route(fid)]  # (what the start read: templates change later on here)
            ports = self.ports(fid)
            self.carried[fid] = Carried(start_ps, tpl, ports)
            for p in ports:
                self.on_port.setdefault(p, set()).add(fid)
            self.carried_flows += 1
            dst = self.flows[fid].dst
            if dst in heap_of:
                push(self.nodes[dst], start_ps + tpl.rx_ps, self.ends[dst], ("recv", fid))
        handed = [fid for fid, start_ps in started
                  if fid in self.carried and not self.fits(fid, start_ps, self.carried[fid].template)]
        for fid in handed:
            self.hand_back(fid, t, heap_of)
        return handed

    def finished(self, fid: int, t: int) -> None:
        """Carried flow ``fid`` completed (its last ACK) at ``t``: its bytes count on its ports."""
        c = self._release(fid)
        self.carried_bytes += self.flows[fid].size_bytes
        self._count_bytes(fid, c.start_ps, t)

    def _release(self, fid: int) -> Carried:
        c = self.carried.pop(fid)
        self.routes.pop(fid, None)
        for p in c.ports:
            on = self.on_port[p]
            on.discard(fid)
            if not on:
                del self.on_port[p]
        return c

    def _count_bytes(self, fid: int, start_ps: int, t: int) -> None:
        """The bytes a carried flow put on its ports, data and ACKs, at its end, for the link
        monitors (spread over its lifetime). Not on the ports' byte counters: those are HPCC's INT
        txBytes, and a step's whole bytes landing at once would read as a huge rate to the packet
        flows crossing the port then (they fell to HPCC's minimum rate in the two-ring test)."""
        flow = self.flows[fid]
        host = self.nodes[flow.src]
        packets = -(-flow.size_bytes // self.mtu)
        ack_every = max(1, -(-max(1, self.net.cfg.l2_ack_interval) // self.mtu))
        moved: dict = {}
        for p in self.net.path_of(fid):
            moved[p] = moved.get(p, 0) + flow.size_bytes + packets * host.hdr_bytes
        for p in self.net.path_of(fid, acks=True):
            moved[p] = moved.get(p, 0) + -(-packets // ack_every) * host.ack_bytes
        if self.on_carried is not None:
            self.on_carried(moved, start_ps, t - start_ps)

    def learned(self, fs, finish_ps: int, start_ps: int) -> None:
        """A ring member ``fs`` (handed over after end, never joined) finished as packets: its step
        is its route's template once the step before it agreed."""
        rx = self.received_ps.pop(fs.fid, None)
        if rx is None:
            return
        route = (tuple(fs.data_ports), fs.pg)
        now = Template(fs.size, rx - start_ps, finish_ps - start_ps)
        before = self.last.get(route)
        self.last[route] = now
        if before is not None and before.size_bytes == now.size_bytes and \
                abs(before.fct_ps - now.fct_ps) <= RING_TEMPLATE_TOLERANCE * now.fct_ps and \
                abs(before.rx_ps - now.rx_ps) <= RING_TEMPLATE_TOLERANCE * now.rx_ps:
            self.templates[route] = now

    def forget(self, fs) -> None:
        """Ring member ``fs`` was cut short (a flow joined its group, a link failed): its route
        starts over."""
        route = (tuple(fs.data_ports), fs.pg)
        self.last.pop(route, None)
        self.templates.pop(route, None)

    def crossed(self, ports, t: int, local, behind: int = -1) -> list:
        """A flow that is not a ring member started on ``ports``: the carried flows crossing them go
        back to packets at boundary ``t`` (returned, their ids), but those whose last byte has
        arrived (only their last ACK is left to come), and the one it queued ``behind`` on its
        connection once that one's last byte has left (its tail is ahead of the new flow's data)."""
        hit = sorted({f for p in ports for f in self.on_port.get(p, ()) if self.undelivered(f, t)
                      and not (f == behind and t >= self.sent_ps(f))})
        for fid in hit:
            self.hand_back(fid, t, local)
        return hit

    def undelivered(self, fid: int, t: int) -> bool:
        """Whether carried flow ``fid``'s last byte is still to arrive at ``t``."""
        c = self.carried[fid]
        return t < c.start_ps + c.template.rx_ps

    def rerouted(self) -> None:
        """A link failed: no template holds on the new routes, and the routes change."""
        self.templates.clear()
        self.last.clear()
        self.routes.clear()

    def hand_back(self, fid: int, t: int, local) -> None:
        """Carried flow ``fid`` goes on as packets from boundary ``t`` (its source and destination
        changed where they are ``local``). It sends from ``t`` plus its start's offset in its
        window: flows handed back at one boundary keep their phases (started at one instant, HPCC
        flows cut each other to the minimum rate: 5% on their FCTs in the two-ring test)."""
        self.templates.pop(self.route(fid), None)
        c = self._release(fid)
        flow = self.flows[fid]
        mtu = self.mtu
        elapsed = max(0, t - c.start_ps)
        done = min(flow.size_bytes * elapsed // c.template.fct_ps, flow.size_bytes - mtu) // mtu * mtu
        if flow.dst in local:
            self.nodes[flow.dst].advance_rx(fid, done, t, 0)
        if flow.src in local:
            src = self.nodes[flow.src]
            src.model_sent(-flow.size_bytes)  # (counted as sent at its start; the QP counts ``done`` and what it sends)
            src.open_qp(fid, t, self.fct_start.pop(fid, c.start_ps), done, t + c.start_ps % self.window_ps)
        self.handed_back += 1

    def settle(self, t: int, local) -> None:
        """A run stopped at ``t`` with flows carried: those whose last byte had not arrived count the
        bytes their template had delivered by then as sent and delivered (their sources counted
        them all at the start), where they are ``local``."""
        for fid in sorted(self.carried):
            c = self.carried[fid]
            if t >= c.start_ps + c.template.rx_ps:
                continue
            flow = self.flows[fid]
            part = flow.size_bytes * max(0, t - c.start_ps) // c.template.rx_ps // self.mtu * self.mtu
            if flow.src in local:
                self.nodes[flow.src].model_sent(part - flow.size_bytes)
            if flow.dst in local:
                self.nodes[flow.dst].model_delivered(fid, part, t, False)

    def stats(self) -> dict:
        return {"ring_steps_carried": self.carried_flows, "ring_steps_handed_back": self.handed_back,
                "ring_steps_bytes": self.carried_bytes, "ring_steps_on": self.on}
