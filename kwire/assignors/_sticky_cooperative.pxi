# Included by _sticky_c.pyx: the cooperative adjustment.
#
# Java: CooperativeStickyAssignor.assign -> adjustAssignment.  A partition
# changing hands is taken off its new owner's list this round, so it stays
# unassigned until its previous owner has revoked it (the next rebalance).
# The constrained path reports those partitions itself
# (partitionsTransferringOwnership); the general path's are computed.

cdef void _withhold_transferring(_Run r, const uint8_t[::1] transferring) except *:
    """Constrained path: drop each transferring partition from its new owner
    only now, after it counted toward that member's quota."""
    cdef int64_t partition
    for partition in range(r.n_partitions):
        if transferring[partition]:
            r.unlink(r.holder[partition], <int32_t>partition)


cdef void _withhold_computed(_Run r) except *:
    """General path (computeTransferringPartitions): partitions assigned to
    a member that did not own them and owned by a member that lost them."""
    cdef int i, member, topic
    cdef int64_t entry, partition
    cdef int32_t listed
    # stamps hold member + 1: "owned by this member", without clearing per member
    cdef int32_t[::1] owned_stamp = np.zeros(max(r.n_partitions, 1), dtype=np.int32)
    cdef int32_t[::1] added_to = np.full(max(r.n_partitions, 1), -1, dtype=np.int32)
    cdef uint8_t[::1] revoked = np.zeros(max(r.n_partitions, 1), dtype=np.uint8)
    for i in range(r.n_members):
        member = r.hashmap_order[i]
        for entry in range(r.owned_start[member], r.owned_start[member + 1]):
            topic = r.owned_topic[entry]
            if not r.assignable[topic]:
                continue
            partition = r.first_partition[topic] + r.owned_number[entry]
            owned_stamp[partition] = member + 1
            if r.holder[partition] != member:
                revoked[partition] = 1
        listed = r.list_first[member]
        while listed >= 0:
            if owned_stamp[listed] != member + 1:
                added_to[listed] = member
            listed = r.next_in_list[listed]
    for partition in range(r.n_partitions):
        if added_to[partition] >= 0 and revoked[partition]:
            r.unlink(added_to[partition], <int32_t>partition)
