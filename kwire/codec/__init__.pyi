# What kwire/codec/__init__.py exports, typed: it picks its classes from the compiled or the pure codec at run
# time, which no type checker can follow. The classes are typed by the compiled codec's stub (generated from the
# schema); the pure twin has the same classes and fields. kwire/__init__.pyi names most of them again: it
# re-exports a subset, and a stub must name each re-exported name.
from typing import Literal

from kwire.codec._codec_c import (
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
)
from kwire.codec._framing import (
    DEFAULT as DEFAULT,
    DEFAULT_MAX_FRAME_SIZE as DEFAULT_MAX_FRAME_SIZE,
    Framing as Framing,
    decode_request_header as decode_request_header,
    split_frames as split_frames,
    split_request as split_request,
    FrameSplitter as FrameSplitter,
    decode_request as decode_request,
    decode_response as decode_response,
    encode_request as encode_request,
    encode_response as encode_response,
    message_class as message_class,
)

IMPLEMENTATION: Literal["cython", "python"]
__all__: list[str]
