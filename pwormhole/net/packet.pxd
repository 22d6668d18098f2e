# C types for packet.py when it is compiled (packet.py stays the model and the pure-Python
# fallback; the rule of nodes.pxd: integers that only add and compare are C 64-bit).
import cython

@cython.final
cdef class Packet:
    # narrow fields (ids, sizes and ports fit 32 bits): packets wait in queues and on wires by the
    # hundred thousand, and each one touched is likely a cache miss, so the smaller the better
    cdef public long long seq, arrive_ps, arrive_key, ecmp_hash, sent_ps
    cdef public list int_hops
    cdef public int fid, dst, src, size_bytes, payload_bytes, inport
    cdef public signed char kind, pg, pause
    cdef public bint ecn


@cython.locals(pkt=Packet)
cpdef Packet new_packet(int kind, long long fid, long long seq, long long size_bytes, long long payload_bytes,
                        int pg, long long dst, long long ecmp_hash, bint ecn, list int_hops, int pause, long long sent_ps,
                        long long src)


cdef long long FIFO_COMPACT


@cython.final
cdef class Fifo:
    cdef public list items
    cdef public Py_ssize_t head
    cdef public bint closed

    cpdef push(self, item)
    @cython.locals(items=list, head=cython.Py_ssize_t)
    cpdef pop(self)
    cpdef first(self)
    cpdef Py_ssize_t size(self)
