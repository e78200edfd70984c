# C types for _migrate_ledger.py when Cython compiles it (kwire/_compiled.py): the replay loop calls the
# ledger on every membership change and every partition event, so its counters are C values and its
# methods C calls from a caller that knows it is a Ledger (kwire/pipeline/_migrate_loop.pxd).
cimport cython


cdef class Ledger:
    cdef public list counts, consumers, free, subscribers, acc, events, starts, stable, open
    cdef public dict owned_by
    cdef public Py_ssize_t unowned, current
    cdef public object last_t, unit_us

    @cython.locals(last=object)
    cpdef advance(self, double t)
    cpdef enter(self, Py_ssize_t rebalance, double t)
    @cython.locals(before=Py_ssize_t, k=Py_ssize_t, subscribers=list, free=list)
    cpdef subscribe(self, topics, double t, Py_ssize_t delta)
    @cython.locals(mine=set, consumers=list, free=list, subscribers=list, counts=list, owned=Py_ssize_t,
                   k=Py_ssize_t, p=Py_ssize_t, row=list)
    cpdef consume(self, member, tps, double t)
    @cython.locals(mine=set, consumers=list, free=list, subscribers=list, freed=Py_ssize_t, k=Py_ssize_t,
                   p=Py_ssize_t, row=list)
    cpdef release(self, member, tps, double t)
    cpdef settle(self, double t)
