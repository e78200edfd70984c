"""The server-side assignors of KIP-848 at the array level, and their registry.

A coordinator computes a group's target assignment with the assignor the
members ask for (``ServerAssignor`` in ConsumerGroupHeartbeat) or the group's
default, the first of Kafka's ``group.consumer.assignors``: ``uniform``.
:func:`assign_server_arrays` takes the group in columns
(:class:`ServerGroupArrays`) and returns CSR columns
(:class:`ServerAssignment`) with no Python object per partition; the member
level is in ``_server_members.py``.

The Java orders that reach the output are derived here, once per call, from
``_javaorder``: the member map's order (in the kernels, for speed), the
homogeneous builder's ``new HashSet<>(first member's topic ids)``, and the
range assignor's static-first member sort.
"""

from __future__ import annotations

import threading
import types
from collections import Counter
from dataclasses import dataclass
from typing import Callable, Dict, Mapping, Optional

import numpy as np

from kwire import _impl
from kwire.errors import ArgumentValueError, AssignmentError

from ._javaorder import (hashset_capacity_from, java_hash_iteration, member_info_order, small_string_map_positions,
                         uuid_hashes)
from ._server_common import (
    MemberLevelColumns,
    ServerAssignment,
    ServerGroupArrays,
    check_columns,
    unknown_topic_error,
)
from ._server_lists import heterogeneous_lists, homogeneous_lists


def server_kernels(implementation):
    """The kernels of the server assignors, per the one switch (or ``implementation``)."""
    return _impl.load("server", implementation, "kwire.assignors")


def _empty(m_count: int) -> ServerAssignment:
    return ServerAssignment(np.zeros(m_count, dtype=bool), np.zeros(m_count + 1, dtype=np.int64),
                            np.zeros(0, dtype=np.int32), np.zeros(1, dtype=np.int64), np.zeros(0, dtype=np.int32))


def is_homogeneous(group: ServerGroupArrays, member_sub: np.ndarray, sub_indptr, sub_topics) -> bool:
    """Kafka's ``ModernGroup.subscriptionType``: HOMOGENEOUS when every
    subscribed topic name (resolved, or listed as unresolved) is subscribed by
    every member, i.e. when all members subscribe to the same set of names."""
    if group.subscription_type is not None:
        kind = group.subscription_type.lower()
        if kind not in ("homogeneous", "heterogeneous"):
            raise ArgumentValueError(f"subscription_type is 'homogeneous' or 'heterogeneous', not {kind!r}")
        return kind == "homogeneous"
    rows = np.flatnonzero(np.bincount(member_sub, minlength=len(sub_indptr) - 1))
    if len(rows) <= 1:
        return True
    names = group.topic_names
    keys = set()
    for r in rows.tolist():
        topics = sub_topics[sub_indptr[r]:sub_indptr[r + 1]].tolist()
        key = set(topics) if names is None else {names[t] for t in topics}
        if group.sub_unresolved is not None:
            key.update(("unresolved", n) if names is None else n for n in group.sub_unresolved[r])
        keys.add(frozenset(key))
        if len(keys) > 1:
            return False
    return True


#: ``hashset_topic_order``'s positions by the ids' bytes: a coordinator computes a group's target at every
#: epoch bump, with the same subscribed topics each time.
_HASHSET_ORDERS: Dict[bytes, np.ndarray] = {}
_HASHSET_ORDERS_MAX = 4096


def hashset_topic_order(topic_ids: np.ndarray, topics: np.ndarray) -> np.ndarray:
    """``topics`` (indices, in the order a Set iterated them) in the order of
    ``new HashSet<>(that set)``: the Uuid hash table Kafka's homogeneous builder builds."""
    topics = np.asarray(topics, dtype=np.int64)
    if not len(topics):
        return topics.astype(np.int32)
    ids = topic_ids[topics]
    key = ids.tobytes()
    pos = _HASHSET_ORDERS.get(key)
    if pos is None:
        h = uuid_hashes(ids).view(np.uint32).astype(np.int64)
        halves = ids.view(">i8").reshape(-1, 2)

        def less(a, b):
            return tuple(halves[a]) < tuple(halves[b])

        pos = np.asarray(java_hash_iteration(range(len(topics)), h ^ (h >> 16), hashset_capacity_from(len(topics)),
                                             less), dtype=np.int64)
        if len(_HASHSET_ORDERS) >= _HASHSET_ORDERS_MAX:
            _HASHSET_ORDERS.clear()
        _HASHSET_ORDERS[key] = pos
    return topics[pos].astype(np.int32)


def _scratch_result(group: ServerGroupArrays) -> bool:
    return type(group) is MemberLevelColumns and group.scratch


def uniform_arrays(group: ServerGroupArrays, implementation: Optional[str] = None) -> ServerAssignment:
    """Kafka's ``UniformAssignor.assign`` on a group in columns."""
    k = server_kernels(implementation)
    (member_sub, sub_indptr, sub_topics, partitions, cur_indptr, cur_topics, cur_part_indptr, cur_parts,
     topic_ids) = check_columns(group, k.first_repeat)
    m_count = len(group.member_ids)
    if not m_count:
        return _empty(0)
    order = k.member_map_order(group.member_ids)
    if is_homogeneous(group, member_sub, sub_indptr, sub_topics):
        r = int(member_sub[order[0]])
        subscribed = hashset_topic_order(topic_ids, sub_topics[sub_indptr[r]:sub_indptr[r + 1]])
        unknown = subscribed[partitions[subscribed] == -1]
        if len(unknown):
            raise unknown_topic_error(topic_ids[unknown[0]].tobytes())
        out = k.uniform_homogeneous(order, subscribed, topic_ids, partitions, cur_indptr, cur_topics,
                                    cur_part_indptr, cur_parts, _scratch_result(group))
    else:
        out = k.uniform_heterogeneous(order, member_sub, sub_indptr, sub_topics, topic_ids, partitions, cur_indptr,
                                      cur_topics, cur_part_indptr, cur_parts, _scratch_result(group))
    return ServerAssignment(*out)


#: The homogeneous builder's topic set order by the ids' bytes, as positions (``hashset_topic_order``'s).
_HASHSET_POSITIONS: Dict[bytes, list] = {}


def _small_map_order(member_ids, implementation):
    """``member_map_order`` for a few members: with at most 8 keys no bin of the map can crowd, so the
    order is the plain one (bucket of the final 16-slot table, then insertion)."""
    if len(member_ids) > 8:
        return server_kernels(implementation).member_map_order(member_ids).tolist()
    return small_string_map_positions(member_ids, 16)


def uniform_lists(member_ids, member_sub, rows, keys, partitions, current, homogeneous,
                  implementation: Optional[str] = None, by_id=False):
    """Kafka's ``UniformAssignor.assign`` on a small group given in plain lists, for a coordinator that
    computes a target at every epoch bump: no columns, work arrays or result arrays, whose fixed cost is
    many times a small group's assignment.  The same answers as :func:`uniform_arrays` (the same
    builders: ``_server_lists.py``, the pure twin's).

    The caller's lists are well-formed, as a coordinator builds them (nothing here is validated):
    ``member_ids`` distinct str; ``rows[member_sub[m]]`` member m's subscribed topic indices (no repeat;
    the rows' order of topics is the order a ``Set`` of them iterates); ``keys[t]`` topic t's 16-byte id,
    ``partitions[t]`` its partition count (-1: unknown to the metadata); ``current[m]`` member m's
    current assignment as ``[(topic index, [partitions]), ...]`` (no repeated topic); ``homogeneous``
    whether every member subscribes to the same names (``ModernGroup.subscriptionType``).

    Returns, per member, ``{topic index: frozenset(partitions)}`` in ascending topic order (a topic kept
    with no partition maps to an empty set); with ``by_id``, ``{keys[t]: frozenset(partitions)}`` in the same
    order without the topics kept with no partition, the form a coordinator stores.  Raises
    ``AssignmentError`` as the array level does."""
    m_count = len(member_ids)
    if not m_count:
        return []
    order = _small_map_order(member_ids, implementation)
    if homogeneous:
        topics = rows[member_sub[order[0]]]
        key = b"".join([keys[t] for t in topics])
        pos = _HASHSET_POSITIONS.get(key)
        if pos is None:
            if len(_HASHSET_POSITIONS) >= _HASHSET_ORDERS_MAX:
                _HASHSET_POSITIONS.clear()
            matrix = np.frombuffer(key, dtype=np.uint8).reshape(-1, 16)
            pos = _HASHSET_POSITIONS[key] = hashset_topic_order(matrix, np.arange(len(topics))).tolist()
        subscribed = [topics[i] for i in pos]
        for t in subscribed:
            if partitions[t] == -1:
                raise unknown_topic_error(keys[t])
        built = homogeneous_lists(order, subscribed, keys, partitions, current)
    else:
        built = heterogeneous_lists(order, member_sub, rows, keys, partitions, current)
    if built is None:
        return [{} for _ in range(m_count)]
    if by_id:
        return [{keys[t]: frozenset(ps) for t in sorted(got) for ps in (got[t],) if ps} for got in built]
    return [{t: frozenset(got[t]) for t in sorted(got)} for got in built]


def range_arrays(group: ServerGroupArrays, implementation: Optional[str] = None) -> ServerAssignment:
    """Kafka's server-side ``RangeAssignor.assign`` on a group in columns."""
    k = server_kernels(implementation)
    member_sub, sub_indptr, sub_topics, partitions = check_columns(group, k.first_repeat)[:4]
    m_count = len(group.member_ids)
    if not m_count:
        return _empty(0)
    member_ids = list(group.member_ids)
    instance_ids = [None] * m_count if group.instance_ids is None else list(group.instance_ids)
    if len(instance_ids) != m_count:
        raise ArgumentValueError(f"{len(instance_ids)} instance ids for {m_count} members")
    static = [x for x in instance_ids if x is not None]
    # Java sorts a list made from the member map (a stable sort): only members
    # that compare equal (two sharing an instance id) keep that map's order.
    visit = k.member_map_order(member_ids).tolist() if len(set(static)) != len(static) else None
    order = np.asarray(member_info_order(instance_ids, member_ids, visit), dtype=np.int32)
    homogeneous = is_homogeneous(group, member_sub, sub_indptr, sub_topics)
    return ServerAssignment(*k.range_assign(order, homogeneous, member_sub, sub_indptr, sub_topics, partitions,
                                            _scratch_result(group)))


# -- the registry ---------------------------------------------------------------

ServerArrayFn = Callable[..., ServerAssignment]


@dataclass(frozen=True)
class ServerAssignor:
    """A server-side assignor: its name (what ``ServerAssignor`` in a
    ConsumerGroupHeartbeat names), the array form
    ``fn(group: ServerGroupArrays, implementation=None) -> ServerAssignment``,
    and the other names it answers to (Kafka's class names)."""

    name: str
    arrays: ServerArrayFn
    aliases: tuple = ()
    #: False for an assignor that never reads the current assignment (Kafka's server
    #: RangeAssignor at this commit): the member level then does not convert it.
    reads_assignment: bool = True
    #: The same assignor on a small group in plain lists (``uniform_lists``'s signature), or None.
    lists: Optional[Callable] = None


_LOCK = threading.Lock()
_REGISTRY: Dict[str, ServerAssignor] = {}
_ALIASES: Dict[str, str] = {}

#: The registered server assignors by name, in registration order (read-only view).
SERVER_ASSIGNORS: Mapping[str, ServerAssignor] = types.MappingProxyType(_REGISTRY)

#: Kafka's default ``group.consumer.assignors`` is ``[uniform, range]``: the first is the default.
DEFAULT_SERVER_ASSIGNOR = "uniform"


def register_server_assignor(name: str, fn: ServerArrayFn, *, aliases=(), reads_assignment: bool = True,
                             lists: Optional[Callable] = None) -> ServerAssignor:
    """Register (or replace) a server-side assignor under ``name`` (and ``aliases``); ``lists`` is its
    small-group form, if it has one (see :func:`uniform_lists`)."""
    if not isinstance(name, str) or not name:
        raise ArgumentValueError("a server assignor needs a non-empty name")
    if not callable(fn):
        raise ArgumentValueError(f"the server assignor {name!r} needs a callable array form")
    if lists is not None and not callable(lists):
        raise ArgumentValueError(f"the server assignor {name!r} needs a callable list form, or None")
    entry = ServerAssignor(name, fn, tuple(aliases), bool(reads_assignment), lists)
    with _LOCK:
        _REGISTRY[name] = entry
        for alias in entry.aliases:
            _ALIASES[alias] = name
    return entry


def unregister_server_assignor(name: str) -> ServerAssignor:
    """Remove the server assignor registered as ``name`` and return it."""
    with _LOCK:
        entry = _REGISTRY.pop(name, None)
        if entry is not None:
            for alias in entry.aliases:
                if _ALIASES.get(alias) == name:
                    del _ALIASES[alias]
    if entry is None:
        raise AssignmentError(f"no server assignor registered as {name!r}")
    return entry


def get_server_assignor(name: Optional[str] = None) -> ServerAssignor:
    """The server assignor registered as ``name`` or under one of its aliases
    (Kafka's class names); the default (``uniform``) when ``name`` is None or empty."""
    name = name or DEFAULT_SERVER_ASSIGNOR
    entry = _REGISTRY.get(name) or _REGISTRY.get(_ALIASES.get(name, ""))
    if entry is None:
        raise AssignmentError(f"unknown server assignor {name!r}; registered: {sorted(_REGISTRY)}")
    return entry


def assign_server_arrays(assignor: Optional[str], group: ServerGroupArrays,
                         implementation: Optional[str] = None) -> ServerAssignment:
    """A group's new target assignment, columns in and columns out: the entry
    point a coordinator calls (no Python object per partition on the way)."""
    return get_server_assignor(assignor).arrays(group, implementation=implementation)


def compute_preferred_server_assignor(counts: Mapping[str, int], old: Optional[str] = None,
                                      new: Optional[str] = None, default: str = DEFAULT_SERVER_ASSIGNOR) -> str:
    """Kafka's ``ConsumerGroup.computePreferredServerAssignor``: ``counts`` maps
    each assignor name to how many members ask for it; a heartbeat changing
    one member's choice from ``old`` to ``new`` (either None) is applied first,
    a count reaching 0 is removed, and the most asked-for name wins, ties going
    to the first in Java ``HashMap<String, Integer>`` order (``Stream.max``
    keeps the first maximum).  Without any name: ``default``."""
    from ._javaorder import string_hashmap_iteration

    tally = Counter({k: int(v) for k, v in counts.items() if v})
    if old:
        tally[old] -= 1
    if new:
        tally[new] += 1
    names = [k for k, v in tally.items() if v > 0]
    if not names:
        return default
    # Kafka keeps these counts in a HashMap filled as members arrive; the order
    # of its keys is the bucket order of String.hashCode, insertion inside a bucket.
    ordered = [names[i] for i in string_hashmap_iteration(names)]
    best = ordered[0]
    for name in ordered[1:]:
        if tally[name] > tally[best]:
            best = name
    return best


register_server_assignor("uniform", uniform_arrays,
                         aliases=("org.apache.kafka.coordinator.group.assignor.UniformAssignor",), lists=uniform_lists)
register_server_assignor("range", range_arrays,
                         aliases=("org.apache.kafka.coordinator.group.assignor.RangeAssignor",), reads_assignment=False)
