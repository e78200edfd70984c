# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Compiled twin of ``_leader_py``: each member's ``ConsumerProtocolAssignment``
bytes written straight from an assignment's CSR arrays into one bytes object
per member (layout in ``_leader_common``).  The two must return identical
bytes.  No Python object is made per partition or per topic run."""

import numpy as np

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize
from libc.stdint cimport int32_t, int64_t, uint8_t
from libc.string cimport memcpy


cdef inline void _put16(uint8_t* out, int32_t v) noexcept nogil:
    out[0] = <uint8_t>((v >> 8) & 0xFF)
    out[1] = <uint8_t>(v & 0xFF)


cdef inline void _put32(uint8_t* out, int32_t v) noexcept nogil:
    out[0] = <uint8_t>((v >> 24) & 0xFF)
    out[1] = <uint8_t>((v >> 16) & 0xFF)
    out[2] = <uint8_t>((v >> 8) & 0xFF)
    out[3] = <uint8_t>(v & 0xFF)


def assignment_bytes(const int64_t[:] indptr, const int32_t[:] topic, const int32_t[:] partition,
                     const int64_t[:] name_offsets, bytes name_blob, int version):
    cdef Py_ssize_t members = indptr.shape[0] - 1
    cdef Py_ssize_t num_topics = name_offsets.shape[0] - 1
    cdef const uint8_t* names = <const uint8_t*>PyBytes_AS_STRING(name_blob)
    # Per member: which of its topics came first (group_of_topic, stamped with
    # the member so the arrays are never cleared), how many partitions each
    # group holds, and where the next partition of each group goes.
    cdef int32_t[:] stamp = np.full(max(num_topics, 1), -1, dtype=np.int32)
    cdef int32_t[:] group_of_topic = np.zeros(max(num_topics, 1), dtype=np.int32)
    cdef int32_t[:] group_topic = np.zeros(max(num_topics, 1), dtype=np.int32)
    cdef int32_t[:] group_size = np.zeros(max(num_topics, 1), dtype=np.int32)
    cdef int64_t[:] group_cursor = np.zeros(max(num_topics, 1), dtype=np.int64)
    cdef list out = [None] * members
    cdef Py_ssize_t m, g, groups
    cdef int64_t i, size, at, name_len
    cdef int32_t t
    cdef bytes blob
    cdef uint8_t* buf
    for m in range(members):
        groups = 0
        size = 2 + 4 + 4
        for i in range(indptr[m], indptr[m + 1]):
            t = topic[i]
            if stamp[t] != m:
                stamp[t] = <int32_t>m
                group_of_topic[t] = <int32_t>groups
                group_topic[groups] = t
                group_size[groups] = 0
                groups += 1
                size += 2 + (name_offsets[t + 1] - name_offsets[t]) + 4
            group_size[group_of_topic[t]] += 1
            size += 4
        blob = PyBytes_FromStringAndSize(NULL, size)
        buf = <uint8_t*>PyBytes_AS_STRING(blob)
        with nogil:
            _put16(buf, version)
            _put32(buf + 2, <int32_t>groups)
            at = 6
            for g in range(groups):
                t = group_topic[g]
                name_len = name_offsets[t + 1] - name_offsets[t]
                _put16(buf + at, <int32_t>name_len)
                memcpy(buf + at + 2, names + name_offsets[t], name_len)
                at += 2 + name_len
                _put32(buf + at, group_size[g])
                at += 4
                group_cursor[g] = at
                at += 4 * <int64_t>group_size[g]
            for i in range(indptr[m], indptr[m + 1]):
                g = group_of_topic[topic[i]]
                _put32(buf + group_cursor[g], partition[i])
                group_cursor[g] += 4
            _put32(buf + at, -1)
        out[m] = blob
    return out
