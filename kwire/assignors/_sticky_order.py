"""The Java sticky assignors' run once its inputs are read: :func:`assign_in_order` and what only it needs.

This is the behavioural reference of Apache Kafka's ``StickyAssignor`` / ``CooperativeStickyAssignor``
(trunk 1eb7644349cb), list order included; :mod:`kwire.assignors._sticky_py` (the pure twin, which reads a
group's inputs into these arguments) re-exports every name here, and the small cooperative-sticky path
(:mod:`kwire.assignors._sticky_small`) calls :func:`assign_in_order` directly.  It lives apart from the twin so
that the build can also compile it from this very source (kwire/_compiled.py): a classic group's leader runs it
at every cooperative rebalance.

The steps keep Java's observable order of operations (see the twin's notes): owner conflicts settled pairwise in
the leader's ``HashMap`` order, and a partition moving against another one swapped for the first element of a
Java ``HashSet<TopicPartition>``, whose bucket layout :class:`_javaorder.JavaHashTable` models.
"""

from __future__ import annotations

import operator
from typing import Dict, List, Optional, Set, Tuple

from ._javaorder import JavaHashTable, java_sorted, spread, topic_partition_hash, utf16_key
from ._model import MemberInput
from ._sticky_rules import JavaAssignorFailure, balance_score, move_budget

TP = Tuple[str, int]

#: The sort key (partition, topic) of a (topic, partition) pair, for topic names whose Python order is Java's.
_PARTITION_THEN_TOPIC = operator.itemgetter(1, 0)


class _Movements:
    """Which partitions moved between which members during balancing."""

    def __init__(self):
        self.by_topic: Dict[str, Dict[Tuple[str, str], JavaHashTable]] = {}
        self.pair_of: Dict[TP, Tuple[str, str]] = {}

    def _drop(self, tp: TP) -> Tuple[str, str]:
        pair = self.pair_of.pop(tp)
        sets = self.by_topic[tp[0]]
        s = sets[pair]
        s.discard(tp)
        if not len(s):
            del sets[pair]
        if not sets:
            del self.by_topic[tp[0]]
        return pair

    def _record(self, tp: TP, pair: Tuple[str, str]) -> None:
        self.pair_of[tp] = pair
        sets = self.by_topic.setdefault(tp[0], {})
        s = sets.get(pair)
        if s is None:
            s = sets[pair] = JavaHashTable()  # new HashSet<TopicPartition>()
        s.add(tp, spread(topic_partition_hash(tp[0], tp[1])))

    def move(self, tp: TP, src: str, dst: str) -> None:
        if tp in self.pair_of:
            origin = self._drop(tp)[0]
            # a partition going back where it started leaves no trace
            if origin != dst:
                self._record(tp, (origin, dst))
        else:
            self._record(tp, (src, dst))

    def substitute(self, tp: TP, src: str, dst: str) -> TP:
        """The partition to move instead of ``tp``: one already travelling
        the opposite way, so the pair of moves cancels out."""
        sets = self.by_topic.get(tp[0])
        if sets is None:
            return tp
        if tp in self.pair_of:
            src = self.pair_of[tp][0]
        back = sets.get((dst, src))
        if back is None:
            return tp
        return back.first()



# --------------------------------------------------------------------------
# owner resolution
# --------------------------------------------------------------------------

def resolve_owners(members_in_order: List[MemberInput], counts: Dict[str, int]):
    """Settle who owns what before assigning; also decides which path runs.

    Returns ``(all_equal, owned, contested, max_generation)``: ``owned`` maps
    each member to the claims it keeps (claim order), ``contested`` holds the
    partitions two members of one generation both claimed."""
    all_equal = True
    first_topics: Set[str] = set()
    owned: Dict[str, List[TP]] = {}
    claimant: Dict[TP, str] = {}
    contested: Set[TP] = set()
    proto_gen = {m.member_id: m.subscription_generation for m in members_in_order}
    max_gen = -1
    for m in members_in_order:
        if not first_topics:
            first_topics = set(m.topics)
        elif all_equal and not (len(m.topics) == len(first_topics)
                                and first_topics.issuperset(m.topics)):
            all_equal = False
        gen = m.generation
        if gen > max_gen:
            max_gen = gen
        mine: List[TP] = []
        owned[m.member_id] = mine
        for tp in m.owned:
            if tp[0] not in counts:
                continue
            other = claimant.get(tp)
            if other is None:
                mine.append(tp)
                claimant[tp] = m.member_id
                continue
            other_gen = proto_gen[other]
            if gen == other_gen:
                contested.add(tp)
                _remove_first(owned[other], tp)
                claimant[tp] = m.member_id
            elif gen > other_gen:
                mine.append(tp)
                _remove_first(owned[other], tp)
                claimant[tp] = m.member_id
    return all_equal, owned, contested, max_gen


def _remove_first(lst: list, item) -> bool:
    try:
        lst.remove(item)
        return True
    except ValueError:
        return False


def _walk_unassigned(all_sorted: List[TP], assigned_sorted: List[TP]) -> List[TP]:
    """Everything in ``all_sorted`` not matched by a merge walk over
    ``assigned_sorted``.  Java walks both lists with one cursor each, and an
    assigned entry that never appears in the full list (a partition number
    beyond the topic's count) stalls the cursor; that is reproduced."""
    if not assigned_sorted:
        return list(all_sorted)
    out = []
    end = len(assigned_sorted)
    k = 0
    nxt = assigned_sorted[0]
    for tp in all_sorted:
        if k == end or tp != nxt:
            out.append(tp)
        else:
            k += 1
            if k < end:
                nxt = assigned_sorted[k]
    return out


def _partition_then_utf16(tp: TP):
    return (tp[1], utf16_key(tp[0]))


def _utf16_then_partition(tp: TP):
    return (utf16_key(tp[0]), tp[1])


def _sorted_by_crowd(todo: List[TP], crowd) -> None:
    todo.sort(key=lambda tp: crowd.get(tp, 0))


def _give(result: Dict[str, List[TP]], revoked: Set[TP], contested: Set[TP], transferring: Dict[TP, str], tp: TP,
          mid: str) -> int:
    """``mid`` takes ``tp`` (withheld for a round when it changes owner); its new load."""
    lst = result[mid]
    lst.append(tp)
    if tp in revoked or tp in contested:
        transferring[tp] = mid
    return len(lst)


# --------------------------------------------------------------------------
# all subscriptions equal
# --------------------------------------------------------------------------

def constrained_assign(order: List[str], owned: Dict[str, List[TP]], contested: Set[TP],
                       counts: Dict[str, int], racks):
    """Quota-based assignment for groups whose members share one subscription.

    Returns ``(assignment, transferring)`` where ``transferring`` maps each
    partition handed to a member other than its previous holder, which the
    cooperative protocol must withhold for one round."""
    total = sum(counts.values())
    n = len(order)
    lo, hi, n_over = total // n, -(-total // n), total % n
    over = 0
    result: Dict[str, List[TP]] = {m: [] for m in order}
    kept_all: List[TP] = []
    revoked: Set[TP] = set()
    under: List[str] = []
    at_min: List[str] = []
    # Claims here are on topics of ``counts``: with ASCII names, Python's (topic, partition) order is Java's.
    plain = "".join(counts).isascii()
    by_partition = _PARTITION_THEN_TOPIC if plain else _partition_then_utf16
    for mid in order:
        mine = sorted(owned[mid] if not racks.active else [tp for tp in owned[mid] if not racks.mismatch(mid, tp)],
                      key=by_partition)
        if contested:
            mine = [tp for tp in mine if tp not in contested]
        if len(mine) < lo:
            result[mid].extend(mine)
            kept_all.extend(mine)
            under.append(mid)
        elif len(mine) >= hi and over < n_over:
            over += 1
            if over == n_over:
                at_min.clear()
            result[mid].extend(mine[:hi])
            kept_all.extend(mine[:hi])
            revoked.update(mine[hi:])
        else:
            result[mid].extend(mine[:lo])
            kept_all.extend(mine[:lo])
            revoked.update(mine[lo:])
            if over < n_over:
                at_min.append(mid)

    topics = java_sorted(counts)
    everything = [(t, p) for t in topics for p in range(counts[t])]
    kept_sorted = sorted(kept_all) if plain else sorted(kept_all, key=_utf16_then_partition)
    todo = _walk_unassigned(everything, kept_sorted)

    under = java_sorted(under)
    at_min = java_sorted(at_min)
    if racks.crowd is not None:
        _sorted_by_crowd(todo, racks.crowd)

    transferring: Dict[TP, str] = {}

    if racks.active:
        cursor = 0
        rest = []
        for tp in todo:
            chosen = None
            k = racks.next_match(tp, under, cursor)
            if k >= 0:
                chosen = under[k]
                size = len(result[chosen]) + 1
                if size >= lo:
                    under.remove(chosen)
                    if size < hi:
                        at_min.append(chosen)
                else:
                    k += 1
                cursor = k % len(under) if under else 0
            elif at_min:
                k = racks.next_match(tp, at_min, 0)
                if k >= 0:
                    chosen = at_min[k]
                    if len(result[chosen]) + 1 == hi:
                        del at_min[k]
            if chosen is not None:
                _give(result, revoked, contested, transferring, tp, chosen)
            else:
                rest.append(tp)
        todo = rest

    # ``under`` is walked round-robin with a cursor that survives removals;
    # once it is empty, members at exactly the minimum are topped up FIFO.
    pos = 0
    for tp in todo:
        from_under = False
        if pos < len(under):
            mid = under[pos]
            pos += 1
            from_under = True
        elif not under and not at_min:
            raise JavaAssignorFailure("sticky assignor ran out of members with spare quota "
                                  "(Java: IllegalStateException 'No more unfilled consumers')")
        elif not under:
            mid = at_min.pop(0)
        else:
            pos = 0
            mid = under[pos]
            pos += 1
            from_under = True
        size = _give(result, revoked, contested, transferring, tp, mid)
        if size == lo:
            if not from_under:
                raise JavaAssignorFailure("sticky assignor reached an inconsistent state "
                                      "(Java: IllegalStateException from Iterator.remove)")
            pos -= 1
            del under[pos]
            at_min.append(mid)
        elif size == hi:
            over += 1

    # verifyUnfilledMembers; the compiled twin's end of _constrained is the
    # same check (and must raise the same way)
    if under:
        if over != n_over:
            raise JavaAssignorFailure("sticky assignor could not reach the expected number of members "
                                  "above the minimum quota (Java: IllegalStateException)")
        for mid in under:
            if len(result[mid]) != lo:
                raise JavaAssignorFailure(f"member {mid!r} ends below the minimum quota "
                                      "(Java: IllegalStateException)")
    return result, transferring


# --------------------------------------------------------------------------
# subscriptions differ
# --------------------------------------------------------------------------

class _General:
    """The balancing search used when members subscribe to different topics."""

    def __init__(self, order, by_id, owned, counts, racks, max_gen):
        self.order = order
        self.by_id = by_id
        self.counts = counts
        self.racks = racks
        self.max_gen = max_gen
        self.total = sum(counts.values())
        self.topic_members: Dict[str, List[str]] = {t: [] for t in counts}
        self.member_topics: Dict[str, List[str]] = {}
        for mid in order:
            mine = []
            self.member_topics[mid] = mine
            for t in by_id[mid].topics:
                if t in counts:
                    mine.append(t)
                    self.topic_members[t].append(mid)
        self.current: Dict[str, List[TP]] = owned
        self.holder: Dict[TP, str] = {}
        for mid in order:
            for tp in owned[mid]:
                self.holder[tp] = mid
        tm = self.topic_members
        # by (subscribers, UTF-16 name): names differ, so sorting the triples gives the order of that key
        topics = [t for _n, _key, t in sorted([(len(tm[t]), utf16_key(t), t) for t in counts])]
        self.topic_position = {t: k for k, t in enumerate(topics)}   # names differ: a place stands for a key
        self.all_partitions: List[TP] = [(t, p) for t in topics for p in range(counts[t])]
        self.active: Set[str] = set()
        self.rank = {mid: i for i, mid in enumerate(sorted(order, key=utf16_key))}
        self.revocation_required = False
        self.moves = _Movements()
        self.moves_made = 0
        self.balanced_at, self.balanced_was = None, False   # moves_made at _reassign's last _balanced(), its answer
        self.move_budget = move_budget(self.total, len(order))

    # -- the ordered set of members keyed by (load, id) ------------------
    def _key(self, mid):
        return (len(self.current[mid]), self.rank[mid])

    def _first_taking(self, topic: str, tp: Optional[TP] = None) -> Optional[str]:
        """First member of Java's (load, id)-ordered set that can take ``topic``."""
        best = None
        best_key = None
        active = self.active
        current = self.current
        rank = self.rank
        for mid in self.topic_members[topic]:
            if mid not in active:
                continue
            if tp is not None and self.racks.mismatch(mid, tp):
                continue
            k = (len(current[mid]), rank[mid])
            if best_key is None or k < best_key:
                best, best_key = mid, k
        return best

    def _max_size(self, mid: str) -> int:
        topics = self.member_topics[mid]
        if len(topics) == len(self.counts):
            return self.total
        counts = self.counts
        total = 0
        for t in topics:
            total += counts[t]
        return total

    def build(self) -> Dict[str, List[TP]]:
        prev = self._previous_owners()
        place = self.topic_position
        # by (topic's place, partition), claims on counts' topics: equal keys are equal pairs
        assigned = [tp for _t, _p, tp in sorted([(place[tp[0]], tp[1], tp) for tp in self._keep_owned()])]
        unassigned = _walk_unassigned(self.all_partitions, assigned)
        self.active = set(self.current)
        self._balance(prev, unassigned)
        return self.current

    def _previous_owners(self) -> Dict[TP, Tuple[str, int]]:
        prev: Dict[TP, Tuple[str, int]] = {}
        for mid in self.order:
            m = self.by_id[mid]
            gen = m.generation
            if gen < self.max_gen:
                for tp in m.owned:
                    old = prev.get(tp)
                    if old is None or gen > old[1]:
                        prev[tp] = (mid, gen)
        return prev

    def _keep_owned(self) -> List[TP]:
        kept: List[TP] = []
        racks, rack_aware = self.racks, self.racks.active   # without racks nothing mismatches
        for mid in self.order:
            subs = set(self.by_id[mid].topics)
            keep = []
            for tp in self.current[mid]:
                if tp[0] not in self.topic_members:
                    self.holder.pop(tp, None)
                elif tp[0] not in subs or (rack_aware and racks.mismatch(mid, tp)):
                    self.revocation_required = True
                else:
                    keep.append(tp)
                    kept.append(tp)
            self.current[mid][:] = keep
        return kept

    def _assign_new(self, todo: List[TP], use_racks: bool) -> List[TP]:
        left = []
        for tp in todo:
            if not self.topic_members[tp[0]]:
                left.append(tp)
                continue
            mid = self._first_taking(tp[0], tp if use_racks else None)
            if mid is None:
                left.append(tp)
                continue
            self.current[mid].append(tp)
            self.holder[tp] = mid
        return left

    def _balance(self, prev, unassigned: List[TP]) -> None:
        initializing = not self.current[max(self.active, key=self._key)] if self.active else True
        todo = unassigned
        if self.racks.active:
            todo = self._assign_new(todo, True)
        self._assign_new(todo, False)

        movable_topics = {t for t, ms in self.topic_members.items() if len(ms) >= 2}
        reassignable = [tp for tp in self.all_partitions if tp[0] in movable_topics]
        unassigned = [tp for tp in unassigned if tp[0] in movable_topics]

        fixed: Dict[str, List[TP]] = {}
        for mid in self.order:
            if not self._can_move(mid, movable_topics):
                self.active.discard(mid)
                fixed[mid] = self.current.pop(mid)

        saved = {mid: list(lst) for mid, lst in self.current.items()}
        saved_holder = dict(self.holder)

        if not self.revocation_required:
            self._reassign(unassigned, prev)
        changed = self._reassign(reassignable, prev)

        if (not initializing and changed
                and balance_score(map(len, self.current.values())) >= balance_score(map(len, saved.values()))):
            self.current.clear()
            self.current.update(saved)
            self.holder = saved_holder
        self.current.update(fixed)

    def _can_move(self, mid: str, movable_topics) -> bool:
        mine = self.current[mid]
        if len(mine) < self._max_size(mid):
            return True
        for tp in mine:
            if tp[0] in movable_topics:
                return True
        return False

    def _size(self, mid: str) -> int:
        lst = self.current.get(mid)
        if lst is None:
            raise JavaAssignorFailure(f"member {mid!r} is referenced while balancing but holds a fixed "
                                  "assignment (Java: NullPointerException)")
        return len(lst)

    def _balanced(self) -> bool:
        """Java's ``isBalanced``: loads differ by at most one, or no member
        could take a partition from one holding 2+ more."""
        sizes = [len(self.current[mid]) for mid in self.active]
        if not sizes or min(sizes) >= max(sizes) - 1:
            return True
        current = self.current
        holder_of: Dict[TP, str] = {tp: mid for mid, lst in current.items() for tp in lst}   # its last holder
        shared = len(holder_of) != sum(map(len, current.values()))   # some partition held more than once
        if not shared and self._every_partition_held(holder_of):
            return self._balanced_by_topic()
        return self._balanced_by_partition(holder_of)

    def _every_partition_held(self, holder_of) -> bool:
        held: Dict[str, int] = {}
        counts = self.counts
        for t, p in holder_of:
            if p < counts.get(t, 0):
                held[t] = held.get(t, 0) + 1
        member_topics = self.member_topics
        for mid in self.active:
            for t in member_topics[mid]:
                if held.get(t, 0) != counts[t]:
                    return False
        return True

    def _balanced_by_topic(self) -> bool:
        # With every partition held exactly once, "some partition of t held
        # by another member with 2+ more" only needs the two heaviest
        # distinct holders of each topic.
        top: Dict[str, list] = {}
        counts = self.counts
        for mid, lst in self.current.items():
            n = len(lst)
            # a stale claim past the topic's end is never looked at by Java
            for t in {t for t, p in lst if p < counts.get(t, 0)}:
                e = top.get(t)
                if e is None:
                    top[t] = [n, mid, -1]
                elif n > e[0]:
                    e[2], e[0], e[1] = e[0], n, mid
                elif n > e[2]:
                    e[2] = n
        for mid in self.active:
            n = len(self.current[mid])
            if n == self._max_size(mid):
                continue
            for t in self.member_topics[mid]:
                e = top.get(t)
                if e is not None and (e[2] if e[1] == mid else e[0]) > n + 1:
                    return False
        return True

    def _balanced_by_partition(self, holder_of) -> bool:
        # the literal check, kept for inputs where a partition is held twice
        # or not at all (stale claims), so Java's outcome is reproduced there
        for mid in self.active:
            mine = self.current[mid]
            n = len(mine)
            if n == self._max_size(mid):
                continue
            have = set(mine)
            for t in self.member_topics[mid]:
                for p in range(self.counts[t]):
                    tp = (t, p)
                    if tp in have:
                        continue
                    other = holder_of.get(tp)
                    if other is None:
                        raise JavaAssignorFailure(f"partition {tp!r} has no holder while balancing "
                                              "(Java: NullPointerException)")
                    if n + 1 < len(self.current[other]):
                        return False
        return True

    def _reassign(self, partitions: List[TP], prev) -> bool:
        performed = False
        # Only _move changes the lists here: until one, isBalanced's answer (Java's, per partition) stands.
        self.balanced_at = None
        while True:
            modified = False
            for tp in partitions:
                if self.balanced_at != self.moves_made:
                    self.balanced_was = self._balanced()
                    self.balanced_at = self.moves_made
                if self.balanced_was:
                    break
                mid = self.holder.get(tp)
                if mid is None:
                    raise JavaAssignorFailure(f"partition {tp!r} has no holder while balancing "
                                          "(Java: NullPointerException)")
                load = self._size(mid)
                old = prev.get(tp)
                if old is not None and load > self._size(old[0]) + 1:
                    self._move(tp, old[0])
                    performed = modified = True
                    continue
                moved = False
                my_rack = self.racks.member_rack.get(mid)
                if my_rack is not None:
                    reps = self.racks.partition_racks.get(tp)
                    if reps and my_rack in reps:
                        for other in self.topic_members[tp[0]]:
                            r = self.racks.member_rack.get(other)
                            if r is None or r not in reps:
                                continue
                            if load > self._size(other) + 1:
                                self._move_to_best(tp)
                                moved = True
                                break
                if not moved:
                    for other in self.topic_members[tp[0]]:
                        if load > self._size(other) + 1:
                            self._move_to_best(tp)
                            moved = True
                            break
                if moved:
                    performed = modified = True
            if not modified:
                return performed

    def _move_to_best(self, tp: TP) -> None:
        dst = self._first_taking(tp[0])
        if dst is None:
            raise JavaAssignorFailure(f"no member can take {tp!r} (Java: assertion)")
        self._move(tp, dst)

    def _move(self, tp: TP, dst: str) -> None:
        self.moves_made += 1
        if self.moves_made > self.move_budget:
            raise JavaAssignorFailure("sticky balancing does not converge for this input "
                                  "(Java would loop forever)")
        src = self.holder[tp]
        actual = self.moves.substitute(tp, src, dst)
        src = self.holder[actual]
        self.moves.move(actual, src, dst)
        _remove_first(self.current[src], actual)
        self.current[dst].append(actual)
        self.holder[actual] = dst


# --------------------------------------------------------------------------
# entry point
# --------------------------------------------------------------------------

def _withhold(assignment: Dict[str, List[TP]], transferring: Dict[TP, str]) -> None:
    for tp, mid in transferring.items():
        _remove_first(assignment[mid], tp)


def _computed_transfers(order: List[str], by_id, assignment: Dict[str, List[TP]]) -> Dict[TP, str]:
    added: Dict[TP, str] = {}
    revoked: Set[TP] = set()
    for mid in order:
        owned = by_id[mid].owned
        mine = assignment[mid]
        owned_set = set(owned)
        for tp in mine:
            if tp not in owned_set:
                added[tp] = mid
        mine_set = set(mine)
        for tp in owned:
            if tp not in mine_set:
                revoked.add(tp)
    return {tp: mid for tp, mid in added.items() if tp in revoked}

def assign_in_order(order: List[str], by_id: Dict[str, MemberInput], counts: Dict[str, int], racks,
                    cooperative: bool) -> Dict[str, List[TP]]:
    """Java's run once its inputs are read: ``order``, the member ids in the leader's HashMap order;
    ``by_id``, each member (valid, cleaned up); ``counts``, the subscribed topics that have partitions
    (:func:`topic_counts`); ``racks``, the rack facts (:class:`_Racks`, or an object with the same
    attributes).  Returns each member's list."""
    all_equal, owned, contested, max_gen = resolve_owners([by_id[m] for m in order], counts)
    if all_equal:
        result, transferring = constrained_assign(order, owned, contested, counts, racks)
        if cooperative:
            _withhold(result, transferring)
    else:
        result = _General(order, by_id, owned, counts, racks, max_gen).build()
        if cooperative:
            _withhold(result, _computed_transfers(order, by_id, result))
    return result
