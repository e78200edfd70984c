"""``kwire synth --protocol consumer|mixed``: fleets of consumer-protocol groups, or fleets mid-upgrade.

Each group is one :class:`kwire.pipeline._synth_consumer.ConsumerGroupSim` (kwire's coordinator and clients on a
simulated clock) and a script of what happens to its processes over the capture window:

* 1-5 members start within two seconds and join (epoch 0); later members start and join;
* members leave cleanly (epoch -1; a static member -2), crash (SIGKILL: heartbeats stop and the coordinator
  fences the member after its session timeout), pause for longer than the session timeout (GC or a network
  partition: on return the coordinator answers UNKNOWN_MEMBER_ID and the member rejoins with its id), change
  their subscription (Metadata first, then the new topics in the next heartbeat);
* a static member restarts with its instance id within its session timeout (-2, then a new member id at epoch 0
  gets its partitions back without a rebalance), or too soon after a crash (UNRELEASED_INSTANCE_ID, fatal);
* a process that fails on a fatal error is started again ten seconds later, as a supervisor would;
* a member's connection keeps breaking for a while during a rebalance: answers the coordinator wrote are
  lost, the member retries with a full heartbeat at its old epoch, accepted when the coordinator can tell the
  answer was lost, answered FENCED_MEMBER_EPOCH when not; the fenced member rejoins at once at epoch 0 with its
  id, which the coordinator answers FENCED_MEMBER_EPOCH too while it still knows the member
  (``GroupMetadataManager.throwIfConsumerGroupMemberEpochIsInvalid``), so the client's immediate retries storm
  until its session times out;
* some members are slow revokers: their revocation callback takes seconds, so the acknowledging heartbeat comes
  late, and past a short ``max.poll.interval.ms`` the coordinator fences them (the revocation timeout);
* with ``describe_every_ms`` an admin client polls ConsumerGroupDescribe.

``mixed`` groups hold classic consumers (JoinGroup, SyncGroup, Heartbeat, LeaveGroup) and consumer-protocol
members: a group may start classic and be converted when its first consumer-protocol member joins (the online
upgrade), classic members are upgraded one by one (the process stops and comes back speaking the consumer
protocol), and now and then one is rolled back.
"""

from __future__ import annotations

import random

from kwire.errors import ArgumentValueError
from kwire.pipeline._synth import synth as synth_classic
from kwire.pipeline._synth import topic_pool
from kwire.pipeline._synth_consumer import ConsumerGroupSim
from kwire.pipeline._synth_stream import MS, SECOND, Frames, group_starts, stream_groups

__all__ = ["PROTOCOLS", "ground_truth", "simulate_consumer_group", "synth"]

PROTOCOLS = ("classic", "consumer", "mixed")


def simulate_consumer_group(out, index, seed, t0, duration_s, pool, heartbeat_interval_ms=3000, describe_every_ms=0,
                            mixed=False):
    """Group ``index`` of a consumer-protocol (or ``mixed``) capture, from ``t0`` (µs) for ``duration_s``;
    returns its :class:`ConsumerGroupSim` (``truth`` holds what happened)."""
    rng = random.Random(f"{'mixed' if mixed else 'consumer'}/{seed}/{index}")
    names = sorted(pool)
    static = rng.random() < 0.15
    session_ms = rng.choice([10000, 30000, 45000])
    sim = ConsumerGroupSim(
        out, f"group-{index:05d}", pool, rng=rng, profile=rng.choice(["java", "java", "rdkafka"]),
        session_timeout_ms=session_ms, heartbeat_interval_ms=heartbeat_interval_ms,
        broker=f"broker-{index % 3 + 1}:9092", static=static,
        server_assignor=rng.choice([None, None, "uniform", "range"]),
        classic_assignors=rng.choice([("range",), ("cooperative-sticky",), ("roundrobin",)]),
        describe_every_ms=describe_every_ms, seed=seed, t0=t0)
    base_topics = rng.sample(names, rng.randint(1, 3))
    starts_classic = mixed and rng.random() < 0.6

    def protocol():
        if not mixed:
            return "consumer"
        return "classic" if rng.random() < 0.5 else "consumer"

    def start(t, topics, proto=None, instance_id=None):
        slow = rng.random() < 0.15
        return sim.start(t, topics, protocol=proto or protocol(), instance_id=instance_id,
                         revoke_delay_ms=int(rng.uniform(2, 15) * 1000) if slow else 0,
                         rebalance_timeout_ms=rng.choice([300_000, 300_000, 10_000]) if slow else None)

    for k in range(rng.randint(1, 5)):
        start(t0 + rng.randrange(2 * SECOND), base_topics, "classic" if starts_classic and k == 0 else None)
    t = t0 + 2 * SECOND
    end = t0 + int(duration_s * SECOND)
    kinds = ["join", "join", "leave", "crash", "subscription", "pause", "flaky"]
    if static:
        kinds += ["restart", "restart"]
    if mixed:
        kinds += ["upgrade", "upgrade", "upgrade", "downgrade"]
    while True:
        gap = int(rng.uniform(0.1, 0.4) * duration_s * SECOND)
        if t + gap >= end:
            sim.run_until(end)
            break
        t += gap
        sim.run_until(t)
        live = sim.live()
        kind = rng.choice(kinds) if len(live) > 1 else "join"
        if kind == "join":
            start(t, rng.choice([base_topics, base_topics, rng.sample(names, rng.randint(1, 3))]))
            continue
        victim = rng.choice(live)
        if kind == "leave":
            sim.leave(victim, t)
        elif kind == "crash":
            sim.crash(victim, t)
        elif kind == "pause":
            sim.pause(victim, t, int(session_ms * MS * rng.uniform(1.2, 2.0)))
        elif kind == "flaky":
            # A connection that keeps breaking while the group rebalances around a joiner.
            sim.flaky(victim, t, int(rng.uniform(5, 20) * SECOND))
            start(t + SECOND // 2, rng.choice([base_topics, victim.topics]))
        elif kind == "subscription":
            sim.subscribe(victim, t, rng.sample(names, rng.randint(1, 3)))
        elif kind == "restart":
            if rng.random() < 0.7:
                # A rolling restart: -2, and the new process takes the instance id back within the session.
                sim.leave(victim, t)
                start(t + int(rng.uniform(1, 5) * SECOND), victim.topics, victim.protocol, victim.instance_id)
            else:
                # Killed and restarted at once: the old member still holds the instance id, so the new process
                # fails (UNRELEASED_INSTANCE_ID) and is restarted until the coordinator has fenced the old one.
                sim.crash(victim, t)
                start(t + int(rng.uniform(1, 3) * SECOND), victim.topics, victim.protocol, victim.instance_id)
        else:
            # The fleet's upgrade (or a rollback): the process stops cleanly and comes back on the other protocol.
            want = "classic" if kind == "upgrade" else "consumer"
            candidates = [c for c in live if c.protocol == want] or [victim]
            victim = rng.choice(candidates)
            sim.leave(victim, t)
            start(t + int(rng.uniform(1, 4) * SECOND), victim.topics,
                  "consumer" if victim.protocol == "classic" else "classic", victim.instance_id)
    return sim


def ground_truth(protocol, groups, seed=0, duration_s=600.0, heartbeat_interval_ms=3000, describe_every_ms=0,
                 start_us=1_767_225_600 * SECOND):
    """``{group id: truth}`` of the consumer or mixed groups that :func:`synth` with the same arguments writes,
    simulated again (``ConsumerGroupSim.truth``: what the analysis should find in the capture)."""
    if protocol not in ("consumer", "mixed"):
        raise ArgumentValueError(f"ground truth is kept for consumer and mixed groups, not {protocol!r}")
    pool = topic_pool(seed)
    out = Frames()
    truths = {}
    for i, t0 in enumerate(group_starts(groups, seed, duration_s, start_us)):
        sim = simulate_consumer_group(out, i, seed, t0, duration_s, pool, heartbeat_interval_ms, describe_every_ms,
                                      protocol == "mixed")
        truths[sim.group_id] = sim.truth
        out.clear()
    return truths


def synth(path, protocol="classic", groups=1000, seed=0, duration_s=600.0, heartbeat_interval_ms=3000,
          corrupt_rate=0.0, describe_every_ms=0, start_us=1_767_225_600 * SECOND, chunk_groups=250, batch_rows=8192):
    """Write a capture of ``groups`` groups of ``protocol`` ("classic", "consumer" or "mixed") to ``path``;
    returns the frame count.  "classic" is :func:`kwire.pipeline._synth.synth`, unchanged.  The same arguments
    give the same bytes; memory depends on ``chunk_groups`` and ``batch_rows``, not on ``groups``."""
    if protocol not in PROTOCOLS:
        raise ArgumentValueError(f"protocol must be one of {', '.join(PROTOCOLS)}, not {protocol!r}")
    if describe_every_ms < 0:
        raise ArgumentValueError(f"describe_every_ms must not be negative, not {describe_every_ms}")
    if protocol == "classic":
        if describe_every_ms:
            raise ArgumentValueError("ConsumerGroupDescribe polling needs --protocol consumer or mixed")
        return synth_classic(path, groups=groups, seed=seed, duration_s=duration_s,
                             heartbeat_interval_ms=heartbeat_interval_ms, corrupt_rate=corrupt_rate,
                             start_us=start_us, chunk_groups=chunk_groups, batch_rows=batch_rows)
    pool = topic_pool(seed)
    mixed = protocol == "mixed"

    def simulate(out, i, t0):
        simulate_consumer_group(out, i, seed, t0, duration_s, pool, heartbeat_interval_ms, describe_every_ms, mixed)

    return stream_groups(path, groups, simulate, seed=seed, duration_s=duration_s, corrupt_rate=corrupt_rate,
                         start_us=start_us, chunk_groups=chunk_groups, batch_rows=batch_rows)
