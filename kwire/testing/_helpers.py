"""What :class:`MockCluster`'s test helpers do on the cluster's loop: store a record as a producer would, read
the stored records back as objects, list a group's committed offsets.  Only these build a Python object per
record; the request path never does."""

import time

from kwire.codec import Header, Record, RecordBatch, decode_record_batches, read_batch_infos
from kwire.errors import ArgumentValueError

from ._log import AppendError

_MASK32 = 0xFFFFFFFF


def murmur2(data):
    """Kafka's ``Utils.murmur2`` (seed 0x9747b28c), as a signed 32-bit int: the hash its default partitioner
    applies to a record's key."""
    m, r = 0x5BD1E995, 24
    length = len(data)
    h = (0x9747B28C ^ length) & _MASK32
    n4 = length // 4
    for i in range(n4):
        k = int.from_bytes(data[4 * i:4 * i + 4], "little")
        k = (k * m) & _MASK32
        k ^= k >> r
        k = (k * m) & _MASK32
        h = (h * m) & _MASK32
        h ^= k
    tail = data[4 * n4:]
    if len(tail) >= 3:
        h ^= tail[2] << 16
    if len(tail) >= 2:
        h ^= tail[1] << 8
    if tail:
        h ^= tail[0]
        h = (h * m) & _MASK32
    h ^= h >> 13
    h = (h * m) & _MASK32
    h ^= h >> 15
    return h - (1 << 32) if h & 0x80000000 else h


def _as_bytes(name, value):
    if value is None or isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return value.encode()
    if isinstance(value, (bytearray, memoryview)):
        return bytes(value)
    raise ArgumentValueError(f"{name} must be bytes, str or None, not {type(value).__name__}")


def _partition_for(server, topic, key, partition):
    n = server.topics.counts.get(topic)
    if n is None:
        raise ArgumentValueError(f"no topic {topic!r}")
    if partition is not None:
        if not 0 <= partition < n:
            raise ArgumentValueError(f"topic {topic!r} has no partition {partition}")
        return partition
    if key is not None:
        # BuiltInPartitioner.partitionForKey: toPositive(murmur2(key)) % partitions.
        return (murmur2(key) & 0x7FFFFFFF) % n
    counters = server.round_robin
    counters[topic] = counters.get(topic, -1) + 1
    return counters[topic] % n


def produce_one(server, topic, value, key, partition, headers, timestamp):
    key, value = _as_bytes("key", key), _as_bytes("value", value)
    pairs = [Header(k.decode() if isinstance(k, (bytes, bytearray)) else str(k), _as_bytes("header value", v))
             for k, v in (headers.items() if isinstance(headers, dict) else headers or ())]
    p = _partition_for(server, topic, key, partition)
    ts = int(time.time() * 1000) if timestamp is None else int(timestamp)
    data = RecordBatch([Record(key, value, pairs, offset=0, timestamp=ts)]).encode()
    (info,) = read_batch_infos(data)
    try:
        base, _ = server.store.append(topic, p, data, info, server.now())
    except AppendError as e:
        raise ArgumentValueError(f"the cluster refused the record: {e.message}") from None
    return p, base


def stored_records(server, topic, partition):
    if not server.topics.exists(topic, partition):
        raise ArgumentValueError(f"no partition {topic}-{partition}")
    log = server.store.logs.get((topic, partition))
    if log is None:
        return []
    out = []
    for batch in decode_record_batches(log.joined()):
        out.extend(batch.records)
    return out


def committed_offsets(server, group_id):
    """``{(topic, partition): offset}`` of every partition of every topic the group committed."""
    out = {}
    coordinator = server.coordinator
    for topic, n in server.topics.counts.items():
        for p in range(n):
            offset = coordinator.committed(group_id, topic, p)[0]
            if offset >= 0:
                out[(topic, p)] = offset
    return out
