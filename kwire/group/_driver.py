"""A small asyncio driver for :class:`ConsumerMember` over real sockets.

The member decides; this only moves bytes and keeps time.  One connection goes to a bootstrap broker
(Metadata, FindCoordinator), one to the coordinator the member found.  Responses are matched to requests
by correlation id; a lost connection fails every request in flight on it (``request_failed``), which sends
the member back through FindCoordinator as Java's client does.
"""

import asyncio
import itertools
import struct

from kwire.codec import (
    FindCoordinatorRequest,
    FrameSplitter,
    MetadataRequest,
    MetadataRequestTopic,
    decode_response,
    encode_request,
)
from kwire.errors import KwireError

from ._member import CoordinatorFound, Send

_METADATA_VERSION = 9
_SIZE = struct.Struct(">i")


class _Link:
    """One connection: requests out, responses in, matched by correlation id."""

    def __init__(self, host, port, client_id, on_response, on_lost):
        self.host, self.port = host, port
        self.client_id = client_id
        self._on_response = on_response
        self._on_lost = on_lost
        self._writer = None
        self._reader_task = None
        self._inflight = {}      # correlation id -> (api key, version, tag)
        self._correlation = itertools.count(1)

    async def open(self):
        reader, self._writer = await asyncio.open_connection(self.host, self.port)
        self._reader_task = asyncio.get_running_loop().create_task(self._read(reader))

    def send(self, request, version, tag):
        correlation = next(self._correlation)
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
                    _header, response = decode_response(frame, api_key, version)
                    self._on_response(tag, response)
        except (OSError, KwireError, KeyError):
            pass
        finally:
            lost, self._inflight = list(self._inflight.values()), {}
            self._on_lost([tag for _key, _version, tag in lost])

    async def close(self):
        if self._writer is not None:
            self._writer.close()
            try:
                await self._writer.wait_closed()
            except OSError:
                pass
        if self._reader_task is not None:
            await asyncio.gather(self._reader_task, return_exceptions=True)


class MemberDriver:
    """Run one :class:`ConsumerMember` against a real cluster.

    ``await driver.start()`` connects to ``bootstrap`` ("host:port"), reads the partition counts of the
    member's topics (the leader assigns from them) and starts the member; ``driver.events`` collects
    every event the member reports (``on_event`` is called with each, too); ``await driver.close()``
    leaves the group and closes the connections.
    """

    def __init__(self, member, bootstrap, *, on_event=None):
        self.member = member
        host, _, port = bootstrap.rpartition(":")
        self.bootstrap = (host, int(port))
        self.on_event = on_event
        self.events = []
        self._loop = None
        self._bootstrap_link = None
        self._coordinator_link = None
        self._timer = None
        self._metadata = None
        self._pending = []

    def _now(self):
        return int(self._loop.time() * 1000)

    async def start(self):
        self._loop = asyncio.get_running_loop()
        self._bootstrap_link = _Link(*self.bootstrap, self.member.client_id, self._bootstrap_response, self._lost)
        await self._bootstrap_link.open()
        self._metadata = self._loop.create_future()
        topics = [MetadataRequestTopic(name=t) for t in self.member.topics]
        self._bootstrap_link.send(MetadataRequest(topics=topics, allow_auto_topic_creation=False),
                                  _METADATA_VERSION, "metadata")
        counts = await asyncio.wait_for(self._metadata, 30)
        self.member.update_metadata(counts)
        self._process(self.member.poll(self._now()))
        return self

    def _bootstrap_response(self, tag, response):
        if tag == "metadata":
            if not self._metadata.done():
                self._metadata.set_result({t.name: len(t.partitions) for t in response.topics if t.error_code == 0})
            return
        self._process(self.member.receive(tag, response, self._now()))

    def _coordinator_response(self, tag, response):
        self._process(self.member.receive(tag, response, self._now()))

    def _lost(self, tags):
        now = self._now()
        for tag in tags:
            if tag != "metadata":
                self._process(self.member.request_failed(tag, now))

    def _process(self, outputs):
        for out in outputs:
            if isinstance(out, Send):
                self._send(out)
            else:
                self.events.append(out)
                if isinstance(out, CoordinatorFound):
                    self._coordinator_found(out.host, out.port)
                if self.on_event is not None:
                    self.on_event(out)
        self._arm()

    def _coordinator_found(self, host, port):
        link = self._coordinator_link
        if link is not None and (link.host, link.port) == (host, port):
            return
        if (host, port) == self.bootstrap:
            # A single node (or the coordinator is the bootstrap broker): one connection serves both.
            self._coordinator_link = self._bootstrap_link
            return
        self._coordinator_link = None
        self._pending = []
        self._loop.create_task(self._connect_coordinator(host, port))

    def _send(self, out):
        if isinstance(out.request, FindCoordinatorRequest) or not out.to_coordinator:
            link = self._bootstrap_link
        else:
            link = self._coordinator_link
            if link is None:
                self._pending.append(out)  # sent once the coordinator's connection is open
                return
        try:
            link.send(out.request, out.version, out.token)
        except (OSError, RuntimeError):
            self._process(self.member.request_failed(out.token, self._now()))

    async def _connect_coordinator(self, host, port):
        link = _Link(host, port, self.member.client_id, self._coordinator_response, self._lost)
        try:
            await link.open()
        except OSError:
            pending, self._pending = self._pending, []
            for out in pending:
                self._process(self.member.request_failed(out.token, self._now()))
            return
        self._coordinator_link = link
        pending, self._pending = self._pending, []
        for out in pending:
            self._send(out)
        self._process(self.member.poll(self._now()))

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

    async def close(self, linger_s=1.0):
        """Leave the group (a dynamic member sends LeaveGroup) and close both connections."""
        self._process(self.member.close(self._now()))
        await asyncio.sleep(min(linger_s, 0.2))  # let LeaveGroup reach the coordinator
        if self._timer is not None:
            self._timer.cancel()
        for link in {id(x): x for x in (self._coordinator_link, self._bootstrap_link) if x is not None}.values():
            await link.close()
