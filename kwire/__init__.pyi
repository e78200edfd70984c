# What kwire/__init__.py exports, typed: it picks its classes from the compiled or the pure codec at run time,
# which no type checker can follow, so editors and mypy read this file instead. The classes are typed by the
# compiled codec's stub (generated from the schema); the pure twin has the same classes and fields.
# The names repeat kwire/codec/__init__.pyi's on purpose: kwire re-exports a subset of kwire.codec (not its
# Framing, DEFAULT, message_class, split_frames, split_request or decode_request_header), and a stub re-exports only what it names with ``X as X`` (a ``*`` import
# would take all of kwire.codec's public names).

from kwire.codec import (
    ApiVersion as ApiVersion,
    ApiVersionsRequest as ApiVersionsRequest,
    ApiVersionsResponse as ApiVersionsResponse,
    Assignment as Assignment,
    AssignmentTopicPartition as AssignmentTopicPartition,
    Coordinator as Coordinator,
    CooperativeStickyUserData as CooperativeStickyUserData,
    FinalizedFeatureKey as FinalizedFeatureKey,
    FindCoordinatorRequest as FindCoordinatorRequest,
    FindCoordinatorResponse as FindCoordinatorResponse,
    HeartbeatRequest as HeartbeatRequest,
    HeartbeatResponse as HeartbeatResponse,
    JoinGroupRequest as JoinGroupRequest,
    JoinGroupRequestProtocol as JoinGroupRequestProtocol,
    JoinGroupResponse as JoinGroupResponse,
    JoinGroupResponseMember as JoinGroupResponseMember,
    LeaveGroupRequest as LeaveGroupRequest,
    LeaveGroupResponse as LeaveGroupResponse,
    MemberIdentity as MemberIdentity,
    MemberResponse as MemberResponse,
    RequestHeader as RequestHeader,
    ResponseHeader as ResponseHeader,
    StickyAssignorUserData as StickyAssignorUserData,
    StickyTopicAssignment as StickyTopicAssignment,
    Subscription as Subscription,
    SubscriptionTopicPartition as SubscriptionTopicPartition,
    SupportedFeatureKey as SupportedFeatureKey,
    SyncGroupRequest as SyncGroupRequest,
    SyncGroupRequestAssignment as SyncGroupRequestAssignment,
    SyncGroupResponse as SyncGroupResponse,
    FrameSplitter as FrameSplitter,
    decode_request as decode_request,
    decode_response as decode_response,
    encode_request as encode_request,
    encode_response as encode_response,
)
from kwire.errors import (
    AssignmentError as AssignmentError,
    DecodeError as DecodeError,
    EncodeError as EncodeError,
    FrameTooLargeError as FrameTooLargeError,
    LimitExceededError as LimitExceededError,
    KwireError as KwireError,
    UnsupportedVersionError as UnsupportedVersionError,
)
# Loaded on first use at run time (they pull in NumPy); statically they are plain names.
from kwire.assignors import (
    GroupMember as GroupMember,
    assign as assign,
    leader_assignments as leader_assignments,
)

from kwire.codec import IMPLEMENTATION as IMPLEMENTATION
__version__: str
__all__: list[str]
