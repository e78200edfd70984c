"""Size-prefixed frames, headers, and the stream splitter."""

import struct
import tracemalloc

import pytest

import kwire
from kwire.codec import FrameSplitter, decode_request_header, split_frames, split_request


def _frames():
    return [
        kwire.encode_request(kwire.FindCoordinatorRequest(key="g"), 0, 1, "c"),
        kwire.encode_request(kwire.JoinGroupRequest(group_id="g", protocols=[
            kwire.JoinGroupRequestProtocol(name="range", metadata=b"x" * 300)]), 9, 2, None),
        kwire.encode_request(kwire.HeartbeatRequest(group_id="g", member_id="m"), 4, 3, "c"),
    ]


@pytest.mark.parametrize("api,kind_versions", [
    (kwire.JoinGroupRequest, range(0, 10)), (kwire.SyncGroupRequest, range(0, 6)),
    (kwire.FindCoordinatorRequest, range(0, 7)), (kwire.HeartbeatRequest, range(0, 5)),
])
def test_request_frames_round_trip_at_every_version(api, kind_versions):
    for version in kind_versions:
        frame = kwire.encode_request(api(), version, 77, "client-é")
        header, msg = kwire.decode_request(frame)
        assert (header.request_api_key, header.request_api_version, header.correlation_id) == (
            api.api_key, version, 77)
        assert header.client_id == "client-é"
        assert msg == api()
        assert struct.unpack(">i", frame[:4])[0] == len(frame) - 4


@pytest.mark.parametrize("api,versions", [
    (kwire.JoinGroupResponse, range(0, 10)), (kwire.SyncGroupResponse, range(0, 6)),
    (kwire.FindCoordinatorResponse, range(0, 7)), (kwire.HeartbeatResponse, range(0, 5)),
])
def test_response_frames_round_trip_at_every_version(api, versions):
    for version in versions:
        frame = kwire.encode_response(api(), version, 5)
        header, msg = kwire.decode_response(frame, api.api_key, version)
        assert header.correlation_id == 5 and msg == api()


def test_null_client_id():
    frame = kwire.encode_request(kwire.HeartbeatRequest(), 4, 1)
    assert kwire.decode_request(frame)[0].client_id is None


@pytest.mark.parametrize("field,value,match", [
    ("client_id", "\ud800", "UTF-8"),
    ("client_id", "c" * 32768, "exceeds 32767"),
    ("client_id", b"bytes", "expected str"),
    ("client_id", 7, "expected str"),
    ("correlation_id", 2 ** 31, "out of range"),
    ("correlation_id", -(2 ** 31) - 1, "out of range"),
    ("correlation_id", "1", "expected an integer"),
    ("correlation_id", None, "expected an integer"),
])
def test_bad_header_values_are_named_in_both_twins(codec, field, value, match):
    # The frame writer takes plain values without a try block of its own; anything else still gets the
    # header field's name in its error.
    args = {"correlation_id": 1, "client_id": "c", field: value}
    with pytest.raises(kwire.EncodeError, match=match) as info:
        codec.encode_request(codec.HeartbeatRequest(), 4, args["correlation_id"], args["client_id"])
    assert info.value.path == field


def test_header_values_of_other_int_and_str_types(codec):
    import numpy as np

    class Name(str):
        pass

    frame = codec.encode_request(codec.HeartbeatRequest(), 4, np.int32(-5), Name("client-é"))
    header, _msg = codec.decode_request(frame)
    assert (header.correlation_id, header.client_id) == (-5, "client-é")
    assert codec.decode_request(codec.encode_request(codec.HeartbeatRequest(), 4, True, None))[0].correlation_id == 1


def test_wrong_kind_of_message_is_refused():
    with pytest.raises(kwire.EncodeError):
        kwire.encode_request(kwire.HeartbeatResponse(), 0, 1)
    with pytest.raises(kwire.EncodeError):
        kwire.encode_response(kwire.HeartbeatRequest(), 0, 1)
    with pytest.raises(kwire.EncodeError):
        kwire.encode_request(object(), 0, 1)


def test_bad_frames():
    frame = _frames()[0]
    with pytest.raises(kwire.DecodeError, match="size prefix"):
        kwire.decode_request(frame + b"\x00")
    with pytest.raises(kwire.DecodeError):
        kwire.decode_request(frame[:3])
    # An api key kwire has no codec for (SaslHandshake): the header still reads.
    other = struct.pack(">hhih", 17, 1, 9, 1) + b"c" + b"\x00\x00"
    header, body = split_request(struct.pack(">i", len(other)) + other)
    assert (header.request_api_key, header.correlation_id, bytes(body)) == (17, 9, b"\x00\x00")
    # decode_request_header gives the header itself, of the codec's own RequestHeader class.
    alone = decode_request_header(struct.pack(">i", len(other)) + other)
    assert type(alone) is kwire.RequestHeader and alone == header
    with pytest.raises(kwire.UnsupportedVersionError):
        kwire.decode_request(struct.pack(">i", len(other)) + other)
    # A corrupt body reports its offset within the whole frame.
    bad = bytearray(kwire.encode_request(kwire.HeartbeatRequest(group_id="gg"), 0, 1, "c"))
    at = bad.index(b"gg")
    bad[at] = 0xFF
    with pytest.raises(kwire.DecodeError, match="UTF-8") as info:
        kwire.decode_request(bytes(bad))
    assert info.value.offset == at and info.value.path == "group_id"


def test_splitter_handles_any_chunking():
    frames = _frames()
    stream = b"".join(frames)
    for chunk in (1, 2, 3, 7, 64, len(stream)):
        splitter = FrameSplitter()
        out = []
        for i in range(0, len(stream), chunk):
            out += splitter.feed(stream[i:i + chunk])
        assert out == frames and splitter.pending == 0
    got, rest = split_frames(stream + frames[0][:5])
    assert got == frames and rest == frames[0][:5]


def test_splitter_refuses_oversized_frames_before_buffering():
    splitter = FrameSplitter(max_frame_size=1000)
    good = _frames()[0]
    tracemalloc.start()
    try:
        with pytest.raises(kwire.FrameTooLargeError) as info:
            splitter.feed(good + struct.pack(">i", 0x7FFFFFFF) + b"abc")
        _cur, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 64 * 1024
    assert info.value.frames == [good]          # what came before is not lost
    with pytest.raises(kwire.FrameTooLargeError):
        splitter.feed(b"more")                  # the stream cannot resync
    with pytest.raises(kwire.DecodeError, match="negative"):
        FrameSplitter().feed(struct.pack(">i", -1))


def test_default_max_frame_size_is_kafkas():
    assert FrameSplitter().max_frame_size == 100 * 1024 * 1024


def test_many_small_frames_stay_linear():
    frame = _frames()[2]
    splitter = FrameSplitter()
    assert len(splitter.feed(frame * 20000)) == 20000


def test_max_elements_covers_the_whole_frame():
    # A request with two tagged fields in its (v2) header and three protocols
    # in its body: five elements in all.
    frame = bytearray(kwire.encode_request(kwire.JoinGroupRequest(group_id="g", protocols=[
        kwire.JoinGroupRequestProtocol(name=n) for n in "abc"]), 9, 7, "c"))
    header_end = 4 + 2 + 2 + 4 + 2 + 1  # size, key, version, correlation id, client id "c"
    assert frame[header_end] == 0  # an empty tagged-field section: put two unknown fields there
    frame[header_end:header_end + 1] = b"\x02\x05\x00\x06\x01z"
    frame[:4] = struct.pack(">i", len(frame) - 4)
    header, msg = kwire.decode_request(bytes(frame), max_elements=5)
    assert header.unknown_tagged_fields == {5: b"", 6: b"z"} and len(msg.protocols) == 3
    with pytest.raises(kwire.LimitExceededError) as info:
        kwire.decode_request(bytes(frame), max_elements=4)
    assert info.value.path == "protocols"
    with pytest.raises(kwire.LimitExceededError):
        kwire.decode_request(bytes(frame), max_elements=1)  # refused in the header already

    response = kwire.encode_response(kwire.JoinGroupResponse(members=[
        kwire.JoinGroupResponseMember(member_id=str(i)) for i in range(4)]), 9, 7)
    assert len(kwire.decode_response(response, 11, 9, max_elements=4)[1].members) == 4
    with pytest.raises(kwire.LimitExceededError):
        kwire.decode_response(response, 11, 9, max_elements=3)
