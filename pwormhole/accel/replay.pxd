# replay.py compiled as it is, but for due (every group not checked, at every sampling boundary):
# the flow table's records and the samples read by C calls (groups.pxd, snapshot.pxd).
import cython

from pwormhole.accel.groups cimport FlowState
from pwormhole.net.snapshot cimport QPSnapshot


@cython.locals(fs=FlowState, s=QPSnapshot, sampled=cython.bint, sent_all=cython.bint)
cpdef due(g, long long t, dict flows, bint hpcc, set rerouted, long long window_ps)
