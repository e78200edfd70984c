"""The mock cluster's topics and brokers: which topics exist, their partitions, each partition's leader, and the
apis that read or change them (Metadata, CreateTopics, DeleteTopics, CreatePartitions).

Every partition is replicated on every broker (the replication factor is the broker count), so a broker going
down moves the leadership of its partitions to the next live broker and bumps their leader epoch, as Kafka's
controller elects a new leader from the ISR.  A broker coming back leads nothing until a leader is moved to it.
"""

import re
import uuid

from kwire.codec import (
    ApiKey,
    CreatableTopicResult,
    CreatePartitionsResponse,
    CreatePartitionsTopicResult,
    CreateTopicsResponse,
    DeletableTopicResult,
    DeleteTopicsResponse,
    ErrorCode,
    MetadataResponse,
    MetadataResponseBroker,
    MetadataResponsePartition,
    MetadataResponseTopic,
)
from kwire.errors import ArgumentValueError

CLUSTER_ID = "kwire-mock-cluster"
# Kafka's Topic.validate: at most 249 characters of [a-zA-Z0-9._-], and not "." or "..".
_LEGAL_TOPIC = re.compile(r"[a-zA-Z0-9._-]{1,249}")
_ZERO_UUID = b"\x00" * 16


def topic_id(name):
    """A stable topic id: the same name gets the same 16 bytes in every run."""
    return uuid.uuid5(uuid.NAMESPACE_URL, "kwire-topic:" + name).bytes


def topic_name_problem(name):
    """Why ``name`` is not a legal topic name, or None."""
    if not name or name in (".", "..") or not _LEGAL_TOPIC.fullmatch(name):
        return f"topic name {name!r} is illegal: 1-249 characters of ASCII letters, digits, '.', '_' and '-'"
    return None


def topic_error_response(req, key, version, code):
    """The answer of a topic api (Metadata, CreateTopics, DeleteTopics, CreatePartitions) with ``code`` in every
    topic its request names, as an injected fault answers; None for any other api."""
    if key == ApiKey.METADATA:
        names = [] if req.topics is None else [t.name for t in req.topics]
        return MetadataResponse(topics=[MetadataResponseTopic(error_code=code, name=n) for n in names])
    if key == ApiKey.CREATE_TOPICS:
        return CreateTopicsResponse(topics=[CreatableTopicResult(name=t.name, error_code=code) for t in req.topics])
    if key == ApiKey.DELETE_TOPICS:
        if version >= 6:
            return DeleteTopicsResponse(responses=[DeletableTopicResult(name=t.name, topic_id=t.topic_id,
                                                                        error_code=code) for t in req.topics])
        return DeleteTopicsResponse(responses=[DeletableTopicResult(name=n, error_code=code) for n in req.topic_names])
    if key == ApiKey.CREATE_PARTITIONS:
        return CreatePartitionsResponse(results=[CreatePartitionsTopicResult(name=t.name, error_code=code)
                                                 for t in req.topics])
    return None


class TopicTable:
    """Topics, partition counts, leaders and leader epochs over ``brokers`` node ids (0..brokers-1).

    ``max_partitions`` caps the partitions of every topic together (``kwire.max.partitions``): each one is a few
    dict entries made at once, so one CreateTopics asking for 2^31-1 of them would hold the loop and take the
    process's memory.  Kafka has no such key; a broker's CreateTopicPolicy refuses a topic as POLICY_VIOLATION,
    which is what the topic apis answer beyond the cap."""

    def __init__(self, brokers, max_partitions=100_000):
        self.max_partitions = max_partitions
        self.brokers = list(range(brokers))
        self.down = set()
        self.counts = {}      # name -> partitions
        self.ids = {}         # name -> topic id
        self.names = {}       # topic id -> name
        self.leaders = {}     # (name, partition) -> node id
        self.epochs = {}      # (name, partition) -> leader epoch
        # Called after any topic is created, grown or deleted (the server tells its group coordinator).
        self.on_change = None

    def live(self):
        return [b for b in self.brokers if b not in self.down]

    def over_cap(self, more):
        """Why ``more`` partitions would pass ``max_partitions``, or None when they fit."""
        have = len(self.leaders)
        if more > self.max_partitions - have:
            return (f"the cluster holds {have} partitions and its cap, kwire.max.partitions, is "
                    f"{self.max_partitions}: {more} more do not fit")
        return None

    def create(self, name, partitions):
        problem = topic_name_problem(name)
        if problem:
            raise ArgumentValueError(problem)
        if partitions < 1:
            raise ArgumentValueError(f"topic {name!r} needs at least one partition")
        if name in self.counts:
            raise ArgumentValueError(f"topic {name!r} already exists")
        problem = self.over_cap(partitions)
        if problem:
            raise ArgumentValueError(problem)
        tid = topic_id(name)
        self.counts[name] = 0
        self.ids[name], self.names[tid] = tid, name
        self.grow(name, partitions)

    def grow(self, name, partitions):
        """Add partitions up to ``partitions``, their leaders spread round-robin over the live brokers."""
        live = self.live() or self.brokers
        start = self.counts[name]
        problem = self.over_cap(partitions - start)
        if problem:
            raise ArgumentValueError(problem)
        offset = sum(self.counts.values())  # spread the first partitions of each topic differently
        for p in range(start, partitions):
            self.leaders[(name, p)] = live[(offset + p) % len(live)]
            self.epochs[(name, p)] = 0
        self.counts[name] = partitions
        self._changed()

    def delete(self, name):
        n = self.counts.pop(name)
        tid = self.ids.pop(name)
        self.names.pop(tid, None)
        for p in range(n):
            self.leaders.pop((name, p), None)
            self.epochs.pop((name, p), None)
        self._changed()
        return n

    def _changed(self):
        if self.on_change is not None:
            self.on_change()

    def group_metadata(self):
        """``{name: (topic_id, partitions)}``, the form :meth:`kwire.group.GroupCoordinator.set_topics` takes."""
        return {name: (self.ids[name], n) for name, n in self.counts.items()}

    def exists(self, name, partition):
        return 0 <= partition < self.counts.get(name, 0)

    def move_leader(self, name, partition, broker=None):
        """Make ``broker`` (the next live one if None) lead the partition; returns the new leader."""
        key = (name, partition)
        if key not in self.leaders:
            raise ArgumentValueError(f"no partition {name}-{partition}")
        live = self.live()
        if broker is None:
            if not live:
                raise ArgumentValueError("no broker is up")
            current = self.leaders[key]
            later = [b for b in live if b > current]
            broker = later[0] if later else live[0]
        elif broker not in self.brokers or broker in self.down:
            raise ArgumentValueError(f"broker {broker} is not up")
        self.leaders[key] = broker
        self.epochs[key] += 1
        return broker

    def broker_down(self, broker):
        if broker not in self.brokers:
            raise ArgumentValueError(f"no broker {broker}")
        if broker in self.down:
            return
        if len(self.live()) == 1:
            raise ArgumentValueError("the last live broker cannot go down")
        self.down.add(broker)
        for key, leader in list(self.leaders.items()):
            if leader == broker:
                self.move_leader(*key)

    def broker_up(self, broker):
        if broker not in self.brokers:
            raise ArgumentValueError(f"no broker {broker}")
        self.down.discard(broker)


class TopicApis:
    """Metadata, CreateTopics, DeleteTopics and CreatePartitions, for :class:`ClusterServer` (which holds
    ``topics``, ``store``, ``config`` and the brokers' addresses)."""

    def _broker_list(self):
        return [MetadataResponseBroker(node_id=b, host=h, port=p)
                for b in self.topics.live() for h, p in [self.address(b)]]

    def _topic_metadata(self, name):
        table = self.topics
        live = table.live()
        offline = sorted(table.down)
        return MetadataResponseTopic(
            error_code=ErrorCode.NONE, name=name, topic_id=table.ids[name],
            partitions=[MetadataResponsePartition(
                error_code=ErrorCode.NONE, partition_index=p, leader_id=table.leaders[(name, p)],
                leader_epoch=table.epochs[(name, p)], replica_nodes=list(table.brokers), isr_nodes=live,
                offline_replicas=offline) for p in range(table.counts[name])])

    def _metadata(self, req, version, fill, conn):
        table = self.topics
        wanted = req.topics
        topics = []
        if wanted is None or (version == 0 and not wanted):
            topics = [self._topic_metadata(name) for name in table.counts]  # null (v1+) or empty (v0): every topic
        else:
            may_create = (version < 4 or req.allow_auto_topic_creation) and self.config["auto.create.topics.enable"]
            for t in wanted:
                topics.append(self._one_topic_metadata(t, version, may_create))
        fill(MetadataResponse(brokers=self._broker_list(), cluster_id=CLUSTER_ID, controller_id=self.controller(),
                              topics=topics))

    def _one_topic_metadata(self, t, version, may_create):
        table = self.topics
        name = t.name
        if name is None:
            if version < 12:
                # KafkaApis.handleTopicMetadataRequest: topic ids are not looked up before v12; a null name is
                # an invalid request, answered with the name "" (v10-11 cannot write a null one).
                return MetadataResponseTopic(error_code=ErrorCode.INVALID_REQUEST, name="", topic_id=t.topic_id)
            name = table.names.get(t.topic_id)
            if name is None:
                return MetadataResponseTopic(error_code=ErrorCode.UNKNOWN_TOPIC_ID, name=None, topic_id=t.topic_id)
        if name in table.counts:
            return self._topic_metadata(name)
        if topic_name_problem(name):
            return MetadataResponseTopic(error_code=ErrorCode.INVALID_TOPIC_EXCEPTION, name=name)
        if may_create and not table.over_cap(self.config["num.partitions"]):
            self.create_topic(name, self.config["num.partitions"])
            return self._topic_metadata(name)
        # Not created (beyond kwire.max.partitions, or not allowed): unknown, as a client retries it.
        return MetadataResponseTopic(error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, name=name)

    def _create_topics(self, req, version, fill, conn):
        results = []
        seen = set()
        for t in req.topics:
            code, message, n = ErrorCode.NONE, None, t.num_partitions
            if t.name in seen:
                code, message = ErrorCode.INVALID_REQUEST, f"topic {t.name!r} is named twice"
            elif problem := topic_name_problem(t.name):
                code, message = ErrorCode.INVALID_TOPIC_EXCEPTION, problem
            elif t.name in self.topics.counts:
                code, message = ErrorCode.TOPIC_ALREADY_EXISTS, f"topic {t.name!r} already exists"
            elif t.assignments:
                n = len(t.assignments)
            elif n == -1:
                n = self.config["num.partitions"]  # KIP-464: -1 takes the broker's default
            if code == ErrorCode.NONE and n < 1:
                code, message = ErrorCode.INVALID_PARTITIONS, "the number of partitions must be at least 1"
            if code == ErrorCode.NONE and (problem := self.topics.over_cap(n)):
                code, message = ErrorCode.POLICY_VIOLATION, problem
            rf = t.replication_factor
            if code == ErrorCode.NONE and rf != -1 and not 1 <= rf <= len(self.topics.brokers):
                code, message = (ErrorCode.INVALID_REPLICATION_FACTOR,
                                 f"replication factor {rf} is not in [1, {len(self.topics.brokers)}] brokers")
            seen.add(t.name)
            if code == ErrorCode.NONE and not req.validate_only:
                self.create_topic(t.name, n)
            ok = code == ErrorCode.NONE
            results.append(CreatableTopicResult(
                name=t.name, topic_id=self.topics.ids.get(t.name, _ZERO_UUID) if ok else _ZERO_UUID,
                error_code=code, error_message=message, num_partitions=n if ok else -1,
                replication_factor=len(self.topics.brokers) if ok else -1, configs=[] if ok else None))
        fill(CreateTopicsResponse(topics=results))

    def _delete_topics(self, req, version, fill, conn):
        table = self.topics
        if version >= 6:
            wanted = [(t.name, t.topic_id) for t in req.topics]
        else:
            wanted = [(name, _ZERO_UUID) for name in req.topic_names]
        results = []
        for name, tid in wanted:
            if name is None:
                name = table.names.get(tid)
                if name is None:
                    results.append(DeletableTopicResult(name=None, topic_id=tid, error_code=ErrorCode.UNKNOWN_TOPIC_ID,
                                                        error_message=f"no topic has the id {uuid.UUID(bytes=tid)}"))
                    continue
            if name not in table.counts:
                results.append(DeletableTopicResult(name=name, topic_id=tid,
                                                    error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                                                    error_message=f"no topic {name!r}"))
                continue
            tid = table.ids[name]
            self.delete_topic(name)
            results.append(DeletableTopicResult(name=name, topic_id=tid, error_code=ErrorCode.NONE))
        fill(DeleteTopicsResponse(responses=results))

    def _create_partitions(self, req, version, fill, conn):
        results = []
        for t in req.topics:
            code, message = ErrorCode.NONE, None
            have = self.topics.counts.get(t.name)
            if have is None:
                code, message = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"no topic {t.name!r}"
            elif t.count <= have:
                code, message = (ErrorCode.INVALID_PARTITIONS,
                                 f"topic {t.name!r} has {have} partitions; the new count {t.count} must be greater")
            elif t.assignments is not None and len(t.assignments) != t.count - have:
                code, message = (ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                                 f"{len(t.assignments)} assignments for {t.count - have} new partitions")
            elif problem := self.topics.over_cap(t.count - have):
                code, message = ErrorCode.POLICY_VIOLATION, problem
            if code == ErrorCode.NONE and not req.validate_only:
                self.topics.grow(t.name, t.count)
            results.append(CreatePartitionsTopicResult(name=t.name, error_code=code, error_message=message))
        fill(CreatePartitionsResponse(results=results))
