"""A Kafka cluster on asyncio, over kwire's codec, its record store and its sans-IO group coordinator.

One or more brokers, each its own listener on the same host, share one state: topics and their partition
leaders (``_topics.py``), the logs (``_log.py``), the groups (:class:`kwire.group.GroupCoordinator`, on one
broker).  Requests are dispatched by api key through one table (``self.handlers``); the group apis go to the
coordinator.  Faults can be injected while it runs; limits bound what a client can make it hold.

One connection is served the way a Kafka broker serves it (``_connection.py``): requests are handled in arrival
order and answered in that order, so a parked JoinGroup or a long-polling Fetch holds back the answers behind it
on the same connection.  Anything the server cannot read (a bad frame, an api or version it does not have)
closes that connection alone, with the reason logged, after answering what it read before.
"""

import asyncio
import logging

from kwire.codec import (
    DEFAULT,
    ApiKey,
    ApiVersion,
    ApiVersionsResponse,
    Coordinator,
    ErrorCode,
    FindCoordinatorResponse,
)
from kwire.errors import ArgumentValueError, KwireError
from kwire.group import CONSUMER_CONFIG_DEFAULTS, GroupCoordinator

from ._config import resolve
from ._connection import Connection
from ._faults import Faults, error_response
from ._log import LogStore
from ._records import MAX_FETCH_WAIT_MS, RecordApis
from ._topics import CLUSTER_ID, TopicApis, TopicTable, topic_id

__all__ = ["CLUSTER_ID", "MAX_FETCH_WAIT_MS", "NODE_ID", "ClusterServer", "Limits", "topic_id"]

log = logging.getLogger("kwire.testing")

# The node id of the first broker (the only one of a single-broker cluster).
NODE_ID = 0

# The apis this cluster answers; ConsumerGroupHeartbeat and ConsumerGroupDescribe (KIP-848) join them while
# group.coordinator.rebalance.protocols holds "consumer", as Kafka's ApiVersions offers them
# (KafkaApis.isConsumerGroupProtocolEnabled).
_CONSUMER_PROTOCOL = (ApiKey.CONSUMER_GROUP_HEARTBEAT, ApiKey.CONSUMER_GROUP_DESCRIBE)
_SERVED = (
    ApiKey.PRODUCE, ApiKey.FETCH, ApiKey.LIST_OFFSETS, ApiKey.METADATA, ApiKey.OFFSET_COMMIT, ApiKey.OFFSET_FETCH,
    ApiKey.FIND_COORDINATOR, ApiKey.JOIN_GROUP, ApiKey.HEARTBEAT, ApiKey.LEAVE_GROUP, ApiKey.SYNC_GROUP,
    ApiKey.DESCRIBE_GROUPS, ApiKey.LIST_GROUPS, ApiKey.API_VERSIONS, ApiKey.CREATE_TOPICS, ApiKey.DELETE_TOPICS,
    ApiKey.INIT_PRODUCER_ID, ApiKey.CREATE_PARTITIONS,
)
# Requests with a group id, by api key: the attribute that names it (OffsetFetch v8+ names several).
_GROUP_OF = {ApiKey.JOIN_GROUP: "group_id", ApiKey.HEARTBEAT: "group_id", ApiKey.LEAVE_GROUP: "group_id",
             ApiKey.SYNC_GROUP: "group_id", ApiKey.OFFSET_COMMIT: "group_id", ApiKey.OFFSET_FETCH: "group_id",
             ApiKey.CONSUMER_GROUP_HEARTBEAT: "group_id"}


class Limits:
    """What one client can make the server hold; each is enforced with a logged reason.

    ``max_frame_size``: a request frame declaring more bytes closes its connection.
    ``max_members_per_group``: JoinGroup answers GROUP_MAX_SIZE_REACHED beyond it (Kafka's group.max.size).
    ``max_groups``: a JoinGroup or OffsetCommit that would create one more group takes the place of the
    oldest idle group (no members, no committed offsets), or is answered COORDINATOR_NOT_AVAILABLE, logged,
    when none is idle (the coordinator's ``max_groups``).  ``max_connections``: a connection beyond it is
    closed as soon as it is accepted.
    ``max_inflight`` and ``max_buffered``: the requests read but unanswered, and the answer bytes unsent, at
    which a connection stops being read (see ``_connection.py``).
    """

    def __init__(self, *, max_frame_size=100 << 20, max_members_per_group=10_000, max_groups=10_000,
                 max_connections=1_000, max_inflight=64, max_buffered=4 << 20):
        for name, value in (("max_frame_size", max_frame_size), ("max_members_per_group", max_members_per_group),
                            ("max_groups", max_groups), ("max_connections", max_connections),
                            ("max_inflight", max_inflight), ("max_buffered", max_buffered)):
            if value < 1:
                raise ArgumentValueError(f"{name} must be at least 1")
        self.max_frame_size = max_frame_size
        self.max_members_per_group = max_members_per_group
        self.max_groups = max_groups
        self.max_connections = max_connections
        self.max_inflight = max_inflight
        self.max_buffered = max_buffered

    @classmethod
    def from_config(cls, config):
        return cls(max_frame_size=config["socket.request.max.bytes"], max_members_per_group=config["group.max.size"],
                   max_groups=config["kwire.max.groups"], max_connections=config["max.connections"],
                   max_inflight=config["kwire.connection.max.inflight.requests"],
                   max_buffered=config["kwire.connection.max.buffered.bytes"])


class ClusterServer(TopicApis, RecordApis):
    """The cluster's state and request handling; :class:`kwire.testing.MockCluster` and ``kwire serve`` run one.

    ``topics``: ``{name: partitions}`` created at start.  ``brokers``: how many brokers (listeners).  ``port``:
    the first broker's port (0: any free one); the others take free ports.  ``config``: Kafka's broker config
    keys (``_config.py``).  ``limits``: a :class:`Limits`, overriding the config's.  ``advertised``: the
    ``(host, port)`` each broker, in order, names in Metadata and FindCoordinator instead of its own listener
    (Kafka's ``advertised.listeners``: clients then connect through a proxy in front, such as ``kwire record``).
    """

    def __init__(self, topics=None, *, host="127.0.0.1", port=0, brokers=1, config=None, limits=None,
                 advertised=()):
        if isinstance(brokers, bool) or not isinstance(brokers, int) or not 1 <= brokers <= 64:
            raise ArgumentValueError(f"brokers must be an int in [1, 64], not {brokers!r}")
        self.config = resolve(config)
        c = self.config
        self.limits = limits or Limits.from_config(c)
        self.host = host
        self.ports = {b: 0 for b in range(brokers)}
        self.ports[0] = port
        if len(advertised) > brokers:
            raise ArgumentValueError(f"{len(advertised)} advertised addresses for {brokers} brokers")
        self.advertised = dict(enumerate(advertised))
        self.topics = TopicTable(brokers, max_partitions=c["kwire.max.partitions"])
        for name, n in (topics or {}).items():
            self.topics.create(name, int(n))
        self.store = LogStore(retention_bytes=c["retention.bytes"], total_bytes=c["kwire.storage.total.bytes"],
                              max_batch_bytes=c["message.max.bytes"])
        self.faults = Faults()
        self.coordinator = GroupCoordinator(
            initial_rebalance_delay_ms=c["group.initial.rebalance.delay.ms"],
            min_session_timeout_ms=c["group.min.session.timeout.ms"],
            max_session_timeout_ms=c["group.max.session.timeout.ms"], max_group_size=self.limits.max_members_per_group,
            max_groups=self.limits.max_groups, partition_exists=self.topics.exists,
            config={key: value for key, value in c.items() if key in CONSUMER_CONFIG_DEFAULTS},
            topics=self.topics.group_metadata())
        # Consumer groups follow the topics: a topic created, grown or deleted bumps the epoch of the groups
        # subscribed to it (GroupMetadataManager.onNewMetadataImage).
        self.topics.on_change = lambda: self.coordinator.set_topics(self.topics.group_metadata())
        self.coordinator_node = 0
        self.round_robin = {}  # topic -> the last partition a keyless record of MockCluster.produce went to
        self.apis = {}
        served = _SERVED + (_CONSUMER_PROTOCOL if self.coordinator.consumer.config.consumer_protocol_enabled else ())
        for key in served:
            cls = DEFAULT.message_class(key, "request")
            self.apis[key] = (cls.min_version, cls.max_version)
        self.connections = set()
        # Groups whose coordinator "moved": group requests answer NOT_COORDINATOR until the group is looked up
        # again with FindCoordinator.
        self.moved = set()
        self._listeners = {}
        self._loop = None
        self._timer = None
        self._timer_at = None
        # Every api but the group ones, by key: handler(request, version, fill, connection).  The group apis
        # (the keys of _GROUP_OF, DescribeGroups, ListGroups) go to the coordinator.
        self.handlers = {
            ApiKey.API_VERSIONS: self._api_versions, ApiKey.METADATA: self._metadata,
            ApiKey.FIND_COORDINATOR: self._find_coordinator, ApiKey.LIST_OFFSETS: self._list_offsets,
            ApiKey.FETCH: self._fetch, ApiKey.PRODUCE: self._produce, ApiKey.INIT_PRODUCER_ID: self._init_producer_id,
            ApiKey.CREATE_TOPICS: self._create_topics, ApiKey.DELETE_TOPICS: self._delete_topics,
            ApiKey.CREATE_PARTITIONS: self._create_partitions,
        }

    # -- names kept from the single-broker server: read-only aliases ------------------------------------

    port = property(lambda self: self.ports[0], doc="The first broker's port.")
    topic_ids = property(lambda self: self.topics.ids, doc="``{topic name: topic id}``.")
    topic_names = property(lambda self: self.topics.names, doc="``{topic id: topic name}``.")

    def address(self, broker):
        """``(host, port)`` that clients are told to connect to for ``broker``."""
        return self.advertised.get(broker) or (self.host, self.ports[broker])

    def partition_exists(self, topic, partition):
        return self.topics.exists(topic, partition)

    def controller(self):
        live = self.topics.live()
        return live[0] if live else -1

    # -- life cycle -----------------------------------------------------------------------------------

    async def start(self):
        self._loop = asyncio.get_running_loop()
        for broker in self.topics.brokers:
            await self._listen(broker)
        return self

    async def _listen(self, broker):
        server = await self._loop.create_server(lambda: Connection(self, broker), self.host, self.ports[broker])
        self._listeners[broker] = server
        self.ports[broker] = server.sockets[0].getsockname()[1]

    async def stop(self):
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        listeners, self._listeners = list(self._listeners.values()), {}
        for server in listeners:
            server.close()
        for conn in list(self.connections):
            conn.closed = True
            conn.transport.abort()
        self.connections.clear()
        for server in listeners:
            await server.wait_closed()

    def now(self):
        return int(self._loop.time() * 1000)

    def accept(self, conn):
        """Admit a new connection, or refuse it at the connection limit."""
        if len(self.connections) >= self.limits.max_connections or conn.broker in self.topics.down:
            log.warning("closing connection from %s: the connection limit (%d) is reached", conn.peer,
                        self.limits.max_connections)
            return False
        self.connections.add(conn)
        return True

    def forget(self, conn):
        self.connections.discard(conn)

    def buffered(self):
        """Bytes every connection holds (see :meth:`Connection.buffered`)."""
        return sum(conn.buffered() for conn in self.connections)

    # -- faults that act at once ----------------------------------------------------------------------

    def drop_connections(self, broker=None):
        """Close every client connection (of ``broker`` only, if given) now; the clients reconnect."""
        for conn in list(self.connections):
            if broker is None or conn.broker == broker:
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

    def move_leader(self, topic, partition, broker=None):
        """Make ``broker`` (the next live one if None) the partition's leader; returns it."""
        return self.topics.move_leader(topic, int(partition), None if broker is None else int(broker))

    def broker_down(self, broker):
        """Take a broker down: its listener closes, its connections drop, its partitions get new leaders, and
        the group coordinator moves off it."""
        broker = int(broker)
        self.topics.broker_down(broker)
        listener = self._listeners.pop(broker, None)
        if listener is not None:
            listener.close()
        self.drop_connections(broker)
        if self.coordinator_node == broker:
            self.coordinator_node = self.topics.live()[0]
            self.move_coordinator()

    async def broker_up(self, broker):
        """Bring a broker back on its old port."""
        broker = int(broker)
        self.topics.broker_up(broker)
        if broker not in self._listeners:
            await self._listen(broker)

    # -- topics from Python -----------------------------------------------------------------------------

    def create_topic(self, name, partitions):
        self.topics.create(name, int(partitions))

    def delete_topic(self, name):
        n = self.topics.delete(name)
        self.store.drop_topic(name, n)

    # -- requests -------------------------------------------------------------------------------------

    def request(self, conn, frame):
        try:
            header, body = DEFAULT.split_request(frame)
        except KwireError as e:
            conn.close(f"malformed request header: {e}", graceful=True)
            return
        key, version = header.request_api_key, header.request_api_version
        span = self.apis.get(key)
        if span is None:
            conn.close(f"api key {key} is not supported by this cluster", graceful=True)
            return
        if key == ApiKey.API_VERSIONS and version > span[1]:
            # KIP-511: answer an ApiVersions version we do not have at v0, so the client can retry lower.
            response = ApiVersionsResponse(error_code=ErrorCode.UNSUPPORTED_VERSION, api_keys=self._api_list())
            conn.slot()(DEFAULT.encode_response(response, 0, header.correlation_id))
            return
        if key == ApiKey.PRODUCE and version < span[0]:
            # KIP-896: a version Kafka 4.0 removed is answered UNSUPPORTED_VERSION, not dropped.
            self._legacy_produce(conn, body, version, header.correlation_id)
            return
        if not span[0] <= version <= span[1]:
            conn.close(f"api key {key} version {version} is not supported (versions {span[0]}-{span[1]})",
                       graceful=True)
            return
        try:
            req = self._decode(frame, body, key, version)
        except KwireError as e:
            conn.close(f"malformed api key {key} v{version} request: {e}", graceful=True)
            return
        if self.faults.armed:
            fault = self.faults.take(key)
            if fault.drop:
                conn.close(f"dropped by fault injection at api key {key}")
                return
            fill = self._answer(conn, key, version, header.correlation_id, fault.latency_ms)
            if fault.error is not None:
                fill(error_response(req, key, version, fault.error))
                return
        else:
            fill = self._answer(conn, key, version, header.correlation_id, 0)
        handler = self.handlers.get(key)
        if handler is not None:
            handler(req, version, fill, conn)
            return
        self._group_request(conn, req, key, version, fill, header.client_id or "")

    def _decode(self, frame, body, key, version):
        """The request in ``frame``, whose header was read already (``body`` is the rest, a view of it)."""
        if key == ApiKey.PRODUCE:
            # Record batches are read as views of the frame itself (bytes, from the connection), which the log
            # keeps: a decoder given the body, a memoryview, would copy it first.  So the whole frame is read
            # again from its start, header included (a few bytes).
            try:
                return DEFAULT.decode_request(frame, views=True)[1]
            except KwireError:
                pass  # bytes after the body, or a malformed request: read as below, which says which
        # The body decodes from where the header ends.  Bytes after the body are ignored, as Kafka's broker
        # ignores them (RequestContext.parseRequest reads the fields and no further): librdkafka's all-topics
        # Metadata v12 carries three.
        return DEFAULT.message_class(key, "request").decode_prefix(body, version, views=key == ApiKey.PRODUCE)[0]

    def _answer(self, conn, key, version, correlation_id, latency_ms):
        """A function that answers this request (now or later) in its place on the connection; given None it
        sends nothing (a Produce with acks 0)."""
        fill = conn.slot()

        def answer(response):
            if response is None:
                fill(b"")
                return
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
        attr = _GROUP_OF.get(key)
        group_id = getattr(req, attr) if attr and (key != ApiKey.OFFSET_FETCH or version < 8) else None
        if conn.broker != self.coordinator_node or (group_id is not None and group_id in self.moved):
            fill(error_response(req, key, version, ErrorCode.NOT_COORDINATOR))
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
        if deadline is None or (self._timer is not None and self._timer_at <= deadline):
            # A timer armed earlier than the next deadline stays: firing early, tick() has nothing to do and
            # the timer is armed again.  Each heartbeat pushes its session deadline later, so this spares the
            # loop a cancel and a new timer per request.
            return
        if self._timer is not None:
            self._timer.cancel()
        self._timer_at = deadline
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
        fill(ApiVersionsResponse(error_code=ErrorCode.NONE, api_keys=self._api_list()))

    def _find_coordinator(self, req, version, fill, conn):
        node = self.coordinator_node
        host, port = self.address(node)
        if version >= 4:
            keys = list(req.coordinator_keys)
            for key in keys:
                self.moved.discard(key)
            fill(FindCoordinatorResponse(coordinators=[
                Coordinator(key=key, node_id=node, host=host, port=port, error_code=ErrorCode.NONE)
                for key in keys]))
            return
        self.moved.discard(req.key)
        fill(FindCoordinatorResponse(error_code=ErrorCode.NONE, node_id=node, host=host, port=port))
