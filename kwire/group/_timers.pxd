# C types for _timers.py when it is compiled (kwire/_compiled.py): the timers' maps as struct slots and
# their methods as C calls from a caller that holds a typed Timers (the coordinators).
cimport cython


@cython.final
cdef class Timers:
    cdef public list _heap
    cdef public dict _deadline, _payload, _entry
    cdef public object _seq, pushes

    cpdef schedule(self, key, deadline, payload=*)
    cpdef _push(self, key, deadline)
    cpdef cancel(self, key)
    cpdef scheduled(self, key)
    cpdef _settle_top(self)
    cpdef may_be_due(self, now)
    cpdef next_deadline(self)
    cpdef pop_due(self, now)
