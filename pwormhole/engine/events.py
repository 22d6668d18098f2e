# cython: boundscheck=False, wraparound=False
"""The pending events of one logical process, popped in ``(t_ps, key)`` order.

An event is ``(t_ps, key, kind, target, arg)``; keys are unique (docs/design.md invariant 2),
so the order is that of ``(t_ps, key)`` and any correct priority queue pops the same
sequence. Two queues with one interface (``push``, ``pop``, ``next_time``, ``horizon``, ``run``,
``events``, ``replace``, ``take``, ``len``; :func:`run_quiet` runs either window by window):

* :class:`HeapqQueue`, the pure-Python engine's: ``heapq`` on event tuples;
* :class:`ArrayQueue`, the compiled engine's (:mod:`pwormhole.compiled`): a 4-ary heap of
  ``(t_ps, key, slot)`` in a C array, the kind, target and argument of each event in its
  slot, so that pushing takes C integers and sifting compares them without Python objects.

``EventQueue`` is the one this engine uses. Tests pop both against each other.
"""

from __future__ import annotations

from array import array
from heapq import heapify, heappop, heappush
from typing import TYPE_CHECKING

INF_PS = 1 << 62  # "nothing pending": no event in a queue, no planned wake


class Handler:
    """The handler of one event kind as an object, ``handle(target, arg, t_ps)``: compiled,
    :meth:`ArrayQueue.run` calls it in C with the time unboxed. This one calls ``method(target,
    arg, t_ps)``; subclasses call typed code first. A handler table may also hold plain
    functions ``f(target, arg, t_ps)``; a Handler is callable as one."""

    __slots__ = ("method",)

    def __init__(self, method) -> None:
        self.method = method

    def handle(self, target, arg, t_ps: int) -> None:
        self.method(target, arg, t_ps)

    def __call__(self, target, arg, t_ps: int) -> None:
        self.handle(target, arg, t_ps)


class EventFilter:
    """Which pending events a queue's ``take`` removes: those ``owns(kind, target, arg)`` holds
    for (a subclass says; compiled, the queue calls it in C). This one owns none."""

    __slots__ = ()

    def owns(self, kind: int, target, arg) -> bool:
        return False


class Lead:
    """A lower bound, per pending event, on how long after its time it can lead to an event the
    window loop must stop for (one another LP or the boundary hook sees): ``lead_ps(kind, target,
    arg)``, in ps, ``>= 0``, at most ``INF_PS`` (never). A model says (a subclass; compiled, the queue
    calls it in C); this one says 0 for every event."""

    __slots__ = ()

    def lead_ps(self, kind: int, target, arg) -> int:
        return 0


class HeapqQueue:
    """``heapq`` on event tuples."""

    __slots__ = ("heap", "last_ps")

    def __init__(self, events=()):
        self.heap: list[tuple] = list(events)
        heapify(self.heap)
        self.last_ps = -1  # time of the last event run (-1: none yet)

    def push(self, t_ps: int, key: int, kind: int, target, arg) -> None:
        heappush(self.heap, (t_ps, key, kind, target, arg))

    def pop(self) -> tuple:
        """Remove and return the first event."""
        return heappop(self.heap)

    def next_time(self) -> int:
        """Time of the first event, or ``INF_PS``."""
        return self.heap[0][0] if self.heap else INF_PS

    def horizon(self, lead: Lead) -> int:
        """The earliest ``t_ps + lead.lead_ps(event)`` of the pending events (``INF_PS``: none); a
        subtree of the heap whose root is not earlier than the best so far is passed over."""
        heap = self.heap
        best = INF_PS
        stack = [0] if heap else []
        while stack:
            i = stack.pop()
            ev = heap[i]
            if ev[0] >= best:
                continue
            x = ev[0] + lead.lead_ps(ev[2], ev[3], ev[4])
            if x < best:
                best = x
            j = 2 * i + 1
            if j < len(heap):
                stack.append(j)
                if j + 1 < len(heap):
                    stack.append(j + 1)
        return best if best < INF_PS else INF_PS

    def __len__(self) -> int:
        return len(self.heap)

    def events(self) -> list[tuple]:
        """The pending events (a copy, in no particular order)."""
        return list(self.heap)

    def replace(self, events) -> None:
        """Make ``events`` the pending events."""
        self.heap[:] = list(events)
        heapify(self.heap)

    def take(self, owner: EventFilter) -> list[tuple]:
        """Remove the pending events ``owner`` owns and return them (in no particular order)."""
        if owner is None:
            raise TypeError("take needs an EventFilter")
        out: list[tuple] = []
        keep: list[tuple] = []
        for ev in self.heap:
            (out if owner.owns(ev[2], ev[3], ev[4]) else keep).append(ev)
        if out:
            self.heap[:] = keep
            heapify(self.heap)
        return out

    def run(self, end_ps: int, handlers: tuple) -> int:
        """The hot loop: pop and handle every event with ``t < end_ps``; returns how many."""
        heap = self.heap
        n = 0
        t = -1
        while heap and heap[0][0] < end_ps:
            t, _, kind, target, arg = heappop(heap)
            handlers[kind](target, arg, t)
            n += 1
        if n:
            self.last_ps = t
        return n


class ArrayQueue:
    """A 4-ary heap of ``(t_ps, key, slot)`` entries in one int64 array ``heap`` (entry ``i`` at
    ``3i``, ``3i + 1``, ``3i + 2``; its children are entries ``4i + 1`` to ``4i + 4``, side by side
    in memory, and the tree is half as deep as a binary one); slot ``s`` holds an event's
    ``kinds[s]``, ``targets[s]``, ``args[s]``; ``free`` lists the unused slots. Capacities double
    as needed. The arrays are read through ``self`` (compiled: no reference counting of a local view)."""

    __slots__ = ("heap", "kinds", "free", "targets", "args", "n", "n_free", "cap", "last_ps")

    def __init__(self, events=()):
        self.last_ps = -1  # time of the last event run (-1: none yet)
        self.n = 0
        self.cap = 0
        self.n_free = 0
        self.heap = array("q")
        self.kinds = array("q")
        self.free = array("q")
        self.targets: list = []
        self.args: list = []
        for ev in events:
            self.push(ev[0], ev[1], ev[2], ev[3], ev[4])

    def _grow(self) -> None:
        """Double the capacity (new arrays: a compiled view of the old ones cannot resize them)."""
        old = self.cap
        cap = old * 2 if old else 64
        self.heap = _grown(self.heap, 3 * self.n, 3 * cap)
        self.kinds = _grown(self.kinds, old, cap)
        self.free = _grown(self.free, self.n_free, cap)
        self.targets.extend([None] * (cap - old))
        self.args.extend([None] * (cap - old))
        free = self.free
        n_free = self.n_free
        for s in range(cap - 1, old - 1, -1):
            free[n_free] = s
            n_free += 1
        self.n_free = n_free
        self.cap = cap

    def push(self, t_ps: int, key: int, kind: int, target, arg) -> None:
        if self.n_free == 0:
            self._grow()
        self.n_free -= 1
        slot = self.free[self.n_free]
        self.kinds[slot] = kind
        self.targets[slot] = target
        self.args[slot] = arg
        pos = self.n
        self.n = pos + 1
        self._sift_up(pos, t_ps, key, slot)

    def _sift_up(self, pos: int, t_ps: int, key: int, slot: int) -> None:
        """Put ``(t_ps, key, slot)`` at entry ``pos`` or above it, moving larger parents down."""
        while pos > 0:
            parent = (pos - 1) >> 2
            i = 3 * parent
            pt = self.heap[i]
            if t_ps < pt or (t_ps == pt and key < self.heap[i + 1]):
                j = 3 * pos
                self.heap[j] = pt
                self.heap[j + 1] = self.heap[i + 1]
                self.heap[j + 2] = self.heap[i + 2]
                pos = parent
            else:
                break
        j = 3 * pos
        self.heap[j] = t_ps
        self.heap[j + 1] = key
        self.heap[j + 2] = slot

    def _remove_first(self) -> None:
        """Drop the first entry: the last one sifts down from the root."""
        n = self.n - 1
        self.n = n
        if n == 0:
            return
        self._sift_down(0, self.heap[3 * n], self.heap[3 * n + 1], self.heap[3 * n + 2])

    def _sift_down(self, pos: int, t_ps: int, key: int, slot: int) -> None:
        """Put ``(t_ps, key, slot)`` at entry ``pos`` or below it, moving smaller children up
        (entries ``pos`` to ``n - 1`` below it are a heap)."""
        n = self.n
        while True:
            child = 4 * pos + 1
            if child >= n:
                break
            end = child + 4 if child + 4 < n else n
            best = child
            bt = self.heap[3 * child]
            bk = self.heap[3 * child + 1]
            child += 1
            while child < end:  # the smallest of the children
                ct = self.heap[3 * child]
                if ct < bt or (ct == bt and self.heap[3 * child + 1] < bk):
                    best = child
                    bt = ct
                    bk = self.heap[3 * child + 1]
                child += 1
            if bt < t_ps or (bt == t_ps and bk < key):
                j = 3 * pos
                self.heap[j] = bt
                self.heap[j + 1] = bk
                self.heap[j + 2] = self.heap[3 * best + 2]
                pos = best
            else:
                break
        j = 3 * pos
        self.heap[j] = t_ps
        self.heap[j + 1] = key
        self.heap[j + 2] = slot

    def pop(self) -> tuple:
        """Remove and return the first event."""
        if self.n == 0:
            raise IndexError("pop from an empty event queue")
        slot = self.heap[2]
        ev = (self.heap[0], self.heap[1], self.kinds[slot], self.targets[slot], self.args[slot])
        self._release(slot)
        self._remove_first()
        return ev

    def _release(self, slot: int) -> None:
        self.targets[slot] = None
        self.args[slot] = None
        self.free[self.n_free] = slot
        self.n_free += 1

    def next_time(self) -> int:
        """Time of the first event, or ``INF_PS``."""
        return self.heap[0] if self.n else INF_PS

    def horizon(self, lead: Lead) -> int:
        """The earliest ``t_ps + lead.lead_ps(event)`` of the pending events (``INF_PS``: none): the
        first entry, and when its lead is not 0, every entry earlier than the best so far."""
        if self.n == 0:
            return INF_PS
        t = self.heap[0]
        slot = self.heap[2]
        best = t + lead.lead_ps(self.kinds[slot], self.targets[slot], self.args[slot])
        if best == t:
            return t
        for i in range(1, self.n):
            t = self.heap[3 * i]
            if t < best:
                slot = self.heap[3 * i + 2]
                x = t + lead.lead_ps(self.kinds[slot], self.targets[slot], self.args[slot])
                if x < best:
                    best = x
        return best if best < INF_PS else INF_PS

    def __len__(self) -> int:
        return self.n

    def events(self) -> list[tuple]:
        """The pending events (a copy, in no particular order)."""
        out = []
        for i in range(self.n):
            slot = self.heap[3 * i + 2]
            out.append((self.heap[3 * i], self.heap[3 * i + 1], self.kinds[slot], self.targets[slot], self.args[slot]))
        return out

    def replace(self, events) -> None:
        """Make ``events`` the pending events."""
        events = list(events)
        while self.n:
            self._release(self.heap[3 * self.n - 1])
            self.n -= 1
        for ev in events:
            self.push(ev[0], ev[1], ev[2], ev[3], ev[4])

    def take(self, owner: EventFilter) -> list[tuple]:
        """Remove the pending events ``owner`` owns and return them (in no particular order):
        one pass over the entries, the kept ones moved down in place, then the heap remade
        (Floyd's, bottom-up); no tuple is made for a kept event."""
        if owner is None:  # (compiled, a None owner would not be caught)
            raise TypeError("take needs an EventFilter")
        out = []
        j = 0
        for i in range(self.n):
            slot = self.heap[3 * i + 2]
            if owner.owns(self.kinds[slot], self.targets[slot], self.args[slot]):
                out.append((self.heap[3 * i], self.heap[3 * i + 1], self.kinds[slot], self.targets[slot],
                            self.args[slot]))
                self._release(slot)
            else:
                if j != i:
                    self.heap[3 * j] = self.heap[3 * i]
                    self.heap[3 * j + 1] = self.heap[3 * i + 1]
                    self.heap[3 * j + 2] = slot
                j += 1
        if j != self.n:
            self.n = j
            for pos in range((j - 2) // 4, -1, -1):  # every entry with a child, the last first
                self._sift_down(pos, self.heap[3 * pos], self.heap[3 * pos + 1], self.heap[3 * pos + 2])
        return out

    def run(self, end_ps: int, handlers: tuple) -> int:
        """The hot loop: pop and handle every event with ``t < end_ps``; returns how many."""
        n = 0
        last = -1
        while self.n:
            t = self.heap[0]
            if t >= end_ps:
                break
            slot = self.heap[2]
            kind = self.kinds[slot]
            target = self.targets[slot]
            arg = self.args[slot]
            self._release(slot)
            self._remove_first()
            last = t
            h = handlers[kind]
            if isinstance(h, Handler):
                hd = h
                hd.handle(target, arg, t)
            else:
                h(target, arg, t)
            n += 1
        if n:
            self.last_ps = last
        return n


def run_quiet(queue: EventQueue, end_ps: int, handlers: tuple, lead: Lead, window_ps: int, limit_ps: int,
              logs: tuple, progress: list) -> None:
    """After a window ending at ``end_ps``: run ``queue``'s next windows as the window loop
    (:mod:`pwormhole.sync.windows`) would, each to the grid line (a multiple of ``window_ps``) after
    the horizon (one grid cell when no event leads to one), while every list in ``logs`` is empty and
    a window ends before ``limit_ps``. ``progress`` is ``[end of the last window run, windows run, events
    run]`` after each window (so also when a handler raises)."""
    windows = 0
    n = 0
    while queue.next_time() < INF_PS:
        for log in logs:
            if log:
                return
        t = queue.horizon(lead)
        if t >= INF_PS:
            t = queue.next_time()
        t = (t // window_ps + 1) * window_ps
        if t >= limit_ps:
            return
        n += queue.run(t, handlers)
        windows += 1
        progress[0] = t
        progress[1] = windows
        progress[2] = n


def _grown(a, n: int, cap: int):
    """A new array of ``cap`` int64 (zeros) starting with ``a[:n]``."""
    b = array("q", bytes(8 * cap))
    view = b
    for i in range(n):
        view[i] = a[i]
    return b


COMPILED = not __file__.endswith(".py")  # this module was built by Cython
if TYPE_CHECKING:
    EventQueue = HeapqQueue  # the interface both share
else:
    EventQueue = ArrayQueue if COMPILED else HeapqQueue
