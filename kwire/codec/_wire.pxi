# Hand-written runtime of the compiled codec: bounds-checked readers and a
# growable writer over raw memory.  Included by the generated _codec_c.pyx,
# whose per-message code is nothing but calls into these primitives, in three
# parts: _wire_read.pxi (the Reader), _wire_write.pxi (the Writer) and
# _wire_stored.pxi (what decoded instances keep instead of objects).  The byte
# primitives under both (big-endian integers, varints, the ASCII check) are
# kwire/codec/_bytes.pxd's, shared with the batch decoder and the leader.
#
# Every read checks the bytes remaining *before* it allocates anything, so a
# hostile length or count fails at once instead of reserving memory.  Error
# texts match the pure twin's (kwire/codec/_codec_py_read.py, _codec_py_write.py) word for word: the differential tests and
# fuzzers compare the two implementations on exactly these.

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_GET_SIZE, PyBytes_FromStringAndSize, PyBytes_CheckExact, _PyBytes_Resize
from cpython.object cimport PyObject
from cpython.buffer cimport PyObject_GetBuffer, PyBuffer_Release, PyBUF_SIMPLE
from cpython.memoryview cimport PyMemoryView_FromObject
from cpython.sequence cimport PySequence_GetSlice
from cpython.mem cimport PyMem_Malloc, PyMem_Realloc, PyMem_Free
from cpython.list cimport PyList_CheckExact, PyList_GET_SIZE, PyList_GetSlice, PyList_New, PyList_SET_ITEM
from cpython.ref cimport Py_INCREF, Py_XDECREF
from cpython.long cimport PyLong_Check, PyLong_CheckExact
from cpython.unicode cimport PyUnicode_Check
from libc.string cimport memcmp, memcpy
from kwire.codec._bytes cimport get_be16, get_be32, get_be64, is_ascii, put_be16, put_be32, put_be64, put_uvarint
from libc.stdint cimport INT64_MIN, INT64_MAX, int8_t, int16_t, int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t

cdef extern from "Python.h":
    const char* PyUnicode_AsUTF8AndSize(object, Py_ssize_t*) except NULL
    # The same function unchecked (NULL with an exception set), for w_string: its caller tests the result itself
    # instead of opening a try block, whose entry costs every call (Cython saves the thread's exception state).
    const char* _utf8_or_null "PyUnicode_AsUTF8AndSize"(object, Py_ssize_t*)
    bint PyErr_ExceptionMatches(object)
    void PyErr_Clear()
    object PyUnicode_DecodeUTF8(const char*, Py_ssize_t, const char*)
    object PyUnicode_New(Py_ssize_t, Py_UCS4)
    ctypedef struct PyASCIIObject:
        pass
    long long PyLong_AsLongLongAndOverflow(object, int*) except? -1
    bint PyIndex_Check(object)
    object PyNumber_Index(object)
    const Py_ssize_t PY_SSIZE_T_MAX

from kwire.errors import ArgumentTypeError, ArgumentValueError, DecodeError, EncodeError, UnsupportedVersionError
# Underscored: tests copy every public class name of a codec onto kwire.
from kwire.errors import LimitExceededError as _LimitExceededError
# Shared with the pure twin (neither twin imports the other); the generated
# classes' __reduce__ names _rebuild.
from kwire.codec._codec_common import check_response_key as _check_response_key
from kwire.codec._codec_common import rebuild as _rebuild
from kwire.codec._codec_common import refuse_deletion as _refuse_deletion

cdef object _MISSING = object()
cdef enum:
    MAX_STRING = 0x7FFF

include "_wire_read.pxi"
include "_wire_write.pxi"
include "_wire_stored.pxi"
