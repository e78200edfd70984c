# cython: language_level=3
"""Batch decoder of captured frames (compiled twin of ``kwire.codec._batch_py``).

Same contract as the pure twin.  What is compiled: the loop, the size /
header reads straight from the Arrow values buffer, request pairing keyed
by one C integer, and a fast path for Heartbeat responses (the bulk of any
capture), which are answered without creating a message object.  Message
bodies of group requests and the other responses go through kwire's
per-message decoders and the field extraction both twins import from
``kwire.codec._batch_common``, so they agree field for field by construction.
"""

import numpy as np
cimport numpy as cnp

from kwire.codec._batch_common import (Columns, FRAMES_SCHEMA, GROUP_APIS, RESPONSE_APIS, RequestHeader,
                                       error_text, extract_request, extract_response)
from kwire.codec._framing import decode_response, message_class, split_request
from kwire.codec import _schema
from kwire.errors import KwireError

cnp.import_array()

cdef int HEARTBEAT = 12

# Header version of every (api key, version) of the group apis, -1 elsewhere:
# the request path looks it up instead of asking the schema per frame.
cdef int HEADER_VERSION[32 * 16]
REQUEST_CLASS = {}
for _k in range(32):
    for _v in range(16):
        HEADER_VERSION[_k * 16 + _v] = -1
for _k in GROUP_APIS:
    REQUEST_CLASS[_k] = message_class(_k, "request")
    for _v in range(REQUEST_CLASS[_k].min_version, REQUEST_CLASS[_k].max_version + 1):
        HEADER_VERSION[_k * 16 + _v] = _schema.request_header_version(_k, _v)


class Pairing:
    """Requests waiting for their response, keyed by ``conn << 32 | corr``."""

    def __init__(self):
        self.pending = {}

    def __len__(self):
        return len(self.pending)


cdef inline int read_i32(const unsigned char[:] b, Py_ssize_t p) noexcept nogil:
    return <int>((<unsigned int>b[p] << 24) | (<unsigned int>b[p + 1] << 16) |
                 (<unsigned int>b[p + 2] << 8) | <unsigned int>b[p + 3])


cdef inline short read_i16(const unsigned char[:] b, Py_ssize_t p) noexcept nogil:
    return <short>((<unsigned int>b[p] << 8) | <unsigned int>b[p + 1])


cdef inline object pair_key(long long conn, int corr):
    return (conn << 32) | (<unsigned int>corr)


cdef inline tuple request_context(int key, int version, long long seq, long long ts, dict row):
    """The Pairing entry: what a response inherits from its request (``row``
    is None when the request could not be read that far)."""
    if row is None:
        return (key, version, seq, ts, None, None, None, None)
    return (key, version, seq, ts, row.get("group_id"), row.get("member_id"), row.get("generation_id"),
            row.get("group_instance_id"))


cdef int heartbeat_response_error(const unsigned char[:] b, Py_ssize_t start, Py_ssize_t end,
                                  int version, short* error) noexcept nogil:
    """1 and the error code when the frame is a minimal, well-formed
    Heartbeat response of ``version`` (no tagged fields); 0 to fall back."""
    cdef Py_ssize_t n = end - start
    cdef Py_ssize_t want
    if version < 0:
        # Not a Heartbeat version (a garbled request said so): the slow path
        # reports it the way the pure twin does.
        return 0
    if version == 0:
        want = 4 + 4 + 2
    elif version <= 3:
        want = 4 + 4 + 4 + 2
    elif version == 4:
        want = 4 + 4 + 1 + 4 + 2 + 1
    else:
        return 0
    if n != want or read_i32(b, start) != n - 4:
        return 0
    if version == 0:
        error[0] = read_i16(b, start + 8)
    elif version <= 3:
        error[0] = read_i16(b, start + 12)
    else:
        if b[start + 8] != 0 or b[start + 15] != 0:
            return 0
        error[0] = read_i16(b, start + 13)
    return 1


def decode_batch(seq, ts, conn, direction, truncated, offsets, values, pairing):
    """See ``kwire.codec._batch_py.decode_batch``."""
    cdef Py_ssize_t n = len(seq)
    cdef const long long[:] seq_v = np.ascontiguousarray(seq, dtype=np.int64)
    cdef const long long[:] ts_v = np.ascontiguousarray(ts, dtype=np.int64)
    cdef const long long[:] conn_v = np.ascontiguousarray(conn, dtype=np.int64)
    cdef const signed char[:] dir_v = np.ascontiguousarray(direction, dtype=np.int8)
    cdef const unsigned char[:] trunc_v = np.ascontiguousarray(truncated, dtype=np.uint8)
    cdef const long long[:] off_v = np.ascontiguousarray(offsets, dtype=np.int64)
    cdef const unsigned char[:] buf = values
    cols = Columns(n)
    cdef int[:] frame_len = np.zeros(n, np.int32)
    cdef short[:] api_key_v = cols.ints["api_key"]
    cdef short[:] api_version_v = cols.ints["api_version"]
    cdef int[:] corr_v = cols.ints["correlation_id"]
    cdef short[:] error_v = cols.ints["error_code"]
    cdef int[:] gen_v = cols.ints["generation_id"]
    cdef long long[:] rseq_v = cols.ints["request_seq"]
    cdef long long[:] rts_v = cols.ints["request_ts"]
    valid = cols.valid
    cdef cnp.npy_bool[:] api_key_ok = valid["api_key"].view(np.uint8)
    cdef cnp.npy_bool[:] api_version_ok = valid["api_version"].view(np.uint8)
    cdef cnp.npy_bool[:] corr_ok = valid["correlation_id"].view(np.uint8)
    cdef cnp.npy_bool[:] error_ok = valid["error_code"].view(np.uint8)
    cdef cnp.npy_bool[:] gen_ok = valid["generation_id"].view(np.uint8)
    cdef cnp.npy_bool[:] rseq_ok = valid["request_seq"].view(np.uint8)
    cdef cnp.npy_bool[:] rts_ok = valid["request_ts"].view(np.uint8)
    objs = cols.objs
    group_col = objs["group_id"]
    member_col = objs["member_id"]
    instance_col = objs["group_instance_id"]
    error_col = objs["decode_error"]
    client_col = objs["client_id"]
    cdef dict pending = pairing.pending
    cdef Py_ssize_t i, start, end
    cdef int key, version, corr
    cdef short err
    cdef dict row
    cdef tuple req
    mv = memoryview(values).cast("B")
    for i in range(n):
        start = off_v[i]
        end = off_v[i + 1]
        frame_len[i] = <int>(end - start)
        if dir_v[i] == 0:
            if end - start < 12:
                error_col[i] = f"DecodeError: request frame of {end - start} bytes is shorter than a header"
                continue
            key = read_i16(buf, start + 4)
            version = read_i16(buf, start + 6)
            corr = read_i32(buf, start + 8)
            api_key_v[i] = key; api_key_ok[i] = 1
            api_version_v[i] = version; api_version_ok[i] = 1
            corr_v[i] = corr; corr_ok[i] = 1
            if (HEADER_VERSION[key * 16 + version] if 0 <= key < 32 and 0 <= version < 16 else -1) >= 0 \
                    and read_i32(buf, start) == end - start - 4:
                # A well-formed group request: decoded here without the
                # generic framing helpers (same decoders, same errors).
                payload = mv[start + 4:end]
                try:
                    header, hend = RequestHeader.decode_prefix(payload, HEADER_VERSION[key * 16 + version])
                except (KwireError, ValueError) as exc:
                    error_col[i] = error_text(exc)
                    pending[pair_key(conn_v[i], corr)] = request_context(key, version, seq_v[i], ts_v[i], None)
                    continue
                client_col[i] = header.client_id
                try:
                    msg = REQUEST_CLASS[key].decode(payload[hend:], version)
                except (KwireError, ValueError) as exc:
                    error_col[i] = error_text(exc)
                    pending[pair_key(conn_v[i], corr)] = request_context(key, version, seq_v[i], ts_v[i], None)
                    continue
                if key == HEARTBEAT:
                    group_col[i] = msg.group_id
                    member_col[i] = msg.member_id
                    instance_col[i] = msg.group_instance_id
                    gen_v[i] = msg.generation_id; gen_ok[i] = 1
                    pending[pair_key(conn_v[i], corr)] = (key, version, seq_v[i], ts_v[i], group_col[i],
                                                          member_col[i], gen_v[i], instance_col[i])
                    if trunc_v[i]:
                        error_col[i] = "truncated frame"
                    continue
                row = {"client_id": header.client_id}
                try:
                    extract_request(key, msg, row)
                except (KwireError, ValueError) as exc:
                    row["decode_error"] = error_text(exc)
                pending[pair_key(conn_v[i], corr)] = request_context(key, version, seq_v[i], ts_v[i], row)
                if trunc_v[i] and row.get("decode_error") is None:
                    row["decode_error"] = "truncated frame"
                cols.set_row(i, row)
                continue
            row = {}
            frame = mv[start:end]
            try:
                header, body = split_request(frame)
                row["client_id"] = header.client_id
            except (KwireError, ValueError) as exc:
                row["decode_error"] = error_text(exc)
                pending[pair_key(conn_v[i], corr)] = request_context(key, version, seq_v[i], ts_v[i], None)
                cols.set_row(i, row)  # decode_error is set: "truncated" cannot apply
                continue
            if key in GROUP_APIS:
                try:
                    msg = message_class(key, "request").decode(body, version)
                    extract_request(key, msg, row)
                except (KwireError, ValueError) as exc:
                    row["decode_error"] = error_text(exc)
            pending[pair_key(conn_v[i], corr)] = request_context(key, version, seq_v[i], ts_v[i], row)
        else:
            if end - start < 8:
                error_col[i] = f"DecodeError: response frame of {end - start} bytes is shorter than a header"
                continue
            corr = read_i32(buf, start + 4)
            corr_v[i] = corr; corr_ok[i] = 1
            req = pending.pop(pair_key(conn_v[i], corr), None)
            if req is None:
                error_col[i] = "unpaired response: no request with this correlation id on the connection"
                continue
            key = req[0]
            version = req[1]
            api_key_v[i] = key; api_key_ok[i] = 1
            api_version_v[i] = version; api_version_ok[i] = 1
            rseq_v[i] = req[2]; rseq_ok[i] = 1
            rts_v[i] = req[3]; rts_ok[i] = 1
            group_col[i] = req[4]
            member_col[i] = req[5]
            if req[6] is not None:
                gen_v[i] = req[6]; gen_ok[i] = 1
            instance_col[i] = req[7]
            if key == HEARTBEAT and heartbeat_response_error(buf, start, end, version, &err):
                error_v[i] = err; error_ok[i] = 1
                if trunc_v[i]:
                    error_col[i] = "truncated frame"
                continue
            if key not in RESPONSE_APIS:
                if trunc_v[i]:
                    error_col[i] = "truncated frame"
                continue
            row = {"group_id": req[4], "member_id": req[5], "generation_id": req[6], "group_instance_id": req[7]}
            try:
                header, msg = decode_response(mv[start:end], key, version)
                extract_response(key, msg, row)
            except (KwireError, ValueError) as exc:
                row["decode_error"] = error_text(exc)
        if trunc_v[i] and row.get("decode_error") is None:
            row["decode_error"] = "truncated frame"
        cols.set_row(i, row)
    return cols.to_batch(seq, ts, conn, direction, np.asarray(frame_len), truncated)
