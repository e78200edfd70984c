"""Batch decoder of captured frames (pure-Python twin of ``kwire.codec._batch_c``).

:func:`decode_batch` turns one Arrow batch of a capture -- handed over as
NumPy views of the binary column's offsets and values, no copies -- into the
typed columns of :data:`FRAMES_SCHEMA`.  Responses carry no api key, so a
:class:`Pairing` remembers each request by ``(connection, correlation id)``
until its response arrives; batches must therefore arrive in capture order
per connection, with one ``Pairing`` per connection set (Spark partition).

A frame that cannot be decoded becomes a row with ``decode_error`` set and
whatever was read before the failure; nothing here raises on bad input.
"""

from __future__ import annotations

import struct

import numpy as np

from kwire.codec._batch_common import (  # FRAMES_SCHEMA: each twin offers it (kwire.pipeline reads it there)
    FRAMES_SCHEMA,  # noqa: F401
    GROUP_APIS,
    RESPONSE_APIS,
    Columns,
    PendingRequest,
    error_text,
    extract_request,
    extract_response,
)
from kwire.codec._framing import decode_response, message_class, split_request
from kwire.errors import KwireError

_I32 = struct.Struct(">i")
_HDR = struct.Struct(">ihhi")  # size, api key, api version, correlation id


class Pairing:
    """Requests waiting for their response, by ``(conn, correlation_id)``.

    Each entry is a :class:`PendingRequest`: what a response needs to be
    decoded and what it inherits to be useful on its own."""

    def __init__(self):
        self.pending = {}

    def __len__(self):
        return len(self.pending)


def decode_batch(seq, ts, conn, direction, truncated, offsets, values, pairing):
    """Decode ``n`` frames: frame ``i`` is ``values[offsets[i]:offsets[i+1]]``.

    ``seq``/``ts``/``conn`` are int64 arrays, ``direction`` int8 (0 request,
    1 response), ``truncated`` bool.  Returns a ``pyarrow.RecordBatch`` of
    :data:`FRAMES_SCHEMA`."""
    n = len(seq)
    cols = Columns(n)
    frame_len = np.zeros(n, np.int32)
    buf = memoryview(values).cast("B") if not isinstance(values, memoryview) else values
    pending = pairing.pending
    for i in range(n):
        start, end = int(offsets[i]), int(offsets[i + 1])
        frame = buf[start:end]
        frame_len[i] = end - start
        row = {}
        if direction[i] == 0:
            _decode_request(frame, int(conn[i]), int(seq[i]), int(ts[i]), pending, row)
        else:
            _decode_response(frame, int(conn[i]), pending, row)
        if truncated[i] and row.get("decode_error") is None:
            row["decode_error"] = "truncated frame"
        cols.set_row(i, row)
    return cols.to_batch(seq, ts, conn, direction, frame_len, truncated)


def _decode_request(frame, conn, seq, ts, pending, row):
    if len(frame) < 12:
        row["decode_error"] = f"DecodeError: request frame of {len(frame)} bytes is shorter than a header"
        return
    _size, api_key, version, corr = _HDR.unpack_from(frame, 0)
    row["api_key"] = api_key
    row["api_version"] = version
    row["correlation_id"] = corr
    try:
        header, body = split_request(frame)
        row["client_id"] = header.client_id
    except (KwireError, ValueError) as exc:
        row["decode_error"] = error_text(exc)
        pending[(conn, corr)] = PendingRequest(api_key, version, seq, ts, None, None, None, None)
        return
    if api_key in GROUP_APIS:
        try:
            cls = message_class(api_key, "request")
            msg = cls.decode(body, version)
            extract_request(api_key, msg, row)
        except (KwireError, ValueError) as exc:
            row["decode_error"] = error_text(exc)
    pending[(conn, corr)] = PendingRequest(api_key, version, seq, ts, row.get("group_id"), row.get("member_id"),
                                           row.get("generation_id"), row.get("group_instance_id"))


def _decode_response(frame, conn, pending, row):
    if len(frame) < 8:
        row["decode_error"] = f"DecodeError: response frame of {len(frame)} bytes is shorter than a header"
        return
    (corr,) = _I32.unpack_from(frame, 4)
    row["correlation_id"] = corr
    req = pending.pop((conn, corr), None)
    if req is None:
        row["decode_error"] = "unpaired response: no request with this correlation id on the connection"
        return
    row["api_key"] = req.api_key
    row["api_version"] = req.api_version
    row["request_seq"] = req.seq
    row["request_ts"] = req.ts
    row["group_id"] = req.group_id
    row["member_id"] = req.member_id
    row["generation_id"] = req.generation_id
    row["group_instance_id"] = req.group_instance_id
    if req.api_key not in RESPONSE_APIS:
        return
    try:
        header, msg = decode_response(frame, req.api_key, req.api_version)
        extract_response(req.api_key, req.api_version, msg, row)
    except (KwireError, ValueError) as exc:
        row["decode_error"] = error_text(exc)
