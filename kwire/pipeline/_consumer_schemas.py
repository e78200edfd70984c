"""What the consumer-protocol analysis reads and writes: the api keys and
error codes it goes by, the event columns it reads beyond the classic
analysis's, and the Arrow schemas of its tables, each declared here once.

A group is analysed here when any of its events is a ConsumerGroupHeartbeat
(a ``consumer`` group, or ``mixed`` when classic members' JoinGroup /
SyncGroup frames carry the same group id); every other group stays on the
classic path (:mod:`kwire.pipeline._timeline`).
"""

from __future__ import annotations

import pyarrow as pa

from kwire.codec import ApiKey, ErrorCode

# Plain ints: the timeline compares one per event, and an IntEnum there costs more.
CONSUMER_HEARTBEAT, CONSUMER_DESCRIBE = int(ApiKey.CONSUMER_GROUP_HEARTBEAT), int(ApiKey.CONSUMER_GROUP_DESCRIBE)
FENCED_MEMBER_EPOCH, UNKNOWN_MEMBER_ID = int(ErrorCode.FENCED_MEMBER_EPOCH), int(ErrorCode.UNKNOWN_MEMBER_ID)
#: The errors after which a consumer-protocol member has lost its partitions and rejoins at epoch 0
#: (``AbstractMembershipManager.transitionToFenced``): the coordinator no longer counts it in.
FENCING_ERRORS = frozenset((FENCED_MEMBER_EPOCH, UNKNOWN_MEMBER_ID))

#: The member epochs a ConsumerGroupHeartbeat request carries to join or leave
#: (``GroupMetadataManager.consumerGroupHeartbeat``): 0 joins, -1 leaves, -2 is
#: a static member's leave for now (its partitions stay held under its instance id).
JOIN_EPOCH, LEAVE_EPOCH, STATIC_LEAVE_EPOCH = 0, -1, -2

#: ``group.consumer.session.timeout.ms``'s default (``GroupCoordinatorConfig``): the
#: session of a consumer-protocol member is the broker's, not in any frame, so a
#: member that stops heartbeating, and that the coordinator is not seen to remove
#: earlier, is taken to be fenced this long after its last one, unless the caller
#: gives the brokers' setting.
CONSUMER_SESSION_TIMEOUT_MS = 45000

#: ``group.consumer.heartbeat.interval.ms``'s default (``GroupCoordinatorConfig``), for a
#: group whose responses were not captured, and the Java client's ``max.poll.interval.ms``
#: default, which it sends as the rebalance timeout.
CONSUMER_HEARTBEAT_INTERVAL_MS = 5000
DEFAULT_REBALANCE_TIMEOUT_MS = 300000

#: Partitions in the output tables: topic names (or a topic id's text where no
#: Metadata response names it) and their partitions, sorted.
PARTITIONS_TYPE = pa.list_(pa.struct([("topic", pa.string()), ("partitions", pa.list_(pa.int32()))]))

#: The group epoch and target assignment epoch over time: a row each time
#: either is first seen higher (``source``: ``heartbeat``, a member epoch in a
#: response; ``join_group``, a classic member's generation in a mixed group;
#: ``describe``, a ConsumerGroupDescribe response).
CONSUMER_EPOCH_SCHEMA = pa.schema([
    ("group_id", pa.string()), ("protocol", pa.string()), ("seq", pa.int64()), ("ts", pa.int64()),
    ("group_epoch", pa.int32()), ("assignment_epoch", pa.int32()), ("source", pa.string()),
    ("member_id", pa.string())])

#: Each member's epoch, assigned partitions and partitions still to revoke,
#: a row each time one of them changes.
CONSUMER_MEMBER_SCHEMA = pa.schema([
    ("group_id", pa.string()), ("member_id", pa.string()), ("member_protocol", pa.string()), ("seq", pa.int64()),
    ("ts", pa.int64()), ("member_epoch", pa.int32()), ("assigned", PARTITIONS_TYPE), ("to_revoke", PARTITIONS_TYPE),
    ("assigned_count", pa.int32()), ("to_revoke_count", pa.int32())])

#: Joins, leaves and fencing.  ``kind``: ``join``, ``rejoin`` (epoch 0 again
#: after a fencing), ``leave``, ``static_leave`` (epoch -2), ``fenced`` (an
#: error in ``error_code`` told the member it is out), ``session_timeout``
#: (inferred: the coordinator was seen to have removed a member silent for good,
#: ``ts`` the bump that showed it; or no heartbeat for a session timeout, ``ts``
#: when it expired).  ``silent_ms``: for the first kind, the silence from the
#: member's last heartbeat to that bump, so the coordinator's session timeout is
#: at most that; null otherwise.
CONSUMER_MEMBERSHIP_SCHEMA = pa.schema([
    ("group_id", pa.string()), ("member_id", pa.string()), ("member_protocol", pa.string()), ("seq", pa.int64()),
    ("ts", pa.int64()), ("kind", pa.string()), ("error_code", pa.int16()), ("member_epoch", pa.int32()),
    ("silent_ms", pa.float64())])

#: One row per group epoch bump (a reconciliation; docs/PIPELINE.md defines its measures).  ``outcome``:
#: ``stable`` (every member acknowledged its target), ``superseded`` (the next bump came first), ``open`` (the
#: capture ended first), ``empty`` (no member left to reconcile).
RECONCILIATION_SCHEMA = pa.schema([
    ("group_id", pa.string()), ("protocol", pa.string()), ("group_epoch", pa.int32()), ("start_ts", pa.int64()),
    ("end_ts", pa.int64()), ("time_to_stable_ms", pa.float64()), ("partition_seconds_unowned", pa.float64()),
    ("outcome", pa.string()),
    ("trigger", pa.string()), ("triggers", pa.list_(pa.string())), ("members", pa.int32()),
    ("joined", pa.list_(pa.string())), ("left", pa.list_(pa.string())), ("fenced", pa.list_(pa.string())),
    # partitions the members' targets hold; partitions that went unowned and were handed over in it
    ("partitions", pa.int32()), ("moved_partitions", pa.int32()), ("error_codes", pa.list_(pa.int16()))])

#: What contradicts the protocol, counted and kept: ``epoch_backwards``,
#: ``ack_not_given`` (a member acknowledged partitions it was never given),
#: ``response_without_request``.
CONSUMER_ANOMALY_SCHEMA = pa.schema([
    ("group_id", pa.string()), ("seq", pa.int64()), ("ts", pa.int64()), ("member_id", pa.string()),
    ("kind", pa.string()), ("detail", pa.string())])

#: The tables, by the name of their directory under the output.
CONSUMER_TABLES = {"consumer_epochs": CONSUMER_EPOCH_SCHEMA, "consumer_members": CONSUMER_MEMBER_SCHEMA,
                   "consumer_membership": CONSUMER_MEMBERSHIP_SCHEMA, "reconciliations": RECONCILIATION_SCHEMA,
                   "consumer_anomalies": CONSUMER_ANOMALY_SCHEMA}
