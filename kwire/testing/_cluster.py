"""MockCluster: the mock cluster as a context manager, synchronous (its loop runs in a thread) or async."""

import asyncio
import concurrent.futures
import threading

from kwire.errors import ShutdownError

from ._config import with_aliases
from ._helpers import committed_offsets, produce_one, stored_records
from ._server import ClusterServer

# How long starting and stopping may take before the caller is told: both are local and quick.
_START_STOP_TIMEOUT_S = 10


class MockCluster:
    """A Kafka cluster on 127.0.0.1 that real producers write to and real consumers read from and join.

    ``with MockCluster(topics={"orders": 12}) as cluster:`` runs it on its own event loop in a daemon
    thread; ``async with`` runs it on the caller's loop.  ``cluster.bootstrap_servers`` is what a client
    is configured with.  Keyword arguments: ``brokers`` (default 1; each its own listener, partition leaders
    spread across them), ``config`` (Kafka's broker config keys, see docs/MOCK_CLUSTER.md), ``host``/``port``
    (default 127.0.0.1 and a free port for the first broker).  The older keywords are aliases of config keys:
    ``initial_rebalance_delay_ms`` (default 0, not Kafka's 3000: tests want groups to form at once),
    ``min_session_timeout_ms``/``max_session_timeout_ms``, ``max_frame_size``, ``max_members_per_group``,
    ``max_groups``, ``max_connections``.

    Test helpers without a client: :meth:`produce`, :meth:`records`, :meth:`committed`, :meth:`create_topic`.
    Faults, from any thread: :meth:`fail` (an error code for the next N requests of an api),
    :meth:`fail_partition`, :meth:`add_latency`, :meth:`drop` (close the connection of the next N requests of
    an api), :meth:`drop_connections`, :meth:`move_coordinator`, :meth:`move_leader`, :meth:`broker_down`,
    :meth:`broker_up`.
    """

    def __init__(self, topics=None, *, host="127.0.0.1", port=0, brokers=1, config=None,
                 initial_rebalance_delay_ms=None, min_session_timeout_ms=None, max_session_timeout_ms=None,
                 max_frame_size=None, max_members_per_group=None, max_groups=None, max_connections=None):
        config = with_aliases(config, {
            "initial_rebalance_delay_ms": initial_rebalance_delay_ms, "min_session_timeout_ms": min_session_timeout_ms,
            "max_session_timeout_ms": max_session_timeout_ms, "max_frame_size": max_frame_size,
            "max_members_per_group": max_members_per_group, "max_groups": max_groups,
            "max_connections": max_connections})
        self.server = ClusterServer(topics, host=host, port=port, brokers=brokers, config=config)
        self._thread = None
        self._loop = None
        self._stopped = None

    @property
    def host(self):
        return self.server.host

    @property
    def port(self):
        return self.server.port

    @property
    def bootstrap_servers(self):
        """Every live broker's ``host:port``, comma-separated."""
        server = self.server
        return ",".join(f"{server.host}:{server.ports[b]}" for b in server.topics.live())

    @property
    def coordinator(self):
        """The sans-IO :class:`kwire.group.GroupCoordinator` behind the cluster (read it, e.g.
        ``describe_group``, from the cluster's loop or while nothing else runs)."""
        return self.server.coordinator

    # -- async --------------------------------------------------------------------------------------

    async def start(self):
        self._loop = asyncio.get_running_loop()
        await self.server.start()
        return self

    async def stop(self):
        await self.server.stop()

    async def __aenter__(self):
        return await self.start()

    async def __aexit__(self, *exc):
        await self.stop()

    # -- sync: the loop runs in a thread -------------------------------------------------------------

    def __enter__(self):
        started = concurrent.futures.Future()
        self._stopped = None

        def run():
            loop = asyncio.new_event_loop()
            self._loop = loop
            asyncio.set_event_loop(loop)
            stop = loop.create_future()
            self._stopped = stop
            try:
                loop.run_until_complete(self.server.start())
            except BaseException as e:  # noqa: BLE001 - handed to the caller's thread
                started.set_exception(e)
                loop.close()
                return
            started.set_result(None)
            try:
                loop.run_until_complete(stop)
                loop.run_until_complete(self.server.stop())
            finally:
                loop.close()

        self._thread = threading.Thread(target=run, name="kwire-mock-cluster", daemon=True)
        self._thread.start()
        started.result(_START_STOP_TIMEOUT_S)
        return self

    def __exit__(self, *exc):
        loop, stop = self._loop, self._stopped
        if loop is not None and stop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(lambda: stop.done() or stop.set_result(None))
        if self._thread is not None:
            self._thread.join(_START_STOP_TIMEOUT_S)
            if self._thread.is_alive():
                raise ShutdownError("the mock cluster's thread did not stop")
            self._thread = None

    # -- faults ---------------------------------------------------------------------------------------

    def _on_loop(self, fn, *args):
        """Run ``fn`` on the cluster's loop and return its result, from any thread."""
        loop = self._loop
        if loop is None:
            return fn(*args)
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is loop:
            return fn(*args)
        done = concurrent.futures.Future()

        def call():
            try:
                done.set_result(fn(*args))
            except BaseException as e:  # noqa: BLE001 - handed to the calling thread
                done.set_exception(e)
        loop.call_soon_threadsafe(call)
        return done.result(_START_STOP_TIMEOUT_S)

    def fail(self, api, error_code, count=1):
        """Answer the next ``count`` requests of ``api`` (a name such as "Heartbeat", or a key) with
        ``error_code``."""
        self._on_loop(self.server.faults.fail, api, error_code, count)

    def add_latency(self, ms, api=None):
        """Delay every answer (of ``api`` only, if given) by ``ms``; 0 removes it."""
        self._on_loop(self.server.faults.add_latency, ms, api)

    def drop(self, api, count=1):
        """Close the connection of each of the next ``count`` requests of ``api``, unanswered."""
        self._on_loop(self.server.faults.drop, api, count)

    def clear_faults(self):
        self._on_loop(self.server.faults.clear)

    def drop_connections(self):
        """Close every client connection now."""
        self._on_loop(self.server.drop_connections)

    def move_coordinator(self, group_id=None):
        """Act as if the group's coordinator (every group's if None) moved: see
        :meth:`ClusterServer.move_coordinator`."""
        self._on_loop(self.server.move_coordinator, group_id)

    def describe_group(self, group_id):
        """The coordinator's :class:`kwire.group.GroupView` of a group, or None."""
        return self._on_loop(self.server.coordinator.describe_group, group_id)

    def committed(self, group_id, topic=None, partition=None):
        """``(offset, leader_epoch, metadata)`` committed for a partition, or ``(-1, -1, "")``; with only the
        group, ``{(topic, partition): offset}`` for every partition it committed."""
        if topic is None:
            return self._on_loop(committed_offsets, self.server, group_id)
        return self._on_loop(self.server.coordinator.committed, group_id, topic, partition)

    def fail_partition(self, api, topic, partition, error_code, count=1):
        """Answer the next ``count`` Produce, Fetch or ListOffsets requests for one partition with
        ``error_code`` in that partition's place."""
        self._on_loop(self.server.faults.fail_partition, api, topic, partition, error_code, count)

    def move_leader(self, topic, partition, broker=None):
        """Move a partition's leadership to ``broker`` (the next live one if None); returns the new leader.
        Requests to the old leader get NOT_LEADER_OR_FOLLOWER; Metadata names the new one."""
        return self._on_loop(self.server.move_leader, topic, partition, broker)

    def broker_down(self, broker):
        """Take a broker down: its listener and connections close, its partitions and the group coordinator
        move to live brokers."""
        self._on_loop(self.server.broker_down, broker)

    def broker_up(self, broker):
        """Bring a broker back, on its old port."""
        self._on_loop_async(self.server.broker_up, broker)

    def _on_loop_async(self, coro_fn, *args):
        loop = self._loop
        if loop is None:
            raise ShutdownError("the mock cluster is not running")
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is loop:
            raise ShutdownError(f"on the cluster's own loop, await cluster.server.{coro_fn.__name__}(...) instead")
        future = asyncio.run_coroutine_threadsafe(coro_fn(*args), loop)
        return future.result(_START_STOP_TIMEOUT_S)

    # -- data, without a client -----------------------------------------------------------------------

    def create_topic(self, name, partitions):
        """Create a topic with ``partitions`` partitions, as CreateTopics would."""
        self._on_loop(self.server.create_topic, name, partitions)

    def produce(self, topic, value, key=None, partition=None, headers=None, timestamp=None):
        """Store one record as a producer would (one batch); returns ``(partition, offset)``.  ``partition``
        None picks one as Java's default partitioner does: murmur2 of the key, or round-robin without one."""
        return self._on_loop(produce_one, self.server, topic, value, key, partition, headers, timestamp)

    def records(self, topic, partition):
        """The records stored in a partition, oldest first, as :class:`kwire.codec.Record` objects (offsets
        and timestamps absolute)."""
        return self._on_loop(stored_records, self.server, topic, partition)
