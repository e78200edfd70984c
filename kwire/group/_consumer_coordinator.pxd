# C types for _consumer_coordinator.py when it is compiled (kwire/_compiled.py): the coordinator's fields as
# struct slots, and the groups, members and timers a heartbeat touches typed as their classes, so that their
# fields are read as slots and their methods called as C functions.  ConsumerGroupCoordinator itself stays a
# Python class (its classic members' mixin is one) over this C base.  reconcile and owned_map are called as
# C functions.
cimport cython

from kwire.group._consumer_group cimport ConsumerGroup, ConsumerGroupMember
from kwire.group._reconcile cimport owned_map, reconcile
from kwire.group._timers cimport Timers


cdef class _Coordinator:
    cdef public object config, _classic_convert, _classic_downgrade, _classic_lookup, _classic_remove
    cdef public object _groups, _topics, _new_member_id, assignments_computed, _last_assignor
    cdef public Timers _timers
    cdef public list _events
    cdef public dict _name_sets

    @cython.locals(group=ConsumerGroup, member=ConsumerGroupMember)
    cpdef heartbeat(self, req, version, now, client_id=*, client_host=*)
    cpdef tick(self, now)
    cpdef next_deadline(self)
    cpdef may_be_due(self, now)
    cpdef take_events(self)
    @cython.locals(group=ConsumerGroup)
    cpdef forget_group(self, group)
    cpdef _cancel_member_timers(self, group_id, member_id)
    @cython.locals(group=ConsumerGroup)
    cpdef group_state(self, group_id)
    cpdef _validate(self, req, epoch)
    @cython.locals(group=ConsumerGroup, member=ConsumerGroupMember, replaced=ConsumerGroupMember)
    cpdef _heartbeat(self, req, now, client_id, client_host)
    cpdef _check_no_classic_group(self, group_id, create, now=*)
    @cython.locals(group=ConsumerGroup, member=ConsumerGroupMember, holder=ConsumerGroupMember)
    cpdef _find_member(self, group, member_id, epoch, req)
    @cython.locals(group=ConsumerGroup, member=ConsumerGroupMember, replaced=ConsumerGroupMember, timers=Timers)
    cpdef _update(self, group, created, member, member_id, replaced, is_new, epoch, req, now, client_id,
                  client_host)
    cpdef _name_set(self, names)
    @cython.locals(group=ConsumerGroup, member=ConsumerGroupMember)
    cpdef _after_reconcile(self, group, member, now)
    @cython.locals(group=ConsumerGroup)
    cpdef _assignment_due(self, group, now)
    @cython.locals(group=ConsumerGroup)
    cpdef _defer_assignment(self, group)
    @cython.locals(group=ConsumerGroup)
    cpdef _compute_target(self, group, epoch, metadata, change=*)
    @cython.locals(group=ConsumerGroup)
    cpdef _install_target(self, group, epoch, target, now)
    @cython.locals(group=ConsumerGroup, member=ConsumerGroupMember)
    cpdef _leave(self, req, epoch)
    @cython.locals(group=ConsumerGroup)
    cpdef _fence(self, group, member_id, reason)
    @cython.locals(group=ConsumerGroup)
    cpdef _drop(self, group, member_id, reason)
    @cython.locals(group=ConsumerGroup)
    cpdef _emptied(self, group)
    @cython.locals(group=ConsumerGroup, member=ConsumerGroupMember)
    cpdef _fire_due(self, now)
