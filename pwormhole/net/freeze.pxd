# Cython's augmenting .pxd: freeze.py stays the model and the pure-Python fallback. Rules: every
# attribute is declared here; integer fields that only add and compare are C 64-bit; anything whose
# products could pass 2^63, or that mixes with floats, stays a Python object so that both paths
# compute the same bits.
import cython

from pwormhole.engine.events cimport EventFilter
from pwormhole.net cimport cc
from pwormhole.net.device cimport Node, Port
from pwormhole.net.packet cimport Packet

cdef int EV_ARRIVE_HOST, EV_ARRIVE_SWITCH, EV_NIC_WAKE, EV_TIMER, EV_TX_DONE, EV_WIRE, T_PFC


cdef class GroupEvents(EventFilter):
    cdef public object ports, flows

    @cython.locals(pkt=Packet)
    cpdef bint owns(self, long long kind, target, arg)


cdef class FlowTimers(EventFilter):
    cdef public object flows

    cpdef bint owns(self, long long kind, target, arg)


cpdef list take_timers(heap, flows)


@cython.locals(owner=GroupEvents, out=list, kind=cython.int, pkt=Packet, port=Port)
cpdef list take_events(heap, ports, flows)


@cython.locals(node=Node, port=Port, out=list)
cpdef list route_path(nodes, long long src, long long dst, long long h)


@cython.locals(pkt=Packet, fid=cython.longlong, hops=list, seen_int=set)
cpdef shift_packets(list packets, dict advance_bytes, long long d_ps, bint stamped, dict hop_adv_bytes)
