"""The wire codec: kwire's schema tables, the two codecs generated from them, and framing.

The flow inside this package:

- ``_schema.py`` holds every message as data (fields, types, versions, tags);
- ``_codegen.py`` turns those tables into the compiled codec at build time
  (``_codec_c.pyx``, gitignored; its reader, writer and class emitters are
  ``_codegen_read.py``, ``_codegen_write.py`` and ``_codegen_classes.py``) over
  the hand-written runtime in ``_wire.pxi`` (``_wire_read.pxi``,
  ``_wire_write.pxi``, ``_wire_stored.pxi``); ``_codec_py.py`` interprets the
  same tables in pure Python (``_codec_py_read.py``, ``_codec_py_write.py``,
  ``_codec_py_classes.py``, ``_codec_py_plans.py``);
- ``_bytes.pxd`` holds the byte primitives and the growable buffer that every
  compiled module of kwire cimports;
- each codec frames its own messages (size prefix, header, body: ``_framing_c.pxi``
  inside the compiled codec, the "Framing" section of ``_codec_py.py``);
  ``_framing.py`` picks those of the selected codec and holds the stream
  splitter;
- ``_batch_c.pyx`` / ``_batch_py.py`` decode whole captures into Arrow
  columns for the pipeline (loaded only by ``kwire.pipeline``, through
  :func:`batch_decoder` in ``_batch.py``); what the two share (output schema,
  column buffers, field extraction) is ``_batch_common.py``;
- what the two codec twins share, neither importing the other, is
  ``_codec_common.py``;
- ``_records_c.pyx`` / ``_records_py.py`` read and write record batches (the
  payload of Produce and Fetch), sharing ``_records_common.py`` (constants,
  compression, the objects' plain parts); ``_records.py`` picks the twin.

This module only re-exports: the message classes of the codec the switch
selected (``kwire.IMPLEMENTATION``) and the framing functions over it.
"""

from kwire._impl import IMPLEMENTATION
from kwire.codec._api_keys import API_VERSIONS_RANGE, ApiKey
from kwire.codec._error_codes import ErrorCode, error_name
from kwire.codec._batch import batch_decoder
from kwire.codec._topic_ids import topic_id_text
from kwire.codec._records import (
    DEFAULT_MAX_DECOMPRESSED_SIZE,
    BatchInfo,
    BatchList,
    Header,
    Record,
    RecordBatch,
    crc32c,
    crc32c_backend,
    decode_record_batches,
    encode_record_batches,
    read_batch_infos,
    read_record_batches,
    records_module,
    set_base_offset,
)
from kwire.codec._framing import (
    DEFAULT,
    DEFAULT_MAX_FRAME_SIZE,
    FrameSplitter,
    Framing,
    decode_request,
    decode_request_header,
    decode_response,
    encode_request,
    encode_response,
    message_class,
    split_frames,
    split_request,
)

_codec = DEFAULT.codec

# Messages (body codecs) and their nested structs, from the selected implementation.
RequestHeader = _codec.RequestHeader
ResponseHeader = _codec.ResponseHeader
FindCoordinatorRequest = _codec.FindCoordinatorRequest
FindCoordinatorResponse = _codec.FindCoordinatorResponse
Coordinator = _codec.Coordinator
JoinGroupRequest = _codec.JoinGroupRequest
JoinGroupRequestProtocol = _codec.JoinGroupRequestProtocol
JoinGroupResponse = _codec.JoinGroupResponse
JoinGroupResponseMember = _codec.JoinGroupResponseMember
HeartbeatRequest = _codec.HeartbeatRequest
HeartbeatResponse = _codec.HeartbeatResponse
LeaveGroupRequest = _codec.LeaveGroupRequest
MemberIdentity = _codec.MemberIdentity
LeaveGroupResponse = _codec.LeaveGroupResponse
MemberResponse = _codec.MemberResponse
SyncGroupRequest = _codec.SyncGroupRequest
SyncGroupRequestAssignment = _codec.SyncGroupRequestAssignment
SyncGroupResponse = _codec.SyncGroupResponse
ApiVersionsRequest = _codec.ApiVersionsRequest
ApiVersionsResponse = _codec.ApiVersionsResponse
ApiVersion = _codec.ApiVersion
SupportedFeatureKey = _codec.SupportedFeatureKey
FinalizedFeatureKey = _codec.FinalizedFeatureKey
# The consumer embedded protocol and the assignors' userData formats.
Subscription = _codec.Subscription
SubscriptionTopicPartition = _codec.SubscriptionTopicPartition
Assignment = _codec.Assignment
AssignmentTopicPartition = _codec.AssignmentTopicPartition
StickyAssignorUserData = _codec.StickyAssignorUserData
StickyTopicAssignment = _codec.StickyTopicAssignment
CooperativeStickyUserData = _codec.CooperativeStickyUserData
# The apis a mock cluster answers beyond the group's own (kwire.testing).
MetadataRequest = _codec.MetadataRequest
MetadataRequestTopic = _codec.MetadataRequestTopic
MetadataResponse = _codec.MetadataResponse
MetadataResponseTopic = _codec.MetadataResponseTopic
MetadataResponsePartition = _codec.MetadataResponsePartition
MetadataResponseBroker = _codec.MetadataResponseBroker
OffsetCommitRequest = _codec.OffsetCommitRequest
OffsetCommitRequestTopic = _codec.OffsetCommitRequestTopic
OffsetCommitRequestPartition = _codec.OffsetCommitRequestPartition
OffsetCommitResponse = _codec.OffsetCommitResponse
OffsetCommitResponseTopic = _codec.OffsetCommitResponseTopic
OffsetCommitResponsePartition = _codec.OffsetCommitResponsePartition
OffsetFetchRequest = _codec.OffsetFetchRequest
OffsetFetchRequestGroup = _codec.OffsetFetchRequestGroup
OffsetFetchRequestTopics = _codec.OffsetFetchRequestTopics
OffsetFetchRequestTopic = _codec.OffsetFetchRequestTopic
OffsetFetchResponse = _codec.OffsetFetchResponse
OffsetFetchResponseGroup = _codec.OffsetFetchResponseGroup
OffsetFetchResponseTopics = _codec.OffsetFetchResponseTopics
OffsetFetchResponsePartitions = _codec.OffsetFetchResponsePartitions
OffsetFetchResponseTopic = _codec.OffsetFetchResponseTopic
OffsetFetchResponsePartition = _codec.OffsetFetchResponsePartition
ListOffsetsRequest = _codec.ListOffsetsRequest
ListOffsetsTopic = _codec.ListOffsetsTopic
ListOffsetsPartition = _codec.ListOffsetsPartition
ListOffsetsResponse = _codec.ListOffsetsResponse
ListOffsetsTopicResponse = _codec.ListOffsetsTopicResponse
ListOffsetsPartitionResponse = _codec.ListOffsetsPartitionResponse
FetchRequest = _codec.FetchRequest
ForgottenTopic = _codec.ForgottenTopic
FetchTopic = _codec.FetchTopic
FetchPartition = _codec.FetchPartition
ReplicaState = _codec.ReplicaState
FetchResponse = _codec.FetchResponse
NodeEndpoint = _codec.NodeEndpoint
FetchableTopicResponse = _codec.FetchableTopicResponse
PartitionData = _codec.PartitionData
AbortedTransaction = _codec.AbortedTransaction
SnapshotId = _codec.SnapshotId
LeaderIdAndEpoch = _codec.LeaderIdAndEpoch
EpochEndOffset = _codec.EpochEndOffset
DescribeGroupsRequest = _codec.DescribeGroupsRequest
DescribeGroupsResponse = _codec.DescribeGroupsResponse
DescribedGroup = _codec.DescribedGroup
DescribedGroupMember = _codec.DescribedGroupMember
ListGroupsRequest = _codec.ListGroupsRequest
ListGroupsResponse = _codec.ListGroupsResponse
ListedGroup = _codec.ListedGroup
ConsumerGroupHeartbeatRequest = _codec.ConsumerGroupHeartbeatRequest
ConsumerGroupHeartbeatRequestTopicPartitions = _codec.ConsumerGroupHeartbeatRequestTopicPartitions
ConsumerGroupHeartbeatResponse = _codec.ConsumerGroupHeartbeatResponse
ConsumerGroupHeartbeatAssignment = _codec.ConsumerGroupHeartbeatAssignment
ConsumerGroupHeartbeatResponseTopicPartitions = _codec.ConsumerGroupHeartbeatResponseTopicPartitions
ConsumerGroupDescribeRequest = _codec.ConsumerGroupDescribeRequest
ConsumerGroupDescribeResponse = _codec.ConsumerGroupDescribeResponse
ConsumerGroupDescribedGroup = _codec.ConsumerGroupDescribedGroup
ConsumerGroupDescribedMember = _codec.ConsumerGroupDescribedMember
ConsumerGroupDescribeAssignment = _codec.ConsumerGroupDescribeAssignment
ConsumerGroupDescribeTopicPartitions = _codec.ConsumerGroupDescribeTopicPartitions
# The apis that carry records and make topics (kwire.testing).
ProduceRequest = _codec.ProduceRequest
PartitionProduceData = _codec.PartitionProduceData
TopicProduceData = _codec.TopicProduceData
ProduceResponse = _codec.ProduceResponse
BatchIndexAndErrorMessage = _codec.BatchIndexAndErrorMessage
ProduceLeaderIdAndEpoch = _codec.ProduceLeaderIdAndEpoch
PartitionProduceResponse = _codec.PartitionProduceResponse
TopicProduceResponse = _codec.TopicProduceResponse
ProduceNodeEndpoint = _codec.ProduceNodeEndpoint
InitProducerIdRequest = _codec.InitProducerIdRequest
InitProducerIdResponse = _codec.InitProducerIdResponse
CreateTopicsRequest = _codec.CreateTopicsRequest
CreatableReplicaAssignment = _codec.CreatableReplicaAssignment
CreatableTopicConfig = _codec.CreatableTopicConfig
CreatableTopic = _codec.CreatableTopic
CreateTopicsResponse = _codec.CreateTopicsResponse
CreatableTopicConfigs = _codec.CreatableTopicConfigs
CreatableTopicResult = _codec.CreatableTopicResult
DeleteTopicsRequest = _codec.DeleteTopicsRequest
DeleteTopicState = _codec.DeleteTopicState
DeleteTopicsResponse = _codec.DeleteTopicsResponse
DeletableTopicResult = _codec.DeletableTopicResult
CreatePartitionsRequest = _codec.CreatePartitionsRequest
CreatePartitionsAssignment = _codec.CreatePartitionsAssignment
CreatePartitionsTopic = _codec.CreatePartitionsTopic
CreatePartitionsResponse = _codec.CreatePartitionsResponse
CreatePartitionsTopicResult = _codec.CreatePartitionsTopicResult

_MESSAGE_NAMES = (
    'RequestHeader', 'ResponseHeader', 'FindCoordinatorRequest', 'FindCoordinatorResponse', 'Coordinator',
    'JoinGroupRequest', 'JoinGroupRequestProtocol', 'JoinGroupResponse', 'JoinGroupResponseMember', 'HeartbeatRequest',
    'HeartbeatResponse', 'LeaveGroupRequest', 'MemberIdentity', 'LeaveGroupResponse', 'MemberResponse',
    'SyncGroupRequest', 'SyncGroupRequestAssignment', 'SyncGroupResponse', 'ApiVersionsRequest', 'ApiVersionsResponse',
    'ApiVersion', 'SupportedFeatureKey', 'FinalizedFeatureKey', 'Subscription', 'SubscriptionTopicPartition',
    'Assignment', 'AssignmentTopicPartition', 'StickyAssignorUserData', 'StickyTopicAssignment', 'CooperativeStickyUserData',
    'MetadataRequest', 'MetadataRequestTopic', 'MetadataResponse', 'MetadataResponseTopic',
    'MetadataResponsePartition', 'MetadataResponseBroker', 'OffsetCommitRequest', 'OffsetCommitRequestTopic',
    'OffsetCommitRequestPartition', 'OffsetCommitResponse', 'OffsetCommitResponseTopic',
    'OffsetCommitResponsePartition', 'OffsetFetchRequest', 'OffsetFetchRequestGroup', 'OffsetFetchRequestTopics',
    'OffsetFetchRequestTopic', 'OffsetFetchResponse', 'OffsetFetchResponseGroup', 'OffsetFetchResponseTopics',
    'OffsetFetchResponsePartitions', 'OffsetFetchResponseTopic', 'OffsetFetchResponsePartition',
    'ListOffsetsRequest', 'ListOffsetsTopic', 'ListOffsetsPartition', 'ListOffsetsResponse',
    'ListOffsetsTopicResponse', 'ListOffsetsPartitionResponse', 'FetchRequest', 'ForgottenTopic', 'FetchTopic',
    'FetchPartition', 'ReplicaState', 'FetchResponse', 'NodeEndpoint', 'FetchableTopicResponse', 'PartitionData',
    'AbortedTransaction', 'SnapshotId', 'LeaderIdAndEpoch', 'EpochEndOffset', 'DescribeGroupsRequest',
    'DescribeGroupsResponse', 'DescribedGroup', 'DescribedGroupMember', 'ListGroupsRequest', 'ListGroupsResponse',
    'ListedGroup', 'ConsumerGroupHeartbeatRequest', 'ConsumerGroupHeartbeatRequestTopicPartitions',
    'ConsumerGroupHeartbeatResponse', 'ConsumerGroupHeartbeatAssignment',
    'ConsumerGroupHeartbeatResponseTopicPartitions', 'ConsumerGroupDescribeRequest',
    'ConsumerGroupDescribeResponse', 'ConsumerGroupDescribedGroup', 'ConsumerGroupDescribedMember',
    'ConsumerGroupDescribeAssignment', 'ConsumerGroupDescribeTopicPartitions',
    'ProduceRequest',
    'PartitionProduceData',
    'TopicProduceData',
    'ProduceResponse',
    'BatchIndexAndErrorMessage',
    'ProduceLeaderIdAndEpoch',
    'PartitionProduceResponse',
    'TopicProduceResponse',
    'ProduceNodeEndpoint',
    'InitProducerIdRequest',
    'InitProducerIdResponse',
    'CreateTopicsRequest',
    'CreatableReplicaAssignment',
    'CreatableTopicConfig',
    'CreatableTopic',
    'CreateTopicsResponse',
    'CreatableTopicConfigs',
    'CreatableTopicResult',
    'DeleteTopicsRequest',
    'DeleteTopicState',
    'DeleteTopicsResponse',
    'DeletableTopicResult',
    'CreatePartitionsRequest',
    'CreatePartitionsAssignment',
    'CreatePartitionsTopic',
    'CreatePartitionsResponse',
    'CreatePartitionsTopicResult',
)

__all__ = [
    "IMPLEMENTATION", *_MESSAGE_NAMES,
    "DEFAULT", "DEFAULT_MAX_FRAME_SIZE", "FrameSplitter", "Framing", "decode_request", "decode_request_header",
    "decode_response", "encode_request", "encode_response", "message_class", "split_frames",
    "split_request", "batch_decoder", "API_VERSIONS_RANGE", "ApiKey", "ErrorCode", "error_name", "topic_id_text",
    # Record batches, the payload of Produce and Fetch.
    "RecordBatch", "Record", "Header", "BatchInfo", "BatchList", "read_batch_infos", "set_base_offset",
    "decode_record_batches", "read_record_batches", "encode_record_batches", "crc32c", "crc32c_backend", "records_module", "DEFAULT_MAX_DECOMPRESSED_SIZE",
]
