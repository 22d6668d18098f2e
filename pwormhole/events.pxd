# C types for events.py when it is compiled (events.py stays the pure-Python fallback).
import cython

cpdef sift_push(list heap, tuple ev)
@cython.locals(pos=cython.Py_ssize_t, child=cython.Py_ssize_t, right=cython.Py_ssize_t, end=cython.Py_ssize_t,
               ta=cython.longlong, tb=cython.longlong, a=tuple, b=tuple, last=tuple, top=tuple)
cpdef tuple sift_pop(list heap)
@cython.locals(parent_pos=cython.Py_ssize_t, t=cython.longlong, k=cython.longlong, pt=cython.longlong, parent=tuple)
cdef inline int _sift_up(list heap, Py_ssize_t pos, tuple ev) except -1
