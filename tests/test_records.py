"""Record batches (magic 2): both twins, round trips, real clients' bytes both ways, the batch-level reader.

Bad input has its own file, tests/test_records_bad_input.py.
"""

import pickle
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kwire import _impl
from kwire.errors import ArgumentTypeError, ArgumentValueError, EncodeError, FieldDeletionError

from tests._twins import IMPLS as IMPLEMENTATIONS

RECORDS = {impl: _impl.load("records", impl, package="kwire.codec") for impl in IMPLEMENTATIONS}
CODECS = ("none", "gzip", "snappy", "lz4", "zstd")


@pytest.fixture(params=IMPLEMENTATIONS)
def R(request):
    return RECORDS[request.param]


def _records(R, n, base=0, ts=1_700_000_000_000):
    return [R.Record(None if i % 5 == 1 else b"key-%d" % i, None if i % 7 == 3 else bytes([i % 256]) * (i % 300),
                     [("trace", b"t%d" % i), ("empty", None)] if i % 2 else (), offset=base + i, timestamp=ts + i)
            for i in range(n)]


def _fields(r):
    return (r.offset, r.timestamp, r.key, r.value, [tuple(h) for h in r.headers])


# --- CRC-32C ----------------------------------------------------------------------------------------------------

# RFC 3720 (iSCSI) appendix B.4 and the classic check value.
CRC_VECTORS = [
    (b"", 0),
    (b"123456789", 0xE3069283),
    (bytes(32), 0x8A9136AA),
    (b"\xff" * 32, 0x62A8AB43),
    (bytes(range(32)), 0x46DD794E),
    (bytes(range(31, -1, -1)), 0x113FDB5C),
]


@pytest.mark.parametrize("data,expected", CRC_VECTORS)
def test_crc32c_known_vectors(R, data, expected):
    assert R.crc32c(data) == expected
    assert R.crc32c(bytearray(data)) == expected
    assert R.crc32c(memoryview(data)) == expected


def test_crc32c_continues_and_every_path_agrees(R):
    import random

    rnd = random.Random(3)
    blob = rnd.randbytes(200_000)
    whole = R.crc32c(blob)
    for cut in (0, 1, 7, 8, 4095, 12289, 100_000):
        assert R.crc32c(blob[cut:], R.crc32c(blob[:cut])) == whole
    # Unaligned starts and every length around the 3-lane block of the hardware path (3 x 4096 bytes).
    view = memoryview(blob)
    for start in range(0, 9):
        for n in (0, 1, 15, 12287, 12288, 12289, 24576 + 13, 65537):
            assert R.crc32c(view[start:start + n]) == RECORDS[IMPLEMENTATIONS[-1]].crc32c(blob[start:start + n])


@pytest.mark.skipif("cython" not in IMPLEMENTATIONS, reason="the compiled twin is not built")
def test_compiled_crc32c_tables_equal_the_hardware_path():
    import random

    C = RECORDS["cython"]
    rnd = random.Random(5)
    blobs = [rnd.randbytes(n) for n in (1, 9, 100, 4096 * 3 + 5, 1 << 17)]
    hardware = [C.crc32c(b[s:]) for b in blobs for s in range(3)]
    C._crc32c_use_tables(True)
    try:
        assert C.crc32c_backend() == "table"
        assert [C.crc32c(b[s:]) for b in blobs for s in range(3)] == hardware
        assert C.crc32c(b"123456789") == 0xE3069283
    finally:
        C._crc32c_use_tables(False)
    assert C.crc32c_backend() in ("hardware", "table")


# --- Round trips ----------------------------------------------------------------------------------------------

_blob = st.none() | st.binary(max_size=40)
_header = st.tuples(st.text(max_size=6), _blob)
_record = st.tuples(_blob, _blob, st.lists(_header, max_size=3), st.integers(-(2**31), 2**31 - 1),
                    st.integers(-(2**63), 2**63 - 1), st.integers(-128, 127))


@settings(max_examples=60, deadline=None)
@given(records=st.lists(_record, max_size=8), codec=st.sampled_from(CODECS),
       base_offset=st.integers(0, 2**62), epoch=st.integers(-1, 2**31 - 1), ts_type=st.integers(0, 1),
       transactional=st.booleans(), producer=st.tuples(st.integers(-1, 2**63 - 1), st.integers(-1, 2**15 - 1),
                                                        st.integers(-1, 2**31 - 1)))
def test_round_trip_in_both_twins_and_the_same_bytes(records, codec, base_offset, epoch, ts_type, transactional,
                                                     producer):
    encodings = []
    for impl, R in RECORDS.items():
        recs = [R.Record(k, v, h, offset=base_offset + d, timestamp=ts, attributes=a)
                for k, v, h, d, ts, a in records]
        batch = R.RecordBatch(recs, base_offset=base_offset, partition_leader_epoch=epoch, compression=codec,
                              timestamp_type=ts_type, is_transactional=transactional, producer_id=producer[0],
                              producer_epoch=producer[1], base_sequence=producer[2])
        data = batch.encode()
        back = R.RecordBatch.decode(data)
        assert back == batch
        assert back.crc == R.crc32c(data[21:])
        assert [_fields(r) for r in back.records] == [_fields(r) for r in batch.records]
        assert back.encode() == data
        info, = R.read_batch_infos(data, check_records=True)
        assert (info.size, info.record_count, info.compression) == (len(data), len(records), CODECS.index(codec))
        encodings.append(data)
    assert len(set(encodings)) == 1  # compiled and pure write the same bytes


def test_flags_are_decoded_and_kept(R):
    batch = R.RecordBatch(_records(R, 2, base=7), base_offset=7, compression="lz4", timestamp_type=1,
                          is_transactional=True, delete_horizon_ms=123, producer_id=9, producer_epoch=2,
                          base_sequence=40)
    back = R.RecordBatch.decode(batch.encode())
    assert (back.compression, back.timestamp_type, back.is_transactional, back.is_control) == (3, 1, True, False)
    assert back.delete_horizon_ms == 123 == back.base_timestamp
    assert back.attributes == 3 | 0x08 | 0x10 | 0x40
    info, = R.read_batch_infos(batch.encode())
    assert (info.compression, info.timestamp_type, info.is_transactional, info.is_control) == (3, 1, True, False)
    assert (info.producer_id, info.producer_epoch, info.base_sequence, info.last_offset_delta) == (9, 2, 40, 1)
    control = R.RecordBatch([R.Record(b"\x00\x00\x00\x01", b"\x00\x00\x00\x00\x00\x05", offset=3)], base_offset=3,
                            is_control=True, is_transactional=True)
    back = R.RecordBatch.decode(control.encode())
    assert back.is_control and back.records[0].key == b"\x00\x00\x00\x01"
    assert R.RecordBatch([]).delete_horizon_ms is None


def test_objects_equality_repr_pickle_and_no_deletion(R):
    batch = R.RecordBatch(_records(R, 3), compression="gzip")
    back = R.RecordBatch.decode(batch.encode())
    assert back == batch and not back != batch
    assert "RecordBatch(base_offset=0" in repr(back) and "Header(key='trace', value=b't1')" in repr(back)
    assert pickle.loads(pickle.dumps(back)) == back
    assert R.Header("a", b"b") == R.Header("a", b"b") != R.Header("a", None)
    assert tuple(R.Header("a", b"b")) == ("a", b"b")
    with pytest.raises(FieldDeletionError):
        del back.records[0].key
    with pytest.raises(TypeError):
        hash(back)


def test_a_decoded_record_can_be_changed_and_re_encoded(R):
    data = R.RecordBatch(_records(R, 4)).encode()
    batch = R.RecordBatch.decode(data)
    batch.records[1].value = b"changed"
    batch.records[2].headers = (R.Header("x", b"y"),)
    batch.records[3].offset = 3
    again = R.RecordBatch.decode(batch.encode())
    assert again.records[1].value == b"changed" and again.records[1].key == batch.records[1].key
    assert [tuple(h) for h in again.records[2].headers] == [("x", b"y")]
    assert again.records[0] == batch.records[0]


def test_record_and_header_fields_are_slots_in_both_twins(R):
    # The compiled classes expose their fields as member descriptors, as the pure twin's __slots__ do: the
    # interpreter reads them without a call.  Every field is set, deletion of each is refused in both classes.
    import types

    for cls, fields in ((R.Record, ("offset", "timestamp", "key", "value", "headers", "attributes")),
                        (R.Header, ("key", "value"))):
        assert all(type(cls.__dict__[f]) is types.MemberDescriptorType for f in fields), cls
    record = R.RecordBatch.decode(R.RecordBatch(_records(R, 2)).encode()).records[1]
    for f in ("offset", "timestamp", "key", "value", "headers", "attributes"):
        with pytest.raises(FieldDeletionError):
            delattr(record, f)
        setattr(record, f, getattr(record, f))
    header = record.headers[0]
    header.value = b"v"
    with pytest.raises(FieldDeletionError):
        del header.key
    assert (header.key, header.value) == ("trace", b"v") and record.headers[0] is header


def test_many_batches_and_a_partial_tail(R):
    a = R.RecordBatch(_records(R, 3), base_offset=0).encode()
    b = R.RecordBatch(_records(R, 2, base=3), base_offset=3, compression="zstd").encode()
    blob = a + b
    infos = R.read_batch_infos(blob)
    assert [(i.position, i.size, i.base_offset, i.record_count) for i in infos] == [(0, len(a), 0, 3),
                                                                                   (len(a), len(b), 3, 2)]
    assert (infos.end, infos.partial_tail) == (len(blob), 0)
    for cut in (1, 11, 12, 30, len(b) - 1):
        got = R.read_batch_infos(blob + b[:cut], allow_partial_tail=True)
        assert len(got) == 2 and (got.end, got.partial_tail) == (len(blob), cut)
        decoded = R.decode_record_batches(blob + b[:cut], allow_partial_tail=True)
        assert [len(x.records) for x in decoded] == [3, 2] and decoded.partial_tail == cut
    assert R.read_batch_infos(b"") == [] and R.decode_record_batches(b"").end == 0


def test_batch_list_is_a_list_with_its_two_fields_in_both_twins(R):
    # Each twin has its own class (the compiled one is a compiled list subclass): the same constructor, fields,
    # list behaviour and pickling.
    assert R.BatchList() == [] and (R.BatchList().end, R.BatchList().partial_tail) == (0, 0)
    made = R.BatchList([1, 2], 7, 3)
    assert isinstance(made, list) and made == [1, 2] and (made.end, made.partial_tail) == (7, 3)
    made.append(9)
    made.end, made.partial_tail = 40, "anything"  # plain fields: what a caller stores is kept
    back = pickle.loads(pickle.dumps(made))
    assert type(back) is R.BatchList and back == [1, 2, 9] and (back.end, back.partial_tail) == (40, "anything")
    with pytest.raises(AttributeError):
        made.other = 1
    blob = R.RecordBatch(_records(R, 2)).encode()
    for read in (R.read_batch_infos, R.decode_record_batches, R.read_record_batches):
        got = read(blob + blob[:20], allow_partial_tail=True)
        assert type(got) is R.BatchList and (got.end, got.partial_tail, len(got)) == (len(blob), 20, 1)
        again = pickle.loads(pickle.dumps(got))
        assert type(again) is R.BatchList and (again.end, again.partial_tail) == (len(blob), 20)


def test_batch_lists_made_after_others_were_freed_are_whole(R):
    # The compiled twin keeps a freed BatchList's memory for the next: every list made after one was freed is
    # empty, tracked by the collector, and fills like any other; a subclass's lists are its own.
    import gc
    import weakref

    class Mine(R.BatchList):
        pass

    blob = R.RecordBatch(_records(R, 2)).encode()
    for round_ in range(3):
        lists = [R.BatchList([round_] * i, i, 0) for i in range(5)] + [Mine([1], 1, 0) for _ in range(3)]
        del lists
        for _ in range(3):
            got = R.read_batch_infos(blob * 2)
            assert gc.is_tracked(got) and type(got) is R.BatchList and len(got) == 2 and got.end == 2 * len(blob)
            cycle = R.read_batch_infos(b"")
            assert cycle == [] and cycle.end == 0 and cycle.partial_tail == 0
            canary = Mine()
            seen = weakref.ref(canary)
            cycle.extend([cycle, canary])  # a cycle through a kept list is collected as any other
            del cycle, got, canary
            gc.collect()
            assert seen() is None
        mine = Mine([2], 3, 4)
        assert type(mine) is Mine and mine == [2] and (mine.end, mine.partial_tail) == (3, 4)

    class ReadsWhenFreed:
        # Dropped with a list's items: it makes and frees other lists while that list is being freed.
        def __del__(self):
            inner = R.read_batch_infos(blob * 3)
            assert len(inner) == 3 and inner.end == 3 * len(blob)
            del inner
            assert len(R.read_batch_infos(blob * 9)) == 9

    for n in (1, 4, 5, 8, 9, 40):
        outer = R.read_batch_infos(blob * n)
        outer.extend([ReadsWhenFreed(), R.read_batch_infos(blob * 2), ReadsWhenFreed()])
        del outer
        again = R.read_batch_infos(blob * n)
        assert len(again) == n and all(i.size == len(blob) for i in again)
    nested = R.BatchList()
    for _ in range(100_000):  # freed inside the trashcan that bounds the recursion of nested lists' deallocs
        nested = R.BatchList([nested])
    del nested


def test_set_base_offset_rewrites_in_place_and_keeps_the_crc(R):
    one = R.RecordBatch(_records(R, 2), compression="snappy").encode()
    buf = bytearray(one * 2)
    R.set_base_offset(buf, len(one), 1000)
    R.set_base_offset(memoryview(buf), 0, 2**63 - 1)
    infos = R.read_batch_infos(buf, check_records=True)
    assert [i.base_offset for i in infos] == [2**63 - 1, 1000]
    assert [r.offset for r in R.decode_record_batches(buf)[1].records] == [1000, 1001]
    with pytest.raises(ArgumentTypeError):
        R.set_base_offset(one, 0, 1)  # bytes are read-only
    with pytest.raises(ArgumentValueError):
        R.set_base_offset(buf, len(buf) - 7, 1)
    with pytest.raises(ArgumentValueError):
        R.set_base_offset(buf, 0, 2**63)
    with pytest.raises(ArgumentTypeError):
        R.set_base_offset(buf, "0", 1)


def test_bad_values_give_encode_errors_in_both_twins():
    outcomes = []
    for R in RECORDS.values():
        cases = {
            "key": R.RecordBatch([R.Record("text", b"v")]),
            "header": R.RecordBatch([R.Record(b"k", b"v", offset=0)]),
            "epoch": R.RecordBatch([], partition_leader_epoch=2**31),
            "delta": R.RecordBatch([R.Record(b"k", b"v", offset=2**31)], last_offset_delta=0),
            "magic": R.RecordBatch([], magic=1),
        }
        cases["header"].records[0].headers = [(b"not-str", b"v")]
        got = []
        for name, batch in cases.items():
            with pytest.raises(EncodeError) as info:
                batch.encode()
            got.append((name, info.value.reason, info.value.path))
        outcomes.append(got)
    assert outcomes[0][0][2] == "records[0].key" and outcomes[0][1][2] == "records[0].headers[0].key"
    assert outcomes[0][3][2] == "records[0].offset"
    assert all(o == outcomes[0] for o in outcomes)


def test_encodes_one_after_another_and_at_once_give_their_own_bytes():
    # The compiled encoder keeps its buffer for the next encode: after a large batch, a small one, an encode
    # that fails halfway and encodes in several threads at once, every result is what the pure twin writes.
    import threading

    P = RECORDS["python"]
    sizes = (3000, 2, 0, 700, 1, 3000)
    for R in RECORDS.values():
        for codec in CODECS:
            for n in sizes:
                batch = R.RecordBatch(_records(R, n, base=n), base_offset=n, compression=codec)
                assert batch.encode() == P.RecordBatch(_records(P, n, base=n), base_offset=n,
                                                       compression=codec).encode()
            bad = R.RecordBatch(_records(R, 2000) + [R.Record("text", b"v", offset=2000)], compression=codec)
            with pytest.raises(EncodeError):
                bad.encode()
        expected = {n: P.RecordBatch(_records(P, n), compression="zstd").encode() for n in (5, 900, 2500)}
        batches = {n: R.RecordBatch(_records(R, n), compression="zstd") for n in expected}
        wrong = []

        def encode_many(n):
            for _ in range(20):
                if batches[n].encode() != expected[n]:
                    wrong.append(n)

        threads = [threading.Thread(target=encode_many, args=(n,)) for n in expected for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not wrong


def test_header_keys_of_one_batch_after_another():
    # The compiled reader keeps the header keys of the batch before and shares them when the bytes are the same:
    # keys that change, disappear, grow in number or have no UTF-8 (a lone surrogate) are read right all the same.
    seq = [[("a", b"1"), ("b", b"2")], [("a", b"1"), ("c", b"2")], [("b\udcff", b"x")], [],
           [("a", None), ("b", b"")], [("a", b"1"), ("b", b"2"), ("d", b"3")], [("a", b"9")], [("ab", b"1")]]
    for R in RECORDS.values():
        data = b"".join(R.RecordBatch([R.Record(b"k", b"v", h)]).encode() for h in seq) * 2
        for batches in (R.decode_record_batches(data), R.read_record_batches(data)):
            got = [[(h.key, h.value) for r in batch for h in r.headers] for batch in batches]
            assert got == [[(k, v) for k, v in h] for h in seq] * 2


def test_export_from_kwire_codec():
    import kwire.codec as c

    assert c.RecordBatch is RECORDS[_impl.IMPLEMENTATION].RecordBatch
    for name in ("Record", "Header", "BatchInfo", "BatchList", "read_batch_infos", "set_base_offset",
                 "decode_record_batches", "encode_record_batches", "crc32c"):
        assert getattr(c, name) is getattr(RECORDS[_impl.IMPLEMENTATION], name)
    assert c.BatchInfo._fields[:3] == ("position", "size", "base_offset")


# --- Real clients' record code, both directions ---------------------------------------------------------------

def _aiokafka_batch(codec, n=5):
    from aiokafka.record.default_records import DefaultRecordBatchBuilder

    b = DefaultRecordBatchBuilder(magic=2, compression_type=codec, is_transactional=0, producer_id=-1,
                                  producer_epoch=-1, base_sequence=-1, batch_size=1 << 20)
    for i in range(n):
        b.append(i, timestamp=1_700_000_000_000 + i, key=None if i == 1 else b"k%d" % i,
                 value=None if i == 2 else b"value-%d" % i * 20, headers=[("h1", b"x"), ("h2", None)])
    return bytes(b.build())


@pytest.mark.interop
@pytest.mark.parametrize("codec", range(5))
def test_aiokafka_bytes_decode_and_kwire_bytes_read_back(R, codec):
    pytest.importorskip("aiokafka")
    from aiokafka.record.default_records import DefaultRecordBatch

    data = _aiokafka_batch(codec)
    ours = R.RecordBatch.decode(data)
    theirs = list(DefaultRecordBatch(data))
    assert [_fields(r) for r in ours.records] == [(r.offset, r.timestamp, r.key, r.value, r.headers) for r in theirs]
    assert ours.compression == codec
    if codec == 0:
        assert ours.encode() == data  # byte for byte, uncompressed
    back = DefaultRecordBatch(ours.encode())
    assert back.validate_crc() and back.compression_type == codec
    assert [(r.offset, r.timestamp, r.key, r.value, r.headers) for r in back] == [_fields(r) for r in ours.records]


def _kafka_python_codecs():
    kafka = pytest.importorskip("kafka")
    from kafka import codec as kc

    del kafka
    return [c for c, ok in ((0, True), (1, kc.has_gzip()), (2, kc.has_snappy()), (3, kc.has_lz4()),
                            (4, kc.has_zstd())) if ok]


@pytest.mark.interop
def test_kafka_python_bytes_decode_and_kwire_bytes_read_back(R):
    codecs = _kafka_python_codecs()
    from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder

    for codec in codecs:
        b = DefaultRecordBatchBuilder(magic=2, compression_type=codec, is_transactional=0, producer_id=-1,
                                      producer_epoch=-1, base_sequence=-1, batch_size=1 << 20)
        for i in range(4):
            b.append(i, timestamp=1000 + i, key=b"k" if i else None, value=b"v" * i, headers=[("h", b"1")])
        data = bytes(b.build())
        ours = R.RecordBatch.decode(data)
        assert [_fields(r) for r in ours.records] == [(r.offset, r.timestamp, r.key, r.value, r.headers)
                                                       for r in DefaultRecordBatch(data)]
        back = DefaultRecordBatch(ours.encode())
        assert back.validate_crc()
        assert [(r.offset, r.key, r.value, r.headers) for r in back] == [_fields(r)[:1] + _fields(r)[2:]
                                                                        for r in ours.records]


def test_raw_snappy_as_librdkafka_writes_it_and_xerial_as_java_writes_it(R):
    cramjam = pytest.importorskip("cramjam")
    plain = R.RecordBatch(_records(R, 6)).encode()
    raw = bytes(cramjam.snappy.compress_raw(plain[61:]))
    head = bytearray(plain[:61])
    struct.pack_into(">ih", head, 8, 49 + len(raw), 0)
    struct.pack_into(">h", head, 21, 2)
    struct.pack_into(">I", head, 17, R.crc32c(bytes(head[21:]) + raw))
    librdkafka_style = bytes(head) + raw
    assert [_fields(r) for r in R.RecordBatch.decode(librdkafka_style).records] == \
        [_fields(r) for r in R.RecordBatch.decode(plain).records]
    java_style = R.RecordBatch(_records(R, 6), compression="snappy").encode()
    assert java_style[61:69] == b"\x82SNAPPY\x00"  # snappy-java's stream header
    # Several 32 KiB xerial blocks.
    big = R.RecordBatch([R.Record(b"k", bytes(range(256)) * 400, offset=i) for i in range(3)], compression="snappy")
    assert R.RecordBatch.decode(big.encode()) == big
