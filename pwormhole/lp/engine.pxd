# C types for engine.py's hot loop when it is compiled (engine.py stays the pure-Python fallback).
import cython

from pwormhole.events cimport sift_pop as pop_event, sift_push as push_event  # C calls

@cython.locals(n=cython.longlong, t=cython.longlong, ev=tuple)
cpdef long long run_events(list heap, long long end_ps, tuple handlers) except -1
