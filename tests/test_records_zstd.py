"""zstd records with each decompression library (python-zstandard with kept contexts, and cramjam): the same
records, the same errors and the same bounds, in both twins."""

import threading

import pytest

from kwire import _impl
from kwire.codec import _records_common as common
from kwire.errors import CorruptRecordError, DecompressionLimitError

from tests._twins import IMPLS
from tests._zstd_libraries import zstd_library  # noqa: F401 (a fixture)

RECORDS = [_impl.load("records", impl, package="kwire.codec") for impl in IMPLS]
P = _impl.load("records", "python", package="kwire.codec")
zstandard = pytest.importorskip("zstandard")


def _records(n):
    return [P.Record(b"key-%d" % i, bytes(range(100)), [("trace", b"%08x" % i), ("source", b"test")],
                     offset=i, timestamp=1_700_000_000_000 + i) for i in range(n)]


def _with_payload(payload, count):
    """A zstd batch of ``count`` records whose compressed records are ``payload``, its length and CRC rewritten."""
    data = bytearray(P.RecordBatch(_records(count), compression="zstd").encode()[:61] + payload)
    data[8:12] = (len(data) - 12).to_bytes(4, "big")
    data[17:21] = P.crc32c(bytes(data[21:])).to_bytes(4, "big")
    return bytes(data)


def _fields(records):
    return [(r.offset, r.timestamp, r.key, r.value, [tuple(h) for h in r.headers]) for r in records]


def _frames(n):
    """The records of an n-record batch as each zstd writer frames them: with the content size (cramjam, as
    aiokafka writes; python-zstandard, as kafka-python writes), without it (a streaming writer, as Java's
    producer writes), at a high level, with a checksum, and as two frames."""
    plain = P.RecordBatch(_records(n)).encode()[61:]
    half = len(plain) // 2
    import cramjam

    return plain, {
        "cramjam": bytes(cramjam.zstd.compress(plain)),
        "zstandard, sized": zstandard.ZstdCompressor().compress(plain),
        "streamed": zstandard.ZstdCompressor(write_content_size=False).compress(plain),
        "level 19": zstandard.ZstdCompressor(level=19, write_content_size=False).compress(plain),
        "checksum": zstandard.ZstdCompressor(write_checksum=True).compress(plain),
        "two frames": zstandard.ZstdCompressor().compress(plain[:half]) + bytes(cramjam.zstd.compress(plain[half:])),
    }


@pytest.mark.parametrize("n", [1, 100, 3000])
@pytest.mark.usefixtures("zstd_library")
def test_every_framing_decodes_to_the_same_records(n):
    expected = _fields(_records(n))
    plain, frames = _frames(n)
    for name, frame in frames.items():
        data = _with_payload(frame, n)
        for R in RECORDS:
            assert _fields(R.decode_record_batches(data)[0].records) == expected, (R.__name__, name)
            assert _fields(next(iter(R.read_record_batches(data)))) == expected, (R.__name__, name)
            assert R.read_batch_infos(data, check_records=True)[0].record_count == n
        assert bytes(common.decompress(4, frame, len(plain), 61)) == plain, name
        # A limit one byte short of the records is a bomb in every framing.
        with pytest.raises(DecompressionLimitError):
            common.decompress(4, frame, len(plain) - 1, 61)


@pytest.mark.usefixtures("zstd_library")
def test_the_library_in_use_keeps_its_context():
    _, frames = _frames(10)
    common.ZSTD_CONTEXTS.free.clear()
    for R in RECORDS:
        R.decode_record_batches(_with_payload(frames["streamed"], 10))
    kept = common.ZSTD_CONTEXTS.free
    if common.ZSTD_CONTEXTS.library == "zstandard":
        assert len(kept) == 1 and isinstance(kept[0], zstandard.ZstdDecompressor)  # one context, reused by both
    else:
        assert kept == [] and common.zstd_with_context(frames["cramjam"], 1 << 20) is None


@pytest.mark.usefixtures("zstd_library")
def test_a_context_grown_beyond_its_bound_is_dropped(monkeypatch):
    _, frames = _frames(10)
    monkeypatch.setattr(common, "ZSTD_KEPT_SIZE", 0)
    common.ZSTD_CONTEXTS.free.clear()
    for R in RECORDS:
        assert len(R.decode_record_batches(_with_payload(frames["streamed"], 10))[0].records) == 10
    assert common.ZSTD_CONTEXTS.free == []


@pytest.mark.usefixtures("zstd_library")
def test_frames_the_kept_context_is_not_asked_about():
    # An announced size of 0 (python-zstandard answers it without reading the frame) and a window beyond zstd's
    # default limit (cramjam refuses it) go to cramjam: the same outcome with either library, in both twins.
    import cramjam

    _, frames = _frames(3)
    empty = zstandard.ZstdCompressor().compress(b"")
    assert common._zstd_header(empty[:18])[1] == 0
    small = P.RecordBatch([P.Record(b"k", b"v")]).encode()[61:]
    liar = bytes(cramjam.zstd.compress(small))
    assert liar[4] == 0x20  # a single segment with a 1-byte content size, here claimed to be 0
    liar = liar[:5] + b"\x00" + liar[6:]
    wide = bytearray(frames["streamed"])
    assert not wide[4] & 0x20  # not a single segment: it has a window byte
    wide[5] = 0x89  # 2^27 plus an eighth of it
    for payload in (empty + frames["cramjam"], liar, bytes(wide)):
        assert common.zstd_capacity(payload, 1 << 26) == 0
    expected = _fields(_records(3))
    for R in RECORDS:
        assert _fields(R.decode_record_batches(_with_payload(empty + frames["cramjam"], 3))[0].records) == expected
        for payload, count in ((liar, 1), (bytes(wide), 3)):
            with pytest.raises(CorruptRecordError):
                R.decode_record_batches(_with_payload(payload, count))


@pytest.mark.usefixtures("zstd_library")
def test_threads_decode_at_the_same_time_with_their_own_contexts():
    # python-zstandard lets other threads run while it decompresses: a context two threads used at once would
    # mix their outputs.
    batches = [_with_payload(frame, 200) for frame in _frames(200)[1].values()]
    expected = _fields(_records(200))
    errors = []

    def work(R):
        try:
            for _ in range(20):
                for data in batches:
                    assert _fields(R.decode_record_batches(data)[0].records) == expected
        except Exception as exc:  # reported by the main thread
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(RECORDS[i % len(RECORDS)],)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors and not any(t.is_alive() for t in threads)
    assert len(common.ZSTD_CONTEXTS.free) <= common.ZSTD_KEPT
