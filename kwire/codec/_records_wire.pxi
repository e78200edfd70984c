# Byte primitives of the record codec: big-endian fixed-width reads and writes, and Kafka's zigzag varints
# (ByteUtils.readVarint / readVarlong / writeVarint).  Kept together so they can move into a shared .pxd.
# The readers take a bound, never read at or past it, and report failure to their caller (-1), which knows what
# the bytes were and raises the error; they never raise themselves, so they stay inlinable and nogil.

from libc.stdint cimport int8_t, int16_t, int32_t, int64_t, uint16_t, uint32_t, uint64_t


cdef inline uint16_t rd_u16(const unsigned char* p) noexcept nogil:
    return (<uint16_t>p[0] << 8) | p[1]


cdef inline uint32_t rd_u32(const unsigned char* p) noexcept nogil:
    return (<uint32_t>p[0] << 24) | (<uint32_t>p[1] << 16) | (<uint32_t>p[2] << 8) | p[3]


cdef inline uint64_t rd_u64(const unsigned char* p) noexcept nogil:
    return (<uint64_t>rd_u32(p) << 32) | rd_u32(p + 4)


cdef inline void wr_u16(unsigned char* p, uint16_t v) noexcept nogil:
    p[0] = v >> 8
    p[1] = v & 0xFF


cdef inline void wr_u32(unsigned char* p, uint32_t v) noexcept nogil:
    p[0] = v >> 24
    p[1] = (v >> 16) & 0xFF
    p[2] = (v >> 8) & 0xFF
    p[3] = v & 0xFF


cdef inline void wr_u64(unsigned char* p, uint64_t v) noexcept nogil:
    wr_u32(p, <uint32_t>(v >> 32))
    wr_u32(p + 4, <uint32_t>v)


# Varint reads: 0 on success (value in *out, *pos advanced), 1 when the bound cuts the varint short, 2 when it runs
# past 5 (10) bytes.  The bits beyond 32 (64) of the last byte are dropped, as Java's readers drop them.

cdef inline int rd_varint(const unsigned char* b, Py_ssize_t* pos, Py_ssize_t limit, int32_t* out) noexcept nogil:
    cdef Py_ssize_t p = pos[0]
    cdef uint32_t v = 0
    cdef unsigned char c
    cdef int shift = 0
    if p < limit and b[p] < 0x80:  # one byte: most lengths and deltas
        v = b[p]
        pos[0] = p + 1
        out[0] = <int32_t>((v >> 1) ^ (0 - (v & 1)))
        return 0
    while True:
        if p >= limit:
            return 1
        c = b[p]
        p += 1
        v |= (<uint32_t>(c & 0x7F)) << shift
        if c < 0x80:
            break
        shift += 7
        if shift > 28:
            return 2
    pos[0] = p
    out[0] = <int32_t>((v >> 1) ^ (0 - (v & 1)))
    return 0


cdef inline int rd_varlong(const unsigned char* b, Py_ssize_t* pos, Py_ssize_t limit, int64_t* out) noexcept nogil:
    cdef Py_ssize_t p = pos[0]
    cdef uint64_t v = 0
    cdef unsigned char c
    cdef int shift = 0
    while True:
        if p >= limit:
            return 1
        c = b[p]
        p += 1
        v |= (<uint64_t>(c & 0x7F)) << shift
        if c < 0x80:
            break
        shift += 7
        if shift > 63:
            return 2
    pos[0] = p
    out[0] = <int64_t>((v >> 1) ^ (0 - (v & 1)))
    return 0


cdef inline int varint_size(int64_t value) noexcept nogil:
    cdef uint64_t v = (<uint64_t>value << 1) ^ <uint64_t>(value >> 63)
    cdef int n = 1
    while v >= 0x80:
        v >>= 7
        n += 1
    return n


cdef inline Py_ssize_t wr_varint(unsigned char* p, int64_t value) noexcept nogil:
    """Zigzag varint of ``value`` at ``p``; the number of bytes written (at most 10)."""
    cdef uint64_t v = (<uint64_t>value << 1) ^ <uint64_t>(value >> 63)
    cdef Py_ssize_t n = 0
    while v >= 0x80:
        p[n] = (v & 0x7F) | 0x80
        v >>= 7
        n += 1
    p[n] = <unsigned char>v
    return n + 1


cdef inline bint same_bytes(const char* a, const unsigned char* b, Py_ssize_t n) noexcept nogil:
    """Whether ``a[:n]`` and ``b[:n]`` hold the same bytes.  Short runs (header keys, ids) are compared as two
    overlapping words, without a call; longer ones check their last byte first, where ids and counters differ."""
    cdef uint64_t x, y, u, v
    cdef uint32_t x4, y4, u4, v4
    if n >= 8:
        if n <= 16:
            memcpy(&x, a, 8)
            memcpy(&y, b, 8)
            memcpy(&u, a + n - 8, 8)
            memcpy(&v, b + n - 8, 8)
            return x == y and u == v
        return <unsigned char>a[n - 1] == b[n - 1] and memcmp(a, b, n) == 0
    if n >= 4:
        memcpy(&x4, a, 4)
        memcpy(&y4, b, 4)
        memcpy(&u4, a + n - 4, 4)
        memcpy(&v4, b + n - 4, 4)
        return x4 == y4 and u4 == v4
    while n > 0:
        n -= 1
        if <unsigned char>a[n] != b[n]:
            return False
    return True
