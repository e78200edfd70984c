# C types for _migrate_classic.py when Cython compiles it (kwire/_compiled.py): the classic replay is a C
# subclass of the loop's Replay (kwire/pipeline/_migrate_loop.pxd), its hooks C overrides of the loop's.
cimport cython

from kwire.pipeline._migrate_loop cimport Member, Replay


cdef class ClassicReplay(Replay):
    cdef public object assignors, counts, deadlines_seen

    cpdef after_coordinator(self, double t)
    cpdef make_machine(self, key, index, topic_names)
    cpdef send(self, Member m, out, double t)
    cpdef deliver(self, Member m, token, out, double t)
    cpdef tick(self, double t)
    cpdef route(self, replies, double t)
    cpdef silent_id(self, Member m)
    cpdef expelled(self)
    cpdef leave(self, Member m, double t)
    cpdef bint settled(self)
    cpdef bint steady(self, Member m)
    @cython.locals(m=Member, members=dict)
    cpdef bint all_steady(self)
