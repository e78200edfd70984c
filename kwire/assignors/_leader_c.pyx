# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Compiled twin of ``_leader_py``: a JoinGroupResponse's members grouped by
their metadata bytes, the members' ``ConsumerProtocolSubscription``
bytes and eager sticky userData read into columns, and each member's ``ConsumerProtocolAssignment``
bytes written straight from an assignment's CSR arrays into one bytes object
per member (layout in ``_leader_common``).  The two must return identical
results.  No Python object is made per partition, per owned entry or per
topic run.

The module is one extension built from include files, one per job:

* ``_leader_members.pxi``  JoinGroupResponse members grouped by their metadata bytes;
* ``_leader_write.pxi``    each member's Assignment bytes and the whole SyncGroupRequest frame, written
                           from an assignment's CSR arrays;
* ``_leader_read.pxi``     Subscription bytes and eager sticky userData read into columns.

The byte primitives (big-endian integers, varints) and the growable column
are kwire/codec/_bytes.pxd's, shared with the codec."""

import numpy as np

cimport cython
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_CheckExact, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.mem cimport PyMem_Free, PyMem_Malloc, PyMem_Realloc
from libc.stdint cimport int16_t, int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t
from libc.string cimport memcmp, memcpy, memset

from kwire.codec._bytes cimport (Growable, get_be16, get_be32, grow_free, grow_init, grow_extend, grow_push_i32,
                               grow_push_i64, grow_take, put_be16, put_be32, put_uvarint, uvarint_size)

from .. import codec
from ..errors import AssignmentError
from . import _leader_common
from ._leader_common import ClaimColumns, StickyUserDataColumns, SubscriptionColumns, metadata_type_error

cdef extern from "Python.h":
    bint PyMemoryView_Check(object)
    Py_buffer* PyMemoryView_GET_BUFFER(object)
    bint PyBuffer_IsContiguous(const Py_buffer*, char)
    object PyUnicode_DecodeUTF8(const char*, Py_ssize_t, const char*)
    const char* PyUnicode_AsUTF8AndSize(object, Py_ssize_t*) except NULL

include "_leader_members.pxi"
include "_leader_write.pxi"
include "_leader_read.pxi"
