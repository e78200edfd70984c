"""kwire's schema tables: the one source both codecs are built from.

Each message is described once, here, in kwire's own tables: field names,
types, the versions a field exists in, the versions it may be null in, the
flexible (compact + tagged-field) versions, tags and defaults.  The Cython
codec is *generated* from these tables (``kwire/codec/_codegen.py``, run by
``setup.py``) and the pure-Python codec (``kwire/codec/_codec_py.py``) is *driven*
by them at run time, so the two cannot drift.  ``tests/test_schema_spec.py``
checks every table against Apache Kafka's JSON message specs.

This module must stay importable on its own (``setup.py`` loads it by path
before kwire is built), so it imports nothing from kwire.
"""

import re

#: Upper bound used for open-ended version ranges ("3+").
MAX_VERSION = 0x7FFF

# "records" is Fetch's record data: on the wire, nullable bytes (kwire leaves the
# record batches inside undecoded).
PRIMITIVES = ("bool", "int8", "int16", "int32", "int64", "uint16", "float64", "string", "bytes", "uuid", "records")


class VersionRange:
    """An inclusive version range parsed from Kafka's notation ("0+", "1-3", "2", "none")."""

    __slots__ = ("lo", "hi")

    def __init__(self, spec):
        spec = spec.strip()
        if spec == "none":
            self.lo, self.hi = 1, 0  # empty
        elif spec.endswith("+"):
            self.lo, self.hi = int(spec[:-1]), MAX_VERSION
        elif "-" in spec:
            lo, hi = spec.split("-")
            self.lo, self.hi = int(lo), int(hi)
        else:
            self.lo = self.hi = int(spec)

    @property
    def empty(self):
        return self.lo > self.hi

    def __contains__(self, version):
        return self.lo <= version <= self.hi

    def intersect(self, other):
        r = VersionRange("none")
        r.lo, r.hi = max(self.lo, other.lo), min(self.hi, other.hi)
        return r

    def __eq__(self, other):
        if not isinstance(other, VersionRange):
            return NotImplemented
        return (self.empty and other.empty) or (self.lo, self.hi) == (other.lo, other.hi)

    def __repr__(self):
        if self.empty:
            return "none"
        if self.hi == MAX_VERSION:
            return f"{self.lo}+"
        if self.lo == self.hi:
            return str(self.lo)
        return f"{self.lo}-{self.hi}"


def snake_case(name):
    """Kafka's CamelCase field name as a Python attribute: "GroupInstanceId" -> "group_instance_id"."""
    s = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1_\2", name)
    s = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", s)
    return s.lower()


_NO_DEFAULT = object()


class Field:
    """One field of a struct.

    ``type`` is Kafka's spelling: a primitive, ``[]primitive`` or
    ``[]StructName``.  ``fields`` holds the nested struct's fields.
    ``default`` is the Python value used when the field is absent; left
    out, it is the type's zero value (0, "", b"", [], False).
    """

    def __init__(self, name, type, versions, *, nullable="none", default=_NO_DEFAULT, ignorable=False,
                 tag=None, tagged="none", flexible=None, map_key=False, fields=None):
        self.name = name
        self.attr = snake_case(name)
        self.type = type
        self.versions = VersionRange(versions)
        self.nullable = VersionRange(nullable)
        self.ignorable = ignorable
        self.tag = tag
        self.tagged = VersionRange(tagged)
        # Only RequestHeader.ClientId overrides this ("none"): it stays a
        # classic int16-length string even in flexible header v2.
        self.flexible_override = None if flexible is None else VersionRange(flexible)
        self.map_key = map_key
        self.fields = list(fields or [])
        self.is_array = type.startswith("[]")
        self.element_type = type[2:] if self.is_array else type
        self.is_struct = self.element_type not in PRIMITIVES
        if self.is_struct and not self.fields:
            raise ValueError(f"struct field {name} has no fields")
        self.struct_name = self.element_type if self.is_struct else None
        self._default = default

    @property
    def has_explicit_default(self):
        return self._default is not _NO_DEFAULT

    @property
    def default(self):
        """The value an absent field decodes to (a fresh list for arrays)."""
        if self._default is not _NO_DEFAULT:
            return list(self._default) if isinstance(self._default, list) else self._default
        if self.is_array:
            return []
        if self.is_struct:
            return None
        return {"bool": False, "string": "", "bytes": b"", "float64": 0.0,
                "uuid": b"\x00" * 16}.get(self.type, 0)

    def __repr__(self):
        return f"Field({self.name!r}, {self.type!r}, {self.versions!r})"


class Message:
    """A top-level schema: a request, response, header or embedded data format."""

    def __init__(self, name, kind, valid, flexible, fields, *, api_key=None, class_name=None,
                 struct_class_names=None, version_prefixed=False):
        self.name = name                       # Kafka's name, e.g. "JoinGroupRequest"
        self.class_name = class_name or name   # kwire's class, e.g. "Subscription"
        self.kind = kind                       # request | response | header | data
        self.api_key = api_key
        self.valid = VersionRange(valid)
        self.flexible = VersionRange(flexible)
        self.fields = fields
        # Nested struct names that would clash across messages get kwire names.
        self.struct_class_names = dict(struct_class_names or {})
        # Consumer-protocol data carries an int16 version before the body.
        self.version_prefixed = version_prefixed

    def structs(self):
        """Every nested struct as (class name, Kafka name, fields, version range), depth first."""
        out = []

        seen = set()

        def walk(fields, outer):
            for f in fields:
                # A struct two fields share (Kafka's commonStructs) is one class.
                if f.is_struct and f.struct_name not in seen:
                    seen.add(f.struct_name)
                    rng = f.versions.intersect(outer)
                    walk(f.fields, rng)
                    out.append((self.struct_class_names.get(f.struct_name, f.struct_name), f.struct_name, f.fields, rng))

        walk(self.fields, self.valid)
        return out


F = Field

# The tables below are Kafka's message definitions, transcribed field for field
# (tests/test_schema_spec.py holds them to the JSON specs).  Messages that look
# alike -- a group id, a generation and a member id; an error code after the
# throttle time; a member list -- are alike in Kafka's protocol, but each field
# keeps its own versions, nullability and defaults per message: the repetition
# is the protocol's data, and factoring it would hide what the spec says.

# --------------------------------------------------------------------------
# Headers
# --------------------------------------------------------------------------

REQUEST_HEADER = Message("RequestHeader", "header", "0-2", "2+", [
    F("RequestApiKey", "int16", "0+"),
    F("RequestApiVersion", "int16", "0+"),
    F("CorrelationId", "int32", "0+"),
    F("ClientId", "string", "1+", nullable="1+", ignorable=True, flexible="none"),
])

RESPONSE_HEADER = Message("ResponseHeader", "header", "0-1", "1+", [
    F("CorrelationId", "int32", "0+"),
])

# --------------------------------------------------------------------------
# FindCoordinator (10)
# --------------------------------------------------------------------------

FIND_COORDINATOR_REQUEST = Message("FindCoordinatorRequest", "request", "0-6", "3+", api_key=10, fields=[
    F("Key", "string", "0-3"),
    F("KeyType", "int8", "1+", default=0),
    F("CoordinatorKeys", "[]string", "4+"),
])

FIND_COORDINATOR_RESPONSE = Message("FindCoordinatorResponse", "response", "0-6", "3+", api_key=10, fields=[
    F("ThrottleTimeMs", "int32", "1+", ignorable=True),
    F("ErrorCode", "int16", "0-3"),
    F("ErrorMessage", "string", "1-3", nullable="1-3", ignorable=True),
    F("NodeId", "int32", "0-3"),
    F("Host", "string", "0-3"),
    F("Port", "int32", "0-3"),
    F("Coordinators", "[]Coordinator", "4+", fields=[
        F("Key", "string", "4+"),
        F("NodeId", "int32", "4+"),
        F("Host", "string", "4+"),
        F("Port", "int32", "4+"),
        F("ErrorCode", "int16", "4+"),
        F("ErrorMessage", "string", "4+", nullable="4+", ignorable=True),
    ]),
])

# --------------------------------------------------------------------------
# JoinGroup (11)
# --------------------------------------------------------------------------

JOIN_GROUP_REQUEST = Message("JoinGroupRequest", "request", "0-9", "6+", api_key=11, fields=[
    F("GroupId", "string", "0+"),
    F("SessionTimeoutMs", "int32", "0+"),
    F("RebalanceTimeoutMs", "int32", "1+", default=-1, ignorable=True),
    F("MemberId", "string", "0+"),
    F("GroupInstanceId", "string", "5+", nullable="5+", default=None),
    F("ProtocolType", "string", "0+"),
    F("Protocols", "[]JoinGroupRequestProtocol", "0+", fields=[
        F("Name", "string", "0+", map_key=True),
        F("Metadata", "bytes", "0+"),
    ]),
    F("Reason", "string", "8+", nullable="8+", default=None, ignorable=True),
])

JOIN_GROUP_RESPONSE = Message("JoinGroupResponse", "response", "0-9", "6+", api_key=11, fields=[
    F("ThrottleTimeMs", "int32", "2+", ignorable=True),
    F("ErrorCode", "int16", "0+"),
    F("GenerationId", "int32", "0+", default=-1),
    F("ProtocolType", "string", "7+", nullable="7+", default=None, ignorable=True),
    F("ProtocolName", "string", "0+", nullable="7+"),
    F("Leader", "string", "0+"),
    F("SkipAssignment", "bool", "9+", default=False),
    F("MemberId", "string", "0+"),
    F("Members", "[]JoinGroupResponseMember", "0+", fields=[
        F("MemberId", "string", "0+"),
        F("GroupInstanceId", "string", "5+", nullable="5+", default=None, ignorable=True),
        F("Metadata", "bytes", "0+"),
    ]),
])

# --------------------------------------------------------------------------
# Heartbeat (12): shaped like JoinGroup's and SyncGroup's tables by the
# protocol, not by copying (see the note above the headers)
# --------------------------------------------------------------------------

HEARTBEAT_REQUEST = Message("HeartbeatRequest", "request", "0-4", "4+", api_key=12, fields=[
    F("GroupId", "string", "0+"),
    F("GenerationId", "int32", "0+"),
    F("MemberId", "string", "0+"),
    F("GroupInstanceId", "string", "3+", nullable="3+", default=None),
])

HEARTBEAT_RESPONSE = Message("HeartbeatResponse", "response", "0-4", "4+", api_key=12, fields=[
    F("ThrottleTimeMs", "int32", "1+", ignorable=True),
    F("ErrorCode", "int16", "0+"),
])

# --------------------------------------------------------------------------
# LeaveGroup (13): not in the core four, but every rebalance story needs it
# --------------------------------------------------------------------------

LEAVE_GROUP_REQUEST = Message("LeaveGroupRequest", "request", "0-5", "4+", api_key=13, fields=[
    F("GroupId", "string", "0+"),
    F("MemberId", "string", "0-2"),
    F("Members", "[]MemberIdentity", "3+", fields=[
        F("MemberId", "string", "3+"),
        F("GroupInstanceId", "string", "3+", nullable="3+", default=None),
        F("Reason", "string", "5+", nullable="5+", default=None, ignorable=True),
    ]),
])

LEAVE_GROUP_RESPONSE = Message("LeaveGroupResponse", "response", "0-5", "4+", api_key=13, fields=[
    F("ThrottleTimeMs", "int32", "1+", ignorable=True),
    F("ErrorCode", "int16", "0+"),
    F("Members", "[]MemberResponse", "3+", fields=[
        F("MemberId", "string", "3+"),
        F("GroupInstanceId", "string", "3+", nullable="3+"),
        F("ErrorCode", "int16", "3+"),
    ]),
])

# --------------------------------------------------------------------------
# SyncGroup (14)
# --------------------------------------------------------------------------

SYNC_GROUP_REQUEST = Message("SyncGroupRequest", "request", "0-5", "4+", api_key=14, fields=[
    F("GroupId", "string", "0+"),
    F("GenerationId", "int32", "0+"),
    F("MemberId", "string", "0+"),
    F("GroupInstanceId", "string", "3+", nullable="3+", default=None),
    F("ProtocolType", "string", "5+", nullable="5+", default=None, ignorable=True),
    F("ProtocolName", "string", "5+", nullable="5+", default=None, ignorable=True),
    F("Assignments", "[]SyncGroupRequestAssignment", "0+", fields=[
        F("MemberId", "string", "0+"),
        F("Assignment", "bytes", "0+"),
    ]),
])

SYNC_GROUP_RESPONSE = Message("SyncGroupResponse", "response", "0-5", "4+", api_key=14, fields=[
    F("ThrottleTimeMs", "int32", "1+", ignorable=True),
    F("ErrorCode", "int16", "0+"),
    F("ProtocolType", "string", "5+", nullable="5+", default=None, ignorable=True),
    F("ProtocolName", "string", "5+", nullable="5+", default=None, ignorable=True),
    F("Assignment", "bytes", "0+"),
])

# --------------------------------------------------------------------------
# ApiVersions (18): the first exchange on every connection; its response is
# also the one message here with known tagged fields.
# --------------------------------------------------------------------------

API_VERSIONS_REQUEST = Message("ApiVersionsRequest", "request", "0-4", "3+", api_key=18, fields=[
    F("ClientSoftwareName", "string", "3+", ignorable=True),
    F("ClientSoftwareVersion", "string", "3+", ignorable=True),
])

API_VERSIONS_RESPONSE = Message("ApiVersionsResponse", "response", "0-4", "3+", api_key=18, fields=[
    F("ErrorCode", "int16", "0+"),
    F("ApiKeys", "[]ApiVersion", "0+", fields=[
        F("ApiKey", "int16", "0+", map_key=True),
        F("MinVersion", "int16", "0+"),
        F("MaxVersion", "int16", "0+"),
    ]),
    F("ThrottleTimeMs", "int32", "1+", ignorable=True),
    F("SupportedFeatures", "[]SupportedFeatureKey", "3+", ignorable=True, tag=0, tagged="3+", fields=[
        F("Name", "string", "3+", map_key=True),
        F("MinVersion", "int16", "3+"),
        F("MaxVersion", "int16", "3+"),
    ]),
    F("FinalizedFeaturesEpoch", "int64", "3+", tag=1, tagged="3+", default=-1, ignorable=True),
    F("FinalizedFeatures", "[]FinalizedFeatureKey", "3+", ignorable=True, tag=2, tagged="3+", fields=[
        F("Name", "string", "3+", map_key=True),
        F("MaxVersionLevel", "int16", "3+"),
        F("MinVersionLevel", "int16", "3+"),
    ]),
    F("ZkMigrationReady", "bool", "3+", tag=3, tagged="3+", default=False, ignorable=True),
])

# --------------------------------------------------------------------------
# The consumer embedded protocol (JoinGroup metadata / SyncGroup assignment)
# --------------------------------------------------------------------------

CONSUMER_PROTOCOL_SUBSCRIPTION = Message(
    "ConsumerProtocolSubscription", "data", "0-3", "none", class_name="Subscription", version_prefixed=True,
    struct_class_names={"TopicPartition": "SubscriptionTopicPartition"}, fields=[
        F("Topics", "[]string", "0+"),
        F("UserData", "bytes", "0+", nullable="0+", default=None),
        F("OwnedPartitions", "[]TopicPartition", "1+", ignorable=True, fields=[
            F("Topic", "string", "1+", map_key=True),
            F("Partitions", "[]int32", "1+"),
        ]),
        F("GenerationId", "int32", "2+", default=-1, ignorable=True),
        F("RackId", "string", "3+", nullable="3+", default=None, ignorable=True),
    ])

CONSUMER_PROTOCOL_ASSIGNMENT = Message(
    "ConsumerProtocolAssignment", "data", "0-3", "none", class_name="Assignment", version_prefixed=True,
    struct_class_names={"TopicPartition": "AssignmentTopicPartition"}, fields=[
        F("AssignedPartitions", "[]TopicPartition", "0+", fields=[
            F("Topic", "string", "0+", map_key=True),
            F("Partitions", "[]int32", "0+"),
        ]),
        F("UserData", "bytes", "0+", nullable="0+", default=None),
    ])

# The assignors' userData formats.  Java defines these with its older Struct
# API rather than JSON, so they have no spec file; the layouts are those of
# StickyAssignor (V0: previous assignment; V1: + generation) and
# CooperativeStickyAssignor ({generation}).  Neither is version-prefixed:
# the reader has to try V1 and fall back to V0.
STICKY_ASSIGNOR_USER_DATA = Message(
    "StickyAssignorUserData", "data", "0-1", "none",
    struct_class_names={"TopicAssignment": "StickyTopicAssignment"}, fields=[
        F("PreviousAssignment", "[]TopicAssignment", "0+", fields=[
            F("Topic", "string", "0+"),
            F("Partitions", "[]int32", "0+"),
        ]),
        F("Generation", "int32", "1+", default=-1),
    ])

COOPERATIVE_STICKY_USER_DATA = Message("CooperativeStickyUserData", "data", "0", "none", fields=[
    F("Generation", "int32", "0+", default=-1),
])

def is_compact(field, version, flexible):
    """Whether ``field`` uses compact (uvarint) lengths at this version."""
    if field.flexible_override is not None and version not in field.flexible_override:
        return False
    return flexible


_FIXED_SIZES = {"bool": 1, "int8": 1, "int16": 2, "uint16": 2, "int32": 4, "int64": 8, "float64": 8, "uuid": 16}


def element_min_size(field, version, flexible):
    """Fewest bytes one element of ``field`` can take on the wire.

    Decoders refuse an array count unless count * this fits in the bytes
    left, so a hostile count fails before anything is allocated."""
    t = field.element_type
    if field.is_struct:
        size = 1 if flexible else 0  # the tagged-field count
        for sub in field.fields:
            if version in sub.versions and not (flexible and version in sub.tagged):
                size += sub_min_size(sub, version, flexible)
        return max(size, 1)
    if t in ("string", "bytes", "records"):
        if is_compact(field, version, flexible):
            return 1
        return 2 if t == "string" else 4
    return _FIXED_SIZES[t]


def sub_min_size(field, version, flexible):
    """Fewest bytes the whole value of ``field`` can take."""
    if field.is_array:
        return 1 if is_compact(field, version, flexible) else 4
    if field.is_struct and version in field.nullable:
        return 1  # the null marker alone
    return element_min_size(field, version, flexible)


def api_message(api_key, kind):
    """The table of the ``kind`` ("request" or "response") message of ``api_key``;
    KeyError when kwire has none."""
    return _BY_KEY[(api_key, kind)]


def request_header_version(api_key, api_version):
    """Header version Kafka uses for a request of this api version."""
    msg = api_message(api_key, "request")
    return 2 if api_version in msg.flexible else 1


def response_header_version(api_key, api_version):
    """Header version Kafka uses for a response of this api version.

    ApiVersionsResponse always uses header v0: a client that does not yet
    know the broker's versions must still be able to read it."""
    if api_key == API_VERSIONS_RESPONSE.api_key:
        return 0
    msg = api_message(api_key, "response")
    return 1 if api_version in msg.flexible else 0


# ==========================================================================
# The apis a mock cluster answers beyond the group's own (kwire.testing):
# Metadata, OffsetCommit, OffsetFetch, ListOffsets, Fetch, DescribeGroups,
# ListGroups, and KIP-848's ConsumerGroupHeartbeat and ConsumerGroupDescribe.
# ==========================================================================

# --------------------------------------------------------------------------
# Metadata (3): the topics, partitions and brokers a client starts from
# --------------------------------------------------------------------------
METADATA_REQUEST = Message("MetadataRequest", "request", "0-12", "9+", api_key=3, fields=[
    F("Topics", "[]MetadataRequestTopic", "0+", nullable="1+", fields=[
        F("TopicId", "uuid", "10+", ignorable=True),
        F("Name", "string", "0+", nullable="10+"),
    ]),
    F("AllowAutoTopicCreation", "bool", "4+", default=True),
    F("IncludeClusterAuthorizedOperations", "bool", "8-10"),
    F("IncludeTopicAuthorizedOperations", "bool", "8+"),
])

METADATA_RESPONSE = Message("MetadataResponse", "response", "0-12", "9+", api_key=3, fields=[
    F("ThrottleTimeMs", "int32", "3+", ignorable=True),
    F("Brokers", "[]MetadataResponseBroker", "0+", fields=[
        F("NodeId", "int32", "0+", map_key=True),
        F("Host", "string", "0+"),
        F("Port", "int32", "0+"),
        F("Rack", "string", "1+", nullable="1+", default=None, ignorable=True),
    ]),
    F("ClusterId", "string", "2+", nullable="2+", default=None, ignorable=True),
    F("ControllerId", "int32", "1+", default=-1, ignorable=True),
    F("Topics", "[]MetadataResponseTopic", "0+", fields=[
        F("ErrorCode", "int16", "0+"),
        F("Name", "string", "0+", nullable="12+", map_key=True),
        F("TopicId", "uuid", "10+", ignorable=True),
        F("IsInternal", "bool", "1+", ignorable=True),
        F("Partitions", "[]MetadataResponsePartition", "0+", fields=[
            F("ErrorCode", "int16", "0+"),
            F("PartitionIndex", "int32", "0+"),
            F("LeaderId", "int32", "0+"),
            F("LeaderEpoch", "int32", "7+", default=-1, ignorable=True),
            F("ReplicaNodes", "[]int32", "0+"),
            F("IsrNodes", "[]int32", "0+"),
            F("OfflineReplicas", "[]int32", "5+", ignorable=True),
        ]),
        F("TopicAuthorizedOperations", "int32", "8+", default=-2147483648),
    ]),
    F("ClusterAuthorizedOperations", "int32", "8-10", default=-2147483648),
])

# --------------------------------------------------------------------------
# OffsetCommit (8) and OffsetFetch (9): committed offsets, checked against
# the group's generation and member
# --------------------------------------------------------------------------
OFFSET_COMMIT_REQUEST = Message("OffsetCommitRequest", "request", "0-9", "8+", api_key=8, fields=[
    F("GroupId", "string", "0+"),
    F("GenerationIdOrMemberEpoch", "int32", "1+", default=-1, ignorable=True),
    F("MemberId", "string", "1+", ignorable=True),
    F("GroupInstanceId", "string", "7+", nullable="7+", default=None),
    F("RetentionTimeMs", "int64", "2-4", default=-1, ignorable=True),
    F("Topics", "[]OffsetCommitRequestTopic", "0+", fields=[
        F("Name", "string", "0+"),
        F("Partitions", "[]OffsetCommitRequestPartition", "0+", fields=[
            F("PartitionIndex", "int32", "0+"),
            F("CommittedOffset", "int64", "0+"),
            F("CommittedLeaderEpoch", "int32", "6+", default=-1, ignorable=True),
            F("CommitTimestamp", "int64", "1", default=-1),
            F("CommittedMetadata", "string", "0+", nullable="0+"),
        ]),
    ]),
])

OFFSET_COMMIT_RESPONSE = Message("OffsetCommitResponse", "response", "0-9", "8+", api_key=8, fields=[
    F("ThrottleTimeMs", "int32", "3+", ignorable=True),
    F("Topics", "[]OffsetCommitResponseTopic", "0+", fields=[
        F("Name", "string", "0+"),
        F("Partitions", "[]OffsetCommitResponsePartition", "0+", fields=[
            F("PartitionIndex", "int32", "0+"),
            F("ErrorCode", "int16", "0+"),
        ]),
    ]),
])

OFFSET_FETCH_REQUEST = Message("OffsetFetchRequest", "request", "0-9", "6+", api_key=9, fields=[
    F("GroupId", "string", "0-7"),
    F("Topics", "[]OffsetFetchRequestTopic", "0-7", nullable="2-7", fields=[
        F("Name", "string", "0-7"),
        F("PartitionIndexes", "[]int32", "0-7"),
    ]),
    F("Groups", "[]OffsetFetchRequestGroup", "8+", fields=[
        F("GroupId", "string", "8+"),
        F("MemberId", "string", "9+", nullable="9+", default=None, ignorable=True),
        F("MemberEpoch", "int32", "9+", default=-1, ignorable=True),
        F("Topics", "[]OffsetFetchRequestTopics", "8+", nullable="8+", fields=[
            F("Name", "string", "8+"),
            F("PartitionIndexes", "[]int32", "8+"),
        ]),
    ]),
    F("RequireStable", "bool", "7+"),
])

OFFSET_FETCH_RESPONSE = Message("OffsetFetchResponse", "response", "0-9", "6+", api_key=9, fields=[
    F("ThrottleTimeMs", "int32", "3+", ignorable=True),
    F("Topics", "[]OffsetFetchResponseTopic", "0-7", fields=[
        F("Name", "string", "0-7"),
        F("Partitions", "[]OffsetFetchResponsePartition", "0-7", fields=[
            F("PartitionIndex", "int32", "0-7"),
            F("CommittedOffset", "int64", "0-7"),
            F("CommittedLeaderEpoch", "int32", "5-7", default=-1, ignorable=True),
            F("Metadata", "string", "0-7", nullable="0-7"),
            F("ErrorCode", "int16", "0-7"),
        ]),
    ]),
    F("ErrorCode", "int16", "2-7", ignorable=True),
    F("Groups", "[]OffsetFetchResponseGroup", "8+", fields=[
        F("GroupId", "string", "8+"),
        F("Topics", "[]OffsetFetchResponseTopics", "8+", fields=[
            F("Name", "string", "8+"),
            F("Partitions", "[]OffsetFetchResponsePartitions", "8+", fields=[
                F("PartitionIndex", "int32", "8+"),
                F("CommittedOffset", "int64", "8+"),
                F("CommittedLeaderEpoch", "int32", "8+", default=-1, ignorable=True),
                F("Metadata", "string", "8+", nullable="8+"),
                F("ErrorCode", "int16", "8+"),
            ]),
        ]),
        F("ErrorCode", "int16", "8+"),
    ]),
])

# --------------------------------------------------------------------------
# ListOffsets (2): where a consumer without a committed offset starts
# --------------------------------------------------------------------------
LIST_OFFSETS_REQUEST = Message("ListOffsetsRequest", "request", "1-11", "6+", api_key=2, fields=[
    F("ReplicaId", "int32", "0+"),
    F("IsolationLevel", "int8", "2+"),
    F("Topics", "[]ListOffsetsTopic", "0+", fields=[
        F("Name", "string", "0+"),
        F("Partitions", "[]ListOffsetsPartition", "0+", fields=[
            F("PartitionIndex", "int32", "0+"),
            F("CurrentLeaderEpoch", "int32", "4+", default=-1, ignorable=True),
            F("Timestamp", "int64", "0+"),
            F("MaxNumOffsets", "int32", "0", default=1),
        ]),
    ]),
    F("TimeoutMs", "int32", "10+", ignorable=True),
])

LIST_OFFSETS_RESPONSE = Message("ListOffsetsResponse", "response", "1-11", "6+", api_key=2, fields=[
    F("ThrottleTimeMs", "int32", "2+", ignorable=True),
    F("Topics", "[]ListOffsetsTopicResponse", "0+", fields=[
        F("Name", "string", "0+"),
        F("Partitions", "[]ListOffsetsPartitionResponse", "0+", fields=[
            F("PartitionIndex", "int32", "0+"),
            F("ErrorCode", "int16", "0+"),
            F("OldStyleOffsets", "[]int64", "0"),
            F("Timestamp", "int64", "1+", default=-1),
            F("Offset", "int64", "1+", default=-1),
            F("LeaderEpoch", "int32", "4+", default=-1),
        ]),
    ]),
])

# --------------------------------------------------------------------------
# Fetch (1): Kafka 4.x dropped versions 0-3 (KIP-896); its fields still carry
# their old version ranges, which is why some start below the message's
# --------------------------------------------------------------------------
FETCH_REQUEST = Message("FetchRequest", "request", "4-18", "12+", api_key=1, fields=[
    F("ClusterId", "string", "12+", nullable="12+", default=None, ignorable=True, tag=0, tagged="12+"),
    F("ReplicaId", "int32", "0-14", default=-1),
    F("ReplicaState", "ReplicaState", "15+", tag=1, tagged="15+", fields=[
        F("ReplicaId", "int32", "15+", default=-1),
        F("ReplicaEpoch", "int64", "15+", default=-1),
    ]),
    F("MaxWaitMs", "int32", "0+"),
    F("MinBytes", "int32", "0+"),
    F("MaxBytes", "int32", "3+", default=2147483647, ignorable=True),
    F("IsolationLevel", "int8", "4+", ignorable=True),
    F("SessionId", "int32", "7+", ignorable=True),
    F("SessionEpoch", "int32", "7+", default=-1, ignorable=True),
    F("Topics", "[]FetchTopic", "0+", fields=[
        F("Topic", "string", "0-12", ignorable=True),
        F("TopicId", "uuid", "13+", ignorable=True),
        F("Partitions", "[]FetchPartition", "0+", fields=[
            F("Partition", "int32", "0+"),
            F("CurrentLeaderEpoch", "int32", "9+", default=-1, ignorable=True),
            F("FetchOffset", "int64", "0+"),
            F("LastFetchedEpoch", "int32", "12+", default=-1),
            F("LogStartOffset", "int64", "5+", default=-1, ignorable=True),
            F("PartitionMaxBytes", "int32", "0+"),
            F("ReplicaDirectoryId", "uuid", "17+", ignorable=True, tag=0, tagged="17+"),
            F("HighWatermark", "int64", "18+", default=9223372036854775807, ignorable=True, tag=1, tagged="18+"),
        ]),
    ]),
    F("ForgottenTopicsData", "[]ForgottenTopic", "7+", fields=[
        F("Topic", "string", "7-12", ignorable=True),
        F("TopicId", "uuid", "13+", ignorable=True),
        F("Partitions", "[]int32", "7+"),
    ]),
    F("RackId", "string", "11+", ignorable=True),
])

FETCH_RESPONSE = Message("FetchResponse", "response", "4-18", "12+", api_key=1, fields=[
    F("ThrottleTimeMs", "int32", "1+", ignorable=True),
    F("ErrorCode", "int16", "7+", ignorable=True),
    F("SessionId", "int32", "7+"),
    F("Responses", "[]FetchableTopicResponse", "0+", fields=[
        F("Topic", "string", "0-12", ignorable=True),
        F("TopicId", "uuid", "13+", ignorable=True),
        F("Partitions", "[]PartitionData", "0+", fields=[
            F("PartitionIndex", "int32", "0+"),
            F("ErrorCode", "int16", "0+"),
            F("HighWatermark", "int64", "0+"),
            F("LastStableOffset", "int64", "4+", default=-1, ignorable=True),
            F("LogStartOffset", "int64", "5+", default=-1, ignorable=True),
            F("DivergingEpoch", "EpochEndOffset", "12+", tag=0, tagged="12+", fields=[
                F("Epoch", "int32", "12+", default=-1),
                F("EndOffset", "int64", "12+", default=-1),
            ]),
            F("CurrentLeader", "LeaderIdAndEpoch", "12+", tag=1, tagged="12+", fields=[
                F("LeaderId", "int32", "12+", default=-1),
                F("LeaderEpoch", "int32", "12+", default=-1),
            ]),
            F("SnapshotId", "SnapshotId", "12+", tag=2, tagged="12+", fields=[
                F("EndOffset", "int64", "0+", default=-1),
                F("Epoch", "int32", "0+", default=-1),
            ]),
            F("AbortedTransactions", "[]AbortedTransaction", "4+", nullable="4+", ignorable=True, fields=[
                F("ProducerId", "int64", "4+"),
                F("FirstOffset", "int64", "4+"),
            ]),
            F("PreferredReadReplica", "int32", "11+", default=-1),
            F("Records", "records", "0+", nullable="0+", default=None),
        ]),
    ]),
    F("NodeEndpoints", "[]NodeEndpoint", "16+", tag=0, tagged="16+", fields=[
        F("NodeId", "int32", "16+", map_key=True),
        F("Host", "string", "16+"),
        F("Port", "int32", "16+"),
        F("Rack", "string", "16+", nullable="16+", default=None),
    ]),
])

# --------------------------------------------------------------------------
# DescribeGroups (15) and ListGroups (16)
# --------------------------------------------------------------------------
DESCRIBE_GROUPS_REQUEST = Message("DescribeGroupsRequest", "request", "0-6", "5+", api_key=15, fields=[
    F("Groups", "[]string", "0+"),
    F("IncludeAuthorizedOperations", "bool", "3+"),
])

DESCRIBE_GROUPS_RESPONSE = Message("DescribeGroupsResponse", "response", "0-6", "5+", api_key=15, fields=[
    F("ThrottleTimeMs", "int32", "1+", ignorable=True),
    F("Groups", "[]DescribedGroup", "0+", fields=[
        F("ErrorCode", "int16", "0+"),
        F("ErrorMessage", "string", "6+", nullable="6+", default=None),
        F("GroupId", "string", "0+"),
        F("GroupState", "string", "0+"),
        F("ProtocolType", "string", "0+"),
        F("ProtocolData", "string", "0+"),
        F("Members", "[]DescribedGroupMember", "0+", fields=[
            F("MemberId", "string", "0+"),
            F("GroupInstanceId", "string", "4+", nullable="4+", default=None, ignorable=True),
            F("ClientId", "string", "0+"),
            F("ClientHost", "string", "0+"),
            F("MemberMetadata", "bytes", "0+"),
            F("MemberAssignment", "bytes", "0+"),
        ]),
        F("AuthorizedOperations", "int32", "3+", default=-2147483648),
    ]),
])

LIST_GROUPS_REQUEST = Message("ListGroupsRequest", "request", "0-5", "3+", api_key=16, fields=[
    F("StatesFilter", "[]string", "4+"),
    F("TypesFilter", "[]string", "5+"),
])

LIST_GROUPS_RESPONSE = Message("ListGroupsResponse", "response", "0-5", "3+", api_key=16, fields=[
    F("ThrottleTimeMs", "int32", "1+", ignorable=True),
    F("ErrorCode", "int16", "0+"),
    F("Groups", "[]ListedGroup", "0+", fields=[
        F("GroupId", "string", "0+"),
        F("ProtocolType", "string", "0+"),
        F("GroupState", "string", "4+", ignorable=True),
        F("GroupType", "string", "5+", ignorable=True),
    ]),
])

# --------------------------------------------------------------------------
# ConsumerGroupHeartbeat (68) and ConsumerGroupDescribe (69): KIP-848's
# protocol.  Their nested structs reuse names the classic messages and the
# consumer protocol already hold (Assignment, TopicPartitions, DescribedGroup),
# so they get kwire names prefixed by their message
# --------------------------------------------------------------------------
CONSUMER_GROUP_HEARTBEAT_REQUEST = Message("ConsumerGroupHeartbeatRequest", "request", "0-1", "0+", api_key=68,
    struct_class_names={"TopicPartitions": "ConsumerGroupHeartbeatRequestTopicPartitions"}, fields=[
    F("GroupId", "string", "0+"),
    F("MemberId", "string", "0+"),
    F("MemberEpoch", "int32", "0+"),
    F("InstanceId", "string", "0+", nullable="0+", default=None),
    F("RackId", "string", "0+", nullable="0+", default=None),
    F("RebalanceTimeoutMs", "int32", "0+", default=-1),
    F("SubscribedTopicNames", "[]string", "0+", nullable="0+", default=None),
    F("SubscribedTopicRegex", "string", "1+", nullable="1+", default=None),
    F("ServerAssignor", "string", "0+", nullable="0+", default=None),
    F("TopicPartitions", "[]TopicPartitions", "0+", nullable="0+", default=None, fields=[
        F("TopicId", "uuid", "0+"),
        F("Partitions", "[]int32", "0+"),
    ]),
])

CONSUMER_GROUP_HEARTBEAT_RESPONSE = Message("ConsumerGroupHeartbeatResponse", "response", "0-1", "0+", api_key=68,
    struct_class_names={"Assignment": "ConsumerGroupHeartbeatAssignment",
                        "TopicPartitions": "ConsumerGroupHeartbeatResponseTopicPartitions"}, fields=[
    F("ThrottleTimeMs", "int32", "0+"),
    F("ErrorCode", "int16", "0+"),
    F("ErrorMessage", "string", "0+", nullable="0+", default=None),
    F("MemberId", "string", "0+", nullable="0+", default=None),
    F("MemberEpoch", "int32", "0+"),
    F("HeartbeatIntervalMs", "int32", "0+"),
    F("Assignment", "Assignment", "0+", nullable="0+", default=None, fields=[
        F("TopicPartitions", "[]TopicPartitions", "0+", fields=[
            F("TopicId", "uuid", "0+"),
            F("Partitions", "[]int32", "0+"),
        ]),
    ]),
])

CONSUMER_GROUP_DESCRIBE_REQUEST = Message("ConsumerGroupDescribeRequest", "request", "0-1", "0+", api_key=69, fields=[
    F("GroupIds", "[]string", "0+"),
    F("IncludeAuthorizedOperations", "bool", "0+"),
])

# Kafka's commonStructs: Assignment and TargetAssignment are one struct; sharing
# its fields makes both one class.
_CONSUMER_GROUP_DESCRIBE_ASSIGNMENT = [
    F("TopicPartitions", "[]TopicPartitions", "0+", fields=[
        F("TopicId", "uuid", "0+"),
        F("TopicName", "string", "0+"),
        F("Partitions", "[]int32", "0+"),
    ]),
]

# Kafka 4.x's shape (KIP-1099): string member ids, an Assignment of topic partitions only, and version 1's
# MemberType (-1 unknown, 0 classic, 1 consumer).
CONSUMER_GROUP_DESCRIBE_RESPONSE = Message("ConsumerGroupDescribeResponse", "response", "0-1", "0+", api_key=69,
    struct_class_names={"DescribedGroup": "ConsumerGroupDescribedGroup", "Member": "ConsumerGroupDescribedMember",
                        "Assignment": "ConsumerGroupDescribeAssignment",
                        "TopicPartitions": "ConsumerGroupDescribeTopicPartitions"}, fields=[
    F("ThrottleTimeMs", "int32", "0+"),
    F("Groups", "[]DescribedGroup", "0+", fields=[
        F("ErrorCode", "int16", "0+"),
        F("ErrorMessage", "string", "0+", nullable="0+", default=None),
        F("GroupId", "string", "0+"),
        F("GroupState", "string", "0+"),
        F("GroupEpoch", "int32", "0+"),
        F("AssignmentEpoch", "int32", "0+"),
        F("AssignorName", "string", "0+"),
        F("Members", "[]Member", "0+", fields=[
            F("MemberId", "string", "0+"),
            F("InstanceId", "string", "0+", nullable="0+", default=None),
            F("RackId", "string", "0+", nullable="0+", default=None),
            F("MemberEpoch", "int32", "0+"),
            F("ClientId", "string", "0+"),
            F("ClientHost", "string", "0+"),
            F("SubscribedTopicNames", "[]string", "0+"),
            F("SubscribedTopicRegex", "string", "0+", nullable="0+", default=None),
            F("Assignment", "Assignment", "0+", fields=_CONSUMER_GROUP_DESCRIBE_ASSIGNMENT),
            F("TargetAssignment", "Assignment", "0+", fields=_CONSUMER_GROUP_DESCRIBE_ASSIGNMENT),
            F("MemberType", "int8", "1+", default=-1, ignorable=True),
        ]),
        F("AuthorizedOperations", "int32", "0+", default=-2147483648),
    ]),
])


# ==========================================================================
# Every message, listed once (the order is the generated module's)
# ==========================================================================

HEADERS = [REQUEST_HEADER, RESPONSE_HEADER]

# ==========================================================================
# The apis that carry records and make topics (kwire.testing): Produce,
# InitProducerId, CreateTopics, DeleteTopics and CreatePartitions.  Their
# versions are Kafka 4.x's, after KIP-896 removed the oldest ones.
# ==========================================================================

# --------------------------------------------------------------------------
# Produce (0): record batches in, a base offset per partition out.  v13 names
# topics by id (KIP-516).  ProduceResponse's LeaderIdAndEpoch and NodeEndpoint
# exist from v10, FetchResponse's from v12 and v16: the versions differ, so
# each message keeps its own class
# --------------------------------------------------------------------------
PRODUCE_REQUEST = Message("ProduceRequest", "request", "3-13", "9+", api_key=0, fields=[
    F("TransactionalId", "string", "3+", nullable="3+", default=None),
    F("Acks", "int16", "0+"),
    F("TimeoutMs", "int32", "0+"),
    F("TopicData", "[]TopicProduceData", "0+", fields=[
        F("Name", "string", "0-12", ignorable=True, map_key=True),
        F("TopicId", "uuid", "13+", ignorable=True, map_key=True),
        F("PartitionData", "[]PartitionProduceData", "0+", fields=[
            F("Index", "int32", "0+"),
            F("Records", "records", "0+", nullable="0+", default=None),
        ]),
    ]),
])

PRODUCE_RESPONSE = Message("ProduceResponse", "response", "3-13", "9+", api_key=0,
    struct_class_names={"LeaderIdAndEpoch": "ProduceLeaderIdAndEpoch", "NodeEndpoint": "ProduceNodeEndpoint"},
    fields=[
    F("Responses", "[]TopicProduceResponse", "0+", fields=[
        F("Name", "string", "0-12", ignorable=True, map_key=True),
        F("TopicId", "uuid", "13+", ignorable=True, map_key=True),
        F("PartitionResponses", "[]PartitionProduceResponse", "0+", fields=[
            F("Index", "int32", "0+"),
            F("ErrorCode", "int16", "0+"),
            F("BaseOffset", "int64", "0+"),
            F("LogAppendTimeMs", "int64", "2+", default=-1, ignorable=True),
            F("LogStartOffset", "int64", "5+", default=-1, ignorable=True),
            F("RecordErrors", "[]BatchIndexAndErrorMessage", "8+", ignorable=True, fields=[
                F("BatchIndex", "int32", "8+"),
                F("BatchIndexErrorMessage", "string", "8+", nullable="8+", default=None),
            ]),
            F("ErrorMessage", "string", "8+", nullable="8+", default=None, ignorable=True),
            F("CurrentLeader", "LeaderIdAndEpoch", "10+", tag=0, tagged="10+", fields=[
                F("LeaderId", "int32", "10+", default=-1),
                F("LeaderEpoch", "int32", "10+", default=-1),
            ]),
        ]),
    ]),
    F("ThrottleTimeMs", "int32", "1+", ignorable=True),
    F("NodeEndpoints", "[]NodeEndpoint", "10+", tag=0, tagged="10+", fields=[
        F("NodeId", "int32", "10+", map_key=True),
        F("Host", "string", "10+"),
        F("Port", "int32", "10+"),
        F("Rack", "string", "10+", nullable="10+", default=None),
    ]),
])

# --------------------------------------------------------------------------
# InitProducerId (22): the id and epoch an idempotent producer numbers its
# batches under
# --------------------------------------------------------------------------
INIT_PRODUCER_ID_REQUEST = Message("InitProducerIdRequest", "request", "0-6", "2+", api_key=22, fields=[
    F("TransactionalId", "string", "0+", nullable="0+"),
    F("TransactionTimeoutMs", "int32", "0+"),
    F("ProducerId", "int64", "3+", default=-1),
    F("ProducerEpoch", "int16", "3+", default=-1),
    F("Enable2Pc", "bool", "6+"),
    F("KeepPreparedTxn", "bool", "6+"),
])

INIT_PRODUCER_ID_RESPONSE = Message("InitProducerIdResponse", "response", "0-6", "2+", api_key=22, fields=[
    F("ThrottleTimeMs", "int32", "0+", ignorable=True),
    F("ErrorCode", "int16", "0+"),
    F("ProducerId", "int64", "0+", default=-1),
    F("ProducerEpoch", "int16", "0+"),
    F("OngoingTxnProducerId", "int64", "6+", default=-1),
    F("OngoingTxnProducerEpoch", "int16", "6+", default=-1),
])

# --------------------------------------------------------------------------
# CreateTopics (19), DeleteTopics (20) and CreatePartitions (37)
# --------------------------------------------------------------------------
CREATE_TOPICS_REQUEST = Message("CreateTopicsRequest", "request", "2-7", "5+", api_key=19, fields=[
    F("Topics", "[]CreatableTopic", "0+", fields=[
        F("Name", "string", "0+", map_key=True),
        F("NumPartitions", "int32", "0+"),
        F("ReplicationFactor", "int16", "0+"),
        F("Assignments", "[]CreatableReplicaAssignment", "0+", fields=[
            F("PartitionIndex", "int32", "0+", map_key=True),
            F("BrokerIds", "[]int32", "0+"),
        ]),
        F("Configs", "[]CreatableTopicConfig", "0+", fields=[
            F("Name", "string", "0+", map_key=True),
            F("Value", "string", "0+", nullable="0+"),
        ]),
    ]),
    F("timeoutMs", "int32", "0+", default=60000),
    F("validateOnly", "bool", "1+"),
])

CREATE_TOPICS_RESPONSE = Message("CreateTopicsResponse", "response", "2-7", "5+", api_key=19, fields=[
    F("ThrottleTimeMs", "int32", "2+", ignorable=True),
    F("Topics", "[]CreatableTopicResult", "0+", fields=[
        F("Name", "string", "0+", map_key=True),
        F("TopicId", "uuid", "7+", ignorable=True),
        F("ErrorCode", "int16", "0+"),
        F("ErrorMessage", "string", "1+", nullable="0+", ignorable=True),
        F("TopicConfigErrorCode", "int16", "5+", tag=0, tagged="5+", ignorable=True),
        F("NumPartitions", "int32", "5+", default=-1, ignorable=True),
        F("ReplicationFactor", "int16", "5+", default=-1, ignorable=True),
        F("Configs", "[]CreatableTopicConfigs", "5+", nullable="5+", ignorable=True, fields=[
            F("Name", "string", "5+"),
            F("Value", "string", "5+", nullable="5+"),
            F("ReadOnly", "bool", "5+"),
            F("ConfigSource", "int8", "5+", default=-1, ignorable=True),
            F("IsSensitive", "bool", "5+"),
        ]),
    ]),
])

DELETE_TOPICS_REQUEST = Message("DeleteTopicsRequest", "request", "1-6", "4+", api_key=20, fields=[
    F("Topics", "[]DeleteTopicState", "6+", fields=[
        F("Name", "string", "6+", nullable="6+", default=None),
        F("TopicId", "uuid", "6+"),
    ]),
    F("TopicNames", "[]string", "0-5", ignorable=True),
    F("TimeoutMs", "int32", "0+"),
])

DELETE_TOPICS_RESPONSE = Message("DeleteTopicsResponse", "response", "1-6", "4+", api_key=20, fields=[
    F("ThrottleTimeMs", "int32", "1+", ignorable=True),
    F("Responses", "[]DeletableTopicResult", "0+", fields=[
        F("Name", "string", "0+", nullable="6+", map_key=True),
        F("TopicId", "uuid", "6+", ignorable=True),
        F("ErrorCode", "int16", "0+"),
        F("ErrorMessage", "string", "5+", nullable="5+", default=None, ignorable=True),
    ]),
])

CREATE_PARTITIONS_REQUEST = Message("CreatePartitionsRequest", "request", "0-3", "2+", api_key=37, fields=[
    F("Topics", "[]CreatePartitionsTopic", "0+", fields=[
        F("Name", "string", "0+", map_key=True),
        F("Count", "int32", "0+"),
        F("Assignments", "[]CreatePartitionsAssignment", "0+", nullable="0+", fields=[
            F("BrokerIds", "[]int32", "0+"),
        ]),
    ]),
    F("TimeoutMs", "int32", "0+"),
    F("ValidateOnly", "bool", "0+"),
])

CREATE_PARTITIONS_RESPONSE = Message("CreatePartitionsResponse", "response", "0-3", "2+", api_key=37, fields=[
    F("ThrottleTimeMs", "int32", "0+"),
    F("Results", "[]CreatePartitionsTopicResult", "0+", fields=[
        F("Name", "string", "0+"),
        F("ErrorCode", "int16", "0+"),
        F("ErrorMessage", "string", "0+", nullable="0+", default=None),
    ]),
])

#: The apis of this block (their fuzz targets are a family of their own: a selector byte holds 256).
RECORD_API_MESSAGES = [
    PRODUCE_REQUEST, PRODUCE_RESPONSE,
    INIT_PRODUCER_ID_REQUEST, INIT_PRODUCER_ID_RESPONSE,
    CREATE_TOPICS_REQUEST, CREATE_TOPICS_RESPONSE,
    DELETE_TOPICS_REQUEST, DELETE_TOPICS_RESPONSE,
    CREATE_PARTITIONS_REQUEST, CREATE_PARTITIONS_RESPONSE,
]


API_MESSAGES = [
    FIND_COORDINATOR_REQUEST, FIND_COORDINATOR_RESPONSE,
    JOIN_GROUP_REQUEST, JOIN_GROUP_RESPONSE,
    HEARTBEAT_REQUEST, HEARTBEAT_RESPONSE,
    LEAVE_GROUP_REQUEST, LEAVE_GROUP_RESPONSE,
    SYNC_GROUP_REQUEST, SYNC_GROUP_RESPONSE,
    API_VERSIONS_REQUEST, API_VERSIONS_RESPONSE,
    # The apis a mock cluster answers beyond the group's own.
    METADATA_REQUEST, METADATA_RESPONSE,
    OFFSET_COMMIT_REQUEST, OFFSET_COMMIT_RESPONSE,
    OFFSET_FETCH_REQUEST, OFFSET_FETCH_RESPONSE,
    LIST_OFFSETS_REQUEST, LIST_OFFSETS_RESPONSE,
    FETCH_REQUEST, FETCH_RESPONSE,
    DESCRIBE_GROUPS_REQUEST, DESCRIBE_GROUPS_RESPONSE,
    LIST_GROUPS_REQUEST, LIST_GROUPS_RESPONSE,
    CONSUMER_GROUP_HEARTBEAT_REQUEST, CONSUMER_GROUP_HEARTBEAT_RESPONSE,
    CONSUMER_GROUP_DESCRIBE_REQUEST, CONSUMER_GROUP_DESCRIBE_RESPONSE,
    *RECORD_API_MESSAGES,
]

DATA_MESSAGES = [
    CONSUMER_PROTOCOL_SUBSCRIPTION, CONSUMER_PROTOCOL_ASSIGNMENT,
    STICKY_ASSIGNOR_USER_DATA, COOPERATIVE_STICKY_USER_DATA,
]

ALL_MESSAGES = HEADERS + API_MESSAGES + DATA_MESSAGES

#: Messages whose tables mirror a JSON spec file of the same Kafka name.
SPEC_CHECKED = HEADERS + API_MESSAGES + [CONSUMER_PROTOCOL_SUBSCRIPTION, CONSUMER_PROTOCOL_ASSIGNMENT]

_BY_KEY = {(m.api_key, m.kind): m for m in API_MESSAGES}
