"""The sans-IO group coordinator: one rebalance of a 10,000-member group, joins then syncs to Stable.

Run: ``python benches/bench_group.py [--members N] [--partitions P] [--repeat R]``

What is timed (CPU time, ``time.process_time``), per phase, median of ``--repeat`` fresh groups:

* ``member_id``: N JoinGroup v9 with ``member_id=""``, each answered MEMBER_ID_REQUIRED (KIP-394);
* ``join``: N JoinGroup v9 with the handed-out ids, each parked;
* ``complete``: the join timer fires (the initial delay, extended once because members kept arriving):
  N JoinGroup responses, the leader's listing every member, and N session timers;
* ``assign``: the leader's work, outside the coordinator: ``kwire.leader_assignments("range", ...)``
  over P partitions of one topic (decode N subscriptions, assign, encode N assignments);
* ``sync``: N-1 follower SyncGroups (parked) and the leader's with N assignments, answering all N.

The coordinator's figure is member_id + join + complete + sync; the target is <= 200 ms for N=10,000
with range over 100,000 partitions.  Requests are built before timing: the coordinator is handed
decoded requests, so decoding them is the codec's cost, measured in benches/bench_codec.py.  The
``scaling`` line reruns the coordinator phases at N/4 and N/2: per-member cost must stay flat (an
O(n) scan inside a per-request path would show as a cost per member growing with N).
"""

import argparse
import statistics
import sys
import time

import kwire
from kwire.group import GroupCoordinator

GROUP = "bench-group"


def one_rebalance(n, partitions, assign=True):
    counter = iter(range(1, 10**9))
    coordinator = GroupCoordinator(initial_rebalance_delay_ms=3000,
                                   member_id_factory=lambda prefix: f"{prefix}-{next(counter):036d}")
    metadata = kwire.Subscription(topics=["events"]).encode(3)
    protocols = [kwire.JoinGroupRequestProtocol(name="range", metadata=metadata)]

    def join(member_id):
        return kwire.JoinGroupRequest(group_id=GROUP, session_timeout_ms=45_000, rebalance_timeout_ms=300_000,
                                      member_id=member_id, protocol_type="consumer", protocols=protocols)

    first = [join("") for _ in range(n)]
    times = {}

    t = time.process_time()
    ids = [coordinator.handle(i, first[i], 9, 0, client_id="consumer")[0].response.member_id for i in range(n)]
    times["member_id"] = time.process_time() - t

    second = [join(member_id) for member_id in ids]
    t = time.process_time()
    for i in range(n):
        coordinator.handle(i, second[i], 9, 1)
    times["join"] = time.process_time() - t

    t = time.process_time()
    replies = []
    while not replies:
        replies = coordinator.tick(coordinator.next_deadline())
    times["complete"] = time.process_time() - t
    assert len(replies) == n
    leader_response = next(r.response for r in replies if r.response.members)
    generation = leader_response.generation_id

    if assign:
        t = time.process_time()
        assignments = kwire.leader_assignments("range", leader_response, {"events": partitions})
        times["assign"] = time.process_time() - t
    else:
        assignments = [kwire.SyncGroupRequestAssignment(member_id=m, assignment=b"") for m in ids]

    def sync(member_id, entries=()):
        return kwire.SyncGroupRequest(group_id=GROUP, generation_id=generation, member_id=member_id,
                                      protocol_type="consumer", protocol_name="range", assignments=list(entries))

    leader = leader_response.leader
    followers = [sync(m) for m in ids if m != leader]
    leader_sync = sync(leader, assignments)
    now = coordinator.next_deadline() - 1
    t = time.process_time()
    answered = 0
    for i, request in enumerate(followers):
        answered += len(coordinator.handle(i, request, 5, now))
    answered += len(coordinator.handle(-1, leader_sync, 5, now))
    times["sync"] = time.process_time() - t
    assert answered == n and coordinator.describe_group(GROUP).state == "Stable"
    return times


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--members", type=int, default=10_000)
    parser.add_argument("--partitions", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)

    runs = [one_rebalance(args.members, args.partitions) for _ in range(args.repeat)]
    phases = list(runs[0])
    median = {p: statistics.median(r[p] for r in runs) * 1000 for p in phases}
    coordinator = statistics.median(
        sum(v for k, v in r.items() if k != "assign") for r in runs) * 1000
    total = statistics.median(sum(r.values()) for r in runs) * 1000
    print(f"kwire {kwire.IMPLEMENTATION}, {args.members} members, range over {args.partitions} partitions, "
          f"median of {args.repeat}, CPU ms")
    for p in phases:
        print(f"  {p:<10} {median[p]:8.1f}")
    print(f"  coordinator {coordinator:7.1f}   (target <= 200)")
    print(f"  assignor    {median['assign']:7.1f}")
    print(f"  total       {total:7.1f}")
    per_member = []
    for n in (args.members // 4, args.members // 2, args.members):
        r = [one_rebalance(n, args.partitions, assign=False) for _ in range(3)]
        per_member.append(statistics.median(sum(x.values()) for x in r) * 1e6 / n)
    print("  scaling     " + ", ".join(f"N={n}: {us:.2f} us/member" for n, us in
                                        zip((args.members // 4, args.members // 2, args.members), per_member)))
    return 0 if coordinator <= 200 else 1


if __name__ == "__main__":
    sys.exit(main())
