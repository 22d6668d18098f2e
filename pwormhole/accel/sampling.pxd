# sampling.py compiled as it is, but for the QP whose snapshot take_samples reads: a C call of
# host.pxd's SendQP.snapshot (the samples are the same Python tuples).
import cython

from pwormhole.net.host cimport SendQP


@cython.locals(qp=SendQP, samples=list)
cpdef list take_samples(t, due_flows, dict flows, net, local)
