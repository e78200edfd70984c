# The compiled twin's decompression of gzip, snappy, LZ4 and zstd records (included by _records_c.pyx): one library
# call per block on the payload where it lies, into a buffer that is not zeroed first.  Each gives None where it
# does not decode the records plainly (a library error, a buffer too small, a limit reached, a framing it does not
# expect); _records_common.decompress then does the work as in the pure twin, so both give the same results and
# errors.  What this saves is Python: the calls, slices and copies of _records_common's loops, most of a small
# batch's decompression.

cdef object _lz4_into = None, _zstd_into = None  # cramjam's, looked up once


cdef _View _inflate(int codec, const unsigned char* b, Py_ssize_t start, Py_ssize_t end, Py_ssize_t limit):
    """LZ4 or zstd records decompressed by one library call into a buffer sized as _records_common.decompress
    sizes its first (zstd_capacity for python-zstandard's kept context, else frame_size_guess), or None: then
    _records_common.decompress does the work, growing the buffer or raising its errors, so both twins give the
    same results and errors.  What this saves is Python: a call per batch, the copy of the payload (the library
    reads it where it is) and the zeroing of the buffer (a bytearray made with no content is not zeroed), half
    of a small batch's decompression."""
    global _lz4_into, _zstd_into
    cdef Py_ssize_t n = end - start, capacity, got
    cdef uint64_t hint
    cdef _View view
    if codec == ZSTD:
        capacity = zstd_capacity(b + start, n, limit)
        if capacity:
            out = zstd_with_context(PyMemoryView_FromMemory(<char*>b + start, n, PyBUF_READ), capacity)
            if out is not None:
                return _View(out)
    hint = frame_size_guess(codec, b + start, n)
    if _lz4_into is None:
        cj = cramjam_module()
        _lz4_into, _zstd_into = cj.lz4.decompress_into, cj.zstd.decompress_into
    capacity = <Py_ssize_t>min(<uint64_t>limit, max(min(hint, 64 * <uint64_t>n + 65536), 4 * <uint64_t>n + 1024))
    out = PyByteArray_FromStringAndSize(NULL, capacity + 1)  # the spare byte, as _into: full means too small
    try:
        got = (_lz4_into if codec == LZ4 else _zstd_into)(
            PyMemoryView_FromMemory(<char*>b + start, n, PyBUF_READ), out)
    except Exception:
        return None
    if not 0 <= got <= capacity:
        return None
    view = _View(out)
    view.n = got
    return view


from kwire.codec._records_common import GZIP_ISAL_FROM, isal_decompressobj

cdef object _decompressobj = None, _isal_decompressobj = None  # zlib's and python-isal's, looked up once
cdef Py_ssize_t _isal_from = GZIP_ISAL_FROM


cdef _View _gunzip(const unsigned char* b, Py_ssize_t start, Py_ssize_t end, Py_ssize_t limit):
    """Gzip records as _records_common._gzip reads them when they are one gzip member, decompressed by one
    library call on the payload where it lies (python-isal's from GZIP_ISAL_FROM bytes where it is installed, else
    zlib's), or None (several members, a fault, the limit reached): then _records_common._gzip does the work with
    zlib and raises its errors.  What this saves is the copies of the payload and of the records, half of a
    one-record batch's decompression, and with python-isal half of a larger batch's inflate."""
    global _decompressobj, _isal_decompressobj
    cdef Py_ssize_t n = end - start, cap = limit
    if _decompressobj is None:
        import zlib

        _decompressobj, _isal_decompressobj = zlib.decompressobj, isal_decompressobj()
    # The size one member's trailer gives (ISIZE), which the library checks: the reader stops one byte beyond it
    # and beyond the limit (the caller's path then reports what the records really are).  Bounded so, python-isal
    # sizes its output from the start: bounded by the limit alone, it made an output of megabytes from fresh pages
    # on every call.
    if n >= 4 and rd_le32(b + end - 4) < <uint64_t>cap:
        cap = rd_le32(b + end - 4)
    d = (_isal_decompressobj if n >= _isal_from and _isal_decompressobj is not None else _decompressobj)(31)
    try:
        # (0 is no bound: no limit is beyond the largest size there can be.)
        out = d.decompress(PyMemoryView_FromMemory(<char*>b + start, n, PyBUF_READ),
                           cap + 1 if cap < PY_SSIZE_T_MAX else 0)
    except Exception:
        return None
    if type(out) is not bytes or PyBytes_GET_SIZE(out) > cap or not d.eof or d.unused_data:
        return None
    return _View(out)


cdef extern from "Python.h":
    int PyBUF_WRITE
    char* PyByteArray_AS_STRING(object)

cdef object _snappy_len = None, _snappy_into = None  # cramjam's, looked up once
cdef Py_ssize_t _snappy_ratio = SNAPPY_MAX_RATIO  # the most a raw block's bytes can hold, as a C number

cdef enum:
    XERIAL_HEADER_SIZE = 16  # _records_common.XERIAL_HEADER: the magic, the version, the minimum compatible version
    SNAPPY_BLOCKS_ON_STACK = 16  # blocks of 32 KiB of records: a batch of half a MiB


cdef _View _unsnappy(const unsigned char* b, Py_ssize_t start, Py_ssize_t end, Py_ssize_t limit):
    """Snappy records as _records_common._snappy reads them (snappy-java's stream of blocks, or one raw block as
    librdkafka writes it), or None.  Each block is read where it lies, its size asked of the library, and all of
    them decompressed into one buffer of their total size."""
    global _snappy_len, _snappy_into
    cdef const unsigned char* p = b + start
    cdef Py_ssize_t n = end - start, pos, size, count = 0, total = 0, got, i
    cdef Py_ssize_t stack[2 * SNAPPY_BLOCKS_ON_STACK]
    cdef Py_ssize_t* blocks = stack  # each block's position and compressed size
    cdef _View view
    if _snappy_len is None:
        cj = cramjam_module()
        _snappy_len, _snappy_into = cj.snappy.decompress_raw_len, cj.snappy.decompress_raw_into
    if n >= XERIAL_HEADER_SIZE and memcmp(p, b"\x82SNAPPY\x00", 8) == 0:
        pos = XERIAL_HEADER_SIZE
        while pos < n:  # the blocks' frame, checked in C; any fault is _records_common._snappy's to report
            if pos + 4 > n or <Py_ssize_t>rd_u32(p + pos) > n - pos - 4:
                return None
            count += 1
            pos += 4 + rd_u32(p + pos)
    else:
        count = 1
    if count > SNAPPY_BLOCKS_ON_STACK:
        blocks = <Py_ssize_t*>PyMem_Malloc(2 * count * sizeof(Py_ssize_t))
        if blocks == NULL:
            raise MemoryError()
    try:
        if count == 1 and (n < XERIAL_HEADER_SIZE or memcmp(p, b"\x82SNAPPY\x00", 8) != 0):
            blocks[0], blocks[1] = 0, n
        else:
            pos, i = XERIAL_HEADER_SIZE, 0
            while pos < n:
                blocks[2 * i], blocks[2 * i + 1] = pos + 4, rd_u32(p + pos)
                pos += 4 + blocks[2 * i + 1]
                i += 1
        sizes = []
        for i in range(count):
            size = _snappy_len(PyMemoryView_FromMemory(<char*>p + blocks[2 * i], blocks[2 * i + 1], PyBUF_READ))
            if size < 0 or size > limit - total or size > _snappy_ratio * blocks[2 * i + 1]:
                return None
            sizes.append(size)
            total += size
        out = PyByteArray_FromStringAndSize(NULL, total)
        pos = 0
        for i in range(count):
            size = sizes[i]
            got = _snappy_into(PyMemoryView_FromMemory(<char*>p + blocks[2 * i], blocks[2 * i + 1], PyBUF_READ),
                               PyMemoryView_FromMemory(PyByteArray_AS_STRING(out) + pos, size, PyBUF_WRITE))
            if got != size:
                return None
            pos += size
    except Exception:
        return None
    finally:
        if blocks != stack:
            PyMem_Free(blocks)
    view = _View(out)
    return view


# --- LZ4 frames ----------------------------------------------------------------------------------------------------
# cramjam's LZ4 frame call costs about 1.9 µs a call whatever the frame (a decompression context and its buffers),
# its raw block call 0.2 µs for a one-record batch's block.  So the compiled twin reads the frame itself (LZ4 frame
# format: its descriptor, header checksum, block sizes and checksums, end mark and content checksum, every check
# the frame decoder makes) and decompresses each block with the raw call.  It does so only for the frames Kafka's
# clients write, independent blocks and no dictionary; any other frame, and any fault, is cramjam's to read.

cdef enum:
    XXH_P1 = 0x9E3779B1
    XXH_P2 = 0x85EBCA77
    XXH_P3 = 0xC2B2AE3D
    XXH_P4 = 0x27D4EB2F
    XXH_P5 = 0x165667B1


cdef inline uint32_t _rotl(uint32_t x, int r) noexcept nogil:
    return (x << r) | (x >> (32 - r))


cdef inline uint32_t _xxh_round(uint32_t acc, const unsigned char* p) noexcept nogil:
    return _rotl(acc + rd_le32(p) * <uint32_t>XXH_P2, 13) * <uint32_t>XXH_P1


cdef uint32_t xxh32(const unsigned char* p, Py_ssize_t n) noexcept nogil:
    """xxHash32 of ``p[:n]`` with seed 0: the checksum of LZ4 frames."""
    cdef const unsigned char* end = p + n
    cdef uint32_t v1, v2, v3, v4, h
    if n >= 16:
        v1, v2, v3, v4 = <uint32_t>XXH_P1 + <uint32_t>XXH_P2, <uint32_t>XXH_P2, 0, 0 - <uint32_t>XXH_P1
        while end - p >= 16:
            v1, v2 = _xxh_round(v1, p), _xxh_round(v2, p + 4)
            v3, v4 = _xxh_round(v3, p + 8), _xxh_round(v4, p + 12)
            p += 16
        h = _rotl(v1, 1) + _rotl(v2, 7) + _rotl(v3, 12) + _rotl(v4, 18)
    else:
        h = <uint32_t>XXH_P5
    h += <uint32_t>n
    while end - p >= 4:
        h = _rotl(h + rd_le32(p) * <uint32_t>XXH_P3, 17) * <uint32_t>XXH_P4
        p += 4
    while p < end:
        h = _rotl(h + p[0] * <uint32_t>XXH_P5, 11) * <uint32_t>XXH_P1
        p += 1
    h ^= h >> 15
    h *= <uint32_t>XXH_P2
    h ^= h >> 13
    h *= <uint32_t>XXH_P3
    return h ^ (h >> 16)


cdef object _lz4_block_into = None  # cramjam's, looked up once


cdef _View _unlz4(const unsigned char* b, Py_ssize_t start, Py_ssize_t end, Py_ssize_t limit):
    """The records of an LZ4 frame of independent blocks, every checksum it carries checked, or None."""
    global _lz4_block_into
    cdef const unsigned char* p = b + start
    cdef Py_ssize_t n = end - start, pos, at, size, cap = 0, block_max, got, out_n = 0
    cdef uint64_t content = 0
    cdef int flg, bd
    cdef bint stored
    cdef _View view
    if n < 7 or memcmp(p, b"\x04\x22\x4d\x18", 4) != 0:
        return None
    flg, bd = p[4], p[5]
    # Version 01, independent blocks, no dictionary, the reserved bits clear, a block maximum of 64 KiB to 4 MiB.
    if flg & 0xC3 != 0x40 or not flg & 0x20 or bd & 0x8F or (bd >> 4) < 4:
        return None
    block_max = <Py_ssize_t>1 << (16 + 2 * ((bd >> 4) - 4))
    pos = 6 + (8 if flg & 0x08 else 0)  # after the content size, if any
    if pos + 1 > n or (xxh32(p + 4, pos - 4) >> 8) & 0xFF != p[pos]:
        return None
    if flg & 0x08:
        content = (<uint64_t>rd_le32(p + 10) << 32) | rd_le32(p + 6)
    pos += 1
    at = pos
    while True:  # the blocks' frame and checksums, and the most their records can be
        if pos + 4 > n:
            return None
        size = rd_le32(p + pos) & 0x7FFFFFFF
        stored = rd_le32(p + pos) >> 31
        pos += 4
        if not size and not stored:
            break
        if size > block_max or size + (4 if flg & 0x10 else 0) > n - pos:
            return None
        if flg & 0x10 and xxh32(p + pos, size) != rd_le32(p + pos + size):
            return None
        cap += size if stored else min(block_max, 255 * size)
        pos += size + (4 if flg & 0x10 else 0)
    if pos + (4 if flg & 0x04 else 0) != n:
        return None  # bytes after the frame (another frame?), or a content checksum cut short
    # The first attempt's bounds (_into): the limit, and 64 times the input.
    cap = min(cap, limit, 64 * n + 65536)
    if flg & 0x08:
        if content > <uint64_t>cap:
            return None
        cap = <Py_ssize_t>content
    if _lz4_block_into is None:
        _lz4_block_into = cramjam_module().lz4.decompress_block_into
    out = PyByteArray_FromStringAndSize(NULL, cap)
    pos = at
    try:
        while True:
            size = rd_le32(p + pos) & 0x7FFFFFFF
            stored = rd_le32(p + pos) >> 31
            pos += 4
            if not size and not stored:
                break
            if stored:
                if size > cap - out_n:
                    return None
                memcpy(PyByteArray_AS_STRING(out) + out_n, p + pos, size)
                got = size
            else:
                got = min(block_max, cap - out_n)
                got = _lz4_block_into(PyMemoryView_FromMemory(<char*>p + pos, size, PyBUF_READ),
                                      PyMemoryView_FromMemory(PyByteArray_AS_STRING(out) + out_n, got, PyBUF_WRITE),
                                      output_len=got)
            out_n += got
            pos += size + (4 if flg & 0x10 else 0)
    except Exception:
        return None
    if flg & 0x08 and <uint64_t>out_n != content:
        return None
    if flg & 0x04 and xxh32(<const unsigned char*>PyByteArray_AS_STRING(out), out_n) != rd_le32(p + pos):
        return None
    view = _View(out)
    view.n = out_n
    return view
