"""SIGTERM and SIGINT under MPI: every rank stops at the same window boundary.

A rank that leaves the sequence of collectives alone leaves the others waiting
in their next collective forever. So under MPI the signal handlers only record
the signal (:func:`pending`); the window loop (:mod:`pwormhole.sync.mpi`)
sends it to every rank in the window's exchange, and at that boundary every
rank raises the same exception (:func:`exception_for`; SIGTERM wins over
SIGINT). The end-of-run reductions and rank 0's writing then run as after a
normal end, and every rank exits with 128 + the signal.

A watchdog thread, woken by the signal itself (``signal.set_wakeup_fd``: also
while the main thread waits inside a collective, where Python handlers cannot
run), gives up when that agreed stop has not come ``grace_s`` seconds after the
signal (a rank stuck in a long computation or in its setup): it calls
``give_up(signum)``, which writes what rank 0 has and ends every rank.
"""

from __future__ import annotations

import os
import select
import signal
import threading
import time
from contextlib import contextmanager

from ..errors import Terminated

GRACE_RANK0_S = 4.0  # rank 0 gives up first, so it writes before another rank's abort ends it
GRACE_PEER_S = 6.0

_signum = 0  # the signal recorded (0: none)
_settled = threading.Event()  # the ranks agreed to stop, or left the window loop together
_armed = threading.Event()  # the watchdog knows what to do (arm), or has nothing to do (stop_recording)
_give_up = None  # give_up(signum), from arm
_grace_s = GRACE_PEER_S
_partial_writer = None  # rank 0's writer of what it has, for the watchdog
_recording = False


def _record(signum, frame=None) -> None:
    global _signum
    if signum in (signal.SIGTERM, signal.SIGINT) and signum > _signum:
        _signum = signum


_defer_depth = 0  # > 0 inside deferred_signals()
_deferred = 0  # a signal that arrived inside it (0: none)


def raise_or_defer(signum, frame=None) -> None:
    """The SIGTERM and SIGINT handler of a single process: raise at once (:func:`exception_for`),
    or at the end of a :func:`deferred_signals` block."""
    global _deferred
    if _defer_depth:
        _deferred = max(_deferred, signum)
        return
    raise exception_for(signum)


@contextmanager
def deferred_signals():
    """A block that a signal's exception must not split (a batch counted and written): the
    exception of a SIGTERM or SIGINT that arrives inside it is raised when it ends. (A thread's
    signal mask would not do: the signal may be delivered to another thread, e.g. BLAS's.)"""
    global _defer_depth, _deferred
    _defer_depth += 1
    try:
        yield
    finally:
        _defer_depth -= 1
        if not _defer_depth and _deferred:
            signum, _deferred = _deferred, 0
            raise exception_for(signum)


def pending() -> int:
    """The signal this process received (0: none)."""
    return _signum


def exception_for(signum: int) -> BaseException:
    """What a run stopped by ``signum`` raises: Terminated (SIGTERM) or KeyboardInterrupt (SIGINT)."""
    return Terminated() if signum == signal.SIGTERM else KeyboardInterrupt()


def record_signals() -> bool:
    """Record SIGTERM and SIGINT instead of raising (main thread only; False elsewhere)."""
    global _recording
    try:
        signal.signal(signal.SIGTERM, _record)
        signal.signal(signal.SIGINT, _record)
    except ValueError:
        return False
    r, w = os.pipe()
    os.set_blocking(w, False)
    signal.set_wakeup_fd(w, warn_on_full_buffer=False)
    _recording = True
    threading.Thread(target=_watch, args=(r,), daemon=True, name="pwormhole-stop-watchdog").start()
    return True


def stop_recording(on_sigterm) -> None:
    """Back to raising handlers (a run that turned out not to use MPI); raises a signal already recorded."""
    global _recording
    if not _recording:
        return
    _recording = False
    signal.signal(signal.SIGTERM, on_sigterm)
    signal.signal(signal.SIGINT, raise_or_defer)
    signal.set_wakeup_fd(-1)
    _settled.set()
    _armed.set()
    if _signum:
        raise exception_for(_signum)


def arm(give_up, rank: int) -> None:
    """Let the watchdog end the job with ``give_up(signum)`` when a signal is not agreed on in time."""
    global _give_up, _grace_s
    _give_up = give_up
    _grace_s = GRACE_RANK0_S if rank == 0 else GRACE_PEER_S
    _armed.set()


def settle() -> None:
    """Every rank knows how the run ends (agreed stop, or the loop left together): the watchdog stands down."""
    _settled.set()


def set_partial_writer(fn) -> None:
    """``fn(signum, reason)`` writes what rank 0 has when the watchdog gives up (None: nothing to write)."""
    global _partial_writer
    _partial_writer = fn


def write_partial(signum: int, reason: str) -> None:
    if _partial_writer is not None:
        _partial_writer(signum, reason)


def _watch(rfd: int) -> None:
    deadline = None
    while not _settled.is_set():
        wait = None if deadline is None else max(0.0, deadline - time.monotonic())
        ready, _, _ = select.select([rfd], [], [], wait)
        if ready:
            for signum in os.read(rfd, 64):
                _record(signum)
            if _signum and deadline is None:
                _armed.wait()
                deadline = time.monotonic() + _grace_s
        elif deadline is not None and time.monotonic() >= deadline:
            if not _settled.is_set() and _give_up is not None:
                _give_up(_signum)
            return
