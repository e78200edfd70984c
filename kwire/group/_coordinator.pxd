# C types for _coordinator.py when Cython compiles it (kwire/_compiled.py): GroupCoordinator is a C subclass of
# the classic handlers (kwire/group/_classic_rebalance.pxd), its consumer-protocol handlers a Python mixin
# beside them, so it keeps a __dict__ for the fields not declared here; the ones a request reads are C slots.
cimport cython

from kwire.group._classic_group cimport ClassicGroup
from kwire.group._classic_rebalance cimport ClassicRebalance


cdef class GroupCoordinator(ClassicRebalance):
    cdef dict __dict__
    cdef object __weakref__   # a public class: weak references as the Python class took them
    cdef public object _consumer, _consumer_may_be_due, _consumer_groups, _offsets
    cdef public dict _handlers, _classic_handlers
    cdef public bint _consumer_active

    cpdef next_deadline(self)
    cpdef group_state(self, group_id)
    cpdef bint has_member(self, group_id, member_id)
    @cython.locals(group=ClassicGroup)
    cpdef _fire_due(self, now)
    cpdef list _drain(self)
