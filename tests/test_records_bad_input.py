"""Bad record batches: every case gets its typed error naming the offset, the same in both twins, and
decompression is bounded while it runs."""

import random
import struct
import tracemalloc
import zlib

import pytest

from kwire import _impl
from kwire.errors import (
    CorruptRecordError,
    DecodeError,
    DecompressionLimitError,
    LimitExceededError,
    RecordCrcError,
    UnsupportedRecordFormatError,
)

from tests._twins import IMPLS as IMPLEMENTATIONS
from tests._zstd_libraries import zstd_library  # noqa: F401 (a fixture)

RECORDS = [_impl.load("records", impl, package="kwire.codec") for impl in IMPLEMENTATIONS]
P = _impl.load("records", "python", package="kwire.codec")


def _varint(v):
    """Kafka's signed varint (ByteUtils.writeVarlong): zigzag, then 7 bits a byte, low bits first, the top bit
    set on every byte but the last."""
    u = (v << 1) ^ (v >> 63)
    groups = [(u >> shift) & 0x7F for shift in range(0, max(u.bit_length(), 1), 7)]
    return bytes([g | 0x80 for g in groups[:-1]] + groups[-1:])


def _record(body):
    return _varint(len(body)) + body


def _plain_record(key=b"k", value=b"v"):
    return _record(b"\x00" + _varint(0) + _varint(0) + _varint(len(key)) + key + _varint(len(value)) + value
                   + _varint(0))


def _batch(records, count, attributes=0, magic=2, crc=None, base_offset=0):
    head = struct.pack(">qiibIhiqqqhii", base_offset, 49 + len(records), -1, magic, 0, attributes, count - 1,
                       0, 0, -1, -1, -1, count)
    body = head[21:] + records
    return head[:17] + struct.pack(">I", P.crc32c(body) if crc is None else crc) + body


def _same_error(data, expect_cls, offset, fn="decode", **kw):
    """Decode ``data`` in every twin (and read its infos), and read it with read_record_batches, looping over each
    batch and reading its ``records``; the error, identical everywhere, down to whether its context (a
    decompression library's own error) is shown."""
    seen = []
    for R in RECORDS:
        calls = [lambda: R.decode_record_batches(data, **kw),
                 lambda: [list(b) for b in R.read_record_batches(data, **kw)],
                 lambda: [b.records for b in R.read_record_batches(data, **kw)]]
        if fn == "decode":
            calls.append(lambda: R.read_batch_infos(data, check_records=True, **kw))
        for call in calls:
            with pytest.raises(DecodeError) as info:
                call()
            e = info.value
            seen.append((type(e), e.reason, e.offset, e.path, e.__suppress_context__))
    assert all(s == seen[0] for s in seen), seen
    assert seen[0][0] is expect_cls, seen[0]
    assert seen[0][2] == offset, seen[0]
    return seen[0][:4]


GOOD = _batch(_plain_record() + _plain_record(b"k2", b"v2"), 2)


def test_good_batch_is_good():
    for R in RECORDS:
        assert len(R.decode_record_batches(GOOD)[0].records) == 2


@pytest.mark.parametrize("cut", [1, 11, 12, 20, 60, len(GOOD) - 1])
def test_truncated_batch(cut):
    _, reason, _, _ = _same_error(GOOD[:cut], CorruptRecordError, 0 if cut < 12 else 8)
    assert "cut short" in reason


def test_crc_mismatch_names_the_crc_field():
    bad = bytearray(GOOD)
    bad[-2] ^= 1  # a byte of the last value
    _, reason, offset, path = _same_error(bytes(bad), RecordCrcError, 17)
    assert "CRC-32C mismatch" in reason and path == "[0]"
    # The second batch: the offset is in the whole blob.
    _same_error(GOOD + bytes(bad), RecordCrcError, len(GOOD) + 17)
    for R in RECORDS:  # and the check can be turned off
        assert len(R.decode_record_batches(bytes(bad), check_crc=False)[0].records) == 2


def test_varint_over_five_and_ten_bytes():
    # A record length of 6 bytes of varint.
    bad = _batch(b"\x80\x80\x80\x80\x80\x01" + b"\x00" * 10, 1)
    _, reason, offset, path = _same_error(bad, CorruptRecordError, 61)
    assert reason == "varint longer than 5 bytes" and path == "[0].records[0]"
    # A timestamp delta (varlong) of 11 bytes.
    body = b"\x00" + b"\x80" * 10 + b"\x01" + b"\x00" * 5
    bad = _batch(_record(body), 1)
    _, reason, offset, _ = _same_error(bad, CorruptRecordError, 63)
    assert reason == "varint longer than 10 bytes"


def test_lengths_beyond_their_batch_or_record():
    bad = _batch(_varint(100) + b"\x00" * 10, 1)
    _, reason, _, _ = _same_error(bad, CorruptRecordError, 61)
    assert "record length 100 is beyond its batch" in reason
    body = b"\x00" + _varint(0) + _varint(0) + _varint(50) + b"kk"
    _, reason, offset, _ = _same_error(_batch(_record(body) + b"\x00" * 5, 1), CorruptRecordError, 65)
    assert "key length 50 is beyond its record" in reason
    # A record whose fields end before its length does.
    body = b"\x00" + _varint(0) + _varint(0) + _varint(-1) + _varint(-1) + _varint(0) + b"\x00\x00"
    _, reason, _, _ = _same_error(_batch(_record(body), 1), CorruptRecordError, 61)
    assert "disagrees with its fields" in reason
    # A batch length below its own header.
    bad = bytearray(GOOD)
    struct.pack_into(">i", bad, 8, 30)
    _same_error(bytes(bad[:42]), CorruptRecordError, 8)


# A record of one header whose fields are all empty or null, up to its header count: the field at fault follows.
_HEADED = b"\x00" + _varint(0) + _varint(0) + _varint(-1) + _varint(-1) + _varint(1)


@pytest.mark.parametrize("body, reason, offset", [
    # The batch's records start at 61, the record's fields after its one-byte length, at 62.
    (b"", "record attributes are cut short by the end of its record", 62),
    (b"\x00" + _varint(0) + b"\x80\x80", "varint is cut short by the end of its record", 64),
    (b"\x00" + _varint(0) + b"\x80" * 5 + b"\x01", "varint longer than 5 bytes", 64),
    (b"\x00" + _varint(0) + _varint(0) + _varint(-1) + _varint(9) + b"v", "value length 9 is beyond its record", 66),
    (b"\x00" + _varint(0) + _varint(0) + _varint(-1) + _varint(-1) + _varint(-3), "negative header count -3", 67),
    (_HEADED + _varint(-2) + b"k" + _varint(-1), "negative header key length -2", 68),
    (_HEADED + _varint(40) + b"k" + _varint(-1), "header key length 40 is beyond its record", 68),
    (_HEADED + _varint(1) + b"k" + _varint(30) + b"v", "header value length 30 is beyond its record", 70),
])
def test_each_fault_of_a_record_names_its_field_and_offset(body, reason, offset):
    # The compiled twin's walk reports a fault code that another function turns into the error: each code its
    # message and offset, as the pure twin gives them. Bytes after the record keep the batch's record count
    # within what they could hold.
    got = _same_error(_batch(_record(body) + b"\x00" * 8, 1), CorruptRecordError, offset)
    assert got[1:] == (reason, offset, "[0].records[0]")


def test_record_count_that_disagrees_with_the_records():
    rec = _plain_record(b"k", b"v" * 20)
    _, reason, offset, path = _same_error(_batch(rec * 2, 3), CorruptRecordError, 61 + 2 * len(rec))
    assert reason == "record count 3 but only 2 records are present" and path == "[0]"
    _, reason, _, _ = _same_error(_batch(_plain_record() * 2, 1), CorruptRecordError, 61 + len(_plain_record()))
    assert "bytes after the 1 records" in reason
    _, reason, _, _ = _same_error(_batch(b"", 5), CorruptRecordError, 57)
    assert "cannot fit" in reason
    _same_error(_batch(b"", -1), CorruptRecordError, 57)


@pytest.mark.parametrize("magic", [0, 1, 3, -1])
def test_unknown_and_legacy_magic(magic):
    _, reason, offset, _ = _same_error(_batch(_plain_record(), 1, magic=magic), UnsupportedRecordFormatError, 16)
    assert ("legacy message format" in reason) == (magic in (0, 1))
    for R in RECORDS:
        with pytest.raises(UnsupportedRecordFormatError) as info:
            R.read_batch_infos(_batch(_plain_record(), 1, magic=magic))
        assert info.value.magic == magic


def test_unknown_codec():
    for codec in (5, 6, 7):
        _, reason, _, _ = _same_error(_batch(_plain_record(), 1, attributes=codec), UnsupportedRecordFormatError, 21)
        assert f"unknown compression codec {codec}" in reason
        with pytest.raises(UnsupportedRecordFormatError) as info:
            RECORDS[0].decode_record_batches(_batch(_plain_record(), 1, attributes=codec))
        assert info.value.magic is None


@pytest.mark.parametrize("codec", [1, 2, 3, 4])
@pytest.mark.usefixtures("zstd_library")
def test_garbage_compressed_records(codec):
    _, reason, offset, _ = _same_error(_batch(b"\x00not compressed at all" * 3, 1, attributes=codec),
                                       CorruptRecordError, 61)


def test_errors_inside_compressed_records_name_the_payload():
    body = b"\x00" + b"\x80" * 10 + b"\x01" + b"\x00" * 5
    plain = _record(body)
    bad = _batch(_gzip(plain), 1, attributes=1)
    _, reason, offset, _ = _same_error(bad, CorruptRecordError, 61)
    assert reason == "varint longer than 10 bytes (byte 2 of the decompressed records)"


def test_snappy_streams_read_alike_and_their_faults_are_the_same_errors():
    # snappy-java's stream as Java's producer writes it, with more blocks than the compiled twin keeps on its stack
    # (32 KiB of records each), and the faults of its framing: the same records, or the same error, in every twin.
    records = [P.Record(b"k%d" % i, bytes((i * 7 + j) & 0xFF for j in range(100_000)), offset=i) for i in range(6)]
    good = P.RecordBatch(records, compression="snappy").encode()
    payload = good[61:]
    assert payload[:8] == b"\x82SNAPPY\x00" and len(records[0].value) * 6 > 17 * 32 * 1024
    for R in RECORDS:
        assert [(r.offset, r.key, r.value) for r in R.decode_record_batches(good)[0].records] == [
            (r.offset, r.key, r.value) for r in records]
    first = struct.unpack(">I", payload[16:20])[0]
    block = payload[20:20 + first]
    cases = {
        "a cut length": payload[:16] + b"\x00\x00",
        "a block beyond the payload": payload[:16] + struct.pack(">I", first + 1) + block,
        "a size that lies": payload[:16] + struct.pack(">I", first + 1) + b"\xff" + block,
        "an empty block": payload[:16] + struct.pack(">I", 0),
        "a raw block that lies": b"\xff\xff\x03" + block[3:],
    }
    for name, bad in cases.items():
        _same_error(_batch(bad, 6, attributes=2), CorruptRecordError, 61)
    _same_error(good, DecompressionLimitError, 61, max_decompressed_size=len(P.RecordBatch(records).encode()) - 62)


def _gzip(data):
    c = zlib.compressobj(6, zlib.DEFLATED, 31)
    return c.compress(data) + c.flush()


@pytest.mark.parametrize("codec", ["gzip", "snappy", "lz4", "zstd", "zstd without a size"])
@pytest.mark.usefixtures("zstd_library")
def test_decompression_bomb_is_stopped_while_decompressing(codec):
    # 16 MiB of zeros in one value; a limit of 1 MiB must stop it without holding 16 MiB.
    big = P.RecordBatch([P.Record(None, bytes(16 << 20))], compression=codec.split()[0]).encode()
    if codec == "zstd without a size":  # framed as a streaming writer (Java's producer) frames it
        zstandard = pytest.importorskip("zstandard")
        plain = P.RecordBatch([P.Record(None, bytes(16 << 20))]).encode()[61:]
        big = _batch(zstandard.ZstdCompressor(write_content_size=False).compress(plain), 1, attributes=4)
    assert len(big) < 1 << 20
    for R in RECORDS:
        tracemalloc.start()
        try:
            with pytest.raises(DecompressionLimitError) as info:
                R.decode_record_batches(big, max_decompressed_size=1 << 20)
            _cur, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        assert isinstance(info.value, LimitExceededError) and isinstance(info.value, CorruptRecordError)
        assert info.value.offset == 61
        assert peak < 4 << 20, peak  # the limit plus the input, not the 16 MiB
        with pytest.raises(DecompressionLimitError):
            R.read_batch_infos(big, check_records=True, max_decompressed_size=1 << 20)
        # Headers alone never decompress; a limit that holds the records reads them.
        assert R.read_batch_infos(big, max_decompressed_size=1)[0].record_count == 1
        assert len(R.decode_record_batches(big, max_decompressed_size=17 << 20)[0].records[0].value) == 16 << 20


@pytest.mark.usefixtures("zstd_library")
def test_a_lying_frame_size_does_not_reserve_the_limit():
    import cramjam

    plain = P.RecordBatch([P.Record(b"k", b"v")]).encode()
    frame = bytes(cramjam.zstd.compress(plain[61:]))
    assert frame[4] == 0x20  # single segment, a 1-byte content size
    # The same frame claiming 2^40 bytes of content (an 8-byte size), as a liar would write it.
    liar = frame[:4] + b"\xe0" + (1 << 40).to_bytes(8, "little") + frame[6:]
    _fails_within_a_mebibyte(_batch(liar, 1, attributes=4))


def test_a_snappy_block_that_claims_more_than_it_can_hold_reserves_nothing():
    # A raw snappy block (librdkafka's framing) and a block of snappy-java's stream, each of a few bytes, that
    # say they hold 60 MiB: within the default limit, but more than 22 bytes a byte, which no block can hold.
    claim = 60 << 20
    size = bytes([(claim >> s & 0x7F) | (0x80 if claim >> s + 7 else 0) for s in range(0, 28, 7)])
    raw = size + b"\x00" * 20
    _fails_within_a_mebibyte(_batch(raw, 1, attributes=2))
    stream = b"\x82SNAPPY\x00" + b"\x00\x00\x00\x01" * 2 + struct.pack(">I", len(raw)) + raw
    _fails_within_a_mebibyte(_batch(stream, 1, attributes=2))


def _fails_within_a_mebibyte(batch):
    """``batch`` is a CorruptRecordError in every twin, and decoding it allocates less than 1 MiB at its peak."""
    for R in RECORDS:
        tracemalloc.start()
        try:
            with pytest.raises(CorruptRecordError):
                R.decode_record_batches(batch)
            _cur, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        assert peak < 1 << 20


def _lz4_frames(plain):
    """LZ4 frames of ``plain`` as the lz4 package writes them with each option the format has: with and without
    the content size, block and content checksums, block sizes, a frame of stored (uncompressed) blocks."""
    lz4_frame = pytest.importorskip("lz4.frame")
    noise = bytes((i * 2654435761 >> 13) & 0xFF for i in range(len(plain)))  # does not compress: stored blocks
    frames = []
    for store_size in (False, True):
        for block_checksum in (False, True):
            for block_size in (lz4_frame.BLOCKSIZE_MAX64KB, lz4_frame.BLOCKSIZE_MAX256KB):
                frames.append(lz4_frame.compress(plain, store_size=store_size, block_checksum=block_checksum,
                                                 block_size=block_size, content_checksum=block_checksum))
    frames.append(lz4_frame.compress(noise, store_size=False))
    return frames, noise


@pytest.mark.usefixtures("zstd_library")
def test_lz4_frames_decode_alike_whatever_their_options():
    # The first buffer is sized from the frame (its content size, else its blocks' headers); every option of the
    # format is read the same by both twins, from frames that compress 10x and from ones that do not compress.
    from kwire.codec import _records_common as common

    records = [P.Record(b"key-%08d" % i, bytes(range(100)), [("trace", b"%016x" % i)], offset=i) for i in range(300)]
    plain = P.RecordBatch(records).encode()[61:]
    frames, noise = _lz4_frames(plain)
    for frame in frames[:-1]:
        batch = _batch(frame, 300, attributes=3)
        for R in RECORDS:
            assert [(r.key, r.value) for r in R.decode_record_batches(batch)[0].records] == [
                (r.key, r.value) for r in records]
            assert [r.key for r in next(iter(R.read_record_batches(batch)))] == [r.key for r in records]
    # Without a content size the guess covers these records (about 10x smaller compressed, beyond the 4x of a
    # plain first guess) in one buffer, and stays within 16 times the frame.
    guess = common.lz4_guess(frames[0])
    assert len(plain) <= guess <= 16 * len(frames[0]) + 4096 and len(plain) > 6 * len(frames[0])
    assert common.lz4_guess(frames[-1]) >= len(noise)
    assert P.crc32c(bytes(common.decompress(3, frames[-1], 1 << 20, 0))) == P.crc32c(noise)
    _same_first_guess(frames + [bytes(_cramjam_zstd().compress(plain)), frames[0][:40], b"\x28\xb5\x2f\xfd"])


def _cramjam_zstd():
    import cramjam

    return cramjam.zstd


def _same_first_guess(frames):
    """The compiled twin sizes its first buffer in C: the same size as _records_common's, for every frame."""
    from kwire.codec import _records_common as common

    for R in RECORDS:
        guess = getattr(R, "_frame_size_guess", None)
        for frame in frames if guess else ():
            for codec in (3, 4):
                assert guess(codec, frame) == common._frame_content_size(frame, codec), (codec, frame[:20])
            for limit in (0, 100, 1 << 26):
                assert R._zstd_capacity(frame, limit) == common.zstd_capacity(frame, limit), (limit, frame[:20])


def test_lz4_frames_of_independent_blocks_are_read_by_the_compiled_twin_and_their_faults_by_cramjam():
    # The compiled twin reads LZ4 frames of independent blocks itself (every checksum they carry checked) and
    # decompresses their blocks with cramjam's raw block call; any other frame, and any fault, is cramjam's to read,
    # so the records and the errors are the same in both twins.
    lz4_frame = pytest.importorskip("lz4.frame")
    import cramjam

    records = [P.Record(b"key-%08d" % i, bytes(range(100)), [("trace", b"%016x" % i)], offset=i) for i in range(300)]
    plain = P.RecordBatch(records).encode()[61:]
    frames = [P.RecordBatch(records, compression="lz4").encode()[61:]]  # cramjam's, as kwire writes it
    for store_size in (False, True):
        for checksums in (False, True):
            for block_size in (lz4_frame.BLOCKSIZE_MAX64KB, lz4_frame.BLOCKSIZE_MAX4MB):
                frames.append(lz4_frame.compress(plain, store_size=store_size, block_checksum=checksums,
                                                 content_checksum=checksums, block_size=block_size,
                                                 block_linked=False))
    two_blocks = plain + bytes(range(256)) * 100
    frames.append(lz4_frame.compress(two_blocks, block_linked=False))
    reads_itself = getattr(RECORDS[0], "_lz4_records", None)
    for frame in frames:
        data = bytes(cramjam.lz4.decompress(frame))
        if reads_itself:
            assert reads_itself(frame, 1 << 26) == data
            assert reads_itself(frame, len(data) - 1) is None  # beyond the limit: cramjam's bomb
        if data == plain:
            for R in RECORDS:
                assert [r.key for r in R.decode_record_batches(_batch(frame, 300, attributes=3))[0].records] == [
                    r.key for r in records]
    linked = lz4_frame.compress(two_blocks, block_linked=True)
    assert not linked[4] & 0x20  # blocks that refer to the ones before: cramjam's to read
    assert bytes(cramjam.lz4.decompress(linked)) == two_blocks
    assert reads_itself is None or reads_itself(linked, 1 << 26) is None
    checked = lz4_frame.compress(plain, store_size=True, block_checksum=True, content_checksum=True,
                                 block_linked=False)
    assert checked[4] == 0x7C  # independent blocks, block and content checksums, content size
    faults = {
        "header checksum": (14, 1),
        "block checksum": (19 + int.from_bytes(checked[15:19], "little") & 0x7FFFFFFF, 1),
        "content checksum": (len(checked) - 1, 1),
        "content size": (6, 1),
        "block size": (15, 0x10),
    }
    for name, (at, bit) in faults.items():
        bad = bytearray(checked)
        bad[at] ^= bit
        assert reads_itself is None or reads_itself(bytes(bad), 1 << 26) is None, name
        _same_error(_batch(bytes(bad), 300, attributes=3), CorruptRecordError, 61)
    for bad in (checked + b"\x00", checked[:-1], checked[:-5] + checked[-4:]):
        assert reads_itself is None or reads_itself(bad, 1 << 26) is None
        _same_error(_batch(bad, 300, attributes=3), CorruptRecordError, 61)
    # A stored block of 0 bytes is a block, not the end mark (cramjam reads it so): with the end mark after it the
    # frame is whole, without it the frame is cut short.
    plain_frame = lz4_frame.compress(plain, store_size=False, block_linked=False)
    empty_block = plain_frame[:-4] + b"\x00\x00\x00\x80"
    assert reads_itself is None or reads_itself(empty_block + plain_frame[-4:], 1 << 26) == plain
    for R in RECORDS:
        assert len(R.decode_record_batches(_batch(empty_block + plain_frame[-4:], 300, attributes=3))[0].records) == 300
    _same_error(_batch(empty_block, 300, attributes=3), CorruptRecordError, 61)


def test_lying_lz4_block_headers_cost_a_bounded_buffer():
    # Blocks that claim 4 MiB each (the largest block size) with a few bytes of input: the first buffer is held
    # to 16 times the frame, and the frame is an error in both twins.
    head = b"\x04\x22\x4d\x18\x60\x70\x73"  # magic, FLG (version 1, independent blocks), BD (4 MiB), HC
    liar = head + b"".join(struct.pack("<I", 3) + b"\x00\x00\x00" for _ in range(200)) + b"\x00" * 4
    from kwire.codec import _records_common as common

    assert common.lz4_guess(liar) <= 16 * len(liar) + 4096
    _same_first_guess([liar, liar[:7] + b"\xff\xff\xff\x7f"])
    _fails_within_a_mebibyte(_batch(liar, 1, attributes=3))


def test_bad_arguments_are_typed():
    from kwire.errors import ArgumentTypeError, ArgumentValueError

    for R in RECORDS:
        with pytest.raises(ArgumentTypeError):
            R.read_batch_infos("text")
        with pytest.raises(ArgumentTypeError):
            R.decode_record_batches(memoryview(GOOD * 2)[::2])  # not contiguous
        assert len(R.read_batch_infos(memoryview(bytearray(GOOD)).cast("B", (1, len(GOOD))))) == 1
        with pytest.raises(ArgumentTypeError):
            R.decode_record_batches(GOOD, check_crc=1)
        with pytest.raises(ArgumentValueError):
            R.read_batch_infos(GOOD, max_decompressed_size=-1)
        with pytest.raises(ArgumentTypeError):
            R.read_batch_infos(GOOD, max_decompressed_size=1.5)
        with pytest.raises(CorruptRecordError):
            R.RecordBatch.decode(GOOD + GOOD)


def _peak(fn):
    fn()  # once before measuring: first-call caches are not the decode's
    tracemalloc.start()
    try:
        out = fn()
        return tracemalloc.get_traced_memory()[1], out
    finally:
        tracemalloc.stop()


def test_a_decode_builds_no_more_per_byte_than_json_loads():
    # The smallest records the wire allows (7 bytes: no key, value or header) are the worst shape: one Record each.
    import json

    doc = ("[" + ",".join(["{}"] * 20000) + "]").encode()
    json_ratio = _peak(lambda: json.loads(doc))[0] / len(doc)
    big = 1 << 40
    for R in RECORDS:
        data = R.RecordBatch([R.Record(None, None, offset=i % 2) for i in range(20000)],
                             last_offset_delta=0).encode()
        peak, out = _peak(lambda: R.decode_record_batches(data))
        assert len(out[0].records) == 20000
        assert peak / len(data) <= json_ratio, (R.__name__, peak / len(data), json_ratio)
        # Offsets and timestamps above CPython's shared small ints, a new value on every record: two int objects
        # more per 7 bytes, still within the bound.
        data = R.RecordBatch([R.Record(None, None, offset=1000 + i % 2, timestamp=big + i % 2) for i in range(20000)],
                             base_offset=1000, last_offset_delta=0, base_timestamp=big, max_timestamp=big).encode()
        assert len(data) == len(out[0].records) * 7 + 61
        for decode in (R.decode_record_batches, lambda d: [b.records for b in R.read_record_batches(d)]):
            peak, out = _peak(lambda: decode(data))
            records = out[0] if isinstance(out[0], list) else out[0].records
            assert records[1].offset == 1001 and records[1].timestamp == big + 1
            assert peak / len(data) <= json_ratio, (R.__name__, peak / len(data), json_ratio)
        assert _peak(lambda: R.read_batch_infos(data, check_records=True))[0] < 64 * 1024


@pytest.mark.parametrize("n", [1, 40, 2000])  # below and beyond where python-isal may inflate them
def test_gzip_records_read_alike_whichever_library_inflates_them(n):
    # The compiled twin inflates one gzip member itself (with python-isal where it is installed and faster, else
    # zlib); anything else is _records_common._gzip's.  Same records, or the same error, in every twin.
    from kwire.codec import _records_common as common

    records = [P.Record(b"k%d" % i, b"value %06d " % i * 8, [("h", b"%d" % i)], offset=i) for i in range(n)]
    plain = P.RecordBatch(records).encode()[61:]
    good = _batch(_gzip(plain), n, attributes=1)
    assert (len(good) - 61 >= common.GZIP_ISAL_FROM) == (n > 1)
    for R in RECORDS:
        assert [(r.offset, r.key, r.value, [tuple(h) for h in r.headers])
                for r in R.decode_record_batches(good)[0].records] == [
            (r.offset, r.key, r.value, [tuple(h) for h in r.headers]) for r in records]
    half = len(plain) // 2
    two_members = _batch(_gzip(plain[:half]) + _gzip(plain[half:]), n, attributes=1)
    for R in RECORDS:
        assert len(R.decode_record_batches(two_members)[0].records) == n
    _same_error(_batch(_gzip(plain)[:-9], n, attributes=1), CorruptRecordError, 61)
    _same_error(_batch(_gzip(plain) + b"\x1f\x8b junk", n, attributes=1), CorruptRecordError, 61)
    _same_error(good, DecompressionLimitError, 61, max_decompressed_size=len(plain) - 1)
    assert [len(R.decode_record_batches(good, max_decompressed_size=len(plain))[0].records) for R in RECORDS] == [
        n] * len(RECORDS)


def _headed_record(key, value, headers, ts_delta=0, offset_delta=0):
    """A record of ``key`` and ``value`` (None: null) with ``headers`` [(str key, bytes value or None)]."""
    def blob(b):
        return _varint(-1) if b is None else _varint(len(b)) + b
    hs = b"".join(_varint(len(k.encode())) + k.encode() + blob(v) for k, v in headers)
    return _record(b"\x00" + _varint(ts_delta) + _varint(offset_delta) + blob(key) + blob(value)
                   + _varint(len(headers)) + hs)


def _outcome(call):
    """What ``call`` gives, comparable across twins: every record's fields, or the error."""
    try:
        batches = call()
    except DecodeError as e:
        return ("error", type(e), e.reason, e.offset, e.path)
    return ("ok", [[(r.offset, r.timestamp, r.key, r.value, [(h.key, h.value) for h in r.headers]) for r in b]
                   for b in batches])


def test_mutated_records_read_alike_in_every_twin():
    # Records whose CRC is right but whose bytes are not: the record walk alone decides. The two twins walk
    # records by different code (the compiled one's walk reports a fault code that another function turns into
    # the error), so they must accept and refuse the very same bytes, with the same error. Headers past the ones
    # the compiled walk keeps the positions of (8) are read again, so one record carries more than that.
    many = [(f"h{i}", bytes([i]) * i if i % 3 else None) for i in range(11)]
    records = (_headed_record(b"key", b"value" * 30, [("a", b"1"), ("b", None)])
               + _headed_record(None, None, many, ts_delta=300, offset_delta=1)
               + _headed_record(b"", b"v" * 200, [], ts_delta=-5, offset_delta=2))
    rng = random.Random(848)
    for case in range(1500):
        data = bytearray(records)
        for _ in range(rng.randint(1, 3)):
            at = rng.randrange(len(data))
            kind = rng.random()
            if kind < 0.6:
                data[at] = rng.randrange(256)
            elif kind < 0.8:
                del data[at]
            else:
                data.insert(at, rng.randrange(256))
        batch = _batch(bytes(data), 3)
        seen = []
        for R in RECORDS:
            seen += [_outcome(lambda: [b.records for b in R.decode_record_batches(batch)]),
                     _outcome(lambda: [list(b) for b in R.read_record_batches(batch)])]
            infos = _outcome(lambda: R.read_batch_infos(batch, check_records=True) and [])
            seen.append(infos if infos[0] == "error" else seen[-1])
        assert all(s == seen[0] for s in seen), (case, bytes(data).hex(), seen)
