"""kwire: the Kafka consumer-group protocol, fast and exact.

A wire codec for JoinGroup, SyncGroup, FindCoordinator and Heartbeat (plus
LeaveGroup and ApiVersions) at every version Kafka defines, the consumer
embedded protocol, and partition assignors that give the same answer as
Apache Kafka's Java client.

This namespace holds what most users need and nothing else:

- the messages: every message class and its nested structs (``JoinGroupRequest``,
  ``Subscription``, ...);
- framing: ``encode_request``, ``encode_response``, ``decode_request``,
  ``decode_response``, ``FrameSplitter``;
- assignment: ``assign``, ``leader_assignments``, ``GroupMember``;
- the errors a caller catches (all under ``KwireError``);
- ``IMPLEMENTATION`` and ``__version__``.

The rest lives in named submodules: ``kwire.codec`` (``message_class``,
``split_frames``, ``split_request``, ``decode_request_header``, ``Framing``,
...), ``kwire.assignors`` (``ArrayGroup``, ``ArrayAssignment``,
``assign_arrays``, ``STRATEGIES``, ``register_strategy``, ...),
``kwire.errors`` (every error class), ``kwire.pipeline``, ``kwire.contrib``.

``kwire.IMPLEMENTATION`` says which codec is loaded: ``"cython"`` (the
default; a missing compiled module is an error) or ``"python"`` when
``KWIRE_NO_EXTENSIONS=1``.
"""

# The codec: every message class (from the twin the switch selected) and the framing functions.
from kwire.codec import (
    IMPLEMENTATION,
    RequestHeader,
    ResponseHeader,
    FindCoordinatorRequest,
    FindCoordinatorResponse,
    Coordinator,
    JoinGroupRequest,
    JoinGroupRequestProtocol,
    JoinGroupResponse,
    JoinGroupResponseMember,
    HeartbeatRequest,
    HeartbeatResponse,
    LeaveGroupRequest,
    MemberIdentity,
    LeaveGroupResponse,
    MemberResponse,
    SyncGroupRequest,
    SyncGroupRequestAssignment,
    SyncGroupResponse,
    ApiVersionsRequest,
    ApiVersionsResponse,
    ApiVersion,
    SupportedFeatureKey,
    FinalizedFeatureKey,
    Subscription,
    SubscriptionTopicPartition,
    Assignment,
    AssignmentTopicPartition,
    StickyAssignorUserData,
    StickyTopicAssignment,
    CooperativeStickyUserData,
    FrameSplitter,
    decode_request,
    decode_response,
    encode_request,
    encode_response,
)
from kwire.errors import (
    AssignmentError,
    DecodeError,
    EncodeError,
    FrameTooLargeError,
    KwireError,
    LimitExceededError,
    UnsupportedVersionError,
)

__version__ = "0.1.0"

# The assignors pull in NumPy; a proxy or client that only needs the codec
# should not pay for that at import time, so they load on first use.
_ASSIGNOR_NAMES = ("GroupMember", "assign", "leader_assignments")


__all__ = [
    "IMPLEMENTATION",
    "KwireError", "AssignmentError", "DecodeError", "EncodeError", "FrameTooLargeError", "LimitExceededError",
    "UnsupportedVersionError",
    "RequestHeader", "ResponseHeader", "FindCoordinatorRequest", "FindCoordinatorResponse", "Coordinator",
    "JoinGroupRequest", "JoinGroupRequestProtocol", "JoinGroupResponse", "JoinGroupResponseMember",
    "HeartbeatRequest", "HeartbeatResponse", "LeaveGroupRequest", "MemberIdentity", "LeaveGroupResponse",
    "MemberResponse", "SyncGroupRequest", "SyncGroupRequestAssignment", "SyncGroupResponse", "ApiVersionsRequest",
    "ApiVersionsResponse", "ApiVersion", "SupportedFeatureKey", "FinalizedFeatureKey", "Subscription",
    "SubscriptionTopicPartition", "Assignment", "AssignmentTopicPartition", "StickyAssignorUserData",
    "StickyTopicAssignment", "CooperativeStickyUserData",
    "FrameSplitter", "decode_request", "decode_response", "encode_request", "encode_response",
    *_ASSIGNOR_NAMES,
]


def __getattr__(name):
    if name in _ASSIGNOR_NAMES:
        from kwire import assignors

        value = getattr(assignors, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'kwire' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_ASSIGNOR_NAMES))
