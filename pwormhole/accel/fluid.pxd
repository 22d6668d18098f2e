# C types for fluid.py when it is compiled (fluid.py stays the model and the pure-Python
# fallback; the rules of net/device.pxd). Rates and bytes left are C doubles: +, -, * and
# comparisons give the bits Python floats give (setup.py compiles without fused multiply-add);
# the one floor division (_reschedule) is done on Python floats.
import cython

from pwormhole.engine.events cimport Handler
from pwormhole.net.device cimport Port
from pwormhole.net.host cimport Host
from pwormhole.net.switch cimport Switch

cdef long long _PS_PER_S


cdef long long _tx_ps(long long size_bytes, long long rate_bps) except *


@cython.final
cdef class FluidFlow:
    cdef public double left_wire_bytes, rate
    cdef public long long wire_bytes, ack_total_bytes, counted_bytes, start_ps
    cdef public tuple data_ports, ack_ports


@cython.final
cdef class FluidDomain:
    cdef public Switch nvs
    cdef public object net, handed_ps, on_carried
    cdef public long long mtu, hdr_bytes, ack_bytes, ack_every, last_ps, version
    cdef public dict active, start_ps, ack_ports, rate_memo, fct_start
    cdef public object flows  # (a sequence: the caller's flow list)
    cdef public list nodes
    cdef public bint dirty, nic_cc
    cdef public set shared, packet_fids

    @cython.locals(up=Port, down=Port, ack_up=Port, ack_down=Port, packets=cython.longlong, wire=cython.longlong,
                   acks=cython.longlong)
    cpdef start(self, Host host, long long fid, long long t, long long start_ps)
    @cython.locals(st=FluidFlow, active=dict, done=list, acked=set)
    cpdef on_event(self, arg, long long t)
    @cython.locals(best=cython.longlong)
    cpdef long long lead_ps(self, list flow_end_ps) except *
    @cython.locals(nvs=Switch)
    cdef _post(self, long long t, arg)
    @cython.locals(d=cython.longlong, st=FluidFlow)
    cpdef _advance(self, long long t)
    @cython.locals(st=FluidFlow, up=Port, down=Port, packets=cython.longlong, last_wire=cython.longlong,
                   at_nvs=cython.longlong, t_recv=cython.longlong)
    cdef _last_byte_sent(self, long long fid, long long t, set acked)
    @cython.locals(ack_up=Port, ack_down=Port, up=Port, down=Port, st=FluidFlow, data_wire=cython.longlong,
                   a=cython.longlong, first_out=cython.longlong, busy_until=cython.longlong)
    cdef long long _ack_arrival(self, long long fid, long long t) except *
    @cython.locals(st=FluidFlow, rate=object, left_wire_bytes=object)
    cpdef _reschedule(self, long long t)


cdef class FluidEvents(Handler):
    @cython.locals(dom=FluidDomain)
    cpdef handle(self, target, arg, long long t_ps)
