"""Pure twin of ``_leader_c``: a JoinGroupResponse's members grouped by their
metadata bytes, the members' ``ConsumerProtocolSubscription``
bytes and eager sticky userData read into columns (over the codec's decode), and each member's
``ConsumerProtocolAssignment`` bytes straight from an assignment's CSR arrays
(layout in ``_leader_common``).  The two must return identical results."""

from __future__ import annotations

import struct
from typing import Dict, List, Optional

import numpy as np

from .. import codec
from ..errors import AssignmentError, DecodeError
from ._leader_common import (MAX_NAME_BYTES, ClaimColumns, StickyUserDataColumns, SubscriptionColumns,
                             metadata_type_error)

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_NULL_USER_DATA = _I32.pack(-1)


def member_rows(members: list):
    """``(member_ids, instance_ids, which, keys, firsts)``: member ``i`` sends
    the distinct metadata ``keys[which[i]]``, first sent by member ``firsts[k]``."""
    member_ids: List = []
    instance_ids: List = []
    which = np.empty(len(members), dtype=np.intp)
    # Each distinct byte string's row, by its sketch (length, head, tail), or by
    # the whole bytes for one whose sketch an earlier, different string has.
    # Not the bytes alone: hashing each member's whole metadata (tens of KB
    # in a second generation) would cost about as much as reading it.
    seen: Dict[object, int] = {}
    keys: List[bytes] = []
    firsts: List[int] = []
    last_metadata = None
    last_k = -1
    for i, m in enumerate(members):
        metadata = getattr(m, "metadata", None)
        if not isinstance(metadata, (bytes, bytearray, memoryview)):
            raise AssignmentError(metadata_type_error(i, metadata))
        member_ids.append(getattr(m, "member_id", None))
        instance_ids.append(getattr(m, "group_instance_id", None))
        if metadata is last_metadata or metadata == last_metadata:
            which[i] = last_k
            continue
        key = metadata if isinstance(metadata, bytes) else bytes(metadata)
        sketch = (len(key), key[:32], key[-96:])
        k = seen.get(sketch)
        if k is not None and keys[k] != key:
            k = seen.get(key)
        if k is None:
            k = seen[key if sketch in seen else sketch] = len(keys)
            keys.append(key)
            firsts.append(i)
        which[i] = last_k = k
        last_metadata = metadata
    return member_ids, instance_ids, which, keys, firsts


def subscription_columns(metadata: List[bytes]) -> SubscriptionColumns:
    """Each byte string of ``metadata`` decoded by the codec, into columns;
    bad bytes raise the codec's error."""
    names: List[str] = []
    ids: Dict[str, int] = {}
    version, topic_list, generation, rack, user_data = [], [], [], [], []
    list_ptr, list_topic = [0], []
    entry_ptr, entry_topic = [0], []
    owned_ptr, owned_topic, owned_partition = [0], [], []
    last_topics = None

    def topic_id(name):
        i = ids.get(name)
        if i is None:
            i = ids[name] = len(names)
            names.append(name)
        return i

    for raw in metadata:
        sub = codec.Subscription.decode(raw)
        if last_topics is None or sub.topics != last_topics:
            list_topic.extend(map(topic_id, sub.topics))
            list_ptr.append(len(list_topic))
            last_topics = sub.topics
        topic_list.append(len(list_ptr) - 2)
        for entry in sub.owned_partitions:
            t = topic_id(entry.topic)
            entry_topic.append(t)
            owned_topic.extend([t] * len(entry.partitions))
            owned_partition.extend(entry.partitions)
        entry_ptr.append(len(entry_topic))
        owned_ptr.append(len(owned_topic))
        version.append(sub.version)
        generation.append(sub.generation_id)
        rack.append(sub.rack_id)
        user_data.append(sub.user_data)
    i32, i64 = np.int32, np.int64
    return SubscriptionColumns(
        names, np.array(version, dtype=i32), np.array(topic_list, dtype=i32),
        np.array(list_ptr, dtype=i64), np.array(list_topic, dtype=i32),
        np.array(entry_ptr, dtype=i64), np.array(entry_topic, dtype=i32),
        np.array(owned_ptr, dtype=i64), np.array(owned_topic, dtype=i32), np.array(owned_partition, dtype=i32),
        np.array(generation, dtype=i32), rack, user_data,
    )


def sticky_userdata_columns(user_data: List[Optional[bytes]], names: List[str]) -> StickyUserDataColumns:
    """Each userData of ``user_data`` the codec decodes as StickyAssignorUserData
    V1, into columns, topic ids continuing ``names`` (distinct); the rest unread."""
    names = list(names)
    ids: Dict[str, int] = {}
    for i, name in enumerate(names):
        ids.setdefault(name, i)
    read, generation, ptr, topic, partition = [], [], [0], [], []
    for raw in user_data:
        msg = None
        if isinstance(raw, bytes):
            try:
                msg = codec.StickyAssignorUserData.decode(raw, 1)
            except DecodeError:
                pass
        read.append(msg is not None)
        generation.append(-1 if msg is None else msg.generation)
        for entry in msg.previous_assignment if msg is not None else ():
            t = ids.setdefault(entry.topic, len(names))
            if t == len(names):
                names.append(entry.topic)
            topic.extend([t] * len(entry.partitions))
            partition.extend(entry.partitions)
        ptr.append(len(topic))
    return StickyUserDataColumns(
        np.array(read, dtype=bool), np.array(generation, dtype=np.int32),
        ClaimColumns(names, np.array(ptr, dtype=np.int64), np.array(topic, dtype=np.int32),
                     np.array(partition, dtype=np.int32)),
    )


def assignment_bytes(indptr, topic, partition, name_offsets, name_blob: bytes, version: int) -> List[bytes]:
    """One Assignment per member (row of ``indptr``): its partitions grouped
    by topic in order of the topic's first appearance, each group keeping the
    list's order."""
    ptr = np.asarray(indptr).tolist()
    topics = np.asarray(topic).tolist()
    parts = np.asarray(partition, dtype=">i4")
    offsets = np.asarray(name_offsets).tolist()
    header = _I16.pack(version)
    out = []
    for m in range(len(ptr) - 1):
        a, b = ptr[m], ptr[m + 1]
        groups: Dict[int, List[int]] = {}
        for i in range(a, b):
            groups.setdefault(topics[i], []).append(i)
        chunks = [header, _I32.pack(len(groups))]
        for t, rows in groups.items():
            name = name_blob[offsets[t]:offsets[t + 1]]
            chunks += (_I16.pack(len(name)), name, _I32.pack(len(rows)))
            if rows[-1] - rows[0] + 1 == len(rows):
                chunks.append(parts[rows[0]:rows[-1] + 1].tobytes())  # one contiguous run
            else:
                chunks.append(parts[rows].tobytes())
        chunks.append(_NULL_USER_DATA)
        out.append(b"".join(chunks))
    return out


def _uvarint(v: int) -> bytes:
    """Kafka's unsigned varint: 7 bits a byte, lowest first, the top bit set on all but the last."""
    groups = [(v >> shift) & 0x7F for shift in range(0, max(v.bit_length(), 1), 7)]
    return bytes([g | 0x80 for g in groups[:-1]] + groups[-1:])


def sync_frame(indptr, topic, partition, name_offsets, name_blob: bytes, version: int, member_ids: list,
               flexible: bool, head: bytes, tail: bytes) -> Optional[bytes]:
    """The SyncGroupRequest frame ``head`` + the assignments array + ``tail``
    (size prefix rewritten): per member its id and its Assignment, as the
    codec writes SyncGroupRequestAssignment at a ``flexible`` version or not.
    None where the codec should write it instead (an id that is not a plain
    str, not UTF-8 encodable or longer than an int16 length; a frame past the
    int32 size prefix)."""
    ids = list(member_ids)
    if len(ids) != len(indptr) - 1:
        return None
    encoded = []
    for mid in ids:
        if type(mid) is not str:
            return None
        try:
            raw = mid.encode("utf-8")
        except UnicodeEncodeError:
            return None
        if len(raw) > MAX_NAME_BYTES:
            return None
        encoded.append(raw)
    payloads = assignment_bytes(indptr, topic, partition, name_offsets, name_blob, version)
    chunks = [head, _uvarint(len(ids) + 1) if flexible else _I32.pack(len(ids))]
    for raw, payload in zip(encoded, payloads):
        if flexible:
            chunks += (_uvarint(len(raw) + 1), raw, _uvarint(len(payload) + 1), payload, b"\x00")
        else:
            chunks += (_I16.pack(len(raw)), raw, _I32.pack(len(payload)), payload)
    chunks.append(tail)
    frame = bytearray(b"".join(chunks))
    if len(frame) - 4 > 0x7FFFFFFF:
        return None
    frame[:4] = _I32.pack(len(frame) - 4)
    return bytes(frame)
