# C types for _migrate_consumer.py when Cython compiles it (kwire/_compiled.py): the consumer-protocol replay
# is a C subclass of the loop's Replay (kwire/pipeline/_migrate_loop.pxd), its hooks C overrides of the loop's.
cimport cython

# (as other names: the module imports the classes themselves under theirs)
from kwire.group._consumer_coordinator cimport _Coordinator as CoordinatorC
from kwire.group._consumer_member cimport ConsumerProtocolMember as MemberC
from kwire.pipeline._migrate_loop cimport Member, Replay


cdef class ConsumerReplay(Replay):
    cdef public object coordinator_config, topic_ids, deadlines_seen

    cpdef make_machine(self, key, index, topic_names)
    cpdef after_coordinator(self, double t)
    cpdef send(self, Member m, out, double t)
    @cython.locals(coordinator=CoordinatorC)
    cpdef deliver(self, Member m, token, request, double t)
    @cython.locals(coordinator=CoordinatorC)
    cpdef tick(self, double t)
    cpdef fenced(self, events)
    cpdef leave(self, Member m, double t)
    @cython.locals(coordinator=CoordinatorC)
    cpdef bint settled(self)
    cpdef bint steady(self, Member m)
    @cython.locals(m=Member, machine=MemberC, coordinator=CoordinatorC)
    cpdef bint all_steady(self)
