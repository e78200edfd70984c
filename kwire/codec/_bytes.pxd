# Byte primitives every compiled part of kwire reads and writes the wire with, and one growable buffer.
#
# cimported, not included: ``from kwire.codec._bytes cimport get_be32, Growable, ...`` from any package
# (the codec's runtime _wire.pxi, the batch decoder, the leader's kernels in kwire.assignors).  Everything
# here is ``cdef inline`` or a struct, so there is no module behind this file: each user compiles its own
# copy, which the C compiler inlines like code of its own.
#
# Kafka's integers are big-endian; its varints are LEB128 (seven bits a byte, low group first), signed ones
# zigzag-encoded first (ByteUtils.readVarint / writeVarint).  No function here checks bounds: the caller
# has checked that the bytes are there (the codec's Reader does, with the error the pure twin gives).

from cpython.bytearray cimport PyByteArray_AS_STRING, PyByteArray_FromStringAndSize, PyByteArray_Resize
from cpython.object cimport PyObject
from cpython.ref cimport Py_INCREF, Py_XDECREF
from libc.stdint cimport int16_t, int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t
from libc.string cimport memcpy


# -- big-endian integers ---------------------------------------------------------------------------------------

cdef inline uint16_t get_be16(const uint8_t* p) noexcept nogil:
    return <uint16_t>((<uint16_t>p[0] << 8) | p[1])


cdef inline uint32_t get_be32(const uint8_t* p) noexcept nogil:
    return (<uint32_t>p[0] << 24) | (<uint32_t>p[1] << 16) | (<uint32_t>p[2] << 8) | p[3]


cdef inline uint64_t get_be64(const uint8_t* p) noexcept nogil:
    cdef uint64_t v = 0
    cdef int i
    for i in range(8):
        v = (v << 8) | p[i]
    return v


cdef inline void put_be16(uint8_t* out, uint16_t v) noexcept nogil:
    out[0] = <uint8_t>(v >> 8)
    out[1] = <uint8_t>v


cdef inline void put_be32(uint8_t* out, uint32_t v) noexcept nogil:
    out[0] = <uint8_t>(v >> 24)
    out[1] = <uint8_t>(v >> 16)
    out[2] = <uint8_t>(v >> 8)
    out[3] = <uint8_t>v


cdef inline void put_be64(uint8_t* out, uint64_t v) noexcept nogil:
    cdef int i
    for i in range(8):
        out[i] = <uint8_t>(v >> (56 - 8 * i))


# -- varints ---------------------------------------------------------------------------------------------------

cdef inline int uvarint_size(uint64_t v) noexcept nogil:
    """How many bytes :func:`put_uvarint` writes for ``v`` (1 to 10)."""
    cdef int n = 1
    while v >= 0x80:
        v >>= 7
        n += 1
    return n


cdef inline int put_uvarint(uint8_t* out, uint64_t v) noexcept nogil:
    """Write ``v`` as an unsigned varint at ``out`` (room for :func:`uvarint_size` bytes); the bytes written."""
    cdef int n = 0
    while v >= 0x80:
        out[n] = <uint8_t>((v & 0x7F) | 0x80)
        v >>= 7
        n += 1
    out[n] = <uint8_t>v
    return n + 1


cdef inline uint64_t zigzag(int64_t v) noexcept nogil:
    """A signed varint's value as the unsigned one written for it: 0, -1, 1, -2 ... become 0, 1, 2, 3 ..."""
    return (<uint64_t>v << 1) ^ <uint64_t>(v >> 63)


cdef inline int64_t unzigzag(uint64_t u) noexcept nogil:
    """The inverse of :func:`zigzag`."""
    return <int64_t>(u >> 1) ^ -<int64_t>(u & 1)


# -- text ------------------------------------------------------------------------------------------------------

cdef inline bint is_ascii(const uint8_t* p, Py_ssize_t n) noexcept nogil:
    """Whether no byte of ``p[:n]`` has its high bit set, eight bytes at a time."""
    cdef Py_ssize_t i = 0
    cdef uint64_t word, high = 0
    while i + 8 <= n:
        memcpy(&word, p + i, 8)
        high |= word
        i += 8
    while i < n:
        high |= p[i]
        i += 1
    return (high & <uint64_t>0x8080808080808080) == 0


# -- a growable buffer -----------------------------------------------------------------------------------------

# Items of ``itemsize`` bytes, appended while their final count is unknown, kept in a bytearray that is itself
# the finished buffer: grow_take hands it over (to NumPy's frombuffer or pyarrow's py_buffer) without a copy.
# A leader's second generation appends millions of owned partitions at 1M partitions, and a copy at the end
# would cost the copy plus a page fault per 4 KiB it touches.  Embed one in a cdef class (its __dealloc__
# calls grow_free) or keep it local under try/finally.
cdef struct Growable:
    PyObject* storage   # the bytearray (owned), or NULL before the first item
    char* data          # its bytes
    Py_ssize_t n        # items used
    Py_ssize_t cap      # bytes allocated
    Py_ssize_t itemsize


cdef inline void grow_init(Growable* g, Py_ssize_t itemsize) noexcept:
    g.storage, g.data, g.n, g.cap, g.itemsize = NULL, NULL, 0, 0, itemsize


cdef inline void grow_free(Growable* g) noexcept:
    Py_XDECREF(g.storage)
    g.storage, g.data, g.n, g.cap = NULL, NULL, 0, 0


cdef inline int grow_resize(Growable* g, Py_ssize_t size) except -1:
    """Make the storage exactly ``size`` bytes (the items past it are dropped)."""
    cdef object fresh
    if g.storage == NULL:
        fresh = PyByteArray_FromStringAndSize(NULL, size)
        Py_INCREF(fresh)
        g.storage = <PyObject*>fresh
    else:
        PyByteArray_Resize(<object>g.storage, size)
    g.data, g.cap = PyByteArray_AS_STRING(<object>g.storage), size
    return 0


cdef inline char* grow_extend(Growable* g, Py_ssize_t items) except NULL:
    """Room for ``items`` more items, counted as used; the caller fills them."""
    cdef Py_ssize_t need = (g.n + items) * g.itemsize
    if need > g.cap or g.data == NULL:  # NULL would read as an error to the caller
        grow_resize(g, max(need, 2 * g.cap, 64))
    cdef char* at = g.data + g.n * g.itemsize
    g.n += items
    return at


cdef inline int grow_push_u8(Growable* g, uint8_t value) except -1:
    (<uint8_t*>grow_extend(g, 1))[0] = value
    return 0


cdef inline int grow_push_i32(Growable* g, int32_t value) except -1:
    (<int32_t*>grow_extend(g, 1))[0] = value
    return 0


cdef inline int grow_push_i64(Growable* g, int64_t value) except -1:
    (<int64_t*>grow_extend(g, 1))[0] = value
    return 0


cdef inline object grow_take(Growable* g):
    """The items as a bytearray of exactly their bytes, handed over: ``g`` is empty after it."""
    grow_resize(g, g.n * g.itemsize)
    cdef object out = <object>g.storage
    grow_free(g)
    return out
