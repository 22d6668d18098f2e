# Cython's augmenting .pxd: device.py stays the model and the pure-Python fallback. Rules: every
# attribute is declared here; integer fields that only add and compare are C 64-bit; anything whose
# products could pass 2^63, or that mixes with floats, stays a Python object so that both paths
# compute the same bits.
import cython

from pwormhole.engine.events cimport ArrayQueue  # the compiled EventQueue: push is a C call
from pwormhole.net.packet cimport Fifo, Packet

cdef long long PS_BITS, KEY_NODE_SHIFT
cdef int EV_TX_DONE, EV_WIRE, N_PRIORITIES
cdef unsigned long long MIX_HI, MIX_LO, LOW32

cdef class Node


@cython.locals(x=cython.ulonglong, xh=cython.ulonglong, xl=cython.ulonglong, lo=cython.ulonglong,
               mid1=cython.ulonglong, mid2=cython.ulonglong, r=cython.ulonglong, p_lo=cython.ulonglong,
               p_hi=cython.ulonglong)
cpdef unsigned long long ecmp_index(unsigned long long h, unsigned long long salt, unsigned long long n)
@cython.locals(d=cython.double, whole_s=cython.longlong, frac64=cython.ulonglong, frac_ns=cython.ulonglong)
cpdef long long ns3_tx_ps(long long size_bytes, long long rate_bps)


cdef class Port:
    cdef public Node node
    cdef public long long idx, rate_bps, delay_ps, peer_idx, tx_bytes, qbytes
    cdef public int arrive_kind
    cdef public Node peer
    cdef public list remote, paused
    cdef public ArrayQueue heap
    cdef public bint busy, up, ns3_time
    cdef public double error_rate
    cdef public Fifo wire

    @cython.locals(size=cython.longlong, tx_ps=cython.longlong, k=cython.longlong, node=Node,
                   arrive_ps=cython.longlong, wire=Fifo)
    cpdef transmit(self, Packet pkt, long long t)
    @cython.locals(nxt=Packet, wire=Fifo, pkt=Packet)
    cpdef on_wire(self, _arg, long long t)
    cpdef on_tx_done(self, _arg, long long t)
    cpdef kick(self, long long t)
    @cython.locals(node=Node)
    cpdef pause(self, int pg, bint on, long long t)


cdef class Node:
    cdef public long long node_id, kbase, seq, pfc_pauses_rx, lost, drops
    cdef public long long salt
    cdef public object rng, rng_seed, routes
    cdef public list ports, pfc_log
    cdef public ArrayQueue heap
    cdef public Port sole_port

    cpdef on_arrive(self, Packet pkt, long long t)
    cpdef pick_port(self, long long dst, long long h)
    cpdef double draw(self)
