"""Record batches (magic 2) in pure Python: the twin of ``_records_c.pyx``.

Same names, same results, same errors at the same offsets; only slower.
Two levels:

- :func:`read_batch_infos` reads each batch's header and checks its CRC (and,
  asked, walks its records) without building a Python object per record:
  what a server storing batches as bytes needs; :func:`set_base_offset`
  rewrites a batch's base offset in place;
- :class:`RecordBatch`, :class:`Record`, :class:`Header` are the decoded
  objects, for clients and tests.
"""

import struct

from kwire.codec._records_common import (
    ATTRIBUTES_OFFSET,
    BATCH_FIELDS,
    COMPRESSION_MASK,
    CONTROL_FLAG,
    COUNT_OFFSET,
    CRC_OFFSET,
    DEFAULT_MAX_DECOMPRESSED_SIZE,
    DELETE_HORIZON_FLAG,
    HEADER_FIELDS,
    HEADER_SIZE,
    LOG_OVERHEAD,
    MAGIC,
    MAGIC_OFFSET,
    MIN_RECORD_SIZE,
    RECORD_FIELDS,
    TIMESTAMP_TYPE_MASK,
    TRANSACTIONAL_FLAG,
    TWIN_NAMES,
    BatchInfo,
    BatchList,
    as_headers,
    batch_defaults,
    check_batch,
    check_int,
    check_limit,
    check_record,
    compress,
    decompress,
    fields_eq,
    fields_repr,
    make_info,
    offset_delta,
    rebuild,
    unknown_codec,
    unsupported_magic,
    wrap64,
)
from kwire.codec._codec_common import refuse_deletion
from kwire.errors import ArgumentTypeError, ArgumentValueError, CorruptRecordError, RecordCrcError

__all__ = [*TWIN_NAMES]  # the same names in both twins

_HEADER = struct.Struct(">qiibIhiqqqhii")  # the 61-byte batch header, in wire order
_INT64 = struct.Struct(">q")


# --- CRC-32C (Castagnoli) ------------------------------------------------------------------------------------------
# The crc32c package (hardware CRC32C in C) when it is installed: the same function, so using it changes speed only,
# and tests/test_records.py checks both against the published vectors.  Otherwise a table, byte by byte.

def _table():
    table = []
    for n in range(256):
        c = n
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    return tuple(table)


_TABLE = _table()


def _crc32c_table(data, crc=0):
    crc ^= 0xFFFFFFFF
    table = _TABLE
    for b in bytes(data):
        crc = table[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


try:
    from crc32c import crc32c as _crc32c_fast
except ImportError:  # pragma: no cover - depends on the environment
    _crc32c_fast = None


def crc32c(data, crc=0):
    """CRC-32C of ``data`` (bytes-like), continuing from ``crc``: the checksum of a record batch."""
    data = _view(data)
    if not isinstance(crc, int) or not 0 <= crc <= 0xFFFFFFFF:
        raise ArgumentValueError(f"crc must be an int in [0, 2**32), not {crc!r}")
    if _crc32c_fast is not None:
        return _crc32c_fast(data, crc)
    return _crc32c_table(data, crc)


def crc32c_backend():
    """How :func:`crc32c` computes: "crc32c package" (its C code, hardware where the CPU has it) or "table"."""
    return "table" if _crc32c_fast is None else "crc32c package"


# --- Byte helpers ------------------------------------------------------------------------------------------------

def _view(data):
    if isinstance(data, (bytes, bytearray)):
        return memoryview(data)
    try:
        view = memoryview(data)
        return view if view.format == "B" and view.ndim == 1 and view.contiguous else view.cast("B")
    except (TypeError, ValueError, BufferError):  # not bytes-like, or not one contiguous run of bytes
        raise ArgumentTypeError(f"records must be contiguous bytes-like, not {type(data).__name__}") from None


class _Reader:
    """Reads a record section: ``buf[pos:end]``.  ``where`` is None when positions are offsets in the caller's
    input; for decompressed records it is the input offset of the compressed payload, which errors name instead."""

    __slots__ = ("buf", "pos", "end", "where")

    def __init__(self, buf, pos, end, where):
        self.buf, self.pos, self.end, self.where = buf, pos, end, where

    def fail(self, reason, pos):
        if self.where is None:
            return CorruptRecordError(reason, pos)
        return CorruptRecordError(f"{reason} (byte {pos} of the decompressed records)", self.where)

    def varint(self, limit, max_bytes, bits):
        # ByteUtils.readVarint/readVarlong: at most 5 (10) bytes; the bits beyond 32 (64) of the last byte are
        # dropped, then zigzag.
        buf, pos = self.buf, self.pos
        start = pos
        value = shift = 0
        for _ in range(max_bytes):
            if pos >= limit:
                raise self.fail("varint is cut short by the end of its record", start)
            b = buf[pos]
            pos += 1
            value |= (b & 0x7F) << shift
            if b < 0x80:
                self.pos = pos
                value &= (1 << bits) - 1
                return (value >> 1) ^ -(value & 1)
            shift += 7
        raise self.fail(f"varint longer than {max_bytes} bytes", start)

    def blob(self, limit, what):
        """A varint length, then that many bytes (None for a negative length, as DefaultRecord reads it)."""
        start = self.pos
        n = self.varint(limit, 5, 32)
        if n < 0:
            return None
        if n > limit - self.pos:
            raise self.fail(f"{what} length {n} is beyond its record", start)
        out = bytes(self.buf[self.pos:self.pos + n])
        self.pos += n
        return out


def _read_record(r, base_offset, base_timestamp, build):
    """One record (DefaultRecord.readFrom); the Record when ``build``, else None."""
    start = r.pos
    size = r.varint(r.end, 5, 32)
    if size < 0 or size > r.end - r.pos:
        raise r.fail(f"record length {size} is beyond its batch", start)
    body = r.pos
    limit = body + size
    if limit - body < 1:
        raise r.fail("record attributes are cut short by the end of its record", body)
    attributes = r.buf[body] - 256 if r.buf[body] > 127 else r.buf[body]
    r.pos += 1
    ts_delta = r.varint(limit, 10, 64)
    delta = r.varint(limit, 5, 32)
    key = r.blob(limit, "key")
    value = r.blob(limit, "value")
    hstart = r.pos
    count = r.varint(limit, 5, 32)
    if count < 0:
        raise r.fail(f"negative header count {count}", hstart)
    headers = []
    for _ in range(count):
        kstart = r.pos
        klen = r.varint(limit, 5, 32)
        if klen < 0:
            raise r.fail(f"negative header key length {klen}", kstart)
        if klen > limit - r.pos:
            raise r.fail(f"header key length {klen} is beyond its record", kstart)
        hkey = bytes(r.buf[r.pos:r.pos + klen])
        r.pos += klen
        hvalue = r.blob(limit, "header value")
        if build:
            headers.append(Header(hkey.decode("utf-8", "surrogateescape"), hvalue))
    if r.pos != limit:
        raise r.fail(f"record length {size} disagrees with its fields ({r.pos - body} bytes)", start)
    if not build:
        return None
    return Record(key, value, tuple(headers), offset=wrap64(base_offset + delta),
                  timestamp=wrap64(base_timestamp + ts_delta), attributes=attributes)


def _walk(r, count, base_offset, base_timestamp, build):
    """The records of ``r``'s section, one at a time (None each without ``build``), each checked whole as the walk
    reaches it; then the check that no bytes follow them."""
    for j in range(count):
        if r.pos >= r.end:
            raise r.fail(f"record count {count} but only {j} records are present", r.pos)
        try:
            rec = _read_record(r, base_offset, base_timestamp, build)
        except CorruptRecordError as exc:
            raise exc.prepend_path(j).prepend_path("records") from None
        yield rec
    if r.pos != r.end:
        raise r.fail(f"bytes after the {count} records the batch declares", r.pos)


def _header(buf, pos, end, check_crc, allow_partial_tail):
    """The 13 header fields of the batch at ``pos``, or None for an incomplete last batch the caller skips."""
    left = end - pos
    if left < LOG_OVERHEAD:
        if allow_partial_tail:
            return None
        raise CorruptRecordError(f"record batch is cut short: {left} bytes left, its prefix needs 12", pos)
    length = int.from_bytes(buf[pos + 8:pos + 12], "big", signed=True)
    if length < 0:
        raise CorruptRecordError(f"negative record batch length {length}", pos + 8)
    if length > left - LOG_OVERHEAD:
        if allow_partial_tail:
            return None
        raise CorruptRecordError(
            f"record batch is cut short: length {length}, {left - LOG_OVERHEAD} bytes present", pos + 8)
    if length < MAGIC_OFFSET + 1 - LOG_OVERHEAD:
        raise CorruptRecordError(f"record batch length {length} leaves no room for its magic", pos + 8)
    magic = buf[pos + MAGIC_OFFSET]
    if magic != MAGIC:
        raise unsupported_magic(magic - 256 if magic > 127 else magic, pos + MAGIC_OFFSET)
    if length < HEADER_SIZE - LOG_OVERHEAD:
        raise CorruptRecordError(
            f"record batch length {length} is below the {HEADER_SIZE - LOG_OVERHEAD} bytes of its header", pos + 8)
    fields = _HEADER.unpack_from(buf, pos)
    batch_end = pos + LOG_OVERHEAD + length
    if check_crc:
        computed = crc32c(buf[pos + ATTRIBUTES_OFFSET:batch_end])
        if computed != fields[4]:
            raise RecordCrcError(
                f"record batch CRC-32C mismatch: stored {fields[4]:#010x}, computed {computed:#010x}",
                pos + CRC_OFFSET)
    attributes = fields[5]
    if attributes & COMPRESSION_MASK > 4:
        raise unknown_codec(attributes & COMPRESSION_MASK, pos + ATTRIBUTES_OFFSET)
    count = fields[12]
    if count < 0:
        raise CorruptRecordError(f"negative record count {count}", pos + COUNT_OFFSET)
    if not attributes & COMPRESSION_MASK and count > (length + LOG_OVERHEAD - HEADER_SIZE) // MIN_RECORD_SIZE:
        raise CorruptRecordError(
            f"record count {count} cannot fit in the batch's {length + LOG_OVERHEAD - HEADER_SIZE} bytes of records",
            pos + COUNT_OFFSET)
    return fields


def _records_of(buf, pos, fields, limit, build):
    """The walk over the records of the batch at ``pos`` whose header is ``fields``, decompressed first when
    they are."""
    batch_end = pos + LOG_OVERHEAD + fields[1]
    start = pos + HEADER_SIZE
    codec = fields[5] & COMPRESSION_MASK
    if codec:
        plain = decompress(codec, buf[start:batch_end], limit, start)
        r = _Reader(plain, 0, len(plain), start)
    else:
        r = _Reader(buf, start, batch_end, None)
    return _walk(r, fields[12], fields[0], fields[7], build)


def _lazy_walk(lazy):
    """The loop of a batch from read_record_batches: its walk, with the batch's index on every error."""
    buf, pos, fields, limit, index = lazy
    try:
        walk = _records_of(buf, pos, fields, limit, True)  # decompressed now, as the compiled twin's iter() does
    except CorruptRecordError as exc:
        raise exc.prepend_path(index) from None
    return _indexed(walk, index)


def _indexed(walk, index):
    try:
        yield from walk
    except CorruptRecordError as exc:
        raise exc.prepend_path(index) from None


def _read_batches(data, check_crc, allow_partial_tail, limit, each):
    """``each(buf, pos, fields)`` of every batch in ``data``, as a BatchList; errors get the batch's index."""
    buf = _view(data)
    for name, value in (("check_crc", check_crc), ("allow_partial_tail", allow_partial_tail)):
        if not isinstance(value, bool):
            raise ArgumentTypeError(f"{name} must be a bool, not {type(value).__name__}")
    check_limit(limit)
    out = BatchList()
    pos, end = 0, len(buf)
    while pos < end:
        try:
            fields = _header(buf, pos, end, check_crc, allow_partial_tail)
            if fields is None:
                out.partial_tail = end - pos
                break
            out.append(each(buf, pos, fields, len(out)))
        except CorruptRecordError as exc:
            raise exc.prepend_path(len(out)) from None
        pos += LOG_OVERHEAD + fields[1]
    out.end = pos
    return out


def read_batch_infos(data, *, check_crc=True, allow_partial_tail=False, check_records=False,
                     max_decompressed_size=DEFAULT_MAX_DECOMPRESSED_SIZE):
    """The header of every batch in ``data`` (0 or more concatenated batches), as a :class:`BatchList` of
    :data:`BatchInfo`, without a Python object per record.  ``check_records`` also walks each batch's records
    (decompressing them, up to ``max_decompressed_size`` bytes) and checks them and their count."""
    def info(buf, pos, fields, _index):
        if check_records:
            for _ in _records_of(buf, pos, fields, max_decompressed_size, False):
                pass
        return make_info(pos, LOG_OVERHEAD + fields[1], fields)
    return _read_batches(data, check_crc, allow_partial_tail, max_decompressed_size, info)


def decode_record_batches(data, *, check_crc=True, allow_partial_tail=False,
                          max_decompressed_size=DEFAULT_MAX_DECOMPRESSED_SIZE):
    """Every batch in ``data`` decoded to a :class:`RecordBatch`, as a :class:`BatchList`; every record is
    checked and made before it returns."""
    def batch(buf, pos, fields, _index):
        return _batch_from_wire(fields, list(_records_of(buf, pos, fields, max_decompressed_size, True)), None)
    return _read_batches(data, check_crc, allow_partial_tail, max_decompressed_size, batch)


def read_record_batches(data, *, check_crc=True, allow_partial_tail=False,
                        max_decompressed_size=DEFAULT_MAX_DECOMPRESSED_SIZE):
    """The batches of ``data``, headers and CRCs checked, their records left in the bytes (a copy, unless ``data``
    is ``bytes``) for each batch's loop or ``records`` to decode and check (docs/RECORDS.md, "Reading records")."""
    if type(data) is not bytes:
        data = bytes(_view(data))

    def batch(buf, pos, fields, index):
        return _batch_from_wire(fields, None, (buf, pos, fields, max_decompressed_size, index))
    return _read_batches(data, check_crc, allow_partial_tail, max_decompressed_size, batch)


def set_base_offset(buf, position, base_offset):
    """Rewrite the base offset of the batch at ``position`` in the writable ``buf``, in place.

    The CRC does not cover the base offset, so the batch stays valid: this is how a broker assigns offsets to a
    batch it stores as received."""
    try:
        view = memoryview(buf)
    except TypeError:
        raise ArgumentTypeError(f"buf must be a writable bytes-like object, not {type(buf).__name__}") from None
    if view.readonly:
        raise ArgumentTypeError(f"buf must be writable ({type(buf).__name__} is read-only)")
    view = view.cast("B")
    check_int("position", position, 0, len(view) - 8 if len(view) >= 8 else -1, ArgumentValueError)
    check_int("base_offset", base_offset, -(1 << 63), (1 << 63) - 1, ArgumentValueError)
    _INT64.pack_into(view, position, base_offset)


def encode_record_batches(batches):
    """Concatenated encodings of ``batches``: a records blob as Produce carries it."""
    return b"".join(b.encode() for b in batches)


# --- Objects -------------------------------------------------------------------------------------------------------

class _Fields:
    __slots__ = ()
    _fields = ()
    __hash__ = None

    def __eq__(self, other):
        return fields_eq(self, other, self._fields)

    def __ne__(self, other):
        eq = fields_eq(self, other, self._fields)
        return eq if eq is NotImplemented else not eq

    def __repr__(self):
        return fields_repr(self, self._fields)

    def __reduce__(self):
        return (rebuild, (type(self), {f: getattr(self, f) for f in self._fields}))

    def __delattr__(self, name):
        refuse_deletion(self, name)


class Header(_Fields):
    """A record header: ``key`` (str) and ``value`` (bytes or None).  Unpacks as ``key, value = header``."""

    __slots__ = HEADER_FIELDS
    _fields = HEADER_FIELDS

    def __init__(self, key, value=None):
        self.key = key
        self.value = value

    def __iter__(self):
        return iter((self.key, self.value))


class Record(_Fields):
    """One record: its absolute ``offset`` and ``timestamp`` (the batch's base plus the record's deltas, wrapping
    as Java's long arithmetic does), ``key`` and ``value`` (bytes or None), ``headers`` (a tuple of
    :class:`Header`; pairs are converted) and ``attributes`` (unused by Kafka, kept)."""

    __slots__ = RECORD_FIELDS
    _fields = RECORD_FIELDS

    def __init__(self, key=None, value=None, headers=(), *, offset=0, timestamp=0, attributes=0):
        self.offset = offset
        self.timestamp = timestamp
        self.key = key
        self.value = value
        self.headers = as_headers(Header, headers)
        self.attributes = attributes


class RecordBatch(_Fields):
    """A record batch (magic 2) and its records.

    The fields are the wire header's; ``attributes`` holds the codec and the flags, which the properties
    (``compression``, ``timestamp_type``, ``is_transactional``, ``is_control``, ``delete_horizon_ms``) read.
    The constructor fills what it is not given as Java's producer does (see ``batch_defaults``)."""

    # ``records`` is a property over _records; _lazy is a batch from read_record_batches whose records are still
    # in its bytes: (the bytes, the batch's position, its header fields, the decompression limit, its index).
    __slots__ = tuple(f for f in BATCH_FIELDS if f != "records") + ("_records", "_lazy")
    _fields = BATCH_FIELDS

    def __init__(self, records=(), *, base_offset=0, partition_leader_epoch=-1, compression=0, timestamp_type=0,
                 is_transactional=False, is_control=False, delete_horizon_ms=None, attributes=None,
                 last_offset_delta=None, base_timestamp=None, max_timestamp=None, producer_id=-1, producer_epoch=-1,
                 base_sequence=-1, magic=MAGIC, crc=0):
        self._lazy = None
        (self._records, self.attributes, self.last_offset_delta, self.base_timestamp,
         self.max_timestamp) = batch_defaults(records, base_offset, compression, timestamp_type, is_transactional,
                                              is_control, delete_horizon_ms, attributes, last_offset_delta,
                                              base_timestamp, max_timestamp)
        self.base_offset = base_offset
        self.partition_leader_epoch = partition_leader_epoch
        self.magic = magic
        self.crc = crc
        self.producer_id = producer_id
        self.producer_epoch = producer_epoch
        self.base_sequence = base_sequence

    @property
    def records(self):
        """The records, a list of :class:`Record`.  A batch from read_record_batches makes them here, on the first
        read, and keeps them."""
        if self._lazy is not None:
            self._records = list(_lazy_walk(self._lazy))
            self._lazy = None
        return self._records

    @records.setter
    def records(self, value):
        self._records = value
        self._lazy = None

    def __iter__(self):
        """The records, one at a time.  A batch from read_record_batches whose ``records`` has not been read
        decodes each as the loop reaches it, and raises the error decode_record_batches would give at the first
        bad one (the records before it are already the caller's); any other batch iterates ``records``."""
        if self._lazy is not None:
            return _lazy_walk(self._lazy)
        return iter(self._records)

    compression = property(lambda self: self.attributes & COMPRESSION_MASK, doc="0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd")
    timestamp_type = property(lambda self: (self.attributes & TIMESTAMP_TYPE_MASK) >> 3,
                              doc="0 CreateTime, 1 LogAppendTime")
    is_transactional = property(lambda self: bool(self.attributes & TRANSACTIONAL_FLAG))
    is_control = property(lambda self: bool(self.attributes & CONTROL_FLAG))
    delete_horizon_ms = property(
        lambda self: self.base_timestamp if self.attributes & DELETE_HORIZON_FLAG else None,
        doc="The delete horizon a compacted batch carries in its base timestamp, or None")

    @classmethod
    def decode(cls, data, *, check_crc=True, max_decompressed_size=DEFAULT_MAX_DECOMPRESSED_SIZE):
        """The one batch ``data`` holds; bytes after it are an error (:func:`decode_record_batches` reads many)."""
        batches = decode_record_batches(data, check_crc=check_crc, max_decompressed_size=max_decompressed_size)
        if len(batches) != 1:
            raise CorruptRecordError(f"expected one record batch, found {len(batches)}",
                                     0 if not batches else _first_size(data))
        return batches[0]

    def encode(self):
        """The batch's bytes, with its length and CRC-32C written (``self.crc`` is not read)."""
        check_batch(self)
        base_offset, base_ts = self.base_offset, self.base_timestamp
        plain = bytearray()
        count = 0  # the records written, never a list subclass's __len__, which may say anything
        for j, rec in enumerate(self.records):
            _encode_record(check_record(rec, ("records", j)), j, base_offset, base_ts, plain)
            count = j + 1
        codec = self.attributes & COMPRESSION_MASK
        payload = compress(codec, bytes(plain)) if codec else plain
        attributes = self.attributes - 0x10000 if self.attributes > 0x7FFF else self.attributes
        head = bytearray(_HEADER.pack(
            base_offset, HEADER_SIZE - LOG_OVERHEAD + len(payload), self.partition_leader_epoch, MAGIC, 0,
            attributes, self.last_offset_delta, base_ts, self.max_timestamp, self.producer_id, self.producer_epoch,
            self.base_sequence, count))
        crc = crc32c(payload, crc32c(memoryview(head)[ATTRIBUTES_OFFSET:]))
        head[CRC_OFFSET:ATTRIBUTES_OFFSET] = crc.to_bytes(4, "big")
        return bytes(head) + bytes(payload)


def _varint_bytes(value, out):
    v = ((value << 1) ^ (value >> 63)) & 0xFFFFFFFFFFFFFFFF
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)


def _encode_record(fields, index, base_offset, base_timestamp, out):
    offset, timestamp, key, value, headers, attributes = fields
    body = bytearray()
    body.append(attributes & 0xFF)
    _varint_bytes(wrap64(timestamp - base_timestamp), body)
    _varint_bytes(offset_delta(offset, base_offset, index), body)
    for blob in (key, value):
        if blob is None:
            body.append(1)  # zigzag(-1)
        else:
            _varint_bytes(len(blob), body)
            body += blob
    _varint_bytes(len(headers), body)
    for hkey, hvalue in headers:
        _varint_bytes(len(hkey), body)
        body += hkey
        if hvalue is None:
            body.append(1)
        else:
            _varint_bytes(len(hvalue), body)
            body += hvalue
    _varint_bytes(len(body), out)
    out += body


def _first_size(data):
    return LOG_OVERHEAD + int.from_bytes(_view(data)[8:12], "big")


def _batch_from_wire(fields, records, lazy):
    self = RecordBatch.__new__(RecordBatch)
    self._lazy = lazy
    (self.base_offset, _length, self.partition_leader_epoch, self.magic, self.crc, attributes,
     self.last_offset_delta, self.base_timestamp, self.max_timestamp, self.producer_id, self.producer_epoch,
     self.base_sequence, _count) = fields
    self.attributes = attributes & 0xFFFF
    self._records = records
    return self
