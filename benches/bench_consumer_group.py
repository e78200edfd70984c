"""The sans-IO consumer-protocol coordinator (KIP-848): a 10,000-member join storm, and steady heartbeats.

Run: ``python benches/bench_consumer_group.py [--members N] [--topics T] [--partitions P] [--heartbeats H]``.

(a) **Join storm.**  N members send ConsumerGroupHeartbeat at epoch 0 to one group at the same instant,
subscribed to T topics of P partitions each (uniform assignor; the defaults are 10,000 members and 1,000
topics of 100 partitions, 100,000 partitions).  Then rounds follow on the injected clock: ``tick`` fires
the deferred target assignment, and every member heartbeats once per round as a client does (epoch echoed,
``TopicPartitions`` sent to acknowledge a new assignment).  The run ends when the group is Stable and every
member STABLE at the target epoch, each holding its target.  Reported: CPU time inside the coordinator
(``heartbeat`` and ``tick``; the clients' bookkeeping is measured apart), the number of target assignments
computed (Kafka 4.0 would compute one per joiner, N), heartbeats sent and rounds.  Checked after every
response, on the clients' side: no partition is held by two members at once; and after every round: no
member's epoch is ahead of the target epoch.  The goal is <= 2 s of coordinator CPU for N=10,000.

(b) **Steady heartbeats.**  A stable group of M members (default 1,000) heartbeats H times (delta requests,
built before timing): heartbeats per CPU second, request object in, response object out.  Goal >= 200,000/s.

The target assignment is the coordinator's own: ``uniform`` through ``kwire.assignors``.
"""

import argparse
import os
import sys
import time

from kwire.codec import ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatRequestTopicPartitions
from kwire.group import ConsumerGroupCoordinator, ConsumerGroupState, ConsumerMemberState

GROUP = "bench-consumer-group"
INTERVAL_MS = 5000


def topics_of(num_topics, partitions):
    return {f"topic-{i:04d}": (i.to_bytes(16, "big"), partitions) for i in range(1, num_topics + 1)}


class Client:
    """A client's view: its id, epoch and owned partitions, and whether it must acknowledge."""

    __slots__ = ("member_id", "epoch", "owned", "ack")

    def __init__(self, member_id):
        self.member_id = member_id
        self.epoch = 0
        self.owned = {}
        self.ack = False


def join_storm(n, num_topics, partitions):
    topics = topics_of(num_topics, partitions)
    names = sorted(topics)
    coordinator = ConsumerGroupCoordinator(topics=topics)
    clients = [Client(f"member-{i:05d}") for i in range(n)]
    held = {}   # (topic id, partition) -> client member id, on the clients' side
    spent = 0.0
    heartbeats = 0
    now = 0
    rounds = 0
    clock = time.process_time

    def apply(client, response):
        if response.error_code:
            raise SystemExit(f"{client.member_id}: error {response.error_code} {response.error_message}")
        client.epoch = response.member_epoch
        if response.assignment is None:
            return
        new = {tp.topic_id: frozenset(tp.partitions) for tp in response.assignment.topic_partitions}
        for tid, ps in client.owned.items():
            for p in ps - new.get(tid, frozenset()):
                del held[(tid, p)]
        for tid, ps in new.items():
            for p in ps - client.owned.get(tid, frozenset()):
                other = held.setdefault((tid, p), client.member_id)
                if other != client.member_id:
                    raise SystemExit(f"partition {tid.hex()}-{p} given to {client.member_id} while {other} holds it")
        client.owned = new
        client.ack = True

    requests = [ConsumerGroupHeartbeatRequest(group_id=GROUP, member_id=c.member_id, member_epoch=0,
                                              rebalance_timeout_ms=300_000, subscribed_topic_names=names,
                                              topic_partitions=[]) for c in clients]
    total = clock()
    while True:
        for i, client in enumerate(clients):
            req = requests[i]
            if req is None:
                owned = None
                if client.ack:
                    owned = [ConsumerGroupHeartbeatRequestTopicPartitions(topic_id=t, partitions=sorted(ps))
                             for t, ps in client.owned.items()]
                    client.ack = False
                req = ConsumerGroupHeartbeatRequest(group_id=GROUP, member_id=client.member_id,
                                                    member_epoch=client.epoch, topic_partitions=owned)
            requests[i] = None
            t = clock()
            response = coordinator.heartbeat(req, 0, now)
            spent += clock() - t
            heartbeats += 1
            apply(client, response)
        rounds += 1
        group = coordinator.group(GROUP)
        for member in group.members.values():
            if member.member_epoch > group.target_epoch:
                raise SystemExit(f"{member.member_id} at epoch {member.member_epoch} > target {group.target_epoch}")
        now += INTERVAL_MS // 5
        t = clock()
        coordinator.tick(now)
        spent += clock() - t
        if group.state() is ConsumerGroupState.STABLE and not any(c.ack for c in clients):
            break
        if rounds > 50:
            raise SystemExit(f"no convergence after {rounds} rounds: {group.state()}")
    total = clock() - total
    states = {m.state for m in group.members.values()}
    assert states == {ConsumerMemberState.STABLE}, states
    assert len(held) == num_topics * partitions, (len(held), num_topics * partitions)
    for client in clients:
        assert client.owned == group.target_of(client.member_id), client.member_id
    return {"coordinator_cpu_s": spent, "total_cpu_s": total, "targets_computed": coordinator.assignments_computed,
            "heartbeats": heartbeats, "rounds": rounds, "group_epoch": group.group_epoch}


def steady(members, heartbeats, num_topics=100, partitions=100):
    topics = topics_of(num_topics, partitions)
    coordinator = ConsumerGroupCoordinator({"group.consumer.assignment.interval.ms": 0}, topics=topics)
    names = sorted(topics)
    epochs = {}
    for i in range(members):
        r = coordinator.heartbeat(ConsumerGroupHeartbeatRequest(
            group_id=GROUP, member_id=f"m{i}", member_epoch=0, rebalance_timeout_ms=1000,
            subscribed_topic_names=names, topic_partitions=[]), 0, 0)
        epochs[r.member_id] = r.member_epoch
    for _ in range(4):   # converge: revoke, acknowledge, pick up
        for member_id in list(epochs):
            member = coordinator.group(GROUP).members[member_id]
            owned = [ConsumerGroupHeartbeatRequestTopicPartitions(topic_id=t, partitions=sorted(ps))
                     for t, ps in member.assigned.items()]
            r = coordinator.heartbeat(ConsumerGroupHeartbeatRequest(
                group_id=GROUP, member_id=member_id, member_epoch=epochs[member_id], topic_partitions=owned), 0, 0)
            epochs[member_id] = r.member_epoch
    assert coordinator.group_state(GROUP) is ConsumerGroupState.STABLE, coordinator.group_state(GROUP)
    ids = list(epochs)
    reqs = [ConsumerGroupHeartbeatRequest(group_id=GROUP, member_id=ids[i % members], member_epoch=epochs[ids[i % members]])
            for i in range(heartbeats)]
    heartbeat = coordinator.heartbeat
    t = time.process_time()
    now = 1
    for req in reqs:
        r = heartbeat(req, 0, now)
    spent = time.process_time() - t
    assert r.error_code == 0 and r.assignment is None
    return {"heartbeats": heartbeats, "cpu_s": spent, "per_second": heartbeats / spent}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--members", type=int, default=10_000)
    parser.add_argument("--topics", type=int, default=1_000)
    parser.add_argument("--partitions", type=int, default=100)
    parser.add_argument("--heartbeats", type=int, default=200_000)
    parser.add_argument("--steady-members", type=int, default=1_000)
    args = parser.parse_args(argv)
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    storm = join_storm(args.members, args.topics, args.partitions)
    print(f"(a) join storm: {args.members} members, {args.topics} topics x {args.partitions} partitions, "
          "assignor uniform")
    print(f"    coordinator CPU {storm['coordinator_cpu_s']:.3f} s (goal <= 2 s); all CPU incl. clients "
          f"{storm['total_cpu_s']:.3f} s")
    print(f"    target assignments computed: {storm['targets_computed']} (Kafka 4.0: one per joiner); "
          f"{storm['heartbeats']} heartbeats in {storm['rounds']} rounds; group epoch {storm['group_epoch']}")
    s = steady(args.steady_members, args.heartbeats)
    print(f"(b) steady heartbeats: {s['heartbeats']} over {args.steady_members} members in {s['cpu_s']:.3f} s CPU: "
          f"{s['per_second']:,.0f}/s (goal >= 200,000/s)")
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
