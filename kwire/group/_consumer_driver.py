"""The asyncio driver for :class:`ConsumerProtocolMember` (KIP-848's ``group.protocol=consumer``).

It shares :class:`MemberDriver`'s connections, timeouts and reconnection (this is a subclass); what differs is
what the driver does itself rather than the member: the classic member sends its own FindCoordinator and
Metadata, while the consumer-protocol member only produces heartbeats.  So the driver:

* asks the bootstrap broker for ApiVersions and fails at once if it has no ConsumerGroupHeartbeat (a classic-only
  broker would otherwise answer nothing useful);
* sends Metadata by topic name and hands the member the topic ids it learns (``set_topic_names``): an assignment
  carries ids, and Java's ``ConsumerMembershipManager`` likewise keeps an id it cannot name pending until a
  metadata update; the driver asks again while the member waits on such ids;
* looks the coordinator up (FindCoordinator) before the first heartbeat and again after each
  :class:`CoordinatorLost`, then calls ``coordinator_found``, as Java's ``CoordinatorRequestManager`` does;
* on close, has the member leave (epoch -1, or -2 for a static member) and lets the leave go out.
"""

import asyncio
import base64
import uuid

from kwire.codec import (
    API_VERSIONS_RANGE,
    ApiKey,
    ApiVersionsRequest,
    FindCoordinatorRequest,
    MetadataRequest,
    MetadataRequestTopic,
    error_name,
)
from kwire.errors import UnreachableError, UnsupportedVersionError

from ._consumer_member import ConsumerMembershipState, CoordinatorLost
from ._driver import MemberDriver

_API_VERSIONS = "api-versions"   # the driver's own requests' tags; the member's requests carry int tokens
_TOPIC_IDS = "topic-ids"
_FIND = "find-coordinator"
# ApiVersions v0: every broker answers it (librdkafka's mock stops at v2 and answers a newer one in v0's shape).
_API_VERSIONS_VERSION = 0
# ConsumerGroupHeartbeat v1 wants the member id made by the client (KIP-1082: ConsumerGroupHeartbeatRequest
# .CONSUMER_GENERATED_MEMBER_ID_REQUIRED_VERSION); librdkafka's mock offers only v1.
_CLIENT_MEMBER_ID_VERSION = 1
_REGEX_VERSION = 1   # SubscribedTopicRegex is in ConsumerGroupHeartbeat from v1
# Topic ids are in Metadata from v10; v12 is the newest kwire's tables have.
_METADATA_MIN, _METADATA_MAX = 10, 12
# FindCoordinator v3 asks for one key; v4+ batch keys, which every broker with api 68 also answers at v3.
_FIND_VERSION = 3
_GROUP_KEY_TYPE = 0


class ConsumerProtocolDriver(MemberDriver):
    """Run one :class:`ConsumerProtocolMember` against a real cluster.

    ``await driver.start()`` connects to ``bootstrap`` ("host:port"), checks the broker speaks
    ConsumerGroupHeartbeat, learns the ids of the member's topics, finds the coordinator and sends the first
    heartbeat; afterwards heartbeats go on the member's own timing.  ``driver.events`` collects every event
    (``on_event`` is called with each, too); ``await driver.close()`` leaves the group and closes the connections.
    ``retry_backoff_ms`` spaces repeated FindCoordinator and Metadata requests.
    """

    def __init__(self, member, bootstrap, *, client_id="kwire-consumer", retry_backoff_ms=100, **kwargs):
        super().__init__(member, bootstrap, **kwargs)
        self._client_id = client_id
        self.retry_backoff_ms = retry_backoff_ms
        self._started = None
        self._metadata_version = None
        self._finding = False
        self._metadata_due = False       # a Metadata request is in flight or scheduled
        self._closing = False
        self.heartbeat_version = None    # ConsumerGroupHeartbeat's: the newest both sides have
        self.partitions_per_topic = {}   # from the last Metadata: {topic name: partition count}

    @property
    def client_id(self):
        return self._client_id

    async def start(self):
        loop = self._loop = asyncio.get_running_loop()
        self._started = loop.create_future()
        self._request(self._broker(*self.bootstrap), ApiVersionsRequest(), _API_VERSIONS_VERSION, _API_VERSIONS)
        try:
            await asyncio.wait_for(asyncio.shield(self._started), self.request_timeout_ms / 1000)
        except asyncio.TimeoutError:
            host, port = self.bootstrap
            raise UnreachableError(f"no coordinator for {self.member.group_id!r} from {host}:{port} "
                                   f"within {self.request_timeout_ms} ms") from None
        self._process(self.member.poll(self._now()))
        return self

    # -- the driver's own requests --------------------------------------------------------------------------

    def _send_metadata(self):
        self._metadata_due = True
        topics = [MetadataRequestTopic(name=t) for t in self.member.subscription]
        self._request(self._broker(*self.bootstrap), MetadataRequest(topics=topics, allow_auto_topic_creation=False),
                      self._metadata_version, _TOPIC_IDS)

    def _find_coordinator(self):
        if self._finding:
            return
        self._finding = True
        self._request(self._broker(*self.bootstrap),
                      FindCoordinatorRequest(key=self.member.group_id, key_type=_GROUP_KEY_TYPE), _FIND_VERSION, _FIND)

    def _later(self, action):
        self._loop.call_later(self.retry_backoff_ms / 1000, lambda: None if self._closing else action())

    def _own_response(self, tag, response):
        if tag == _API_VERSIONS:
            self._on_api_versions(response)
        elif tag == _TOPIC_IDS:
            self._metadata_due = False
            known = [t for t in response.topics if t.error_code == 0]
            self.partitions_per_topic.update({t.name: len(t.partitions) for t in known})
            self.member.set_topic_names({t.topic_id: t.name for t in known})
            if not self._started.done():
                self._find_coordinator()
            else:
                self._process(self.member.poll(self._now()))
        elif response.error_code:
            self._finding = False
            self._later(self._find_coordinator)   # COORDINATOR_NOT_AVAILABLE while the group is placed
        else:
            self._finding = False
            self._coordinator = self._broker(response.host, response.port)
            if not self._started.done():
                self._started.set_result(None)
            else:
                self._process(self.member.coordinator_found(self._now()))

    def _on_api_versions(self, response):
        if response.error_code:
            return self._fail(UnsupportedVersionError(f"ApiVersions failed with {error_name(response.error_code)}"))
        ranges = {k.api_key: (k.min_version, k.max_version) for k in response.api_keys}
        low, high = ranges.get(ApiKey.CONSUMER_GROUP_HEARTBEAT, (0, -1))
        ours = API_VERSIONS_RANGE[ApiKey.CONSUMER_GROUP_HEARTBEAT]
        version = min(high, ours[1])
        if version < max(low, ours[0]):
            return self._fail(UnsupportedVersionError(
                f"{self.bootstrap[0]}:{self.bootstrap[1]} offers no ConsumerGroupHeartbeat version in "
                f"{ours[0]}-{ours[1]} (group.protocol=consumer)"))
        metadata = ranges.get(ApiKey.METADATA, (0, -1))
        if metadata[1] < _METADATA_MIN:
            return self._fail(UnsupportedVersionError("the broker's Metadata has no topic ids (v10+)"))
        self.heartbeat_version = version
        if version >= _CLIENT_MEMBER_ID_VERSION and not self.member.member_id:
            # Java's Uuid.randomUuid().toString(): url-safe base64 of 16 random bytes, unpadded.
            self.member.member_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()
        self._metadata_version = min(metadata[1], _METADATA_MAX)
        self._send_metadata()

    def _fail(self, exc):
        if not self._started.done():
            self._started.set_exception(exc)

    def _response(self, tag, response):
        if isinstance(tag, str):
            if self._settle(tag):
                self._own_response(tag, response)
            return
        super()._response(tag, response)

    def _lost(self, tags):
        own = [t for t in tags if isinstance(t, str)]
        super()._lost([t for t in tags if not isinstance(t, str)])
        for tag in own:
            if not self._settle(tag):
                continue
            if tag == _API_VERSIONS:
                self._later(lambda: self._request(self._broker(*self.bootstrap), ApiVersionsRequest(),
                                                  _API_VERSIONS_VERSION, _API_VERSIONS))
            elif tag == _TOPIC_IDS:
                self._later(self._send_metadata)
            else:
                self._finding = False
                self._later(self._find_coordinator)

    # -- the member's outputs -------------------------------------------------------------------------------

    def _send(self, out):
        request = out.request
        if self.heartbeat_version >= _REGEX_VERSION and request.subscribed_topic_names is not None:
            # librdkafka sends the names with an empty regex, and its mock cluster requires the two together
            # (rdkafka_mock_cgrp.c validate_subscription asserts it); Kafka reads an empty regex as none.
            request.subscribed_topic_regex = request.subscribed_topic_regex or ""
        self._request(self._coordinator, request, self.heartbeat_version, out.token)

    def _process(self, outputs):
        super()._process(outputs)
        if any(isinstance(out, CoordinatorLost) for out in outputs):
            self._find_coordinator()
        # RECONCILING after a poll: the target names topic ids Metadata has not given yet (a topic created
        # after the member joined): ask again, one request at a time.
        if self.member.state is ConsumerMembershipState.RECONCILING and not self._metadata_due and self._started:
            self._metadata_due = True
            self._later(self._send_metadata)

    def _arm(self):
        if self._coordinator is not None and not self._closing:
            super()._arm()

    def _leave(self, now):
        if self._coordinator is None:   # never started: nothing to leave, nowhere to send it
            return []
        return self.member.leave(now)

    async def close(self, linger_s=1.0):
        """Leave the group (a leave heartbeat) and close the connections."""
        self._closing = True
        await super().close(linger_s)


