"""read_record_batches: batches whose records are made as their loop reaches them.  The same records as
decode_record_batches, the same errors (class, reason, offset, path) at the first bad record, after the good ones
before it were given, in both twins."""

import struct

import pytest

from kwire import _impl
from kwire.errors import CorruptRecordError, DecodeError, RecordCrcError

from tests._twins import IMPLS as IMPLEMENTATIONS

RECORDS = {impl: _impl.load("records", impl, package="kwire.codec") for impl in IMPLEMENTATIONS}
P = RECORDS["python"]
CODECS = ("none", "gzip", "snappy", "lz4", "zstd")


@pytest.fixture(params=IMPLEMENTATIONS)
def R(request):
    return RECORDS[request.param]


def _fields(r):
    return (r.offset, r.timestamp, r.key, r.value, tuple((h.key, h.value) for h in r.headers), r.attributes)


def _records(R, n):
    # Header values that repeat, change length, go missing and come back: the compiled twin shares a header value
    # with the record before when the bytes are the same, and must never give one record another's.
    values = [b"same", b"same", b"other", b"same", None, b"", b"same", b"longer value", b"same"]
    return [R.Record(b"key-%d" % (i % 3), b"v" * (i % 40),
                     [("trace", b"%d" % i), ("source", values[i % len(values)]), ("k%d" % (i % 4), b"x")]
                     if i % 5 else (), offset=i, timestamp=1_700_000_000_000 + i // 2)
            for i in range(n)]


@pytest.mark.parametrize("codec", CODECS)
def test_the_loop_and_records_give_what_decode_gives(R, codec):
    data = b"".join(R.RecordBatch(_records(R, n), base_offset=base, compression=codec).encode()
                    for n, base in ((1, 0), (60, 1), (0, 61), (25, 61)))
    eager = R.decode_record_batches(data)
    expected = [[_fields(r) for r in b.records] for b in eager]
    assert [[_fields(r) for r in b] for b in R.read_record_batches(data)] == expected
    lazy = R.read_record_batches(data)
    assert [[_fields(r) for r in b.records] for b in lazy] == expected
    assert lazy == eager and [b.crc for b in lazy] == [b.crc for b in eager]
    assert [b.encode() for b in R.read_record_batches(data)] == [b.encode() for b in eager]
    # The pure twin gives the same records from the same bytes.
    assert [[_fields(r) for r in b] for b in P.read_record_batches(data)] == expected


def test_many_header_values_beyond_those_remembered(R):
    headers = [("h%d" % i, b"%d" % (i % 3)) for i in range(40)]
    recs = [R.Record(b"k", b"v", headers if i % 2 else headers[::-1], offset=i) for i in range(5)]
    data = R.RecordBatch(recs).encode()
    assert [[tuple(h) for h in r.headers] for b in R.read_record_batches(data) for r in b] == \
        [[tuple(h) for h in r.headers] for r in recs]


def test_a_loop_starts_again_and_records_are_kept(R):
    data = R.RecordBatch(_records(R, 10)).encode()
    batch = R.read_record_batches(data)[0]
    first, second = list(batch), list(batch)
    assert [_fields(r) for r in first] == [_fields(r) for r in second]
    assert first[0] is not second[0]  # made afresh by each loop
    kept = batch.records
    assert batch.records is kept and [r for r in batch] == kept and all(a is b for a, b in zip(batch, kept))
    batch.records = kept[:3]
    assert len(list(batch)) == 3 and batch.encode() == R.RecordBatch.decode(batch.encode()).encode()


def test_assigned_records_replace_the_bytes(R):
    batch = R.read_record_batches(R.RecordBatch(_records(R, 4)).encode())[0]
    batch.records = [R.Record(b"new", offset=0)]
    assert [r.key for r in batch] == [b"new"] and [r.key for r in batch.records] == [b"new"]


def test_changing_the_input_after_the_read_changes_nothing(R):
    data = bytearray(R.RecordBatch(_records(R, 4)).encode())
    batches = R.read_record_batches(data)
    expected = [_fields(r) for r in R.decode_record_batches(bytes(data))[0].records]
    data[70:] = bytes(len(data) - 70)
    assert [_fields(r) for r in batches[0]] == expected


HEADER = ("base_offset", "partition_leader_epoch", "magic", "attributes", "last_offset_delta", "base_timestamp",
          "max_timestamp", "producer_id", "producer_epoch", "base_sequence")
DERIVED = ("crc", "compression", "timestamp_type", "is_transactional", "is_control", "delete_horizon_ms")


def _header_bytes(R, codec="none", n=3):
    # Every header field away from its default, and timestamps that are not the records' own.
    records = _records(R, n)
    for r in records:
        r.offset += 5_000_000_000
    return R.RecordBatch(records, base_offset=5_000_000_000, partition_leader_epoch=7, compression=codec,
                         is_transactional=True, base_timestamp=1_600_000_000_000, max_timestamp=1_800_000_000_000,
                         producer_id=1_234_567_890_123, producer_epoch=3, base_sequence=17).encode()


def _header_of(batch):
    return {f: getattr(batch, f) for f in HEADER + DERIVED}


@pytest.mark.parametrize("first", HEADER + DERIVED)
def test_each_header_field_read_first_gives_what_decode_gives(R, first):
    # The compiled twin makes a lazily read batch's header fields when one is first read: any of them, read first,
    # before or after the loop over its records, and read after the caller dropped the input.
    data = b"".join([_header_bytes(R, "none"), _header_bytes(R, "gzip", 1)])
    expected = [_header_of(b) for b in R.decode_record_batches(data)]
    records = [[_fields(r) for r in b.records] for b in R.decode_record_batches(data)]
    batches = R.read_record_batches(data)
    del data
    assert [getattr(b, first) for b in batches] == [e[first] for e in expected]
    assert [[_fields(r) for r in b] for b in batches] == records
    assert [_header_of(b) for b in batches] == expected
    looped = R.read_record_batches(b"".join([_header_bytes(R, "none"), _header_bytes(R, "gzip", 1)]))
    assert [[_fields(r) for r in b] for b in looped] == records  # the loop first, then the header
    assert [getattr(b, first) for b in looped] == [e[first] for e in expected]
    assert [_header_of(b) for b in looped] == expected


@pytest.mark.parametrize("field", HEADER)
def test_a_header_field_assigned_before_any_is_read(R, field):
    data = _header_bytes(R)
    value = {"magic": 2, "attributes": 0x11, "base_timestamp": 1_650_000_000_000, "base_offset": 4_999_999_990}.get(
        field, 42)
    batch = R.read_record_batches(data)[0]
    setattr(batch, field, value)
    expected = R.decode_record_batches(data)[0]
    setattr(expected, field, value)
    assert getattr(batch, field) == value and _header_of(batch) == _header_of(expected)
    assert [_fields(r) for r in batch] == [_fields(r) for r in expected.records]
    assert batch.encode() == expected.encode() and batch == expected


def test_an_untouched_lazy_batch_encodes_compares_and_pickles_as_read(R):
    import pickle

    for codec in CODECS:
        data = _header_bytes(R, codec)
        eager = R.decode_record_batches(data)[0]
        assert R.read_record_batches(data)[0].encode() == eager.encode()
        if codec == "none":
            assert R.read_record_batches(data)[0].encode() == data
        assert R.read_record_batches(data)[0] == eager and repr(R.read_record_batches(data)[0]) == repr(eager)
        assert pickle.loads(pickle.dumps(R.read_record_batches(data)[0])) == eager
        looped = R.read_record_batches(data)[0]
        assert len(list(looped)) == 3 and looped.encode() == eager.encode()


def test_a_batch_built_by_hand_iterates_its_records(R):
    recs = _records(R, 3)
    batch = R.RecordBatch(recs)
    assert list(batch) == recs and all(a is b for a, b in zip(batch, recs))


# --- Bad records ------------------------------------------------------------------------------------------------

def _varint(v):
    u = (v << 1) ^ (v >> 63)
    groups = [(u >> shift) & 0x7F for shift in range(0, max(u.bit_length(), 1), 7)]
    return bytes([g | 0x80 for g in groups[:-1]] + groups[-1:])


def _record(key, body_extra=b""):
    body = b"\x00" + _varint(0) + _varint(0) + _varint(len(key)) + key + _varint(1) + b"v" + _varint(0) + body_extra
    return _varint(len(body)) + body


def _batch(records, count, base_offset=0):
    head = struct.pack(">qiibIhiqqqhii", base_offset, 49 + len(records), -1, 2, 0, 0, count - 1, 0, 0, -1, -1, -1,
                       count)
    body = head[21:] + records
    return head[:17] + struct.pack(">I", P.crc32c(body)) + body


def _error(fn):
    with pytest.raises(DecodeError) as info:
        fn()
    e = info.value
    return type(e), e.reason, e.offset, e.path


GOOD = _record(b"a") + _record(b"b")
BAD_RECORDS = {
    # a record whose length disagrees with its fields, third of four
    "fields": _batch(GOOD + _record(b"c", b"\x00") + _record(b"d"), 4),
    # fewer records than the count (the bytes could hold that many)
    "count": _batch(_record(b"a" * 10) + _record(b"b" * 10), 3),
    # bytes after the records the batch declares
    "trailing": _batch(GOOD + b"\x00\x00", 2),
    # a key length beyond its record, first record
    "key": _batch(_varint(8) + b"\x00\x00\x00" + _varint(100) + b"1234" + GOOD, 3),
}


@pytest.mark.parametrize("case", sorted(BAD_RECORDS))
def test_a_bad_record_raises_what_decode_raises_after_the_good_ones(case):
    data = _batch(GOOD, 2) + BAD_RECORDS[case]  # the second batch is the bad one: its index is in the path
    seen = []
    for R in RECORDS.values():
        expected = _error(lambda: R.decode_record_batches(data))
        batches = R.read_record_batches(data)
        assert [r.key for r in batches[0]] == [b"a", b"b"]
        got, it = [], iter(batches[1])
        err = _error(lambda: got.extend(r.key for r in it))
        assert err == expected and expected[3].startswith("[1]"), (err, expected)
        # What was decoded before the error stays the caller's; the loop is over.
        good = {"fields": [b"a", b"b"], "count": [b"a" * 10, b"b" * 10], "trailing": [b"a", b"b"], "key": []}[case]
        assert got == good
        assert list(it) == []
        # batch.records raises the same, and again when read again (nothing half-made is kept).
        assert _error(lambda: batches[1].records) == expected
        assert _error(lambda: batches[1].records) == expected
        assert _error(lambda: batches[1].encode()) == expected
        assert _error(lambda: batches[1] == batches[1]) == expected
        seen.append(expected)
    assert all(s == seen[0] for s in seen), seen


def test_batch_errors_are_raised_by_the_read_itself(R):
    good = _batch(GOOD, 2)
    bad_crc = bytearray(good)
    bad_crc[-1] ^= 1
    for data in (bytes(bad_crc), good + good[:30]):
        assert _error(lambda: R.read_record_batches(data)) == _error(lambda: R.decode_record_batches(data))
    assert _error(lambda: R.read_record_batches(bytes(bad_crc)))[0] is RecordCrcError
    assert R.read_record_batches(good + good[:30], allow_partial_tail=True).partial_tail == 30


@pytest.mark.parametrize("codec", ["gzip", "lz4"])
def test_compressed_records_that_do_not_decompress_fail_when_the_loop_starts(codec):
    seen = []
    for R in RECORDS.values():
        data = bytearray(R.RecordBatch(_records(R, 20), compression=codec).encode())
        data[70:80] = b"\xff" * 10
        data[17:21] = struct.pack(">I", P.crc32c(bytes(data[21:])))
        data = bytes(data)
        batch = R.read_record_batches(data)[0]
        expected = _error(lambda: R.decode_record_batches(data))
        assert expected[0] is CorruptRecordError or issubclass(expected[0], CorruptRecordError)
        assert _error(lambda: list(batch)) == expected
        assert _error(lambda: batch.records) == expected
        seen.append(expected)
    assert all(s == seen[0] for s in seen), seen


# --- What the loop reuses -----------------------------------------------------------------------------------------
# The compiled loop refills a record it gave two steps before when nothing else holds it (nor its headers tuple,
# nor a header): whatever a caller keeps must never change.

@pytest.mark.parametrize("codec", ["none", "lz4"])
def test_what_a_caller_keeps_is_never_changed_by_later_steps(R, codec):
    data = R.RecordBatch(_records(R, 200), compression=codec).encode()
    expected = [_fields(r) for r in R.decode_record_batches(data)[0].records]
    kept_records, kept_headers, kept_header, kept_fields = {}, {}, {}, {}
    previous = None
    for i, r in enumerate(R.read_record_batches(data)[0]):
        assert _fields(r) == expected[i]
        assert previous is None or _fields(previous) == expected[i - 1]  # the record before is still whole
        if i % 7 == 0:
            kept_records[i] = r
        elif i % 7 == 1:
            kept_headers[i] = r.headers
        elif i % 7 == 2 and r.headers:
            kept_header[i] = r.headers[-1]
        elif i % 7 == 3:
            kept_fields[i] = (r.offset, r.timestamp, r.key, r.value)
        previous = r
    for i, r in kept_records.items():
        assert _fields(r) == expected[i]
    for i, headers in kept_headers.items():
        assert tuple((h.key, h.value) for h in headers) == expected[i][4]
    for i, h in kept_header.items():
        assert (h.key, h.value) == expected[i][4][-1]
    for i, f in kept_fields.items():
        assert f == expected[i][:4]


def test_records_changed_by_the_caller_and_dropped_come_back_whole(R):
    data = R.RecordBatch(_records(R, 50)).encode()
    expected = [_fields(r) for r in R.decode_record_batches(data)[0].records]
    got = []
    for r in R.read_record_batches(data)[0]:
        got.append(_fields(r))
        r.key, r.value, r.offset = b"changed", None, -5
        if r.headers:
            r.headers[0].value = b"changed"
            r.headers = (R.Header("own", b"x"), 1) if len(got) % 2 else r.headers
    assert got == expected
    assert [_fields(r) for r in R.read_record_batches(data)[0]] == expected
    # Two loops over one batch at once, and records gathered by list(): each record its own object.
    batch = R.read_record_batches(data)[0]
    assert [(_fields(a), _fields(b)) for a, b in zip(batch, batch)] == [(e, e) for e in expected]
    records = list(batch)
    assert len({id(r) for r in records}) == len(records) and [_fields(r) for r in records] == expected


def test_a_hash_taken_of_a_key_or_value_is_never_stale(R):
    # The compiled loop may write a dropped record's key and value bytes over when it refills the record: a hash
    # the bytes cached must then be forgotten.
    recs = [R.Record(b"key-%04d" % i, b"value-%06d" % i, offset=i) for i in range(30)]
    data = R.RecordBatch(recs).encode()
    for r in R.read_record_batches(data)[0]:
        for blob in (r.key, r.value):
            assert {blob: 1}[bytes(memoryview(blob))] == 1  # a new bytes, equal: found only if the hashes agree
        assert (r.key, r.value) == (recs[r.offset].key, recs[r.offset].value)


def test_what_a_caller_keeps_from_one_loop_is_never_changed_by_the_next(R):
    # The compiled twin keeps the last record of a loop for the next loop, over any batch, to refill when nothing
    # else holds it: one-record batches (each its own loop) read one after another.
    batches = [R.RecordBatch([R.Record(b"key-%04d" % i, b"value-%06d" % i, [("trace", b"%04d" % i), ("n", b"x")],
                                       offset=i, timestamp=1_700_000_000_000 + i)], base_offset=i).encode()
               for i in range(60)]
    expected = [_fields(R.decode_record_batches(data)[0].records[0]) for data in batches]
    kept = {}
    for i, data in enumerate(batches):
        for r in R.read_record_batches(data)[0]:
            assert _fields(r) == expected[i]
        if i % 4 == 0:
            kept[i] = r  # the loop variable, kept past the next loop
        elif i % 4 == 1:
            kept[i] = (r.offset, r.timestamp, r.key, r.value)
        elif i % 4 == 2:
            kept[i] = r.headers
        del r
    for i, k in kept.items():
        if i % 4 == 0:
            assert _fields(k) == expected[i]
        elif i % 4 == 1:
            assert k == expected[i][:4]
        else:
            assert tuple((h.key, h.value) for h in k) == expected[i][4]
    # A record still held by the loop variable when the next loop starts is not refilled.
    for data in batches[:3]:
        for r in R.read_record_batches(data)[0]:
            pass
        held = r
        assert _fields(held) == _fields(R.decode_record_batches(data)[0].records[0])
    assert _fields(held) == expected[2] and _fields(r) == expected[2]


@pytest.mark.parametrize("base_offset, base_timestamp", [((1 << 30) - 50, -(1 << 30) - 40), (1 << 40, 1 << 62)])
def test_offsets_and_timestamps_kept_by_a_caller_never_change(R, base_offset, base_timestamp):
    # The compiled loop may write a dropped record's offset and timestamp ints over when it refills the record
    # (never an int anything else holds, nor one CPython keeps made).  Here they cross a digit boundary and a sign.
    recs = [R.Record(b"k", b"v", offset=base_offset + i, timestamp=base_timestamp + 3 * i * (-1) ** i)
            for i in range(100)]
    data = R.RecordBatch(recs, base_offset=base_offset).encode()
    kept = []
    for i, r in enumerate(R.read_record_batches(data)[0]):
        assert (r.offset, r.timestamp) == (recs[i].offset, recs[i].timestamp)
        if i % 3 == 0:
            kept.append((i, r.offset, r.timestamp))
    assert all((o, t) == (recs[i].offset, recs[i].timestamp) for i, o, t in kept)
    data = R.RecordBatch([R.Record(offset=i) for i in range(300)]).encode()
    small = [r.offset for r in R.read_record_batches(data)[0]]
    assert small == list(range(300)) and all(small[i] is i for i in range(257))


def test_a_record_the_caller_filled_with_its_own_objects_is_not_kept(R):
    # The compiled loop keeps its last record for the next loop only when it holds what a decode gives it, and
    # little of it: an object of the caller's stays the caller's, freed when the caller drops it.
    import sys

    data = R.RecordBatch([R.Record(b"k", b"v", [("h", b"x")])]).encode()
    for field in ("key", "value", "headers"):
        own = ["the caller's"] * 1000
        for r in R.read_record_batches(data)[0]:
            setattr(r, field, own)
        del r
        assert sys.getrefcount(own) == 2, field
    big = b"x" * 20000
    for r in R.read_record_batches(data)[0]:
        r.value = big
    del r
    assert sys.getrefcount(big) == 2


def test_a_finished_loop_holds_none_of_its_input(R):
    # The compiled twin keeps a loop's walker for the next loop: once the loop is over it holds no input, nor a
    # header value the caller filled with its own object, and a loop over more than 64 KiB left early holds none.
    import sys

    for n in (1, 3):
        data = bytes(bytearray(R.RecordBatch(_records(R, n)).encode()))  # an object of its own
        base = sys.getrefcount(data)
        for b in R.read_record_batches(data):
            for r in b:
                pass
        del b, r
        assert sys.getrefcount(data) == base, n
    data = R.RecordBatch([R.Record(b"k", b"v", [("h", b"x")])]).encode()
    own = ["the caller's"] * 1000
    for r in R.read_record_batches(data)[0]:
        r.headers[0].value = own
    del r
    assert sys.getrefcount(own) == 2
    big = bytes(bytearray(R.RecordBatch([R.Record(b"k", b"v" * 1000, offset=i) for i in range(100)]).encode()))
    base = sys.getrefcount(big)
    for r in R.read_record_batches(big)[0]:
        break
    del r
    assert sys.getrefcount(big) == base


def test_loops_running_at_once_are_independent(R):
    data = R.RecordBatch(_records(R, 10)).encode()
    expected = [_fields(r) for r in R.decode_record_batches(data)[0].records]
    batch = R.read_record_batches(data)[0]
    outer = []
    for r in batch:
        outer.append(_fields(r))
        assert [_fields(x) for x in batch] == expected
    assert outer == expected
    other_data = R.RecordBatch(_records(R, 4)[::-1], base_offset=100).encode()
    other = [_fields(r) for r in R.decode_record_batches(other_data)[0].records]
    started = iter(batch)
    first = _fields(next(started))
    for _ in range(3):
        assert [_fields(r) for r in R.read_record_batches(other_data)[0]] == other
    assert [first] + [_fields(r) for r in started] == expected


def test_one_record_batches_with_other_header_keys_one_after_another(R):
    # The compiled twin carries a batch's header keys over to the next batch and shares them when their bytes are
    # the same: keys that change, go missing, come back, or have no UTF-8 (a lone surrogate) are never mixed up.
    names = (["a", "b"], ["a", "c"], ["b"], [], ["a", "b", "c"], ["\udcff", "a"], ["a"], ["a", "\udcff"], ["a", "b"])
    for keys in names + names[::-1]:
        data = R.RecordBatch([R.Record(b"k", b"v", [(k, b"x") for k in keys])]).encode()
        expected = [_fields(r) for r in R.decode_record_batches(data)[0].records]
        assert [_fields(r) for r in R.read_record_batches(data)[0]] == expected
        assert [h.key for r in R.read_record_batches(data)[0] for h in r.headers] == keys


def test_a_buffer_checked_for_bad_records_can_be_resized_after(R):
    # read_batch_infos(check_records=True) walks the caller's buffer in place: no walker outlives the call holding
    # it, after a bad record as after good ones (a bytearray with an export cannot be resized).
    data = bytearray(R.RecordBatch([R.Record(b"k", b"v"), R.Record(b"k2", b"v2", offset=1)]).encode())
    R.read_batch_infos(data, check_records=True)
    data.extend(b"")
    data[61] = 0x7E  # the first record's length: beyond its batch
    data[17:21] = struct.pack(">I", R.crc32c(bytes(data[21:])))
    with pytest.raises(CorruptRecordError):
        R.read_batch_infos(data, check_records=True)
    data.extend(b"x")  # raises BufferError while anything still holds the buffer exported
    del data[-1]


def test_a_loop_over_large_records_keeps_none_of_them(R):
    # The compiled twin's kept walker keeps its last records for the next loop only when they are small: a record
    # of more than 16 KiB of fields, dropped by the caller before the loop ends, is freed with the loop.
    import sys

    data = R.RecordBatch([R.Record(b"k", b"v" * 20000, offset=0), R.Record(b"k", b"v", offset=1)]).encode()
    values = []
    for r in R.read_record_batches(data)[0]:
        values.append(r.value)
    del r
    large = values.pop(0)
    assert len(large) == 20000 and values == [b"v"]
    assert sys.getrefcount(large) == 2  # ``large`` and the call's argument
