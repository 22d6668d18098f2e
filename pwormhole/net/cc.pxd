# C types for cc.py when it is compiled (cc.py stays the model and the pure-Python fallback);
# the rule of device.pxd: only sums and comparisons of integers in C, products as Python ints.
import cython

from pwormhole.net.device cimport ns3_tx_ps
from pwormhole.net.host cimport Host, SendQP
from pwormhole.net.packet cimport Packet

cdef int TM_ALPHA, TM_DECREASE, TM_RP


@cython.locals(old=cython.longlong, last=cython.longlong)
cpdef set_rate(SendQP qp, long long new_rate_bps)
cpdef dcqcn_on_cnp(SendQP qp, Host host, long long t_ps)
@cython.locals(line=cython.longlong, g=cython.double)
cpdef dcqcn_timer(SendQP qp, Host host, int kind, gen, long long t_ps)
cpdef long long dcqcn_rate_change_ps(SendQP qp, long long t_ps)
cpdef hpcc_on_ack(SendQP qp, Packet pkt, cfg)
cpdef assign_rate(SendQP qp, long long new_rate_bps)
cpdef timely_on_ack(SendQP qp, Packet pkt, cfg, long long t_ps)
@cython.locals(ack_seq=cython.longlong, nxt=cython.longlong)
cpdef dctcp_on_ack(SendQP qp, Packet pkt, cfg)
cpdef dctcp_after_skip(SendQP qp, long long b)
