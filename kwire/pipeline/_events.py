"""What the analysis reads and writes: the event columns, the api keys and
limits it goes by, and the Arrow schemas of the tables it returns.

Events are rows of the decoded frames table (see ``kwire.codec._batch_py``),
reduced by the Spark stage: heartbeat requests are dropped and successful
heartbeat responses are folded into one row per (group, member,
generation) carrying the last such heartbeat's request time in ``ts``.
ConsumerGroupHeartbeat traffic is reduced the same way, keeping every row
that tells something (see :func:`kwire.pipeline._spark_stages.consumer_events`),
and each group a ConsumerGroupDescribe response describes is a row of that
group.  Timestamps are integer microseconds.
"""

from __future__ import annotations

import pyarrow as pa

from kwire.codec import ApiKey


# The api keys the analysis reads, as plain ints: a timeline compares one per
# event, and an IntEnum member there costs more than an int.
METADATA, JOIN_GROUP, HEARTBEAT, LEAVE_GROUP, SYNC_GROUP, CONSUMER_GROUP_HEARTBEAT, CONSUMER_GROUP_DESCRIBE = (
    int(k) for k in (ApiKey.METADATA, ApiKey.JOIN_GROUP, ApiKey.HEARTBEAT, ApiKey.LEAVE_GROUP, ApiKey.SYNC_GROUP,
                     ApiKey.CONSUMER_GROUP_HEARTBEAT, ApiKey.CONSUMER_GROUP_DESCRIBE))
#: The classic group protocol's requests, whose frames (and their responses) the classic analysis reads.
GROUP_API_KEYS = (JOIN_GROUP, HEARTBEAT, LEAVE_GROUP, SYNC_GROUP)
#: The consumer group protocol's (KIP-848) apis among the events.
CONSUMER_API_KEYS = (CONSUMER_GROUP_HEARTBEAT, CONSUMER_GROUP_DESCRIBE)
#: The decoded frames' ``direction``.
REQUEST, RESPONSE = 0, 1

#: Kafka's default session.timeout.ms, for members whose JoinGroup was not captured.
DEFAULT_SESSION_TIMEOUT_MS = 45000

STRATEGIES = ("range", "roundrobin", "sticky", "cooperative-sticky")

#: Without Metadata responses a topic's size is inferred from the highest
#: partition assigned in it.  One flipped byte in a SyncGroup frame can name
#: partition 16,777,215, and a topic that size makes the what-if replay take
#: minutes: a partition number at or beyond this cap marks the frame bad
#: instead.  Kafka's own practical limits are far below it.
DEFAULT_MAX_PARTITIONS = 100_000

# Columns the Spark stage passes in (and tests build by hand).  Metadata
# responses may be among the events (no group), with their
# ``topics`` and ``partition_counts``: see :func:`kwire.pipeline._metadata.metadata_partition_counts`.
CLASSIC_EVENT_COLUMNS = ["group_id", "seq", "ts", "request_seq", "request_ts", "direction", "api_key", "member_id",
                         "group_instance_id", "generation_id", "error_code", "protocol_name", "leader",
                         "session_timeout_ms", "topics", "partition_counts", "members", "assignments", "leaving"]
# What the consumer protocol adds (docs/PIPELINE.md, "Decoded columns"): a member's
# owned or assigned partitions by topic id, the coordinator's heartbeat interval,
# the rebalance timeout and regex a member asks for, Metadata's topic ids beside
# their names, and ConsumerGroupDescribe's groups.
CONSUMER_EVENT_COLUMNS = ["topic_partitions", "heartbeat_interval_ms", "rebalance_timeout_ms", "subscribed_regex",
                          "topic_ids", "described"]
EVENT_COLUMNS = CLASSIC_EVENT_COLUMNS + CONSUMER_EVENT_COLUMNS

REBALANCE_SCHEMA = pa.schema([
    ("group_id", pa.string()), ("generation_id", pa.int32()), ("protocol_name", pa.string()),
    ("leader", pa.string()), ("start_ts", pa.int64()), ("end_ts", pa.int64()), ("stall_ms", pa.float64()),
    ("member_count", pa.int32()), ("members", pa.list_(pa.string())), ("joined", pa.list_(pa.string())),
    ("left", pa.list_(pa.string())), ("trigger", pa.string()), ("triggers", pa.list_(pa.string())),
    ("error_codes", pa.list_(pa.int16())), ("error_count", pa.int64()), ("partitions", pa.int32()),
    ("moved_partitions", pa.int32()),
])

ASSIGNMENT_SCHEMA = pa.schema([
    ("group_id", pa.string()), ("generation_id", pa.int32()), ("topic", pa.string()), ("partition", pa.int32()),
    ("member_id", pa.string()), ("prev_member_id", pa.string()), ("moved", pa.bool_()),
])

WHATIF_SCHEMA = pa.schema([
    ("group_id", pa.string()), ("generation_id", pa.int32()), ("strategy", pa.string()),
    ("observed", pa.bool_()), ("member_count", pa.int32()), ("partitions", pa.int32()), ("assigned", pa.int32()),
    ("moved", pa.int32()), ("max_load", pa.int32()), ("min_load", pa.int32()), ("imbalance", pa.int32()),
    ("reproduces_observed", pa.bool_()),
    # Set when kwire's assignor refused this generation's inputs: the row
    # reports the failure for this group and the job goes on.
    ("error", pa.string()),
])

#: Frames that decoded but contradict the protocol or the rest of the capture.
#: Their content is left out of the analysis; undecodable frames join them in
#: the ``bad_frames`` table with their ``decode_error`` as the reason.
BAD_FRAME_SCHEMA = pa.schema([
    ("seq", pa.int64()), ("ts", pa.int64()), ("group_id", pa.string()), ("api_key", pa.int16()),
    ("direction", pa.int8()), ("member_id", pa.string()), ("generation_id", pa.int32()),
    ("kind", pa.string()),  # "undecodable" (decode_error) or "inconsistent" (left out by the analysis)
    ("reason", pa.string()),
])

#: A topic's partition count from the Metadata response at ``seq``; as
#: :func:`kwire.pipeline._metadata.metadata_partition_counts` returns them, only the rows where the
#: count changes.
COUNT_SCHEMA = pa.schema([("topic", pa.string()), ("seq", pa.int64()), ("partitions", pa.int32())])

#: The columns of Metadata responses among events, as
#: :func:`kwire.pipeline._metadata.metadata_partition_counts` reads them.
METADATA_EVENT_SCHEMA = pa.schema([("seq", pa.int64()), ("ts", pa.int64()), ("api_key", pa.int16()),
                                    ("direction", pa.int8()), ("topics", pa.list_(pa.string())),
                                    ("partition_counts", pa.list_(pa.int32()))])
