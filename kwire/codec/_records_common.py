"""What the two record-batch twins share: the format's constants, the batch
summary type, and compression.

``_records_py`` (pure) and ``_records_c`` (compiled) both import this module
and neither imports the other.  Compression is a library call (cramjam) in
both, so the bounded decompression lives here once: the twins differ only in
how they walk bytes.

The format is Kafka's record batch v2 (``DefaultRecordBatch``): a 61-byte
header, then the records, compressed as one block when the batch's
attributes name a codec.
"""

from collections import namedtuple

from kwire.errors import (
    ArgumentTypeError,
    ArgumentValueError,
    CorruptRecordError,
    DecompressionLimitError,
    EncodeError,
    UnsupportedRecordFormatError,
)

# DefaultRecordBatch's layout: base offset (8), batch length (4), partition leader epoch (4), magic (1), CRC (4),
# attributes (2), last offset delta (4), base timestamp (8), max timestamp (8), producer id (8), producer epoch (2),
# base sequence (4), record count (4).
LOG_OVERHEAD = 12  # base offset + batch length: the prefix every magic shares (Records.LOG_OVERHEAD)
HEADER_SIZE = 61  # DefaultRecordBatch.RECORD_BATCH_OVERHEAD
MAGIC_OFFSET = 16
CRC_OFFSET = 17
ATTRIBUTES_OFFSET = 21  # the CRC covers the batch from here to its end
COUNT_OFFSET = 57
MAGIC = 2
# The smallest record: a 1-byte length, then attributes, timestamp delta, offset delta, key length, value length
# and header count, one byte each.
MIN_RECORD_SIZE = 7

COMPRESSION_MASK = 0x07
TIMESTAMP_TYPE_MASK = 0x08  # 0: CreateTime, 1: LogAppendTime
TRANSACTIONAL_FLAG = 0x10
CONTROL_FLAG = 0x20
DELETE_HORIZON_FLAG = 0x40  # base timestamp is the delete horizon (log compaction, KIP-534)

NONE, GZIP, SNAPPY, LZ4, ZSTD = range(5)
COMPRESSION_NAMES = ("none", "gzip", "snappy", "lz4", "zstd")

#: What each twin exports (``_records_c`` and ``_records_py`` both set their ``__all__`` from it).
TWIN_NAMES = (
    "BatchInfo", "BatchList", "DEFAULT_MAX_DECOMPRESSED_SIZE", "Header", "Record", "RecordBatch", "crc32c",
    "crc32c_backend", "decode_record_batches", "encode_record_batches", "read_batch_infos", "read_record_batches",
    "set_base_offset",
)

#: Default ``max_decompressed_size``: the records of one compressed batch may inflate to this many bytes.  Kafka's
#: default ``message.max.bytes`` is 1 MiB of compressed batch; 64 MiB leaves room for highly compressible data
#: while keeping one hostile batch from taking more than that.
DEFAULT_MAX_DECOMPRESSED_SIZE = 64 * 1024 * 1024

#: The summary of one batch that :func:`read_batch_infos` returns: its header, without its records.
BatchInfo = namedtuple("BatchInfo", (
    "position", "size", "base_offset", "partition_leader_epoch", "magic", "crc", "attributes", "compression",
    "is_transactional", "is_control", "timestamp_type", "last_offset_delta", "base_timestamp", "max_timestamp",
    "producer_id", "producer_epoch", "base_sequence", "record_count",
))


class BatchList(list):
    """The batches read from a records blob, in order.

    ``end`` is the position just after the last complete batch;
    ``partial_tail`` is the number of bytes after it that were skipped as an
    incomplete last batch (only with ``allow_partial_tail=True``: Kafka's
    Fetch may cut its last batch short at ``max_bytes``; 0 when nothing was
    skipped)."""

    __slots__ = ("end", "partial_tail")

    def __init__(self, items=(), end=0, partial_tail=0):
        super().__init__(items)
        self.end = end
        self.partial_tail = partial_tail

    def __reduce__(self):
        return (BatchList, (list(self), self.end, self.partial_tail))


def make_info(position, size, fields):
    """A :data:`BatchInfo` from the 13 header fields, in wire order."""
    (base_offset, _length, epoch, magic, crc, attributes, last_delta, base_ts, max_ts,
     producer_id, producer_epoch, base_sequence, count) = fields
    attributes &= 0xFFFF  # an int16 on the wire, a bit set to its readers
    return BatchInfo(position, size, base_offset, epoch, magic, crc, attributes, attributes & COMPRESSION_MASK,
                     bool(attributes & TRANSACTIONAL_FLAG), bool(attributes & CONTROL_FLAG),
                     (attributes & TIMESTAMP_TYPE_MASK) >> 3, last_delta, base_ts, max_ts, producer_id,
                     producer_epoch, base_sequence, count)


def unsupported_magic(magic, offset):
    if magic in (0, 1):
        error = UnsupportedRecordFormatError(
            f"record batch magic {magic} is the legacy message format, which kwire does not read "
            "(only magic 2, Kafka 0.11 and later)", offset)
    else:
        error = UnsupportedRecordFormatError(f"unknown record batch magic {magic} (kwire reads magic 2)", offset)
    error.magic = magic
    return error


def unknown_codec(codec, offset):
    return UnsupportedRecordFormatError(f"unknown compression codec {codec} in the batch attributes", offset)


def check_limit(limit):
    if not isinstance(limit, int) or isinstance(limit, bool):
        raise ArgumentTypeError(f"max_decompressed_size must be an int, not {type(limit).__name__}")
    if limit < 0:
        raise ArgumentValueError(f"max_decompressed_size must be >= 0, not {limit}")
    return limit


# --- Compression -------------------------------------------------------------------------------------------------
# cramjam's *_into functions write into a buffer the caller sized and fail when it is full, without growing it: that
# is what bounds a decompression bomb.  A batch starts with a capacity from the size its format announces (which a
# liar controls, so it is capped by what the input could expand to in one step) and grows fourfold up to the limit.

XERIAL_MAGIC = b"\x82SNAPPY\x00"  # snappy-java's SnappyOutputStream header, which Java's producer writes
XERIAL_HEADER = XERIAL_MAGIC + b"\x00\x00\x00\x01\x00\x00\x00\x01"  # version 1, minimum compatible version 1
XERIAL_BLOCK = 32 * 1024  # SnappyOutputStream's default block size
_FULL = "failed to write whole buffer"  # cramjam's message when the output buffer is full
# The most bytes a raw snappy block of n bytes can hold: its densest element is a copy of 64 bytes in 3 (snappy's
# format description: a copy with a 2-byte offset), so a block that says it holds more lies, and is refused
# before its buffer is made, as a size beyond the limit is.
SNAPPY_MAX_RATIO = 22


def cramjam_module():
    """The cramjam package (both twins call it for snappy, LZ4 and zstd), or UnsupportedRecordFormatError."""
    try:
        import cramjam
    except ImportError as exc:  # a declared dependency; say so rather than fail with a bare ImportError
        raise UnsupportedRecordFormatError(
            "compressed record batches need the cramjam package (pip install cramjam)") from exc
    return cramjam


def _bomb(limit, offset):
    return DecompressionLimitError(
        f"compressed records inflate beyond max_decompressed_size={limit} bytes", offset)


def _bad(codec, exc, offset):
    return CorruptRecordError(f"{COMPRESSION_NAMES[codec]} records do not decompress: {exc}", offset)


def _into(fn, payload, hint, limit, codec, offset):
    """Decompress with ``fn(payload, out)`` into a buffer that grows to ``limit``; the records as a memoryview."""
    # The announced size is believed only as far as 64x the input: a lie costs a bounded allocation, not the limit.
    capacity = min(limit, max(min(hint, 64 * len(payload) + 65536), 4 * len(payload) + 1024))
    while True:
        out = bytearray(capacity + 1)  # one spare byte: filling it proves the output exceeds ``capacity``
        try:
            n = fn(payload, out)
        except Exception as exc:  # cramjam raises its own DecompressionError, also for a full buffer
            if _FULL not in str(exc):
                raise _bad(codec, exc, offset) from None
            n = capacity + 1
        if n <= capacity:
            return memoryview(out)[:n]
        if capacity >= limit:
            raise _bomb(limit, offset)
        capacity = min(limit, capacity * 4)


def _snappy_raw(cj, block, limit, offset):
    try:
        n = cj.snappy.decompress_raw_len(block)
    except Exception as exc:
        raise _bad(SNAPPY, exc, offset) from None
    if n > limit:
        raise _bomb(limit, offset)
    if n > SNAPPY_MAX_RATIO * len(block):
        raise CorruptRecordError(f"a snappy block of {len(block)} bytes says it holds {n} bytes, more than it can",
                                 offset)
    out = bytearray(n)
    try:
        got = cj.snappy.decompress_raw_into(block, out)
    except Exception as exc:
        raise _bad(SNAPPY, exc, offset) from None
    return memoryview(out)[:got]


def _snappy(cj, payload, limit, offset):
    # Java's producer writes snappy-java's stream (a 16-byte header, then blocks of a 4-byte big-endian length and
    # raw snappy); librdkafka writes one raw snappy block.  Kafka's readers tell them apart by the header.
    if bytes(payload[:8]) != XERIAL_MAGIC or len(payload) < 16:
        return _snappy_raw(cj, payload, limit, offset)
    out = bytearray()
    pos = 16
    while pos < len(payload):
        if pos + 4 > len(payload):
            raise CorruptRecordError("snappy block length is cut short", offset)
        n = int.from_bytes(payload[pos:pos + 4], "big")
        pos += 4
        if n > len(payload) - pos:
            raise CorruptRecordError(f"snappy block of {n} bytes is beyond the compressed records", offset)
        out += _snappy_raw(cj, payload[pos:pos + n], limit - len(out), offset)
        pos += n
    return memoryview(out)


def _gzip(payload, limit, offset):
    # zlib's streaming reader with max_length is bounded by construction; a stream of several gzip members (which
    # Java's GZIPInputStream reads) is followed member by member.
    import zlib

    out = bytearray()
    data = bytes(payload)
    while True:
        d = zlib.decompressobj(31)
        try:
            out += d.decompress(data, limit + 1 - len(out))
        except zlib.error as exc:
            raise _bad(GZIP, exc, offset) from None
        if len(out) > limit or d.unconsumed_tail:
            raise _bomb(limit, offset)
        if not d.eof:
            raise CorruptRecordError("gzip records are cut short", offset)
        data = d.unused_data
        if not data:
            return memoryview(out)


#: The gzip payloads from which the compiled twin inflates with python-isal (ISA-L's inflate, the same DEFLATE) where
#: it is installed: below, its setup costs more than it saves (measured here: 1.4x slower than zlib at 160 bytes, as
#: fast near 300, 1.6x faster at 1 KiB, 2.3x at 85 KiB).
GZIP_ISAL_FROM = 320


def isal_decompressobj():
    """python-isal's ``decompressobj``, or None when it is not installed."""
    try:
        from isal.isal_zlib import decompressobj
    except ImportError:
        return None
    return decompressobj


LZ4_MAGIC = b"\x04\x22\x4d\x18"
LZ4_BLOCK_MAX = (0, 0, 0, 0, 64 << 10, 256 << 10, 1 << 20, 4 << 20)  # by the BD byte's bits 4-6 (LZ4 frame format)
LZ4_MAX_RATIO = 255  # an LZ4 block's output per input byte at most: a match length byte of 255 adds 255 bytes
LZ4_GUESS_RATIO = 16  # records compress 5-15x with LZ4; 255x is a bound rarely met, and a costly first buffer


def lz4_guess(payload):
    """The first capacity for an LZ4 frame without a content size: the bound its blocks give (see
    _lz4_blocks_bound), at most 16 times the frame and 4 KiB (more is rare, and then the buffer grows); 0 for a
    frame this cannot follow.  Java's producer and most clients write no content size, and their records compress
    far beyond the 4x of the default first guess: this saves the second attempt."""
    return min(_lz4_blocks_bound(payload), LZ4_GUESS_RATIO * len(payload) + 4096)


def _lz4_blocks_bound(payload):
    """What an LZ4 frame without a content size decompresses to at most, from its block headers: each block's
    size when it is stored uncompressed, else the frame's block maximum (or 255 times its size, if less); 0 for
    a frame this cannot follow."""
    n = len(payload)
    if n < 7 or bytes(payload[:4]) != LZ4_MAGIC:
        return 0
    flg = payload[4]
    block_max = LZ4_BLOCK_MAX[(payload[5] >> 4) & 7]
    if not block_max:
        return 0
    pos = 7 + (4 if flg & 0x01 else 0)  # magic, FLG, BD, the dictionary id if present, the header checksum
    check = 4 if flg & 0x10 else 0  # a checksum after each block
    total = 0
    while pos + 4 <= n:
        size = int.from_bytes(payload[pos:pos + 4], "little")
        pos += 4
        if not size:  # the end mark
            return total
        size &= 0x7FFFFFFF
        total += size if payload[pos - 1] & 0x80 else min(block_max, LZ4_MAX_RATIO * size)
        pos += size + check
    return 0


def _frame_content_size(payload, codec):
    """The uncompressed size a zstd or LZ4 frame header announces (for an LZ4 frame without one, the bound its
    blocks give), or 0: only a first guess at the capacity."""
    p = bytes(payload[:18])
    if codec == LZ4 and len(p) >= 7 and p[:4] == LZ4_MAGIC and not p[4] & 0x08:
        return lz4_guess(payload)
    if codec == LZ4 and len(p) >= 15 and p[:4] == LZ4_MAGIC and p[4] & 0x08:
        return int.from_bytes(p[6:14], "little")
    if codec == ZSTD:
        head = _zstd_header(p)
        return max(0, head[1]) if head is not None and len(p) >= head[2] else 0
    return 0


ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"


def _zstd_header(p):
    """(window size, content size, header size) of the zstd frame header that ``p`` (the frame's first 18 bytes)
    starts, or None when it starts none: the window is 0 for a single-segment frame (whose window is its content),
    the content size -1 when the header announces none."""
    if len(p) < 6 or p[:4] != ZSTD_MAGIC:
        return None
    fhd = p[4]
    single = (fhd >> 5) & 1
    window = 0
    if not single:  # the window descriptor: a power of two from 2^10, plus eighths of it
        base = 1 << (10 + (p[5] >> 3))
        window = base + (base >> 3) * (p[5] & 7)
    pos = 5 + (0 if single else 1) + (0, 1, 2, 4)[fhd & 3]  # after the window byte and the dictionary id
    width = (1 if single else 0, 2, 4, 8)[fhd >> 6]
    if not width:
        return window, -1, pos
    if len(p) < pos + width:
        return window, 0, pos + width
    n = int.from_bytes(p[pos:pos + width], "little")
    return window, n + 256 if width == 2 else n, pos + width


# --- zstd with a kept context ------------------------------------------------------------------------------------
# cramjam's zstd call makes a decompression context per call: most of a small batch's decompression (about 8 us
# of a one-record batch's 9).  python-zstandard's ZstdDecompressor keeps its context from one call to the next,
# and where it is installed (the [fast] extra) both twins decompress zstd with it.  Its one-shot decompress
# allocates the size the frame announces, or for a frame that announces none the max_output_size it is given, so
# it is asked only about a single frame whose output fits zstd_capacity: the limit, and the 64x of the input that
# _into also believes at most (a liar's claim costs no more than that).  A frame it cannot decode in one call
# within that buffer (several frames, corrupt input, a bigger output) and a frame it is not asked about (an
# announced size of 0, which it answers without reading the frame; a window beyond zstd's default limit, which
# cramjam refuses) go to cramjam's bounded path, which gives the result and the error it gives without it.

ZSTD_WINDOW_MAX = 1 << 27  # zstd's default largest window to decode (ZSTD_WINDOWLOG_LIMIT_DEFAULT), cramjam's too
ZSTD_KEPT = 4  # contexts kept at most (one per thread that decompresses at the same time)
ZSTD_KEPT_SIZE = 16 << 20  # a context grown beyond this (the window of a big frame without a size) is dropped


def zstd_capacity(payload, limit):
    """The output buffer python-zstandard may decompress the zstd ``payload`` into (its announced size, or for a
    frame without one the most it may take), or 0 when it is not asked."""
    head = _zstd_header(bytes(payload[:18]))
    if head is None or head[0] > ZSTD_WINDOW_MAX or len(payload) < head[2]:
        return 0
    bound = min(limit, 64 * len(payload) + 65536)
    size = head[1]
    if size < 0:
        return bound
    return size if size <= bound else 0  # an announced 0 is 0 too: not asked


class ZstdContexts:
    """The library zstd is decompressed with, and python-zstandard's contexts that no call is using.

    A call takes a context from ``free`` (list.pop: atomic, so no two threads ever use one at the same time) or
    makes one with ``new``, and gives it back after.  The package is looked for when the first context is made:
    importing it takes longer than importing kwire, and a program that reads no zstd need not pay for it."""

    __slots__ = ("library", "new", "free")

    def __init__(self):
        self.use(None)

    def use(self, library):
        """Decompress zstd with "zstandard" (python-zstandard, with kept contexts) or "cramjam" (tests force
        each); None: python-zstandard if it imports when it is first needed, else cramjam."""
        if library not in (None, "zstandard", "cramjam"):
            raise ArgumentValueError(f"zstd library must be 'zstandard' or 'cramjam', not {library!r}")
        self.new = None if library == "cramjam" else _zstandard_context
        self.library = library
        self.free = []

    def chosen(self):
        """The library zstd is decompressed with: "zstandard" or "cramjam" (the first looks for the package)."""
        if self.library is None:
            context = _zstandard_context()
            if context is not None:
                self.free.append(context)
        return self.library


def _zstandard_context():
    """A new python-zstandard context; None, and cramjam from then on, when the package does not import."""
    try:
        from zstandard import ZstdDecompressor
    except ImportError:
        ZSTD_CONTEXTS.use("cramjam")
        return None
    ZSTD_CONTEXTS.library = "zstandard"
    return ZstdDecompressor()


ZSTD_CONTEXTS = ZstdContexts()


def zstd_with_context(payload, capacity):
    """``payload`` decompressed by python-zstandard with a kept context into at most ``capacity`` (> 0) bytes,
    as bytes; None when zstd is cramjam's or the library could not (cramjam's bounded path then decides)."""
    contexts = ZSTD_CONTEXTS
    free = contexts.free
    try:
        d = free.pop()
    except IndexError:
        d = contexts.new() if contexts.new is not None else None
        if d is None:
            return None
    try:
        out = d.decompress(payload, max_output_size=capacity, allow_extra_data=False)
    except Exception:  # zstandard.ZstdError, or the buffer could not be had: cramjam says what is wrong
        out = None
    if len(free) < ZSTD_KEPT and d.memory_size() <= ZSTD_KEPT_SIZE:
        free.append(d)
    return out


def decompress(codec, payload, limit, offset):
    """The records of a batch compressed with ``codec``, at most ``limit`` bytes; errors name ``offset``."""
    if codec == GZIP:
        return _gzip(payload, limit, offset)
    if codec == ZSTD:
        capacity = zstd_capacity(payload, limit)
        out = zstd_with_context(payload, capacity) if capacity else None
        if out is not None:
            return memoryview(out)
    cj = cramjam_module()
    if codec == SNAPPY:
        return _snappy(cj, payload, limit, offset)
    if codec == LZ4:
        return _into(cj.lz4.decompress_into, payload, _frame_content_size(payload, LZ4), limit, codec, offset)
    if codec == ZSTD:
        return _into(cj.zstd.decompress_into, payload, _frame_content_size(payload, ZSTD), limit, codec, offset)
    raise unknown_codec(codec, offset)


def compress(codec, data):
    """``data`` compressed as Java's producer writes it (snappy in snappy-java's stream, LZ4 as independent blocks)."""
    if codec == GZIP:
        import zlib

        c = zlib.compressobj(6, zlib.DEFLATED, 31)
        return c.compress(data) + c.flush()
    cj = cramjam_module()
    if codec == SNAPPY:
        view = memoryview(data)
        parts = [XERIAL_HEADER]
        for i in range(0, len(view), XERIAL_BLOCK):
            block = bytes(cj.snappy.compress_raw(view[i:i + XERIAL_BLOCK]))
            parts.append(len(block).to_bytes(4, "big"))
            parts.append(block)
        return b"".join(parts)
    if codec == LZ4:
        # KafkaLZ4BlockInputStream decompresses each block alone, so blocks must not refer to earlier ones.
        c = cj.lz4.Compressor(content_checksum=False, block_linked=False)
        c.compress(data)
        return bytes(c.finish())
    if codec == ZSTD:
        return bytes(cj.zstd.compress(data))
    raise unknown_codec(codec, None)


# --- The objects' plain parts --------------------------------------------------------------------------------------
# Both twins' Header, Record and RecordBatch take their constructor defaults, checks before encoding, repr and
# equality from here: only decoding and encoding differ between them.

HEADER_FIELDS = ("key", "value")
RECORD_FIELDS = ("offset", "timestamp", "key", "value", "headers", "attributes")
BATCH_FIELDS = ("base_offset", "partition_leader_epoch", "magic", "crc", "attributes", "last_offset_delta",
                "base_timestamp", "max_timestamp", "producer_id", "producer_epoch", "base_sequence", "records")
INT8, INT16, INT32, INT64 = ((-(1 << (n - 1)), (1 << (n - 1)) - 1) for n in (8, 16, 32, 64))
_BATCH_RANGES = (("base_offset", INT64), ("partition_leader_epoch", INT32), ("attributes", (0, 0xFFFF)),
                 ("last_offset_delta", INT32), ("base_timestamp", INT64), ("max_timestamp", INT64),
                 ("producer_id", INT64), ("producer_epoch", INT16), ("base_sequence", INT32))


def wrap64(v):
    """``v`` as Java's long arithmetic leaves it: offsets and timestamps are base + delta, wrapping like Java's."""
    return ((v + (1 << 63)) & 0xFFFFFFFFFFFFFFFF) - (1 << 63)


def check_int(name, value, lo, hi, error=None):
    if not isinstance(value, int) or isinstance(value, bool):
        if error is None:
            raise EncodeError(f"{name} must be an int, not {type(value).__name__}", path=[name])
        raise ArgumentTypeError(f"{name} must be an int, not {type(value).__name__}")
    if not lo <= value <= hi:
        if error is None:
            raise EncodeError(f"{name} {value} is outside [{lo}, {hi}]", path=[name])
        raise error(f"{name} {value} is outside [{lo}, {hi}]")
    return value


def _blob(name, value, path):
    if value is None or isinstance(value, bytes):
        return value
    if isinstance(value, (bytearray, memoryview)):
        return bytes(value)
    raise EncodeError(f"{name} must be bytes or None, not {type(value).__name__}", path=path)


def header_pairs(headers, path=()):
    """(key as UTF-8 bytes, value bytes or None) of each header: the form both encoders write."""
    out = []
    for i, h in enumerate(headers):
        try:
            key, value = h
        except (TypeError, ValueError):
            raise EncodeError(f"a header must be a Header or a (key, value) pair, not {type(h).__name__}",
                              path=[*path, "headers", i]) from None
        if not isinstance(key, str):
            raise EncodeError(f"header key must be a str, not {type(key).__name__}", path=[*path, "headers", i, "key"])
        out.append((key.encode("utf-8", "surrogateescape"), _blob("header value", value, [*path, "headers", i])))
    return out


def check_record(rec, path):
    """The fields of ``rec`` as the encoders write them: (offset, timestamp, key, value, header pairs, attributes)."""
    try:
        check_int("offset", rec.offset, *INT64)
        check_int("timestamp", rec.timestamp, *INT64)
        check_int("attributes", rec.attributes, *INT8)
    except EncodeError as exc:
        raise exc.prepend_path(path[-1]).prepend_path(path[0]) from None
    return (rec.offset, rec.timestamp, _blob("key", rec.key, [*path, "key"]),
            _blob("value", rec.value, [*path, "value"]), header_pairs(rec.headers, path), rec.attributes)


def check_batch(batch):
    """Raises EncodeError unless every header field of ``batch`` fits its wire type."""
    for name, (lo, hi) in _BATCH_RANGES:
        check_int(name, getattr(batch, name), lo, hi)
    if batch.magic != MAGIC:
        raise EncodeError(f"magic {batch.magic!r}: kwire writes record batches of magic 2 only", path=["magic"])
    if (batch.attributes & COMPRESSION_MASK) > ZSTD:
        raise EncodeError(f"unknown compression codec {batch.attributes & COMPRESSION_MASK}", path=["attributes"])
    if not isinstance(batch.records, (list, tuple)):
        raise EncodeError(f"records must be a list, not {type(batch.records).__name__}", path=["records"])


def compression_id(compression):
    if isinstance(compression, str) and compression in COMPRESSION_NAMES:
        return COMPRESSION_NAMES.index(compression)
    if isinstance(compression, int) and not isinstance(compression, bool) and 0 <= compression <= ZSTD:
        return compression
    raise ArgumentValueError(f"compression must be one of {COMPRESSION_NAMES} or 0-4, not {compression!r}")


def batch_defaults(records, base_offset, compression, timestamp_type, is_transactional, is_control,
                   delete_horizon_ms, attributes, last_offset_delta, base_timestamp, max_timestamp):
    """(records list, attributes, last_offset_delta, base_timestamp, max_timestamp) for a new RecordBatch, as
    Java's MemoryRecordsBuilder fills them: the base timestamp is the first record's (or the delete horizon), the
    max timestamp the largest, the last offset delta the last record's offset from the base."""
    # Collected by iterating, not by list(records), which sizes its first allocation by __len__: a subclass's may
    # say 2**62 (a MemoryError) or -1 (a ValueError) whatever it holds.
    records = records[:] if type(records) is list else [r for r in records]
    if attributes is None:
        attributes = (compression_id(compression) | (TIMESTAMP_TYPE_MASK if timestamp_type else 0)
                      | (TRANSACTIONAL_FLAG if is_transactional else 0) | (CONTROL_FLAG if is_control else 0)
                      | (DELETE_HORIZON_FLAG if delete_horizon_ms is not None else 0))
    if delete_horizon_ms is not None:
        if base_timestamp is not None and base_timestamp != delete_horizon_ms:
            raise ArgumentValueError("base_timestamp and delete_horizon_ms are the same field: give one")
        base_timestamp = delete_horizon_ms
    if last_offset_delta is None:
        last_offset_delta = wrap64(records[-1].offset - base_offset) if records else 0
    if base_timestamp is None:
        base_timestamp = records[0].timestamp if records else -1
    if max_timestamp is None:
        max_timestamp = max(r.timestamp for r in records) if records else -1
    return records, attributes, last_offset_delta, base_timestamp, max_timestamp


def fields_repr(obj, fields):
    return f"{type(obj).__name__}({', '.join(f'{f}={getattr(obj, f)!r}' for f in fields)})"


def fields_eq(a, b, fields):
    # A batch's crc is a property of its bytes, not of its content: gzip or zstd at another level gives other
    # bytes for the same records, so equality leaves it out.
    if type(a) is not type(b):
        return NotImplemented
    return all(getattr(a, f) == getattr(b, f) for f in fields if f != "crc")


def as_headers(header_class, headers):
    """``headers`` (Header objects or (key, value) pairs) as the tuple of ``header_class`` a Record holds."""
    if not headers:
        return ()
    return tuple(h if type(h) is header_class else header_class(*h) for h in headers)


def offset_delta(offset, base_offset, index):
    """The offset delta record ``index`` is written with; EncodeError when it does not fit an int32."""
    delta = wrap64(offset - base_offset)
    if not INT32[0] <= delta <= INT32[1]:
        raise EncodeError(f"offset {offset} is {delta} from the batch's base offset {base_offset}: "
                          "an offset delta is an int32", path=["records", index, "offset"])
    return delta


def rebuild(cls, state):
    """Unpickle a Header, Record or RecordBatch of either twin: the ``__reduce__`` of each names this function."""
    obj = cls.__new__(cls)
    for name, value in state.items():
        setattr(obj, name, value)
    return obj
