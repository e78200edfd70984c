"""A STAND-IN for ``kwire.assignors.assign_server``, used only while that function is missing.

The server-side assignors (Kafka's ``UniformAssignor`` and ``RangeAssignor``) live in ``kwire.assignors``.
Until they are in the tree, the consumer-group coordinator falls back to this module so that its state
machine can run and be tested: it gives a *valid* assignment (every subscribed partition to exactly one
subscriber), *sticky* (a member keeps what its previous target gave it, up to its quota) and *balanced*
(homogeneous subscriptions: counts differ by at most one; otherwise nobody keeps more than its
share of a topic, and free partitions go to the least-loaded subscriber).  It is not Kafka's algorithm and makes no claim
to match Kafka's output; the coordinator reports which one it used (``ConsumerGroupCoordinator.assignor_source``).

Same call shape as the real one: ``assign_server(name, members={id: ServerMember}, topics={id: TopicMetadata})
-> {member id: {topic id: [partitions]}}``, raising ``kwire.errors.AssignmentError`` for a subscribed topic
the describer does not know.
"""

import heapq
from typing import NamedTuple, Optional, Sequence

from kwire.errors import AssignmentError

__all__ = ["ServerMember", "TopicMetadata", "assign_server", "NAMES"]

NAMES = ("uniform", "range")


class ServerMember(NamedTuple):
    subscribed_topic_ids: Sequence[bytes]
    assignment: dict
    instance_id: Optional[str] = None
    rack: Optional[str] = None
    unresolved_topic_names: Sequence[str] = ()


class TopicMetadata(NamedTuple):
    name: str
    partitions: int
    partition_racks: Optional[dict] = None


def assign_server(name, members, topics):
    if name not in NAMES:
        raise AssignmentError(f"unknown server assignor {name!r}")
    result = {member_id: {} for member_id in members}
    if not members:
        return result
    subscriptions = {}
    checked = {}   # members usually share one subscription object: check each distinct one once
    for member_id, spec in members.items():
        key = id(spec.subscribed_topic_ids)
        ids = checked.get(key)
        if ids is None:
            ids = frozenset(spec.subscribed_topic_ids)
            unknown = ids.difference(topics)
            if unknown:
                raise AssignmentError(f"member {member_id!r} subscribes to topic {min(unknown).hex()} which is not "
                                      f"known")
            checked[key] = ids
        subscriptions[member_id] = ids
    first = next(iter(subscriptions.values()))
    if all(ids is first or ids == first for ids in subscriptions.values()):
        _homogeneous(members, sorted(first), topics, result)
    else:
        _heterogeneous(members, subscriptions, topics, result)
    return {m: {t: sorted(ps) for t, ps in a.items()} for m, a in result.items()}


def _homogeneous(members, topic_ids, topics, result):
    total = sum(topics[t].partitions for t in topic_ids)
    n = len(members)
    base, extra = divmod(total, n)
    taken = {t: bytearray(topics[t].partitions) for t in topic_ids}
    counts = {}
    # Keep the previous target up to base + 1; only `extra` members may end above base.
    for member_id, spec in members.items():
        kept = 0
        limit = base + 1 if extra > 0 else base
        own = result[member_id]
        for topic_id, partitions in spec.assignment.items():
            flags = taken.get(topic_id)
            if flags is None:
                continue
            for p in partitions:
                if kept >= limit:
                    break
                if 0 <= p < len(flags) and not flags[p]:
                    flags[p] = 1
                    own.setdefault(topic_id, []).append(p)
                    kept += 1
        if kept > base:
            extra -= 1
        counts[member_id] = kept
    free = [(t, p) for t in topic_ids for p, flag in enumerate(taken[t]) if not flag]
    i = 0
    for member_id in members:
        want = base + (1 if counts[member_id] > base else 0)
        if counts[member_id] <= base and extra > 0:
            want, extra = base + 1, extra - 1
        own = result[member_id]
        while counts[member_id] < want and i < len(free):
            t, p = free[i]
            own.setdefault(t, []).append(p)
            counts[member_id] += 1
            i += 1


def _heterogeneous(members, subscriptions, topics, result):
    taken = {t: bytearray(m.partitions) for t, m in topics.items()}
    subscribers = {t: 0 for t in topics}
    for ids in subscriptions.values():
        for t in ids:
            subscribers[t] += 1
    # A member keeps at most its fair share of each topic, so a newcomer gets some of every topic it wants.
    quota = {t: -(-topics[t].partitions // n) for t, n in subscribers.items() if n}
    counts = {}
    for member_id, spec in members.items():
        own = result[member_id]
        kept = 0
        for topic_id, partitions in spec.assignment.items():
            flags = taken.get(topic_id)
            if flags is None or topic_id not in subscriptions[member_id]:
                continue
            for p in partitions[:quota[topic_id]]:
                if 0 <= p < len(flags) and not flags[p]:
                    flags[p] = 1
                    own.setdefault(topic_id, []).append(p)
                    kept += 1
        counts[member_id] = kept
    order = {member_id: i for i, member_id in enumerate(members)}
    for topic_id in sorted(taken):
        subscribers = [m for m in members if topic_id in subscriptions[m]]
        if not subscribers:
            continue
        heap = [(counts[m], order[m], m) for m in subscribers]
        heapq.heapify(heap)
        for p, flag in enumerate(taken[topic_id]):
            if flag:
                continue
            n, k, m = heapq.heappop(heap)
            result[m].setdefault(topic_id, []).append(p)
            counts[m] = n + 1
            heapq.heappush(heap, (n + 1, k, m))
