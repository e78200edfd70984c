"""A single-node Kafka cluster on asyncio, over kwire's codec and its sans-IO group coordinator.

It answers what a consumer needs (ApiVersions, Metadata, FindCoordinator, the group apis, offsets,
ListOffsets, and Fetch with no records) at every version kwire's schema has.  Topics exist from the start
and stay empty.  Faults can be injected while it runs; limits bound what a client can make it hold.

One connection is served the way a Kafka broker serves it: requests are handled in arrival order and
answered in that order, so a parked JoinGroup holds back the answers behind it on the same connection
(Kafka mutes the channel until the response goes out).  Anything the server cannot read (a bad frame, an
api or version it does not have) closes that connection alone, with the reason logged.
"""

import asyncio
import logging
import uuid
from collections import deque

from kwire.codec import (
    DEFAULT,
    ApiVersion,
    ApiVersionsRequest,
    ApiVersionsResponse,
    Coordinator,
    FetchableTopicResponse,
    FetchResponse,
    FindCoordinatorRequest,
    FindCoordinatorResponse,
    FrameSplitter,
    ListOffsetsPartitionResponse,
    ListOffsetsResponse,
    ListOffsetsTopicResponse,
    MetadataResponse,
    MetadataResponseBroker,
    MetadataResponsePartition,
    MetadataResponseTopic,
    PartitionData,
)
from kwire.errors import ArgumentValueError, KwireError
from kwire.group import GroupCoordinator, errors

from ._faults import Faults, error_response

log = logging.getLogger("kwire.testing")

NODE_ID = 0
CLUSTER_ID = "kwire-mock-cluster"
_FIND_COORDINATOR, _API_VERSIONS = FindCoordinatorRequest.api_key, ApiVersionsRequest.api_key
# Fetch waits at most this long whatever the client asks: nothing will ever arrive to end the wait early.
MAX_FETCH_WAIT_MS = 30_000


class Limits:
    """What one client can make the server hold; each is enforced with a logged reason.

    ``max_frame_size``: a request frame declaring more bytes closes its connection.
    ``max_members_per_group``: JoinGroup answers GROUP_MAX_SIZE_REACHED beyond it (Kafka's group.max.size).
    ``max_groups``: a JoinGroup or OffsetCommit that would create one more group takes the place of the
    oldest idle group (no members, no committed offsets), or is answered COORDINATOR_NOT_AVAILABLE, logged,
    when none is idle (the coordinator's ``max_groups``).  ``max_connections``: a connection beyond it is
    closed as soon as it is accepted.
    """

    def __init__(self, *, max_frame_size=1 << 20, max_members_per_group=10_000, max_groups=10_000,
                 max_connections=1_000):
        for name, value in (("max_frame_size", max_frame_size), ("max_members_per_group", max_members_per_group),
                            ("max_groups", max_groups), ("max_connections", max_connections)):
            if value < 1:
                raise ArgumentValueError(f"{name} must be at least 1")
        self.max_frame_size = max_frame_size
        self.max_members_per_group = max_members_per_group
        self.max_groups = max_groups
        self.max_connections = max_connections


def topic_id(name):
    """A stable topic id: the same name gets the same 16 bytes in every run."""
    return uuid.uuid5(uuid.NAMESPACE_URL, "kwire-topic:" + name).bytes


def _supported_apis():
    """``{api_key: (min, max)}`` from kwire's schema; ConsumerGroupHeartbeat/Describe are decoded but not
    answered (this cluster runs classic groups), so they are not offered."""
    out = {}
    for key in (18, 3, 10, 11, 12, 13, 14, 8, 9, 2, 1, 15, 16):
        cls = DEFAULT.message_class(key, "request")
        out[key] = (cls.min_version, cls.max_version)
    return out


class _Connection(asyncio.Protocol):
    """One client connection: frames in, answers out in request order."""

    def __init__(self, server):
        self.server = server
        self.splitter = FrameSplitter(server.limits.max_frame_size)
        self.transport = None
        self.peer = "?"
        # Answers owed, oldest first: [frame or None (not ready yet)].  Only the ready prefix is written.
        self.owed = deque()
        self.closed = False
        self.batching = False

    def connection_made(self, transport):
        self.transport = transport
        peer = transport.get_extra_info("peername")
        self.peer = f"{peer[0]}:{peer[1]}" if peer else "?"
        if len(self.server.connections) >= self.server.limits.max_connections:
            log.warning("closing connection from %s: the connection limit (%d) is reached", self.peer,
                        self.server.limits.max_connections)
            self.closed = True
            transport.abort()
            return
        self.server.connections.add(self)

    def connection_lost(self, exc):
        self.closed = True
        self.server.connections.discard(self)

    def data_received(self, data):
        if self.closed:
            return
        try:
            frames = self.splitter.feed(data)
        except KwireError as e:
            frames = getattr(e, "frames", [])
            for frame in frames:
                self.server.request(self, frame)
            self.close(f"bad frame: {e}")
            return
        # Answers ready while this batch is read go out in one write, not one system call each.
        self.batching = True
        try:
            for frame in frames:
                if self.closed:
                    return
                self.server.request(self, frame)
        finally:
            self.batching = False
        self.flush()

    def close(self, reason):
        if not self.closed:
            log.warning("closing connection from %s: %s", self.peer, reason)
            self.closed = True
            self.server.connections.discard(self)
            self.transport.abort()

    def slot(self):
        """Reserve the place of the next answer; returns a one-argument function that fills it."""
        cell = [None]
        self.owed.append(cell)

        def fill(frame):
            cell[0] = frame
            if not self.batching:
                self.flush()
        return fill

    def flush(self):
        owed = self.owed
        if self.closed:
            owed.clear()
            return
        ready = []
        while owed and owed[0][0] is not None:
            ready.append(owed.popleft()[0])
        if ready:
            self.transport.write(b"".join(ready) if len(ready) > 1 else ready[0])


class ClusterServer:
    """The cluster's state and request handling; :class:`kwire.testing.MockCluster` runs one."""

    def __init__(self, topics, *, host="127.0.0.1", port=0, initial_rebalance_delay_ms=0,
                 min_session_timeout_ms=1, max_session_timeout_ms=1_800_000, limits=None):
        self.topics = {name: int(n) for name, n in (topics or {}).items()}
        for name, n in self.topics.items():
            if n < 1:
                raise ArgumentValueError(f"topic {name!r} needs at least one partition")
        self.topic_ids = {name: topic_id(name) for name in self.topics}
        self.topic_names = {tid: name for name, tid in self.topic_ids.items()}
        self.host, self.port = host, port
        self.limits = limits or Limits()
        self.faults = Faults()
        self.coordinator = GroupCoordinator(
            initial_rebalance_delay_ms=initial_rebalance_delay_ms, min_session_timeout_ms=min_session_timeout_ms,
            max_session_timeout_ms=max_session_timeout_ms, max_group_size=self.limits.max_members_per_group,
            max_groups=self.limits.max_groups, partition_exists=self.partition_exists)
        self.apis = _supported_apis()
        self.connections = set()
        # Groups whose coordinator "moved": group requests answer NOT_COORDINATOR until the group is looked up
        # again with FindCoordinator.
        self.moved = set()
        self._server = None
        self._loop = None
        self._timer = None
        self._timer_at = None
        self._handlers = {
            18: self._api_versions, 3: self._metadata, 10: self._find_coordinator, 2: self._list_offsets,
            1: self._fetch,
        }
        # Requests with a group id, by api key: the attribute that names it (OffsetFetch v8+ names several).
        self._group_of = {11: "group_id", 12: "group_id", 13: "group_id", 14: "group_id", 8: "group_id",
                          9: "group_id"}

    # -- life cycle -----------------------------------------------------------------------------------

    async def start(self):
        self._loop = asyncio.get_running_loop()
        self._server = await self._loop.create_server(lambda: _Connection(self), self.host, self.port)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def stop(self):
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._server is not None:
            self._server.close()
            for conn in list(self.connections):
                conn.closed = True
                conn.transport.abort()
            self.connections.clear()
            await self._server.wait_closed()
            self._server = None

    def now(self):
        return int(self._loop.time() * 1000)

    def partition_exists(self, topic, partition):
        return 0 <= partition < self.topics.get(topic, 0)

    # -- faults that act at once ----------------------------------------------------------------------

    def drop_connections(self):
        """Close every client connection now (their groups stay; the clients reconnect)."""
        for conn in list(self.connections):
            conn.close("dropped by fault injection")

    def move_coordinator(self, group_id=None):
        """Act as if ``group_id``'s coordinator (every group's, if None) moved to another broker: parked
        requests get NOT_COORDINATOR, the group's state is dropped (its offsets stay, they are in the log),
        and its requests get NOT_COORDINATOR until the client finds the coordinator again."""
        ids = self.coordinator.group_ids() if group_id is None else [group_id]
        now = self.now()
        for gid in ids:
            self.moved.add(gid)
            self._deliver(self.coordinator.unload_group(gid, now))
        self._arm_timer()

    # -- requests -------------------------------------------------------------------------------------

    def request(self, conn, frame):
        try:
            header, body = DEFAULT.split_request(frame)
        except KwireError as e:
            conn.close(f"malformed request header: {e}")
            return
        key, version = header.request_api_key, header.request_api_version
        span = self.apis.get(key)
        if span is None:
            conn.close(f"api key {key} is not supported by this cluster")
            return
        if key == _API_VERSIONS and version > span[1]:
            # KIP-511: answer an ApiVersions version we do not have at v0, so the client can retry lower.
            response = ApiVersionsResponse(error_code=errors.UNSUPPORTED_VERSION, api_keys=self._api_list())
            conn.slot()(DEFAULT.encode_response(response, 0, header.correlation_id))
            return
        if not span[0] <= version <= span[1]:
            conn.close(f"api key {key} version {version} is not supported (versions {span[0]}-{span[1]})")
            return
        try:
            # The header is read once: the body decodes from where it ends.
            req = DEFAULT.message_class(key, "request").decode(body, version)
        except KwireError as e:
            conn.close(f"malformed api key {key} v{version} request: {e}")
            return
        fault = self.faults.take(key)
        if fault.drop:
            conn.close(f"dropped by fault injection at api key {key}")
            return
        fill = self._answer(conn, key, version, header.correlation_id, fault.latency_ms)
        if fault.error is not None:
            fill(error_response(req, key, version, fault.error))
            return
        handler = self._handlers.get(key)
        if handler is not None:
            handler(req, version, fill, conn)
            return
        self._group_request(conn, req, key, version, fill, header.client_id or "")

    def _answer(self, conn, key, version, correlation_id, latency_ms):
        """A function that answers this request (now or later) in its place on the connection."""
        fill = conn.slot()

        def answer(response):
            try:
                frame = DEFAULT.encode_response(response, version, correlation_id)
            except KwireError as e:
                # A server bug, not the client's: that connection cannot be answered, the others go on.
                log.error("cannot encode the api key %d v%d answer: %s", key, version, e)
                conn.close("internal error")
                return
            if latency_ms:
                self._loop.call_later(latency_ms / 1000, fill, frame)
            else:
                fill(frame)
        return answer

    def _group_request(self, conn, req, key, version, fill, client_id):
        attr = self._group_of.get(key)
        group_id = getattr(req, attr) if attr and (key != 9 or version < 8) else None
        if group_id is not None and group_id in self.moved:
            fill(error_response(req, key, version, errors.NOT_COORDINATOR))
            return
        try:
            replies = self.coordinator.handle((conn, fill), req, version, self.now(), client_id=client_id,
                                              client_host="/" + conn.peer.rsplit(":", 1)[0])
        except KwireError as e:
            conn.close(f"api key {key} v{version} refused: {e}")
            return
        self._deliver(replies)
        self._arm_timer()

    def _deliver(self, replies):
        for reply in replies:
            _conn, fill = reply.handle
            fill(reply.response)

    def _arm_timer(self):
        deadline = self.coordinator.next_deadline()
        if deadline == self._timer_at:
            return
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._timer_at = deadline
        if deadline is not None:
            self._timer = self._loop.call_at(deadline / 1000, self._tick)

    def _tick(self):
        self._timer = None
        self._timer_at = None
        self._deliver(self.coordinator.tick(self.now()))
        self._arm_timer()

    # -- the cluster's own apis ------------------------------------------------------------------------

    def _api_list(self):
        return [ApiVersion(api_key=k, min_version=lo, max_version=hi) for k, (lo, hi) in sorted(self.apis.items())]

    def _api_versions(self, req, version, fill, conn):
        fill(ApiVersionsResponse(error_code=errors.NONE, api_keys=self._api_list()))

    def _broker(self):
        return MetadataResponseBroker(node_id=NODE_ID, host=self.host, port=self.port)

    def _metadata(self, req, version, fill, conn):
        wanted = req.topics
        if wanted is None or (version == 0 and not wanted):
            names = list(self.topics)  # null (v1+) or empty (v0): every topic
        else:
            names = [t.name if t.name is not None else self.topic_names.get(t.topic_id) for t in wanted]
        topics = []
        for name in names:
            n = self.topics.get(name)
            if n is None:
                topics.append(MetadataResponseTopic(error_code=errors.UNKNOWN_TOPIC_OR_PARTITION, name=name))
                continue
            topics.append(MetadataResponseTopic(
                error_code=errors.NONE, name=name, topic_id=self.topic_ids[name],
                partitions=[MetadataResponsePartition(error_code=errors.NONE, partition_index=p, leader_id=NODE_ID,
                                                      leader_epoch=0, replica_nodes=[NODE_ID], isr_nodes=[NODE_ID])
                            for p in range(n)]))
        fill(MetadataResponse(brokers=[self._broker()], cluster_id=CLUSTER_ID, controller_id=NODE_ID,
                              topics=topics))

    def _find_coordinator(self, req, version, fill, conn):
        if version >= 4:
            keys = list(req.coordinator_keys)
            for key in keys:
                self.moved.discard(key)
            fill(FindCoordinatorResponse(coordinators=[
                Coordinator(key=key, node_id=NODE_ID, host=self.host, port=self.port, error_code=errors.NONE)
                for key in keys]))
            return
        self.moved.discard(req.key)
        fill(FindCoordinatorResponse(error_code=errors.NONE, node_id=NODE_ID, host=self.host, port=self.port))

    def _list_offsets(self, req, version, fill, conn):
        # Every partition is empty: the earliest and the latest offset are both 0.
        topics = []
        for t in req.topics:
            parts = []
            for p in t.partitions:
                if self.partition_exists(t.name, p.partition_index):
                    parts.append(ListOffsetsPartitionResponse(partition_index=p.partition_index, error_code=0,
                                                              timestamp=-1, offset=0,
                                                              leader_epoch=0 if version >= 4 else -1))
                else:
                    parts.append(ListOffsetsPartitionResponse(partition_index=p.partition_index,
                                                              error_code=errors.UNKNOWN_TOPIC_OR_PARTITION))
            topics.append(ListOffsetsTopicResponse(name=t.name, partitions=parts))
        fill(ListOffsetsResponse(topics=topics))

    def _fetch(self, req, version, fill, conn):
        by_id = version >= 13
        responses = []
        for t in req.topics:
            name = self.topic_names.get(t.topic_id) if by_id else t.topic
            parts = []
            for p in t.partitions:
                known = name is not None and self.partition_exists(name, p.partition)
                if known:
                    code = errors.NONE
                else:
                    code = errors.UNKNOWN_TOPIC_ID if by_id else errors.UNKNOWN_TOPIC_OR_PARTITION
                parts.append(PartitionData(partition_index=p.partition, error_code=code,
                                           high_watermark=0 if known else -1, last_stable_offset=0 if known else -1,
                                           log_start_offset=0 if known else -1, records=b""))
            responses.append(FetchableTopicResponse(topic=t.topic if not by_id else "", topic_id=t.topic_id,
                                                    partitions=parts))
        response = FetchResponse(error_code=errors.NONE, session_id=0, responses=responses)
        # No record will ever arrive: answer when the client's max wait is over, as a broker would; at once
        # where a broker would not wait either (min_bytes already met by nothing, or a partition in error).
        failed = any(p.error_code for r in responses for p in r.partitions)
        wait_ms = 0 if req.min_bytes <= 0 or failed else max(0, min(req.max_wait_ms, MAX_FETCH_WAIT_MS))
        if wait_ms:
            self._loop.call_later(wait_ms / 1000, fill, response)
        else:
            fill(response)
