# parts.py compiled as it is, but for what runs at every sampling boundary or flow start: the flow
# table's records, the ports and the samples read by C calls (groups.pxd, device.pxd, snapshot.pxd).
import cython

from pwormhole.accel.groups cimport FlowState
from pwormhole.net.device cimport Port
from pwormhole.net.snapshot cimport QPSnapshot


@cython.locals(last=QPSnapshot, first=QPSnapshot, n=cython.Py_ssize_t, dt=cython.longlong, gp=cython.double,
               rate=cython.double)
cpdef double flow_rate_bps(FlowState fs, Py_ssize_t samples)


@cython.locals(fs=FlowState, load=cython.double)
cpdef double port_load_bps(p, dict port_flows, dict flows, dict of, dict part_load, Py_ssize_t samples)


@cython.locals(limit=cython.double)
cpdef bint any_loaded(list watch, dict port_flows, dict flows, dict of, dict part_load, Py_ssize_t samples)


@cython.locals(p=Port, line=cython.double)
cpdef mark_changed(FlowState fs, set seen, dict changed_ps, long long t)
