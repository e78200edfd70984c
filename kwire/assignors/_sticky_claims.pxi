# Included by _sticky_c.pyx: input and claims.
#
# Java: AbstractStickyAssignor.assignPartitions -> allSubscriptionsEqual
# (the HashMap walk that settles who owns what and chooses the path), and
# RackInfo (whether rack-aware assignment is on).  Everything the two paths
# share lives on _Run: the group's columns, the resolution's results, and the
# per-member partition lists.

cdef int _cmp_i64(const void* a, const void* b) noexcept nogil:
    cdef int64_t x = (<const int64_t*>a)[0]
    cdef int64_t y = (<const int64_t*>b)[0]
    return (x > y) - (x < y)


def _partition_total(group):
    """Partitions in the metadata (the last topic offset; 0 with no topics)."""
    offsets = group.topic_offset
    return int(offsets[len(offsets) - 1]) if len(offsets) else 0


def _member_order(group):
    """Iteration order of the leader's members ``HashMap`` (see
    ``_javaorder.hashmap_capacity`` for the crowded-bucket growth rule)."""
    hashes = group.member_hashes()
    capacity = hashmap_capacity(hashes)
    if capacity == capacity_after(len(hashes)):
        return group.member_hashmap_order()
    return hashmap_positions(hashes, capacity)


def _assignable_topics(group):
    """Per topic: subscribed by someone and present with partitions -- the
    topics in Java's ``partitionsPerTopic`` that the assignor looks at."""
    n_topics = len(group.topics)
    subscribed = np.bincount(group.sub_topics, minlength=n_topics)[:n_topics] > 0
    return (subscribed & (group.partition_counts > 0)).astype(np.uint8)


# --------------------------------------------------------------------------
# RackInfo: is rack-aware assignment on, and does rack crowding reorder?
# --------------------------------------------------------------------------

cdef int _rack_facts(const int32_t[::1] partition_count, const int64_t[::1] first_partition,
                     const uint8_t[::1] assignable, const int64_t[::1] replica_rack_start,
                     const int32_t[::1] replica_rack, const int64_t[::1] consumers_on_rack, int n_racks,
                     int64_t[::1] crowd) except -1:
    """What consumer racks change in Java's result, as bit flags.

    1: rack-aware mode is on -- a consumer rack is among the replica racks
       and some partition is not on every replica rack.
    2: "consumers on this partition's racks" (filled into ``crowd``) varies
       between partitions, so the constrained path's stable sort by it
       reorders the unassigned partitions even with rack-aware mode off."""
    cdef int32_t[::1] seen = np.zeros(max(n_racks, 1), dtype=np.int32)
    cdef uint8_t[::1] in_union = np.zeros(max(n_racks, 1), dtype=np.uint8)
    cdef int topic, rack, n_distinct, union_size = 0, first_size = -1, flags = 0
    cdef int64_t partition, entry, consumers, first_crowd = -1
    cdef int32_t stamp = 0
    cdef bint sizes_differ = False, shared_rack = False
    for topic in range(partition_count.shape[0]):
        if not assignable[topic]:
            continue
        for partition in range(first_partition[topic], first_partition[topic + 1]):
            # a fresh stamp per partition: a rack listed twice among its replicas counts once
            stamp += 1
            n_distinct = 0
            consumers = 0
            if partition + 1 < replica_rack_start.shape[0]:
                for entry in range(replica_rack_start[partition], replica_rack_start[partition + 1]):
                    rack = replica_rack[entry]
                    if seen[rack] == stamp:
                        continue
                    seen[rack] = stamp
                    n_distinct += 1
                    consumers += consumers_on_rack[rack]
                    if not in_union[rack]:
                        in_union[rack] = 1
                        union_size += 1
                        if consumers_on_rack[rack] > 0:
                            shared_rack = True
            crowd[partition] = consumers
            if first_crowd < 0:
                first_crowd = consumers
                first_size = n_distinct
            else:
                if consumers != first_crowd:
                    flags |= 2
                if n_distinct != first_size:
                    sizes_differ = True
    # every partition's rack set is a subset of the union, so "all equal to
    # the union" means every set has the union's size
    if shared_rack and (sizes_differ or (first_size >= 0 and first_size != union_size)):
        flags |= 1
    return flags


def _rack_setup(group, assignable):
    """(rack-aware on?, member racks, replica-rack CSR, crowd or None)."""
    member_rack = group.member_rack_index()
    n_racks = max(len(group.rack_names), int(member_rack.max()) + 1 if len(member_rack) else 0)
    consumers_on_rack = np.bincount(member_rack[member_rack >= 0], minlength=n_racks).astype(np.int64)
    replica_rack_start = group.replica_rack_indptr
    if len(replica_rack_start) == 0:
        replica_rack_start = np.zeros(1, dtype=np.int64)
    crowd = np.zeros(max(_partition_total(group), 1), dtype=np.int64)
    flags = _rack_facts(group.partition_counts, group.topic_offset, assignable, replica_rack_start,
                        group.replica_racks, consumers_on_rack, n_racks, crowd)
    return bool(flags & 1), member_rack, replica_rack_start, group.replica_racks, (crowd if flags & 2 else None)


# --------------------------------------------------------------------------
# scratch arrays of a run
# --------------------------------------------------------------------------

# Above this many elements a scratch array is an array of its own, so a large
# group's run holds no more memory than its arrays need.
cdef enum:
    _ARENA_MAX_REQUEST = 1 << 16


cdef class _Arena:
    """Where a run's scratch arrays come from: slices of a few buffers,
    handed out in turn and reused by the next run after reset().  On the
    what-if's groups of a few members a run needs some fifty small arrays,
    and allocating each as a NumPy array cost more than the run's loops."""
    cdef int32_t[::1] i32_buffer
    cdef int64_t[::1] i64_buffer
    cdef uint8_t[::1] u8_buffer
    cdef Py_ssize_t i32_used, i64_used, u8_used

    def __init__(self, Py_ssize_t capacity=1024):
        self.i32_buffer = np.empty(capacity, dtype=np.int32)
        self.i64_buffer = np.empty(capacity, dtype=np.int64)
        self.u8_buffer = np.empty(capacity, dtype=np.uint8)

    cdef void reset(self) noexcept:
        """Hand the buffers out again: every slice given so far is dead."""
        self.i32_used = self.i64_used = self.u8_used = 0

    cdef int32_t[::1] i32(self, Py_ssize_t n, int32_t fill) except *:
        cdef int32_t[::1] out
        cdef Py_ssize_t i
        if n > _ARENA_MAX_REQUEST:
            return np.full(n, fill, dtype=np.int32)
        if self.i32_used + n > self.i32_buffer.shape[0]:
            # slices already given keep the old buffer alive
            self.i32_buffer = np.empty(max(2 * self.i32_buffer.shape[0], n), dtype=np.int32)
            self.i32_used = 0
        out = self.i32_buffer[self.i32_used:self.i32_used + n]
        self.i32_used += n
        for i in range(n):
            out[i] = fill
        return out

    cdef int64_t[::1] i64(self, Py_ssize_t n, int64_t fill) except *:
        cdef int64_t[::1] out
        cdef Py_ssize_t i
        if n > _ARENA_MAX_REQUEST:
            return np.full(n, fill, dtype=np.int64)
        if self.i64_used + n > self.i64_buffer.shape[0]:
            self.i64_buffer = np.empty(max(2 * self.i64_buffer.shape[0], n), dtype=np.int64)
            self.i64_used = 0
        out = self.i64_buffer[self.i64_used:self.i64_used + n]
        self.i64_used += n
        for i in range(n):
            out[i] = fill
        return out

    cdef uint8_t[::1] u8(self, Py_ssize_t n) except *:
        """Zeros."""
        cdef uint8_t[::1] out
        if n > _ARENA_MAX_REQUEST:
            return np.zeros(n, dtype=np.uint8)
        if self.u8_used + n > self.u8_buffer.shape[0]:
            self.u8_buffer = np.empty(max(2 * self.u8_buffer.shape[0], n), dtype=np.uint8)
            self.u8_used = 0
        out = self.u8_buffer[self.u8_used:self.u8_used + n]
        self.u8_used += n
        if n:
            memset(&out[0], 0, n)
        return out


# --------------------------------------------------------------------------
# shared state of one assignment run
# --------------------------------------------------------------------------

cdef class _Run:
    """One assignment: the group's columns, the owner resolution, and each
    member's partition list (Java's ``List<TopicPartition>`` per consumer).

    Partitions are global integers ``first_partition[topic] + number``, and
    claims past a topic's end get virtual ids after them (number_claims).
    The lists are intrusive doubly linked lists threaded through per-node
    arrays, so Java's ``List.remove`` from the middle keeps list order at
    O(1) cost.  Node ``p`` is partition ``p``'s place in a list: where Java
    last put it (its ``currentPartitionConsumer``).  Past-end claims stall
    Java's merge walk of held against all partitions, and partitions held
    after the stall are handed out again while still in their holder's
    list; that second entry is a copy node (``copy_of``), taken from after
    the virtual ids."""
    cdef int n_members, n_topics
    cdef long long n_partitions
    cdef const int32_t[::1] partition_count      # per topic
    cdef const int64_t[::1] first_partition      # per topic, + one past the end
    cdef uint8_t[::1] assignable                 # per topic, see _assignable_topics
    cdef const int64_t[::1] subscription_start   # per member, CSR into subscription_topic
    cdef const int32_t[::1] subscription_topic
    cdef const int64_t[::1] owned_start          # per member, CSR into owned_topic / owned_number
    cdef const int32_t[::1] owned_topic
    cdef const int32_t[::1] owned_number         # partition number inside its topic
    cdef const int32_t[::1] generation           # memberData generation
    cdef const int32_t[::1] protocol_generation  # Subscription.generationId (what later claimants compare to)
    cdef const int32_t[::1] hashmap_order        # member indices in Java HashMap iteration order
    cdef const int32_t[::1] id_rank              # rank of the member id in Java String order
    cdef const int32_t[::1] topic_hash           # String.hashCode of each topic name
    cdef list member_ids          # only for error messages
    # claims past a topic's end (number_claims)
    cdef int32_t[::1] entry_partition  # per owned entry: partition or virtual id; -1 for a topic not assigned
    cdef object past_end               # None, or {(topic, number): virtual id}
    cdef int64_t n_virtual, n_primary  # virtual ids; real partitions + virtual ids
    cdef int32_t[::1] virtual_topic, virtual_number
    # owner resolution (resolve())
    cdef uint8_t[::1] owned_kept       # per owned entry: the claim survived
    cdef uint8_t[::1] multiply_owned   # per partition: Java's partitionsWithMultiplePreviousOwners
    cdef int max_generation
    cdef bint all_subscriptions_equal
    # member lists: first/last partition and length per member, links and holder per partition
    cdef int32_t[::1] list_first, list_last, load, next_in_list, prev_in_list, holder
    # the second list entry of a partition (a node id) or -1, the partition of each copy node,
    # and the copy nodes handed out so far; the last node is scratch space for swap()
    cdef int32_t[::1] copy_of, copy_partition
    cdef int64_t n_copies
    cdef _Arena arena

    def __init__(self, group, assignable, _Arena arena=None):
        if arena is None:
            # One run's arena, sized for it at once: grown by doubling from a
            # small one, a group of 20k partitions allocated and filled each
            # buffer many times over (its clean run took 1.4x as long).
            arena = _Arena(min(6 * (_partition_total(group) + len(group.owned_topic) + group.num_members
                                    + len(group.topics)) + 1024, 8 * _ARENA_MAX_REQUEST))
        self.arena = arena
        self.n_members = group.num_members
        self.n_topics = len(group.topics)
        self.partition_count = group.partition_counts
        self.first_partition = group.topic_offset
        self.n_partitions = _partition_total(group)
        self.assignable = assignable
        self.subscription_start = group.sub_indptr
        self.subscription_topic = group.sub_topics
        self.owned_start = group.owned_indptr
        self.owned_topic = group.owned_topic
        self.owned_number = group.owned_partition
        self.generation = group.generation
        self.protocol_generation = group.subscription_generation
        self.hashmap_order = _member_order(group)
        self.id_rank = group.member_id_rank()
        self.topic_hash = group.topic_hashes()
        self.member_ids = list(group.member_ids)
        self.number_claims()

    @staticmethod
    cdef _Run of_stack(_Stack s, Py_ssize_t g, list member_ids, _Arena arena):
        """Group ``g`` of a batch: its columns and facts are slices of the
        stack's, so no array is taken from a Python object per group."""
        cdef _Run r = _Run.__new__(_Run)
        cdef int64_t t = s.topic_base[g], m = s.member_base[g]
        r.arena = arena
        r.n_members = <int>(s.member_base[g + 1] - m)
        r.n_topics = <int>(s.topic_base[g + 1] - t)
        r.partition_count = s.partition_counts[t:t + r.n_topics]
        r.first_partition = s.topic_offset[t + g:t + g + r.n_topics + 1]
        r.n_partitions = r.first_partition[r.n_topics]
        r.assignable = s.assignable[t:t + r.n_topics]
        r.subscription_start = s.sub_indptr[m + g:m + g + r.n_members + 1]
        r.subscription_topic = s.sub_topics[s.sub_base[g]:s.sub_base[g + 1]]
        r.owned_start = s.owned_indptr[m + g:m + g + r.n_members + 1]
        r.owned_topic = s.owned_topic[s.owned_base[g]:s.owned_base[g + 1]]
        r.owned_number = s.owned_partition[s.owned_base[g]:s.owned_base[g + 1]]
        r.generation = s.generation[m:m + r.n_members]
        r.protocol_generation = s.subscription_generation[m:m + r.n_members]
        r.hashmap_order = s.hashmap_order[m:m + r.n_members]
        r.id_rank = s.id_rank[m:m + r.n_members]
        r.topic_hash = s.topic_hash[t:t + r.n_topics]
        r.member_ids = member_ids
        r.number_claims()
        return r

    # -- claims past a topic's end ------------------------------------------
    cdef void number_claims(self) except *:
        """Give every owned entry its partition id (``entry_partition``).

        Java keeps a claim past its topic's end like any other: it is settled
        between claimants, kept in a member's list and counted in its load.
        Each distinct such (topic, number) gets a virtual id past the real
        partitions, so resolution and the lists treat it as one more
        partition that no member can be given."""
        cdef int member, topic
        cdef int64_t entry
        cdef int32_t number
        cdef int32_t[::1] entry_partition = self.arena.i32(max(len(self.owned_topic), 1), -1)
        past_end = None
        for member in range(self.n_members):
            for entry in range(self.owned_start[member], self.owned_start[member + 1]):
                topic = self.owned_topic[entry]
                if not self.assignable[topic]:
                    continue
                number = self.owned_number[entry]
                if number < 0:
                    # ArrayGroup refuses these; a group built without validation must not index out of bounds
                    raise AssignmentError(f"member {self.member_ids[member]!r} claims partition {number} "
                                          f"of topic {topic}, a negative number")
                if number < self.partition_count[topic]:
                    entry_partition[entry] = <int32_t>(self.first_partition[topic] + number)
                    continue
                if past_end is None:
                    past_end = {}
                key = (topic, number)
                virtual = past_end.get(key)
                if virtual is None:
                    virtual = past_end[key] = self.n_partitions + len(past_end)
                entry_partition[entry] = virtual
        self.entry_partition = entry_partition
        self.past_end = past_end
        self.n_virtual = len(past_end) if past_end is not None else 0
        self.n_primary = self.n_partitions + self.n_virtual
        self.virtual_topic = self.arena.i32(max(self.n_virtual, 1), 0)
        self.virtual_number = self.arena.i32(max(self.n_virtual, 1), 0)
        if past_end is not None:
            for (topic, number), virtual in past_end.items():
                self.virtual_topic[virtual - self.n_partitions] = topic
                self.virtual_number[virtual - self.n_partitions] = number

    cdef int32_t past_end_id(self, int topic, int32_t number) except -1:
        """The virtual id of a claim past the topic's end (number_claims gave it one)."""
        return <int32_t>self.past_end[(topic, number)]

    # -- allSubscriptionsEqual: owner resolution and path choice -------------
    cdef void resolve(self) except *:
        cdef int i, member, other, topic, n_subscribed, first_size = 0
        cdef int64_t entry, other_entry, partition
        cdef int32_t member_generation
        cdef uint8_t[::1] in_first = self.arena.u8(self.n_topics)
        # per partition: the owned entry of its current claimant, -1 for none
        cdef int64_t[::1] claim = self.arena.i64(max(self.n_primary, 1), -1)
        cdef int32_t[::1] entry_member = self.arena.i32(max(len(self.owned_topic), 1), 0)
        self.owned_kept = self.arena.u8(max(len(self.owned_topic), 1))
        self.multiply_owned = self.arena.u8(max(self.n_primary, 1))
        self.all_subscriptions_equal = True
        self.max_generation = -1
        for member in range(self.n_members):
            for entry in range(self.owned_start[member], self.owned_start[member + 1]):
                entry_member[entry] = member
        for i in range(self.n_members):
            member = self.hashmap_order[i]
            n_subscribed = <int>(self.subscription_start[member + 1] - self.subscription_start[member])
            # "equal" compares with the first non-empty subscription seen; an
            # empty one met before it re-initialises the set (Java's quirk)
            if first_size == 0:
                # the first subscription is a set (a topic listed twice counts
                # once); later ones are compared by their list length, as Java
                # compares a List with that HashSet
                for entry in range(self.subscription_start[member], self.subscription_start[member + 1]):
                    if not in_first[self.subscription_topic[entry]]:
                        in_first[self.subscription_topic[entry]] = 1
                        first_size += 1
            elif self.all_subscriptions_equal:
                if n_subscribed != first_size:
                    self.all_subscriptions_equal = False
                else:
                    for entry in range(self.subscription_start[member], self.subscription_start[member + 1]):
                        if not in_first[self.subscription_topic[entry]]:
                            self.all_subscriptions_equal = False
                            break
            member_generation = self.generation[member]
            if member_generation > self.max_generation:
                self.max_generation = member_generation
            # settle each claim against the earlier claimant, pairwise and in
            # HashMap order: this member's memberData generation against the
            # earlier one's protocol field
            for entry in range(self.owned_start[member], self.owned_start[member + 1]):
                partition = self.entry_partition[entry]
                if partition < 0:
                    continue
                other_entry = claim[partition]
                if other_entry < 0:
                    self.owned_kept[entry] = 1
                    claim[partition] = entry
                    continue
                other = entry_member[other_entry]
                if member_generation == self.protocol_generation[other]:
                    # same generation: nobody keeps it, but the "owner"
                    # pointer still moves to this member
                    self.multiply_owned[partition] = 1
                    self.owned_kept[other_entry] = 0
                    claim[partition] = entry
                elif member_generation > self.protocol_generation[other]:
                    # Java adds the claim to this member's list, then removes
                    # the first copy from the earlier claimant's.  When that
                    # is this member repeating a claim it does not hold, the
                    # removal takes the copy just added: nothing is kept.
                    if other != member or self.owned_kept[other_entry]:
                        self.owned_kept[entry] = 1
                        self.owned_kept[other_entry] = 0
                    claim[partition] = entry

    # -- member lists ----------------------------------------------------------
    cdef void init_lists(self) except *:
        n = max(self.n_primary, 1)
        if self.n_virtual:
            # at most one copy per real partition, plus the scratch node
            n = self.n_primary + self.n_partitions + 1
        self.list_first = self.arena.i32(self.n_members, -1)
        self.list_last = self.arena.i32(self.n_members, -1)
        self.load = self.arena.i32(self.n_members, 0)
        self.next_in_list = self.arena.i32(n, -1)
        self.prev_in_list = self.arena.i32(n, -1)
        self.holder = self.arena.i32(n, -1)
        self.copy_of = self.arena.i32(max(self.n_partitions, 1) if self.n_virtual else 1, -1)
        self.copy_partition = self.arena.i32(max(self.n_partitions, 1) if self.n_virtual else 1, -1)
        self.n_copies = 0

    cdef inline void append(self, int member, int32_t partition) noexcept nogil:
        cdef int32_t last = self.list_last[member]
        self.prev_in_list[partition] = last
        self.next_in_list[partition] = -1
        if last < 0:
            self.list_first[member] = partition
        else:
            self.next_in_list[last] = partition
        self.list_last[member] = partition
        self.load[member] += 1
        self.holder[partition] = member

    cdef inline void unlink(self, int member, int32_t partition) noexcept nogil:
        cdef int32_t before = self.prev_in_list[partition], after = self.next_in_list[partition]
        if before < 0:
            self.list_first[member] = after
        else:
            self.next_in_list[before] = after
        if after < 0:
            self.list_last[member] = before
        else:
            self.prev_in_list[after] = before
        self.load[member] -= 1
        self.holder[partition] = -1

    cdef void place(self, int member, int32_t partition) noexcept nogil:
        """Java's ``add`` of an unassigned partition.  One still in a list
        (handed out again after a stalled merge walk) leaves a copy node
        where it was, so node ``partition`` follows the newest placement."""
        cdef int32_t copy
        if self.holder[partition] >= 0:
            copy = <int32_t>(self.n_primary + self.n_copies)
            self.copy_partition[self.n_copies] = partition
            self.n_copies += 1
            self.copy_of[partition] = copy
            self.replace(partition, copy)
        self.append(member, partition)

    cdef void replace(self, int32_t old, int32_t new) noexcept nogil:
        """Unlinked node ``new`` takes linked node ``old``'s place."""
        cdef int32_t before = self.prev_in_list[old], after = self.next_in_list[old]
        cdef int member = self.holder[old]
        self.prev_in_list[new] = before
        self.next_in_list[new] = after
        if before < 0:
            self.list_first[member] = new
        else:
            self.next_in_list[before] = new
        if after < 0:
            self.list_last[member] = new
        else:
            self.prev_in_list[after] = new
        self.holder[new] = member
        self.holder[old] = -1

    cdef void swap(self, int32_t a, int32_t b) noexcept nogil:
        """Exchange the places of two linked nodes (via the scratch node)."""
        cdef int32_t scratch = <int32_t>(self.holder.shape[0] - 1)
        self.replace(a, scratch)
        self.replace(b, a)
        self.replace(scratch, b)

    cdef inline int32_t node_partition(self, int32_t node) noexcept nogil:
        if node < self.n_primary:
            return node
        return self.copy_partition[node - self.n_primary]

    cdef inline bint in_list(self, int member, int32_t partition) noexcept nogil:
        """Java's ``consumer's list contains partition``."""
        if self.holder[partition] == member:
            return True
        return (self.n_copies > 0 and partition < self.n_partitions and self.copy_of[partition] >= 0
                and self.holder[self.copy_of[partition]] == member)

    cdef int32_t first_entry(self, int member, int32_t partition) noexcept nogil:
        """The node of Java's ``remove(partition)`` from ``member``'s list:
        its first entry there (-1 if none)."""
        cdef int32_t copy = -1, node
        if self.n_copies > 0 and partition < self.n_partitions:
            copy = self.copy_of[partition]
        if copy < 0 or self.holder[copy] != member:
            return partition if self.holder[partition] == member else -1
        if self.holder[partition] != member:
            return copy
        node = self.next_in_list[partition]
        while node >= 0:
            if node == copy:
                return partition
            node = self.next_in_list[node]
        return copy

    cdef bint export_into(self, _Answers out) except -1:
        """Append the current lists (member index order) to ``out``, as
        export() gives them; whether they are a valid assignment
        (``_sticky_repair.is_valid``: every entry a partition that exists, of
        a topic its member subscribes to, and no partition twice)."""
        cdef int member, topic
        cdef int32_t partition, node
        cdef int64_t total = 0, k, entry
        cdef bint valid = True
        cdef int32_t[::1] topic_of = self.topic_of_partitions()
        # per topic: the member (+ 1) last found subscribing; per partition: given already
        cdef int32_t[::1] subscriber = self.arena.i32(max(self.n_topics, 1), 0)
        cdef uint8_t[::1] given = self.arena.u8(max(self.n_partitions, 1))
        for member in range(self.n_members):
            total += self.load[member]
        out.reserve(total)
        k = out.n_entries
        for member in range(self.n_members):
            for entry in range(self.subscription_start[member], self.subscription_start[member + 1]):
                subscriber[self.subscription_topic[entry]] = member + 1
            node = self.list_first[member]
            while node >= 0:
                partition = self.node_partition(node)
                topic = topic_of[partition]
                out.topic[k] = topic
                if partition < self.n_partitions:
                    out.number[k] = <int32_t>(partition - self.first_partition[topic])
                    if given[partition] or subscriber[topic] != member + 1:
                        valid = False
                    given[partition] = 1
                else:
                    out.number[k] = self.virtual_number[partition - self.n_partitions]
                    valid = False
                k += 1
                node = self.next_in_list[node]
            out.counts[out.n_members] = k - out.n_entries
            out.n_entries = k
            out.n_members += 1
        return valid

    cdef tuple export(self):
        """CSR arrays (member index order) of the current lists."""
        cdef int member, k = 0
        cdef int32_t partition, node
        cdef int64_t total = 0
        cdef int64_t[::1] indptr
        cdef int32_t[::1] out_topic, out_number, topic_of
        cdef const int64_t[::1] first_partition = self.first_partition
        for member in range(self.n_members):
            total += self.load[member]
        indptr_a = np.zeros(self.n_members + 1, dtype=np.int64)
        indptr = indptr_a
        out_topic_a = np.empty(total, dtype=np.int32)
        out_number_a = np.empty(total, dtype=np.int32)
        out_topic = out_topic_a
        out_number = out_number_a
        topic_of = self.topic_of_partitions()
        for member in range(self.n_members):
            node = self.list_first[member]
            while node >= 0:
                partition = self.node_partition(node)
                out_topic[k] = topic_of[partition]
                if partition < self.n_partitions:
                    out_number[k] = <int32_t>(partition - first_partition[topic_of[partition]])
                else:
                    out_number[k] = self.virtual_number[partition - self.n_partitions]
                k += 1
                node = self.next_in_list[node]
            indptr[member + 1] = k
        return indptr_a, out_topic_a, out_number_a

    cdef int32_t[::1] topic_of_partitions(self):
        """Per partition (virtual ids included): its topic."""
        cdef int32_t[::1] topic_of = self.arena.i32(max(self.n_primary, 1), 0)
        cdef int topic
        cdef int64_t partition
        for topic in range(self.n_topics):
            for partition in range(self.first_partition[topic], self.first_partition[topic + 1]):
                topic_of[partition] = topic
        for partition in range(self.n_virtual):
            topic_of[self.n_partitions + partition] = self.virtual_topic[partition]
        return topic_of
