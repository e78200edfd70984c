"""Where the sticky assignors find a member's previous assignment.

Eager ``sticky`` trusts only its own userData (members revoke everything
before joining, so the Subscription's owned-partitions field is empty);
``cooperative-sticky`` trusts the Subscription's ``owned_partitions`` and,
from Subscription v2 on, its ``generation_id`` -- falling back to a 4-byte
userData generation for older members.  These functions turn either source
into a :class:`~kwire.assignors._model.MemberInput`.

The userData layouts are the codec's ``StickyAssignorUserData`` (V1: previous
assignment then generation; V0: without the generation) and
``CooperativeStickyUserData`` (the generation), from kwire's schema tables.
Java reads them with its older ``Struct`` reader, which is more forgiving
than the codec (and than Kafka's generated messages) in two ways, both kept
here: bytes after the message are ignored, and a string that is not UTF-8
decodes with replacement characters.  Java reads V1 first and falls back to
V0; an unreadable blob means "owns nothing, generation -1" rather than an
error, so a corrupt peer cannot stop the group from rebalancing.
"""

from __future__ import annotations

import re
import struct
from itertools import repeat
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from .. import codec
from ..errors import AssignmentError, DecodeError
from ._javaorder import hashmap_capacity, hashmap_order, string_hash
from ._leader_common import ClaimColumns, StickyUserDataColumns
from ._model import DEFAULT_GENERATION, MemberInput

TopicPartition = Tuple[str, int]

# The two int fields read here by hand, both only on the lenient path below:
# the entry count in front of the previous assignment (the codec has already
# accepted it) and the length in front of a topic the codec refused as UTF-8.
_I32 = struct.Struct(">i")
_I16 = struct.Struct(">h")
_ENTRY_TOPIC = re.compile(r"previous_assignment\[\d+\]\.topic")


class _TopicNotUtf8(Exception):
    """The codec stopped at a topic that is not UTF-8, which Java reads anyway."""


def _struct_read(cls, data: bytes, version: int, *, one_entry: bool = False):
    """``(message, end)``: ``cls`` at ``version`` from the front of ``data`` as
    Java's ``Struct`` reader reads it, or None where Java throws.

    Bytes after ``end`` are ignored: the codec refuses them at the offset
    where the message ended, so a second decode up to that offset tells
    "ends early" from "broken there".  A topic that is not UTF-8 raises
    :class:`_TopicNotUtf8`, unless ``data`` holds ``one_entry``: then it
    decodes with replacement characters, as Java decodes it."""
    try:
        return cls.decode(data, version), len(data)
    except DecodeError as exc:
        if _bad_topic(exc):
            if not one_entry:
                raise _TopicNotUtf8 from None
            return _with_replaced_topic(cls, data, version, exc.offset)
        end = exc.offset
    try:
        return cls.decode(data[:end], version), end
    except DecodeError:
        return None


def _bad_topic(exc: DecodeError) -> bool:
    # Both codec twins raise exactly this message, at the first byte of the
    # string, with the path of the field (tests/test_codec_bad_input.py holds
    # the twins to the same errors).
    return exc.args[:1] == ("invalid UTF-8",) and _ENTRY_TOPIC.fullmatch(exc.path or "") is not None


def _with_replaced_topic(cls, data: bytes, version: int, at: int):
    # Read the entry with an ASCII placeholder of the same byte length in the
    # topic's place, then put Java's reading of the real bytes back.
    (length,) = _I16.unpack_from(data, at - 2)
    patched = data[:at] + b"?" * length + data[at + length:]
    read = _struct_read(cls, patched, version)
    if read is None:
        return None
    msg, end = read
    msg.previous_assignment[0].topic = data[at:at + length].decode("utf-8", "replace")
    return msg, end


def _read_previous_assignment(data: bytes, version: int):
    """``(partitions, generation or None)`` from StickyAssignorUserData at
    ``version``, or None where Java's reader throws.

    Valid UTF-8 (every input a Java client writes) takes one codec decode.  If
    a topic is not UTF-8 the entries are read one at a time, each by the codec
    as a one-entry message in a window that doubles until it holds the entry
    (so the work stays linear in the bytes), and such a topic is read as Java
    reads it."""
    cls = codec.StickyAssignorUserData
    try:
        read = _struct_read(cls, data, version)
    except _TopicNotUtf8:
        return _read_entry_by_entry(data, version)
    if read is None:
        return None
    msg, _ = read
    return _flat(msg), (msg.generation if version == 1 else None)


def _flat(msg) -> List[TopicPartition]:
    return [(e.topic, p) for e in msg.previous_assignment for p in e.partitions]


def _read_entry_by_entry(data: bytes, version: int):
    cls = codec.StickyAssignorUserData
    # The decode got to an entry's topic, so the count in front is one the codec accepted.
    (count,) = _I32.unpack_from(data, 0)
    parts: List[TopicPartition] = []
    pos = 4
    for _ in range(count):
        size = 64
        while True:
            window = _I32.pack(1) + data[pos:pos + size]
            read = _struct_read(cls, window, 0, one_entry=True)
            if read is not None or pos + size >= len(data):
                break
            size *= 2
        if read is None:
            return None
        msg, end = read
        parts.extend(_flat(msg))
        pos += end - 4
    if version == 0:
        return parts, None
    # What follows the entries in V1 is the generation: a V1 message with no entries.
    read = _struct_read(cls, _I32.pack(0) + data[pos:pos + 4], 1)
    return None if read is None else (parts, read[0].generation)


def decode_sticky_userdata(data: Optional[bytes]) -> Tuple[List[TopicPartition], Optional[int]]:
    """Decode eager StickyAssignor userData into ``(partitions, generation)``.

    ``generation`` is None for V0 data and for absent/empty userData (Java's
    ``Optional.empty()``), and -1 when the bytes cannot be parsed at all."""
    if data is None or len(data) == 0:
        return [], None
    buf = bytes(data)
    for version in (1, 0):
        read = _read_previous_assignment(buf, version)
        if read is not None:
            return read
    return [], DEFAULT_GENERATION


def encode_sticky_userdata(partitions: Sequence[TopicPartition], generation: Optional[int] = None) -> bytes:
    """Encode StickyAssignor userData (V1 with a generation, V0 without),
    grouping partitions by topic in order of first appearance."""
    grouped: dict = {}
    for topic, p in partitions:
        grouped.setdefault(topic, []).append(p)
    entries = [codec.StickyTopicAssignment(topic=t, partitions=ps) for t, ps in grouped.items()]
    if generation is None:
        return codec.StickyAssignorUserData(previous_assignment=entries).encode(0)
    return codec.StickyAssignorUserData(previous_assignment=entries, generation=generation).encode(1)


def sticky_user_data(partitions: Optional[Sequence[TopicPartition]], generation: int) -> Optional[bytes]:
    """The userData a Java ``StickyAssignor`` member sends: None before its
    first assignment, else its partitions and their generation (V1).

    Java groups the partitions with ``CollectionUtils.groupPartitionsByTopic``,
    a ``HashMap<String, List<Integer>>``, so the topics come in that map's
    iteration order (partitions within a topic keep their order)."""
    if partitions is None:
        return None
    grouped: dict = {}
    for topic, p in partitions:
        grouped.setdefault(topic, []).append(p)
    names = list(grouped)
    hashes = [string_hash(t) for t in names]
    entries = [
        codec.StickyTopicAssignment(topic=t, partitions=grouped[t])
        for t in hashmap_order(names, hashes, hashmap_capacity(hashes))
    ]
    return codec.StickyAssignorUserData(previous_assignment=entries, generation=generation).encode(1)


def decode_cooperative_userdata(data: Optional[bytes]) -> Optional[int]:
    """The generation in CooperativeStickyAssignor userData: None when there is
    no userData, -1 when it is too short to hold an int32."""
    if data is None:
        return None
    read = _struct_read(codec.CooperativeStickyUserData, bytes(data), 0)
    return DEFAULT_GENERATION if read is None else read[0].generation


def encode_cooperative_userdata(generation: int) -> bytes:
    """The userData a Java ``CooperativeStickyAssignor`` member sends: its generation."""
    return codec.CooperativeStickyUserData(generation=generation).encode(0)


def _gen(value: Optional[int]) -> int:
    return DEFAULT_GENERATION if value is None else value


def protocol_generation(value: Optional[int]) -> int:
    """A Subscription's generationId as the sticky assignors keep it."""
    # the Subscription reports a negative generationId as "absent"
    return DEFAULT_GENERATION if value is None or value < 0 else value


def protocol_generations(values: np.ndarray) -> np.ndarray:
    """:func:`protocol_generation` of each generationId of a column (int32), in one pass."""
    return np.where(values < 0, np.int32(DEFAULT_GENERATION), values).astype(np.int32, copy=False)


def sticky_claims(user_data: Optional[bytes]) -> Tuple[List[TopicPartition], int]:
    """An eager ``sticky`` member's ``(owned partitions, generation)``: from its userData only."""
    owned, gen = decode_sticky_userdata(user_data)
    return owned, _gen(gen)


def sticky_claim_columns(user_data: List[Optional[bytes]], names: List[str],
                         read_columns: Callable[[list, list], StickyUserDataColumns]) -> Tuple[np.ndarray, ClaimColumns]:
    """:func:`sticky_claims` of each userData, as columns: ``(generation
    int32[D], claims)``, topic ids continuing ``names``.

    ``read_columns`` (the leader kernels' ``sticky_userdata_columns``) reads
    the rows that are exactly one V1 message -- what every Java member
    sends, and where every reading agrees -- without a Python object per
    partition; the rest, one at a time, by :func:`sticky_claims` itself."""
    read = read_columns(user_data, names)
    rest = np.flatnonzero(~read.read).tolist()
    if not rest:
        return read.generation, read.claims
    generation, claims = read.generation, read.claims
    names = list(claims.names)
    ids: Dict[str, int] = {}
    for i, name in enumerate(names):
        ids.setdefault(name, i)
    lengths = np.diff(claims.ptr)
    lenient = {}
    for k in rest:
        owned, generation[k] = sticky_claims(user_data[k])
        for topic, _ in owned:
            if ids.setdefault(topic, len(names)) == len(names):
                names.append(topic)
        lenient[k] = owned
        lengths[k] = len(owned)
    ptr = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=ptr[1:])
    topic = np.empty(int(ptr[-1]), dtype=np.int32)
    partition = np.empty(int(ptr[-1]), dtype=np.int32)
    # The rows read keep their claims, moved on by what the rows before them gained.
    at = np.arange(len(claims.topic), dtype=np.int64) + np.repeat(ptr[:-1] - claims.ptr[:-1], np.diff(claims.ptr))
    topic[at] = claims.topic
    partition[at] = claims.partition
    for k, owned in lenient.items():
        topic[ptr[k]:ptr[k + 1]] = [ids[t] for t, _ in owned]
        partition[ptr[k]:ptr[k + 1]] = [p for _, p in owned]
    return generation, ClaimColumns(names, ptr, topic, partition)


def cooperative_generation(generation_id: Optional[int], user_data: Optional[bytes]) -> int:
    """A ``cooperative-sticky`` member's generation: a Subscription
    generationId >= 0 (v2+) as is; otherwise the ``{generation:int32}`` userData."""
    if generation_id is not None and generation_id >= 0:
        return generation_id
    return _gen(decode_cooperative_userdata(user_data))


def cooperative_generations(generation_ids: np.ndarray, user_data: List[Optional[bytes]]) -> np.ndarray:
    """:func:`cooperative_generation` of each row of a column of generationIds
    (int32) and their userData: only the rows without a generationId read
    their userData."""
    out = np.array(generation_ids, dtype=np.int32)
    for k in np.flatnonzero(out < 0).tolist():
        out[k] = cooperative_generation(None, user_data[k])
    return out


def sticky_member_input(member_id: str, topics: Sequence[str], user_data: Optional[bytes],
                        subscription_generation: Optional[int] = None,
                        group_instance_id: Optional[str] = None,
                        rack: Optional[str] = None) -> MemberInput:
    """MemberInput for eager ``sticky``: owned partitions and generation come
    from userData only."""
    owned, gen = sticky_claims(user_data)
    return MemberInput(member_id=member_id, group_instance_id=group_instance_id,
                       topics=tuple(topics), owned=tuple(owned), generation=gen,
                       subscription_generation=protocol_generation(subscription_generation),
                       rack=rack)


def cooperative_member_input(member_id: str, topics: Sequence[str],
                             owned_partitions: Sequence[TopicPartition],
                             generation_id: Optional[int], user_data: Optional[bytes],
                             group_instance_id: Optional[str] = None,
                             rack: Optional[str] = None) -> MemberInput:
    """MemberInput for ``cooperative-sticky`` (generation: :func:`cooperative_generation`)."""
    return MemberInput(member_id=member_id, group_instance_id=group_instance_id,
                       topics=tuple(topics), owned=tuple((t, int(p)) for t, p in owned_partitions),
                       generation=cooperative_generation(generation_id, user_data),
                       subscription_generation=protocol_generation(generation_id), rack=rack)


def _field(obj, *names, default=None):
    for name in names:
        if isinstance(obj, dict):
            if name in obj:
                return obj[name]
        elif hasattr(obj, name):
            return getattr(obj, name)
    return default


def member_input_for(strategy: str, member) -> MemberInput:
    """Build a MemberInput from a member-level object (``kwire.GroupMember``
    or a mapping with the same field names) for ``sticky`` or
    ``cooperative-sticky``."""
    sub = _field(member, "subscription", default=member)
    if sub is None:
        raise AssignmentError(f"member {_field(member, 'member_id')!r} has no subscription")
    member_id = _field(member, "member_id")
    if not isinstance(member_id, str):
        raise AssignmentError(f"member_id must be str, got {member_id!r}")
    instance = _field(member, "group_instance_id")
    if instance is not None and not isinstance(instance, str):
        raise AssignmentError(f"member {member_id!r}: group_instance_id must be str or None")
    topics = _field(sub, "topics")
    if topics is None or isinstance(topics, (str, bytes)) or not all(map(isinstance, topics, repeat(str))):
        raise AssignmentError(f"member {member_id!r}: subscription topics must be a list of str")
    topics = tuple(topics)
    user_data = _field(sub, "user_data", "userdata")
    if user_data is not None and not isinstance(user_data, (bytes, bytearray, memoryview)):
        raise AssignmentError(f"member {member_id!r}: user_data must be bytes or None")
    rack = _field(sub, "rack_id", "rack", default=None)
    if rack is not None and not isinstance(rack, str):
        raise AssignmentError(f"member {member_id!r}: rack_id must be str or None")
    gen_field = _field(sub, "generation_id", "generation", default=None)
    if gen_field is not None and (isinstance(gen_field, bool) or not isinstance(gen_field, int)
                                  or not -2**31 <= gen_field < 2**31):
        raise AssignmentError(f"member {member_id!r}: generation_id must be an int32")
    if strategy == "sticky":
        return sticky_member_input(member_id, topics, user_data, gen_field, instance, rack)
    if strategy == "cooperative-sticky":
        owned_raw = _field(sub, "owned_partitions", default=()) or ()
        owned = _flatten_owned(owned_raw)
        return cooperative_member_input(member_id, topics, owned, gen_field, user_data, instance, rack)
    raise AssignmentError(f"not a sticky strategy: {strategy!r}")


def _flatten_owned(owned) -> List[TopicPartition]:
    """Accept ``[(topic, p), ...]`` or the protocol's ``[{topic, partitions}]`` shape."""
    out: List[TopicPartition] = []
    for entry in owned:
        if isinstance(entry, (tuple, list)) and len(entry) == 2 and not isinstance(entry[1], (list, tuple)):
            topic, parts = entry[0], (entry[1],)
        else:
            topic, parts = _field(entry, "topic"), _field(entry, "partitions", default=()) or ()
        if not isinstance(topic, str):
            raise AssignmentError(f"owned partitions: topic must be str, got {topic!r}")
        for p in parts:
            if isinstance(p, bool) or not isinstance(p, int) or not 0 <= p < 2**31:
                raise AssignmentError(f"owned partitions: bad partition {topic!r}-{p!r}")
            out.append((topic, p))
    return out
