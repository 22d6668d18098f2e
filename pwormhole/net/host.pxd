# Cython's augmenting .pxd: host.py stays the model and the pure-Python fallback. Rules: every
# attribute is declared here; integer fields that only add and compare are C 64-bit; anything whose
# products could pass 2^63, or that mixes with floats, stays a Python object so that both paths
# compute the same bits.
import cython

from pwormhole.net cimport cc  # the CC's QP timers: C calls (cc.pxd cimports this module's classes)
from pwormhole.net.device cimport Node, Port, ns3_tx_ps
from pwormhole.net.packet cimport Fifo, Packet, new_packet
from pwormhole.net.snapshot cimport QPSnapshot

cdef long long PS_BITS
cdef long long RX_EXPECTED, RX_MILESTONE, RX_NACK_TIMER_PS, RX_LAST_NACK, RX_SIZE
cdef int EV_NIC_WAKE, EV_NOTIFY, EV_OP_DONE, EV_OP_START, EV_TIMER, TM_RTO
cdef int T_ACK, T_DATA, T_NACK, T_PFC

cdef class Host
cdef class SendQP


cdef class HostPort(Port):
    cdef public Fifo ctrl
    cdef public list qps
    cdef public long long rr, wake_ps, hdr_bytes, ack_bytes
    cdef public bint has_win, cc_off

    @cython.locals(qps=list, n=cython.Py_ssize_t, i=cython.Py_ssize_t, j=cython.Py_ssize_t,
                   start=cython.Py_ssize_t, qp=SendQP, nxt=cython.longlong, wait=cython.longlong,
                   paused=list, has_win=cython.bint, node=Node, ctrl=Fifo)
    cpdef kick(self, long long t)
    cpdef on_wake(self, _arg, long long t)


cdef class SendQP:
    cdef public object flow, hash, win_bytes, bdp_bytes, min_win_bytes
    cdef public long long fid, size, dst, snd_nxt, snd_una, max_sent, rate_bps, max_rate_bps
    cdef public long long next_avail_ps, last_pkt_bytes, cur_win, base_rtt_ps, start_ps, hdr_bytes, mtu
    cdef public int pg
    cdef public HostPort port
    cdef public Host host
    cdef public bint var_win, done, rate_bound, dcqcn, hpcc, timely, dctcp
    cdef public double alpha, u
    cdef public long long target_rate_bps, rp_stage, rp_gen, rp_due_ps, cnps_rx
    cdef public bint alpha_cnp, decrease_cnp, first_cnp, rto_armed, withdrawn
    cdef public long long last_update_seq, cur_rate_bps, inc_stage, rto_una, una_ps
    cdef public list hops
    cdef public long long last_rtt_ps, ecn_cnt, batch_pkts, high_seq
    cdef public double rtt_diff_ps
    cdef public bint cwr

    @cython.locals(seq=cython.longlong, pay=cython.longlong, wire=cython.longlong, nxt=cython.longlong,
                   rate=cython.longlong, host=Host)
    cpdef Packet next_packet(self, long long t)
    @cython.locals(s=QPSnapshot)
    cpdef QPSnapshot snapshot(self, long long t)


cdef class Host(Node):
    cdef public object cfg, net, dag, flow_models, rx_done_ps
    cdef public bint hpcc, dcqcn, timely, dctcp, lossy
    cdef public long long hdr_bytes, ack_bytes, rto_ps, ack_interval, chunk, nack_interval_ps
    cdef public long long cnps_rx, nacks_tx, retx_bytes, bytes_delivered, bytes_sent, compute_free_ps
    cdef public double ewma_gain
    cdef public long long alpha_resume_interval_ps, rate_decrease_interval_ps
    cdef public dict sqp, parked, rx, op_start, remote_boxes, fifo_parked, fifo_start, model_sending
    cdef public list flow_hash
    cdef public set fifo_waiting
    cdef public list finished, op_log, flow_start_log

    cpdef timer(self, long long t, qp, int kind, gen)
    @cython.locals(qp=SendQP, kind=cython.int)
    cpdef on_timer(self, tuple arg, long long t)
    cpdef on_arrive(self, Packet pkt, long long t)
    @cython.locals(rx=list, seq=cython.longlong, exp=cython.longlong, typ=cython.int, port=HostPort)
    cpdef receive_data(self, Packet pkt, long long t)
    @cython.locals(qp=SendQP, seq=cython.longlong, port=HostPort)
    cpdef receive_ack(self, Packet pkt, long long t)
    cpdef complete(self, SendQP qp, long long t)
    cpdef flow_completed(self, long long fid, long long t, long long start_ps)
    @cython.locals(start_ps=cython.longlong, before=cython.longlong)
    cpdef on_flow_start(self, long long fid, long long t)
    cpdef bint sending(self, long long fid, long long t)
    cpdef flow_sent(self, long long fid, long long t)
    cpdef hold(self, long long before, long long fid, long long start_ps, long long t)
    cpdef model_sends_until(self, long long fid, long long sent_ps)
    cpdef release_queued(self, long long fid, long long start_ps, long long at_ps)
    cpdef post(self, long long t, Node target, int kind, arg)
    @cython.locals(rem=list, c=cython.Py_ssize_t, n=cython.longlong)
    cpdef dag_satisfy(self, tuple children, long long t)
    @cython.locals(nb=cython.longlong, kind=cython.longlong, start=cython.longlong, end=cython.longlong)
    cpdef on_op_start(self, long long op, long long t)
    @cython.locals(h=cython.longlong, delay=cython.longlong)
    cpdef on_op_done(self, long long op, long long t)
    cpdef on_notify(self, long long op, long long t)
    @cython.locals(op=cython.longlong, h=cython.longlong, delay=cython.longlong)
    cpdef flow_received(self, long long fid, long long t)
