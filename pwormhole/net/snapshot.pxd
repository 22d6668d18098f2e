# snapshot.py compiled: a C struct of eight 64-bit integers that host.pxd's SendQP.snapshot fills
# without an argument tuple or boxed integers.

cdef class QPSnapshot:
    cdef readonly long long t_ps, cc_rate_bps, una_bytes, una_ps, sent_bytes, rate_change_ps, cnps, rate_bps

    cpdef tuple fields(self)
