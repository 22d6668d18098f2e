# C types for events.py when it is compiled (events.py stays the pure-Python fallback).
import cython



cdef class Handler:
    cdef public object method

    cpdef handle(self, target, arg, long long t_ps)


cdef class EventFilter:
    cpdef bint owns(self, long long kind, target, arg)


cdef class Lead:
    cpdef long long lead_ps(self, long long kind, target, arg) except *


@cython.final
cdef class ArrayQueue:
    cdef long long[::1] heap, kinds, free
    cdef list targets, args
    cdef public Py_ssize_t n, n_free, cap
    cdef public long long last_ps

    @cython.locals(old=cython.Py_ssize_t, cap=cython.Py_ssize_t, s=cython.Py_ssize_t,
                   n_free=cython.Py_ssize_t, free="long long[::1]")
    cdef void _grow(self) except *
    @cython.locals(slot=cython.longlong, pos=cython.Py_ssize_t)
    cpdef push(self, long long t_ps, long long key, long long kind, target, arg)
    @cython.locals(parent=cython.Py_ssize_t, pt=cython.longlong, i=cython.Py_ssize_t, j=cython.Py_ssize_t)
    cdef void _sift_up(self, Py_ssize_t pos, long long t_ps, long long key, long long slot) noexcept
    @cython.locals(n=cython.Py_ssize_t)
    cdef void _remove_first(self) noexcept
    @cython.locals(n=cython.Py_ssize_t, child=cython.Py_ssize_t, end=cython.Py_ssize_t, best=cython.Py_ssize_t,
                   j=cython.Py_ssize_t, ct=cython.longlong, bt=cython.longlong, bk=cython.longlong)
    cdef inline void _sift_down(self, Py_ssize_t pos, long long t_ps, long long key, long long slot) noexcept
    @cython.locals(i=cython.Py_ssize_t, j=cython.Py_ssize_t, pos=cython.Py_ssize_t, slot=cython.longlong,
                   out=list)
    cpdef list take(self, EventFilter owner)
    @cython.locals(slot=cython.longlong)
    cpdef tuple pop(self)
    cdef void _release(self, long long slot) noexcept
    cpdef long long next_time(self)
    @cython.locals(t=cython.longlong, slot=cython.longlong, best=cython.longlong, x=cython.longlong,
                   i=cython.Py_ssize_t)
    cpdef long long horizon(self, Lead lead) except *
    @cython.locals(n=cython.Py_ssize_t, t=cython.longlong, slot=cython.longlong, kind=cython.longlong, hd=Handler,
                   last=cython.longlong)
    cpdef Py_ssize_t run(self, long long end_ps, tuple handlers) except -1


@cython.locals(windows=cython.Py_ssize_t, n=cython.Py_ssize_t, t=cython.longlong)
cpdef void run_quiet(ArrayQueue queue, long long end_ps, tuple handlers, Lead lead, long long window_ps,
                     long long limit_ps, tuple logs, list progress) except *


@cython.locals(i=cython.Py_ssize_t, view="long long[::1]")
cdef _grown(long long[::1] a, Py_ssize_t n, Py_ssize_t cap)
