# C types for codec.py when it is compiled (codec.py stays the model and the pure-Python fallback).
import cython
from pwormhole.engine.events cimport ArrayQueue, Lead
from pwormhole.net.packet cimport Packet, new_packet

cdef Py_ssize_t ROW, HOP


@cython.locals(n=cython.Py_ssize_t, n_hops=cython.Py_ssize_t, i=cython.Py_ssize_t, j=cython.Py_ssize_t,
               b=cython.Py_ssize_t, r=cython.longlong[:], h=cython.longlong[:], pkt=Packet, ev=tuple, int_hops=list,
               hop=tuple)
cpdef tuple pack_events(list evs)


@cython.locals(ev=tuple, t_ps=cython.longlong, reach_ps=cython.longlong)
cpdef tuple earliest(list evs, long long t_min_ps, long long horizon_ps, Lead lead)


@cython.locals(n=cython.Py_ssize_t, i=cython.Py_ssize_t, b=cython.Py_ssize_t, j=cython.Py_ssize_t,
               n_hops=cython.longlong, r=cython.longlong[:], h=cython.longlong[:], pkt=Packet, int_hops=list,
               aq=ArrayQueue)
cpdef unpack_events(rows, hops, list others, list nodes, heap)
