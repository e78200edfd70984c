"""Where the sticky assignors find a member's previous assignment.

Eager ``sticky`` trusts only its own userData (members revoke everything
before joining, so the Subscription's owned-partitions field is empty);
``cooperative-sticky`` trusts the Subscription's ``owned_partitions`` and,
from Subscription v2 on, its ``generation_id`` -- falling back to a 4-byte
userData generation for older members.  These functions turn either source
into a :class:`~kwire.assignors._model.MemberInput`.

The userData layouts are Kafka's classic (non-flexible) Struct encoding:

* sticky V1: ``[topic:int16-string, partitions:[int32]]`` then ``generation:int32``
* sticky V0: the same without the generation
* cooperative-sticky: ``generation:int32``

Java reads V1 first and falls back to V0; an unreadable blob means "owns
nothing, generation -1" rather than an error, so a corrupt peer cannot stop
the group from rebalancing.  That tolerance is reproduced here.
"""

from __future__ import annotations

import struct
from typing import List, Optional, Sequence, Tuple

from ..errors import AssignmentError
from ._model import DEFAULT_GENERATION, MemberInput

TopicPartition = Tuple[str, int]

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")


class _Short(Exception):
    pass


def _read_assignment(buf: bytes, pos: int) -> Tuple[List[TopicPartition], int]:
    """Read ``[topic, [int32]]`` as Java's ``ArrayOf`` does; returns (partitions, new position)."""
    end = len(buf)

    def need(n):
        if pos + n > end:
            raise _Short

    need(4)
    (n_topics,) = _I32.unpack_from(buf, pos)
    pos += 4
    # Java rejects negative counts and counts larger than the bytes left
    if n_topics < 0 or n_topics > end - pos:
        raise _Short
    out: List[TopicPartition] = []
    for _ in range(n_topics):
        need(2)
        (tlen,) = _I16.unpack_from(buf, pos)
        pos += 2
        if tlen < 0:
            raise _Short
        need(tlen)
        # Java decodes with replacement characters instead of failing
        topic = bytes(buf[pos:pos + tlen]).decode("utf-8", "replace")
        pos += tlen
        need(4)
        (n_parts,) = _I32.unpack_from(buf, pos)
        pos += 4
        if n_parts < 0 or n_parts > end - pos:
            raise _Short
        need(4 * n_parts)
        for i in range(n_parts):
            out.append((topic, _I32.unpack_from(buf, pos + 4 * i)[0]))
        pos += 4 * n_parts
    return out, pos


def decode_sticky_userdata(data: Optional[bytes]) -> Tuple[List[TopicPartition], Optional[int]]:
    """Decode eager StickyAssignor userData into ``(partitions, generation)``.

    ``generation`` is None for V0 data and for absent/empty userData (Java's
    ``Optional.empty()``), and -1 when the bytes cannot be parsed at all."""
    if data is None or len(data) == 0:
        return [], None
    buf = bytes(data)
    try:
        parts, pos = _read_assignment(buf, 0)
        if pos + 4 <= len(buf):
            return parts, _I32.unpack_from(buf, pos)[0]
    except _Short:
        pass
    try:
        parts, _ = _read_assignment(buf, 0)
        return parts, None
    except _Short:
        return [], DEFAULT_GENERATION


def encode_sticky_userdata(partitions: Sequence[TopicPartition], generation: Optional[int] = None) -> bytes:
    """Encode StickyAssignor userData (V1 with a generation, V0 without),
    grouping partitions by topic in order of first appearance."""
    grouped: dict = {}
    for topic, p in partitions:
        grouped.setdefault(topic, []).append(p)
    out = [_I32.pack(len(grouped))]
    for topic, ps in grouped.items():
        raw = topic.encode("utf-8")
        out.append(_I16.pack(len(raw)))
        out.append(raw)
        out.append(_I32.pack(len(ps)))
        out.extend(_I32.pack(p) for p in ps)
    if generation is not None:
        out.append(_I32.pack(generation))
    return b"".join(out)


def decode_cooperative_userdata(data: Optional[bytes]) -> Optional[int]:
    """The generation in CooperativeStickyAssignor userData: None when there is
    no userData, -1 when it is too short to hold an int32."""
    if data is None:
        return None
    if len(data) < 4:
        return DEFAULT_GENERATION
    return _I32.unpack_from(bytes(data), 0)[0]


def encode_cooperative_userdata(generation: int) -> bytes:
    return _I32.pack(generation)


def _gen(value: Optional[int]) -> int:
    return DEFAULT_GENERATION if value is None else value


def _protocol_generation(value: Optional[int]) -> int:
    # the Subscription reports a negative generationId as "absent"
    return DEFAULT_GENERATION if value is None or value < 0 else value


def sticky_member_input(member_id: str, topics: Sequence[str], user_data: Optional[bytes],
                        subscription_generation: Optional[int] = None,
                        group_instance_id: Optional[str] = None,
                        rack: Optional[str] = None) -> MemberInput:
    """MemberInput for eager ``sticky``: owned partitions and generation come
    from userData only."""
    owned, gen = decode_sticky_userdata(user_data)
    return MemberInput(member_id=member_id, group_instance_id=group_instance_id,
                       topics=tuple(topics), owned=tuple(owned), generation=_gen(gen),
                       subscription_generation=_protocol_generation(subscription_generation),
                       rack=rack)


def cooperative_member_input(member_id: str, topics: Sequence[str],
                             owned_partitions: Sequence[TopicPartition],
                             generation_id: Optional[int], user_data: Optional[bytes],
                             group_instance_id: Optional[str] = None,
                             rack: Optional[str] = None) -> MemberInput:
    """MemberInput for ``cooperative-sticky``.

    A Subscription generationId >= 0 (v2+) is used as is; otherwise the
    generation comes from the ``{generation:int32}`` userData."""
    proto = _protocol_generation(generation_id)
    if generation_id is not None and generation_id >= 0:
        gen = generation_id
    else:
        gen = _gen(decode_cooperative_userdata(user_data))
    return MemberInput(member_id=member_id, group_instance_id=group_instance_id,
                       topics=tuple(topics), owned=tuple((t, int(p)) for t, p in owned_partitions),
                       generation=gen, subscription_generation=proto, rack=rack)


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
    topics = _field(sub, "topics", default=()) or ()
    if isinstance(topics, (str, bytes)) or not all(isinstance(t, str) for t in topics):
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
