"""Inputs on which the twins once disagreed, and the 2^31 bytes limit (correctness debts found by checks beyond the tests).

Each case must give identical bytes or the identical typed error in both codecs."""

import mmap
import tracemalloc

import pytest

import kwire
from kwire import _impl

from tests._twins import CODECS
from tests._twins import same_in_both as _same_in_both

np = pytest.importorskip("numpy")


def _protocol(codec, metadata):
    return codec.JoinGroupRequest(group_id="g", member_id="m", protocol_type="consumer",
                                  protocols=[codec.JoinGroupRequestProtocol(name="range", metadata=metadata)])


@pytest.fixture(scope="module")
def huge_buffer(tmp_path_factory):
    """A read-only mapping of a sparse file one byte past 2^31-1: no page of it is ever touched."""
    path = tmp_path_factory.mktemp("huge") / "sparse"
    with open(path, "wb") as fh:
        fh.truncate(0x80000000)
    with open(path, "rb") as fh:
        mapped = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
    yield mapped
    mapped.close()


@pytest.mark.parametrize("version", [0, 9])  # classic int32 length, compact varint length
def test_a_bytes_field_of_2_31_bytes_is_refused_without_copying_it(huge_buffer, version):
    tracemalloc.start()
    try:
        out = _same_in_both(lambda c: lambda: _protocol(c, huge_buffer).encode(version))
        _cur, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert out == ("err", "EncodeError", "bytes longer than 2^31-1 (at protocols[0].metadata)")
    assert peak < 1 << 20


def test_a_non_contiguous_array_in_a_bytes_field():
    strided = np.arange(64, dtype=np.uint8)[::2]
    out = _same_in_both(lambda c: lambda: _protocol(c, strided).encode(9))
    assert out == ("err", "EncodeError", "expected a bytes-like object, got ndarray (at protocols[0].metadata)")
    fortran = np.asfortranarray(np.arange(16, dtype=np.uint8).reshape(4, 4))
    assert _same_in_both(lambda c: lambda: _protocol(c, fortran).encode(9))[0] == "err"
    # A contiguous one is its bytes.
    flat = np.arange(8, dtype=np.uint8)
    assert _same_in_both(lambda c: lambda: _protocol(c, flat).encode(9)) == ("ok", _protocol(CODECS[0], bytes(range(8))).encode(9))


def test_a_non_contiguous_buffer_to_decode_is_a_typed_error():
    strided = np.zeros(64, dtype=np.uint8)[::2]
    out = _same_in_both(lambda c: lambda: c.HeartbeatResponse.decode(strided, 0))
    assert out == ("err", "ArgumentTypeError", "expected a bytes-like object, not ndarray")


class LoudStr(str):
    def encode(self, *args, **kwargs):  # noqa: ARG002 - what a str subclass may do
        return b"not these bytes"


def test_a_str_subclass_is_written_by_its_characters():
    out = _same_in_both(lambda c: lambda: c.HeartbeatRequest(group_id=LoudStr("grüppe"), member_id="m").encode(4))
    assert out == ("ok", kwire.HeartbeatRequest(group_id="grüppe", member_id="m").encode(4))


def test_a_list_that_grows_while_it_is_encoded_is_written_as_it_was():
    class Growing(int):
        """An int32 element whose conversion appends to the list being written."""
        target = None

        def __index__(self):
            if self.target is not None and len(self.target) < 10:
                self.target.append(Growing(int(self) + 1))
            return int(self)

    def make(codec):
        def encode():
            first = Growing(1)
            parts = [first, 2, 3]
            Growing.target = parts
            try:
                topic = codec.SubscriptionTopicPartition(topic="t", partitions=parts)
                return codec.Subscription(topics=["t"], owned_partitions=[topic]).encode(1)
            finally:
                Growing.target = None
        return encode

    out = _same_in_both(make)
    assert out == ("ok", kwire.Subscription(
        topics=["t"], owned_partitions=[kwire.SubscriptionTopicPartition(topic="t", partitions=[1, 2, 3])]).encode(1))


def test_a_list_subclass_that_shrinks_while_iterated():
    class Shrinking(list):
        def __iter__(self):
            items = list(super().__iter__())
            self.clear()
            return iter(items)

    out = _same_in_both(lambda c: lambda: c.Subscription(topics=Shrinking(["a", "b"])).encode(0))
    assert out == ("ok", kwire.Subscription(topics=["a", "b"]).encode(0))


def test_both_twins_unpickle_through_the_one_shared_rebuild():
    import pickle

    from kwire.codec import _codec_common

    for codec in CODECS:
        msg = codec.Subscription.decode(codec.Subscription(topics=["a"], rack_id="r").encode(3))
        rebuild, args = msg.__reduce__()
        assert rebuild is _codec_common.rebuild
        again = rebuild(*args)
        assert again == msg and again.version == 3
        # Pickles made before the move name each twin's own _rebuild: it must still be there.
        assert codec._rebuild is _codec_common.rebuild
    # Pickle finds a class by its public name, so only the selected twin's messages pickle.
    msg = kwire.codec.Subscription.decode(kwire.codec.Subscription(topics=["a"]).encode(3))
    again = pickle.loads(pickle.dumps(msg))
    assert again == msg and again.version == 3


def test_an_unknown_response_key_is_the_same_error_in_both():
    frame = CODECS[0].ResponseHeader(correlation_id=1).encode(0)
    for key in (None, True, 9999, "11"):
        _same_in_both(lambda codec: lambda: kwire.codec.Framing(codec).decode_response(frame, key, 0))


@pytest.mark.parametrize("version", [3, 5])  # classic and flexible (compact lengths, tag sections)
def test_a_message_past_a_mebibyte_is_written_whole_and_alike(version):
    """Past 1 MiB the compiled Writer moves into a bytes object's own storage and hands it over shrunk
    (no copy).  The bytes must be the pure twin's at every size around the switch and across growths,
    inside a frame too, and an error after the switch must still be the typed one."""
    for total in (1 << 20, (1 << 20) + 1, 3 << 20, (9 << 20) + 7):
        def make(codec, total=total):
            chunk = 4096
            sizes = [chunk] * (total // chunk) + ([total % chunk] if total % chunk else [])
            req = codec.SyncGroupRequest(
                group_id="g", generation_id=1, member_id="m", protocol_type="consumer", protocol_name="range",
                assignments=[codec.SyncGroupRequestAssignment(member_id=f"m{i}", assignment=bytes([i % 251]) * n)
                             for i, n in enumerate(sizes)])
            return lambda: (req.encode(version), codec.encode_request(req, version, correlation_id=7))
        outcome = _same_in_both(make)
        body, frame = outcome[1]
        assert len(body) > total and frame.endswith(body)
    if version == 5:  # a big tagged section goes through a second Writer of its own
        tags = {7: b"t" * (3 << 20)}
        body = _same_in_both(lambda codec: lambda: codec.SyncGroupRequest(
            group_id="g", member_id="m", unknown_tagged_fields=dict(tags)).encode(version))[1]
        assert all(c.SyncGroupRequest.decode(body, version).unknown_tagged_fields == tags for c in CODECS)

    def late_error(codec):
        good = [codec.SyncGroupRequestAssignment(member_id="m", assignment=b"x" * (2 << 20))]
        bad = codec.SyncGroupRequestAssignment(member_id=None, assignment=b"")
        return lambda: codec.SyncGroupRequest(group_id="g", member_id="m", assignments=good + [bad]).encode(version)
    outcome = _same_in_both(late_error)
    assert outcome[:2] == ("err", "EncodeError")


@pytest.mark.skipif(_impl.NO_EXTENSIONS, reason="the compiled codec's sharing")
def test_equal_bytes_of_consecutive_elements_are_kept_once():
    """The compiled decoder hands each element struct the previous one and keeps its bytes when they are
    equal (every group member sending the same Subscription), so a 1000-member JoinGroupResponse holds one
    metadata object, not 1000 copies.  Values are the pure twin's either way."""
    a, b = b"\x00\x03" + b"a" * 300, b"\x00\x03" + b"b" * 300
    for version in (5, 9):
        decoded = []
        for codec in CODECS:
            members = [codec.JoinGroupResponseMember(member_id=f"m{i}", metadata=bytes(m))
                       for i, m in enumerate([a, a, a, b, a, a])]
            body = codec.JoinGroupResponse(members=members).encode(version)
            decoded.append(codec.JoinGroupResponse.decode(body, version))
        assert repr(decoded[0]) == repr(decoded[-1])
        got = [m.metadata for m in decoded[0].members]
        assert got == [a, a, a, b, a, a]
        assert got[0] is got[1] is got[2] and got[3] is not got[2] and got[4] is not got[0] and got[4] is got[5]
    syncs = kwire.codec.SyncGroupResponse.decode(kwire.codec.SyncGroupResponse(assignment=a).encode(5), 5)
    assert syncs.assignment == a  # a struct that is no element reads its bytes as before


@pytest.mark.parametrize("version", [0, 4])  # int16 length, compact varint length
def test_strings_of_every_short_length_with_one_non_ascii_byte_anywhere(version):
    """The compiled reader copies short strings a word at a time while checking them for ASCII, and a
    non-ASCII byte anywhere must send the string to the UTF-8 decoder (or to its error) as in the pure twin."""
    cases = []
    for n in range(0, 80):
        base = "".join(chr(97 + (i * 7) % 26) for i in range(n))
        cases.append(base)
        for pos in range(n):
            cases.append(base[:pos] + "é" + base[pos + 1:])  # two UTF-8 bytes: the string grows by one
            cases.append(base[:pos] + "\x7f" + base[pos + 1:])  # the highest ASCII byte
    for text in cases:
        data = CODECS[0].HeartbeatRequest(group_id=text, generation_id=1, member_id="m").encode(version)
        decoded = _same_in_both(lambda c: lambda: c.HeartbeatRequest.decode(data, version).group_id)
        assert decoded == ("ok", text)
    # A lone continuation byte at each position is invalid UTF-8 in both.
    for n in (1, 7, 8, 9, 16, 40, 64, 65):
        good = CODECS[0].HeartbeatRequest(group_id="a" * n, generation_id=1, member_id="m").encode(version)
        start = good.index(b"a" * n)
        for pos in range(n):
            bad = good[:start + pos] + b"\x80" + good[start + pos + 1:]
            assert _same_in_both(lambda c: lambda: c.HeartbeatRequest.decode(bad, version))[:2] == ("err", "DecodeError")


@pytest.mark.parametrize("version", [6, 9])
def test_compact_strings_on_both_sides_of_the_inline_reader_bounds_read_and_fail_alike(version):
    """The compiled reader answers inline a compact string of one length byte, at most 64 bytes, all of them
    there and ASCII (copied 16 bytes at a time from 16 bytes on, 8 at a time below); anything else (65 bytes and
    more, a two-byte length, non-ASCII, cut short, a null where none may be) takes its slow path.  Strings on
    both sides of each bound, whole, cut at every byte and with the null length byte where a string must be,
    read and fail as in the pure twin."""
    texts = []
    for n in (0, 1, 7, 8, 15, 16, 17, 31, 32, 33, 48, 63, 64, 65, 66, 126, 127):
        texts.append("abcdefghijklmnopqrstuvwxyz0123456789"[:n] + "x" * max(0, n - 36))
        if n:
            texts.append(texts[-1][:-1] + "é")  # the last byte non-ASCII (and one byte longer)
            texts.append("é" + texts[-2][1:])  # the first
    for text in texts:
        member = CODECS[0].JoinGroupResponseMember(member_id=text, group_instance_id=text or None, metadata=b"x")
        data = CODECS[0].JoinGroupResponse(generation_id=1, member_id="m", leader="m", protocol_name="range",
                                           members=[member]).encode(version)
        got = _same_in_both(lambda c: lambda: (lambda m: (m.member_id, m.group_instance_id))(
            c.JoinGroupResponse.decode(data, version).members[0]))
        assert got == ("ok", (text, text or None))
        start = data.rindex(b"\x02m") + 2  # the member list: its count, then the member's id
        for cut in range(start, len(data)):
            assert _same_in_both(lambda c: lambda: c.JoinGroupResponse.decode(data[:cut], version))[:2] \
                == ("err", "DecodeError")
        null_id = data[:start + 1] + b"\x00" + data[start + 1 + len(text.encode()) + 1:]  # a null member id
        assert _same_in_both(lambda c: lambda: c.JoinGroupResponse.decode(null_id, version))[:2] == ("err", "DecodeError")


@pytest.mark.parametrize("version", [5, 6])  # int16 length -1, compact varint 0
def test_a_null_string_and_a_cut_null_read_alike(version):
    """Both twins read a null nullable string (answered before the string reader in the compiled one), and
    refuse a null whose length is cut short, alike."""
    member = CODECS[0].JoinGroupResponseMember(member_id="m", group_instance_id=None, metadata=b"x")
    data = CODECS[0].JoinGroupResponse(generation_id=1, member_id="m", leader="m", protocol_name="range",
                                       members=[member]).encode(version)
    assert _same_in_both(lambda c: lambda: c.JoinGroupResponse.decode(data, version).members[0].group_instance_id) \
        == ("ok", None)
    at = data.rindex(b"\xff\xff") if version == 5 else data.rindex(b"\x02m\x00") + 2  # the member's null
    for cut in (at, at + 1):  # before the null; half of it (v5) or the null without what follows (v6)
        assert _same_in_both(lambda c: lambda: c.JoinGroupResponse.decode(data[:cut], version))[:2] \
            == ("err", "DecodeError")


def test_deleting_an_attribute_is_the_same_typed_error_and_changes_nothing():
    # The compiled classes once set a deleted field to None while the pure ones left it unreadable.
    from kwire.codec import _schema
    from kwire.errors import FieldDeletionError

    assert issubclass(FieldDeletionError, AttributeError)
    for msg in _schema.API_MESSAGES + _schema.DATA_MESSAGES:
        name = msg.class_name
        for attr in [f.attr for f in msg.fields] + ["unknown_tagged_fields", "version", "not_a_field"]:
            outcome = _same_in_both(lambda c, attr=attr: lambda: delattr(getattr(c, name)(), attr))
            assert outcome == ("err", "FieldDeletionError",
                               f"{name}.{attr} cannot be deleted: a message always has every field "
                               "(assign None or a value instead)")
        for codec in CODECS:
            obj = getattr(codec, name)()
            before = repr(obj)
            with pytest.raises(FieldDeletionError):
                del obj.unknown_tagged_fields
            assert repr(obj) == before
