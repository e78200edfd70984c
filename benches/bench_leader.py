"""The group leader's whole path, bytes to bytes, against its targets (``TARGETS_S``).

    python benches/bench_leader.py [--quick] [--rounds N] [--no-kafka-python]

One case is one group shape and strategy.  Every timing is the best of
``--rounds`` rounds (each the mean of a loop of calls lasting at least
``ROUND_S``, one call for the big shapes; a collection before each round) of:

    JoinGroupResponse frame -> kwire.decode_response -> leader_assignments
    -> SyncGroupRequest -> kwire.encode_request frame

and of the bytes-out entry point, which gives the same frame ("bytes out"), fed by a decode that copies no
member's metadata (each is a view of the frame, read by the leader where it lies):

    JoinGroupResponse frame -> kwire.decode_response(..., views=True) -> leader_sync_request

next to the array core alone (``assign_arrays`` on the same group, built
afresh and untimed for each call, so that the core derives its member order
and hashes as the whole path must) and, for the two small shapes, kafka-python 3.0.12's own leader path on
the same frame (its JoinGroupResponse and ConsumerProtocolSubscription
decoders, its assignor, its ConsumerProtocolAssignment and SyncGroupRequest
encoders).  The "leader" column is leader_assignments alone (decoded members
in, payload bytes out).  Memory is tracemalloc's peak during one whole path
beyond the input frame, classic and bytes out, each in its own run (tracing
slows the timed runs).

"2nd gen" members each report the partitions a first rebalance gave them,
with 10% of the members gone: cooperative-sticky ones as owned partitions,
eager sticky ones as StickyAssignorUserData V1 (as a Java member sends it).
"""

from __future__ import annotations

import argparse
import gc
import time
import tracemalloc


import kwire
from kwire import codec
from kwire.assignors import (GroupMember, assign_arrays, cooperative_user_data, leader_assignments, leader_group,
                             leader_sync_request, sticky_user_data)

SHAPES = {
    "100x1k": (100, 10, 100),
    "1000x10k": (1000, 100, 100),
    "2000x1M": (2000, 1000, 1000),
}
MEMBER = "consumer-{:05d}-0f6b7c2e-5d1a-4b7e-9e0f"


def topics_of(T):
    return [f"topic-{t:04d}" for t in range(T)]


def join_frame(subscriptions, strategy):
    members = [codec.JoinGroupResponseMember(member_id=mid, metadata=raw) for mid, raw in subscriptions]
    resp = codec.JoinGroupResponse(generation_id=2, protocol_type="consumer", protocol_name=strategy,
                                   leader=members[0].member_id, member_id=members[0].member_id, members=members)
    return kwire.encode_response(resp, 9, correlation_id=1)


def first_generation(M, T):
    sub = codec.Subscription(topics=topics_of(T)).encode(3)
    return [(MEMBER.format(i), sub) for i in range(M)]


def second_generation(M, T, P, strategy="cooperative-sticky"):
    """Every member owning what a first ``strategy`` rebalance gave it; 10% gone."""
    counts = {t: P for t in topics_of(T)}
    first = [GroupMember(mid, None, codec.Subscription.decode(raw)) for mid, raw in first_generation(M, T)]
    result = kwire.assignors.assign_members_arrays(strategy, first, counts).topic_groups()
    out = []
    for i, m in enumerate(first):
        if i % 10 == 9:
            continue
        if strategy == "sticky":
            # Eager members revoke everything before joining: the claims travel in userData only.
            mine = [(t, p) for t, ps in result[m.member_id] for p in ps]
            sub = codec.Subscription(topics=topics_of(T), generation_id=1, user_data=sticky_user_data(mine, 1))
        else:
            owned = [codec.SubscriptionTopicPartition(topic=t, partitions=ps) for t, ps in result[m.member_id]]
            sub = codec.Subscription(topics=topics_of(T), owned_partitions=owned, generation_id=1,
                                     user_data=cooperative_user_data(1))
        out.append((m.member_id, sub.encode(3)))
    return out


def kwire_path(frame, counts, strategy):
    _header, resp = kwire.decode_response(frame, 11, 9)
    payloads = leader_assignments(strategy, resp, counts)
    req = codec.SyncGroupRequest(group_id="g", generation_id=2, member_id=resp.leader, protocol_type="consumer",
                                 protocol_name=strategy, assignments=payloads)
    return kwire.encode_request(req, 5, correlation_id=2)


def kwire_frame_path(frame, counts, strategy):
    """The same bytes as :func:`kwire_path`, through the bytes-out entry point."""
    _header, resp = kwire.decode_response(frame, 11, 9, views=True)
    return leader_sync_request(strategy, resp, counts, group_id="g", correlation_id=2, version=5)


def kafka_python_path(frame, cluster, assignor):
    from kafka.protocol.consumer.group import JoinGroupResponse, SyncGroupRequest
    from kafka.protocol.consumer.metadata import ConsumerProtocolSubscription

    resp = JoinGroupResponse.decode(frame[4 + 4 + 1:], version=9)  # size, correlation id, no tags
    for m in resp.members:
        m.metadata = ConsumerProtocolSubscription.decode(m.metadata)
    out = assignor.assign(cluster, resp.members)
    A = SyncGroupRequest.SyncGroupRequestAssignment
    req = SyncGroupRequest(version=5, group_id="g", generation_id=2, member_id=resp.leader, group_instance_id=None,
                           protocol_type="consumer", protocol_name=assignor.name,
                           assignments=[A(member_id=mid, assignment=a.encode(), version=5) for mid, a in out.items()])
    req.with_header(correlation_id=2)
    return req.encode(version=5, header=True, framed=True)


def kafka_python_setup(T, P, strategy):
    from kafka.cluster import ClusterMetadata
    from kafka.coordinator.assignors.cooperative_sticky import CooperativeStickyAssignor
    from kafka.coordinator.assignors.range import RangePartitionAssignor
    from kafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor
    from kafka.protocol.metadata import MetadataResponse

    V = 1
    Tp = MetadataResponse.MetadataResponseTopic
    Pp = Tp.MetadataResponsePartition
    topics = [Tp(error_code=0, name=t, is_internal=False, version=V,
                 partitions=[Pp(error_code=0, partition_index=p, leader_id=0, replica_nodes=[0], isr_nodes=[0], version=V)
                             for p in range(P)])
              for t in topics_of(T)]
    brokers = [MetadataResponse.MetadataResponseBroker(node_id=0, host="h", port=9092, rack=None, version=V)]
    cluster = ClusterMetadata(bootstrap_servers="localhost:9092")
    cluster.update_metadata(MetadataResponse(version=V, brokers=brokers, controller_id=0, topics=topics))
    assignor = {"range": RangePartitionAssignor, "roundrobin": RoundRobinPartitionAssignor,
                "cooperative-sticky": CooperativeStickyAssignor}[strategy]
    return cluster, (assignor() if strategy == "cooperative-sticky" else assignor)


#: A timed round lasts at least this long: a call of a fraction of a millisecond is timed as the mean of a
#: loop of calls, as timeit does (one call alone measures the timer and the caches a collection just emptied).
ROUND_S = 0.02


def best(fn, rounds, setup=None):
    """Seconds per call of ``fn()``, or of ``fn(setup())`` with ``setup`` untimed: the best of ``rounds``
    rounds, each the mean of enough calls to last :data:`ROUND_S` (one call for the big shapes)."""
    arg = setup() if setup is not None else None
    t = time.perf_counter()
    fn() if setup is None else fn(arg)
    number = max(1, int(ROUND_S / max(time.perf_counter() - t, 1e-9)))
    times = []
    for _ in range(rounds):
        args = [setup() for _ in range(number)] if setup is not None else None
        gc.collect()
        t = time.perf_counter()
        if setup is None:
            for _ in range(number):
                fn()
        else:
            for a in args:
                fn(a)
        times.append((time.perf_counter() - t) / number)
        del args
    return min(times)


def peak_beyond_input(fn):
    gc.collect()
    tracemalloc.start()
    fn()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak


#: The targets for the whole path, in seconds (None: no absolute target for that case).
TARGETS_S = {
    ("100x1k", "range"): 0.3e-3, ("100x1k", "roundrobin"): 0.3e-3, ("100x1k", "cooperative-sticky"): 0.3e-3,
    ("1000x10k", "range"): 3e-3, ("1000x10k", "roundrobin"): 3e-3, ("1000x10k", "cooperative-sticky"): 5e-3,
    ("2000x1M", "range"): 0.1, ("2000x1M", "roundrobin"): 0.1, ("2000x1M", "cooperative-sticky"): 0.25,
}


def cases(quick=False):
    """``(shape, strategy, generation)`` of every case, the 2000x1M shape left out when ``quick``."""
    out = []
    for shape in SHAPES:
        if quick and shape == "2000x1M":
            continue
        for strategy in ("range", "roundrobin", "cooperative-sticky"):
            out.append((shape, strategy, "1st gen"))
        out.append((shape, "cooperative-sticky", "2nd gen"))
        out.append((shape, "sticky", "2nd gen"))
    return out


def measure(shape, strategy, gen, rounds=7, kafka_python=True, memory=True):
    """One case, as a dict: ``whole`` (bytes to bytes), ``frame`` (bytes to bytes through
    ``leader_sync_request``), ``leader`` (leader_assignments alone), ``core``
    (assign_arrays on the group the leader path builds), seconds, best of ``rounds``; ``peak`` bytes beyond
    the input (None when not measured); ``kafka_python`` seconds of its own leader path (None where not run:
    the 1M shape would take minutes, and kafka-python has no second-generation input here)."""
    # The 1M shape takes as many rounds as the others: its calls are ~10-100 ms, and best of two let one
    # burst of machine noise move its ratio to the core by 10%.
    M, T, P = SHAPES[shape]
    subs = first_generation(M, T) if gen == "1st gen" else second_generation(M, T, P, strategy)
    frame = join_frame(subs, strategy)
    counts = {t: P for t in topics_of(T)}
    _h, resp = kwire.decode_response(frame, 11, 9)
    row = {"shape": shape, "strategy": strategy, "gen": gen, "target": TARGETS_S.get((shape, strategy))}
    assert kwire_frame_path(frame, counts, strategy) == kwire_path(frame, counts, strategy)
    row["whole"] = best(lambda: kwire_path(frame, counts, strategy), rounds)
    row["frame"] = best(lambda: kwire_frame_path(frame, counts, strategy), rounds)
    row["leader"] = best(lambda: leader_assignments(strategy, resp, counts), rounds)
    # A group remembers what it derived once (member order, string hashes), so
    # the core runs on a group built afresh each time, as the whole path does.
    row["core"] = best(lambda group: assign_arrays(strategy, group), rounds,
                       setup=lambda: leader_group(strategy, resp, counts))
    row["peak"] = peak_beyond_input(lambda: kwire_path(frame, counts, strategy)) if memory else None
    row["peak_frame"] = peak_beyond_input(lambda: kwire_frame_path(frame, counts, strategy)) if memory else None
    row["kafka_python"] = None
    if kafka_python and shape != "2000x1M" and gen == "1st gen":
        cluster, assignor = kafka_python_setup(T, P, strategy)
        row["kafka_python"] = best(lambda: kafka_python_path(frame, cluster, assignor), max(2, rounds // 2))
    return row


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="skip the 2000x1M shape")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--no-kafka-python", action="store_true")
    args = ap.parse_args(argv)
    print(f"{'group':9} {'strategy':19} {'gen':7} {'whole path':>11} {'bytes out':>10} {'target':>8} {'leader':>9} "
          f"{'array core':>11} {'÷ core':>13} {'peak MB':>11} {'kafka-python':>13} {'× faster':>9}")
    for shape, strategy, gen in cases(args.quick):
        r = measure(shape, strategy, gen, args.rounds, not args.no_kafka_python, memory=shape != "100x1k")
        target = f"{r['target'] * 1e3:6.1f}ms" if r["target"] else ""
        peak = f"{r['peak'] / 2**20:5.1f}/{r['peak_frame'] / 2**20:.1f}" if r["peak"] is not None else ""
        kp = f"{r['kafka_python'] * 1e3:10.1f} ms" if r["kafka_python"] else ""
        ratio = f"{r['kafka_python'] / r['frame']:8.0f}×" if r["kafka_python"] else ""
        print(f"{shape:9} {strategy:19} {gen:7} {r['whole'] * 1e3:8.2f} ms {r['frame'] * 1e3:7.2f} ms {target:>8} "
              f"{r['leader'] * 1e3:6.2f} ms {r['core'] * 1e3:8.2f} ms "
              f"{r['whole'] / r['core']:5.1f}×/{r['frame'] / r['core']:.1f}× {peak:>11} {kp:>13} {ratio:>9}",
              flush=True)


if __name__ == "__main__":
    main()
