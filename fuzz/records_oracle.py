"""Oracle for the ``records`` fuzz family: the record-batch codec.

``kwire.codec._records_c`` and its pure twin ``kwire.codec._records_py`` read
the records blob of Produce and Fetch (0 or more concatenated record
batches, magic 2).  A fuzz input here is a selector byte, which picks one of
``TARGETS``, then the blob.  Mutated bytes almost never keep a valid CRC, so
most targets read with ``check_crc=False`` to reach the records; one target
rewrites every complete batch's CRC with this module's own table CRC-32C
first and reads with the check on, and one reads the input as it is.

For every input both twins must:

* give equal results (batch headers, every record's fields), or raise the
  same error class with the same reason, offset and path;
* raise only ``DecodeError`` subclasses (``CorruptRecordError`` and its
  family);
* with ``max_decompressed_size`` at ``LIMIT``, never hold more than that of
  decompressed records (test_fuzz_bounded checks the memory).

The decode targets also read the input with ``read_record_batches`` and run
each batch's loop to its end: both twins give the same batches or the same
first error, and where ``decode_record_batches`` succeeds the loops give its
batches.

Where a decode succeeds, also:

* ``read_batch_infos(check_records=True)`` accepts the same input and its
  headers and record counts are the decoded batches';
* each batch re-encodes to the same bytes in both twins, and those bytes
  decode to the same batch (offsets, timestamps, keys, values, headers).
"""

import struct

import kwire.codec._records_py as records_py
from kwire.errors import DecodeError

from finding import Finding

try:
    import kwire.codec._records_c as records_c
except ImportError:  # a pure install
    records_c = None

LIMIT = 1 << 16
TARGETS = ("infos", "infos-records", "decode", "decode-partial", "decode-fixed-crc")


def crc32c(data):
    """The oracle's own CRC-32C, bit by bit: independent of both twins (and of their tables)."""
    crc = 0xFFFFFFFF
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 & -(crc & 1))
    return crc ^ 0xFFFFFFFF


def fix_crcs(data):
    """``data`` with the CRC of every complete magic-2 batch rewritten to match its bytes."""
    out = bytearray(data)
    pos = 0
    while pos + 61 <= len(out):
        length = struct.unpack_from(">i", out, pos + 8)[0]
        end = pos + 12 + length
        if length < 49 or end > len(out) or out[pos + 16] != 2:
            break
        struct.pack_into(">I", out, pos + 17, crc32c(out[pos + 21:end]))
        pos = end
    return bytes(out)


def _record(r):
    return (r.offset, r.timestamp, r.key, r.value, tuple((h.key, h.value) for h in r.headers), r.attributes)


def _batch(b, records=None):
    return (b.base_offset, b.partition_leader_epoch, b.magic, b.crc, b.attributes, b.last_offset_delta,
            b.base_timestamp, b.max_timestamp, b.producer_id, b.producer_epoch, b.base_sequence,
            tuple(_record(r) for r in (b.records if records is None else records)))


def _lazy(mod, data, **kw):
    """``read_record_batches``, each batch's loop run to its end: the batches, or the first error and how many
    batches were read whole before it."""
    got = []
    try:
        for b in mod.read_record_batches(data, **kw):
            got.append(_batch(b, list(b)))
    except DecodeError as e:
        return ("err", type(e).__name__, e.reason, e.offset, e.path, len(got))
    return ("ok", got)


def _decode_kw(target):
    return {"check_crc": target == "decode-fixed-crc", "allow_partial_tail": target == "decode-partial",
            "max_decompressed_size": LIMIT}


def _run(mod, target, data):
    if target == "infos":
        out = mod.read_batch_infos(data, max_decompressed_size=LIMIT, allow_partial_tail=True)
        return [tuple(i) for i in out], out.end, out.partial_tail
    if target == "infos-records":
        out = mod.read_batch_infos(data, check_crc=False, check_records=True, max_decompressed_size=LIMIT)
        return [tuple(i) for i in out], out.end, out.partial_tail
    out = mod.decode_record_batches(data, **_decode_kw(target))
    return [_batch(b) for b in out], out.end, out.partial_tail, out


def _outcome(mod, target, data):
    """What ``mod`` gives for the target; for the decode targets, with what its loops give (``_lazy``)."""
    try:
        try:
            result = ("ok",) + _run(mod, target, data)
        except DecodeError as e:
            result = ("err", type(e).__name__, e.reason, e.offset, e.path)
        if not target.startswith("decode"):
            return result
        lazy = _lazy(mod, data, **_decode_kw(target))
    except Exception as e:  # noqa: BLE001 - anything untyped is what the oracle looks for
        raise Finding(f"records/{target} ({mod.__name__}): untyped {type(e).__name__}: {e}") from e
    if result[0] == "ok" and lazy != ("ok", result[1]):
        raise Finding(f"records/{target} ({mod.__name__}): the loops give {lazy!r}, not the decoded batches")
    if result[0] == "err" and lazy[0] == "ok":
        raise Finding(f"records/{target} ({mod.__name__}): the loops read what decode_record_batches refuses")
    return result[:-1] + (lazy, result[-1]) if result[0] == "ok" else result + (lazy,)


def _after_decode(target, data, batches, stats):
    infos = records_py.read_batch_infos(data, check_crc=False, check_records=True, max_decompressed_size=LIMIT,
                                        allow_partial_tail=target == "decode-partial")
    if len(infos) != len(batches):
        raise Finding(f"records/{target}: {len(batches)} batches decoded, {len(infos)} infos")
    for info, b in zip(infos, batches):
        if (info.base_offset, info.attributes, info.record_count) != (b.base_offset, b.attributes, len(b.records)):
            raise Finding(f"records/{target}: info {info} disagrees with the decoded batch")
    for b in batches:
        encoded = b.encode()
        if records_c is not None:
            again_c = records_c.decode_record_batches(encoded)
            if records_c.RecordBatch.decode(encoded).encode() != encoded:
                raise Finding(f"records/{target}: the compiled twin re-encodes {encoded.hex()} differently")
            if _batch(again_c[0])[4:] != _batch(b)[4:] or again_c[0].base_offset != b.base_offset:
                raise Finding(f"records/{target}: compiled round trip changed the batch")
        again = records_py.RecordBatch.decode(encoded)
        if again.encode() != encoded:
            raise Finding(f"records/{target}: the pure twin re-encodes {encoded.hex()} differently")
        mine, theirs = _batch(b), _batch(again)
        if mine[:3] + mine[4:] != theirs[:3] + theirs[4:]:  # the crc is the new bytes'
            raise Finding(f"records/{target}: round trip changed the batch: {mine} -> {theirs}")
    stats["roundtrip"] = stats.get("roundtrip", 0) + 1


def check(payload, stats=None, selector=0):
    stats = {} if stats is None else stats
    target = TARGETS[selector % len(TARGETS)]
    data = fix_crcs(payload) if target == "decode-fixed-crc" else payload
    mods = [records_py] + ([records_c] if records_c is not None else [])
    results = [_outcome(mod, target, data) for mod in mods]
    keyed = [r[:-1] if r[0] == "ok" and target.startswith("decode") else r for r in results]
    for r in keyed[1:]:
        if r != keyed[0]:
            raise Finding(f"records/{target}: twins disagree:\n  pure:     {keyed[0]!r}\n  compiled: {r!r}")
    if results[0][0] == "err":
        stats["errors"] = stats.get("errors", 0) + 1
        return
    stats["decoded"] = stats.get("decoded", 0) + 1
    if target.startswith("decode"):
        _after_decode(target, data, results[0][-1], stats)
