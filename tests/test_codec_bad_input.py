"""Hostile and broken input: typed errors, never a crash, never a big allocation."""

import struct
import tracemalloc

import pytest

import kwire
from kwire.errors import DecodeError, EncodeError, KwireError

from kwire.codec import _schema

from tests._filled import filled
from tests._lying import LyingList
from tests._twins import IMPLS, codec_module, same_in_both


def _samples(k):
    """(class, version, body) of several realistic messages, classic and flexible."""
    members = [k.JoinGroupResponseMember(member_id=f"member-{i}-é", group_instance_id=f"i{i}" if i % 2 else None,
                                         metadata=bytes(range(i, i + 7))) for i in range(3)]
    jg = k.JoinGroupResponse(generation_id=3, protocol_type="consumer", protocol_name="range", leader="member-0-é",
                             member_id="member-1-é", members=members)
    sg = k.SyncGroupRequest(group_id="g", generation_id=2, member_id="m", group_instance_id="s",
                            protocol_type="consumer", protocol_name="range",
                            assignments=[k.SyncGroupRequestAssignment(member_id="m", assignment=b"\x00\x01" * 5)])
    fc = k.FindCoordinatorResponse(coordinators=[k.Coordinator(key="g", node_id=1, host="h", port=9092)])
    hb = k.HeartbeatRequest(group_id="g", generation_id=1, member_id="m", group_instance_id="x")
    av = k.ApiVersionsResponse(api_keys=[k.ApiVersion(api_key=11, min_version=0, max_version=9)],
                               supported_features=[k.SupportedFeatureKey(name="f", min_version=1, max_version=2)],
                               finalized_features_epoch=4)
    out = []
    for msg, versions in ((jg, (0, 5, 6, 9)), (sg, (3, 4, 5)), (fc, (4, 6)), (hb, (3, 4)), (av, (3,))):
        for v in versions:
            out.append((type(msg), v, msg.encode(v)))
    return out


def test_truncation_at_every_offset(codec):
    for cls, version, body in _samples(codec):
        for cut in range(len(body)):
            with pytest.raises(DecodeError) as info:
                cls.decode(body[:cut], version)
            assert info.value.offset is not None and 0 <= info.value.offset <= cut


def test_both_implementations_fail_the_same_way_on_truncation(both_codecs):
    if len(both_codecs) < 2:
        pytest.skip("only one implementation available")
    c, p = both_codecs
    for (cls_c, version, body), (cls_p, _v, body_p) in zip(_samples(c), _samples(p)):
        assert body == body_p
        for cut in range(len(body)):
            errors = []
            for cls in (cls_c, cls_p):
                with pytest.raises(DecodeError) as info:
                    cls.decode(body[:cut], version)
                errors.append((info.value.reason, info.value.offset, info.value.path))
            assert errors[0] == errors[1], (cls_c.__name__, version, cut)


@pytest.mark.parametrize("msg", _schema.API_MESSAGES + _schema.DATA_MESSAGES, ids=lambda m: m.class_name)
def test_both_implementations_name_the_same_path_at_every_depth(both_codecs, msg):
    """The compiled readers of element structs run without a try of their own and leave the failing field
    for their caller to name; every struct of every message, cut at every byte or with any one byte made
    0xff or 0x7f (a length or count past what is left), must still give the pure twin's result: the same
    reason, offset and path (``groups[0].topics[1].partitions[0].committed_offset``), or equal messages."""
    if len(both_codecs) < 2:
        pytest.skip("only one implementation available")
    version = msg.valid.hi
    bodies = []
    for k in both_codecs:
        value = filled(k, msg, version, 2, 2)
        bodies.append(value.encode() if msg.version_prefixed else value.encode(version))
    assert bodies[0] == bodies[1]
    body = bodies[0]
    inputs = [body[:cut] for cut in range(len(body))]
    inputs += [body[:i] + bytes([b]) + body[i + 1:] for i in range(len(body)) for b in (0xFF, 0x7F)]
    deepest = ""
    for data in inputs:
        results = []
        for k in both_codecs:
            cls = getattr(k, msg.class_name)
            try:
                results.append(repr(cls.decode(data) if msg.version_prefixed else cls.decode(data, version)))
            except DecodeError as e:
                results.append((type(e), e.reason, e.offset, e.path))
                deepest = max(deepest, e.path or "", key=lambda p: (p.count("."), p.count("["), len(p)))
        assert results[0] == results[1], data
    if any(f.is_array and f.is_struct and version in f.versions for f in msg.fields):
        assert "[" in deepest  # the cuts reached inside an element struct


def test_error_names_offset_and_field_path(codec):
    members = [codec.JoinGroupResponseMember(member_id=f"m{i}") for i in range(5)]
    body = bytearray(codec.JoinGroupResponse(members=members).encode(9))
    # Corrupt member 3's id with an invalid UTF-8 byte.
    at = body.index(b"m3") + 1
    body[at] = 0xFF
    with pytest.raises(DecodeError) as info:
        codec.JoinGroupResponse.decode(bytes(body), 9)
    assert info.value.path == "members[3].member_id"
    assert info.value.offset == at - 1
    assert "members[3].member_id" in str(info.value)


def _peak_bytes(fn):
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        fn()
    finally:
        _cur, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    return peak


@pytest.mark.parametrize("count_bytes", [
    b"\xff\xff\xff\xff\x0f",      # compact count 2^32 - 1 (N+1 = 2^32 overflows 32 bits: refused)
    b"\xff\xff\xff\xff\x07",      # compact count 2^31 - 2
    b"\x80\x80\x80\x80\x10",      # 2^32 exactly: varint exceeds 32 bits
])
def test_huge_compact_count_fails_at_once_without_allocating(codec, count_bytes):
    # JoinGroupResponse v9 up to the member array, then a hostile count: about 40 bytes.
    head = codec.JoinGroupResponse(protocol_name="range", leader="l", member_id="m").encode(9)[:-2]
    frame = head + count_bytes + b"\x00" * 8
    assert len(frame) < 48

    def decode():
        with pytest.raises(DecodeError):
            codec.JoinGroupResponse.decode(frame, 9)

    assert _peak_bytes(decode) < 64 * 1024


@pytest.mark.parametrize("count", [0x7FFFFFFF, 0x10000000, 1000])
def test_huge_classic_count_fails_without_allocating(codec, count):
    head = codec.JoinGroupResponse(protocol_name="r", leader="l", member_id="m").encode(0)[:-4]
    frame = head + struct.pack(">i", count) + b"\x00" * 16

    def decode():
        with pytest.raises(DecodeError, match="cannot fit"):
            codec.JoinGroupResponse.decode(frame, 0)

    assert _peak_bytes(decode) < 64 * 1024


def test_huge_string_and_bytes_lengths(codec):
    # Classic bytes length of 2^31-1 with 3 bytes behind it.
    body = codec.SyncGroupResponse().encode(0)[:-4] + struct.pack(">i", 0x7FFFFFFF) + b"abc"
    peak = _peak_bytes(lambda: pytest.raises(DecodeError, codec.SyncGroupResponse.decode, body, 0))
    assert peak < 64 * 1024
    # A compact string longer than Kafka's 32767 cap is refused even if the bytes are there.
    body = b"\x81\x80\x02" + b"a" * 32768 + b"\x00\x00\x00\x00" + b"\x01\x00\x00"
    with pytest.raises(DecodeError, match="exceeds"):
        codec.HeartbeatRequest.decode(body, 4)


@pytest.mark.parametrize("length", [-2, -100, -32768])
def test_negative_string_lengths_other_than_null(codec, length):
    body = struct.pack(">h", length) + b"\x00" * 12
    with pytest.raises(DecodeError, match="negative length"):
        codec.HeartbeatRequest.decode(body, 0)


def test_negative_array_and_bytes_lengths(codec):
    body = codec.SyncGroupRequest(group_id="g").encode(0)[:-4] + struct.pack(">i", -5)
    with pytest.raises(DecodeError, match="negative length"):
        codec.SyncGroupRequest.decode(body, 0)
    body = codec.SyncGroupResponse().encode(0)[:-4] + struct.pack(">i", -2)
    with pytest.raises(DecodeError, match="negative length"):
        codec.SyncGroupResponse.decode(body, 0)


def test_null_where_the_version_is_not_nullable(codec):
    # group_instance_id is nullable from v3; member_id never is.
    body = b"\x00\x01g" + b"\x00\x00\x00\x01" + b"\xff\xff" + b"\xff\xff"
    with pytest.raises(DecodeError, match="null") as info:
        codec.HeartbeatRequest.decode(body, 3)
    assert info.value.path == "member_id"
    # Null array in a non-nullable array.
    body = codec.SyncGroupRequest().encode(4)[:-2] + b"\x00\x00"
    with pytest.raises(DecodeError, match="null"):
        codec.SyncGroupRequest.decode(body, 4)


@pytest.mark.parametrize("bad", [b"\xff", b"\xc3\x28", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\xe2\x82"])
def test_invalid_utf8(codec, bad):
    body = struct.pack(">h", len(bad)) + bad + b"\x00\x00\x00\x01\x00\x00"
    with pytest.raises(DecodeError, match="UTF-8"):
        codec.HeartbeatRequest.decode(body, 0)


def test_trailing_bytes(codec):
    body = codec.HeartbeatRequest(group_id="g").encode(4)
    with pytest.raises(DecodeError, match="trailing"):
        codec.HeartbeatRequest.decode(body + b"\x00", 4)


def test_overlong_varints(codec):
    # Six-byte varint for a compact string length.
    with pytest.raises(DecodeError, match="longer than 5"):
        codec.HeartbeatRequest.decode(b"\x80\x80\x80\x80\x80\x00", 4)
    # A non-canonical but short varint is accepted (Kafka's readers do too).
    body = b"\x82\x00g" + b"\x00\x00\x00\x01" + b"\x01" + b"\x00" + b"\x00"
    assert codec.HeartbeatRequest.decode(body, 4).group_id == "g"


def test_tagged_field_section_checks(codec):
    base = codec.HeartbeatRequest(group_id="g").encode(4)[:-1]
    for section, reason in ((b"\x02\x05\x00\x03\x00", "out of order"),
                            (b"\x02\x05\x00\x05\x00", "out of order"),
                            (b"\x01\x05\x09ab", "truncated"),
                            (b"\x7f", "cannot fit")):
        with pytest.raises(DecodeError, match=reason):
            codec.HeartbeatRequest.decode(base + section, 4)


def test_known_tagged_field_must_fill_its_size(codec):
    # ApiVersionsResponse v3: tag 1 (finalized_features_epoch, int64) declared 9 bytes long.
    body = codec.ApiVersionsResponse().encode(3)[:-1] + b"\x01\x01\x09" + b"\x00" * 9
    with pytest.raises(DecodeError, match="left over"):
        codec.ApiVersionsResponse.decode(body, 3)


# --------------------------------------------------------------------------- encoding


@pytest.mark.parametrize("field,value,match", [
    ("generation_id", 2 ** 31, "out of range"),
    ("generation_id", -(2 ** 31) - 1, "out of range"),
    ("generation_id", 2 ** 80, "out of range"),
    ("generation_id", "1", "expected an integer"),
    ("generation_id", 1.5, "expected an integer"),
    ("generation_id", None, "expected an integer"),
    ("group_id", b"bytes", "expected str"),
    ("group_id", None, "null"),
    ("group_id", "x" * 32768, "exceeds 32767"),
    ("group_id", "é" * 16384, "exceeds 32767"),
    ("member_id", "\ud800", "UTF-8"),
])
def test_encode_rejects_bad_values(codec, field, value, match):
    msg = codec.HeartbeatRequest(group_id="g", member_id="m")
    setattr(msg, field, value)
    for version in (0, 4):
        with pytest.raises(EncodeError, match=match) as info:
            msg.encode(version)
        assert info.value.path == field


def test_encode_rejects_wrong_nested_types(codec):
    msg = codec.SyncGroupRequest(assignments=[codec.SyncGroupRequestAssignment(), "not a struct"])
    with pytest.raises(EncodeError, match="expected SyncGroupRequestAssignment") as info:
        msg.encode(0)
    assert info.value.path == "assignments[1]"
    with pytest.raises(EncodeError, match="expected a list"):
        codec.SyncGroupRequest(assignments="abc").encode(0)
    with pytest.raises(EncodeError, match="bytes-like"):
        codec.SyncGroupResponse(assignment="text").encode(0)
    with pytest.raises(EncodeError, match="bool"):
        codec.JoinGroupResponse(skip_assignment=2).encode(9)


def test_encode_accepts_integer_like_values(codec):
    import numpy as np

    msg = codec.HeartbeatRequest(group_id="g", member_id="m", generation_id=np.int64(5))
    assert codec.HeartbeatRequest.decode(msg.encode(0), 0).generation_id == 5


def test_encode_error_leaves_nothing_half_written(codec):
    # A failing encode raises; nothing partial is returned and the object is unchanged.
    members = [codec.JoinGroupResponseMember(member_id="ok")] * 3 + [codec.JoinGroupResponseMember(member_id=7)]
    msg = codec.JoinGroupResponse(members=members)
    before = repr(msg)
    with pytest.raises(EncodeError) as info:
        msg.encode(9)
    assert info.value.path == "members[3].member_id"
    assert repr(msg) == before


def test_all_errors_share_one_tree():
    assert issubclass(kwire.DecodeError, kwire.KwireError) and issubclass(kwire.DecodeError, ValueError)
    assert issubclass(kwire.EncodeError, kwire.KwireError) and issubclass(kwire.EncodeError, ValueError)
    assert issubclass(kwire.UnsupportedVersionError, KwireError)
    assert issubclass(kwire.FrameTooLargeError, kwire.DecodeError)


@pytest.mark.parametrize("impl", IMPLS)
def test_random_garbage_never_escapes_the_error_tree(impl):
    import random

    codec = codec_module(impl)
    rng = random.Random(1234)
    classes = [codec.JoinGroupRequest, codec.JoinGroupResponse, codec.SyncGroupRequest, codec.SyncGroupResponse,
               codec.FindCoordinatorRequest, codec.FindCoordinatorResponse, codec.HeartbeatRequest,
               codec.HeartbeatResponse, codec.ApiVersionsResponse]
    for _ in range(3000):
        cls = rng.choice(classes)
        version = rng.randint(cls.min_version, cls.max_version)
        data = bytes(rng.getrandbits(8) for _ in range(rng.randint(0, 40)))
        try:
            cls.decode(data, version)
        except DecodeError:
            pass
    for data in (b"", b"\x00", b"\xff\xff", b"\x00\x07", b"\x00\x03\x00\x00\x00\x00\x00"):
        for cls in (codec.Subscription, codec.Assignment):
            try:
                cls.decode(data)
            except DecodeError:
                pass


# -- array values whose __len__ lies ---------------------------------------------------------------------------


def _newest_version(msg, path):
    """The newest version of ``msg`` that has every field of ``path`` (None: none has)."""
    return max((v for v in range(msg.valid.lo, msg.valid.hi + 1) if all(v in f.versions for f in path)), default=None)


def _array_kinds():
    """The first array field of each kind in the schema (element type, tagged or not), as ``(message, path)``:
    the path of attribute names from the message down to the array."""
    kinds = {}

    def walk(msg, fields, path):
        for f in fields:
            if f.is_array and _newest_version(msg, path + [f]) is not None:
                kinds.setdefault(("struct" if f.is_struct else f.element_type, f.tag is not None), (msg, path + [f]))
            if f.is_struct:
                walk(msg, f.fields, path + [f])

    for msg in _schema.API_MESSAGES + _schema.DATA_MESSAGES:
        walk(msg, msg.fields, [])
    return kinds


ARRAY_KINDS = _array_kinds()
_ELEMENT = {"int32": 1, "int64": 1, "int16": 1, "string": "a", "bytes": b"a", "uuid": bytes(16)}


def _with_lying_array(codec, msg, path, claimed):
    """``msg`` at its newest version, the array at ``path`` a LyingList of one element claiming ``claimed``,
    each array above it holding one default element."""
    def element_of(field):
        if field.is_struct:
            return getattr(codec, msg.struct_class_names.get(field.struct_name, field.struct_name))()
        return _ELEMENT[field.element_type]

    top = getattr(codec, msg.class_name)()
    holder = top
    for field in path[:-1]:
        child = element_of(field)
        setattr(holder, field.attr, [child] if field.is_array else child)
        holder = child
    last = path[-1]
    setattr(holder, last.attr, LyingList([element_of(last)], claimed))
    return top


@pytest.mark.parametrize("claimed", [2 ** 62, -1, 2 ** 63, 5], ids=["2^62", "-1", "2^63", "5"])
@pytest.mark.parametrize("kind", sorted(ARRAY_KINDS), ids=lambda k: f"{k[0]}{'-tagged' if k[1] else ''}")
def test_an_array_whose_len_lies_is_an_encode_error_in_both_twins(kind, claimed):
    # list() sizes its first allocation by __len__: a snapshot taken that way raised a bare MemoryError
    # (2^62), ValueError (-1) or OverflowError (2^63) instead of the codec's error.
    msg, path = ARRAY_KINDS[kind]
    version = _newest_version(msg, path)
    result = same_in_both(lambda codec: lambda: _with_lying_array(codec, msg, path, claimed).encode(version))
    assert result[:2] == ("err", "EncodeError"), result


def test_every_array_element_kind_of_the_schema_is_covered():
    # Struct arrays with and without tags, and the scalar element types the tables use today.
    assert {("struct", False), ("struct", True), ("int32", False), ("string", False)} <= set(ARRAY_KINDS)
