"""A small asyncio driver for :class:`ConsumerMember` over real sockets.

The member decides; this only moves bytes and keeps time.  One connection goes to a bootstrap broker
(Metadata, FindCoordinator), one to the coordinator the member found (the same one when the coordinator
is the bootstrap broker).  Responses are matched to requests by correlation id.

Connections fail the way Java's ``NetworkClient`` lets them: a lost connection fails every request in
flight on it (``request_failed``), which sends the member back through FindCoordinator as Java's client
does; a request unanswered within its timeout closes its connection, failing it the same way.  A request
for a connection that is closed reopens it, after an exponential backoff once connecting has failed
(``reconnect_backoff_ms`` doubling up to ``reconnect_backoff_max_ms``, as ``reconnect.backoff.ms``).
"""

import asyncio
import itertools
import struct

from kwire.codec import (
    FindCoordinatorRequest,
    FrameSplitter,
    JoinGroupRequest,
    MetadataRequest,
    MetadataRequestTopic,
    decode_response,
    encode_request,
)
from kwire.errors import DecodeError, KwireError, UnreachableError

from ._member import CoordinatorFound, Send

_METADATA_VERSION = 9
_METADATA = "metadata"  # the tag of the driver's own Metadata request; member requests carry their token
_SIZE = struct.Struct(">i")
# Java's AbstractCoordinator.JOIN_GROUP_TIMEOUT_LAPSE: a JoinGroup may be parked for the whole rebalance
# timeout, so its request timeout is that plus this.
_JOIN_GROUP_TIMEOUT_LAPSE_MS = 5_000


def _decode(frame, api_key, version):
    """The response in ``frame``, ignoring bytes after its body as Java's clients do (they read a response's
    fields and never check for more): librdkafka's mock cluster writes one byte past its flexible Metadata
    bodies.  Anything else wrong with the frame is raised."""
    try:
        return decode_response(frame, api_key, version)[1]
    except DecodeError as exc:
        end = exc.offset
        if end is None or not 8 <= end < len(frame):
            raise
        body = frame[4:end]
        return decode_response(_SIZE.pack(len(body)) + body, api_key, version)[1]


class _Link:
    """One open connection: requests out, responses in, matched by correlation id."""

    def __init__(self, host, port, client_id, on_response, on_lost):
        self.host, self.port = host, port
        self.client_id = client_id
        self._on_response = on_response
        self._on_lost = on_lost
        self._writer = None
        self._reader_task = None
        self._inflight = {}      # correlation id -> (api key, version, tag)
        self._correlation = itertools.count(1)
        self.closed = False

    async def open(self):
        reader, self._writer = await asyncio.open_connection(self.host, self.port)
        self._reader_task = asyncio.get_running_loop().create_task(self._read(reader))

    def send(self, request, version, tag):
        correlation = next(self._correlation)
        # In flight before it is written: if the connection is already going, the reader's end fails it.
        self._inflight[correlation] = (request.api_key, version, tag)
        self._writer.write(encode_request(request, version, correlation, client_id=self.client_id))

    async def _read(self, reader):
        splitter = FrameSplitter()
        try:
            while True:
                data = await reader.read(65536)
                if not data:
                    break
                for frame in splitter.feed(data):
                    (correlation,) = _SIZE.unpack_from(frame, 4)
                    api_key, version, tag = self._inflight.pop(correlation)
                    response = _decode(frame, api_key, version)
                    self._on_response(tag, response)
        except (OSError, KwireError, KeyError):
            pass
        finally:
            self.closed = True
            self._writer.close()
            lost, self._inflight = list(self._inflight.values()), {}
            self._on_lost([tag for _key, _version, tag in lost])

    def abort(self):
        """Close now; the reader's end fails whatever is in flight."""
        if self._writer is not None:
            self._writer.transport.abort()

    async def close(self):
        if self._writer is not None:
            self._writer.close()
            try:
                await self._writer.wait_closed()
            except OSError:
                pass
        if self._reader_task is not None:
            await asyncio.gather(self._reader_task, return_exceptions=True)


class _Broker:
    """A broker the driver talks to: its current :class:`_Link`, opened on the first request and reopened
    (with backoff once connecting has failed) on the first request after it closed.  Requests made while it
    connects wait here."""

    def __init__(self, driver, host, port, on_response, on_lost):
        self.driver = driver     # its public settings: timeouts, backoff, the member's client id
        self.host, self.port = host, port
        self._on_response = on_response
        self._on_lost = on_lost
        self.link = None
        self.waiting = []        # (request, version, tag) to send once connected
        self._connecting = None
        self._failures = 0
        self.opened = 0          # connections opened so far

    def send(self, request, version, tag):
        link = self.link
        if link is not None and not link.closed:
            link.send(request, version, tag)
            return
        self.waiting.append((request, version, tag))
        if self._connecting is None:
            self._connecting = asyncio.get_running_loop().create_task(self._connect())

    async def _connect(self):
        driver = self.driver
        if self._failures:
            backoff = min(driver.reconnect_backoff_ms * 2 ** (self._failures - 1), driver.reconnect_backoff_max_ms)
            await asyncio.sleep(backoff / 1000)
        link = _Link(self.host, self.port, driver.client_id, self._on_response, self._on_lost)
        try:
            await asyncio.wait_for(link.open(), driver.request_timeout_ms / 1000)
        except (OSError, asyncio.TimeoutError):
            self._failures += 1
            self._connecting = None
            self.fail_waiting()
            return
        self._failures = 0
        self._connecting = None
        self.link = link
        self.opened += 1
        waiting, self.waiting = self.waiting, []
        for request, version, tag in waiting:
            link.send(request, version, tag)

    def fail_waiting(self):
        waiting, self.waiting = self.waiting, []
        self._on_lost([tag for _request, _version, tag in waiting])

    def drop(self, tag):
        """``tag`` timed out: close the connection (failing everything in flight on it, as Java's
        NetworkClient does on a request timeout), or fail it if it was still waiting to connect."""
        if any(t == tag for _r, _v, t in self.waiting):
            self.waiting = [w for w in self.waiting if w[2] != tag]
            self._on_lost([tag])
        elif self.link is not None:
            self.link.abort()

    async def close(self):
        if self._connecting is not None:
            self._connecting.cancel()
            await asyncio.gather(self._connecting, return_exceptions=True)
        if self.link is not None:
            await self.link.close()


class MemberDriver:
    """Run one :class:`ConsumerMember` against a real cluster.

    ``await driver.start()`` connects to ``bootstrap`` ("host:port"), reads the partition counts of the
    member's topics (the leader assigns from them) and starts the member; ``driver.events`` collects
    every event the member reports (``on_event`` is called with each, too); ``await driver.close()``
    leaves the group and closes the connections.  ``request_timeout_ms`` bounds each request (a JoinGroup:
    the member's rebalance timeout plus 5 s, as Java); ``reconnect_backoff_ms``/``reconnect_backoff_max_ms``
    space the attempts to reopen a connection that could not be opened.
    """

    def __init__(self, member, bootstrap, *, on_event=None, request_timeout_ms=30_000, reconnect_backoff_ms=50,
                 reconnect_backoff_max_ms=1_000):
        self.member = member
        host, _, port = bootstrap.rpartition(":")
        self.bootstrap = (host, int(port))
        self.on_event = on_event
        self.request_timeout_ms = request_timeout_ms
        self.reconnect_backoff_ms = reconnect_backoff_ms
        self.reconnect_backoff_max_ms = reconnect_backoff_max_ms
        self.events = []
        self._loop = None
        self._brokers = {}       # (host, port) -> _Broker
        self._coordinator = None
        self._pending = {}       # tag -> (broker, timeout handle): sent, neither answered nor failed yet
        self._timer = None
        self._metadata = None

    def _now(self):
        return int(self._loop.time() * 1000)

    def _broker(self, host, port):
        broker = self._brokers.get((host, port))
        if broker is None:
            broker = self._brokers[(host, port)] = _Broker(self, host, port, self._response, self._lost)
        return broker

    @property
    def client_id(self):
        return self.member.client_id

    @property
    def connections_opened(self):
        """How many connections the driver has opened (reconnections included)."""
        return sum(b.opened for b in self._brokers.values())

    async def start(self):
        self._loop = asyncio.get_running_loop()
        self._metadata = self._loop.create_future()
        self._send_metadata()
        try:
            counts = await asyncio.wait_for(self._metadata, self.request_timeout_ms / 1000)
        except asyncio.TimeoutError:
            host, port = self.bootstrap
            raise UnreachableError(f"no metadata from {host}:{port} within {self.request_timeout_ms} ms") from None
        self.member.update_metadata(counts)
        self._process(self.member.poll(self._now()))
        return self

    def _send_metadata(self):
        topics = [MetadataRequestTopic(name=t) for t in self.member.topics]
        self._request(self._broker(*self.bootstrap),
                      MetadataRequest(topics=topics, allow_auto_topic_creation=False), _METADATA_VERSION, _METADATA)

    def _request(self, broker, request, version, tag):
        timeout = self.request_timeout_ms
        if isinstance(request, JoinGroupRequest):
            timeout = max(timeout, self.member.rebalance_timeout_ms + _JOIN_GROUP_TIMEOUT_LAPSE_MS)
        self._pending[tag] = (broker, self._loop.call_later(timeout / 1000, broker.drop, tag))
        broker.send(request, version, tag)

    def _settle(self, tag):
        """Whether ``tag`` was pending; it is not any more (each request is answered or failed once)."""
        entry = self._pending.pop(tag, None)
        if entry is None:
            return False
        entry[1].cancel()
        return True

    def _response(self, tag, response):
        if not self._settle(tag):
            return
        if tag == _METADATA:
            if not self._metadata.done():
                self._metadata.set_result({t.name: len(t.partitions) for t in response.topics if t.error_code == 0})
            return
        self._process(self.member.receive(tag, response, self._now()))

    def _lost(self, tags):
        for tag in tags:
            if not self._settle(tag):
                continue
            if tag == _METADATA:
                if not self._metadata.done():
                    self._send_metadata()  # start() bounds the retries with its own timeout
                continue
            self._process(self.member.request_failed(tag, self._now()))

    def _process(self, outputs):
        for out in outputs:
            if isinstance(out, Send):
                self._send(out)
            else:
                self.events.append(out)
                if isinstance(out, CoordinatorFound):
                    self._coordinator = self._broker(out.host, out.port)
                if self.on_event is not None:
                    self.on_event(out)
        self._arm()

    def _send(self, out):
        if isinstance(out.request, FindCoordinatorRequest) or not out.to_coordinator:
            broker = self._broker(*self.bootstrap)
        else:
            broker = self._coordinator
        self._request(broker, out.request, out.version, out.token)

    def _arm(self):
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        deadline = self.member.next_deadline()
        if deadline is not None:
            self._timer = self._loop.call_at(max(deadline, self._now()) / 1000, self._fire)

    def _fire(self):
        self._timer = None
        self._process(self.member.poll(self._now()))

    def _leave(self, now):
        return self.member.close(now)

    async def close(self, linger_s=1.0):
        """Leave the group (a dynamic member sends LeaveGroup) and close the connections."""
        self._process(self._leave(self._now()))
        await asyncio.sleep(min(linger_s, 0.2))  # let LeaveGroup reach the coordinator
        if self._timer is not None:
            self._timer.cancel()
        for _broker, handle in self._pending.values():
            handle.cancel()
        self._pending.clear()
        for broker in self._brokers.values():
            await broker.close()
