# Included by _sticky_c.pyx: balance (general path).
#
# Java: GeneralAssignmentBuilder's sortedCurrentSubscriptions (the TreeSet of
# members by (load, id)), PartitionMovements, isBalanced and
# performReassignments.  Java asks isBalanced before every partition of
# every pass and answers with a scan of every partition; _Balancer keeps the
# answer (and a witness of imbalance) until a move could change it, which is
# what keeps large uneven groups from going quadratic.

# _spread and _topic_partition_spread are the C forms of _javaorder.spread and
# _javaorder.topic_partition_hash, kept in C because balancing hashes every
# move; hash_set_trace exposes them (with _HashSetOrder) so that
# tests/test_java_rules.py can hold them to the Python rules.
cdef inline uint32_t _spread(int32_t h) noexcept nogil:
    """Java's ``HashMap.hash``: the high half folded into the low half."""
    cdef uint32_t u = <uint32_t>h
    return u ^ (u >> 16)


cdef inline uint32_t _topic_partition_spread(int32_t topic_hash, long partition) noexcept nogil:
    """``HashMap.hash`` of Java's ``TopicPartition.hashCode``:
    ``31 * (31 + partition) + topic.hashCode()``, in int32 arithmetic."""
    return _spread(<int32_t>(<uint32_t>31 * <uint32_t>(31 + partition) + <uint32_t>topic_hash))


# --------------------------------------------------------------------------
# PartitionMovements (touched once per move)
# --------------------------------------------------------------------------

cdef class _HashSetOrder:
    """First element of a Java ``HashSet<TopicPartition>``.  The compiled
    mirror of ``_javaorder.JavaHashTable`` (keyed by partition index, with
    the hashes kept by the caller): see there for the rules modelled.  It
    stays in C because balancing touches it on every move."""
    cdef public int capacity
    cdef dict seq
    cdef dict bins
    cdef long next_seq

    def __init__(self):
        self.capacity = 16
        self.seq = {}
        self.bins = {}
        self.next_seq = 0

    cdef void _rebin(self, dict hashes) except *:
        cdef dict bins = {}
        cdef uint32_t mask = self.capacity - 1
        for partition in self.seq:
            bucket = hashes[partition] & mask
            bins[bucket] = bins.get(bucket, 0) + 1
        self.bins = bins

    cdef void add(self, long partition, uint32_t h, dict hashes) except *:
        # Mirrors _javaorder.JavaHashTable.add line for line (the twins must
        # agree on when the table grows); only the key type differs.
        if partition in self.seq:
            return
        self.seq[partition] = self.next_seq
        self.next_seq += 1
        hashes[partition] = h
        bucket = h & (self.capacity - 1)
        in_bucket = self.bins.get(bucket, 0) + 1
        self.bins[bucket] = in_bucket
        resized = False
        # treeifyBin: a bin of 9 in a table under 64 doubles the table
        if in_bucket >= 9 and self.capacity < 64:
            self.capacity *= 2
            resized = True
        while len(self.seq) > self.capacity * 3 // 4:
            self.capacity *= 2
            resized = True
        if resized:
            self._rebin(hashes)

    cdef void discard(self, long partition, dict hashes) except *:
        if partition in self.seq:
            del self.seq[partition]
            bucket = hashes[partition] & (self.capacity - 1)
            self.bins[bucket] -= 1

    cdef long first(self, dict hashes) except? -2:
        cdef uint32_t mask = self.capacity - 1
        best = -1
        best_key = None
        for partition, inserted in self.seq.items():
            k = (hashes[partition] & mask, inserted)
            if best_key is None or k < best_key:
                best, best_key = partition, k
        return best


cdef class _PartitionMovements:
    """Which partitions moved between which members during balancing
    (Java's ``PartitionMovements``; ``_sticky_order._Movements`` is the same
    over topic-partition tuples)."""
    cdef dict by_topic    # topic -> {(src, dst): _HashSetOrder}
    cdef dict pair_of     # partition -> (origin, current destination)
    cdef dict hashes      # partition -> spread TopicPartition.hashCode

    def __init__(self):
        self.by_topic = {}
        self.pair_of = {}
        self.hashes = {}

    cdef tuple _drop(self, long partition, long topic):
        pair = self.pair_of.pop(partition)
        sets = self.by_topic[topic]
        moved = <_HashSetOrder>sets[pair]
        moved.discard(partition, self.hashes)
        if not moved.seq:
            del sets[pair]
        if not sets:
            del self.by_topic[topic]
        return pair

    cdef void _record(self, long partition, long topic, tuple pair, uint32_t h) except *:
        self.pair_of[partition] = pair
        sets = self.by_topic.get(topic)
        if sets is None:
            sets = self.by_topic[topic] = {}
        moved = sets.get(pair)
        if moved is None:
            moved = sets[pair] = _HashSetOrder()
        (<_HashSetOrder>moved).add(partition, h, self.hashes)

    cdef void move(self, long partition, long topic, int src, int dst, uint32_t h) except *:
        if partition in self.pair_of:
            origin = self._drop(partition, topic)[0]
            # a partition going back where it started leaves no trace
            if origin != dst:
                self._record(partition, topic, (origin, dst), h)
        else:
            self._record(partition, topic, (src, dst), h)

    cdef long substitute(self, long partition, long topic, int src, int dst) except? -2:
        """getTheActualPartitionToBeMoved: a partition already travelling the
        opposite way moves instead, so the pair of moves cancels out."""
        sets = self.by_topic.get(topic)
        if sets is None:
            return partition
        pair = self.pair_of.get(partition)
        if pair is not None:
            src = pair[0]
        back = sets.get((dst, src))
        if back is None:
            return partition
        return (<_HashSetOrder>back).first(self.hashes)


def hash_set_trace(int32_t topic_hash, list operations):
    """Run ``operations`` -- ``(add, partition)`` pairs, ``add`` False for a
    removal -- on one topic's ``HashSet<TopicPartition>`` as balancing does,
    and return ``(capacity, first partition or -1)`` after each.

    Not used by the assignor: it lets tests hold _HashSetOrder and the hash
    functions above to their Python forms in _javaorder."""
    cdef _HashSetOrder table = _HashSetOrder()
    cdef dict hashes = {}
    out = []
    for add, partition in operations:
        if add:
            table.add(partition, _topic_partition_spread(topic_hash, partition), hashes)
        else:
            table.discard(partition, hashes)
        out.append((table.capacity, table.first(hashes) if table.seq else -1))
    return out


# --------------------------------------------------------------------------
# sortedCurrentSubscriptions
# --------------------------------------------------------------------------

cdef class _Heaps:
    """Members grouped by identical subscription ("classes"); each class is
    a binary heap on (load, Java id rank), so Java's "first member of
    sortedCurrentSubscriptions subscribed to the topic" is a min over the
    classes subscribing to it instead of a walk of the TreeSet."""
    cdef int n_members
    cdef int32_t[::1] class_start, class_length, heap, heap_pos, load
    cdef const int32_t[::1] class_of
    cdef const int32_t[::1] id_rank
    cdef const int64_t[::1] topic_class_start    # per topic, CSR into topic_class
    cdef const int32_t[::1] topic_class
    # rack-aware mode: each class's rack (-1: none) and the replica racks
    # per partition (CSR), for first_on_racks
    cdef const int32_t[::1] class_rack
    cdef const int64_t[::1] replica_rack_start
    cdef const int32_t[::1] replica_rack

    cdef inline int64_t key(self, int member) noexcept nogil:
        return <int64_t>self.load[member] * self.n_members + self.id_rank[member]

    # sift_up and sift_down are the two halves of a binary heap over one
    # class's slice of ``heap``; they share their bookkeeping lines by nature.
    cdef void sift_up(self, int i) noexcept nogil:
        cdef int cls = self.class_of[self.heap[i]]
        cdef int start = self.class_start[cls]
        cdef int member = self.heap[i]
        cdef int64_t k = self.key(member)
        cdef int parent
        while i > start:
            parent = start + (i - start - 1) // 2
            if self.key(self.heap[parent]) <= k:
                break
            self.heap[i] = self.heap[parent]
            self.heap_pos[self.heap[i]] = i
            i = parent
        self.heap[i] = member
        self.heap_pos[member] = i

    cdef void sift_down(self, int i) noexcept nogil:
        cdef int cls = self.class_of[self.heap[i]]
        cdef int start = self.class_start[cls]
        cdef int end = start + self.class_length[cls]
        cdef int member = self.heap[i]
        cdef int64_t k = self.key(member)
        cdef int child, best
        while True:
            child = start + 2 * (i - start) + 1
            if child >= end:
                break
            best = child
            if child + 1 < end and self.key(self.heap[child + 1]) < self.key(self.heap[child]):
                best = child + 1
            if self.key(self.heap[best]) >= k:
                break
            self.heap[i] = self.heap[best]
            self.heap_pos[self.heap[i]] = i
            i = best
        self.heap[i] = member
        self.heap_pos[member] = i

    cdef void add_all(self) noexcept nogil:
        cdef int member, cls, i
        for member in range(self.n_members):
            cls = self.class_of[member]
            i = self.class_start[cls] + self.class_length[cls]
            self.class_length[cls] += 1
            self.heap[i] = member
            self.heap_pos[member] = i
            self.sift_up(i)

    cdef void changed(self, int member, int delta) noexcept nogil:
        if self.heap_pos[member] < 0:
            return
        if delta > 0:
            self.sift_down(self.heap_pos[member])
        else:
            self.sift_up(self.heap_pos[member])

    cdef void remove(self, int member) noexcept nogil:
        cdef int i = self.heap_pos[member]
        if i < 0:
            return
        cdef int cls = self.class_of[member]
        cdef int last = self.class_start[cls] + self.class_length[cls] - 1
        self.heap_pos[member] = -1
        self.class_length[cls] -= 1
        if i == last:
            return
        cdef int moved = self.heap[last]
        self.heap[i] = moved
        self.heap_pos[moved] = i
        self.sift_up(i)
        self.sift_down(self.heap_pos[moved])

    cdef int first_taking(self, int topic) noexcept nogil:
        """The least loaded member (ties by id) subscribed to ``topic``; -1 if none."""
        cdef int best = -1, cls, member
        cdef int64_t best_key = 0, k
        cdef int64_t entry
        for entry in range(self.topic_class_start[topic], self.topic_class_start[topic + 1]):
            cls = self.topic_class[entry]
            if self.class_length[cls] == 0:
                continue
            member = self.heap[self.class_start[cls]]
            k = self.key(member)
            if best < 0 or k < best_key:
                best = member
                best_key = k
        return best

    cdef int first_on_racks(self, int topic, int64_t partition) noexcept nogil:
        """first_taking among members on a rack of ``partition`` or without
        a rack (Java's rack-filtered ``sortedCurrentSubscriptions`` walk);
        -1 if none.  first_taking's loop plus the rack filter, written twice
        so that the hot unfiltered search carries no rack branch."""
        cdef int best = -1, cls, member, rack
        cdef int64_t best_key = 0, k
        cdef int64_t entry
        for entry in range(self.topic_class_start[topic], self.topic_class_start[topic + 1]):
            cls = self.topic_class[entry]
            if self.class_length[cls] == 0:
                continue
            rack = self.class_rack[cls]
            if rack >= 0 and not _on_rack(partition, rack, self.replica_rack_start, self.replica_rack):
                continue
            member = self.heap[self.class_start[cls]]
            k = self.key(member)
            if best < 0 or k < best_key:
                best = member
                best_key = k
        return best


cdef _Heaps _heaps_for(_Run r, const int32_t[::1] class_of, const int32_t[::1] class_rack,
                       const int64_t[::1] topic_class_start, const int32_t[::1] topic_class,
                       const int64_t[::1] replica_rack_start, const int32_t[::1] replica_rack):
    cdef _Heaps heaps = _Heaps()
    cdef int member, n_classes = 0
    heaps.n_members = r.n_members
    heaps.load = r.load
    heaps.id_rank = r.id_rank
    for member in range(r.n_members):
        if class_of[member] + 1 > n_classes:
            n_classes = class_of[member] + 1
    cdef int32_t[::1] starts = r.arena.i32(max(n_classes, 1), 0)
    # each class's slice of ``heap`` starts after the members of the classes before it
    for member in range(r.n_members):
        if class_of[member] + 1 < n_classes:
            starts[class_of[member] + 1] += 1
    for member in range(1, n_classes):
        starts[member] += starts[member - 1]
    heaps.class_of = class_of
    heaps.class_start = starts
    heaps.class_length = r.arena.i32(max(n_classes, 1), 0)
    heaps.heap = r.arena.i32(max(r.n_members, 1), 0)
    heaps.heap_pos = r.arena.i32(r.n_members, -1)
    heaps.topic_class_start = topic_class_start
    heaps.topic_class = topic_class
    heaps.class_rack = class_rack
    heaps.replica_rack_start = replica_rack_start
    heaps.replica_rack = replica_rack
    return heaps


# --------------------------------------------------------------------------
# isBalanced and performReassignments
# --------------------------------------------------------------------------

cdef class _Balancer:
    """The general path's balancing state; the fields the general path's
    set-up fills are marked."""
    cdef _Run r
    cdef _Heaps heaps
    cdef _PartitionMovements moves
    cdef int32_t[::1] topic_of
    # filled by _general(): prevAssignment (owner and its generation) per
    # partition, the most a member could hold, members not fixed, topics
    # with two or more potential consumers
    cdef int32_t[::1] prev_owner, prev_generation, max_load
    cdef uint8_t[::1] active, movable
    # scratch of _scan_balanced, per topic: the two largest loads among
    # distinct holders, the first one's holder, and a partition of each
    cdef int32_t[::1] top_load, top_member, second_load, top_partition, second_partition
    # the lists as they were before the first move, for Java's revert
    cdef bint snap_taken
    cdef object snap
    cdef long long moves_made, move_budget
    # balanced() is a pure function of the loads and holders, which change
    # only in give()/take(); reassign() asks before every partition, so an
    # unchanged state answers from here instead of a scan of every partition
    # (the scan per partition made large uneven groups quadratic).
    cdef long long state_version, balanced_version
    cdef bint balanced_answer
    # The last scan's proof of imbalance: member witness_member could take
    # partition witness_partition from a holder at least two partitions
    # fuller.  While that still holds the answer is still no, without a scan.
    cdef int witness_member
    cdef int32_t witness_partition
    # Set by prepare_for_copies.  shared: some partition sits twice in the
    # lists of members being balanced (see _Run.place); isBalanced then
    # reads each partition's holder as the last of those lists in HashMap
    # order (member_position), and "not in the member's list" no longer
    # follows from "held by another".  subscribers: per topic with a fixed
    # subscriber, its subscribers in HashMap order, for performReassignments'
    # literal walk (Java reads a fixed member's load there and throws); None
    # when no such topic.
    cdef bint shared
    cdef int32_t[::1] member_position
    cdef object subscribers
    cdef object member_rack

    def __init__(self, _Run r, _Heaps heaps):
        self.r = r
        self.shared = False
        self.subscribers = None
        self.heaps = heaps
        self.state_version = 0
        self.balanced_version = -1
        self.witness_partition = -1
        self.moves = _PartitionMovements()
        self.topic_of = r.topic_of_partitions()
        self.snap_taken = False
        self.moves_made = 0
        cdef int topic
        cdef int64_t total = 0
        for topic in range(r.n_topics):
            if r.assignable[topic]:
                total += r.partition_count[topic]
        self.move_budget = move_budget(total, r.n_members)
        self.top_load = r.arena.i32(r.n_topics, 0)
        self.top_member = r.arena.i32(r.n_topics, 0)
        self.second_load = r.arena.i32(r.n_topics, 0)
        self.top_partition = r.arena.i32(r.n_topics, 0)
        self.second_partition = r.arena.i32(r.n_topics, 0)

    # Every list change goes through give()/take(), so the heaps and the
    # balanced() cache cannot miss one.
    cdef void give(self, int member, int32_t partition) noexcept nogil:
        self.r.append(member, partition)
        self.heaps.changed(member, 1)
        self.state_version += 1

    cdef void place(self, int member, int32_t partition) noexcept nogil:
        """give() for a partition Java finds unassigned (see _Run.place)."""
        self.r.place(member, partition)
        self.heaps.changed(member, 1)
        self.state_version += 1

    cdef void take(self, int member, int32_t partition) noexcept nogil:
        self.r.unlink(member, partition)
        self.heaps.changed(member, -1)
        self.state_version += 1

    cdef void fix(self, int member) noexcept nogil:
        """Take a member out of balancing (Java's fixed assignments)."""
        self.active[member] = 0
        self.heaps.remove(member)
        self.state_version += 1

    cdef void prepare_for_copies(self, member_rack) except *:
        """After fixed members drop out: the facts above, for balancing."""
        cdef _Run r = self.r
        cdef int32_t partition, copy
        cdef int i, member, topic
        cdef int64_t entry
        if r.n_copies:
            self.member_position = r.arena.i32(r.n_members, 0)
            for i in range(r.n_members):
                self.member_position[r.hashmap_order[i]] = i
            for partition in range(r.n_partitions):
                copy = r.copy_of[partition]
                if (copy >= 0 and r.holder[copy] >= 0 and self.active[r.holder[copy]]
                        and r.holder[partition] >= 0 and self.active[r.holder[partition]]):
                    self.shared = True
                    break
        if not r.n_virtual:
            # without a claim past a topic's end, a fixed member subscribes to no movable topic
            return
        has_fixed = np.zeros(r.n_topics, dtype=bool)
        for member in range(r.n_members):
            if not self.active[member]:
                for entry in range(r.subscription_start[member], r.subscription_start[member + 1]):
                    topic = r.subscription_topic[entry]
                    if self.movable[topic]:
                        has_fixed[topic] = True
        if not has_fixed.any():
            return
        subscribers = {int(topic): [] for topic in np.flatnonzero(has_fixed)}
        for i in range(r.n_members):
            member = r.hashmap_order[i]
            for entry in range(r.subscription_start[member], r.subscription_start[member + 1]):
                topic = r.subscription_topic[entry]
                if topic in subscribers:
                    subscribers[topic].append(member)
        self.subscribers = subscribers
        self.member_rack = member_rack

    cdef inline int last_holder(self, int32_t partition) noexcept nogil:
        """The holder isBalanced reads: with the partition in two lists, the
        later of them in HashMap order (active members only), else node's."""
        cdef int holder = self.r.holder[partition], other
        cdef int32_t copy
        if not self.shared:
            return holder
        copy = self.r.copy_of[partition]
        if copy < 0:
            return holder
        other = self.r.holder[copy]
        if other < 0 or not self.active[other]:
            return holder
        if holder < 0 or not self.active[holder] or self.member_position[other] > self.member_position[holder]:
            return other
        return holder

    cdef bint balanced(self) except -1:
        cdef int answer
        if self.balanced_version == self.state_version:
            return self.balanced_answer
        if self.witness_still_holds():
            self.balanced_version = self.state_version
            self.balanced_answer = False
            return False
        with nogil:
            answer = self._scan_balanced()
        if answer < 0:
            raise JavaAssignorFailure("a partition has no holder while balancing (Java: NullPointerException)")
        self.balanced_version = self.state_version
        self.balanced_answer = answer
        return answer

    cdef bint witness_still_holds(self) noexcept nogil:
        # Only loads and holders change during reassign(); subscriptions,
        # max_load and active do not, so these checks are the whole condition.
        cdef int member = self.witness_member, witness_holder, load
        if self.witness_partition < 0:
            return False
        witness_holder = self.last_holder(self.witness_partition)
        if witness_holder < 0 or witness_holder == member or not self.active[witness_holder]:
            return False
        if self.shared and self.r.in_list(member, self.witness_partition):
            return False
        load = self.r.load[member]
        return load != self.max_load[member] and self.r.load[witness_holder] > load + 1

    cdef int _scan_balanced(self) noexcept nogil:
        """Java's isBalanced(): 1, 0, or -1 when a partition has no holder."""
        cdef int member, topic, least = -1, most = -1, holder, load, heaviest
        cdef int64_t entry, partition
        # loads differ by at most one: balanced
        for member in range(self.r.n_members):
            if not self.active[member]:
                continue
            load = self.r.load[member]
            if least < 0 or load < least:
                least = load
            if load > most:
                most = load
        self.witness_partition = -1
        if least < 0 or least >= most - 1:
            return 1
        # Otherwise Java asks, per member not at its maximum, whether some
        # partition of a subscribed topic sits with a member 2+ fuller.  With
        # every partition held once that only needs each topic's two heaviest
        # distinct holders.
        for topic in range(self.r.n_topics):
            self.top_load[topic] = -1
            self.top_member[topic] = -1
            self.second_load[topic] = -1
            self.top_partition[topic] = -1
            self.second_partition[topic] = -1
            if not self.r.assignable[topic]:
                continue
            for partition in range(self.r.first_partition[topic], self.r.first_partition[topic + 1]):
                holder = self.last_holder(<int32_t>partition)
                if holder < 0:
                    return -1
                if not self.active[holder]:
                    continue
                load = self.r.load[holder]
                if holder == self.top_member[topic]:
                    continue
                if load > self.top_load[topic]:
                    self.second_load[topic] = self.top_load[topic]
                    self.second_partition[topic] = self.top_partition[topic]
                    self.top_load[topic] = load
                    self.top_member[topic] = holder
                    self.top_partition[topic] = <int32_t>partition
                elif load > self.second_load[topic]:
                    self.second_load[topic] = load
                    self.second_partition[topic] = <int32_t>partition
        for member in range(self.r.n_members):
            if not self.active[member]:
                continue
            load = self.r.load[member]
            if load == self.max_load[member]:
                continue
            for entry in range(self.r.subscription_start[member], self.r.subscription_start[member + 1]):
                topic = self.r.subscription_topic[entry]
                if not self.r.assignable[topic]:
                    continue
                heaviest = self.second_load[topic] if self.top_member[topic] == member else self.top_load[topic]
                if heaviest > load + 1:
                    self.witness_member = member
                    self.witness_partition = (self.second_partition[topic] if self.top_member[topic] == member
                                              else self.top_partition[topic])
                    if not (self.shared and self.r.in_list(member, self.witness_partition)):
                        return 0
                    # the member holds another copy of the witness: Java's
                    # literal question over this topic decides
                    if self._topic_outweighs(member, topic):
                        return 0
                    self.witness_partition = -1
        return 1

    cdef bint _topic_outweighs(self, int member, int topic) noexcept nogil:
        """Java's isBalanced for one member and topic: a partition not in the
        member's list whose holder has 2+ more (recorded as the witness)."""
        cdef int64_t partition
        cdef int holder, load = self.r.load[member]
        for partition in range(self.r.first_partition[topic], self.r.first_partition[topic + 1]):
            if self.r.in_list(member, <int32_t>partition):
                continue
            holder = self.last_holder(<int32_t>partition)
            if holder >= 0 and self.active[holder] and self.r.load[holder] > load + 1:
                self.witness_partition = <int32_t>partition
                return True
        return False

    cdef void take_snapshot(self) except *:
        r = self.r
        self.snap = (np.array(r.list_first), np.array(r.list_last), np.array(r.load),
                     np.array(r.next_in_list), np.array(r.prev_in_list), np.array(r.holder))
        self.snap_taken = True

    cdef void restore_snapshot(self) except *:
        # in place: the heaps and the lists share these buffers
        r = self.r
        first, last, load, next_in_list, prev_in_list, holder = self.snap
        np.asarray(r.list_first)[:] = first
        np.asarray(r.list_last)[:] = last
        np.asarray(r.load)[:] = load
        np.asarray(r.next_in_list)[:] = next_in_list
        np.asarray(r.prev_in_list)[:] = prev_in_list
        np.asarray(r.holder)[:] = holder

    cdef void move(self, int32_t partition, int dst) except *:
        """processPartitionMovement, after PartitionMovements picks the
        partition that actually moves."""
        cdef _Run r = self.r
        cdef int src = r.holder[partition]
        cdef int topic = self.topic_of[partition]
        cdef long actual
        cdef int32_t node
        if not self.snap_taken:
            self.take_snapshot()
        self.moves_made += 1
        if self.moves_made > self.move_budget:
            raise JavaAssignorFailure("sticky balancing does not converge for this input "
                                  "(Java would loop forever)")
        actual = self.moves.substitute(partition, topic, src, dst)
        src = r.holder[actual]
        topic = self.topic_of[actual]
        self.moves.move(actual, topic, src, dst,
                        _topic_partition_spread(r.topic_hash[topic], actual - r.first_partition[topic]))
        if r.n_copies:
            # Java removes the first entry of the partition in src's list;
            # node ``actual`` must be the one that leaves (it follows the
            # newest placement), so it trades places with an earlier copy
            node = r.first_entry(src, <int32_t>actual)
            if node != actual:
                r.swap(<int32_t>actual, node)
        self.take(src, <int32_t>actual)
        self.give(dst, <int32_t>actual)

    cdef bint reassign(self, int32_t[::1] partitions, int n) except -1:
        """performReassignments: passes over ``partitions`` until balanced or
        a pass moves nothing; True when anything moved."""
        cdef _Run r = self.r
        cdef bint performed = False, modified
        cdef int i, holder, prev, holder_load, best, topic
        cdef int32_t partition
        while True:
            modified = False
            for i in range(n):
                if self.balanced():
                    break
                partition = partitions[i]
                holder = r.holder[partition]
                if holder < 0:
                    raise JavaAssignorFailure("a partition has no holder while balancing (Java: NullPointerException)")
                holder_load = r.load[holder]
                # back to its previous owner when that one has 2+ fewer
                prev = self.prev_owner[partition]
                if prev >= 0:
                    if not self.active[prev]:
                        # Same words as the pure twin: the implementations must fail alike.
                        raise JavaAssignorFailure(f"member {r.member_ids[prev]!r} is referenced while balancing but "
                                              "holds a fixed assignment (Java: NullPointerException)")
                    if holder_load > r.load[prev] + 1:
                        self.move(partition, prev)
                        performed = modified = True
                        continue
                # else to the first member of sortedCurrentSubscriptions that
                # can take it, when any potential consumer has 2+ fewer (the
                # least loaded one answers "any")
                topic = self.topic_of[partition]
                if self.subscribers is not None and topic in self.subscribers:
                    if self._walk_subscribers(partition, holder, holder_load):
                        performed = modified = True
                    continue
                if self.heaps.topic_class_start[topic + 1] - self.heaps.topic_class_start[topic] > 64:
                    # A topic shared by many subscription classes: the search
                    # is long enough to be worth handing the GIL over.
                    with nogil:
                        best = self.heaps.first_taking(topic)
                else:
                    best = self.heaps.first_taking(topic)
                if best >= 0 and holder_load > r.load[best] + 1:
                    self.move(partition, best)
                    performed = modified = True
            if not modified:
                return performed

    cdef bint _walk_subscribers(self, int32_t partition, int holder, int holder_load) except -1:
        """performReassignments' literal walk of a topic's subscribers (in
        HashMap order), taken where one is fixed: first, when the holder is
        on one of the partition's racks, those on its racks, then all; the
        first with 2+ fewer sends the partition to the least loaded taker.
        Reading a fixed member's load is Java's NullPointerException."""
        cdef _Run r = self.r
        cdef int topic = self.topic_of[partition], rack, other, best, on_racks
        members = self.subscribers[topic]
        rack = -1 if self.member_rack is None else self.member_rack[holder]
        for on_racks in range(1 if rack >= 0 and _on_rack(
                partition, rack, self.heaps.replica_rack_start, self.heaps.replica_rack) else 0, -1, -1):
            for other in members:
                if on_racks:
                    rack = self.member_rack[other]
                    if rack < 0 or not _on_rack(partition, rack, self.heaps.replica_rack_start,
                                                self.heaps.replica_rack):
                        continue
                if not self.active[other]:
                    raise JavaAssignorFailure(f"member {r.member_ids[other]!r} is referenced while balancing but "
                                          "holds a fixed assignment (Java: NullPointerException)")
                if holder_load > r.load[other] + 1:
                    best = self.heaps.first_taking(topic)
                    if best < 0:
                        raise JavaAssignorFailure(f"no member can take partition {partition} (Java: assertion)")
                    self.move(partition, best)
                    return True
        return False
