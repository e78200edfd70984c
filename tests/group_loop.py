"""An in-memory network for the group state machines: N ConsumerMembers and one GroupCoordinator.

Every request and response goes through kwire's framing (encode, then decode) so the tests that use
this prove the bytes path as well as the state machines.  Time is a number the test advances; nothing
sleeps.  FindCoordinator is answered here (the coordinator machine does not own cluster metadata).
"""

from collections import deque

import kwire
from kwire.group import ConsumerMember, GroupCoordinator, Send

FIND_COORDINATOR = kwire.FindCoordinatorRequest.api_key


class Loop:
    def __init__(self, coordinator=None, **coordinator_config):
        self.coordinator = coordinator or GroupCoordinator(**coordinator_config)
        self.now = 0
        self.members = {}
        self.events = {}          # member name -> every event it produced, in order
        self.log = []             # (member name, event) for every event, in the order they happened
        self.dropped = set()      # names whose traffic is silently lost (a crashed process)
        self._correlation = 0
        self._queue = deque()     # (name, outputs) still to process
        self.frames = 0           # requests that went through the framing

    def add(self, name, group_id, topics, **config):
        member = ConsumerMember(group_id, topics, client_id=name, **config)
        self.members[name] = member
        self.events[name] = []
        return member

    def kill(self, name):
        """The process dies: nothing it sends arrives, nothing is sent to it."""
        self.dropped.add(name)

    def close(self, name):
        self._queue.append((name, self.members[name].close(self.now)))
        self.settle()
        self.dropped.add(name)

    def settle(self):
        """Deliver everything that can be delivered at ``now``."""
        for name, member in self.members.items():
            if name not in self.dropped:
                self._queue.append((name, member.poll(self.now)))
        while self._queue:
            name, outputs = self._queue.popleft()
            for out in outputs:
                if isinstance(out, Send):
                    self._send(name, out)
                else:
                    self.events[name].append(out)
                    self.log.append((name, out))

    def _send(self, name, out):
        if name in self.dropped:
            return
        self._correlation += 1
        correlation = self._correlation
        frame = kwire.encode_request(out.request, out.version, correlation, client_id=name)
        header, request = kwire.decode_request(frame)
        assert header.correlation_id == correlation and request == out.request
        self.frames += 1
        if header.request_api_key == FIND_COORDINATOR:
            if out.version >= 4:
                response = kwire.FindCoordinatorResponse(coordinators=[kwire.Coordinator(
                    key=request.coordinator_keys[0], node_id=0, host="127.0.0.1", port=9092)])
            else:
                response = kwire.FindCoordinatorResponse(node_id=0, host="127.0.0.1", port=9092)
            self._deliver(name, out.token, header.request_api_key, out.version, correlation, response)
            return
        handle = (name, out.token, header.request_api_key, correlation)
        replies = self.coordinator.handle(handle, request, header.request_api_version, self.now,
                                          client_id=header.client_id)
        self._route(replies)

    def _route(self, replies):
        for reply in replies:
            name, token, api_key, correlation = reply.handle
            self._deliver(name, token, api_key, reply.version, correlation, reply.response)

    def _deliver(self, name, token, api_key, version, correlation, response):
        if name in self.dropped:
            return
        frame = kwire.encode_response(response, version, correlation)
        header, decoded = kwire.decode_response(frame, api_key, version)
        assert header.correlation_id == correlation
        self._queue.append((name, self.members[name].receive(token, decoded, self.now)))

    def next_deadline(self):
        times = [self.coordinator.next_deadline()]
        times += [m.next_deadline() for n, m in self.members.items() if n not in self.dropped]
        times = [t for t in times if t is not None]
        return min(times) if times else None

    def advance(self, until):
        """Run the world forward to ``until`` (ms), firing every deadline on the way."""
        self.settle()
        while True:
            deadline = self.next_deadline()
            if deadline is None or deadline > until:
                break
            self.now = max(self.now, deadline)
            self._route(self.coordinator.tick(self.now))
            self.settle()
        self.now = until
        self._route(self.coordinator.tick(self.now))
        self.settle()

    def run_until(self, predicate, limit_ms, step_ms=100):
        end = self.now + limit_ms
        while not predicate():
            if self.now >= end:
                raise AssertionError(f"condition not reached within {limit_ms} ms (now={self.now})")
            self.advance(min(self.now + step_ms, end))
