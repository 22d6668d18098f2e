# Cython's augmenting .pxd: dispatch.py stays the model and the pure-Python fallback. Rules: every
# attribute is declared here; integer fields that only add and compare are C 64-bit; anything whose
# products could pass 2^63, or that mixes with floats, stays a Python object so that both paths
# compute the same bits.
import cython

from pwormhole.engine.events cimport Handler, Lead
from pwormhole.net.device cimport Port
from pwormhole.net.host cimport Host, HostPort
from pwormhole.net.switch cimport Switch

cdef int EV_ARRIVE_HOST, EV_ARRIVE_SWITCH, EV_FLOW_START, EV_NIC_WAKE, EV_NOTIFY, EV_OP_DONE
cdef int EV_OP_START, EV_TIMER, EV_TX_DONE, EV_WIRE, EV_MODEL, N_EVENT_KINDS


cdef class DagLead(Lead):
    cdef public list start_ps, end_ps, flow_end_ps
    cdef public dict remote_children

    @cython.locals(best=cython.longlong)
    cpdef long long lead_ps(self, long long kind, target, arg) except *


cdef class NetHandler(Handler):
    cdef public int kind

    @cython.locals(port=Port, sw=Switch, host=Host, hp=HostPort)
    cpdef handle(self, target, arg, long long t_ps)
