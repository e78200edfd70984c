"""The member level of the server-side assignors: :func:`assign_server`.

A coordinator passes its members (in the order it added them) with their
subscribed topic ids, their current target assignment and, for range, their
instance ids; and the topic metadata by topic id.  Topic ids are 16 bytes as
the codec gives them, ``uuid.UUID`` or Kafka's base64 text; the result uses the
metadata's keys.  Members that subscribe alike should share one subscription
list object: the columns then hold it once (``_server.ServerGroupArrays``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from operator import attrgetter
from typing import Any, Dict, Hashable, List, Mapping, Optional

import numpy as np

from kwire.errors import ArgumentTypeError, ArgumentValueError

from ._server import get_server_assignor, range_arrays, server_kernels, uniform_arrays
from ._server_common import MemberLevelColumns, topic_id_bytes


@dataclass
class TopicMetadata:
    """A topic as the coordinator's metadata image describes it."""

    name: str
    partitions: int
    #: per partition, the racks of its replicas (read by no assignor at Kafka's commit 1eb7644349cb)
    partition_racks: Optional[Sequence[Sequence[str]]] = None


@dataclass(slots=True)
class ServerMember:
    """A member as a server-side assignor sees it.  Its fields are slots: the
    compiled member level reads a group's thousands of members through them
    without a lookup per attribute."""

    #: the topic ids the member subscribes to that the metadata resolves, in its Set's order
    subscribed_topic_ids: Sequence[Hashable] = ()
    #: the member's current target assignment: topic id -> partitions, in record order
    assignment: Mapping[Hashable, Sequence[int]] = field(default_factory=dict)
    instance_id: Optional[str] = None
    rack: Optional[str] = None
    #: subscribed names the metadata cannot resolve (they count when Kafka decides homogeneity)
    unresolved_topic_names: Sequence[str] = ()


class _Topics:
    """Topic ids of every form mapped to one index; unknown ids get an index
    with partition count -1, as ``SubscribedTopicDescriber.numPartitions`` answers."""

    def __init__(self, topics: Mapping[Hashable, TopicMetadata]):
        self.keys: List[Any] = list(topics)
        self.index: Dict[Any, int] = dict(zip(self.keys, range(len(self.keys))))
        metas = list(topics.values())
        # map() over C callables: a coordinator's metadata holds thousands of topics
        if set(map(type, self.keys)) <= {bytes} and set(map(len, self.keys)) <= {16}:
            self.raw: List[bytes] = list(self.keys)      # the codec's form: nothing to convert
            by_raw = dict(self.index)
        else:
            self.raw = [topic_id_bytes(k) for k in self.keys]
            by_raw = {raw: i for i, raw in enumerate(self.raw)}
        if len(by_raw) != len(self.keys):
            seen = set()
            dup = next(k for k, raw in zip(self.keys, self.raw) if raw in seen or seen.add(raw))
            raise ArgumentValueError(f"topic id {dup!r} is in the metadata twice")
        counts = list(map(attrgetter("partitions"), metas))
        if not set(map(type, counts)) <= {int}:
            for key, n in zip(self.keys, counts):
                if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
                    raise ArgumentTypeError(f"the partition count of topic {key!r} is an int, not {type(n).__name__}")
            counts = [int(n) for n in counts]
        if counts and (min(counts) < 0 or max(counts) > 2 ** 31 - 1):
            key, n = next((k, n) for k, n in zip(self.keys, counts) if n < 0 or n > 2 ** 31 - 1)
            raise ArgumentValueError(f"topic {key!r} has an impossible partition count {n}")
        self.by_raw = by_raw
        self.counts = counts
        self.names = list(map(attrgetter("name"), metas))

    def __call__(self, key) -> int:
        i = self.index.get(key)
        if i is None:
            raw = topic_id_bytes(key)
            i = self.by_raw.get(raw)
            if i is None:
                i = len(self.raw)
                self.raw.append(raw)
                self.keys.append(key)
                self.counts.append(-1)
                # an unknown id has no name: it stands for itself in the homogeneity test
                self.names.append(("unknown", raw))
                self.by_raw[raw] = i
            self.index[key] = i
        return i


class _MemberAttribute(Sequence):
    """One attribute of every member (``instance_id``, ``rack``), read when an
    assignor first asks for it: ``uniform`` reads neither, so a call pays
    nothing for them."""

    __slots__ = ("_members", "_name", "_values")

    def __init__(self, members: list, name: str):
        self._members = members
        self._name = name
        self._values: Optional[list] = None

    def _read(self) -> list:
        if self._values is None:
            self._values = list(map(attrgetter(self._name), self._members))
        return self._values

    def __len__(self) -> int:
        return len(self._members)

    def __getitem__(self, i):
        return self._read()[i]

    def __iter__(self):
        return iter(self._read())

    def __repr__(self) -> str:
        return repr(self._read())


def _columns(members: Mapping[str, ServerMember], topics: Mapping[Hashable, TopicMetadata],
             implementation: Optional[str], read_assignment: bool, scratch: bool):
    tx = _Topics(topics)
    member_ids = list(members)      # the kernel checks they are str
    values = list(members.values())
    k = server_kernels(implementation)
    (member_sub, rows, unresolved, assignments, canon, cur_indptr, cur_topics, cur_part_indptr,
     cur_parts) = k.member_columns(member_ids, values, ServerMember, tx, read_assignment, scratch)
    sub_indptr = np.zeros(len(rows) + 1, dtype=np.int64)
    flat_subs: List[int] = []
    index = tx.index
    for r, subs in enumerate(rows):
        try:
            flat_subs.extend(map(index.__getitem__, subs))
        except (KeyError, TypeError):
            del flat_subs[sub_indptr[r]:]
            flat_subs.extend(map(tx, subs))          # other id forms, or ids the metadata lacks
        sub_indptr[r + 1] = len(flat_subs)
    group = MemberLevelColumns(
        member_ids=member_ids, member_sub=member_sub, sub_indptr=sub_indptr,
        sub_topics=np.array(flat_subs, dtype=np.int32),
        topic_ids=np.frombuffer(b"".join(tx.raw), dtype=np.uint8).reshape(-1, 16),
        partitions=np.array(tx.counts, dtype=np.int32),
        cur_indptr=cur_indptr, cur_topics=cur_topics, cur_part_indptr=cur_part_indptr, cur_parts=cur_parts,
        instance_ids=_MemberAttribute(values, "instance_id"), racks=_MemberAttribute(values, "rack"),
        topic_names=tx.names, sub_unresolved=unresolved,
    )
    group.scratch = scratch
    return group, tx, (assignments, (canon, cur_indptr, cur_topics, cur_part_indptr, cur_parts))


def server_group(members: Mapping[str, ServerMember], topics: Mapping[Hashable, TopicMetadata],
                 implementation: Optional[str] = None, read_assignment: bool = True):
    """The columns of a group given member by member, and the topic index (for
    the result's keys); without the current assignments when ``read_assignment`` is False."""
    group, tx, _ = _columns(members, topics, implementation, read_assignment, False)
    return group, tx


#: kwire's own array forms, which keep nothing of their input after a call: the
#: member level may hand them columns that live in work arrays.
_OWN_ARRAY_FORMS = (uniform_arrays, range_arrays)


def assign_server(assignor: Optional[str], members: Mapping[str, ServerMember],
                  topics: Mapping[Hashable, TopicMetadata], implementation: Optional[str] = None):
    """A group's new target assignment with a server-side assignor (``uniform``,
    ``range``, or any registered name; None for the default), exactly as
    Kafka's group coordinator computes it.

    Returns ``{member_id: {topic_id: [partitions ascending]}}`` in the members'
    order, with topic ids as the metadata's keys.  Members Java leaves out are
    left out, and empty lists Java keeps are kept.  A member whose current
    ``assignment`` is a dict already equal to its new target in every detail
    shown (same entries in the same order, keys of the metadata's type, lists
    of ints ascending) gets that same dict object back, not a copy: most
    members of an incremental run.  Raises :class:`kwire.AssignmentError`
    (with Java's message) where Kafka throws."""
    entry = get_server_assignor(assignor)
    group, tx, (assignments, read) = _columns(members, topics, implementation, entry.reads_assignment,
                                              entry.arrays in _OWN_ARRAY_FORMS)
    result = entry.arrays(group, implementation=implementation)
    return server_kernels(implementation).member_dicts(group.member_ids, tx.keys, result.present, result.indptr,
                                                       result.topics, result.part_indptr, result.parts, assignments,
                                                       read)
