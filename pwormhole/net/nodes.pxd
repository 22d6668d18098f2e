# C types for nodes.py when it is compiled (Cython's augmenting .pxd: nodes.py stays the
# model and the pure-Python fallback). Rules: every attribute is declared here; integer
# fields that only add and compare are C 64-bit; anything whose products could pass 2^63,
# or that mixes with floats, stays a Python object so that both paths compute the same bits.
import cython

from pwormhole.events cimport ArrayQueue, EventFilter, Handler, Lead  # the compiled EventQueue: push is a C call
from pwormhole.net cimport cc  # the CC's QP timers: C calls (cc.pxd cimports this module's classes)
from pwormhole.net.packet cimport Fifo, Packet, new_packet

cdef long long PS_BITS, KEY_NODE_SHIFT, RESERVE_BYTES, RESUME_OFFSET_BYTES
cdef long long RX_EXPECTED, RX_MILESTONE, RX_NACK_TIMER_PS, RX_LAST_NACK, RX_SIZE
cdef int EV_ARRIVE_HOST, EV_ARRIVE_SWITCH, EV_FLOW_START, EV_NIC_WAKE, EV_NOTIFY, EV_OP_DONE
cdef int EV_OP_START, EV_TIMER, EV_TX_DONE, EV_WIRE, EV_MODEL, N_EVENT_KINDS, N_PRIORITIES, TM_RTO
cdef long long PFC_FRAME_BYTES
cdef int T_ACK, T_DATA, T_NACK, T_PFC

cdef class Node
cdef unsigned long long MIX_HI, MIX_LO, LOW32


@cython.locals(x=cython.ulonglong, xh=cython.ulonglong, xl=cython.ulonglong, lo=cython.ulonglong,
               mid1=cython.ulonglong, mid2=cython.ulonglong, r=cython.ulonglong, p_lo=cython.ulonglong,
               p_hi=cython.ulonglong)
cpdef unsigned long long ecmp_index(unsigned long long h, unsigned long long salt, unsigned long long n)
cdef class QueueWatch

cdef class GroupEvents(EventFilter):
    cdef public object ports, flows

    @cython.locals(pkt=Packet)
    cpdef bint owns(self, long long kind, target, arg)


cdef class DagLead(Lead):
    cdef public list start_ps, end_ps, flow_end_ps
    cdef public dict remote_children

    @cython.locals(best=cython.longlong)
    cpdef long long lead_ps(self, long long kind, target, arg) except *


@cython.locals(owner=GroupEvents, out=list, kind=cython.int, pkt=Packet, port=Port)
cpdef list take_events(heap, ports, flows)


@cython.locals(node=Node, port=Port, out=list)
cpdef list route_path(nodes, long long src, long long dst, long long h)


@cython.locals(pkt=Packet, fid=cython.longlong, hops=list, seen_int=set)
cpdef shift_packets(list packets, dict advance_bytes, long long d_ps, bint stamped, dict hop_adv_bytes)


cdef class Port:
    cdef public Node node
    cdef public long long idx, rate_bps, delay_ps, peer_idx, tx_bytes, qbytes
    cdef public int arrive_kind
    cdef public Node peer
    cdef public list remote, paused
    cdef public ArrayQueue heap
    cdef public bint busy, up
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
    cdef public bint alpha_cnp, decrease_cnp, first_cnp, rto_armed
    cdef public long long last_update_seq, cur_rate_bps, inc_stage, rto_una, una_ps
    cdef public list hops
    cdef public long long last_rtt_ps, ecn_cnt, batch_pkts, high_seq
    cdef public double rtt_diff_ps
    cdef public bint cwr

    @cython.locals(seq=cython.longlong, pay=cython.longlong, wire=cython.longlong, nxt=cython.longlong,
                   rate=cython.longlong, host=Host)
    cpdef Packet next_packet(self, long long t)


cdef class QueueWatch:
    cdef public long long qlen, since, start_ps, interval_ps, last_k
    cdef public dict hist

    @cython.locals(q=cython.longlong, i=cython.Py_ssize_t)
    cpdef changed(self, SwitchPort port, long long t)
    @cython.locals(start=cython.longlong, iv=cython.longlong, hi=cython.longlong, lo=cython.longlong,
                   b=cython.longlong)
    cpdef count(self, long long q, long long t)


cdef class Node:
    cdef public long long node_id, kbase, seq, pfc_pauses_rx, lost, drops
    cdef public long long salt
    cdef public object rng, routes
    cdef public list ports, pfc_log
    cdef public ArrayQueue heap
    cdef public Port sole_port

    cpdef on_arrive(self, Packet pkt, long long t)
    cpdef pick_port(self, long long dst, long long h)


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


cdef class Host(Node):
    cdef public object cfg, net, dag, flow_models
    cdef public bint hpcc, dcqcn, timely, dctcp, lossy
    cdef public long long hdr_bytes, ack_bytes, rto_ps, ack_interval, chunk, nack_interval_ps
    cdef public long long cnps_rx, nacks_tx, retx_bytes, bytes_delivered, bytes_sent, compute_free_ps
    cdef public double ewma_gain
    cdef public long long alpha_resume_interval_ps, rate_decrease_interval_ps
    cdef public dict sqp, parked, rx, flow_hash, op_start, remote_boxes
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
    cpdef on_flow_start(self, long long fid, long long t)
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


cdef class NetHandler(Handler):
    cdef public int kind

    @cython.locals(port=Port, sw=Switch, host=Host, hp=HostPort)
    cpdef handle(self, target, arg, long long t_ps)


