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
    if p + 1 < limit and b[p + 1] < 0x80:  # two bytes: a record's length, a value's of up to 8 KiB
        v = (b[p] & 0x7F) | (<uint32_t>b[p + 1] << 7)
        pos[0] = p + 2
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
    if p < limit and b[p] < 0x80:  # one byte: a record's timestamp delta, mostly
        v = b[p]
        pos[0] = p + 1
        out[0] = <int64_t>((v >> 1) ^ (0 - (v & 1)))
        return 0
    if p + 1 < limit and b[p + 1] < 0x80:  # two bytes: a record's length, a value's of up to 8 KiB
        v = (b[p] & 0x7F) | (<uint64_t>b[p + 1] << 7)
        pos[0] = p + 2
        out[0] = <int64_t>((v >> 1) ^ (0 - (v & 1)))
        return 0
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


# --- Compressed frames' headers ------------------------------------------------------------------------------------
# The first capacity for decompressing an LZ4 or zstd frame: _records_common._frame_content_size in C (the twins
# make the same first attempt), which the compiled twin reads without a Python call per batch.

cdef inline uint32_t rd_le32(const unsigned char* p) noexcept nogil:
    return p[0] | (<uint32_t>p[1] << 8) | (<uint32_t>p[2] << 16) | (<uint32_t>p[3] << 24)


cdef uint64_t _lz4_frame_guess(const unsigned char* p, Py_ssize_t n) noexcept nogil:
    cdef Py_ssize_t pos
    cdef uint64_t total = 0, block_max, size, check
    cdef unsigned char flg
    cdef int bd
    if n < 7 or memcmp(p, b"\x04\x22\x4d\x18", 4) != 0:
        return 0
    flg = p[4]
    if flg & 0x08:  # the content size
        return (<uint64_t>rd_le32(p + 10) << 32) | rd_le32(p + 6) if n >= 15 else 0
    bd = (p[5] >> 4) & 7  # the block maximum: 4 is 64 KiB, 5 256 KiB, 6 1 MiB, 7 4 MiB
    if bd < 4:
        return 0
    block_max = <uint64_t>1 << (16 + 2 * (bd - 4))
    pos = 7 + (4 if flg & 0x01 else 0)
    check = 4 if flg & 0x10 else 0
    while pos + 4 <= n:
        size = rd_le32(p + pos)
        pos += 4
        if not size:
            return min(total, 16 * <uint64_t>n + 4096)  # _records_common.lz4_guess
        if size >> 31:  # stored uncompressed
            size &= 0x7FFFFFFF
            total += size
        else:
            total += min(block_max, 255 * size)
        pos += size + check
    return 0


cdef bint _zstd_header(const unsigned char* p, Py_ssize_t n, uint64_t* window, int64_t* size,
                       Py_ssize_t* length) noexcept nogil:
    """_records_common._zstd_header: whether ``p[:n]`` starts a zstd frame; its window (0 for a single segment),
    announced content size (-1 for none) and header size."""
    cdef int fhd, single, width, pos, i
    cdef uint64_t v = 0, base
    if n < 6 or memcmp(p, b"\x28\xb5\x2f\xfd", 4) != 0:
        return False
    fhd = p[4]
    single = (fhd >> 5) & 1
    window[0] = 0
    if not single:
        base = <uint64_t>1 << (10 + (p[5] >> 3))
        window[0] = base + (base >> 3) * (p[5] & 7)
    pos = 5 + (0 if single else 1) + ((1 << (fhd & 3)) >> 1)  # the window byte, the dictionary id (0, 1, 2 or 4)
    width = (1 << (fhd >> 6)) if fhd >> 6 else single  # the content size: 0 (1 if single segment), 2, 4 or 8
    length[0] = pos + width
    size[0] = -1 if not width else 0
    if width and n >= pos + width:
        for i in range(width):
            v |= <uint64_t>p[pos + i] << (8 * i)
        size[0] = <int64_t>(v + 256 if width == 2 else v)
    return True


cdef uint64_t frame_size_guess(int codec, const unsigned char* p, Py_ssize_t n) noexcept nogil:
    """_records_common._frame_content_size: the size an LZ4 (3) or zstd (4) frame announces or its blocks bound
    (LZ4), or 0."""
    cdef uint64_t window
    cdef int64_t size
    cdef Py_ssize_t length
    if codec == 3:
        return _lz4_frame_guess(p, n)
    if codec != 4 or not _zstd_header(p, n, &window, &size, &length) or n < length or size < 0:
        return 0
    return <uint64_t>size


cdef enum:
    ZSTD_WINDOW_MAX = 1 << 27  # _records_common.ZSTD_WINDOW_MAX


cdef Py_ssize_t zstd_capacity(const unsigned char* p, Py_ssize_t n, Py_ssize_t limit) noexcept nogil:
    """_records_common.zstd_capacity: the output buffer python-zstandard may decompress the zstd frame ``p[:n]``
    into, or 0 when it is not asked."""
    cdef uint64_t window, bound
    cdef int64_t size
    cdef Py_ssize_t length
    if not _zstd_header(p, n, &window, &size, &length) or window > ZSTD_WINDOW_MAX or n < length:
        return 0
    bound = min(<uint64_t>limit, 64 * <uint64_t>n + 65536)
    if size < 0:
        return <Py_ssize_t>bound
    return <Py_ssize_t>size if <uint64_t>size <= bound else 0  # an announced 0 is 0 too: not asked
