# C types for packet.py when it is compiled (packet.py stays the model and the pure-Python
# fallback; the rule of device.pxd: integers that only add and compare are C 64-bit).
import cython

@cython.final
cdef class Packet:
    cdef public int kind, pg, pause
    cdef public long long fid, seq, size_bytes, payload_bytes, dst, inport, sent_ps, src, arrive_ps, arrive_key
    cdef public long long ecmp_hash
    cdef public bint ecn
    cdef public list int_hops


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
