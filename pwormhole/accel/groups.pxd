# groups.py compiled as it is, but for its two record classes: C structs (an attribute read where a
# caller types them is a field read); untyped callers see the same attributes.

cdef class FlowState:
    cdef public object fid, src, dst, pg, size, ports, data_ports, data_hops, ack_ports, samples, group_cell
    cdef public object rtt_ps, path_rtt_ps, win_bytes, mtu, wire_bytes, line_rate_bps, start_ps, woke_ps
    cdef public object last_steady, ring, lag_bytes


cdef class Group:
    cdef public object gid, cell, flows, ports, formed_ps, newest_start_ps, max_start_ps, frozen, memo_checked
    cdef public object memo_key, memo_base, refill, next_check_ps, backoff_periods, unsettled, probe
