# The compiled twin's decompression of snappy, LZ4 and zstd records (included by _records_c.pyx): one library
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


cdef extern from "Python.h":
    int PyBUF_WRITE
    char* PyByteArray_AS_STRING(object)

cdef object _snappy_len = None, _snappy_into = None  # cramjam's, looked up once

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
            if size < 0 or size > limit - total:
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
