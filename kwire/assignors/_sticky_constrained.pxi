# Included by _sticky_c.pyx: the constrained path.
#
# Java: AbstractStickyAssignor.ConstrainedAssignmentBuilder, taken when every
# member subscribes to the same topics.  Quotas, then assignOwnedPartitions,
# then the unassigned partitions, then assignRackAwareRoundRobin (rack-aware
# only) and assignRoundRobin, then verifyUnfilledMembers.  The pure twin's
# constrained_assign is the same algorithm over Python lists.

cdef inline bint _on_rack(int64_t partition, int rack, const int64_t[::1] replica_rack_start,
                          const int32_t[::1] replica_rack) noexcept nogil:
    cdef int64_t entry
    if rack < 0 or partition + 1 >= replica_rack_start.shape[0]:
        return False
    for entry in range(replica_rack_start[partition], replica_rack_start[partition + 1]):
        if replica_rack[entry] == rack:
            return True
    return False


cdef int _next_on_rack(int64_t partition, const int32_t[::1] members, int base, int n, int first,
                       const int32_t[::1] member_rack, const int64_t[::1] replica_rack_start,
                       const int32_t[::1] replica_rack) noexcept:
    """Java's ``nextRackConsumer``: the first member, cycling from ``first``,
    whose rack holds a replica of ``partition``; -1 if none (or the partition
    has no racks)."""
    cdef int i, idx
    if (partition + 1 >= replica_rack_start.shape[0]
            or replica_rack_start[partition] == replica_rack_start[partition + 1]):
        return -1
    for i in range(n):
        idx = (first + i) % n
        if _on_rack(partition, member_rack[members[base + idx]], replica_rack_start, replica_rack):
            return idx
    return -1


cdef void _sort_by_rank(int32_t[::1] members, int n, const int32_t[::1] id_rank) except *:
    """Sort member indices by member id in Java String order."""
    if n <= 1:
        return
    cdef int64_t* keys = <int64_t*>malloc(n * sizeof(int64_t))
    cdef int i
    if keys == NULL:
        raise MemoryError()
    for i in range(n):
        keys[i] = (<int64_t>id_rank[members[i]] << 32) | <int64_t>members[i]
    qsort(keys, n, sizeof(int64_t), _cmp_i64)
    for i in range(n):
        members[i] = <int32_t>(keys[i] & 0xFFFFFFFF)
    free(keys)


cdef uint8_t[::1] _constrained(_Run r, bint rack_active, const int32_t[::1] member_rack,
                               const int64_t[::1] replica_rack_start, const int32_t[::1] replica_rack,
                               object crowd):
    """Fill ``r``'s lists; returns, per partition, whether it went to a member
    other than one that held it (Java's partitionsTransferringOwnership)."""
    cdef int n_members = r.n_members, n_topics = r.n_topics
    cdef int i, j, member, topic, n_kept, n_under = 0, under_pos, queue_head = 0, queue_tail = 0
    cdef int64_t entry, partition, total = 0
    cdef int32_t number, load
    cdef int min_quota, max_quota, expected_over_min, n_over_min = 0
    cdef bint from_under
    for topic in range(n_topics):
        if r.assignable[topic]:
            total += r.partition_count[topic]
    min_quota = <int>(total // n_members)
    max_quota = <int>((total + n_members - 1) // n_members)
    expected_over_min = <int>(total % n_members)
    r.init_lists()
    cdef uint8_t[::1] maybe_revoked = r.arena.u8(max(r.n_primary, 1))
    cdef uint8_t[::1] taken = r.arena.u8(max(r.n_primary, 1))
    cdef uint8_t[::1] transferring = r.arena.u8(max(r.n_partitions, 1))
    cdef int64_t[::1] keys = r.arena.i64(max(len(r.owned_topic), 1), 0)
    # unfilledMembersWithUnderMinQuotaPartitions
    cdef int32_t[::1] under = r.arena.i32(n_members, 0)
    # unfilledMembersWithExactlyMinQuotaPartitions: a FIFO queue, polled from
    # queue_head; members reaching minQuota join at the tail
    cdef int32_t[::1] queue = r.arena.i32(2 * n_members + 1, 0)
    cdef int64_t key_base = n_topics if n_topics > 0 else 1
    cdef int64_t key
    cdef bint sorted_already
    # the first topic (Java order: index order) with a kept claim past its end
    cdef int stall_topic = n_topics

    # assignOwnedPartitions, members in HashMap order
    for i in range(n_members):
        member = r.hashmap_order[i]
        # the kept claims, sorted by (partition, topic) (KAFKA-16277) via one int64 key
        n_kept = 0
        sorted_already = True
        for entry in range(r.owned_start[member], r.owned_start[member + 1]):
            if not r.owned_kept[entry]:
                continue
            topic = r.owned_topic[entry]
            partition = r.entry_partition[entry]
            if r.multiply_owned[partition]:
                continue
            # a claim on a replica-less rack is dropped (not revoked) in rack-aware mode; a claim
            # past the topic's end is on no rack
            if rack_active and member_rack[member] >= 0 and not (partition < r.n_partitions and _on_rack(
                    partition, member_rack[member], replica_rack_start, replica_rack)):
                continue
            key = <int64_t>r.owned_number[entry] * key_base + topic
            if n_kept and key < keys[n_kept - 1]:
                sorted_already = False
            keys[n_kept] = key
            n_kept += 1
        if not sorted_already:
            qsort(&keys[0], n_kept, sizeof(int64_t), _cmp_i64)
        if n_kept < min_quota:
            load = n_kept
            under[n_under] = member
            n_under += 1
        elif n_kept >= max_quota and n_over_min < expected_over_min:
            n_over_min += 1
            if n_over_min == expected_over_min:
                queue_tail = 0     # Java clears the exactly-min list here
            load = max_quota
        else:
            load = min_quota
            if n_over_min < expected_over_min:
                queue[queue_tail] = member
                queue_tail += 1
        for j in range(n_kept):
            topic = <int>(keys[j] % key_base)
            number = <int32_t>(keys[j] // key_base)
            if number < r.partition_count[topic]:
                partition = r.first_partition[topic] + number
            else:
                partition = r.past_end_id(topic, number)
                if j < load and topic < stall_topic:
                    stall_topic = topic
            if j < load:
                r.append(member, <int32_t>partition)
                taken[partition] = 1
            else:
                maybe_revoked[partition] = 1

    _sort_by_rank(under, n_under, r.id_rank)
    _sort_by_rank(queue, queue_tail, r.id_rank)

    # the unassigned partitions: topics in Java order, partitions ascending,
    # then (when consumers have racks) stable-sorted by consumers on their racks.
    # Java finds them by a merge walk of the kept claims against all
    # partitions; a kept claim past its topic's end stalls it, so every
    # partition after that topic counts as unassigned, held or not.
    cdef int64_t n_todo = 0, x
    cdef int64_t stall = r.first_partition[stall_topic + 1] if stall_topic < n_topics else r.n_partitions
    cdef int k, cursor, next_load
    cdef int32_t[::1] todo = r.arena.i32(max(total, 1), 0)
    for topic in range(n_topics):
        if not r.assignable[topic]:
            continue
        for partition in range(r.first_partition[topic], r.first_partition[topic + 1]):
            if not taken[partition] or partition >= stall:
                todo[n_todo] = <int32_t>partition
                n_todo += 1
    if crowd is not None and n_todo > 1:
        todo_a = np.asarray(todo)
        head = todo_a[:n_todo]
        todo_a[:n_todo] = head[np.argsort(np.asarray(crowd)[head], kind="stable")]
    cdef uint8_t[::1] done = r.arena.u8(max(n_todo, 1))

    # assignRackAwareRoundRobin: placements it cannot make are left to the next step
    if rack_active:
        cursor = 0
        for x in range(n_todo):
            partition = todo[x]
            member = -1
            k = _next_on_rack(partition, under, 0, n_under, cursor, member_rack, replica_rack_start,
                              replica_rack)
            if k >= 0:
                member = under[k]
                next_load = r.load[member] + 1
                if next_load >= min_quota:
                    for j in range(k, n_under - 1):
                        under[j] = under[j + 1]
                    n_under -= 1
                    if next_load < max_quota:
                        queue[queue_tail] = member
                        queue_tail += 1
                else:
                    k += 1
                cursor = 0 if n_under == 0 else k % n_under
            elif queue_tail > queue_head:
                k = _next_on_rack(partition, queue, queue_head, queue_tail - queue_head, 0, member_rack,
                                  replica_rack_start, replica_rack)
                if k >= 0:
                    member = queue[queue_head + k]
                    if r.load[member] + 1 == max_quota:
                        for j in range(queue_head + k, queue_tail - 1):
                            queue[j] = queue[j + 1]
                        queue_tail -= 1
            if member >= 0:
                r.place(member, <int32_t>partition)
                if maybe_revoked[partition] or r.multiply_owned[partition]:
                    transferring[partition] = 1
                done[x] = 1

    # assignRoundRobin: ``under`` is walked with a cursor that survives
    # removals and restarts when exhausted; once it is empty, members at
    # exactly minQuota are polled FIFO
    under_pos = 0
    for x in range(n_todo):
        if done[x]:
            continue
        partition = todo[x]
        from_under = False
        if under_pos < n_under:
            member = under[under_pos]
            under_pos += 1
            from_under = True
        elif n_under == 0 and queue_head == queue_tail:
            raise JavaAssignorFailure("sticky assignor ran out of members with spare quota "
                                  "(Java: IllegalStateException 'No more unfilled consumers')")
        elif n_under == 0:
            member = queue[queue_head]
            queue_head += 1
        else:
            under_pos = 0
            member = under[under_pos]
            under_pos += 1
            from_under = True
        # assignNewPartition
        r.place(member, <int32_t>partition)
        load = r.load[member]
        if maybe_revoked[partition] or r.multiply_owned[partition]:
            transferring[partition] = 1
        if load == min_quota:
            if not from_under:
                raise JavaAssignorFailure("sticky assignor reached an inconsistent state "
                                      "(Java: IllegalStateException from Iterator.remove)")
            under_pos -= 1
            for j in range(under_pos, n_under - 1):
                under[j] = under[j + 1]
            n_under -= 1
            if queue_tail >= 2 * n_members + 1:
                raise JavaAssignorFailure("sticky assignor queue overflow")
            queue[queue_tail] = member
            queue_tail += 1
        elif load == max_quota:
            n_over_min += 1

    # verifyUnfilledMembers, as the pure twin's constrained_assign ends (the
    # twins must fail alike)
    if n_under:
        if n_over_min != expected_over_min:
            raise JavaAssignorFailure("sticky assignor could not reach the expected number of members "
                                  "above the minimum quota (Java: IllegalStateException)")
        for j in range(n_under):
            if r.load[under[j]] != min_quota:
                raise JavaAssignorFailure(f"member {r.member_ids[under[j]]!r} ends below the minimum quota "
                                      "(Java: IllegalStateException)")
    return transferring
