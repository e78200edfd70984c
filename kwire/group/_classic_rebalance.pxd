# C types for _classic_rebalance.py when Cython compiles it (kwire/_compiled.py): the classic handlers are a
# C base class of GroupCoordinator (kwire/group/_coordinator.pxd) whose fields they read are C slots, and the
# steps of a JoinGroup, SyncGroup and Heartbeat are C calls on groups and members typed as what they are
# (kwire/group/_classic_group.pxd).
cimport cython

from kwire.group._classic_group cimport ClassicGroup, ClassicMember
from kwire.group._timers cimport Timers


# The handlers GroupCoordinator's dispatch tables hold (_join_group, _sync_group, _heartbeat, _leave_group) stay
# Python methods: the tables hold them bound, and what they call is C.
cdef class ClassicRebalance:
    cdef public object _groups, _new_member_id, _now_ms
    cdef public Timers _timers
    cdef public object initial_rebalance_delay_ms, min_session_timeout_ms, max_session_timeout_ms, max_group_size
    cdef public list _out

    @cython.locals(group=ClassicGroup)
    cpdef _join(self, req, ctx)
    @cython.locals(member=ClassicMember)
    cpdef _accept_joining_member(self, ClassicGroup group, member_id)
    cpdef _join_new_member(self, ClassicGroup group, req, ctx, parked, instance_id, rebalance_timeout, protocols)
    @cython.locals(member=ClassicMember)
    cpdef _join_existing_member(self, ClassicGroup group, req, ctx, parked, instance_id, rebalance_timeout,
                                protocols)
    @cython.locals(member=ClassicMember)
    cpdef _add_member(self, ClassicGroup group, member_id, instance_id, req, ctx, parked, rebalance_timeout,
                      protocols)
    @cython.locals(member=ClassicMember)
    cpdef _prepare_rebalance(self, ClassicGroup group, now)
    cpdef _maybe_complete_join(self, ClassicGroup group, now)
    @cython.locals(timers=Timers, leader=ClassicMember, member=ClassicMember, m=ClassicMember, out=list)
    cpdef _complete_join(self, ClassicGroup group, now)
    cpdef _synced(self, ClassicGroup group, member_id)
    @cython.locals(group=ClassicGroup, member=ClassicMember)
    cpdef _heartbeat_error(self, req, version, now)
    @cython.locals(member=ClassicMember)
    cpdef _leave_one(self, ClassicGroup group, member_id, instance_id)
    cpdef _arm_session(self, ClassicGroup group, member_id, deadline)
    cpdef _classic_timer(self, ClassicGroup group, key, payload, now)
    cpdef _join_timer(self, ClassicGroup group, initial, now)
    cpdef _sync_timer(self, ClassicGroup group, generation_id, now)
    @cython.locals(member=ClassicMember)
    cpdef _session_expired(self, ClassicGroup group, member_id, now)
    cpdef _forget(self, ClassicGroup group, member_id)
    cpdef _reply_join(self, tuple parked, response)
    cpdef _reply_sync(self, tuple parked, error, ClassicGroup group=*, assignment=*)
    cpdef _join_response(self, ClassicGroup group, ClassicMember member, version, with_members=*, leader=*,
                         skip_assignment=*)
