# Included by _sticky_c.pyx: the general path.
#
# Java: AbstractStickyAssignor.GeneralAssignmentBuilder, taken when
# subscriptions differ: topic2AllPotentialConsumers and the sorted partition
# list, prepopulateCurrentAssignments (prevAssignment), assignOwnedPartitions,
# then balance(): the unassigned partitions to the least loaded member, fixed
# members out, performReassignments twice, and the revert when the score did
# not improve.  The balancing itself is in _sticky_balance.pxi.
#
# Racks (rack-aware mode) enter in two places here: the claims a member may
# keep and the first pass over the unassigned partitions.  Java's
# performReassignments also asks a rack question first (does a member on the
# partition's racks hold 2+ fewer?), but a yes there leads to the same move
# as the unfiltered question that follows it, which is asked over a superset
# of the same members; so the reassignment below needs no rack check.

def _classes(group, assignable, member_rack=None):
    """Members with the same set of assignable subscribed topics (and, with
    ``member_rack`` given, the same rack) share a class.  Returns (class per
    member, rack per class (-1: none), per-topic CSR of the classes that
    subscribe to it).

    Splitting classes by rack lets the rack-aware first step ask for the
    least loaded member on a partition's racks as a min over the classes on
    those racks; the unfiltered question is still a min over all classes."""
    index = {}
    classes = np.empty(group.num_members, dtype=np.int32)
    subscription_start = group.sub_indptr
    subscription_topic = group.sub_topics
    assignable_mask = assignable.astype(bool)
    topic_lists = []
    class_rack = []
    for member in range(group.num_members):
        topics = subscription_topic[subscription_start[member]:subscription_start[member + 1]]
        topics = np.sort(topics[assignable_mask[topics]])
        rack = -1 if member_rack is None else int(member_rack[member])
        key = (topics.tobytes(), rack)
        cls = index.get(key)
        if cls is None:
            cls = index[key] = len(index)
            topic_lists.append(topics)
            class_rack.append(rack)
        classes[member] = cls
    n_topics = len(group.topics)
    per_topic = [[] for _ in range(n_topics)]
    for cls, topics in enumerate(topic_lists):
        for topic in topics.tolist():
            per_topic[topic].append(cls)
    topic_class_start = np.zeros(n_topics + 1, dtype=np.int64)
    topic_class_start[1:] = np.cumsum([len(x) for x in per_topic])
    topic_class = np.array([cls for x in per_topic for cls in x], dtype=np.int32)
    return classes, np.array(class_rack, dtype=np.int32), topic_class_start, topic_class


cdef void _general(_Run r, const int32_t[::1] classes, const int32_t[::1] class_rack,
                   const int64_t[::1] topic_class_start, const int32_t[::1] topic_class,
                   const int32_t[::1] topic_sort, bint rack_active,
                   const int32_t[::1] member_rack, const int64_t[::1] replica_rack_start,
                   const int32_t[::1] replica_rack) except *:
    cdef int n_members = r.n_members, n_topics = r.n_topics
    cdef int i, member, topic, n_assignable_topics = 0, n_member_topics
    cdef int64_t entry, partition, total = 0, member_total
    cdef int32_t listed
    cdef bint revocation_required = False, initializing = True, performed
    r.init_lists()
    cdef _Balancer b = _Balancer(r, _heaps_for(r, classes, class_rack, topic_class_start, topic_class,
                                               replica_rack_start, replica_rack))
    cdef int32_t[::1] n_consumers = r.arena.i32(n_topics, 0)
    cdef uint8_t[::1] subscribed = r.arena.u8(n_topics)
    cdef const int32_t[::1] sorted_topics = topic_sort
    b.prev_owner = r.arena.i32(max(r.n_partitions, 1), -1)
    b.prev_generation = r.arena.i32(max(r.n_partitions, 1), 0)
    b.max_load = r.arena.i32(n_members, 0)
    b.active = r.arena.u8(n_members)
    b.movable = r.arena.u8(n_topics)

    # topic2AllPotentialConsumers / consumer2AllPotentialTopics, as counts
    for topic in range(n_topics):
        if r.assignable[topic]:
            total += r.partition_count[topic]
            n_assignable_topics += 1
    for member in range(n_members):
        for entry in range(r.subscription_start[member], r.subscription_start[member + 1]):
            topic = r.subscription_topic[entry]
            if r.assignable[topic]:
                n_consumers[topic] += 1
    for topic in range(n_topics):
        b.movable[topic] = n_consumers[topic] >= 2
    # the most each member could hold (Java's "all topics" shortcut included)
    for member in range(n_members):
        member_total = 0
        n_member_topics = 0
        for entry in range(r.subscription_start[member], r.subscription_start[member + 1]):
            topic = r.subscription_topic[entry]
            if r.assignable[topic]:
                member_total += r.partition_count[topic]
                n_member_topics += 1
        b.max_load[member] = <int32_t>(total if n_member_topics == n_assignable_topics else member_total)

    # prepopulateCurrentAssignments: claims of older generations, highest
    # generation first, ties to the earlier member in HashMap order
    for i in range(n_members):
        member = r.hashmap_order[i]
        if r.generation[member] >= r.max_generation:
            continue
        for entry in range(r.owned_start[member], r.owned_start[member + 1]):
            partition = r.entry_partition[entry]
            # (a claim past the topic's end is never looked up)
            if partition < 0 or partition >= r.n_partitions:
                continue
            if b.prev_owner[partition] < 0 or r.generation[member] > b.prev_generation[partition]:
                b.prev_owner[partition] = member
                b.prev_generation[partition] = r.generation[member]

    # assignOwnedPartitions: keep surviving claims on topics the member still
    # subscribes to (in rack-aware mode: on a partition with a replica on the
    # member's rack, when the member has one); any other claim means a
    # revocation is required
    cdef uint8_t[::1] kept_past_end = r.arena.u8(n_topics)
    for member in range(n_members):
        for entry in range(r.subscription_start[member], r.subscription_start[member + 1]):
            subscribed[r.subscription_topic[entry]] = 1
        for entry in range(r.owned_start[member], r.owned_start[member + 1]):
            if not r.owned_kept[entry]:
                continue
            topic = r.owned_topic[entry]
            partition = r.entry_partition[entry]
            if subscribed[topic] and not (rack_active and member_rack[member] >= 0 and not (
                    partition < r.n_partitions and _on_rack(partition, member_rack[member], replica_rack_start,
                                                            replica_rack))):
                r.append(member, <int32_t>partition)
                if partition >= r.n_partitions:
                    kept_past_end[topic] = 1
            else:
                revocation_required = True
        for entry in range(r.subscription_start[member], r.subscription_start[member + 1]):
            subscribed[r.subscription_topic[entry]] = 0
        if r.load[member]:
            initializing = False

    b.heaps.add_all()
    for member in range(n_members):
        b.active[member] = 1

    # balance(), first step: each unassigned partition, in sortedAllPartitions
    # order, to the first member of sortedCurrentSubscriptions that can take
    # it.  In rack-aware mode a first pass offers each partition only to
    # members on its racks (or without a rack); what it leaves goes to
    # anyone in a second pass, in the same order.  Java finds the unassigned
    # ones by a merge walk of the kept claims against all partitions (both
    # in that order); a kept claim past its topic's end stalls it, so every
    # partition of a later topic counts as unassigned, held or not.
    cdef int n_unassigned = 0, n_left = 0
    cdef bint stalled = False
    cdef int32_t[::1] unassigned = r.arena.i32(max(total, 1), 0)
    cdef int32_t[::1] left = r.arena.i32(max(total, 1) if rack_active else 1, 0)
    for i in range(len(sorted_topics)):
        topic = sorted_topics[i]
        for partition in range(r.first_partition[topic], r.first_partition[topic + 1]):
            if stalled or r.holder[partition] < 0:
                unassigned[n_unassigned] = <int32_t>partition
                n_unassigned += 1
        if kept_past_end[topic]:
            stalled = True
    with nogil:
        if rack_active:
            for i in range(n_unassigned):
                listed = unassigned[i]
                member = b.heaps.first_on_racks(b.topic_of[listed], listed)
                if member >= 0:
                    b.place(member, listed)
                else:
                    left[n_left] = listed
                    n_left += 1
            for i in range(n_left):
                listed = left[i]
                member = b.heaps.first_taking(b.topic_of[listed])
                if member >= 0:
                    b.place(member, listed)
        else:
            for i in range(n_unassigned):
                listed = unassigned[i]
                member = b.heaps.first_taking(b.topic_of[listed])
                if member >= 0:
                    b.place(member, listed)

    # fixed partitions (topics with fewer than two potential consumers) and
    # fixed members (full, and holding nothing that could move) drop out
    cdef int n_reassignable = 0, n_unassigned_movable = 0
    cdef int32_t[::1] reassignable = r.arena.i32(max(total, 1), 0)
    for i in range(len(sorted_topics)):
        topic = sorted_topics[i]
        if b.movable[topic]:
            for partition in range(r.first_partition[topic], r.first_partition[topic + 1]):
                reassignable[n_reassignable] = <int32_t>partition
                n_reassignable += 1
    for i in range(n_unassigned):
        if b.movable[b.topic_of[unassigned[i]]]:
            unassigned[n_unassigned_movable] = unassigned[i]
            n_unassigned_movable += 1
    cdef bint can_move
    for member in range(n_members):
        can_move = r.load[member] < b.max_load[member]
        if not can_move:
            listed = r.list_first[member]
            while listed >= 0:
                if b.movable[b.topic_of[r.node_partition(listed)]]:
                    can_move = True
                    break
                listed = r.next_in_list[listed]
        if not can_move:
            b.fix(member)
    b.prepare_for_copies(member_rack if rack_active else None)

    if not revocation_required:
        b.reassign(unassigned, n_unassigned_movable)
    performed = b.reassign(reassignable, n_reassignable)

    # Java reverts to the lists before balancing when that did not improve
    # the score (and this is not the first assignment)
    if not initializing and performed and b.snap_taken:
        active = np.asarray(b.active).astype(bool)
        loads_now = np.asarray(r.load)[active].tolist()
        loads_then = np.asarray(b.snap[2])[active].tolist()
        if balance_score(loads_now) >= balance_score(loads_then):
            b.restore_snapshot()
