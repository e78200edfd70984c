"""The mock cluster's storage: one log per partition in memory, record batches kept as the producer sent them.

A batch is stored as its bytes as received, beside four ints: its base and last offset, its max timestamp and its
size.  The base offset the log assigned is written into the batch when it is read (the CRC does not cover it), so a
batch that is most of its Produce frame is kept as a read-only view of that frame, never copied: the frame is
already one copy of what came from the socket, and each further copy of a producer's megabyte is time before its
answer and CPU taken from the producer on a shared machine.  A batch that is less than seven eighths of its
frame (several partitions in one Produce) is copied out, so the frames a log keeps hold at most 8/7 of the bytes
it counts.  Nothing on the produce or fetch path builds a Python object per record; only a ListOffsets lookup by
timestamp decodes the one batch it lands in.

Limits, each with the error a client understands:

- ``retention.bytes`` per partition: the oldest batches go once a partition holds more, moving its log start
  offset, as Kafka's size-based retention does (``UnifiedLog.deleteRetentionSizeBreachedSegments``, here per
  batch rather than per segment).
- ``kwire.storage.total.bytes`` for the whole cluster: an append that would pass it is refused with
  POLICY_VIOLATION and a message naming the cap; nothing is evicted to make room.

Idempotent producers are checked the way Kafka's ``ProducerStateManager`` and ``ProducerAppendInfo`` check
them: a batch repeating one of the producer's last five is answered with its first offset and not stored
again; a sequence that does not follow the last one is OUT_OF_ORDER_SEQUENCE_NUMBER; an epoch older than the
last one seen is INVALID_PRODUCER_EPOCH.
"""

import bisect
from collections import deque

from kwire.codec import ErrorCode, set_base_offset

# Kafka's ProducerStateEntry.NUM_BATCHES_TO_RETAIN: how many of a producer's batches a duplicate is looked for in.
BATCHES_TO_RETAIN = 5
_INT32_MAX = 0x7FFFFFFF
# RecordBatch.NO_PRODUCER_ID / NO_PRODUCER_EPOCH / NO_TIMESTAMP.
NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
NO_TIMESTAMP = -1


class AppendError(Exception):
    """An append refused with a Kafka error code and the message the answer carries (v8+)."""

    def __init__(self, code, message):
        super().__init__(message)
        self.code = code
        self.message = message


def _in_sequence(last_seq, next_seq):
    # ProducerAppendInfo.inSequence: sequences wrap from Integer.MAX_VALUE to 0.
    return next_seq == last_seq + 1 or (next_seq == 0 and last_seq == _INT32_MAX)


def _last_sequence(base_sequence, last_offset_delta):
    # DefaultRecordBatch.incrementSequence.
    if base_sequence > _INT32_MAX - last_offset_delta:
        return last_offset_delta - (_INT32_MAX - base_sequence) - 1
    return base_sequence + last_offset_delta


class _ProducerEntry:
    """One producer's state in one partition: its epoch and its last batches (first seq, last seq, first
    offset), newest last (Kafka's ProducerStateEntry)."""

    __slots__ = ("epoch", "batches")

    def __init__(self, epoch):
        self.epoch = epoch
        self.batches = deque(maxlen=BATCHES_TO_RETAIN)

    def duplicate_of(self, epoch, first_seq, last_seq):
        """The first offset of the retained batch with this epoch and sequence range, or None
        (ProducerStateEntry.findDuplicateBatch)."""
        if epoch != self.epoch:
            return None
        for first, last, offset in self.batches:
            if first == first_seq and last == last_seq:
                return offset
        return None

    def check(self, epoch, first_seq, producer_id):
        """Refuse a batch as ProducerAppendInfo.checkProducerEpoch and checkSequence do."""
        if epoch < self.epoch:
            raise AppendError(ErrorCode.INVALID_PRODUCER_EPOCH,
                              f"epoch {epoch} of producer {producer_id} is older than its last epoch {self.epoch}")
        if epoch != self.epoch:
            # A new epoch starts its sequences at 0.
            if first_seq != 0:
                raise AppendError(ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
                                  f"invalid sequence number {first_seq} for new epoch {epoch} of producer "
                                  f"{producer_id}: a new epoch starts at 0")
            return
        last = self.batches[-1][1] if self.batches else None
        if last is not None and not _in_sequence(last, first_seq):
            raise AppendError(ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
                              f"out of order sequence number for producer {producer_id} at epoch {epoch}: "
                              f"{first_seq} (incoming) after {last} (last appended)")


def _kept(data, position, size):
    """The batch at ``position`` in ``data`` (a Produce's records, usually a view of its frame), as the log keeps
    it: the view itself when the frame it shows is immutable and little more than the batch, else a copy."""
    batch = data[position:position + size]
    if isinstance(batch, memoryview):
        frame = batch.obj
        if not (isinstance(frame, bytes) and size * 8 >= len(frame) * 7):
            return bytes(batch)
    elif not isinstance(batch, bytes):
        return bytes(batch)
    return batch


class PartitionLog:
    """One partition's batches, offsets and producers."""

    __slots__ = ("bases", "lasts", "max_timestamps", "batches", "starts", "appended", "size", "log_start", "end",
                 "producers")

    def __init__(self):
        self.bases = []           # base offset of each batch, ascending
        self.lasts = []           # last offset of each batch
        self.max_timestamps = []  # max timestamp of each batch
        self.batches = []         # each batch as received (bytes, or a read-only view of its frame)
        self.starts = []          # bytes appended to the log before each batch (so bytes_from needs no sum)
        self.appended = 0         # bytes appended, the dropped ones included
        self.size = 0             # bytes held
        self.log_start = 0        # the first offset still held (or the end, when empty)
        self.end = 0              # the next offset to assign: the log end offset, and the high watermark
        self.producers = {}       # producer id -> _ProducerEntry

    @property
    def high_watermark(self):
        # One replica, in sync with itself: everything appended is committed at once.
        return self.end

    def index_of(self, offset):
        """The index of the batch holding ``offset``, or of the first batch after it; len(batches) past the end."""
        i = bisect.bisect_right(self.bases, offset) - 1
        if i < 0:
            return 0
        return i if self.lasts[i] >= offset else i + 1

    def read(self, offset, max_bytes, min_one):
        """The batches from the one holding ``offset`` while they fit in ``max_bytes`` (the first one
        whatever its size when ``min_one``): ``(their bytes with their offsets, their total size)``."""
        batches = self.batches
        first = i = self.index_of(offset)
        total = 0
        while i < len(batches):
            n = len(batches[i])
            if total + n > max_bytes and not (min_one and i == first):
                break
            total += n
            i += 1
        return self.joined(first, i), total

    def joined(self, first=0, stop=None):
        """Batches ``first`` to ``stop`` (the last, if None) as one ``bytearray``, each with the base offset
        the log assigned it written in."""
        batches, bases = self.batches, self.bases
        stop = len(batches) if stop is None else stop
        if first >= stop:
            return b""
        out = bytearray().join(batches[first:stop])
        pos = 0
        for i in range(first, stop):
            set_base_offset(out, pos, bases[i])
            pos += len(batches[i])
        return out

    def bytes_from(self, offset):
        """How many bytes a fetch from ``offset`` could return (for a long poll's min_bytes).  Every Produce asks
        it for each long poll on its partition, so it does not walk the batches."""
        i = self.index_of(offset)
        if i >= len(self.batches):
            return 0
        return self.appended - self.starts[i]

    def offset_for_timestamp(self, target):
        """The index of the first batch whose max timestamp is at least ``target``, or None."""
        for i, ts in enumerate(self.max_timestamps):
            if ts >= target:
                return i
        return None

    def max_timestamp_index(self):
        """The index of the (first) batch holding the log's greatest timestamp, or None when empty."""
        if not self.batches:
            return None
        best = max(self.max_timestamps)
        return self.max_timestamps.index(best)

    def trim_to(self, cap):
        """Drop the oldest batches while more than ``cap`` bytes are held; returns the bytes freed."""
        freed = 0
        drop = 0
        while self.size - freed > cap and drop < len(self.batches):
            freed += len(self.batches[drop])
            drop += 1
        if drop:
            self._drop_first(drop)
        return freed

    def _drop_first(self, n):
        del self.bases[:n], self.lasts[:n], self.max_timestamps[:n], self.starts[:n]
        freed = sum(len(b) for b in self.batches[:n])
        del self.batches[:n]
        self.size -= freed
        self.log_start = self.bases[0] if self.bases else self.end

    def truncate(self):
        """Hold nothing; offsets go on from where they were (DeleteRecords to the end, not a new log)."""
        if self.batches:
            self._drop_first(len(self.batches))


class LogStore:
    """Every partition's log, the cluster's byte caps and the long polls waiting on appends.

    ``retention_bytes`` is each partition's cap (-1: none, as in Kafka); ``total_bytes`` the cluster's.
    ``max_batch_bytes`` is Kafka's ``message.max.bytes``: a bigger batch is MESSAGE_TOO_LARGE.
    """

    def __init__(self, *, retention_bytes, total_bytes, max_batch_bytes):
        self.retention_bytes = retention_bytes
        self.total_bytes = total_bytes
        self.max_batch_bytes = max_batch_bytes
        self.logs = {}          # (topic, partition) -> PartitionLog
        self.held = 0           # bytes held by every log
        self.watchers = {}      # (topic, partition) -> set of callbacks woken by an append
        self.next_producer_id = 1000

    def log(self, topic, partition):
        key = (topic, partition)
        log = self.logs.get(key)
        if log is None:
            log = self.logs[key] = PartitionLog()
        return log

    def drop_topic(self, topic, partitions):
        for p in range(partitions):
            log = self.logs.pop((topic, p), None)
            if log is not None:
                self.held -= log.size
            self._wake((topic, p))

    def new_producer_id(self):
        """A producer id no other producer of this cluster got (InitProducerId)."""
        pid = self.next_producer_id
        self.next_producer_id += 1
        return pid

    def append(self, topic, partition, data, info, now_ms):
        """Store one batch (``data``, described by ``info``, a :class:`kwire.codec.BatchInfo`); returns
        ``(base offset, log append time or -1)``.  A duplicate of a retained idempotent batch returns its
        first offset and stores nothing.  Raises :class:`AppendError`."""
        log = self.log(topic, partition)
        size = info.size
        if size > self.max_batch_bytes:
            raise AppendError(ErrorCode.MESSAGE_TOO_LARGE,
                              f"the batch is {size} bytes, more than message.max.bytes ({self.max_batch_bytes})")
        if info.record_count < 1 or info.last_offset_delta != info.record_count - 1:
            # LogValidator: a producer's batch holds offsets 0..n-1 relative to its base.
            raise AppendError(ErrorCode.INVALID_RECORD,
                              f"the batch holds {info.record_count} records but its last offset delta is "
                              f"{info.last_offset_delta}")
        pid = info.producer_id
        entry = None
        first_seq = last_seq = None
        if pid != NO_PRODUCER_ID:
            entry = log.producers.get(pid)
            first_seq = info.base_sequence
            last_seq = _last_sequence(first_seq, info.last_offset_delta)
            if entry is not None:
                duplicate = entry.duplicate_of(info.producer_epoch, first_seq, last_seq)
                if duplicate is not None:
                    return duplicate, -1
                entry.check(info.producer_epoch, first_seq, pid)
        if self.held + size > self.total_bytes:
            raise AppendError(ErrorCode.POLICY_VIOLATION,
                              f"the mock cluster holds {self.held} bytes and its cap, kwire.storage.total.bytes, "
                              f"is {self.total_bytes}: a batch of {size} bytes does not fit")
        base = log.end
        log.bases.append(base)
        log.lasts.append(base + info.last_offset_delta)
        log.max_timestamps.append(info.max_timestamp)
        log.batches.append(_kept(data, info.position, size))
        log.starts.append(log.appended)
        log.appended += size
        log.size += size
        log.end = base + info.last_offset_delta + 1
        if len(log.batches) == 1:
            log.log_start = base
        self.held += size
        if entry is None and pid != NO_PRODUCER_ID:
            entry = log.producers[pid] = _ProducerEntry(info.producer_epoch)
        if entry is not None:
            if entry.epoch != info.producer_epoch:
                entry.epoch = info.producer_epoch
                entry.batches.clear()
            entry.batches.append((first_seq, last_seq, base))
        if self.retention_bytes >= 0 and log.size > self.retention_bytes:
            self.held -= log.trim_to(self.retention_bytes)
        self._wake((topic, partition))
        # LogAppendTime batches get the broker's time; CreateTime ones are answered -1 (Kafka's ProduceResponse).
        return base, now_ms if info.timestamp_type == 1 else -1

    # -- long polls ------------------------------------------------------------------------------------

    def watch(self, keys, callback):
        """Call ``callback(key)`` after each append to (or deletion of) each ``(topic, partition)`` of ``keys``."""
        for key in keys:
            self.watchers.setdefault(key, set()).add(callback)

    def unwatch(self, keys, callback):
        for key in keys:
            waiting = self.watchers.get(key)
            if waiting is not None:
                waiting.discard(callback)
                if not waiting:
                    del self.watchers[key]

    def _wake(self, key):
        waiting = self.watchers.get(key)
        if waiting:
            for callback in list(waiting):
                callback(key)
