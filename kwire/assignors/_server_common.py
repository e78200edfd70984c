"""What both twins of the server-side assignor kernels share: the columns a
group is given in, the result's columns, topic id forms, Java's error texts
and the rare slow paths of Java's hash orders.

The server-side assignors are Kafka's group-coordinator ``UniformAssignor``
(homogeneous and heterogeneous builders) and its ``RangeAssignor``; the
kernels are ``_server_c.pyx`` and ``_server_py.py``.
"""

from __future__ import annotations

import base64
import uuid
from dataclasses import dataclass
from typing import Optional, Sequence

import numpy as np

from kwire.codec import topic_id_text
from kwire.errors import ArgumentTypeError, ArgumentValueError, AssignmentError

from ._javaorder import hashset_capacity_from, integer_hash_iteration, uuid_hash_iteration

#: Java's int range: partition numbers and counts live in it.
INT32_MIN, INT32_MAX = -(2 ** 31), 2 ** 31 - 1


@dataclass
class ServerGroupArrays:
    """A consumer group for a server-side assignor, in columns.

    Members are indexed 0..M-1 in the order the coordinator put them in its
    member map (Kafka builds a fresh ``HashMap`` from them; the kernels derive
    its iteration order).  Subscriptions are shared: ``sub_indptr``/``sub_topics``
    hold each *distinct* subscription once (topic indices, in the order the
    member's ``Set`` iterates), and ``member_sub[m]`` says which row member m
    has.  ``sub_unresolved[r]`` (optional) are row r's subscribed names the
    metadata cannot resolve; they count in the homogeneous/heterogeneous
    decision (Kafka's ``ModernGroup.subscriptionType``).

    The current (previous target) assignment is CSR over members, two levels:
    member m's topic entries are ``cur_topics[cur_indptr[m]:cur_indptr[m+1]]``
    (in record order) and entry e's partitions are
    ``cur_parts[cur_part_indptr[e]:cur_part_indptr[e+1]]`` (in record order).

    Topics: ``topic_ids`` is a ``(T, 16)`` uint8 array of Uuids;
    ``partitions[t]`` is the count, or -1 for a topic absent from the metadata
    (a deleted topic still in an assignment, or an unknown subscribed id).
    """

    member_ids: Sequence[str]
    member_sub: np.ndarray
    sub_indptr: np.ndarray
    sub_topics: np.ndarray
    topic_ids: np.ndarray
    partitions: np.ndarray
    cur_indptr: Optional[np.ndarray] = None
    cur_topics: Optional[np.ndarray] = None
    cur_part_indptr: Optional[np.ndarray] = None
    cur_parts: Optional[np.ndarray] = None
    instance_ids: Optional[Sequence[Optional[str]]] = None
    racks: Optional[Sequence[Optional[str]]] = None
    topic_names: Optional[Sequence[str]] = None
    partition_racks: Optional[Sequence[Optional[Sequence[Sequence[str]]]]] = None
    sub_unresolved: Optional[Sequence[Sequence[str]]] = None
    #: "homogeneous" / "heterogeneous" to impose the caller's decision; None to compute it.
    subscription_type: Optional[str] = None


class MemberLevelColumns(ServerGroupArrays):
    """Columns kwire's member level built itself (``_server_members.server_group``):
    member ids unique strs (a dict's keys), every index in range, every CSR
    well formed by construction, so :func:`check_columns` checks only what
    the caller's data decides (a topic listed twice)."""

    #: True when the member level reads the result before its next call and
    #: keeps nothing of it: the compiled kernels may then write it into work arrays.
    scratch = False


@dataclass
class ServerAssignment:
    """A server assignor's target, CSR over members like the input.

    ``present[m]`` is False for a member Java leaves out of its result (every
    member, when no member subscribes to an existing topic).  Member m's topic
    entries are ``topics[indptr[m]:indptr[m+1]]`` in ascending topic index, and
    entry e's partitions ``parts[part_indptr[e]:part_indptr[e+1]]``, ascending.
    An entry may be empty where Java keeps an empty set."""

    present: np.ndarray
    indptr: np.ndarray
    topics: np.ndarray
    part_indptr: np.ndarray
    parts: np.ndarray

    def member(self, m: int) -> dict:
        """Member m's target as ``{topic index: [partitions]}``."""
        out = {}
        for e in range(int(self.indptr[m]), int(self.indptr[m + 1])):
            out[int(self.topics[e])] = self.parts[self.part_indptr[e]:self.part_indptr[e + 1]].tolist()
        return out


# -- topic ids ---------------------------------------------------------------

def topic_id_bytes(topic_id) -> bytes:
    """16 bytes from a topic id as the codec gives it (bytes), a ``uuid.UUID``
    or Kafka's base64 text form."""
    if isinstance(topic_id, (bytes, bytearray, memoryview)):
        raw = bytes(topic_id)
        if len(raw) != 16:
            raise ArgumentValueError(f"a topic id is 16 bytes, not {len(raw)}: {raw!r}")
        return raw
    if isinstance(topic_id, uuid.UUID):
        return topic_id.bytes
    if isinstance(topic_id, str):
        if len(topic_id) == 22:
            try:
                raw = base64.urlsafe_b64decode(topic_id + "==")
            except ValueError:
                raw = b""
            if len(raw) == 16 and topic_id_text(raw) == topic_id:
                return raw
        raise ArgumentValueError(f"not a Kafka topic id (22 characters of URL-safe base64): {topic_id!r}")
    raise ArgumentTypeError(f"a topic id is 16 bytes, a uuid.UUID or Kafka's base64 text, not {type(topic_id).__name__}")


def topic_id_matrix(topic_ids) -> np.ndarray:
    """A ``(T, 16)`` uint8 array from any accepted column of topic ids."""
    if isinstance(topic_ids, np.ndarray):
        arr = topic_ids
        if arr.dtype != np.uint8 or arr.ndim != 2 or arr.shape[1] != 16:
            raise ArgumentValueError(f"topic_ids must be a (T, 16) uint8 array, not {arr.dtype} {arr.shape}")
        return np.ascontiguousarray(arr)
    raw = b"".join(topic_id_bytes(t) for t in topic_ids)
    return np.frombuffer(raw, dtype=np.uint8).reshape(-1, 16).copy()


# -- Java's errors -------------------------------------------------------------

def unknown_topic_error(topic_id: bytes) -> AssignmentError:
    """``UniformAssignor``'s builders on a subscribed id absent from the metadata."""
    return AssignmentError(f"PartitionAssignorException: Members are subscribed to topic {topic_id_text(topic_id)} "
                           "which doesn't exist in the topic metadata.")


def range_unknown_topic_error() -> AssignmentError:
    """The server ``RangeAssignor`` on a subscribed id absent from the metadata."""
    return AssignmentError("PartitionAssignorException: Member is subscribed to a non-existent topic")


def left_unassigned_error() -> AssignmentError:
    """``UniformHomogeneousAssignmentBuilder`` when the quotas cannot hold every partition."""
    return AssignmentError("PartitionAssignorException: Partitions were left unassigned")


def index_error(index: int, length: int) -> AssignmentError:
    """``UniformHeterogeneousAssignmentBuilder`` indexing its per-topic owner array with a
    current partition outside the topic (JDK 17's ``ArrayIndexOutOfBoundsException`` text)."""
    return AssignmentError(f"ArrayIndexOutOfBoundsException: Index {index} out of bounds for length {length}")


# -- the rare exact paths of Java's hash orders ---------------------------------

def entry_map_order(topic_ids: np.ndarray, entry_topics) -> list:
    """Positions of a member's current topic entries in the order of the
    ``new HashMap<Uuid, Set<Integer>>()`` the coordinator rebuilds them into."""
    return uuid_hash_iteration([topic_ids[t].tobytes() for t in entry_topics], 16)


def partition_set_order(parts) -> list:
    """A current partition list's distinct values in the order of the
    ``new HashSet<>(list)`` built from it (first occurrences kept)."""
    seen = {}
    for p in parts:
        seen.setdefault(int(p), None)
    distinct = list(seen)
    order = integer_hash_iteration(distinct, hashset_capacity_from(len(parts)))
    return [distinct[i] for i in order]


def check_columns(g: ServerGroupArrays, first_repeat):
    """Validate a group's columns (typed errors, never a crash in a kernel) and
    return them as contiguous arrays of the kernels' dtypes:
    ``(member_sub, sub_indptr, sub_topics, partitions, cur_indptr, cur_topics,
    cur_part_indptr, cur_parts, topic_ids)`` (the ids as a ``(T, 16)`` uint8 array).  ``first_repeat`` is the kernels' check for a
    CSR row holding a value twice."""
    m = len(g.member_ids)
    if type(g) is MemberLevelColumns:
        r = first_repeat(g.sub_indptr, g.sub_topics, len(g.partitions))
        if r >= 0:
            raise ArgumentValueError(f"subscription row {r} lists a topic twice")
        r = first_repeat(g.cur_indptr, g.cur_topics, len(g.partitions))
        if r >= 0:
            raise ArgumentValueError(f"the current assignment of member {g.member_ids[r]!r} lists a topic twice")
        return (g.member_sub, g.sub_indptr, g.sub_topics, g.partitions, g.cur_indptr, g.cur_topics,
                g.cur_part_indptr, g.cur_parts, g.topic_ids)
    if len(set(g.member_ids)) != m:
        seen = set()
        dup = next(x for x in g.member_ids if x in seen or seen.add(x))
        raise ArgumentValueError(f"duplicate member id {dup!r}")
    for mid in g.member_ids:
        if not isinstance(mid, str):
            raise ArgumentTypeError(f"member ids are str, not {type(mid).__name__}")
    topic_ids = topic_id_matrix(g.topic_ids)
    t = topic_ids.shape[0]
    partitions = _int_column(g.partitions, "partitions", np.int32)
    if len(partitions) != t:
        raise ArgumentValueError(f"{len(partitions)} partition counts for {t} topics")
    if (partitions < -1).any():
        raise ArgumentValueError(f"a negative partition count: {int(partitions.min())}")
    member_sub = _int_column(g.member_sub, "member_sub", np.int32)
    sub_indptr = _int_column(g.sub_indptr, "sub_indptr", np.int64)
    sub_topics = _int_column(g.sub_topics, "sub_topics", np.int32)
    if len(member_sub) != m:
        raise ArgumentValueError(f"{len(member_sub)} subscription indices for {m} members")
    s = len(sub_indptr) - 1
    if s < 0 or sub_indptr[0] != 0 or (np.diff(sub_indptr) < 0).any() or sub_indptr[-1] != len(sub_topics):
        raise ArgumentValueError("sub_indptr is not a CSR index over sub_topics")
    if m and (member_sub.min() < 0 or member_sub.max() >= s):
        raise ArgumentValueError("a member's subscription index is out of range")
    if len(sub_topics) and (sub_topics.min() < 0 or sub_topics.max() >= t):
        raise ArgumentValueError("a subscribed topic index is out of range")
    r = first_repeat(sub_indptr, sub_topics, t)
    if r >= 0:
        raise ArgumentValueError(f"subscription row {r} lists a topic twice")
    if g.cur_indptr is None:
        cur_indptr = np.zeros(m + 1, dtype=np.int64)
        cur_topics = np.zeros(0, dtype=np.int32)
        cur_part_indptr = np.zeros(1, dtype=np.int64)
        cur_parts = np.zeros(0, dtype=np.int32)
    else:
        cur_indptr = _int_column(g.cur_indptr, "cur_indptr", np.int64)
        cur_topics = _int_column(g.cur_topics, "cur_topics", np.int32)
        cur_part_indptr = _int_column(g.cur_part_indptr, "cur_part_indptr", np.int64)
        cur_parts = _int_column(g.cur_parts, "cur_parts", np.int32)
        e = len(cur_topics)
        if len(cur_indptr) != m + 1 or cur_indptr[0] != 0 or (np.diff(cur_indptr) < 0).any() or cur_indptr[-1] != e:
            raise ArgumentValueError("cur_indptr is not a CSR index over cur_topics, one row per member")
        if (len(cur_part_indptr) != e + 1 or cur_part_indptr[0] != 0 or (np.diff(cur_part_indptr) < 0).any()
                or cur_part_indptr[-1] != len(cur_parts)):
            raise ArgumentValueError("cur_part_indptr is not a CSR index over cur_parts, one row per entry")
        if e and (cur_topics.min() < 0 or cur_topics.max() >= t):
            raise ArgumentValueError("a current assignment's topic index is out of range")
        r = first_repeat(cur_indptr, cur_topics, t)
        if r >= 0:
            raise ArgumentValueError(f"the current assignment of member {g.member_ids[r]!r} lists a topic twice")
    return (member_sub, sub_indptr, sub_topics, partitions, cur_indptr, cur_topics, cur_part_indptr, cur_parts,
            topic_ids)


def _int_column(values, name, dtype):
    arr = np.asarray(values)
    if arr.ndim != 1:
        raise ArgumentValueError(f"{name} must be one-dimensional")
    if arr.size and arr.dtype.kind not in "iu":
        raise ArgumentTypeError(f"{name} must hold integers, not {arr.dtype}")
    if arr.dtype == np.int32:
        return np.ascontiguousarray(arr, dtype=dtype)       # in range by its type
    if arr.size and (int(arr.min()) < INT32_MIN or int(arr.max()) > (INT32_MAX if dtype == np.int32 else 2 ** 62)):
        raise ArgumentValueError(f"{name} holds a value outside Java's int range")
    return np.ascontiguousarray(arr, dtype=dtype)


def same_target(current, target: dict) -> bool:
    """Whether a member's current assignment, as the caller gave it, can stand
    for its new target ``target`` (the dict the member level would build):
    a dict with the same entries in the same order, each key of the type of
    the metadata's key, each value a list of exactly the target's ints.  The
    compiled twin makes the same test in C (``_server_c._same_target``)."""
    if type(current) is not dict or len(current) != len(target):
        return False
    for (key, value), (want_key, want) in zip(current.items(), target.items()):
        if type(key) is not type(want_key) or key != want_key or type(value) is not list or len(value) != len(want):
            return False
        if any(type(p) is not int or p != q for p, q in zip(value, want)):
            return False
    return True


def content_row(subs, unres, rows, unresolved, by_content):
    """The row of a subscription object not seen before: an equal one's
    (equal topic ids and unresolved names), or a new one appended to ``rows``
    and ``unresolved``; ``by_content`` finds the candidates."""
    unres = tuple(unres)
    seq = list(subs)
    ck = (len(seq), seq[0] if seq else None, seq[-1] if seq else None, unres)
    for r in by_content.get(ck, ()):
        if rows[r] == seq:
            return r
    rows.append(seq)
    unresolved.append(unres)
    by_content.setdefault(ck, []).append(len(rows) - 1)
    return len(rows) - 1
