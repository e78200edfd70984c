"""Consumer-protocol (KIP-848) captures made by kwire's own state machines: ConsumerProtocolMember clients against
a ConsumerGroupCoordinator on an injected clock (``tests/consumer_group_loop.py``), every heartbeat request and
response encoded as the frames a capture of that traffic holds, one connection per client.  Metadata (v12, with
topic ids) and ConsumerGroupDescribe exchanges can be added to the same capture."""

import kwire
from kwire.codec import ConsumerGroupDescribeRequest, encode_request, encode_response
from kwire.pipeline._capture import CaptureWriter

from tests.consumer_group_loop import ConsumerLoop

# The broker's answer comes this long (µs) after its request in the capture.
LATENCY_US = 700


class RecordingLoop(ConsumerLoop):
    """A :class:`ConsumerLoop` whose heartbeats are kept as capture rows ``(ts µs, conn, direction, frame)``."""

    def __init__(self, topics, config=None, group_id="g", conn_base=0, frames=None):
        super().__init__(topics, config, group_id)
        self.frames = [] if frames is None else frames
        self.conns = {}
        self.conn_base = conn_base
        self._corr = 0
        self._clock = -1  # the capture's last timestamp: a client answered at once asks again after its answer
        answer = self.coordinator.heartbeat

        def recorded(request, version, now, client_id="", client_host="/127.0.0.1"):
            response = answer(request, version, now, client_id, client_host)
            self.record(client_id, request, response, version, now * 1000)
            return response

        self.coordinator.heartbeat = recorded

    def conn(self, client):
        return self.conns.setdefault(client, self.conn_base + len(self.conns) + 1)

    def record(self, client, request, response, version, ts):
        """One exchange on ``client``'s connection: the request at ``ts`` (µs, or just after the capture's last
        frame), its response LATENCY_US later."""
        ts = max(ts, self._clock + 1)
        self._clock = ts + LATENCY_US
        self._corr += 1
        conn = self.conn(client)
        self.frames.append((ts, conn, 0, encode_request(request, version, correlation_id=self._corr,
                                                          client_id=client)))
        self.frames.append((ts + LATENCY_US, conn, 1, encode_response(response, version, correlation_id=self._corr)))

    def describe(self, version=1):
        """A ConsumerGroupDescribe of this loop's group, answered by the coordinator, on a connection of its own."""
        request = ConsumerGroupDescribeRequest(group_ids=[self.group_id])
        self.record("admin", request, self.coordinator.describe(request, version, self.now), version,
                    self.now * 1000 + 1)

    def metadata(self, version=12):
        """A Metadata exchange naming every topic with its id, on the admin connection."""
        request = kwire.codec.MetadataRequest(topics=None)
        response = kwire.codec.MetadataResponse(topics=[kwire.codec.MetadataResponseTopic(
            name=name, topic_id=self.ids[name], partitions=[kwire.codec.MetadataResponsePartition(
                partition_index=p, leader_id=1, replica_nodes=[1], isr_nodes=[1]) for p in range(count)])
            for name, count in sorted(self.topic_sizes.items())])
        self.record("admin", request, response, version, self.now * 1000 + 2)


def consumer_group_frames(frames, group_id, topics, members=3, seconds=30, leave=True, conn_base=0, describe=True):
    """One group's traffic into ``frames``: ``members`` clients join, run for ``seconds`` (heartbeats), a fourth
    joins, and with ``leave`` the first leaves and the group settles again.  Returns the loop."""
    loop = RecordingLoop(topics, group_id=group_id, conn_base=conn_base, frames=frames)
    loop.topic_sizes = dict(topics)
    loop.metadata()
    for i in range(members):
        loop.add(f"{group_id}-c{i}", sorted(topics))
    loop.run(loop.settled)
    if describe:
        loop.describe()
    start = loop.now
    loop.run(lambda: loop.now - start >= seconds * 1000 // 2, max_ms=seconds * 1000, ms=500)
    loop.add(f"{group_id}-c{members}", sorted(topics))
    loop.run(loop.settled)
    start = loop.now
    loop.run(lambda: loop.now - start >= seconds * 1000 // 2, max_ms=seconds * 1000, ms=500)
    if leave:
        first = f"{group_id}-c0"
        loop.handle(first, loop.members[first].leave(loop.now))
        loop.members.pop(first)
        loop.run(loop.settled)
    if describe:
        loop.describe()
    return loop


def write_capture(path, frames):
    """``frames`` (ts µs, conn, direction, frame) as a capture, in time order (seq follows)."""
    with CaptureWriter(path) as w:
        for ts, conn, direction, frame in sorted(frames, key=lambda f: f[0]):
            w.append(ts, conn, direction, frame)
    return path


def consumer_capture(path, groups=2, members=3, seconds=30, t0_ms=0):
    """A capture of ``groups`` consumer-protocol groups (see :func:`consumer_group_frames`)."""
    frames = []
    for g in range(groups):
        consumer_group_frames(frames, f"group-{g}", {"orders": 6, "audit": 2}, members=members, seconds=seconds,
                              conn_base=1000 * g)
    return write_capture(path, frames)


def add_consumer_groups(out, t0_us, groups=2, members=3, seconds=30, prefix="kip848"):
    """``groups`` consumer-protocol groups into a synth :class:`~kwire.pipeline._synth.Frames` ``out`` from
    ``t0_us``, on connections of their own (mixed with classic traffic in one capture)."""
    frames = []
    for g in range(groups):
        consumer_group_frames(frames, f"{prefix}-{g}", {f"{prefix}-orders": 6, f"{prefix}-audit": 2},
                              members=members, seconds=seconds, conn_base=1000 * g)
    conns = {}
    for ts, conn, direction, frame in sorted(frames, key=lambda f: f[0]):
        if conn not in conns:
            conns[conn] = out.new_conn()
        out.add(t0_us + ts, conns[conn], direction, frame, f"client-{conn}", "broker-1")
    return frames
