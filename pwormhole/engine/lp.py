"""One logical process: its nodes and their event queue.

The hot loop (:meth:`pwormhole.engine.events.EventQueue.run`) pops events ``(t_ps, key, kind,
target, arg)`` in ``(t_ps, key)`` order and calls ``handlers[kind](target, arg, t_ps)``;
keys are unique (docs/design.md invariant 2). Nothing else happens per event: no logging,
no objects, no acceleration branches. Everything else happens at window boundaries,
driven by :mod:`pwormhole.sync`.
"""

from __future__ import annotations

from .events import INF_PS, EventQueue, Lead, run_quiet


def next_due_ps(event_ps: int, wake_ps: int) -> int:
    """Where the window loop must run to next: the earliest event ``event_ps``, or the
    end of the window before a wake planned at boundary ``wake_ps`` (a wake at boundary
    W is taken when the window ending at W closes). ``INF_PS`` in both: nothing pending."""
    if wake_ps < INF_PS and wake_ps - 1 < event_ps:
        return wake_ps - 1
    return event_ps


class LogicalProcess:
    """The nodes of one LP and their events.

    Attributes:
        lp_id: index of this LP (its rank under MPI).
        nodes: the node objects it owns.
        heap: its :class:`~pwormhole.engine.events.EventQueue` (shared by reference with its nodes and ports).
        outboxes: ``peer lp id -> list of events`` for events crossing to that LP.
        handlers: the handler table, indexed by event kind (given by the network model).
        finished: ``(flow id, finish_ps, start_ps)`` of flows completed since the last boundary.
        pfc_log: PFC records of its nodes since the last boundary.
        op_log: ``(op id, start_ps, end_ps)`` of DAG compute ops and marks ended since the last boundary.
        flow_start_log: flow ids whose QP started since the last boundary.
        events: events processed so far.
        lead: the :class:`~pwormhole.engine.events.Lead` of its events (:meth:`horizon_ps`; set by the runner).
        quiet_end_ps: the end of the last window :meth:`run_quiet` ran whole (a run interrupted in one
            of them stopped there).
    """

    def __init__(self, lp_id: int, nodes, initial_events, owner: list[int], handlers: tuple):
        self.lp_id = lp_id
        self.nodes = nodes
        self.heap = EventQueue([ev for ev in initial_events if owner[ev[3].node_id] == lp_id])
        self.outboxes: dict[int, list[tuple]] = {}
        self.finished: list[tuple[int, int, int]] = []  # drained at boundaries
        self.op_log: list[tuple[int, int, int]] = []
        self.flow_start_log: list[int] = []
        self.pfc_log: list[tuple] = []  # PFC frames received, drained at boundaries
        self.events = 0
        self.handlers = handlers
        self.lead = Lead()
        self.quiet_end_ps = 0  # end of the last window :meth:`run_quiet` ran whole
        remote_boxes: dict[int, list[tuple]] = {}
        for node_id, peer_lp in enumerate(owner):
            if peer_lp != lp_id:
                remote_boxes[node_id] = self.outboxes.setdefault(peer_lp, [])
        for node in nodes:
            node.attach(self.heap, remote_boxes, self.pfc_log, self.finished, self.op_log, self.flow_start_log)

    def set_handler(self, kind: int, handler) -> None:
        """Handle events of ``kind`` with ``handler(target, arg, t_ps)`` (a flow model's own kind)."""
        handlers = list(self.handlers)
        handlers[kind] = handler
        self.handlers = tuple(handlers)

    def extract(self, predicate) -> list:
        """Remove the pending events for which ``predicate(event)`` holds and return them
        (in heap order); the others stay pending."""
        out: list[tuple] = []
        keep: list[tuple] = []
        for ev in self.heap.events():
            (out if predicate(ev) else keep).append(ev)
        if out:
            self.heap.replace(keep)
        return out

    def reinsert(self, events, d_ps: int, retime=None) -> None:
        """Put extracted ``events`` back, ``d_ps`` later (``retime(event)``, if given and not
        None, is an event's new time instead); keys are kept, so ties break as before."""
        heap = self.heap
        for ev in events:
            t_ev = retime(ev) if retime is not None else None
            if t_ev is None:
                t_ev = ev[0] + d_ps
            heap.push(t_ev, ev[1], ev[2], ev[3], ev[4])

    def next_time(self) -> int:
        """Time of the earliest pending event, or ``INF_PS``."""
        return self.heap.next_time()

    def horizon_ps(self) -> int:
        """The earliest time one of its pending events can lead to an event another LP or the
        boundary hook sees (``t_ps + lead``; ``INF_PS``: none)."""
        return self.heap.horizon(self.lead)

    def run_until(self, end_ps: int) -> int:
        """Process every event with ``t < end_ps``; returns how many."""
        n = self.heap.run(end_ps, self.handlers)
        self.events += n
        return n

    def run_quiet(self, end_ps: int, window_ps: int, limit_ps: int) -> tuple[int, int]:
        """Run to ``end_ps``, then window by window (:func:`~pwormhole.engine.events.run_quiet`) while no
        record is made for the boundary (a completion, an op, a flow start, a PFC frame) and a window
        ends before ``limit_ps``; one LP alone. Returns ``(end of the last window run, windows run)``."""
        self.run_until(end_ps)
        progress = [end_ps, 0, 0]
        try:
            run_quiet(self.heap, end_ps, self.handlers, self.lead, window_ps, limit_ps,
                      (self.finished, self.op_log, self.flow_start_log, self.pfc_log), progress)
        finally:  # (a handler raised: the windows run whole still count)
            self.events += progress[2]
            self.quiet_end_ps = progress[0]
        return progress[0], progress[1] + 1

