"""What the two batch decoders share: the output schema, its column buffers, and field extraction.

``_batch_py`` (pure) and ``_batch_c`` (compiled) both import this module and
neither imports the other.  Nothing here depends on which twin runs: message
bodies are decoded by the codec the switch selected (through framing).  The
pure twin copies every decoded message's fields into a row with
:func:`extract_request` and :func:`extract_response`; the compiled twin reads
the fields of well-formed frames into its columns itself and hands every row
it declines to these functions, and tests hold the two tables equal column by
column (``tests/test_pipeline_decode.py``).
"""

from __future__ import annotations

import base64
from typing import NamedTuple

import numpy as np
import pyarrow as pa

from kwire.codec._api_keys import ApiKey
from kwire.codec._framing import DEFAULT

# The message classes of the codec the switch selected.
RequestHeader = DEFAULT.codec.RequestHeader
Subscription = DEFAULT.codec.Subscription
Assignment = DEFAULT.codec.Assignment

# Plain ints (the schema's api keys), as the rows and the compiled twin's C comparisons hold them.
(METADATA, FIND_COORDINATOR, JOIN_GROUP, HEARTBEAT, LEAVE_GROUP, SYNC_GROUP, CONSUMER_GROUP_HEARTBEAT,
 CONSUMER_GROUP_DESCRIBE) = (
    int(k) for k in (ApiKey.METADATA, ApiKey.FIND_COORDINATOR, ApiKey.JOIN_GROUP, ApiKey.HEARTBEAT, ApiKey.LEAVE_GROUP,
                     ApiKey.SYNC_GROUP, ApiKey.CONSUMER_GROUP_HEARTBEAT, ApiKey.CONSUMER_GROUP_DESCRIBE))
GROUP_APIS = (FIND_COORDINATOR, JOIN_GROUP, HEARTBEAT, LEAVE_GROUP, SYNC_GROUP, CONSUMER_GROUP_HEARTBEAT)
# Metadata responses are decoded for the topic sizes and ids they carry
# (Metadata requests are not: the response alone names each topic and its
# partitions).  ConsumerGroupDescribe responses name their groups themselves,
# so their requests are not read either.
RESPONSE_APIS = GROUP_APIS + (METADATA, CONSUMER_GROUP_DESCRIBE)
# Metadata responses carry each topic's id from this version on (MetadataResponse's TopicId).
METADATA_TOPIC_ID_VERSION = 10


class PendingRequest(NamedTuple):
    """A request waiting for its response between batches (``Pairing.pending``'s values): what the response's
    row inherits from it.  A tuple, so both twins' pairings hold equal values."""
    api_key: int
    api_version: int
    seq: int
    ts: int
    group_id: str | None
    member_id: str | None
    generation_id: int | None
    group_instance_id: str | None

_TS = pa.timestamp("us", tz="UTC")
MEMBER_TYPE = pa.struct([("member_id", pa.string()), ("group_instance_id", pa.string()),
                         ("topics", pa.list_(pa.string()))])
ASSIGNMENT_TYPE = pa.struct([("member_id", pa.string()), ("topic", pa.string()),
                             ("partitions", pa.list_(pa.int32()))])

# A topic's partitions by its id, as ConsumerGroupHeartbeat and ConsumerGroupDescribe carry them.
TOPIC_PARTITIONS_TYPE = pa.struct([("topic_id", pa.string()), ("partitions", pa.list_(pa.int32()))])
DESCRIBED_MEMBER_TYPE = pa.struct([("member_id", pa.string()), ("group_instance_id", pa.string()),
                                   ("member_epoch", pa.int32()), ("member_type", pa.int8()),
                                   ("assigned", pa.list_(TOPIC_PARTITIONS_TYPE)),
                                   ("target", pa.list_(TOPIC_PARTITIONS_TYPE))])
DESCRIBED_GROUP_TYPE = pa.struct([("group_id", pa.string()), ("error_code", pa.int16()), ("group_state", pa.string()),
                                  ("group_epoch", pa.int32()), ("assignment_epoch", pa.int32()),
                                  ("assignor_name", pa.string()), ("members", pa.list_(DESCRIBED_MEMBER_TYPE))])

FRAMES_SCHEMA = pa.schema([
    ("seq", pa.int64()), ("ts", _TS), ("conn", pa.int64()), ("direction", pa.int8()),
    ("frame_len", pa.int32()), ("truncated", pa.bool_()),
    ("api_key", pa.int16()), ("api_version", pa.int16()), ("correlation_id", pa.int32()),
    ("request_seq", pa.int64()), ("request_ts", _TS), ("client_id", pa.string()),
    ("group_id", pa.string()), ("member_id", pa.string()), ("group_instance_id", pa.string()),
    ("generation_id", pa.int32()), ("error_code", pa.int16()),
    ("protocol_type", pa.string()), ("protocol_name", pa.string()), ("leader", pa.string()),
    ("session_timeout_ms", pa.int32()), ("rebalance_timeout_ms", pa.int32()),
    ("protocols", pa.list_(pa.string())), ("topics", pa.list_(pa.string())),
    ("partition_counts", pa.list_(pa.int32())),
    ("members", pa.list_(MEMBER_TYPE)), ("assignments", pa.list_(ASSIGNMENT_TYPE)),
    ("leaving", pa.list_(pa.string())),
    ("topic_partitions", pa.list_(TOPIC_PARTITIONS_TYPE)), ("heartbeat_interval_ms", pa.int32()),
    ("subscribed_regex", pa.string()), ("topic_ids", pa.list_(pa.string())),
    ("described", pa.list_(DESCRIBED_GROUP_TYPE)),
    ("decode_error", pa.string()),
])

# Columns kept as Python values (strings and nested values); the rest are
# fixed-width and go into NumPy arrays with a validity mask.
OBJECT_COLUMNS = ("client_id", "group_id", "member_id", "group_instance_id", "protocol_type", "protocol_name",
                  "leader", "protocols", "topics", "partition_counts", "members", "assignments", "leaving",
                  "topic_partitions", "subscribed_regex", "topic_ids", "described", "decode_error")
# The plain string columns among them.  The compiled twin writes these straight
# into Arrow's layout (offsets and UTF-8 bytes) and hands them to
# :meth:`Columns.to_batch` ready-made.
STRING_COLUMNS = tuple(f.name for f in FRAMES_SCHEMA if f.type == pa.string())
# Fixed-width columns that may be null, and the NumPy type each is built in.
NULLABLE_INTS = {"api_key": np.int16, "api_version": np.int16, "correlation_id": np.int32,
                 "request_seq": np.int64, "request_ts": np.int64, "generation_id": np.int32,
                 "error_code": np.int16, "session_timeout_ms": np.int32, "rebalance_timeout_ms": np.int32,
                 "heartbeat_interval_ms": np.int32}

def error_text(exc):
    """The ``decode_error`` text of an exception."""
    return f"{type(exc).__name__}: {exc}"


def uuid_text(raw):
    """Kafka's text form of a Uuid (``Uuid.toString``): the 16 bytes in URL-safe base64, unpadded (22 characters)."""
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


def topic_partitions(tps):
    """The ``topic_partitions`` value of a list of (TopicId, Partitions) structs."""
    return [{"topic_id": uuid_text(tp.topic_id), "partitions": list(tp.partitions)} for tp in tps]


def described_groups(groups):
    """The ``described`` value of a ConsumerGroupDescribe response's groups."""
    return [{"group_id": g.group_id, "error_code": g.error_code, "group_state": g.group_state,
             "group_epoch": g.group_epoch, "assignment_epoch": g.assignment_epoch, "assignor_name": g.assignor_name,
             "members": [{"member_id": m.member_id, "group_instance_id": m.instance_id, "member_epoch": m.member_epoch,
                          "member_type": m.member_type,
                          "assigned": topic_partitions(m.assignment.topic_partitions),
                          "target": topic_partitions(m.target_assignment.topic_partitions)}
                         for m in g.members]}
            for g in groups]


def _consumer_topics(metadata):
    return list(Subscription.decode(metadata).topics)


def _assignment_rows(member_id, data, out):
    if not len(data):
        # Empty bytes: no assignment for this member (not an error).
        return
    for tp in Assignment.decode(data).assigned_partitions:
        out.append({"member_id": member_id, "topic": tp.topic, "partitions": list(tp.partitions)})


# Request fields copied as they are into a column: (column, field) pairs.
def _same(*names):
    return tuple((name, name) for name in names)


_MEMBER_FIELDS = _same("group_id", "member_id", "group_instance_id")
_REQUEST_FIELDS = {
    JOIN_GROUP: _MEMBER_FIELDS + _same("session_timeout_ms", "rebalance_timeout_ms", "protocol_type"),
    HEARTBEAT: _MEMBER_FIELDS + _same("generation_id"),
    SYNC_GROUP: _MEMBER_FIELDS + _same("generation_id", "protocol_type", "protocol_name"),
    # A member epoch is the consumer protocol's generation.  The nullable
    # fields are null when unchanged since the member's previous heartbeat
    # (GroupMetadataManager.consumerGroupHeartbeat), and stay null here.
    CONSUMER_GROUP_HEARTBEAT: _same("group_id", "member_id", "rebalance_timeout_ms") + (
        ("group_instance_id", "instance_id"), ("generation_id", "member_epoch"),
        ("subscribed_regex", "subscribed_topic_regex"), ("protocol_name", "server_assignor")),
}


def extract_request(api_key, msg, row):
    """Fill ``row`` (a dict) from a decoded request body.  Consumer-protocol
    payloads (Subscription, Assignment) are decoded here; their failures
    raise like any other decode failure."""
    for column, name in _REQUEST_FIELDS.get(api_key, ()):
        row[column] = getattr(msg, name)
    if api_key == JOIN_GROUP:
        row["protocols"] = [p.name for p in msg.protocols]
        if msg.protocol_type == "consumer" and msg.protocols:
            row["topics"] = _consumer_topics(msg.protocols[0].metadata)
    elif api_key == SYNC_GROUP:
        if msg.protocol_type in (None, "consumer"):
            # Other protocols (Kafka Connect, ...) have assignments of their own format.
            out = []
            for a in msg.assignments:
                _assignment_rows(a.member_id, a.assignment, out)
            row["assignments"] = out
    elif api_key == LEAVE_GROUP:
        row["group_id"] = msg.group_id
        if msg.members:
            row["leaving"] = [m.member_id for m in msg.members]
            row["member_id"] = msg.members[0].member_id
            row["group_instance_id"] = msg.members[0].group_instance_id
        else:
            row["member_id"] = msg.member_id
            row["leaving"] = [msg.member_id]
    elif api_key == CONSUMER_GROUP_HEARTBEAT:
        if msg.subscribed_topic_names is not None:
            row["topics"] = list(msg.subscribed_topic_names)
        if msg.topic_partitions is not None:
            row["topic_partitions"] = topic_partitions(msg.topic_partitions)
    elif api_key == FIND_COORDINATOR:
        if msg.coordinator_keys:
            if msg.key_type == 0:
                row["group_id"] = msg.coordinator_keys[0]
        elif msg.key_type == 0:
            row["group_id"] = msg.key


def partition_count(partitions):
    """A topic's size as a Metadata response gives it: the number of
    partitions listed, when they are 0..n-1 (a broker lists every partition
    of a topic, unavailable ones with an error of their own); None when the
    listing cannot be a topic's, which the analysis reports as a bad frame."""
    n = len(partitions)
    indexes = {p.partition_index for p in partitions}
    if n and len(indexes) == n and min(indexes) == 0 and max(indexes) == n - 1:
        return n
    return None


def extract_response(api_key, version, msg, row):
    """Fill ``row`` from a decoded response body of ``version`` (request context already in ``row``)."""
    if api_key == METADATA:
        # No error code of its own, and nothing of a group's: each topic has
        # an error code, and only the topics answered without one have a size.
        names, counts, ids = [], [], []
        for t in msg.topics:
            if t.error_code == 0 and t.name is not None:
                names.append(t.name)
                counts.append(partition_count(t.partitions))
                ids.append(t.topic_id)
        row["topics"] = names
        row["partition_counts"] = counts
        if version >= METADATA_TOPIC_ID_VERSION:
            row["topic_ids"] = [uuid_text(i) for i in ids]
        return
    if api_key == CONSUMER_GROUP_DESCRIBE:
        # An error code per group, none of the response's own.
        row["described"] = described_groups(msg.groups)
        return
    row["error_code"] = msg.error_code
    if api_key == CONSUMER_GROUP_HEARTBEAT:
        row["generation_id"] = msg.member_epoch
        if msg.member_id is not None:
            row["member_id"] = msg.member_id
        row["heartbeat_interval_ms"] = msg.heartbeat_interval_ms
        if msg.assignment is not None:
            row["topic_partitions"] = topic_partitions(msg.assignment.topic_partitions)
        return
    if api_key == JOIN_GROUP:
        row["generation_id"] = msg.generation_id
        row["protocol_type"] = msg.protocol_type
        row["protocol_name"] = msg.protocol_name
        row["leader"] = msg.leader
        # The coordinator names the member here (MEMBER_ID_REQUIRED, first join).
        row["member_id"] = msg.member_id
        members = []
        consumer = row.get("protocol_type") in (None, "consumer")
        for m in msg.members:
            members.append({"member_id": m.member_id, "group_instance_id": m.group_instance_id,
                            "topics": _consumer_topics(m.metadata) if consumer else None})
        row["members"] = members
    elif api_key == SYNC_GROUP:
        row["protocol_type"] = msg.protocol_type or row.get("protocol_type")
        row["protocol_name"] = msg.protocol_name or row.get("protocol_name")
        if row["protocol_type"] in (None, "consumer"):
            out = []
            _assignment_rows(row.get("member_id"), msg.assignment, out)
            row["assignments"] = out
    elif api_key == FIND_COORDINATOR:
        if msg.coordinators:
            row["error_code"] = msg.coordinators[0].error_code


def _scattered(values, n, arrow_type):
    """An Arrow array of ``n`` rows holding ``values`` (row -> value) and
    null elsewhere: the values are converted once, then placed by ``take``."""
    if not values:
        return pa.nulls(n, arrow_type)
    dense = pa.concat_arrays([pa.array(list(values.values()), arrow_type), pa.nulls(1, arrow_type)])
    index = np.full(n, len(values), np.int64)
    index[np.fromiter(values.keys(), np.int64, len(values))] = np.arange(len(values))
    return dense.take(index)


class Columns:
    """Output under construction: NumPy for fixed-width columns, Python values for the rest.

    ``objects`` names the columns kept as Python values here; a decoder that builds
    some columns itself leaves them out and passes them to :meth:`to_batch`."""

    def __init__(self, n, objects=OBJECT_COLUMNS):
        self.n = n
        self.ints = {name: np.zeros(n, dtype) for name, dtype in NULLABLE_INTS.items()}
        self.valid = {name: np.zeros(n, bool) for name in NULLABLE_INTS}
        # Row -> value, for the rows that have one: most rows of a capture
        # (Heartbeats) have none of these, and a list of n Nones per column
        # would be traversed by every garbage collection during the batch.
        self.objs = {name: {} for name in objects}

    def set_row(self, i, row):
        for k, v in row.items():
            if v is None:
                continue
            if k in self.ints:
                self.ints[k][i] = v
                self.valid[k][i] = True
            else:
                self.objs[k][i] = v

    def to_batch(self, seq, ts, conn, direction, frame_len, truncated, ready=None):
        """The RecordBatch; ``ready`` maps the names of columns built
        elsewhere to their Arrow arrays."""
        arrays = []
        for field in FRAMES_SCHEMA:
            name = field.name
            if ready is not None and name in ready:
                arr = ready[name]
            elif name == "seq":
                arr = pa.array(np.asarray(seq, np.int64))
            elif name == "ts":
                arr = pa.array(np.asarray(ts, np.int64)).cast(_TS)
            elif name == "conn":
                arr = pa.array(np.asarray(conn, np.int64))
            elif name == "direction":
                arr = pa.array(np.asarray(direction, np.int8))
            elif name == "frame_len":
                arr = pa.array(np.asarray(frame_len, np.int32))
            elif name == "truncated":
                arr = pa.array(np.asarray(truncated, bool))
            elif name in self.ints:
                arr = pa.array(self.ints[name], mask=~self.valid[name])
                if name == "request_ts":
                    arr = arr.cast(_TS)
            else:
                arr = _scattered(self.objs[name], self.n, field.type)
            arrays.append(arr)
        return pa.RecordBatch.from_arrays(arrays, schema=FRAMES_SCHEMA)
