# cython: language_level=3
"""Batch decoder of captured frames (compiled twin of ``kwire.codec._batch_py``).

Same contract as the pure twin.  What is compiled:

- the loop, and the size / header reads straight from the Arrow values buffer;
- Heartbeat and ConsumerGroupHeartbeat requests and responses, the bulk of
  any capture of either protocol: a well-formed, all-ASCII one is read here
  without creating a message object or a string (``_batch_consumer.pxi``);
- the string columns, written straight into Arrow's layout (:class:`_StrColumn`);
- request pairing: a request answered within its own batch is found by its
  row, and its response copies the request's strings row to row;
- the other group messages (and Metadata responses) of a well-formed frame:
  the body is decoded by the compiled codec's message class and its fields
  go straight into the columns, the nested ones (:class:`_NestedColumn`)
  built in Arrow's layout, with no dict or list per row.

Any frame the fast paths do not take, or that they start and find bad
(bad Subscription bytes in a JoinGroup, say), goes through kwire's framing
and the field extraction both twins import from
``kwire.codec._batch_common``: a fast path either gives what that path
gives or declines the frame, and tests compare the two twins column by column.
"""

import numpy as np
cimport cython
cimport numpy as cnp
import pyarrow as pa

from cpython.bytes cimport PyBytes_FromStringAndSize
from cpython.mem cimport PyMem_Calloc, PyMem_Malloc, PyMem_Free
from libc.string cimport memcpy
from libc.stdint cimport int16_t, int32_t, int64_t, uint8_t, uint32_t, uint64_t, INT32_MAX

from kwire.codec._bytes cimport (Growable, get_be16, get_be32, grow_extend, grow_free, grow_init, grow_push_i32, grow_push_i64,
                               grow_push_u8, grow_resize, grow_take, is_ascii)

from kwire.codec import _batch_common
from kwire.codec._batch_common import (Assignment, Columns, FRAMES_SCHEMA, GROUP_APIS, RESPONSE_APIS, PendingRequest,
                                       RequestHeader, Subscription, error_text, extract_request, extract_response, partition_count,
                                       uuid_text)
from kwire.codec._batch_common import STRING_COLUMNS as _STRING_COLUMNS
# The nested columns this twin keeps as Python values, converted at the end as the pure twin's are.
_OBJECT_NESTED = ("described",)
from kwire.codec._framing import DEFAULT as _FRAMING, decode_response, message_class, split_request
from kwire.codec import _schema
from kwire.errors import KwireError

cdef extern from "Python.h":
    const char* PyUnicode_AsUTF8AndSize(object, Py_ssize_t*) except NULL
    object PyUnicode_DecodeUTF8(const char*, Py_ssize_t, const char*)

cnp.import_array()

# The schema's api keys (kwire.codec.ApiKey, through _batch_common), as C ints for the comparisons per frame.
cdef int METADATA = _batch_common.METADATA
cdef int FIND_COORDINATOR = _batch_common.FIND_COORDINATOR
cdef int JOIN_GROUP = _batch_common.JOIN_GROUP
cdef int HEARTBEAT = _batch_common.HEARTBEAT
cdef int LEAVE_GROUP = _batch_common.LEAVE_GROUP
cdef int SYNC_GROUP = _batch_common.SYNC_GROUP
cdef int CONSUMER_GROUP_HEARTBEAT = _batch_common.CONSUMER_GROUP_HEARTBEAT
cdef int CONSUMER_GROUP_DESCRIBE = _batch_common.CONSUMER_GROUP_DESCRIBE
cdef int METADATA_TOPIC_ID_VERSION = _batch_common.METADATA_TOPIC_ID_VERSION

ResponseHeader = _FRAMING.codec.ResponseHeader

# Header version of every (api key, version) of the group apis (and, for
# responses, Metadata), -1 elsewhere: the fast paths look it up instead of
# asking the schema per frame.
cdef enum:
    KEYS = 128  # api keys below this have a row in the tables (the schema's highest group api key is 69)
cdef int HEADER_VERSION[KEYS * 16]
cdef int RESPONSE_HEADER_VERSION[KEYS * 16]
REQUEST_CLASS = {}
RESPONSE_CLASS = {}
for _k in range(KEYS):
    for _v in range(16):
        HEADER_VERSION[_k * 16 + _v] = -1
        RESPONSE_HEADER_VERSION[_k * 16 + _v] = -1
for _k in GROUP_APIS:
    REQUEST_CLASS[_k] = message_class(_k, "request")
    for _v in range(REQUEST_CLASS[_k].min_version, REQUEST_CLASS[_k].max_version + 1):
        HEADER_VERSION[_k * 16 + _v] = _schema.request_header_version(_k, _v)
for _k in RESPONSE_APIS:
    RESPONSE_CLASS[_k] = message_class(_k, "response")
    for _v in range(RESPONSE_CLASS[_k].min_version, min(RESPONSE_CLASS[_k].max_version + 1, 16)):
        RESPONSE_HEADER_VERSION[_k * 16 + _v] = _schema.response_header_version(_k, _v)

include "_batch_nested.pxi"


cdef class _StrColumn:
    """One string column of a batch, built in Arrow's own layout: int32
    offsets, the UTF-8 bytes back to back, and a validity flag per row.

    Rows are written in increasing order, each at most once; a row skipped
    is null (``put*`` pads up to the row it writes, :meth:`finish` to the
    end).  That is all the decoder's loop needs, and it lets a response copy
    its request's value from an earlier row with one ``memcpy``."""

    cdef Growable text  # the UTF-8 bytes of the rows so far
    cdef Py_ssize_t rows, n
    cdef cnp.ndarray offsets_arr, valid_arr
    cdef int32_t* offsets
    cdef cnp.npy_bool* valid

    def __cinit__(self, Py_ssize_t n):
        self.n = n
        self.offsets_arr = np.zeros(n + 1, np.int32)
        self.valid_arr = np.zeros(n, np.bool_)
        self.offsets = <int32_t*>cnp.PyArray_DATA(self.offsets_arr)
        self.valid = <cnp.npy_bool*>cnp.PyArray_DATA(self.valid_arr)
        grow_init(&self.text, 1)

    def __dealloc__(self):
        grow_free(&self.text)

    cdef inline void pad(self, Py_ssize_t row) noexcept:
        cdef Py_ssize_t r
        for r in range(self.rows, row):
            self.offsets[r + 1] = <int32_t>self.text.n
        if row > self.rows:
            self.rows = row

    cdef int reserve(self, Py_ssize_t length) except -1:
        """Room for ``length`` more bytes."""
        cdef Py_ssize_t want = self.text.n + length
        if want <= self.text.cap and self.text.data != NULL:
            return 0
        if want > INT32_MAX:
            # Arrow's string offsets are int32; a batch of captured frames is far smaller in practice.
            raise OverflowError(f"more than 2 GiB of strings in one batch of {self.n} frames: "
                                "decode the capture in smaller batches")
        return grow_resize(&self.text, max(want, 2 * self.text.cap, 4096))

    cdef int put(self, Py_ssize_t row, const char* p, Py_ssize_t length) except -1:
        """Row ``row`` holds the ``length`` bytes at ``p`` (valid UTF-8),
        which must not point into this column's own bytes unless room was
        reserved first (growing moves them)."""
        self.reserve(length)
        self.pad(row)
        memcpy(grow_extend(&self.text, length), p, length)
        self.valid[row] = 1
        self.offsets[row + 1] = <int32_t>self.text.n
        self.rows = row + 1
        return 0

    cdef int put_obj(self, Py_ssize_t row, object value) except -1:
        """Row ``row`` holds ``value``, a str, or stays null for None."""
        cdef Py_ssize_t length
        cdef const char* p
        if value is None:
            return 0
        p = PyUnicode_AsUTF8AndSize(value, &length)
        return self.put(row, p, length)

    cdef int copy_row(self, Py_ssize_t row, Py_ssize_t source) except -1:
        """Row ``row`` holds what the earlier row ``source`` holds."""
        cdef Py_ssize_t start, length
        if source >= self.rows or not self.valid[source]:
            return 0
        start = self.offsets[source]
        length = self.offsets[source + 1] - start
        self.reserve(length)
        return self.put(row, self.text.data + start, length)

    cdef object get(self, Py_ssize_t row):
        """Row ``row``'s value as a str (None when null)."""
        if row >= self.rows or not self.valid[row]:
            return None
        return PyUnicode_DecodeUTF8(self.text.data + self.offsets[row],
                                    self.offsets[row + 1] - self.offsets[row], NULL)

    def finish(self):
        """The column as a ``pyarrow.StringArray`` of ``n`` rows."""
        self.pad(self.n)
        valid = int(np.count_nonzero(self.valid_arr))
        if valid == 0:
            return pa.nulls(self.n, pa.string())
        bitmap = None if valid == self.n else pa.py_buffer(np.packbits(self.valid_arr, bitorder="little"))
        return pa.StringArray.from_buffers(self.n, pa.py_buffer(self.offsets_arr),
                                           pa.py_buffer(grow_take(&self.text)),
                                           bitmap, self.n - valid)


class Pairing:
    """Requests waiting for their response, by ``(conn, correlation_id)``.

    Between batches each entry is the :class:`PendingRequest` the pure twin
    keeps (see ``kwire.codec._batch_py.Pairing``).  While a batch is decoded they live
    in a :class:`_PairTable` instead, where a request of that batch is
    entered by its row."""

    def __init__(self):
        self.pending = {}

    def __len__(self):
        return len(self.pending)


cdef class _PairTable:
    """``(conn, correlation id)`` -> a request waiting for its response,
    for the length of one batch: a C hash table (open addressing, linear
    probing), so pairing a Heartbeat creates no Python object.

    A value >= 0 is a row of the batch, whose columns hold what the response
    inherits; a value < 0 is ``-1 - k``, entry ``k`` of ``carried``: the
    tuples of requests carried over from earlier batches.  The table is
    sized for every entry the batch can add (at most half full), so it never
    grows."""

    cdef int64_t* conns
    cdef int32_t* corrs
    cdef int64_t* values
    cdef uint8_t* used
    cdef Py_ssize_t mask
    cdef list carried

    def __cinit__(self, Py_ssize_t entries):
        cdef Py_ssize_t capacity = 16
        while capacity < 2 * entries:
            capacity *= 2
        self.mask = capacity - 1
        self.conns = <int64_t*>PyMem_Malloc(capacity * sizeof(int64_t))
        self.corrs = <int32_t*>PyMem_Malloc(capacity * sizeof(int32_t))
        self.values = <int64_t*>PyMem_Malloc(capacity * sizeof(int64_t))
        self.used = <uint8_t*>PyMem_Calloc(capacity, 1)
        if self.conns is NULL or self.corrs is NULL or self.values is NULL or self.used is NULL:
            raise MemoryError()
        self.carried = []

    def __dealloc__(self):
        PyMem_Free(self.conns)
        PyMem_Free(self.corrs)
        PyMem_Free(self.values)
        PyMem_Free(self.used)

    cdef inline Py_ssize_t home(self, int64_t conn, int32_t corr) noexcept:
        cdef uint64_t h = (<uint64_t>conn * <uint64_t>0x9E3779B97F4A7C15) ^ <uint32_t>corr
        h *= <uint64_t>0xBF58476D1CE4E5B9
        return <Py_ssize_t>((h ^ (h >> 31)) & <uint64_t>self.mask)

    cdef inline Py_ssize_t slot(self, int64_t conn, int32_t corr) noexcept:
        """The slot holding the key, or the free slot where it would go."""
        cdef Py_ssize_t i = self.home(conn, corr)
        while self.used[i] and not (self.conns[i] == conn and self.corrs[i] == corr):
            i = (i + 1) & self.mask
        return i

    cdef inline void put(self, int64_t conn, int32_t corr, int64_t value) noexcept:
        """Enter a request; a newer one replaces a waiting one of the same key, as in a dict."""
        cdef Py_ssize_t i = self.slot(conn, corr)
        self.used[i] = 1
        self.conns[i] = conn
        self.corrs[i] = corr
        self.values[i] = value

    cdef bint pop(self, int64_t conn, int32_t corr, int64_t* value) noexcept:
        """Take the request of this key out (0 when none waits)."""
        cdef Py_ssize_t i = self.slot(conn, corr)
        cdef Py_ssize_t j = i, k
        if not self.used[i]:
            return 0
        value[0] = self.values[i]
        # Backward-shift deletion: each later entry of the run that may sit
        # in the freed slot moves there, so no lookup stops short of it.
        while True:
            j = (j + 1) & self.mask
            if not self.used[j]:
                break
            k = self.home(self.conns[j], self.corrs[j])
            if (k <= i or k > j) if i <= j else (k <= i and k > j):
                self.conns[i] = self.conns[j]
                self.corrs[i] = self.corrs[j]
                self.values[i] = self.values[j]
                i = j
        self.used[i] = 0
        return 1


cdef struct Span:
    Py_ssize_t start   # -1 for null
    Py_ssize_t length


cdef struct HeartbeatFields:
    Span client_id, group_id, member_id, group_instance_id
    int generation_id


cdef inline Py_ssize_t ascii_span(const unsigned char* b, Py_ssize_t p, Py_ssize_t length, Py_ssize_t end,
                                  bint nullable, Span* out) noexcept nogil:
    """The position after a string of ``length`` bytes (-1: null) at ``p``;
    -1 to decline it (cut short, null where not allowed, or not ASCII: the
    codec's path then gives the value or the error)."""
    if length < 0:
        if length == -1 and nullable:
            out.start = -1
            out.length = 0
            return p
        return -1
    if p + length > end or not is_ascii(b + p, length):
        return -1
    out.start = p
    out.length = length
    return p + length


cdef inline Py_ssize_t int16_string(const unsigned char* b, Py_ssize_t p, Py_ssize_t end, bint nullable,
                                    Span* out) noexcept nogil:
    """:func:`ascii_span` of the int16-length string at ``p``."""
    if p + 2 > end:
        return -1
    return ascii_span(b, p + 2, <short>((<unsigned int>b[p] << 8) | <unsigned int>b[p + 1]), end, nullable, out)


cdef inline Py_ssize_t compact_string(const unsigned char* b, Py_ssize_t p, Py_ssize_t end, bint nullable,
                                      Span* out) noexcept nogil:
    """:func:`ascii_span` of the compact string at ``p`` whose length fits in
    one varint byte (longer ones are declined)."""
    if p >= end or b[p] & 0x80:
        return -1
    return ascii_span(b, p + 1, <Py_ssize_t>b[p] - 1, end, nullable, out)


cdef inline Py_ssize_t next_string(const unsigned char* b, Py_ssize_t p, Py_ssize_t end, bint compact,
                                   bint nullable, Span* out) noexcept nogil:
    if compact:
        return compact_string(b, p, end, nullable, out)
    return int16_string(b, p, end, nullable, out)


cdef int heartbeat_request(const unsigned char* b, Py_ssize_t start, Py_ssize_t end, int version,
                           int header_version, HeartbeatFields* f) noexcept nogil:
    """1 when the frame (size already checked) is a Heartbeat request of
    ``version`` that the codec reads without error, with every string
    ASCII and no tagged fields, and its fields in ``f``; 0 to fall back.
    The layout is the Heartbeat schema's: group id, generation and member
    id; the instance id from v3; compact strings and tagged fields from v4."""
    cdef bint compact = version >= 4
    cdef Py_ssize_t p = int16_string(b, start + 12, end, True, &f.client_id)
    if p < 0 or version > 4:
        return 0
    if header_version >= 2:
        if p >= end or b[p] != 0:
            return 0
        p += 1
    p = next_string(b, p, end, compact, False, &f.group_id)
    if p < 0 or p + 4 > end:
        return 0
    f.generation_id = <int>((<unsigned int>b[p] << 24) | (<unsigned int>b[p + 1] << 16) |
                            (<unsigned int>b[p + 2] << 8) | <unsigned int>b[p + 3])
    p = next_string(b, p + 4, end, compact, False, &f.member_id)
    f.group_instance_id.start = -1
    if p >= 0 and version >= 3:
        p = next_string(b, p, end, compact, True, &f.group_instance_id)
    if p >= 0 and compact:
        # the body's tagged fields: none, or the codec reads them
        if p >= end or b[p] != 0:
            return 0
        p += 1
    return p == end


cdef inline int put_span(_StrColumn column, Py_ssize_t row, const unsigned char* b, Span span) except -1:
    if span.start >= 0:
        column.put(row, <const char*>b + span.start, span.length)
    return 0


cdef int put_row(Py_ssize_t i, dict row, bint truncated, dict strings, _Nested nested, cols) except -1:
    """Row ``i`` from a dict of column values (the codec's path); a
    truncated frame read without error says so in ``decode_error``.  The
    string and nested columns are this twin's; the fixed-width ones go where
    ``Columns.set_row`` puts them for both twins."""
    if truncated and row.get("decode_error") is None:
        row["decode_error"] = "truncated frame"
    for name, column in strings.items():
        value = row.pop(name, None)
        if value is not None:
            (<_StrColumn>column).put_obj(i, value)
    for name, column in nested.by_name.items():
        value = row.pop(name, None)
        if value is not None:
            (<_NestedColumn>column).put_value(i, value)
    cols.set_row(i, row)
    return 0


@cython.final
cdef class _Nested:
    """The batch's nested columns."""
    cdef _ListColumn protocols, topics, leaving, partition_counts, topic_ids
    cdef _MemberColumn members
    cdef _AssignmentColumn assignments
    cdef _TopicPartitionsColumn topic_partitions
    cdef dict by_name
    cdef Py_ssize_t marks[8]

    def __cinit__(self):
        kind = {"protocols": _ListColumn, "topics": _ListColumn, "leaving": _ListColumn,
                "partition_counts": _ListColumn, "members": _MemberColumn, "assignments": _AssignmentColumn,
                "topic_ids": _ListColumn, "topic_partitions": _TopicPartitionsColumn}
        self.by_name = {f.name: kind[f.name](f.type) for f in FRAMES_SCHEMA if f.name in kind}
        self.protocols, self.topics, self.leaving = (self.by_name["protocols"], self.by_name["topics"],
                                                     self.by_name["leaving"])
        self.partition_counts = self.by_name["partition_counts"]
        self.members = self.by_name["members"]
        self.assignments = self.by_name["assignments"]
        self.topic_ids = self.by_name["topic_ids"]
        self.topic_partitions = self.by_name["topic_partitions"]

    cdef inline void mark(self) noexcept:
        """Remember where every column stands, for :meth:`undo`."""
        self.marks[0] = self.protocols.mark()
        self.marks[1] = self.topics.mark()
        self.marks[2] = self.leaving.mark()
        self.marks[3] = self.partition_counts.mark()
        self.marks[4] = self.members.mark()
        self.marks[5] = self.assignments.mark()
        self.marks[6] = self.topic_ids.mark()
        self.marks[7] = self.topic_partitions.mark()

    cdef int undo(self, Py_ssize_t row) except -1:
        """Forget what a declined fast path wrote for row ``row`` since :meth:`mark`."""
        self.protocols.undo(row, self.marks[0])
        self.topics.undo(row, self.marks[1])
        self.leaving.undo(row, self.marks[2])
        self.partition_counts.undo(row, self.marks[3])
        self.members.undo(row, self.marks[4])
        self.topic_ids.undo(row, self.marks[6])
        self.topic_partitions.undo(row, self.marks[7])
        return self.assignments.undo(row, self.marks[5])

    def finish(self, Py_ssize_t n):
        return {name: column.finish(n) for name, column in self.by_name.items()}


@cython.final
cdef class _Row:
    """What a fast path read of one row, held until the row is written
    whole (a declined row writes nothing).  ``member_id`` of a response
    starts as its request's; ``has_*`` flags the integers read."""
    cdef object group_id, member_id, group_instance_id, protocol_type, protocol_name, leader
    cdef bint own_member_id, has_generation, has_error, has_session, has_rebalance
    cdef int generation_id, session_timeout_ms, rebalance_timeout_ms
    cdef short error_code

    cdef void clear(self) noexcept:
        self.group_id = self.member_id = self.group_instance_id = None
        self.protocol_type = self.protocol_name = self.leader = None
        self.own_member_id = self.has_generation = self.has_error = self.has_session = self.has_rebalance = False


@cython.final
cdef class _Fields:
    """The columns a fast path's row is written into, typed for the loop."""
    cdef _StrColumn group_id, member_id, group_instance_id, protocol_type, protocol_name, leader, decode_error
    cdef short[:] error_code
    cdef int[:] generation_id, session_timeout_ms, rebalance_timeout_ms
    cdef cnp.npy_bool[:] error_ok, generation_ok, session_ok, rebalance_ok

    def __cinit__(self, dict strings, cols):
        self.group_id, self.member_id = strings["group_id"], strings["member_id"]
        self.group_instance_id, self.decode_error = strings["group_instance_id"], strings["decode_error"]
        self.protocol_type, self.protocol_name = strings["protocol_type"], strings["protocol_name"]
        self.leader = strings["leader"]
        self.error_code, self.error_ok = cols.ints["error_code"], cols.valid["error_code"].view(np.uint8)
        self.generation_id, self.generation_ok = cols.ints["generation_id"], cols.valid["generation_id"].view(np.uint8)
        self.session_timeout_ms = cols.ints["session_timeout_ms"]
        self.session_ok = cols.valid["session_timeout_ms"].view(np.uint8)
        self.rebalance_timeout_ms = cols.ints["rebalance_timeout_ms"]
        self.rebalance_ok = cols.valid["rebalance_timeout_ms"].view(np.uint8)

    cdef int put(self, _Row r, Py_ssize_t i, Py_ssize_t request_row, bint truncated) except -1:
        """Row ``i`` from ``r``; a response's ids not read from it are those
        of the request in row ``request_row`` (-1: none is in this batch, and
        ``r`` holds them)."""
        if request_row >= 0:
            self.group_id.copy_row(i, request_row)
            if not r.own_member_id:
                self.member_id.copy_row(i, request_row)
            self.group_instance_id.copy_row(i, request_row)
        else:
            self.group_id.put_obj(i, r.group_id)
            self.group_instance_id.put_obj(i, r.group_instance_id)
        if request_row < 0 or r.own_member_id:
            self.member_id.put_obj(i, r.member_id)
        self.protocol_type.put_obj(i, r.protocol_type)
        self.protocol_name.put_obj(i, r.protocol_name)
        self.leader.put_obj(i, r.leader)
        if r.has_error:
            self.error_code[i], self.error_ok[i] = r.error_code, 1
        if r.has_generation:
            self.generation_id[i], self.generation_ok[i] = r.generation_id, 1
        if r.has_session:
            self.session_timeout_ms[i], self.session_ok[i] = r.session_timeout_ms, 1
        if r.has_rebalance:
            self.rebalance_timeout_ms[i], self.rebalance_ok[i] = r.rebalance_timeout_ms, 1
        if truncated:
            self.decode_error.put_obj(i, "truncated frame")
        return 0


cdef int request_row(int key, msg, _Row r, _Nested nested, Py_ssize_t i) except -1:
    """``extract_request``'s reading of request ``msg``, into ``r`` and the nested columns."""
    if key == JOIN_GROUP:
        r.group_id, r.member_id, r.group_instance_id = msg.group_id, msg.member_id, msg.group_instance_id
        r.session_timeout_ms, r.has_session = msg.session_timeout_ms, True
        r.rebalance_timeout_ms, r.has_rebalance = msg.rebalance_timeout_ms, True
        r.protocol_type = msg.protocol_type
        protocols = msg.protocols
        for protocol in protocols:
            nested.protocols.push_element(protocol.name)
        nested.protocols.close(i)
        if r.protocol_type == "consumer" and protocols:
            nested.topics.put_value(i, Subscription.decode(protocols[0].metadata).topics)
    elif key == HEARTBEAT:
        r.group_id, r.member_id, r.group_instance_id = msg.group_id, msg.member_id, msg.group_instance_id
        r.generation_id, r.has_generation = msg.generation_id, True
    elif key == SYNC_GROUP:
        r.group_id, r.member_id, r.group_instance_id = msg.group_id, msg.member_id, msg.group_instance_id
        r.generation_id, r.has_generation = msg.generation_id, True
        r.protocol_type, r.protocol_name = msg.protocol_type, msg.protocol_name
        # Other protocols (Kafka Connect, ...) have assignments of their own format.
        if r.protocol_type is None or r.protocol_type == "consumer":
            for a in msg.assignments:
                nested.assignments.add_assignment(a.member_id, a.assignment)
            nested.assignments.close(i)
    elif key == LEAVE_GROUP:
        r.group_id = msg.group_id
        members = msg.members
        if members:
            for m in members:
                nested.leaving.push_element(m.member_id)
            nested.leaving.close(i)
            r.member_id, r.group_instance_id = members[0].member_id, members[0].group_instance_id
        else:
            r.member_id = msg.member_id
            nested.leaving.push_element(r.member_id)
            nested.leaving.close(i)
    elif key == FIND_COORDINATOR:
        keys = msg.coordinator_keys
        if keys:
            if msg.key_type == 0:
                r.group_id = keys[0]
        elif msg.key_type == 0:
            r.group_id = msg.key
    return 0


cdef int response_row(int key, int version, msg, _Row r, _Nested nested, Py_ssize_t i) except -1:
    """``extract_response``'s reading of response ``msg``, into ``r`` and the nested columns."""
    cdef bint with_ids = version >= METADATA_TOPIC_ID_VERSION
    if key == METADATA:
        # Only the topics answered without an error have a size.
        for t in msg.topics:
            if t.error_code == 0 and t.name is not None:
                nested.topics.push_element(t.name)
                nested.partition_counts.push_element(partition_count(t.partitions))
                if with_ids:
                    nested.topic_ids.push_element(uuid_text(t.topic_id))
        nested.topics.close(i)
        nested.partition_counts.close(i)
        if with_ids:
            nested.topic_ids.close(i)
        return 0
    r.error_code, r.has_error = msg.error_code, True
    if key == JOIN_GROUP:
        r.generation_id, r.has_generation = msg.generation_id, True
        r.protocol_type, r.protocol_name, r.leader = msg.protocol_type, msg.protocol_name, msg.leader
        # The coordinator names the member here (MEMBER_ID_REQUIRED, first join).
        r.member_id, r.own_member_id = msg.member_id, True
        consumer = r.protocol_type is None or r.protocol_type == "consumer"
        for m in msg.members:
            nested.members.add(m.member_id, m.group_instance_id,
                               Subscription.decode(m.metadata).topics if consumer else None)
        nested.members.close(i)
    elif key == SYNC_GROUP:
        # The response's own protocol fields (v5+), none when empty: the request's are not kept.
        r.protocol_type = msg.protocol_type or None
        r.protocol_name = msg.protocol_name or None
        if r.protocol_type is None or r.protocol_type == "consumer":
            nested.assignments.add_assignment(r.member_id, msg.assignment)
            nested.assignments.close(i)
    elif key == FIND_COORDINATOR:
        coordinators = msg.coordinators
        if coordinators:
            r.error_code = coordinators[0].error_code
    return 0


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
    if n != want or <int32_t>get_be32(&b[start]) != n - 4:
        return 0
    if version == 0:
        error[0] = <int16_t>get_be16(&b[start + 8])
    elif version <= 3:
        error[0] = <int16_t>get_be16(&b[start + 12])
    else:
        if b[start + 8] != 0 or b[start + 15] != 0:
            return 0
        error[0] = <int16_t>get_be16(&b[start + 13])
    return 1


cdef bint response_fast_path(int key, int version, Py_ssize_t j, object req, const unsigned char[:] buf, object mv,
                             Py_ssize_t start, Py_ssize_t end, bint truncated, Py_ssize_t i, _Row r, _Nested nested,
                             _Fields fields) except -1:
    """Row ``i``, a response to the request in row ``j`` (or, -1, to the
    carried ``req``), decoded by the compiled message class and written; 0
    (nothing written) where the frame is not well formed or a field is bad,
    for the codec's path to give its row and error."""
    cdef int header_version = RESPONSE_HEADER_VERSION[key * 16 + version] if 0 <= key < KEYS and 0 <= version < 16 else -1
    if header_version < 0 or <int32_t>get_be32(&buf[start]) != end - start - 4:
        return 0
    payload = mv[start + 4:end]
    try:
        _header, header_end = ResponseHeader.decode_prefix(payload, header_version)
        msg = RESPONSE_CLASS[key].decode(payload[header_end:], version)
    except (KwireError, ValueError):
        return 0
    r.clear()
    if j < 0:
        r.group_id, r.member_id, r.group_instance_id = req.group_id, req.member_id, req.group_instance_id
    elif key == SYNC_GROUP:
        # Its Assignment is the requester's: the request's member id names it.
        r.member_id = fields.member_id.get(j)
    nested.mark()
    try:
        response_row(key, version, msg, r, nested, i)
    except (KwireError, ValueError):
        nested.undo(i)
        return 0
    fields.put(r, i, j, truncated)
    return 1


include "_batch_consumer.pxi"
include "_batch_rows.pxi"


def decode_batch(seq, ts, conn, direction, truncated, offsets, values, pairing):
    """See ``kwire.codec._batch_py.decode_batch``."""
    cdef _Batch batch = _Batch(seq, ts, conn, direction, truncated, offsets, values, pairing)
    cdef Py_ssize_t i, start, end
    try:
        for i in range(batch.n):
            start, end = batch.off_v[i], batch.off_v[i + 1]
            batch.frame_len[i] = <int>(end - start)
            if batch.dir_v[i] == 0:
                batch.request(i, start, end)
            else:
                batch.response(i, start, end)
    finally:
        pairing.pending = batch.still_waiting()
    return batch.finish(seq, ts, conn, direction, truncated)
