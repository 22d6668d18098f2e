"""The event heap's push and pop: ``heapq`` on tuples ``(t_ps, key, kind, target, arg)``.

Keys are unique (DESIGN.md invariant 2), so the order is that of ``(t_ps, key)``.
In the compiled engine (:mod:`pwormhole.compiled`) ``push_event``/``pop_event`` are
:func:`sift_push`/:func:`sift_pop`, ``heapq``'s own algorithm with ``(t_ps, key)``
compared as C integers: same comparisons, so the same heap layout and the same
order as ``heapq``, which the pure-Python engine uses.
"""

from __future__ import annotations

from heapq import heappop, heappush


def sift_push(heap: list, ev: tuple) -> None:
    """``heapq.heappush(heap, ev)``."""
    heap.append(ev)
    _sift_up(heap, len(heap) - 1, ev)


def sift_pop(heap: list) -> tuple:
    """``heapq.heappop(heap)``: the smaller child moves up to a leaf, then the last event sifts up."""
    last = heap.pop()
    if not heap:
        return last
    top = heap[0]
    end = len(heap)
    pos = 0
    child = 1
    while child < end:
        right = child + 1
        if right < end:
            a = heap[child]
            b = heap[right]
            ta = a[0]
            tb = b[0]
            if tb < ta or (tb == ta and b[1] < a[1]):  # heapq: the right child unless the left is smaller
                child = right
        heap[pos] = heap[child]
        pos = child
        child = 2 * pos + 1
    _sift_up(heap, pos, last)
    return top


def _sift_up(heap: list, pos: int, ev: tuple) -> None:
    """Put ``ev`` at ``pos`` or above it, moving larger parents down (heapq's ``_siftdown``)."""
    t = ev[0]
    k = ev[1]
    while pos > 0:
        parent_pos = (pos - 1) >> 1
        parent = heap[parent_pos]
        pt = parent[0]
        if t < pt or (t == pt and k < parent[1]):
            heap[pos] = parent
            pos = parent_pos
            continue
        break
    heap[pos] = ev


COMPILED = not __file__.endswith(".py")  # this module was built by Cython
push_event = sift_push if COMPILED else heappush
pop_event = sift_pop if COMPILED else heappop
