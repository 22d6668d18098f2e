# Cython's augmenting .pxd: switch.py stays the model and the pure-Python fallback. Rules: every
# attribute is declared here; integer fields that only add and compare are C 64-bit; anything whose
# products could pass 2^63, or that mixes with floats, stays a Python object so that both paths
# compute the same bits.
import cython

from pwormhole.net.device cimport Node, Port, ecmp_index
from pwormhole.net.packet cimport Fifo, Packet, new_packet

cdef long long RESERVE_BYTES, RESUME_OFFSET_BYTES, PFC_FRAME_BYTES
cdef int N_PRIORITIES, T_DATA, T_PFC

cdef class Switch
cdef class QueueWatch


cdef class SwitchPort(Port):
    cdef public list qs, used_qs, pfc_sent
    cdef public long long[::1] in_bytes, hdrm_bytes, eg_bytes
    cdef public long long rr, headroom_bytes, kmin_bytes, kmax_bytes, used_mask
    cdef public int pfc_shift
    cdef public double pmax
    cdef public QueueWatch mon

    @cython.locals(qs=list, used=list, paused=list, n=cython.Py_ssize_t, i=cython.Py_ssize_t,
                   j=cython.Py_ssize_t, qi=cython.int, pkt=Packet, size=cython.longlong, sw=Switch,
                   inp=SwitchPort, from_hdrm=cython.longlong, rest=cython.longlong, shared=cython.longlong,
                   eg=cython.longlong, q=Fifo)
    cpdef kick(self, long long t)


cdef class DropPort(SwitchPort):
    pass


cdef class QueueWatch:
    cdef public long long qlen, since, start_ps, interval_ps, last_k
    cdef public dict hist

    @cython.locals(q=cython.longlong, i=cython.Py_ssize_t)
    cpdef changed(self, SwitchPort port, long long t)
    @cython.locals(start=cython.longlong, iv=cython.longlong, hi=cython.longlong, lo=cython.longlong,
                   b=cython.longlong)
    cpdef count(self, long long q, long long t)


cdef class Switch(Node):
    cdef public object cfg
    cdef public bint ecn, pfc, ack_high_prio
    cdef public long long buffer_bytes, shared_used, used_bytes, total_hdrm, total_rsrv, ecn_marks
    cdef public long long pfc_pauses_sent

    cpdef long long threshold(self, SwitchPort port)
    @cython.locals(typ=cython.int, routes=list, port=SwitchPort, qi=cython.int, size=cython.longlong,
                   inp=SwitchPort, in_b=cython.longlong, thr=cython.longlong, shared=cython.longlong,
                   new_b=cython.longlong, over=cython.longlong)
    cpdef on_arrive(self, Packet pkt, long long t)
    @cython.locals(shared=cython.longlong)
    cpdef check_resume(self, SwitchPort inp, int qi, long long t)
    cpdef send_pfc(self, SwitchPort port, int qi, bint pause, long long t)
