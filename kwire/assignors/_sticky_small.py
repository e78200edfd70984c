"""``cooperative-sticky`` for a leader's small group, on plain lists.

A leader of a few members pays the array path's fixed cost (columns, an
``ArrayGroup``, the kernels' setup) many times over the work of Java's
algorithm itself.  Where no member has a rack, this module runs exactly the
reference's steps (:mod:`kwire.assignors._sticky_order`, ``assign_in_order``:
owner resolution, Java's constrained or general path, and
``CooperativeStickyAssignor``'s withholding of the partitions changing
owner) on the members as the leader reads them, with each member id's
``String.hashCode`` remembered across calls.  Any other group (racks, many
members, odd input) is left to the array path, as is an answer that is not a
valid assignment (the array path repairs it) or where Java throws.
"""

from __future__ import annotations

from typing import Dict, List, NamedTuple, Optional, Tuple

from ._javaorder import capacity_after, small_string_map_positions
from ._sticky_order import assign_in_order
from ._sticky_rules import JavaAssignorFailure
from ._userdata import cooperative_generation, protocol_generation

#: The most members the small path takes.  Below 9 keys no bin of a Java ``HashMap`` can reach the
#: length that grows a small table (``treeifyBin``), so the members' map order is the size rule's alone.
SMALL_STICKY_MEMBERS = 8
#: The most partitions (of the subscribed topics) the small path assigns.
SMALL_STICKY_PARTITIONS = 1 << 12


class SmallMember(NamedTuple):
    """A member as the reference reads it (the fields of :class:`~kwire.assignors._model.MemberInput` it
    uses), made for the price of a tuple: a leader makes one per member at every rebalance."""

    member_id: str
    group_instance_id: Optional[str]
    topics: Tuple[str, ...]
    owned: Tuple[Tuple[str, int], ...]
    generation: int
    subscription_generation: int


_new_member = SmallMember._make


class _NoRacks:
    """The reference's rack facts when no member has a rack: nothing mismatches, nothing is crowded."""

    active = False
    crowd = None
    member_rack: Dict[str, str] = {}
    partition_racks: Dict[Tuple[str, int], set] = {}

    @staticmethod
    def mismatch(member, tp):
        return False


def small_cooperative_members(read, counts: Dict[str, int]) -> Optional[List[SmallMember]]:
    """What the leader reads of each JoinGroup member for ``cooperative-sticky`` (``read``: its
    ``(member_id, group_instance_id, Subscription)``), cleaned up as ``_api._sanitized`` cleans it (topics
    listed once, claims past a topic's known end dropped); None for a group the small path does not take:
    a negative claim or a rack."""
    cleaned: Dict[tuple, tuple] = {}
    rows = []
    for member_id, instance_id, sub in read:
        topics = sub.topics
        if topics is None or sub.rack_id:
            return None
        topics = tuple(topics)
        unique = cleaned.get(topics)
        if unique is None:
            for t in topics:
                if type(t) is not str:
                    return None
            unique = cleaned[topics] = tuple(dict.fromkeys(topics))
        owned = []
        for entry in sub.owned_partitions or ():
            topic, partitions = entry.topic, entry.partitions
            if not partitions:
                continue
            if type(topic) is not str:
                return None
            count = counts.get(topic)
            # One pass for the lowest and highest claim (as min() and max() would find them).
            whole = True
            for p in partitions:
                if p < 0:
                    return None
                if count is not None and p >= count:
                    whole = False
            if whole:
                owned += [(topic, p) for p in partitions]
            else:
                owned += [(topic, p) for p in partitions if p < count]
        generation_id = sub.generation_id
        if generation_id is not None and generation_id >= 0:
            # A v2+ Subscription's generationId is both generations (what the two calls below answer for it,
            # without reading the userData).
            generation = subscription_generation = generation_id
        else:
            try:
                generation = cooperative_generation(generation_id, sub.user_data)
            except Exception:  # noqa: BLE001 - the array path reads these bytes again and says what is wrong
                return None
            subscription_generation = protocol_generation(generation_id)
        rows.append(_new_member((member_id, instance_id, unique, tuple(owned), generation,
                                 subscription_generation)))
    return rows


def small_cooperative_sticky(members: List[SmallMember], counts: Dict[str, int]
                             ) -> Optional[Dict[str, List[Tuple[str, List[int]]]]]:
    """Java's cooperative-sticky answer for ``members`` (in JoinGroup order, ids str and distinct, topics
    distinct, claims cleaned up as ``_api._sanitized`` cleans them, no rack) on ``counts`` (checked), as each
    member's ``[(topic, [partition, ...]), ...]`` (topics in order of first appearance in its list, as its
    Assignment is written); None for a group the small path does not take, or whose answer the array path
    must repair."""
    n = len(members)
    if not n or n > SMALL_STICKY_MEMBERS:
        return None
    by_id = {m.member_id: m for m in members}
    if len(by_id) != n:
        return None
    ids = list(by_id)
    order = ids if n == 1 else [ids[i] for i in small_string_map_positions(ids, capacity_after(n))]
    wanted = set()
    last = None
    for m in members:
        # Members of one subscription share its tuple (small_cooperative_members makes one per subscription).
        if m.topics is not last:
            last = m.topics
            wanted.update(last)
    topic_counts = {t: c for t, c in counts.items() if t in wanted and c > 0}
    if sum(topic_counts.values()) > SMALL_STICKY_PARTITIONS:
        return None
    try:
        result = assign_in_order(order, by_id, topic_counts, _NoRacks, True)
    except JavaAssignorFailure:
        return None   # the array path answers for Java's failure
    out: Dict[str, List[Tuple[str, List[int]]]] = {}
    seen = set()
    given = 0
    for m in members:
        subscribed = m.topics
        groups: Dict[str, List[int]] = {}
        mine = result[m.member_id]
        for topic, p in mine:
            partitions = groups.get(topic)
            if partitions is None:
                groups[topic] = [p]
            else:
                partitions.append(p)
        # Valid: existing partitions of topics the member subscribes to, each given once (checked per topic
        # here, and once for the whole group by the count of distinct pairs below).
        for topic, partitions in groups.items():
            if topic not in subscribed:
                return None
            count = topic_counts.get(topic, 0)
            for p in partitions:
                if p < 0 or p >= count:
                    return None
        seen.update(mine)
        given += len(mine)
        out[m.member_id] = list(groups.items())
    return out if len(seen) == given else None
