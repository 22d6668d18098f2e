# sampling.py compiled as it is, but for taking and storing samples: the host's QP table,
# SendQP.snapshot and the flow table's records read by C calls (host.pxd, groups.pxd).
import cython

from pwormhole.accel.groups cimport FlowState, Group
from pwormhole.net.host cimport Host, SendQP


@cython.locals(qp=SendQP, host=Host, fs=FlowState, nodes=list, samples=list)
cpdef list take_samples(long long t, due_flows, dict flows, net, local)


@cython.locals(fs=FlowState, g=Group)
cpdef store_samples(samples, dict flows, dict groups, keep, keep_backed_off)
