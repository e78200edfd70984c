# C types for _classic_group.py when Cython compiles it (kwire/_compiled.py): a classic group's and member's
# fields are C slots, read at C speed by the rebalance handlers that know what they hold
# (kwire/group/_classic_rebalance.pxd), and the group's own rules are C calls.  Every field stays readable and
# settable from Python.
cimport cython


cdef class ClassicMember:
    cdef public object member_id, instance_id, client_id, client_host, rebalance_timeout_ms, session_timeout_ms
    cdef public object protocol_type, protocols, assignment, join, sync
    cdef public bint is_new

    cpdef metadata_for(self, name)


cdef class ClassicGroup:
    cdef public object group_id, state, previous_state, state_timestamp, protocol_type, protocol_name, leader_id
    cdef public object generation_id
    cdef public Py_ssize_t awaiting_join
    cdef public dict members, static_members, protocol_votes, rebalance_timeouts, parked_syncs
    cdef public set pending_join, pending_sync
    cdef public bint new_member_added

    cpdef to(self, target, now)
    cpdef rebalance_timeout_ms(self)
    cpdef bint all_joined(self)
    cpdef bint supports(self, protocol_type, names)
    cpdef validate_member(self, member_id, instance_id)
    @cython.locals(votes=dict, timeouts=dict)
    cpdef _count(self, ClassicMember member, Py_ssize_t sign)
    cpdef add(self, ClassicMember member)
    @cython.locals(member=ClassicMember)
    cpdef remove(self, member_id)
    cpdef update(self, ClassicMember member, protocols, rebalance_timeout_ms, session_timeout_ms, join)
    cpdef park_join(self, ClassicMember member, join)
