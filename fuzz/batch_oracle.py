"""Oracle for the ``batch`` fuzz family: the capture batch decoder.

``kwire.codec._batch_c.decode_batch`` and its pure twin ``kwire.codec._batch_py`` turn
a run of captured frames into typed columns, pairing each response with its
request across batches.  A fuzz input here is a short capture:

    split byte, then records of: control byte, 2-byte big-endian length, frame

The control byte gives the direction (bit 0), the connection (bits 1-2) and
the ``truncated`` flag (bits 3-5 all set, so most frames are complete).  A
length past the end of the input is cut to what is left.  The records go
through ``decode_batch`` as two batches that share one ``Pairing``, split
where the split byte says, as a Spark partition's batches do.

For every input both twins must (the contract in ``kwire/codec/_batch_py.py``):

* never raise: a bad frame becomes a row with ``decode_error``;
* produce equal record batches of ``FRAMES_SCHEMA`` and the same number of
  requests still waiting for a response;
* agree with facts checked here independently of both: the capture columns
  pass through; a request's api key, version and correlation id are its
  header bytes; a response's ``request_seq`` is the request this module's
  own pairing model matches it to; and a group api row without a
  ``decode_error`` is a frame ``kwire.decode_request`` / ``decode_response``
  accept, with the same group id or error code.
"""

import struct

import numpy as np

import kwire
import kwire.codec._batch_py as batch_py
from kwire.errors import DecodeError, UnsupportedVersionError

from finding import Finding

try:
    import kwire.codec._batch_c as batch_c
except ImportError:  # a pure install
    batch_c = None

IMPLS = [m for m in (batch_c, batch_py) if m is not None]
_DIR, _CONN_SHIFT, _TRUNC = 0x01, 1, 0x38
_FRAME_ERRORS = (DecodeError, UnsupportedVersionError, ValueError)


def parse(payload):
    """``(split, [(direction, conn, truncated, frame), ...])`` of one input."""
    if not payload:
        return 0, []
    split, pos, out = payload[0], 1, []
    while pos < len(payload):
        c = payload[pos]
        n = int.from_bytes(payload[pos + 1:pos + 3], "big") if pos + 3 <= len(payload) else 0
        frame = bytes(payload[pos + 3:pos + 3 + n])
        out.append((c & _DIR, (c >> _CONN_SHIFT) & 3, (c & _TRUNC) == _TRUNC, frame))
        pos += 3 + n
    return split, out


def encode(records, split=0):
    """The input ``parse`` reads back as ``records`` (used for seeds)."""
    out = bytearray([split])
    for direction, conn, truncated, frame in records:
        out.append(direction | (conn << _CONN_SHIFT) | (_TRUNC if truncated else 0))
        out += struct.pack(">H", len(frame)) + frame
    return bytes(out)


def _columns(records, first):
    n = len(records)
    seq = np.arange(first, first + n, dtype=np.int64)
    ts = 1_700_000_000_000_000 + seq * 1000
    conn = np.array([r[1] for r in records], dtype=np.int64)
    direction = np.array([r[0] for r in records], dtype=np.int8)
    truncated = np.array([r[2] for r in records], dtype=bool)
    offsets = np.zeros(n + 1, dtype=np.int64)
    offsets[1:] = np.cumsum([len(r[3]) for r in records])
    values = np.frombuffer(b"".join(r[3] for r in records) or b"\0", dtype=np.uint8)
    return seq, ts, conn, direction, truncated, offsets, values


def _run(impl, parts):
    pairing = impl.Pairing()
    rows, first = [], 0
    for part in parts:
        try:
            out = impl.decode_batch(*_columns(part, first), pairing)
        except Exception as e:
            raise Finding(f"{impl.__name__}.decode_batch raised {type(e).__name__}: {e}") from e
        if out.schema != batch_py.FRAMES_SCHEMA or out.num_rows != len(part):
            raise Finding(f"{impl.__name__}.decode_batch returned {out.num_rows} rows of {out.schema}")
        rows += out.to_pylist()
        first += len(part)
    return rows, len(pairing)


def _decoded(fn, *args):
    try:
        return fn(*args)
    except _FRAME_ERRORS:
        return None


def _check_row(i, rec, row, pending):
    direction, conn, truncated, frame = rec
    if (row["seq"], row["conn"], row["direction"], row["frame_len"], row["truncated"]) != \
            (i, conn, direction, len(frame), truncated):
        raise Finding(f"row {i}: the capture columns did not pass through: {row}")
    if truncated and row["decode_error"] is None:
        raise Finding(f"row {i}: a truncated frame has no decode_error")
    if direction == 0:
        if len(frame) < 12:
            if row["decode_error"] is None:
                raise Finding(f"row {i}: a {len(frame)}-byte request decoded")
            return
        _size, key, version, corr = struct.unpack_from(">ihhi", frame)
        if (row["api_key"], row["api_version"], row["correlation_id"]) != (key, version, corr):
            raise Finding(f"row {i}: header columns {row['api_key']}/{row['api_version']}/"
                          f"{row['correlation_id']}, the bytes say {key}/{version}/{corr}")
        pending[(conn, corr)] = (i, key, version)
        if key in batch_py.GROUP_APIS and row["decode_error"] is None:
            got = _decoded(kwire.decode_request, frame)
            if got is None:
                raise Finding(f"row {i}: decode_batch accepted a request decode_request rejects")
            if key != 10 and row["group_id"] != got[1].group_id:
                raise Finding(f"row {i}: group_id {row['group_id']!r}, the request says {got[1].group_id!r}")
        return
    if len(frame) < 8:
        if row["decode_error"] is None:
            raise Finding(f"row {i}: a {len(frame)}-byte response decoded")
        return
    (corr,) = struct.unpack_from(">i", frame, 4)
    req = pending.pop((conn, corr), None)
    if row["request_seq"] != (None if req is None else req[0]):
        raise Finding(f"row {i}: paired with request {row['request_seq']}, expected {req}")
    if req is None:
        if row["decode_error"] is None:
            raise Finding(f"row {i}: an unpaired response has no decode_error")
        return
    _seq, key, version = req
    if key in batch_py.GROUP_APIS and row["decode_error"] is None:
        got = _decoded(kwire.decode_response, frame, key, version)
        if got is None:
            raise Finding(f"row {i}: decode_batch accepted a response decode_response rejects")
        if key != 10 and row["error_code"] != got[1].error_code:
            raise Finding(f"row {i}: error_code {row['error_code']}, the response says {got[1].error_code}")


def check(payload, stats=None):
    split, records = parse(payload)
    if not records:
        return
    k = split % (len(records) + 1)
    parts = [p for p in (records[:k], records[k:]) if p]
    results = [_run(impl, parts) for impl in IMPLS]
    if len(results) == 2 and results[0] != results[1]:
        (a, na), (b, nb) = results
        diff = next((j for j in range(len(a)) if a[j] != b[j]), None)
        detail = f"row {diff}:\n  compiled: {a[diff]}\n  pure:     {b[diff]}" if diff is not None else ""
        raise Finding(f"decode_batch: compiled and pure differ (pending {na} vs {nb}) {detail}")
    rows, waiting = results[0]
    pending = {}
    for i, (rec, row) in enumerate(zip(records, rows)):
        _check_row(i, rec, row, pending)
    if waiting != len(pending):
        raise Finding(f"{waiting} requests wait for a response, the model says {len(pending)}")
    if stats is not None:
        bad = sum(r["decode_error"] is not None for r in rows)
        stats["decoded"] = stats.get("decoded", 0) + (len(rows) - bad)
        stats["errors"] = stats.get("errors", 0) + bad
        stats["frames"] = stats.get("frames", 0) + len(rows)
