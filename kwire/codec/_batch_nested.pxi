# Included by _batch_c.pyx: the batch's nested columns (protocols, topics,
# partition_counts, members, assignments, leaving, topic_ids, topic_partitions), built in Arrow's layout as
# rows are decoded.  The pure twin collects a Python list or dict per row and
# converts them all at the end; here each value goes straight into offsets,
# bytes and validity flags, so a row leaves nothing behind but its bytes.
#
# Every builder can be cut back to an earlier length: a row that a fast path
# starts and then declines (bad Subscription bytes, say) is undone and decoded
# again by the codec's path, which gives the pure twin's partial row and error.


cdef enum:
    UUID_TEXT_LENGTH = 22  # Kafka's text form of a Uuid: 16 bytes in unpadded base64

cdef const char* _URL_SAFE_BASE64 = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"


cdef inline void uuid_text_c(const unsigned char* raw, char* out) noexcept nogil:
    """``_batch_common.uuid_text`` of the 16 bytes at ``raw``, into ``out`` (22 bytes): five 3-byte groups of
    four characters, then the last byte's two."""
    cdef int k
    cdef unsigned int v
    for k in range(5):
        v = (<unsigned int>raw[3 * k] << 16) | (<unsigned int>raw[3 * k + 1] << 8) | raw[3 * k + 2]
        out[4 * k] = _URL_SAFE_BASE64[(v >> 18) & 63]
        out[4 * k + 1] = _URL_SAFE_BASE64[(v >> 12) & 63]
        out[4 * k + 2] = _URL_SAFE_BASE64[(v >> 6) & 63]
        out[4 * k + 3] = _URL_SAFE_BASE64[v & 63]
    out[20] = _URL_SAFE_BASE64[raw[15] >> 2]
    out[21] = _URL_SAFE_BASE64[(raw[15] & 3) << 4]


cdef object _buffer(Growable* values):
    """The values as a pyarrow buffer over their own storage, uncopied (the builder is done with them)."""
    return pa.py_buffer(grow_take(values))


cdef object _validity(Growable* valid, Py_ssize_t nulls):
    """Arrow's validity bitmap of one flag byte per value; None when all are valid."""
    if nulls == 0:
        return None
    flags = np.frombuffer(PyBytes_FromStringAndSize(valid.data, valid.n), np.uint8)
    return pa.py_buffer(np.packbits(flags, bitorder="little"))


cdef Py_ssize_t _nulls_from(Growable* valid, Py_ssize_t start) noexcept:
    cdef Py_ssize_t k, nulls = 0
    for k in range(start, valid.n):
        nulls += valid.data[k] == 0
    return nulls


cdef class _Values:
    """Values of one Arrow type, one after another, each a Python value or None."""
    cdef Py_ssize_t nulls

    cdef Py_ssize_t count(self) noexcept:
        return 0

    cdef int push(self, object value) except -1:
        return 0

    cdef int truncate(self, Py_ssize_t count) except -1:
        return 0

    cdef object array(self):
        return None


@cython.final
cdef class _Strs(_Values):
    """String values (str or None)."""
    cdef Growable offsets, data, valid

    def __cinit__(self):
        grow_init(&self.offsets, 4)
        grow_init(&self.data, 1)
        grow_init(&self.valid, 1)
        grow_push_i32(&self.offsets, 0)

    def __dealloc__(self):
        grow_free(&self.offsets)
        grow_free(&self.data)
        grow_free(&self.valid)

    cdef Py_ssize_t count(self) noexcept:
        return self.valid.n

    cdef int push(self, object value) except -1:
        cdef Py_ssize_t length
        cdef const char* p
        if value is None:
            grow_push_u8(&self.valid, 0)
            self.nulls += 1
            grow_push_i32(&self.offsets, <int32_t>self.data.n)
            return 0
        p = PyUnicode_AsUTF8AndSize(value, &length)
        return self.push_bytes(p, length)

    cdef int push_bytes(self, const char* p, Py_ssize_t length) except -1:
        """One string, the ``length`` bytes (valid UTF-8) at ``p``."""
        if self.data.n + length > INT32_MAX:
            raise OverflowError("more than 2 GiB of nested strings in one batch: "
                                "decode the capture in smaller batches")
        memcpy(grow_extend(&self.data, length), p, length)
        grow_push_u8(&self.valid, 1)
        grow_push_i32(&self.offsets, <int32_t>self.data.n)
        return 0

    cdef int truncate(self, Py_ssize_t count) except -1:
        self.nulls -= _nulls_from(&self.valid, count)
        self.valid.n = count
        self.offsets.n = count + 1
        self.data.n = (<int32_t*>self.offsets.data)[count]
        return 0

    cdef object array(self):
        return pa.Array.from_buffers(pa.string(), self.valid.n,
                                     [_validity(&self.valid, self.nulls), _buffer(&self.offsets), _buffer(&self.data)],
                                     self.nulls)


@cython.final
cdef class _I32s(_Values):
    """int32 values (int or None)."""
    cdef Growable data, valid

    def __cinit__(self):
        grow_init(&self.data, 4)
        grow_init(&self.valid, 1)

    def __dealloc__(self):
        grow_free(&self.data)
        grow_free(&self.valid)

    cdef Py_ssize_t count(self) noexcept:
        return self.valid.n

    cdef int push(self, object value) except -1:
        if value is None:
            grow_push_i32(&self.data, 0)
            grow_push_u8(&self.valid, 0)
            self.nulls += 1
        else:
            self.push_int(value)
        return 0

    cdef inline int push_int(self, int32_t value) except -1:
        grow_push_i32(&self.data, value)
        return grow_push_u8(&self.valid, 1)

    cdef int truncate(self, Py_ssize_t count) except -1:
        self.nulls -= _nulls_from(&self.valid, count)
        self.data.n = self.valid.n = count
        return 0

    cdef object array(self):
        return pa.Array.from_buffers(pa.int32(), self.valid.n, [_validity(&self.valid, self.nulls), _buffer(&self.data)],
                                     self.nulls)


@cython.final
cdef class _Lists:
    """The lists of a list child of a struct: each list's end among the
    values, and whether it is null."""
    cdef Growable ends, valid
    cdef Py_ssize_t nulls

    def __cinit__(self):
        grow_init(&self.ends, 4)
        grow_init(&self.valid, 1)
        grow_push_i32(&self.ends, 0)

    def __dealloc__(self):
        grow_free(&self.ends)
        grow_free(&self.valid)

    cdef int close(self, Py_ssize_t values_end, bint present) except -1:
        grow_push_i32(&self.ends, <int32_t>values_end)
        grow_push_u8(&self.valid, present)
        self.nulls += not present
        return 0

    cdef Py_ssize_t values_before(self, Py_ssize_t count) noexcept:
        return (<int32_t*>self.ends.data)[count]

    cdef int truncate(self, Py_ssize_t count) except -1:
        self.nulls -= _nulls_from(&self.valid, count)
        self.valid.n = count
        self.ends.n = count + 1
        return 0

    cdef object array(self, values, value_type):
        return pa.Array.from_buffers(pa.list_(value_type), self.valid.n,
                                     [_validity(&self.valid, self.nulls), _buffer(&self.ends)], self.nulls,
                                     children=[values])


cdef class _NestedColumn:
    """One nested column of a batch: the rows that have a value, in increasing
    order, each a list of elements that a subclass keeps; the other rows are
    null.  A row's list is opened by :meth:`mark`, filled by the subclass and
    closed by :meth:`close` (or undone by :meth:`undo`)."""
    cdef Growable rows, ends
    cdef object arrow_type

    def __cinit__(self):
        grow_init(&self.rows, 8)
        grow_init(&self.ends, 4)

    def __dealloc__(self):
        grow_free(&self.rows)
        grow_free(&self.ends)

    cdef Py_ssize_t elements(self) noexcept:
        return 0

    cdef int truncate_elements(self, Py_ssize_t count) except -1:
        return 0

    cdef object elements_array(self):
        return None

    cdef int push_element(self, object value) except -1:
        """One element as the pure twin's row holds it (a str, int or dict)."""
        return 0

    cdef inline Py_ssize_t mark(self) noexcept:
        return self.elements()

    cdef inline int close(self, Py_ssize_t row) except -1:
        grow_push_i64(&self.rows, row)
        grow_push_i32(&self.ends, <int32_t>self.elements())
        return 0

    cdef int undo(self, Py_ssize_t row, Py_ssize_t mark) except -1:
        """Forget everything written since ``mark`` was taken, row ``row``'s list included."""
        if self.rows.n and (<int64_t*>self.rows.data)[self.rows.n - 1] == row:
            self.rows.n -= 1
            self.ends.n -= 1
        return self.truncate_elements(mark)

    cdef int put_value(self, Py_ssize_t row, object values) except -1:
        """Row ``row`` holds ``values``, a list as the pure twin's row holds it."""
        for value in values:
            self.push_element(value)
        return self.close(row)

    def finish(self, Py_ssize_t n):
        """The column, ``n`` rows long, as a pyarrow array of ``arrow_type``."""
        cdef Py_ssize_t k = self.rows.n
        if k == 0:
            return pa.nulls(n, self.arrow_type)
        rows = np.frombuffer(grow_take(&self.rows), np.int64)
        ends = np.frombuffer(grow_take(&self.ends), np.int32)
        lengths = np.zeros(n, np.int32)
        lengths[rows] = np.diff(ends, prepend=np.int32(0))
        offsets = np.zeros(n + 1, np.int32)
        np.cumsum(lengths, out=offsets[1:])
        valid = np.zeros(n, np.uint8)
        valid[rows] = 1
        bitmap = None if k == n else pa.py_buffer(np.packbits(valid, bitorder="little"))
        return pa.Array.from_buffers(self.arrow_type, n, [bitmap, pa.py_buffer(offsets)], n - k,
                                     children=[self.elements_array()])


@cython.final
cdef class _ListColumn(_NestedColumn):
    """A column of lists of plain values: ``list<string>`` (protocols,
    topics, leaving) or ``list<int32>`` (partition_counts)."""
    cdef _Values values

    def __init__(self, arrow_type):
        self.arrow_type = arrow_type
        self.values = _Strs() if arrow_type.value_type == pa.string() else _I32s()

    cdef Py_ssize_t elements(self) noexcept:
        return self.values.count()

    cdef int truncate_elements(self, Py_ssize_t count) except -1:
        return self.values.truncate(count)

    cdef object elements_array(self):
        return self.values.array()

    cdef int push_element(self, object value) except -1:
        return self.values.push(value)


@cython.final
cdef class _MemberColumn(_NestedColumn):
    """The ``members`` column: a JoinGroup response's members, each its ids
    and subscribed topics (null when the protocol is not the consumer one)."""
    cdef _Strs member_id, group_instance_id, topic
    cdef _Lists topics

    def __init__(self, arrow_type):
        self.arrow_type = arrow_type
        self.member_id, self.group_instance_id, self.topic = _Strs(), _Strs(), _Strs()
        self.topics = _Lists()

    cdef Py_ssize_t elements(self) noexcept:
        return self.member_id.count()

    cdef int truncate_elements(self, Py_ssize_t count) except -1:
        self.member_id.truncate(count)
        self.group_instance_id.truncate(count)
        self.topic.truncate(self.topics.values_before(count))
        return self.topics.truncate(count)

    cdef int add(self, object member_id, object group_instance_id, object topics) except -1:
        """One member; ``topics`` a list of str, or None."""
        self.member_id.push(member_id)
        self.group_instance_id.push(group_instance_id)
        if topics is not None:
            for t in topics:
                self.topic.push(t)
        return self.topics.close(self.topic.count(), topics is not None)

    cdef int push_element(self, object value) except -1:
        return self.add(value["member_id"], value["group_instance_id"], value["topics"])

    cdef object elements_array(self):
        topic_type = self.arrow_type.value_type.field("topics").type.value_type
        return pa.StructArray.from_arrays(
            [self.member_id.array(), self.group_instance_id.array(), self.topics.array(self.topic.array(), topic_type)],
            fields=list(self.arrow_type.value_type))


@cython.final
cdef class _AssignmentColumn(_NestedColumn):
    """The ``assignments`` column: one element per (member, topic) of the
    Assignments a SyncGroup carries, with that topic's partitions."""
    cdef _Strs member_id, topic
    cdef _Lists partitions
    cdef _I32s partition

    def __init__(self, arrow_type):
        self.arrow_type = arrow_type
        self.member_id, self.topic = _Strs(), _Strs()
        self.partitions, self.partition = _Lists(), _I32s()

    cdef Py_ssize_t elements(self) noexcept:
        return self.member_id.count()

    cdef int truncate_elements(self, Py_ssize_t count) except -1:
        self.member_id.truncate(count)
        self.topic.truncate(count)
        self.partition.truncate(self.partitions.values_before(count))
        return self.partitions.truncate(count)

    cdef int add(self, object member_id, object topic, list partitions) except -1:
        self.member_id.push(member_id)
        self.topic.push(topic)
        for p in partitions:
            self.partition.push(p)
        return self.partitions.close(self.partition.count(), True)

    cdef int add_assignment(self, object member_id, object data) except -1:
        """Each topic of the Assignment bytes ``data`` (none when empty): the
        pure twin's ``_assignment_rows``."""
        if not len(data):
            return 0
        for tp in Assignment.decode(data).assigned_partitions:
            self.add(member_id, tp.topic, tp.partitions)
        return 0

    cdef int push_element(self, object value) except -1:
        return self.add(value["member_id"], value["topic"], value["partitions"])

    cdef object elements_array(self):
        return pa.StructArray.from_arrays(
            [self.member_id.array(), self.topic.array(), self.partitions.array(self.partition.array(), pa.int32())],
            fields=list(self.arrow_type.value_type))


@cython.final
cdef class _TopicPartitionsColumn(_NestedColumn):
    """The ``topic_partitions`` column: a ConsumerGroupHeartbeat's topics by id (Kafka's text form), each with
    its partitions."""
    cdef _Strs topic_id
    cdef _Lists partitions
    cdef _I32s partition

    def __init__(self, arrow_type):
        self.arrow_type = arrow_type
        self.topic_id, self.partitions, self.partition = _Strs(), _Lists(), _I32s()

    cdef Py_ssize_t elements(self) noexcept:
        return self.topic_id.count()

    cdef int truncate_elements(self, Py_ssize_t count) except -1:
        self.topic_id.truncate(count)
        self.partition.truncate(self.partitions.values_before(count))
        return self.partitions.truncate(count)

    cdef int add_wire(self, const unsigned char* uuid, const unsigned char* partitions, Py_ssize_t n) except -1:
        """One topic as the frame holds it: the Uuid's 16 bytes, and ``n`` big-endian int32 partitions."""
        cdef char text[UUID_TEXT_LENGTH]
        cdef Py_ssize_t k
        uuid_text_c(uuid, text)
        self.topic_id.push_bytes(text, UUID_TEXT_LENGTH)
        for k in range(n):
            self.partition.push_int(<int32_t>get_be32(partitions + 4 * k))
        return self.partitions.close(self.partition.count(), True)

    cdef int push_element(self, object value) except -1:
        self.topic_id.push(value["topic_id"])
        for p in value["partitions"]:
            self.partition.push(p)
        return self.partitions.close(self.partition.count(), True)

    cdef object elements_array(self):
        return pa.StructArray.from_arrays(
            [self.topic_id.array(), self.partitions.array(self.partition.array(), pa.int32())],
            fields=list(self.arrow_type.value_type))
