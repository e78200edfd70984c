"""The mock cluster's record apis: Produce, Fetch (with its long poll), ListOffsets and InitProducerId.

Records move as bytes: a Produce's batch is checked by :func:`kwire.codec.read_batch_infos` (header, CRC and
each record walked, no record object made) and stored as received; a Fetch answers with the stored batches
joined.  Each partition is led by one broker; a request for it on another broker is NOT_LEADER_OR_FOLLOWER, with
the current leader in the answer where the version has room for it (Produce v10+, Fetch v12+), as Kafka's KIP-951
answers.

Transactions are not supported: a transactional producer is refused with TRANSACTIONAL_ID_AUTHORIZATION_FAILED
(its InitProducerId, and any Produce with a transactional id or a transactional batch).
"""

import struct
from collections import Counter

from kwire.codec import (
    ApiKey,
    ErrorCode,
    FetchableTopicResponse,
    FetchResponse,
    InitProducerIdResponse,
    LeaderIdAndEpoch,
    ListOffsetsPartitionResponse,
    ListOffsetsResponse,
    ListOffsetsTopicResponse,
    PartitionData,
    PartitionProduceResponse,
    ProduceLeaderIdAndEpoch,
    ProduceNodeEndpoint,
    ProduceRequest,
    ProduceResponse,
    RecordBatch,
    TopicProduceResponse,
    read_batch_infos,
)
from kwire.errors import DecodeError, UnsupportedRecordFormatError

from ._log import AppendError

_I16, _I32, _I64 = struct.Struct(">h"), struct.Struct(">i"), struct.Struct(">q")
_PARTITION = struct.Struct(">ihq")

# Fetch waits at most this long whatever the client asks.
MAX_FETCH_WAIT_MS = 30_000
# ListOffsets' special timestamps (ListOffsetsRequest.LATEST_TIMESTAMP ...).
LATEST, EARLIEST, MAX_TIMESTAMP, EARLIEST_LOCAL, LATEST_TIERED = -1, -2, -3, -4, -5
_ZSTD = 4
_NO_TRANSACTIONS = "transactions are not supported by the kwire mock cluster"


class _Refused(Exception):
    def __init__(self, code, message=None):
        super().__init__(message)
        self.code, self.message = code, message


class RecordApis:
    """The record apis, for :class:`ClusterServer` (which holds ``topics``, ``store``, ``faults`` and the loop)."""

    # -- shared checks ---------------------------------------------------------------------------------

    def _check_partition(self, conn, key, name, partition, by_id, leader_epoch=-1):
        """Refuse a request for a partition this broker does not lead (or that a fault fails)."""
        table = self.topics
        if name is None or not table.exists(name, partition):
            raise _Refused(ErrorCode.UNKNOWN_TOPIC_ID if by_id and name is None else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        if table.leaders[(name, partition)] != conn.broker:
            raise _Refused(ErrorCode.NOT_LEADER_OR_FOLLOWER,
                           f"broker {conn.broker} is not the leader of {name}-{partition}")
        epoch = table.epochs[(name, partition)]
        if leader_epoch >= 0 and leader_epoch != epoch:
            # Partition.getLocalLog: a client behind the leader's epoch is fenced, one ahead of it waits.
            raise _Refused(ErrorCode.FENCED_LEADER_EPOCH if leader_epoch < epoch else ErrorCode.UNKNOWN_LEADER_EPOCH)
        code = self.faults.take_partition(key, name, partition)
        if code is not None:
            raise _Refused(code, "injected by the mock cluster's fault injection")

    def _leader_of(self, name, partition):
        table = self.topics
        if name is None or not table.exists(name, partition):
            return -1, -1
        return table.leaders[(name, partition)], table.epochs[(name, partition)]

    # -- Produce ---------------------------------------------------------------------------------------

    def _produce(self, req, version, fill, conn):
        by_id = version >= 13
        now = self.now()
        refuse = None
        if req.transactional_id is not None:
            refuse = _Refused(ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, _NO_TRANSACTIONS)
        elif req.acks not in (-1, 0, 1):
            refuse = _Refused(ErrorCode.INVALID_REQUIRED_ACKS, f"acks must be -1, 0 or 1, not {req.acks}")
        responses = []
        leaders = set()
        failed = False
        for t in req.topic_data:
            name = self.topics.names.get(t.topic_id) if by_id else t.name
            parts = []
            for p in t.partition_data:
                try:
                    if refuse is not None:
                        raise refuse
                    self._check_partition(conn, ApiKey.PRODUCE, name, p.index, by_id)
                    base, log_start = self._append(name, p.index, p.records, version, now)
                    parts.append(PartitionProduceResponse(index=p.index, error_code=ErrorCode.NONE, base_offset=base,
                                                          log_append_time_ms=-1, log_start_offset=log_start))
                except _Refused as e:
                    failed = True
                    part = PartitionProduceResponse(index=p.index, error_code=e.code, base_offset=-1,
                                                    log_append_time_ms=-1, log_start_offset=-1,
                                                    error_message=e.message)
                    if e.code == ErrorCode.NOT_LEADER_OR_FOLLOWER and version >= 10:
                        leader, epoch = self._leader_of(name, p.index)
                        part.current_leader = ProduceLeaderIdAndEpoch(leader_id=leader, leader_epoch=epoch)
                        leaders.add(leader)
                    parts.append(part)
            responses.append(TopicProduceResponse(name="" if by_id else t.name, topic_id=t.topic_id,
                                                  partition_responses=parts))
        if req.acks == 0:
            # KafkaApis.handleProduceRequest: acks 0 gets no answer; an error closes the connection instead,
            # the only way the producer learns of it.
            fill(None)
            if failed:
                conn.close("a Produce with acks 0 failed", graceful=True)
            return
        endpoints = [ProduceNodeEndpoint(node_id=b, host=h, port=p) for b in sorted(leaders) if b >= 0
                     for h, p in [self.address(b)]]
        fill(ProduceResponse(responses=responses, node_endpoints=endpoints))

    def _legacy_produce(self, conn, body, version, correlation_id):
        """Produce v0-2 (the message formats 0 and 1 era, removed from Kafka 4.0 by KIP-896): every partition is
        answered UNSUPPORTED_VERSION in a response of the request's own version, which the codec's tables do not
        hold, so it is written here.  Its request is v3 without the transactional id in front, read as such."""
        try:
            req = ProduceRequest.decode(b"\xff\xff" + bytes(body), 3)  # a null transactional id, then v0-2's body
        except DecodeError as e:
            conn.close(f"malformed Produce v{version} request: {e}", graceful=True)
            return
        if req.acks == 0:
            # As in _produce: with acks 0 an error is told by closing the connection.
            conn.close(f"Produce v{version} is not supported (acks 0: no answer)", graceful=True)
            return
        conn.slot()(legacy_produce_response(req, version, correlation_id))

    def _append(self, name, partition, records, version, now):
        """Store one partition's records; returns ``(base offset, log start offset)``."""
        if not records:
            raise _Refused(ErrorCode.INVALID_RECORD, "a Produce must carry one record batch per partition")
        try:
            # LogValidator reads every record of a batch it appends (decompressing it): a batch whose header and
            # CRC hold but whose records do not would be stored, and fail every consumer that fetched it.
            infos = read_batch_infos(records, check_records=True)
        except DecodeError as e:
            if isinstance(e, UnsupportedRecordFormatError) and e.magic is not None:
                # ProduceRequest.validateRecords: from v3 only magic 2; a legacy message set is INVALID_RECORD.
                raise _Refused(ErrorCode.INVALID_RECORD,
                               f"Produce v{version} carries only record batches of magic 2, not {e.magic}") from None
            raise _Refused(ErrorCode.CORRUPT_MESSAGE, f"the record batch cannot be read: {e}") from None
        if len(infos) != 1:
            # ProduceRequest.validateRecords: from v3 exactly one batch per partition.
            raise _Refused(ErrorCode.INVALID_RECORD,
                           f"Produce v{version} must carry exactly one record batch per partition, not {len(infos)}")
        info = infos[0]
        if info.compression == _ZSTD and version < 7:
            raise _Refused(ErrorCode.UNSUPPORTED_COMPRESSION_TYPE, "zstd needs Produce v7 or later")
        if info.is_control:
            raise _Refused(ErrorCode.INVALID_RECORD, "clients may not write control batches")
        if info.is_transactional:
            raise _Refused(ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, _NO_TRANSACTIONS)
        try:
            base, _append_time = self.store.append(name, partition, records, info, now)
        except AppendError as e:
            raise _Refused(e.code, e.message) from None
        return base, self.store.log(name, partition).log_start

    # -- InitProducerId ---------------------------------------------------------------------------------

    def _init_producer_id(self, req, version, fill, conn):
        if req.transactional_id is not None:
            fill(InitProducerIdResponse(error_code=ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, producer_id=-1,
                                        producer_epoch=-1))
            return
        # TransactionCoordinator.handleInitProducerId: without a transactional id, a new id at epoch 0.
        fill(InitProducerIdResponse(error_code=ErrorCode.NONE, producer_id=self.store.new_producer_id(),
                                    producer_epoch=0))

    # -- Fetch ------------------------------------------------------------------------------------------

    def _fetch(self, req, version, fill, conn):
        by_id = version >= 13
        # FetchRequest.fetchData: the partitions are a map, so one named twice is read once, at the place it was
        # first named, with what it was last asked (a repeated partition would otherwise repeat its records in
        # one answer, beyond all the cluster holds).
        asked = {}
        for t in req.topics:
            for p in t.partitions:
                key = (t.topic_id if by_id else t.topic, p.partition)
                if key in asked:
                    asked[key][1] = p
                else:
                    asked[key] = [t, p]
        plan = []      # (topic response, name, [(partition, fetch offset, max bytes, error or None)])
        for t, p in asked.values():
            name = self.topics.names.get(t.topic_id) if by_id else t.topic
            try:
                self._check_partition(conn, ApiKey.FETCH, name, p.partition, by_id, p.current_leader_epoch)
                refused = None
            except _Refused as e:
                refused = e.code
            if not plan or plan[-1][0] is not t:
                plan.append((t, name, []))
            plan[-1][2].append((p.partition, p.fetch_offset, p.partition_max_bytes, refused))
        # KafkaApis.handleFetchRequest: the answer's size is the least of the request's max_bytes and the
        # broker's fetch.max.bytes.
        max_bytes = min(req.max_bytes, self.config["fetch.max.bytes"])
        response, total, failed = self._fetch_answer(plan, version, max_bytes)
        wait_ms = max(0, min(req.max_wait_ms, MAX_FETCH_WAIT_MS))
        if failed or total >= req.min_bytes or wait_ms == 0:
            fill(response)
            return
        self._park_fetch(plan, version, req.min_bytes, max_bytes, fill, wait_ms, conn)

    def _park_fetch(self, plan, version, min_bytes, max_bytes, fill, wait_ms, conn):
        """Answer when the watched partitions hold ``min_bytes`` from the fetch offsets, when one of them is
        deleted, or at the max wait (Kafka's DelayedFetch).  The connection reads no other Fetch meanwhile
        (``Connection.hold``): Kafka reads nothing more from a connection until its answer is sent, and one
        connection's parked Fetches would otherwise each make an answer of up to ``fetch.max.bytes`` at once."""
        offsets = {(name, row[0]): row[1] for _t, name, rows in plan for row in rows}
        store = self.store
        seen = {key: self._available(key, offset) for key, offset in offsets.items()}
        state = {"done": False, "timer": None, "available": sum(seen.values())}

        def complete():
            if state["done"]:
                return
            state["done"] = True
            store.unwatch(offsets, woken)
            if state["timer"] is not None:
                state["timer"].cancel()
            conn.hold(ApiKey.FETCH, False)
            fill(self._fetch_answer(plan, version, max_bytes)[0])

        def woken(key):
            # Only the partition appended to has changed: a Produce costs each long poll on it one lookup.
            now = self._available(key, offsets[key])
            state["available"] += now - seen[key]
            seen[key] = now
            if state["available"] >= min_bytes or not self.topics.exists(*key):
                # Answer after the Produce that woke it has been answered, as Kafka completes delayed fetches
                # from the request handler's purgatory check, not inside the append.
                self._loop.call_soon(complete)

        conn.hold(ApiKey.FETCH, True)
        store.watch(offsets, woken)
        state["timer"] = self._loop.call_later(wait_ms / 1000, complete)

    def _available(self, key, offset):
        log = self.store.logs.get(key)
        return 0 if log is None else log.bytes_from(offset)

    def _fetch_answer(self, plan, version, max_bytes):
        """The FetchResponse for ``plan`` now: ``(response, record bytes, whether a partition failed)``."""
        store = self.store
        by_id = version >= 13
        total = 0
        failed = False
        min_one = True  # ReplicaManager.readFromLog: the first batch of the first partition with data, whole
        responses = []
        for t, name, rows in plan:
            parts = []
            for partition, offset, partition_max, refused in rows:
                part = self._fetch_partition(store, name, partition, offset, refused, version)
                if part.error_code:
                    failed = True
                else:
                    log = store.logs.get((name, partition))
                    if log is not None and log.batches:
                        limit = max(0, min(partition_max, max_bytes - total))
                        data, n = log.read(offset, limit, min_one)
                        if n:
                            min_one = False
                            total += n
                            part.records = data
                parts.append(part)
            responses.append(FetchableTopicResponse(topic="" if by_id else t.topic, topic_id=t.topic_id,
                                                    partitions=parts))
        return FetchResponse(error_code=ErrorCode.NONE, session_id=0, responses=responses), total, failed

    def _fetch_partition(self, store, name, partition, offset, refused, version):
        if refused is not None:
            part = PartitionData(partition_index=partition, error_code=refused, high_watermark=-1,
                                 last_stable_offset=-1, log_start_offset=-1, records=b"")
            if refused == ErrorCode.NOT_LEADER_OR_FOLLOWER and version >= 12:
                leader, epoch = self._leader_of(name, partition)
                part.current_leader = LeaderIdAndEpoch(leader_id=leader, leader_epoch=epoch)
            return part
        if not self.topics.exists(name, partition):
            # Deleted while a long poll waited on it.
            return PartitionData(partition_index=partition, error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                                 high_watermark=-1, last_stable_offset=-1, log_start_offset=-1, records=b"")
        log = store.log(name, partition)
        end, start = log.end, log.log_start
        code = ErrorCode.NONE if start <= offset <= end else ErrorCode.OFFSET_OUT_OF_RANGE
        return PartitionData(partition_index=partition, error_code=code, high_watermark=end,
                             last_stable_offset=end, log_start_offset=start, records=b"")

    # -- ListOffsets ------------------------------------------------------------------------------------

    def _list_offsets(self, req, version, fill, conn):
        # ListOffsetsRequest.duplicatePartitions: a partition named twice is INVALID_REQUEST wherever it is named
        # (each lookup may read a batch, so repeats would multiply the work of one request).
        named = Counter((t.name, p.partition_index) for t in req.topics for p in t.partitions)
        topics = []
        for t in req.topics:
            parts = []
            for p in t.partitions:
                if named[(t.name, p.partition_index)] > 1:
                    parts.append(ListOffsetsPartitionResponse(partition_index=p.partition_index,
                                                              error_code=ErrorCode.INVALID_REQUEST))
                    continue
                try:
                    self._check_partition(conn, ApiKey.LIST_OFFSETS, t.name, p.partition_index, False,
                                          p.current_leader_epoch if version >= 4 else -1)
                except _Refused as e:
                    parts.append(ListOffsetsPartitionResponse(partition_index=p.partition_index, error_code=e.code))
                    continue
                timestamp, offset = self._offset_for(t.name, p.partition_index, p.timestamp, version)
                parts.append(ListOffsetsPartitionResponse(
                    partition_index=p.partition_index, error_code=ErrorCode.NONE, timestamp=timestamp, offset=offset,
                    leader_epoch=self.topics.epochs[(t.name, p.partition_index)] if version >= 4 else -1))
            topics.append(ListOffsetsTopicResponse(name=t.name, partitions=parts))
        fill(ListOffsetsResponse(topics=topics))

    def _offset_for(self, name, partition, target, version):
        """``(timestamp, offset)`` for a ListOffsets target (UnifiedLog.fetchOffsetByTimestamp)."""
        log = self.store.log(name, partition)
        if target == LATEST:
            return -1, log.end
        if target in (EARLIEST, EARLIEST_LOCAL):
            return -1, log.log_start
        if target == MAX_TIMESTAMP and version >= 7:
            i = log.max_timestamp_index()
            if i is None:
                return -1, -1
            best = log.max_timestamps[i]
            return best, _first_record_at_least(log, i, best)[1]
        if target < 0:
            # LATEST_TIERED (-5) and others: nothing is tiered here.
            return -1, -1
        i = log.offset_for_timestamp(target)
        if i is None:
            return -1, -1
        return _first_record_at_least(log, i, target)


def _first_record_at_least(log, i, target):
    """``(timestamp, offset)`` of the first record of batch ``i`` whose timestamp is at least ``target``: the
    one place a batch is decoded, as Kafka's ``LogSegment.findOffsetByTimestamp`` reads the batch it lands in."""
    for record in RecordBatch.decode(log.joined(i, i + 1)).records:
        if record.timestamp >= target:
            return record.timestamp, record.offset
    return log.max_timestamps[i], log.lasts[i]


def legacy_produce_response(req, version, correlation_id):
    """The frame answering Produce ``req`` at ``version`` 0-2 with UNSUPPORTED_VERSION for each partition.

    ProduceResponse v0: [topic name (string), [partition index (int32), error code (int16), base offset (int64)]];
    v1 adds throttle_time_ms (int32) after the topics, v2 log_append_time_ms (int64) after each base offset.
    The response header is v0, the correlation id alone."""
    out = [_I32.pack(correlation_id), _I32.pack(len(req.topic_data))]
    for t in req.topic_data:
        name = t.name.encode()
        out += [_I16.pack(len(name)), name, _I32.pack(len(t.partition_data))]
        for p in t.partition_data:
            out.append(_PARTITION.pack(p.index, ErrorCode.UNSUPPORTED_VERSION, -1))
            if version >= 2:
                out.append(_I64.pack(-1))
    if version >= 1:
        out.append(_I32.pack(0))
    frame = b"".join(out)
    return _I32.pack(len(frame)) + frame
