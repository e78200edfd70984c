# Included by _batch_c.pyx: one call of decode_batch, a step per kind of row (a request by its fast
# paths or the codec's, a response paired with its request and then read the same ways), and the
# requests left waiting when the batch ends.


@cython.final
cdef class _Batch:
    """One call of :func:`decode_batch`: its input columns, the output columns it fills row by row, and the
    requests waiting for their responses.  Each step below decodes one kind of row."""
    # Input, by row; ``buf`` holds every frame, row i's at off_v[i]:off_v[i + 1].
    cdef Py_ssize_t n
    cdef const long long[:] seq_v, ts_v, conn_v, off_v
    cdef const signed char[:] dir_v
    cdef const unsigned char[:] trunc_v
    cdef const unsigned char[:] buf
    cdef const unsigned char* base
    cdef object mv
    # Output: the integer columns and their validity flags, the string and nested columns.
    cdef object cols, frame_len_arr
    cdef int[:] frame_len
    cdef short[:] api_key_v, api_version_v, error_v
    cdef int[:] corr_v, gen_v, rebalance_v, interval_v
    cdef long long[:] rseq_v, rts_v
    cdef cnp.npy_bool[:] api_key_ok, api_version_ok, corr_ok, error_ok, gen_ok, rseq_ok, rts_ok, rebalance_ok, interval_ok
    cdef dict strings
    cdef _StrColumn client_col, group_col, member_col, instance_col, error_col, regex_col, assignor_col
    cdef _Nested nested
    cdef _Fields fields
    cdef _Row r
    # Requests waiting for their response: this batch's by row, earlier batches' carried by value.
    cdef _PairTable table

    def __cinit__(self, seq, ts, conn, direction, truncated, offsets, values, pairing):
        self.n = len(seq)
        self.seq_v = np.ascontiguousarray(seq, dtype=np.int64)
        self.ts_v = np.ascontiguousarray(ts, dtype=np.int64)
        self.conn_v = np.ascontiguousarray(conn, dtype=np.int64)
        self.dir_v = np.ascontiguousarray(direction, dtype=np.int8)
        self.trunc_v = np.ascontiguousarray(truncated, dtype=np.uint8)
        self.off_v = np.ascontiguousarray(offsets, dtype=np.int64)
        self.buf = values
        self.base = &self.buf[0] if self.buf.shape[0] else NULL
        self.mv = memoryview(values).cast("B")
        # The ConsumerGroupDescribe groups stay Python values (a few rows of a capture).
        self.cols = Columns(self.n, _OBJECT_NESTED)
        self.frame_len_arr = np.zeros(self.n, np.int32)
        self.frame_len = self.frame_len_arr
        ints = self.cols.ints
        self.api_key_v, self.api_version_v = ints["api_key"], ints["api_version"]
        self.corr_v, self.error_v, self.gen_v = ints["correlation_id"], ints["error_code"], ints["generation_id"]
        self.rseq_v, self.rts_v = ints["request_seq"], ints["request_ts"]
        self.rebalance_v, self.interval_v = ints["rebalance_timeout_ms"], ints["heartbeat_interval_ms"]
        valid = self.cols.valid
        self.api_key_ok = valid["api_key"].view(np.uint8)
        self.api_version_ok = valid["api_version"].view(np.uint8)
        self.corr_ok = valid["correlation_id"].view(np.uint8)
        self.error_ok = valid["error_code"].view(np.uint8)
        self.gen_ok = valid["generation_id"].view(np.uint8)
        self.rseq_ok = valid["request_seq"].view(np.uint8)
        self.rts_ok = valid["request_ts"].view(np.uint8)
        self.rebalance_ok = valid["rebalance_timeout_ms"].view(np.uint8)
        self.interval_ok = valid["heartbeat_interval_ms"].view(np.uint8)
        self.strings = {name: _StrColumn(self.n) for name in _STRING_COLUMNS}
        self.client_col = self.strings["client_id"]
        self.group_col = self.strings["group_id"]
        self.member_col = self.strings["member_id"]
        self.instance_col = self.strings["group_instance_id"]
        self.error_col = self.strings["decode_error"]
        self.regex_col, self.assignor_col = self.strings["subscribed_regex"], self.strings["protocol_name"]
        self.nested = _Nested()
        self.fields = _Fields(self.strings, self.cols)
        self.r = _Row()
        cdef Py_ssize_t i, requests = 0
        for i in range(self.n):
            requests += self.dir_v[i] == 0
        self.table = _PairTable(requests + len(pairing.pending))
        for k, (pair, req) in enumerate(pairing.pending.items()):
            self.table.put(pair[0], pair[1], -1 - k)
            self.table.carried.append(req)

    cdef object waiting_request(self, Py_ssize_t j):
        """The Pairing entry by value of the request in row ``j``."""
        return PendingRequest(self.api_key_v[j], self.api_version_v[j], self.seq_v[j], self.ts_v[j],
                              self.group_col.get(j), self.member_col.get(j),
                              self.gen_v[j] if self.gen_ok[j] else None, self.instance_col.get(j))

    cdef int put_row(self, Py_ssize_t i, dict row) except -1:
        """Row ``i`` as the pure twin's dict ``row`` holds it (the codec's path)."""
        return put_row(i, row, self.trunc_v[i], self.strings, self.nested, self.cols)

    # -- requests ----------------------------------------------------------------------------------------------

    cdef int request(self, Py_ssize_t i, Py_ssize_t start, Py_ssize_t end) except -1:
        """Row ``i``, a request: its header's integers, entered in the table for its response, then its
        fields by the fastest path that reads them."""
        if end - start < 12:
            return self.error_col.put_obj(i, f"DecodeError: request frame of {end - start} bytes is shorter than a header")
        cdef int key = <int16_t>get_be16(&self.buf[start + 4])
        cdef int version = <int16_t>get_be16(&self.buf[start + 6])
        cdef int corr = <int32_t>get_be32(&self.buf[start + 8])
        self.api_key_v[i] = key; self.api_key_ok[i] = 1
        self.api_version_v[i] = version; self.api_version_ok[i] = 1
        self.corr_v[i] = corr; self.corr_ok[i] = 1
        # Every request is entered by its row: the columns of that row
        # hold what its response inherits, whatever path wrote them.
        self.table.put(self.conn_v[i], corr, i)
        cdef int header_version = HEADER_VERSION[key * 16 + version] if 0 <= key < KEYS and 0 <= version < 16 else -1
        if header_version >= 0 and <int32_t>get_be32(&self.buf[start]) == end - start - 4:
            if key == HEARTBEAT and self.heartbeat_request(i, start, end, version, header_version):
                return 0
            if key == CONSUMER_GROUP_HEARTBEAT:
                if self.consumer_request(i, start, end, version):
                    return 0
                return self.codec_request(i, start, end, key, version)
            return self.group_request(i, start, end, key, version, header_version)
        return self.codec_request(i, start, end, key, version)

    cdef bint heartbeat_request(self, Py_ssize_t i, Py_ssize_t start, Py_ssize_t end, int version,
                                int header_version) except -1:
        """Row ``i`` written from a minimal Heartbeat request's bytes, with no message object; 0 to fall back."""
        cdef HeartbeatFields hb
        if not heartbeat_request(self.base, start, end, version, header_version, &hb):
            return 0
        put_span(self.client_col, i, self.base, hb.client_id)
        put_span(self.group_col, i, self.base, hb.group_id)
        put_span(self.member_col, i, self.base, hb.member_id)
        put_span(self.instance_col, i, self.base, hb.group_instance_id)
        self.gen_v[i] = hb.generation_id; self.gen_ok[i] = 1
        if self.trunc_v[i]:
            self.error_col.put_obj(i, "truncated frame")
        return 1

    cdef bint consumer_request(self, Py_ssize_t i, Py_ssize_t start, Py_ssize_t end, int version) except -1:
        """Row ``i`` written from a well-formed ConsumerGroupHeartbeat request's bytes; 0 to fall back."""
        cdef ConsumerRequest f
        cdef Span topic
        cdef Py_ssize_t p
        cdef int k
        cdef _Strs topics
        if not consumer_request(self.base, start, end, version, &f):
            return 0
        put_span(self.client_col, i, self.base, f.client_id)
        put_span(self.group_col, i, self.base, f.group_id)
        put_span(self.member_col, i, self.base, f.member_id)
        put_span(self.instance_col, i, self.base, f.instance_id)
        put_span(self.regex_col, i, self.base, f.regex)
        put_span(self.assignor_col, i, self.base, f.assignor)
        self.gen_v[i] = f.epoch; self.gen_ok[i] = 1
        self.rebalance_v[i] = f.rebalance_timeout_ms; self.rebalance_ok[i] = 1
        if f.topics_n >= 0:
            topics = <_Strs>self.nested.topics.values
            p = f.topics_at
            for k in range(f.topics_n):
                p = compact_string(self.base, p, end, False, &topic)
                topics.push_bytes(<const char*>self.base + topic.start, topic.length)
            self.nested.topics.close(i)
        if f.owned_n >= 0:
            self.put_topic_partitions(i, f.owned_at, f.owned_n)
        if self.trunc_v[i]:
            self.error_col.put_obj(i, "truncated frame")
        return 1

    cdef int put_topic_partitions(self, Py_ssize_t i, Py_ssize_t p, int n) except -1:
        """Row ``i``'s ``topic_partitions``: the ``n`` structs at ``p``, checked by the frame's reader."""
        cdef int k, parts
        for k in range(n):
            parts = <int>self.base[p + 16] - 1
            self.nested.topic_partitions.add_wire(self.base + p, self.base + p + 17, parts)
            p += 17 + 4 * parts + 1
        return self.nested.topic_partitions.close(i)

    cdef int group_request(self, Py_ssize_t i, Py_ssize_t start, Py_ssize_t end, int key, int version,
                           int header_version) except -1:
        """Row ``i``, a well-formed group request: decoded here without the
        generic framing helpers (same decoders, same errors)."""
        payload = self.mv[start + 4:end]
        try:
            header, hend = RequestHeader.decode_prefix(payload, header_version)
        except (KwireError, ValueError) as exc:
            return self.error_col.put_obj(i, error_text(exc))
        self.client_col.put_obj(i, header.client_id)
        try:
            msg = REQUEST_CLASS[key].decode(payload[hend:], version)
        except (KwireError, ValueError) as exc:
            return self.error_col.put_obj(i, error_text(exc))
        self.r.clear()
        self.nested.mark()
        try:
            request_row(key, msg, self.r, self.nested, i)
        except (KwireError, ValueError):
            # Declined (bad Subscription or Assignment bytes): the
            # codec's path gives the partial row and its error.
            self.nested.undo(i)
            row = {}
            try:
                extract_request(key, msg, row)
            except (KwireError, ValueError) as exc:
                row["decode_error"] = error_text(exc)
            return self.put_row(i, row)
        return self.fields.put(self.r, i, -1, self.trunc_v[i])

    cdef int codec_request(self, Py_ssize_t i, Py_ssize_t start, Py_ssize_t end, int key, int version) except -1:
        """Row ``i`` by the pure twin's path: the framing helpers, then the row dict."""
        row = {}
        try:
            header, body = split_request(self.mv[start:end])
            row["client_id"] = header.client_id
        except (KwireError, ValueError) as exc:
            row["decode_error"] = error_text(exc)
            return self.put_row(i, row)
        if key in GROUP_APIS:
            try:
                msg = message_class(key, "request").decode(body, version)
                extract_request(key, msg, row)
            except (KwireError, ValueError) as exc:
                row["decode_error"] = error_text(exc)
        return self.put_row(i, row)

    # -- responses ---------------------------------------------------------------------------------------------

    cdef int response(self, Py_ssize_t i, Py_ssize_t start, Py_ssize_t end) except -1:
        """Row ``i``, a response: paired with its request, from which it inherits the api key, version and
        member fields, then its own fields by the fastest path that reads them."""
        if end - start < 8:
            return self.error_col.put_obj(i, f"DecodeError: response frame of {end - start} bytes is shorter than a header")
        cdef int corr = <int32_t>get_be32(&self.buf[start + 4])
        cdef int64_t waiting
        self.corr_v[i] = corr; self.corr_ok[i] = 1
        if not self.table.pop(self.conn_v[i], corr, &waiting):
            return self.error_col.put_obj(i, "unpaired response: no request with this correlation id on the connection")
        # j: the request's row when it was asked within this batch (its row has it all), else -1 and ``req``
        # the request carried from an earlier batch.
        cdef Py_ssize_t j = waiting if waiting >= 0 else -1
        req = None if waiting >= 0 else self.table.carried[-1 - waiting]
        cdef int key, version
        cdef short err
        if j >= 0:
            key, version = self.api_key_v[j], self.api_version_v[j]
            self.rseq_v[i], self.rts_v[i] = self.seq_v[j], self.ts_v[j]
            if self.gen_ok[j]:
                self.gen_v[i] = self.gen_v[j]; self.gen_ok[i] = 1
        else:
            key, version = req.api_key, req.api_version
            self.rseq_v[i], self.rts_v[i] = req.seq, req.ts
            if req.generation_id is not None:
                self.gen_v[i] = req.generation_id; self.gen_ok[i] = 1
        self.api_key_v[i] = key; self.api_key_ok[i] = 1
        self.api_version_v[i] = version; self.api_version_ok[i] = 1
        self.rseq_ok[i] = 1
        self.rts_ok[i] = 1
        if key == HEARTBEAT and heartbeat_response_error(self.buf, start, end, version, &err):
            self.error_v[i] = err; self.error_ok[i] = 1
        elif key == CONSUMER_GROUP_HEARTBEAT or key == CONSUMER_GROUP_DESCRIBE:
            if key == CONSUMER_GROUP_HEARTBEAT and 0 <= version < 16 \
                    and RESPONSE_HEADER_VERSION[key * 16 + version] == 1 and self.consumer_response(i, start, end, j, req):
                return 0
            return self.codec_response(i, start, end, key, version, req if j < 0 else self.waiting_request(j))
        elif key in RESPONSE_APIS:
            if response_fast_path(key, version, j, req, self.buf, self.mv, start, end, self.trunc_v[i], i, self.r,
                                  self.nested, self.fields):
                return 0
            return self.codec_response(i, start, end, key, version, req if j < 0 else self.waiting_request(j))
        return self.inherit_strings(i, j, req)

    cdef bint consumer_response(self, Py_ssize_t i, Py_ssize_t start, Py_ssize_t end, Py_ssize_t j,
                                object req) except -1:
        """Row ``i`` written from a well-formed ConsumerGroupHeartbeat response's bytes, its member fields
        inherited as :meth:`inherit_strings` does, but its own member id when it names one; 0 to fall back."""
        cdef ConsumerResponse f
        if not consumer_response(self.base, start, end, &f):
            return 0
        self.error_v[i] = f.error_code; self.error_ok[i] = 1
        self.gen_v[i] = f.epoch; self.gen_ok[i] = 1
        self.interval_v[i] = f.interval_ms; self.interval_ok[i] = 1
        if j >= 0:
            self.group_col.copy_row(i, j)
            if f.member_id.start < 0:
                self.member_col.copy_row(i, j)
            self.instance_col.copy_row(i, j)
        else:
            self.group_col.put_obj(i, req.group_id)
            if f.member_id.start < 0:
                self.member_col.put_obj(i, req.member_id)
            self.instance_col.put_obj(i, req.group_instance_id)
        put_span(self.member_col, i, self.base, f.member_id)
        if f.assigned_n >= 0:
            self.put_topic_partitions(i, f.assigned_at, f.assigned_n)
        if self.trunc_v[i]:
            self.error_col.put_obj(i, "truncated frame")
        return 1

    cdef int codec_response(self, Py_ssize_t i, Py_ssize_t start, Py_ssize_t end, int key, int version,
                            object req) except -1:
        """Row ``i`` by the pure twin's path, with the request's context ``req`` as values."""
        row = {"group_id": req.group_id, "member_id": req.member_id, "group_instance_id": req.group_instance_id}
        try:
            header, msg = decode_response(self.mv[start:end], key, version)
            extract_response(key, version, msg, row)
        except (KwireError, ValueError) as exc:
            row["decode_error"] = error_text(exc)
        return self.put_row(i, row)

    cdef int inherit_strings(self, Py_ssize_t i, Py_ssize_t j, object req) except -1:
        """Row ``i``'s member strings, a response's whose body is not read: its request's (row ``j``, or
        ``req`` carried from an earlier batch when ``j`` is -1)."""
        if j >= 0:
            self.group_col.copy_row(i, j)
            self.member_col.copy_row(i, j)
            self.instance_col.copy_row(i, j)
        else:
            self.group_col.put_obj(i, req.group_id)
            self.member_col.put_obj(i, req.member_id)
            self.instance_col.put_obj(i, req.group_instance_id)
        if self.trunc_v[i]:
            self.error_col.put_obj(i, "truncated frame")
        return 0

    # -- the end of the batch ----------------------------------------------------------------------------------

    cdef dict still_waiting(self):
        """The requests still waiting, by value: the next batch has other rows."""
        cdef dict pending = {}
        cdef _PairTable table = self.table
        cdef int64_t waiting
        cdef Py_ssize_t k
        for k in range(table.mask + 1):
            if table.used[k]:
                waiting = table.values[k]
                pending[(table.conns[k], table.corrs[k])] = (
                    table.carried[-1 - waiting] if waiting < 0 else self.waiting_request(waiting))
        return pending

    cdef object finish(self, seq, ts, conn, direction, truncated):
        ready = {name: (<_StrColumn>column).finish() for name, column in self.strings.items()}
        ready.update(self.nested.finish(self.n))
        return self.cols.to_batch(seq, ts, conn, direction, self.frame_len_arr, truncated, ready)
