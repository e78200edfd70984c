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
    cdef int i, member
    cdef int64_t entry, partition
    cdef int32_t listed, node
    # stamps hold member + 1: "owned by this member", without clearing per member
    cdef int32_t[::1] owned_stamp = r.arena.i32(max(r.n_primary, 1), 0)
    cdef int32_t[::1] added_to = r.arena.i32(max(r.n_primary, 1), -1)
    cdef uint8_t[::1] revoked = r.arena.u8(max(r.n_primary, 1))
    for i in range(r.n_members):
        member = r.hashmap_order[i]
        for entry in range(r.owned_start[member], r.owned_start[member + 1]):
            partition = r.entry_partition[entry]
            if partition < 0:
                continue
            owned_stamp[partition] = member + 1
            if not r.in_list(member, <int32_t>partition):
                revoked[partition] = 1
        node = r.list_first[member]
        while node >= 0:
            listed = r.node_partition(node)
            if owned_stamp[listed] != member + 1:
                added_to[listed] = member
            node = r.next_in_list[node]
    for partition in range(r.n_partitions):
        if added_to[partition] >= 0 and revoked[partition]:
            # Java's remove takes the partition's first entry in the list
            member = added_to[partition]
            r.unlink(member, r.first_entry(member, <int32_t>partition))
