# Included by _leader_c.pyx: ConsumerProtocolSubscription bytes and eager sticky userData read into columns.

# ---------------------------------------------------------------------------
# ConsumerProtocolSubscription bytes -> columns
# ---------------------------------------------------------------------------
# A second reader of the Subscription layout beside the codec's, because the
# codec builds a str per topic and an int per owned partition, and on a
# second-generation cooperative group (every member's bytes differ) that is
# most of the leader's time.  This one writes ints straight into columns and
# makes a str only the first time a topic name's bytes are seen.  It decides
# only *whether* the bytes are good: on bad bytes it hands them to the codec,
# so the error (type, text, offset, path) is the codec's own.  The layout is
# the codec schema's ConsumerProtocolSubscription, never flexible:
#
#     int16  version (a newer one is read with the v3 layout, bytes after it ignored)
#     int32  topic count, then per topic an int16 length and UTF-8 bytes
#     int32  userData length (-1: null), then the bytes
#     v1+: int32 owned entry count, then per entry: int16 length + topic,
#          int32 partition count, then each partition as int32
#     v2+: int32 generationId        v3+: int16 rackId length (-1: null) + UTF-8
#
# tests/test_leader_path.py holds the schema to this list and both twins'
# columns to the codec's decode of random and broken bytes at every version.

cdef enum:
    NEWEST_LAYOUT = 3


@cython.final
cdef class _Columns:
    """The int32 and int64 columns of one read, each of unknown final length until the read ends (a
    Growable: the finished column is NumPy's array over its storage, uncopied); freed with this object
    unless :meth:`array` handed one over.  The Subscription reader uses all ten, the userData reader
    ``owned_ptr``, ``owned_topic`` and ``owned_partition``."""
    cdef Growable version, topic_list, generation, list_ptr, list_topic, entry_ptr, entry_topic
    cdef Growable owned_ptr, owned_topic, owned_partition

    def __cinit__(self):
        grow_init(&self.version, 4)
        grow_init(&self.topic_list, 4)
        grow_init(&self.generation, 4)
        grow_init(&self.list_ptr, 8)
        grow_init(&self.list_topic, 4)
        grow_init(&self.entry_ptr, 8)
        grow_init(&self.entry_topic, 4)
        grow_init(&self.owned_ptr, 8)
        grow_init(&self.owned_topic, 4)
        grow_init(&self.owned_partition, 4)

    def __dealloc__(self):
        grow_free(&self.version)
        grow_free(&self.topic_list)
        grow_free(&self.generation)
        grow_free(&self.list_ptr)
        grow_free(&self.list_topic)
        grow_free(&self.entry_ptr)
        grow_free(&self.entry_topic)
        grow_free(&self.owned_ptr)
        grow_free(&self.owned_topic)
        grow_free(&self.owned_partition)


cdef object _array(Growable* column):
    """``column`` as a NumPy array on the column's own storage (the column is done with it)."""
    dtype = np.int32 if column.itemsize == 4 else np.int64
    return np.frombuffer(grow_take(column), dtype=dtype)


cdef inline uint64_t _load64(const uint8_t* p) noexcept nogil:
    cdef uint64_t word
    memcpy(&word, p, 8)  # a fixed-size copy: one unaligned load
    return word


cdef inline uint64_t _load32(const uint8_t* p) noexcept nogil:
    cdef uint32_t word
    memcpy(&word, p, 4)
    return word


cdef inline uint64_t _name_hash(const uint8_t* name, int32_t length) noexcept nogil:
    """A hash of a topic name read a word at a time.  A second generation
    looks up a name per owned entry (900k at 1M partitions), and a byte at a
    time (FNV) cost more than the rest of its reading.  Words may overlap
    (the last one ends at the name's end): the hash is still a function of
    the bytes and the length."""
    cdef uint64_t h = <uint64_t>length * 0x9E3779B97F4A7C15ULL
    cdef int32_t i
    if length >= 8:
        for i in range(0, length - 8, 8):
            h = (h ^ _load64(name + i)) * 0xFF51AFD7ED558CCDULL
            h ^= h >> 32
        h = (h ^ _load64(name + length - 8)) * 0xFF51AFD7ED558CCDULL
    elif length >= 4:
        h = (h ^ ((_load32(name) << 32) | _load32(name + length - 4))) * 0xFF51AFD7ED558CCDULL
    elif length > 0:
        h = (h ^ ((<uint64_t>name[0] << 16) | (<uint64_t>name[length // 2] << 8) | name[length - 1])) \
            * 0xFF51AFD7ED558CCDULL
    # The table takes the low bits: fold the high ones in.
    h ^= h >> 33
    h *= 0xC4CEB9FE1A85EC53ULL
    h ^= h >> 33
    return h


cdef inline bint _same_name(const uint8_t* a, const uint8_t* b, int32_t length) noexcept nogil:
    """``memcmp(a, b, length) == 0``, names of up to 16 bytes compared in
    (overlapping) words rather than through the library call."""
    if length > 16:
        return memcmp(a, b, length) == 0
    if length >= 8:
        return _load64(a) == _load64(b) and _load64(a + length - 8) == _load64(b + length - 8)
    if length >= 4:
        return _load32(a) == _load32(b) and _load32(a + length - 4) == _load32(b + length - 4)
    return length == 0 or (a[0] == b[0] and a[length // 2] == b[length // 2] and a[length - 1] == b[length - 1])


@cython.final
cdef class _TopicIds:
    """Topic name bytes -> topic id, ids in order of first appearance.

    Keyed by the bytes (pointers into the caller's metadata, alive for the
    read, or into a given name's UTF-8, alive with the str), so a name seen
    before costs a hash and a memcmp, and no str."""
    cdef list names
    cdef const uint8_t** name_at
    cdef int32_t* name_length
    cdef int32_t* slots  # topic id, or -1 for an empty slot
    cdef Py_ssize_t mask, count, room

    def __cinit__(self):
        self.names = []
        self.mask = 255
        self.slots = <int32_t*>PyMem_Malloc((self.mask + 1) * sizeof(int32_t))
        if self.slots == NULL:
            raise MemoryError()
        memset(self.slots, 0xFF, (self.mask + 1) * sizeof(int32_t))

    def __dealloc__(self):
        PyMem_Free(self.slots)
        PyMem_Free(self.name_at)
        PyMem_Free(self.name_length)

    cdef int32_t id_of(self, const uint8_t* name, int32_t length) except -2:
        """The id of ``name``, or -1 if it is not UTF-8 (the codec refuses it)."""
        cdef Py_ssize_t slot = self._slot(name, length)
        if self.slots[slot] >= 0:
            return self.slots[slot]
        try:
            text = PyUnicode_DecodeUTF8(<const char*>name, length, NULL)
        except UnicodeDecodeError:
            return -1
        return self._add(text, name, length, slot)

    cdef int seed(self, str text) except -1:
        """Give ``text`` the next id, as if its UTF-8 had been read (its bytes
        live as long as the str, which ``names`` holds).  A name given twice
        takes a second id that no lookup finds, so ids stay positions in ``names``."""
        cdef Py_ssize_t length
        cdef const uint8_t* name = <const uint8_t*>PyUnicode_AsUTF8AndSize(text, &length)
        cdef Py_ssize_t slot = self._slot(name, <int32_t>length)
        self._add(text, name, <int32_t>length, slot if self.slots[slot] < 0 else -1)
        return 0

    cdef inline Py_ssize_t _slot(self, const uint8_t* name, int32_t length) noexcept:
        """The slot holding ``name``'s id, or the empty slot where it would go."""
        cdef int32_t t
        cdef Py_ssize_t slot = <Py_ssize_t>(_name_hash(name, length) & <uint64_t>self.mask)
        while True:
            t = self.slots[slot]
            if t < 0 or (self.name_length[t] == length and _same_name(self.name_at[t], name, length)):
                return slot
            slot = (slot + 1) & self.mask

    cdef int32_t _add(self, str text, const uint8_t* name, int32_t length, Py_ssize_t slot) except -1:
        """The next id for ``text`` (whose UTF-8 is ``name``), put in ``slot`` (-1: in none)."""
        cdef int32_t t = <int32_t>self.count
        if self.count == self.room:
            self._grow_names()
        self.name_at[t] = name
        self.name_length[t] = length
        self.names.append(text)
        self.count += 1
        if slot >= 0:
            self.slots[slot] = t
        if 2 * self.count > self.mask:
            self._rehash(2 * self.mask + 1)
        return t

    cdef int truncate(self, Py_ssize_t count) except -1:
        """Forget every id from ``count`` on (names read from bytes that turned out bad)."""
        if count == self.count:
            return 0
        del self.names[count:]
        self.count = count
        return self._rehash(self.mask)

    cdef int _grow_names(self) except -1:
        cdef Py_ssize_t room = max(2 * self.room, 64)
        cdef const uint8_t** at = <const uint8_t**>PyMem_Realloc(self.name_at, room * sizeof(uint8_t*))
        if at == NULL:
            raise MemoryError()
        self.name_at = at
        cdef int32_t* lengths = <int32_t*>PyMem_Realloc(self.name_length, room * sizeof(int32_t))
        if lengths == NULL:
            raise MemoryError()
        self.name_length = lengths
        self.room = room
        return 0

    cdef int _rehash(self, Py_ssize_t mask) except -1:
        """The ids in a table of ``mask + 1`` slots, made anew."""
        cdef int32_t* slots = <int32_t*>PyMem_Malloc((mask + 1) * sizeof(int32_t))
        if slots == NULL:
            raise MemoryError()
        memset(slots, 0xFF, (mask + 1) * sizeof(int32_t))
        cdef Py_ssize_t t, slot
        for t in range(self.count):
            slot = <Py_ssize_t>(_name_hash(self.name_at[t], self.name_length[t]) & <uint64_t>mask)
            while slots[slot] >= 0:
                slot = (slot + 1) & mask
            slots[slot] = <int32_t>t
        PyMem_Free(self.slots)
        self.slots, self.mask = slots, mask
        return 0


cdef int _refuse(object raw) except -1:
    """Raise the codec's error for bytes this reader found bad."""
    codec.Subscription.decode(raw)
    raise AssertionError(f"kwire bug: the Subscription reader refused bytes the codec reads: {raw!r}")


ctypedef struct _Cursor:
    const uint8_t* p
    Py_ssize_t pos
    Py_ssize_t end


cdef inline int64_t _fitting_count(_Cursor* c, Py_ssize_t min_size) noexcept nogil:
    """An int32 array count, the cursor moved past it; -1 when truncated,
    null, negative, or more elements of ``min_size`` bytes than are left."""
    if c.end - c.pos < 4:
        return -1
    cdef int64_t n = <int32_t>get_be32(c.p + c.pos)
    c.pos += 4
    if n < 0 or n > (c.end - c.pos) // min_size:
        return -1
    return n


cdef inline int64_t _count(_Cursor* c, Py_ssize_t min_size, object raw) except -1:
    """An int32 array count; refused (the codec's error) where :func:`_fitting_count` finds none."""
    cdef int64_t n = _fitting_count(c, min_size)
    if n < 0:
        _refuse(raw)
    return n


cdef inline int64_t _length(_Cursor* c, bint wide, object raw) except -2:
    """A nullable string's (int16) or bytes' (``wide``: int32) length, -1
    for null, the cursor moved to its content; refused where the codec refuses it."""
    if c.end - c.pos < (4 if wide else 2):
        _refuse(raw)
    cdef int64_t n = <int32_t>get_be32(c.p + c.pos) if wide else <int16_t>get_be16(c.p + c.pos)
    c.pos += 4 if wide else 2
    if n < -1 or n > c.end - c.pos:
        _refuse(raw)
    return n


cdef inline int32_t _topic(_Cursor* c, _TopicIds ids, object raw) except -1:
    """The id of the topic name at the cursor; refused where the codec refuses it."""
    cdef int64_t n = _length(c, 0, raw)
    if n < 0:  # null is no topic name either
        _refuse(raw)
    c.pos += n
    cdef int32_t t = ids.id_of(c.p + c.pos - n, <int32_t>n)
    if t < 0:
        _refuse(raw)
    return t


cdef inline int _partitions(_Cursor* c, int32_t t, int64_t count, Growable* topic, Growable* partition) except -1:
    """The ``count`` int32 partitions at the cursor (known to be there) onto
    the columns, each with topic ``t``."""
    cdef int32_t* topic_out = <int32_t*>grow_extend(topic, count)
    cdef int32_t* partition_out = <int32_t*>grow_extend(partition, count)
    cdef int64_t j
    for j in range(count):
        topic_out[j] = t
        partition_out[j] = <int32_t>get_be32(c.p + c.pos)
        c.pos += 4
    return 0


def subscription_columns(list metadata):
    """Each byte string of ``metadata`` (bytes, or views :func:`_span` takes) read into
    :class:`SubscriptionColumns`; bad bytes raise the codec's error."""
    cdef Py_ssize_t rows = len(metadata)
    cdef _TopicIds ids = _TopicIds()
    cdef _Columns col = _Columns()
    cdef list racks = [None] * rows, user_data = [None] * rows
    # The previous row's topics array (count and names, as bytes): a row that
    # starts with the same bytes has the same topics, so nothing in it is read.
    cdef const uint8_t* last_topics = NULL
    cdef Py_ssize_t last_topics_size = -1
    cdef Py_ssize_t k, i, start
    cdef int64_t n
    cdef int32_t t, layout
    cdef int16_t written_version
    cdef _Cursor c
    cdef object raw
    cdef Py_ssize_t size
    grow_push_i64(&col.list_ptr, 0)
    grow_push_i64(&col.entry_ptr, 0)
    grow_push_i64(&col.owned_ptr, 0)
    for k in range(rows):
        raw = metadata[k]
        if not _span(raw, &c.p, &size):
            raw = bytes(raw)
            _span(raw, &c.p, &size)
        c.pos, c.end = 2, size
        if c.end < 2:
            _refuse(raw)
        written_version = <int16_t>get_be16(c.p)
        if written_version < 0:
            _refuse(raw)
        layout = min(<int32_t>written_version, <int32_t>NEWEST_LAYOUT)
        if (last_topics != NULL and c.end - c.pos >= last_topics_size
                and memcmp(c.p + c.pos, last_topics, last_topics_size) == 0):
            c.pos += last_topics_size
        else:
            start = c.pos
            for i in range(_count(&c, 2, raw)):
                grow_push_i32(&col.list_topic, _topic(&c, ids, raw))
            grow_push_i64(&col.list_ptr, col.list_topic.n)
            last_topics, last_topics_size = c.p + start, c.pos - start
        grow_push_i32(&col.topic_list, <int32_t>(col.list_ptr.n - 2))
        n = _length(&c, 1, raw)
        if n >= 0:
            user_data[k] = PyBytes_FromStringAndSize(<const char*>(c.p + c.pos), n)
            c.pos += n
        if layout >= 1:
            for i in range(_count(&c, 6, raw)):
                t = _topic(&c, ids, raw)
                grow_push_i32(&col.entry_topic, t)
                _partitions(&c, t, _count(&c, 4, raw), &col.owned_topic, &col.owned_partition)
        grow_push_i64(&col.entry_ptr, col.entry_topic.n)
        grow_push_i64(&col.owned_ptr, col.owned_topic.n)
        if layout >= 2:
            if c.end - c.pos < 4:
                _refuse(raw)
            grow_push_i32(&col.generation, <int32_t>get_be32(c.p + c.pos))
            c.pos += 4
        else:
            grow_push_i32(&col.generation, -1)
        if layout >= 3:
            n = _length(&c, 0, raw)
            if n >= 0:
                try:
                    racks[k] = PyUnicode_DecodeUTF8(<const char*>(c.p + c.pos), n, NULL)
                except UnicodeDecodeError:
                    _refuse(raw)
                c.pos += n
        if c.pos != c.end and written_version <= NEWEST_LAYOUT:
            _refuse(raw)
        grow_push_i32(&col.version, written_version)
    return SubscriptionColumns(
        ids.names, _array(&col.version), _array(&col.topic_list), _array(&col.list_ptr), _array(&col.list_topic),
        _array(&col.entry_ptr), _array(&col.entry_topic), _array(&col.owned_ptr), _array(&col.owned_topic),
        _array(&col.owned_partition), _array(&col.generation), racks, user_data,
    )


# ---------------------------------------------------------------------------
# Eager sticky userData -> claim columns
# ---------------------------------------------------------------------------
# Java reads StickyAssignorUserData leniently (_userdata: V1 then V0, bytes
# after the message ignored, a topic that is not UTF-8 read with replacement
# characters).  What every Java member sends is exactly one V1 message, and
# for those bytes every reading agrees: that case alone is read here, one
# int32 pair per claimed partition and no str but a topic's first.  A row is
# read only if the codec would decode all of it as V1; any other row is left
# unread, its claims and names undone, for the lenient reader.  The layout
# is the codec schema's StickyAssignorUserData at V1, never flexible:
#
#     int32  entry count, then per entry: int16 length + UTF-8 topic,
#            int32 partition count, then each partition as int32
#     int32  generation, then nothing


cdef int _sticky_v1(_Cursor* c, _TopicIds ids, Growable* topic, Growable* partition,
                    int32_t* generation) except -1:
    """1 if ``c`` holds exactly one V1 message, read into the columns; 0
    where the codec would refuse the bytes (what was written stays for the
    caller to undo)."""
    cdef int64_t entries, length, count, i
    cdef int32_t t
    entries = _fitting_count(c, 6)  # an entry takes at least 6 bytes
    if entries < 0:
        return 0
    for i in range(entries):
        if c.end - c.pos < 2:
            return 0
        length = <int16_t>get_be16(c.p + c.pos)
        c.pos += 2
        if length < 0 or length > c.end - c.pos:
            return 0
        t = ids.id_of(c.p + c.pos, <int32_t>length)
        if t < 0:
            return 0
        c.pos += length
        count = _fitting_count(c, 4)
        if count < 0:
            return 0
        _partitions(c, t, count, topic, partition)
    if c.end - c.pos != 4:
        return 0
    generation[0] = <int32_t>get_be32(c.p + c.pos)
    return 1


def sticky_userdata_columns(list user_data, list names):
    """Each userData of ``user_data`` that is exactly one V1 message, read
    into :class:`StickyUserDataColumns`, topic ids continuing ``names``
    (distinct, as ``subscription_columns`` gives them)."""
    cdef Py_ssize_t rows = len(user_data), k, topics_before, names_before
    cdef _TopicIds ids = _TopicIds()
    cdef _Columns col = _Columns()
    cdef Growable* ptr = &col.owned_ptr
    cdef Growable* topic = &col.owned_topic
    cdef Growable* partition = &col.owned_partition
    read_arr = np.zeros(rows, dtype=bool)
    generation_arr = np.full(rows, -1, dtype=np.int32)
    cdef uint8_t[::1] read = read_arr.view(np.uint8)
    cdef int32_t[::1] generation = generation_arr
    cdef _Cursor c
    cdef object raw
    for name in names:
        ids.seed(name)
    grow_push_i64(ptr, 0)
    for k in range(rows):
        raw = user_data[k]
        if isinstance(raw, bytes):
            c.p, c.pos, c.end = <const uint8_t*>PyBytes_AS_STRING(raw), 0, PyBytes_GET_SIZE(raw)
            topics_before, names_before = topic.n, ids.count
            if _sticky_v1(&c, ids, topic, partition, &generation[k]):
                read[k] = 1
            else:
                topic.n = partition.n = topics_before
                ids.truncate(names_before)
        grow_push_i64(ptr, topic.n)
    return StickyUserDataColumns(
        read_arr, generation_arr, ClaimColumns(ids.names, _array(ptr), _array(topic), _array(partition)))
