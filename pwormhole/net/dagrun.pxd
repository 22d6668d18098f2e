# Cython's augmenting .pxd: dagrun.py stays the model and the pure-Python fallback. Op ids and
# hosts are C integers; times stay within 0..INF_PS (2^62), so their sums are checked before adding.
import cython


@cython.locals(n=Py_ssize_t, c=Py_ssize_t, d=Py_ssize_t, h=cython.longlong, ds=list, ends=list, cs=list,
               srcs=dict, others=dict)
cpdef tuple children_tables(list deps, list host, list end_of)


@cython.locals(n=Py_ssize_t, op=Py_ssize_t, c=Py_ssize_t, e=cython.longlong, s=cython.longlong,
               a=cython.longlong, k=cython.longlong, inf=cython.longlong, compute=cython.longlong,
               flow=cython.longlong, start=list, end=list, ends=tuple, srcs=tuple)
cpdef tuple op_leads(list kind, list arg, list at_end, list at_src, list remote, model_fids)
