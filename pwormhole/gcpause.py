"""Python's cyclic garbage collector, paused while a run builds and runs.

A run's set-up makes about a million objects (the DAG's ops and flows, the network's ports and
queue pairs, the hosts' tables) and its window loop millions of packets and events, all plain
lists, tuples and records that form no reference cycles; yet each of the collector's passes walks
the objects made so far (about 0.07 s of the default run's set-up, more while events run). The
cycles a run leaves (its network) are collected once the collector runs again.
"""

from __future__ import annotations

import gc
from contextlib import contextmanager


@contextmanager
def cyclic_gc_paused():
    """The collector off inside (nested pauses are fine), as it was after."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()
