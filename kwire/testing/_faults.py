"""Fault injection for the mock cluster: errors for the next N requests of an api, added latency, dropped
connections; and each api's answer carrying an error code where Kafka would put it."""

from typing import NamedTuple, Optional

from kwire.codec import (
    ApiKey,
    ApiVersionsResponse,
    InitProducerIdResponse,
    PartitionProduceResponse,
    ProduceResponse,
    TopicProduceResponse,
    Coordinator,
    ConsumerGroupDescribeResponse,
    ConsumerGroupDescribedGroup,
    ConsumerGroupHeartbeatResponse,
    DescribedGroup,
    DescribeGroupsResponse,
    FetchableTopicResponse,
    FetchResponse,
    FindCoordinatorResponse,
    HeartbeatResponse,
    JoinGroupResponse,
    LeaveGroupResponse,
    ListGroupsResponse,
    ListOffsetsPartitionResponse,
    ListOffsetsResponse,
    ListOffsetsTopicResponse,
    OffsetCommitResponse,
    OffsetCommitResponsePartition,
    OffsetCommitResponseTopic,
    OffsetFetchResponse,
    OffsetFetchResponseGroup,
    OffsetFetchResponsePartition,
    OffsetFetchResponseTopic,
    PartitionData,
    SyncGroupResponse,
)
from kwire.errors import ArgumentValueError

from ._topics import topic_error_response

#: Api names the command line and the Python API accept, with their keys.
API_KEYS = {
    "Fetch": ApiKey.FETCH, "ListOffsets": ApiKey.LIST_OFFSETS, "Metadata": ApiKey.METADATA,
    "OffsetCommit": ApiKey.OFFSET_COMMIT, "OffsetFetch": ApiKey.OFFSET_FETCH,
    "FindCoordinator": ApiKey.FIND_COORDINATOR, "JoinGroup": ApiKey.JOIN_GROUP, "Heartbeat": ApiKey.HEARTBEAT,
    "LeaveGroup": ApiKey.LEAVE_GROUP, "SyncGroup": ApiKey.SYNC_GROUP, "DescribeGroups": ApiKey.DESCRIBE_GROUPS,
    "ListGroups": ApiKey.LIST_GROUPS, "ApiVersions": ApiKey.API_VERSIONS,
    "Produce": ApiKey.PRODUCE, "CreateTopics": ApiKey.CREATE_TOPICS, "DeleteTopics": ApiKey.DELETE_TOPICS,
    "InitProducerId": ApiKey.INIT_PRODUCER_ID, "CreatePartitions": ApiKey.CREATE_PARTITIONS,
    "ConsumerGroupHeartbeat": ApiKey.CONSUMER_GROUP_HEARTBEAT, "ConsumerGroupDescribe": ApiKey.CONSUMER_GROUP_DESCRIBE,
}


def api_key(api):
    """An api as its key: an int, a digit string, or a name from :data:`API_KEYS` (any case)."""
    if isinstance(api, int):
        return api
    text = str(api).strip()
    if text.isdigit():
        return int(text)
    for name, key in API_KEYS.items():
        if name.lower() == text.lower():
            return key
    raise ArgumentValueError(f"unknown api {api!r}; one of {', '.join(API_KEYS)} or a number")


class Fault(NamedTuple):
    error: Optional[int]
    latency_ms: int
    drop: bool


_NO_FAULT = Fault(None, 0, False)


class Faults:
    """The faults armed now.  Counted faults apply to the next ``count`` requests of their api."""

    def __init__(self):
        self._errors = {}      # api key -> [error code, requests left]
        self._drops = {}       # api key -> requests left
        self._latency = {}     # api key (None: every api) -> ms
        self.armed = False     # a fast path: most requests meet no fault at all
        self._partition_errors = {}  # (api key, topic, partition) -> [error code, requests left]

    def fail(self, api, error_code, count=1):
        if count < 1:
            raise ArgumentValueError("count must be at least 1")
        self._errors[api_key(api)] = [int(error_code), count]
        self.armed = True

    def drop(self, api, count=1):
        if count < 1:
            raise ArgumentValueError("count must be at least 1")
        self._drops[api_key(api)] = count
        self.armed = True

    def add_latency(self, ms, api=None):
        if ms < 0:
            raise ArgumentValueError("latency must be >= 0")
        key = None if api is None else api_key(api)
        if ms:
            self._latency[key] = ms
        else:
            self._latency.pop(key, None)
        self.armed = bool(self._errors or self._drops or self._latency)

    def fail_partition(self, api, topic, partition, error_code, count=1):
        """Answer the next ``count`` requests of ``api`` (Produce, Fetch or ListOffsets) for one partition with
        ``error_code``, in that partition's place of the answer."""
        if count < 1:
            raise ArgumentValueError("count must be at least 1")
        key = api_key(api)
        if key not in (ApiKey.PRODUCE, ApiKey.FETCH, ApiKey.LIST_OFFSETS):
            raise ArgumentValueError("a partition fault is for Produce, Fetch or ListOffsets")
        self._partition_errors[(key, topic, int(partition))] = [int(error_code), count]

    def take_partition(self, key, topic, partition):
        """The error code the next request of api ``key`` for this partition meets (counting it down), or None."""
        table = self._partition_errors
        if not table:
            return None
        entry = table.get((key, topic, partition))
        if entry is None:
            return None
        entry[1] -= 1
        if entry[1] == 0:
            del table[(key, topic, partition)]
        return entry[0]

    def clear(self):
        self._partition_errors.clear()
        self._errors.clear()
        self._drops.clear()
        self._latency.clear()
        self.armed = False

    def take(self, key):
        """The fault the next request of api ``key`` meets, counting it down."""
        if not self.armed:
            return _NO_FAULT
        drop = _count_down(self._drops, key)
        error = None
        entry = self._errors.get(key)
        if entry is not None:
            error = entry[0]
            entry[1] -= 1
            if entry[1] == 0:
                del self._errors[key]
        latency = self._latency.get(key, self._latency.get(None, 0))
        self.armed = bool(self._errors or self._drops or self._latency)
        return Fault(error, latency, drop)


def _count_down(table, key):
    left = table.get(key)
    if left is None:
        return False
    if left == 1:
        del table[key]
    else:
        table[key] = left - 1
    return True


def error_response(req, key, version, code):
    """The answer to ``req`` that carries ``code`` where Kafka puts a request's error: the top-level error
    code where the api has one, else every partition's, group's or topic's."""
    if key == ApiKey.API_VERSIONS:
        return ApiVersionsResponse(error_code=code)
    if key == ApiKey.FIND_COORDINATOR:
        if version >= 4:
            return FindCoordinatorResponse(coordinators=[Coordinator(key=k, node_id=-1, host="", port=-1,
                                                                     error_code=code)
                                                         for k in req.coordinator_keys])
        return FindCoordinatorResponse(error_code=code, node_id=-1, host="", port=-1)
    if key == ApiKey.JOIN_GROUP:
        # v0-6 cannot carry a null protocol name (the coordinator's JoinGroup errors do the same).
        return JoinGroupResponse(error_code=code, generation_id=-1, member_id=req.member_id, leader="",
                                 protocol_name=None if version >= 7 else "")
    if key == ApiKey.HEARTBEAT:
        return HeartbeatResponse(error_code=code)
    if key == ApiKey.LEAVE_GROUP:
        return LeaveGroupResponse(error_code=code)
    if key == ApiKey.SYNC_GROUP:
        return SyncGroupResponse(error_code=code)
    if key == ApiKey.LIST_GROUPS:
        return ListGroupsResponse(error_code=code)
    if key == ApiKey.CONSUMER_GROUP_HEARTBEAT:
        return ConsumerGroupHeartbeatResponse(error_code=code)
    if key == ApiKey.CONSUMER_GROUP_DESCRIBE:
        return ConsumerGroupDescribeResponse(groups=[ConsumerGroupDescribedGroup(
            error_code=code, group_id=g) for g in req.group_ids])
    if key == ApiKey.DESCRIBE_GROUPS:
        return DescribeGroupsResponse(groups=[DescribedGroup(error_code=code, group_id=g) for g in req.groups])
    if key == ApiKey.OFFSET_COMMIT:
        return _per_partition(OffsetCommitResponse, OffsetCommitResponseTopic, OffsetCommitResponsePartition,
                              req.topics, code)
    if key == ApiKey.OFFSET_FETCH:
        if version >= 8:
            return OffsetFetchResponse(groups=[OffsetFetchResponseGroup(group_id=g.group_id, error_code=code)
                                               for g in req.groups])
        if version >= 2:
            return OffsetFetchResponse(error_code=code)
        # v0-1 have no top-level error: it goes into every partition (OffsetFetchResponse(List, version)).
        return OffsetFetchResponse(topics=[
            OffsetFetchResponseTopic(name=t.name, partitions=[
                OffsetFetchResponsePartition(partition_index=i, committed_offset=-1, metadata="", error_code=code)
                for i in t.partition_indexes])
            for t in req.topics or []])
    if key == ApiKey.LIST_OFFSETS:
        return _per_partition(ListOffsetsResponse, ListOffsetsTopicResponse, ListOffsetsPartitionResponse,
                              req.topics, code)
    if key == ApiKey.FETCH:
        return FetchResponse(responses=[
            FetchableTopicResponse(topic=t.topic, topic_id=t.topic_id, partitions=[
                PartitionData(partition_index=p.partition, error_code=code, high_watermark=-1) for p in t.partitions])
            for t in req.topics])
    return _record_api_error(req, key, version, code)


def _per_partition(response, topic, partition, topics, code):
    """An answer of topics by name, each partition's index with ``code``: how OffsetCommit and ListOffsets
    (each with its own classes) answer the topics and partitions their request named."""
    return response(topics=[
        topic(name=t.name, partitions=[partition(partition_index=p.partition_index, error_code=code)
                                       for p in t.partitions])
        for t in topics])


def _record_api_error(req, key, version, code):
    """The error answers of the apis that carry records, and (from ``_topics``) of the topic apis."""
    if key == ApiKey.PRODUCE:
        return ProduceResponse(responses=[
            TopicProduceResponse(name=t.name, topic_id=t.topic_id, partition_responses=[
                PartitionProduceResponse(index=p.index, error_code=code, base_offset=-1) for p in t.partition_data])
            for t in req.topic_data])
    if key == ApiKey.INIT_PRODUCER_ID:
        return InitProducerIdResponse(error_code=code, producer_id=-1, producer_epoch=-1)
    answer = topic_error_response(req, key, version, code)
    if answer is not None:
        return answer
    raise ArgumentValueError(f"no error answer for api key {key}")
