"""Event kinds to handlers (:func:`handler_table`), and how soon a DAG run's events lead to
others (:class:`DagLead`): the table the event loop calls ``handler(target, arg, t_ps)`` from.
"""

from __future__ import annotations

from ..engine.events import INF_PS, Handler, Lead
from .device import Port
from .host import Host, HostPort
from .packet import (
    EV_ARRIVE_HOST,
    EV_ARRIVE_SWITCH,
    EV_FLOW_START,
    EV_MODEL,
    EV_NIC_WAKE,
    EV_NOTIFY,
    EV_OP_DONE,
    EV_OP_START,
    EV_TIMER,
    EV_TX_DONE,
    EV_WIRE,
    N_EVENT_KINDS,
)
from .switch import Switch


class DagLead(Lead):
    """The leads (:class:`~pwormhole.engine.events.Lead`) of a DAG run's events, from
    :meth:`~pwormhole.net.dagrun.DagRuntime.leads`: an op's start (``EV_OP_START``) or end
    (``EV_OP_DONE``), a notification (its children's starts), a flow model's event (the model's
    ``lead_ps(flow_end_ps)``: the ends of the flows it carries); 0 for packets, QP timers and
    flow starts."""

    __slots__ = ("start_ps", "end_ps", "flow_end_ps", "remote_children")

    def __init__(self, start_ps: list, end_ps: list, flow_end_ps: list, remote_children: dict) -> None:
        self.start_ps = start_ps
        self.end_ps = end_ps
        self.flow_end_ps = flow_end_ps
        self.remote_children = remote_children

    def lead_ps(self, kind: int, target, arg) -> int:
        if kind == EV_OP_START:
            return self.start_ps[arg]
        if kind == EV_OP_DONE:
            return self.end_ps[arg]
        if kind == EV_MODEL:
            return target.lead_ps(self.flow_end_ps)
        if kind == EV_NOTIFY:
            best = INF_PS
            for c in self.remote_children[(arg, target.node_id)]:
                if self.start_ps[c] < best:
                    best = self.start_ps[c]
            return best
        return 0


class NetHandler(Handler):
    """The handler of one event kind of the packet model: compiled, the event loop calls
    the typed port or node in C (the time unboxed, no Python call per event); ``method``
    (the unbound method) handles the rarer kinds."""

    __slots__ = ("kind",)

    def __init__(self, kind: int, method) -> None:
        super().__init__(method)
        self.kind = kind

    def handle(self, target, arg, t_ps: int) -> None:
        kind = self.kind
        if kind == EV_WIRE:
            port = target
            port.on_wire(arg, t_ps)
        elif kind == EV_TX_DONE:
            port = target
            port.on_tx_done(arg, t_ps)
        elif kind == EV_ARRIVE_SWITCH:
            sw = target
            sw.on_arrive(arg, t_ps)
        elif kind == EV_ARRIVE_HOST:
            host = target
            host.on_arrive(arg, t_ps)
        elif kind == EV_NIC_WAKE:
            hp = target
            hp.on_wake(arg, t_ps)
        elif kind == EV_OP_START:
            host = target
            host.on_op_start(arg, t_ps)
        elif kind == EV_FLOW_START:
            host = target
            host.on_flow_start(arg, t_ps)
        elif kind == EV_OP_DONE:
            host = target
            host.on_op_done(arg, t_ps)
        elif kind == EV_NOTIFY:
            host = target
            host.on_notify(arg, t_ps)
        elif kind == EV_TIMER:
            host = target
            host.on_timer(arg, t_ps)
        else:
            self.method(target, arg, t_ps)


COMPILED = not __file__.endswith(".py")  # this module was built by Cython


def handler_table(objects: bool = COMPILED) -> tuple:
    """Handlers indexed by event kind (``pwormhole.net.packet``), called ``handler(target, arg, t_ps)``:
    :class:`NetHandler` objects if ``objects`` (the compiled engine's default), else the unbound
    methods (the pure engine's: a NetHandler would add a Python call per event there)."""
    table: list = [None] * N_EVENT_KINDS
    for kind, cls, name in (
        (EV_ARRIVE_HOST, Host, "on_arrive"), (EV_ARRIVE_SWITCH, Switch, "on_arrive"), (EV_TX_DONE, Port, "on_tx_done"),
        (EV_NIC_WAKE, HostPort, "on_wake"), (EV_FLOW_START, Host, "on_flow_start"), (EV_TIMER, Host, "on_timer"),
        (EV_OP_START, Host, "on_op_start"), (EV_OP_DONE, Host, "on_op_done"), (EV_NOTIFY, Host, "on_notify"),
        (EV_WIRE, Port, "on_wire"),
    ):
        method = getattr(cls, name)  # the unbound method, as Python calls it (compiled: its descriptor)
        table[kind] = NetHandler(kind, method) if objects else method
    return tuple(table)
