"""One GroupCoordinator on an injected clock, driven request by request: the helper of the coordinator tests.

Each request gets a fresh handle and its replies are kept by handle; member ids are deterministic
(``<client or instance id>-<n>``) through the member_id_factory hook.  Nothing sleeps.
"""

import itertools

import kwire
from kwire.group import GroupCoordinator, GroupState

SESSION = 10_000
REBALANCE = 30_000


def protocols(*names, meta=b"m"):
    return [kwire.JoinGroupRequestProtocol(name=n, metadata=meta + n.encode()) for n in names]


class Net:
    """One coordinator and a clock; each request gets a fresh handle and its replies are kept by handle."""

    def __init__(self, **config):
        counter = itertools.count(1)
        config.setdefault("initial_rebalance_delay_ms", 100)
        # Ids from a counter, for both protocols: an assignor's answer follows Java's hash order of member ids,
        # so random ids would make a test's expected moves depend on the draw.
        config.setdefault("consumer_member_id_factory", lambda: f"member-{next(counter)}")
        self.c = GroupCoordinator(member_id_factory=lambda prefix: f"{prefix}-{next(counter)}", **config)
        self.now = 0
        self.replies = {}
        self._handles = itertools.count(1)

    def _take(self, replies):
        for r in replies:
            assert r.handle not in self.replies, "a request answered twice"
            self.replies[r.handle] = r
        return replies

    def send(self, request, version, client_id="c"):
        handle = next(self._handles)
        self._take(self.c.handle(handle, request, version, self.now, client_id=client_id))
        return handle

    def answer(self, handle):
        reply = self.replies.get(handle)
        return None if reply is None else reply.response

    def complete(self, *handles):
        """Fire deadlines in order until every handle is answered (the initial delay may extend)."""
        for _ in range(10):
            if all(h in self.replies for h in handles):
                return
            self.tick(self.c.next_deadline())
        raise AssertionError("the join phase did not complete")

    def completing_pair(self, **join_kw):
        """Two v3 members joined, the group in CompletingRebalance; returns their JoinGroup responses."""
        a = self.join(version=3, client_id="a", **join_kw)
        b = self.join(version=3, client_id="b", **join_kw)
        self.complete(a, b)
        assert self.state() == GroupState.COMPLETING_REBALANCE
        return self.answer(a), self.answer(b)

    def tick(self, now):
        self.now = now
        return self._take(self.c.tick(now))

    def join(self, member_id="", version=9, group="g", instance=None, protos=None, session=SESSION,
             rebalance=REBALANCE, client_id="c", protocol_type="consumer"):
        req = kwire.JoinGroupRequest(group_id=group, session_timeout_ms=session,
                                     rebalance_timeout_ms=rebalance if version >= 1 else -1,
                                     member_id=member_id, group_instance_id=instance,
                                     protocol_type=protocol_type, protocols=protos or protocols("range"))
        return self.send(req, version, client_id)

    def sync(self, member_id, generation, version=5, group="g", instance=None, assignments=(), ptype="consumer",
             pname="range"):
        req = kwire.SyncGroupRequest(group_id=group, generation_id=generation, member_id=member_id,
                                     group_instance_id=instance,
                                     protocol_type=ptype if version >= 5 else None,
                                     protocol_name=pname if version >= 5 else None,
                                     assignments=[kwire.SyncGroupRequestAssignment(member_id=m, assignment=a)
                                                  for m, a in assignments])
        return self.send(req, version)

    def heartbeat(self, member_id, generation, version=4, group="g", instance=None):
        return self.send(kwire.HeartbeatRequest(group_id=group, generation_id=generation, member_id=member_id,
                                                group_instance_id=instance), version)

    def leave(self, *identities, version=5, group="g"):
        if version >= 3:
            members = [kwire.MemberIdentity(member_id=m, group_instance_id=i) for m, i in identities]
            return self.send(kwire.LeaveGroupRequest(group_id=group, members=members), version)
        (member_id, _), = identities
        return self.send(kwire.LeaveGroupRequest(group_id=group, member_id=member_id), version)

    def state(self, group="g"):
        view = self.c.describe_group(group)
        return None if view is None else view.state

    def view(self, group="g"):
        return self.c.describe_group(group)

    def stable_group(self, n=2, version=9, group="g", instances=None):
        """n dynamic (or static, if instances given) members through join and sync; returns their ids."""
        handles = []
        for i in range(n):
            if instances:
                handles.append(self.join(version=version, group=group, instance=instances[i], client_id=f"c{i}"))
            else:
                h = self.join(version=version, group=group, client_id=f"c{i}")
                mid = self.answer(h).member_id if version >= 4 else ""
                handles.append(self.join(mid, version=version, group=group, client_id=f"c{i}") if version >= 4 else h)
        self.complete(*handles)
        joins = [self.answer(h) for h in handles]
        assert all(j is not None and j.error_code == 0 for j in joins), joins
        ids = [j.member_id for j in joins]
        gen = joins[0].generation_id
        leader = joins[0].leader
        sync_handles = [self.sync(m, gen, group=group, instance=instances[i] if instances else None,
                                  assignments=[(x, x.encode()) for x in ids] if m == leader else ())
                        for i, m in enumerate(ids) if m != leader]
        lh = self.sync(leader, gen, group=group, instance=instances[ids.index(leader)] if instances else None,
                       assignments=[(x, x.encode()) for x in ids])
        assert all(self.answer(h).error_code == 0 for h in [*sync_handles, lh])
        assert self.state(group) == GroupState.STABLE
        return ids, gen, leader
