"""``decode(..., views=True)``: bytes fields as read-only memoryviews of the input instead of copies.

A leader decoding a JoinGroupResponse of 2,000 members copied about 40 MB of Subscription bytes before it read
any of them; with views it reads them where they lie in the frame.  Both twins give views; the values, the
errors and what re-encodes are the default decode's, whichever twin and input type.
"""

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import kwire
from tests import strategies as S
from tests._twins import CODECS, IMPLS, codec_module


def _has_bytes(fields):
    return any(f.type in ("bytes", "records") or (f.is_struct and _has_bytes(f.fields)) for f in fields)


CASES = [(m, v) for m, v in S.all_message_versions() if _has_bytes(m.fields)]


def _decode(cls, msg, data, version, **kw):
    return cls.decode(data, **kw) if msg.version_prefixed else cls.decode(data, version, **kw)


def _bytes_fields(fields, copied, viewed, path="", out=None):
    """``(path, copied value, viewed value)`` of every bytes field the two decodes of one message hold."""
    out = [] if out is None else out
    for f in fields:
        a, b = getattr(copied, f.attr, None), getattr(viewed, f.attr, None)
        where = f"{path}.{f.attr}"
        if f.is_struct and a is not None:
            for i, (x, y) in enumerate(zip(a, b) if f.is_array else [(a, b)]):
                if x is not None:
                    _bytes_fields(f.fields, x, y, f"{where}[{i}]", out)
        elif f.type in ("bytes", "records") and a is not None:
            out.append((where, a, b))
    return out


def test_every_message_with_a_bytes_field_is_covered():
    names = {m.class_name for m, _v in CASES}
    assert {"JoinGroupRequest", "JoinGroupResponse", "SyncGroupRequest", "SyncGroupResponse",
            "Subscription", "Assignment"} <= names


@pytest.mark.parametrize("msg,version", CASES, ids=[f"{m.class_name}-v{v}" for m, v in CASES])
@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_views_hold_what_copies_hold(msg, version, data):
    tree = data.draw(S.message_tree(msg, version))
    for impl in IMPLS:
        codec = codec_module(impl)
        cls = getattr(codec, msg.class_name)
        raw = S.build(codec, msg, tree).encode(version)
        copied = _decode(cls, msg, raw, version)
        for given_as in (raw, bytearray(raw), memoryview(raw)):
            viewed = _decode(cls, msg, given_as, version, views=True)
            assert viewed == copied
            assert viewed.encode(version) == raw
            for where, a, b in _bytes_fields(msg.fields, copied, viewed):
                assert type(a) is bytes, (impl, where)
                assert isinstance(b, memoryview) and b.readonly and b.format == "B", (impl, where)
                assert b.tobytes() == a, (impl, where)
                # A bytes input is viewed where it lies; any other is copied once, as the pure twin copies any input.
                if given_as is raw and impl == "cython":
                    assert b.obj is raw, where
            if isinstance(given_as, bytearray) and given_as:
                given_as[:] = bytes(len(given_as))
                assert viewed == copied, "a view changed with the caller's buffer"


def _join_response(codec, n):
    members = [codec.JoinGroupResponseMember(member_id=f"m-{i}", metadata=bytes([i % 7]) * (i % 5))
               for i in range(n)]
    return codec.JoinGroupResponse(generation_id=3, protocol_type="consumer", protocol_name="range",
                                   leader="m-0", member_id="m-0", members=members)


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("version", [0, 5, 6, 9])
def test_a_response_frame_is_viewed_in_place(impl, version):
    codec = CODECS[IMPLS.index(impl)]
    frame = codec.encode_response(_join_response(codec, 9), version, correlation_id=4)
    header, copied = codec.decode_response(frame, 11, version)
    header_v, viewed = codec.decode_response(frame, 11, version, views=True)
    assert (header_v, viewed) == (header, copied)
    for a, b in zip(copied.members, viewed.members):
        assert isinstance(b.metadata, memoryview) and b.metadata.readonly and b.metadata == a.metadata
        if impl == "cython":
            assert b.metadata.obj is frame


@pytest.mark.parametrize("impl", IMPLS)
def test_a_request_frame_is_viewed_in_place(impl):
    codec = CODECS[IMPLS.index(impl)]
    req = codec.SyncGroupRequest(group_id="g", generation_id=1, member_id="m", protocol_type="consumer",
                                 protocol_name="range", assignments=[
                                     codec.SyncGroupRequestAssignment(member_id="m", assignment=b"\x00\x03abc")])
    frame = codec.encode_request(req, 5, correlation_id=1, client_id="c")
    (header, copied), (header_v, viewed) = codec.decode_request(frame), codec.decode_request(frame, views=True)
    assert (header_v, viewed) == (header, copied)
    assert isinstance(viewed.assignments[0].assignment, memoryview)
    assert codec.encode_request(viewed, 5, correlation_id=1, client_id="c") == frame


def test_bad_input_gets_the_same_error_with_views():
    frame = kwire.encode_response(_join_response(kwire, 4), 9, correlation_id=1)
    for cut in range(4, len(frame)):
        # Cut short, with a size prefix that agrees: the body itself is truncated.
        bad = (cut - 4).to_bytes(4, "big") + frame[4:cut]
        copied = [_outcome(lambda: c.decode_response(bad, 11, 9)) for c in CODECS]
        viewed = [_outcome(lambda: c.decode_response(bad, 11, 9, views=True)) for c in CODECS]
        assert copied[0][0] == "err"
        assert viewed == copied


def _outcome(call):
    try:
        call()
        return ("ok",)
    except kwire.KwireError as e:
        return ("err", type(e).__name__, str(e), e.offset)
