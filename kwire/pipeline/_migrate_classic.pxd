# C types for _migrate_classic.py when Cython compiles it (kwire/_compiled.py): the classic replay is a C
# subclass of the loop's Replay (kwire/pipeline/_migrate_loop.pxd), its hooks C overrides of the loop's.
cimport cython

# (as other names: the module imports the classes themselves under theirs)
from kwire.group._coordinator cimport GroupCoordinator as CoordinatorC
from kwire.group._member cimport ConsumerMember as MemberC
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
    @cython.locals(coordinator=CoordinatorC)
    cpdef bint settled(self)
    cpdef bint steady(self, Member m)
    @cython.locals(m=Member, members=dict, coordinator=CoordinatorC, machine=MemberC)
    cpdef bint all_steady(self)
