# C types for _consumer_group.py when it is compiled (kwire/_compiled.py): a group's and a member's fields as
# struct slots, read as such by the coordinator and the group's own methods (cimported by
# _consumer_coordinator.pxd).
cimport cython


cdef class ConsumerGroupMember:
    cdef public object member_id, instance_id, rack_id, client_id, client_host, subscribed_topic_names
    cdef public object server_assignor, rebalance_timeout_ms, member_epoch, previous_member_epoch, state
    cdef public object assigned, pending, classic

    cpdef copy_as(self, member_id)
    cpdef is_reconciled_to(self, epoch)


cdef class ConsumerGroup:
    cdef public object group_id, group_epoch, target_epoch
    cdef public dict members, static_members, target, partition_epochs
    cdef public object subscriptions, _subscription_keys, subscribed_names, subscription_metadata
    cdef public object assignor_counts, metadata_expired, last_assignment_ms

    @cython.locals(member=ConsumerGroupMember)
    cpdef state(self)
    cpdef preferred_assignor(self, default)
    cpdef target_of(self, member_id)
    cpdef interned(self, names)
    cpdef names_only_in(self, names)
    @cython.locals(member=ConsumerGroupMember)
    cpdef update_subscription(self, member, names)
    @cython.locals(member=ConsumerGroupMember)
    cpdef update_assignor(self, member, name)
    @cython.locals(member=ConsumerGroupMember)
    cpdef add_member(self, member)
    @cython.locals(member=ConsumerGroupMember)
    cpdef remove_member(self, member_id)
    @cython.locals(epochs=dict, held=dict)
    cpdef add_partitions(self, dict assignment, epoch)
    @cython.locals(epochs=dict, held=dict)
    cpdef remove_partitions(self, dict assignment, epoch)
    @cython.locals(epochs=dict, held=dict)
    cpdef shift_partitions(self, dict old, old_epoch, dict new, epoch)
    @cython.locals(member=ConsumerGroupMember)
    cpdef move_member(self, member, state, epoch, previous_epoch, assigned, pending)
    cpdef compute_subscription_metadata(self, topics)
