# Included by _batch_c.pyx: the compiled twin's reading of ConsumerGroupHeartbeat (KIP-848) frames straight from
# the buffer, the bulk of a consumer-protocol capture.  Each reader checks the whole frame first and says 1
# only for one the codec reads without error (every string ASCII, every length in one varint byte, no tagged
# fields); the rows are then written from the positions it found (_batch_rows.pxi).  Anything else is declined
# to the codec's path, which gives the pure twin's row or error.  The layouts are the schema's
# (kwire/codec/_schema.py, CONSUMER_GROUP_HEARTBEAT_REQUEST and _RESPONSE): every version is flexible.


cdef struct ConsumerRequest:
    Span client_id, group_id, member_id, instance_id, regex, assignor
    int epoch, rebalance_timeout_ms
    Py_ssize_t topics_at      # SubscribedTopicNames' first element
    int topics_n              # their count, -1 for null (unchanged)
    Py_ssize_t owned_at       # TopicPartitions' first element
    int owned_n               # -1 for null (unchanged)


cdef struct ConsumerResponse:
    Span member_id
    short error_code
    int epoch, interval_ms
    Py_ssize_t assigned_at    # Assignment.TopicPartitions' first element
    int assigned_n            # -1 for a null Assignment


cdef inline int be32(const unsigned char* b, Py_ssize_t p) noexcept nogil:
    return <int>get_be32(b + p)


cdef inline Py_ssize_t compact_count(const unsigned char* b, Py_ssize_t p, Py_ssize_t end, int* n) noexcept nogil:
    """The position after a compact array's length at ``p`` whose varint fits in one byte, the count in ``n``
    (-1: null); -1 to decline."""
    if p >= end or b[p] & 0x80:
        return -1
    n[0] = <int>b[p] - 1
    return p + 1


cdef inline Py_ssize_t no_tagged_fields(const unsigned char* b, Py_ssize_t p, Py_ssize_t end) noexcept nogil:
    """The position after an empty tagged-field section at ``p``; -1 when there are fields (the codec's)."""
    if p < 0 or p >= end or b[p] != 0:
        return -1
    return p + 1


cdef Py_ssize_t topic_partitions_end(const unsigned char* b, Py_ssize_t p, Py_ssize_t end, int n) noexcept nogil:
    """The position after ``n`` (TopicId, Partitions) structs at ``p``; -1 to decline.  A count is checked
    against the bytes left before anything is read, so a claimed length allocates nothing."""
    cdef int k, parts
    for k in range(n):
        p = compact_count(b, p + 16, end, &parts)
        if p < 0 or parts < 0 or parts > (end - p) // 4:
            return -1
        p = no_tagged_fields(b, p + 4 * parts, end)
        if p < 0:
            return -1
    return p


cdef int consumer_request(const unsigned char* b, Py_ssize_t start, Py_ssize_t end, int version,
                          ConsumerRequest* f) noexcept nogil:
    """1 when the frame (size already checked) is a ConsumerGroupHeartbeat request of ``version`` read whole
    into ``f``; 0 to fall back."""
    cdef Span rack, topic
    cdef int k
    cdef Py_ssize_t p = no_tagged_fields(b, int16_string(b, start + 12, end, True, &f.client_id), end)
    if p < 0:
        return 0
    p = compact_string(b, p, end, False, &f.group_id)
    if p < 0:
        return 0
    p = compact_string(b, p, end, False, &f.member_id)
    if p < 0 or p + 4 > end:
        return 0
    f.epoch = be32(b, p)
    p = compact_string(b, p + 4, end, True, &f.instance_id)
    if p < 0:
        return 0
    p = compact_string(b, p, end, True, &rack)
    if p < 0 or p + 4 > end:
        return 0
    f.rebalance_timeout_ms = be32(b, p)
    p = compact_count(b, p + 4, end, &f.topics_n)
    f.topics_at = p
    for k in range(f.topics_n):
        if p < 0:
            return 0
        p = compact_string(b, p, end, False, &topic)
    if p < 0:  # a declined count or topic
        return 0
    f.regex.start = -1
    if version >= 1:
        p = compact_string(b, p, end, True, &f.regex)
        if p < 0:
            return 0
    p = compact_string(b, p, end, True, &f.assignor)
    if p < 0:
        return 0
    p = compact_count(b, p, end, &f.owned_n)
    if p < 0:
        return 0
    f.owned_at = p
    p = no_tagged_fields(b, topic_partitions_end(b, p, end, f.owned_n), end)
    return p == end


cdef int consumer_response(const unsigned char* b, Py_ssize_t start, Py_ssize_t end,
                           ConsumerResponse* f) noexcept nogil:
    """1 when the frame is a ConsumerGroupHeartbeat response read whole into ``f``; 0 to fall back."""
    cdef Span message
    cdef Py_ssize_t p
    if end - start < 9 or <int32_t>get_be32(b + start) != end - start - 4:
        return 0
    p = no_tagged_fields(b, start + 8, end)
    if p < 0 or p + 6 > end:
        return 0
    f.error_code = <int16_t>get_be16(b + p + 4)
    p = compact_string(b, p + 6, end, True, &message)
    if p < 0:
        return 0
    p = compact_string(b, p, end, True, &f.member_id)
    if p < 0 or p + 9 > end:
        return 0
    f.epoch = be32(b, p)
    f.interval_ms = be32(b, p + 4)
    p += 8
    # A nullable struct: -1 for null, 1 before its fields (other markers: the codec's to judge).
    if b[p] == 0xff:
        f.assigned_n = -1
        p += 1
    elif b[p] == 1:
        p = compact_count(b, p + 1, end, &f.assigned_n)
        if p < 0 or f.assigned_n < 0:
            return 0
        f.assigned_at = p
        p = no_tagged_fields(b, topic_partitions_end(b, p, end, f.assigned_n), end)
    else:
        return 0
    return no_tagged_fields(b, p, end) == end
