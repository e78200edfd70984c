"""Range and roundrobin speed, against kafka-python in the same run and the
Java client's published timings.

    pytest benches/bench_assignors.py --benchmark-only          # pytest-benchmark tables
    python benches/bench_assignors.py [--cpu]                   # medians, ratios, peak memory

``--cpu`` times with the process CPU clock instead of the wall clock, which
keeps the figures usable on a shared machine where other jobs steal the CPU.

Shapes: "A" = 100 topics x 100 partitions, 1000 members (kafka-python's own
assignors run on the same input); "B" = 500 topics x 2000 partitions (1M),
2000 members (Java anchors: range 3.9-6.6 s, roundrobin 1.7-2.4 s on JDK 17,
2-vCPU VM, see benches/data/java-assignor-timings.md).  Every
member subscribes to every topic.

kwire is timed at the array level from raw arrays: each call builds a fresh
``ArrayGroup`` (validation and the Java hash/sort caches included), so
nothing is carried over between rounds.
"""

from __future__ import annotations

import statistics
import sys
import time
import tracemalloc

import numpy as np
import pytest

from kwire.assignors import ArrayGroup, assign_arrays

SHAPES = {"A": (100, 100, 1000), "B": (500, 2000, 2000)}
JAVA_ANCHOR_S = {("B", "range"): (3.9, 6.6), ("B", "roundrobin"): (1.7, 2.4)}
TARGET_MS = {"A": 2.0, "B": 50.0}


def raw_arrays(T, P, M):
    topics = sorted(f"topic-{i:04d}" for i in range(T))
    return dict(
        topics=topics,
        partition_counts=np.full(T, P, dtype=np.int32),
        member_ids=[f"consumer-{i:05d}-6f1c2a9e-3b7d-4c1e-9a55-{i:012d}" for i in range(M)],
        sub_indptr=np.arange(M + 1, dtype=np.int64) * T,
        sub_topics=np.tile(np.arange(T, dtype=np.int32), M),
    )


def run_kwire(raw, strategy):
    return assign_arrays(strategy, ArrayGroup(**raw))


def input_nbytes(raw):
    return sum(v.nbytes for v in raw.values() if isinstance(v, np.ndarray))


# -- kafka-python on the same input ------------------------------------------------------------


def kafka_python_inputs(T, P, M):
    from kafka.cluster import ClusterMetadata
    from kafka.protocol.consumer.group import JoinGroupResponse
    from kafka.protocol.consumer.metadata import ConsumerProtocolSubscription
    from kafka.protocol.metadata import MetadataResponse

    raw = raw_arrays(T, P, M)
    V = 1
    Top = MetadataResponse.MetadataResponseTopic
    Par = Top.MetadataResponsePartition
    resp = MetadataResponse(
        version=V,
        brokers=[MetadataResponse.MetadataResponseBroker(node_id=0, host="h", port=9092, rack=None, version=V)],
        controller_id=0,
        topics=[
            Top(
                error_code=0,
                name=t,
                is_internal=False,
                partitions=[
                    Par(error_code=0, partition_index=p, leader_id=0, replica_nodes=[0], isr_nodes=[0], version=V)
                    for p in range(P)
                ],
                version=V,
            )
            for t in raw["topics"]
        ],
    )
    cluster = ClusterMetadata(bootstrap_servers="localhost:9092")
    cluster.update_metadata(resp)
    members = []
    for mid in raw["member_ids"]:
        m = JoinGroupResponse.JoinGroupResponseMember(member_id=mid, group_instance_id=None, metadata=b"", version=5)
        m.metadata = ConsumerProtocolSubscription(0, list(raw["topics"]), b"")
        members.append(m)
    return cluster, members


def kafka_python_assignor(strategy):
    from kafka.coordinator.assignors.range import RangePartitionAssignor
    from kafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor

    return RangePartitionAssignor if strategy == "range" else RoundRobinPartitionAssignor


def kwire_adapter(strategy):
    from kwire.contrib.kafka_python import KwireRangeAssignor, KwireRoundRobinAssignor

    return (KwireRangeAssignor if strategy == "range" else KwireRoundRobinAssignor)()


# -- pytest-benchmark ---------------------------------------------------------------------------


@pytest.fixture(scope="module", params=["A", "B"])
def shape(request):
    return request.param, raw_arrays(*SHAPES[request.param])


@pytest.mark.parametrize("strategy", ["range", "roundrobin"])
def test_kwire_arrays(benchmark, shape, strategy):
    name, raw = shape
    benchmark.group = f"{name}-{strategy}"
    benchmark.extra_info["input_bytes"] = input_nbytes(raw)
    result = benchmark.pedantic(run_kwire, args=(raw, strategy), rounds=15 if name == "B" else 100, warmup_rounds=2)
    assert len(result.topic) == int(raw["partition_counts"].sum())


@pytest.fixture(scope="module")
def kp_inputs():
    pytest.importorskip("kafka")
    return kafka_python_inputs(*SHAPES["A"])


@pytest.mark.parametrize("strategy", ["range", "roundrobin"])
@pytest.mark.parametrize("assignor", ["kafka-python builtin", "kwire via kafka-python adapter"])
def test_kafka_python_inputs(benchmark, kp_inputs, assignor, strategy):
    cluster, members = kp_inputs
    benchmark.group = f"A-{strategy}"
    if assignor == "kafka-python builtin":
        fn, rounds = kafka_python_assignor(strategy).assign, 5
    else:
        fn, rounds = kwire_adapter(strategy).assign, 10
    out = benchmark.pedantic(fn, args=(cluster, members), rounds=rounds, warmup_rounds=1)
    assert len(out) == len(members)


# -- script mode: medians, ratios and peak memory ------------------------------------------------


CLOCK = time.perf_counter


def median_s(fn, rounds):
    fn()  # warm caches and lazy imports
    times = []
    for _ in range(rounds):
        t = CLOCK()
        fn()
        times.append(CLOCK() - t)
    return statistics.median(times)


def peak_bytes(fn):
    tracemalloc.start()
    tracemalloc.reset_peak()
    base = tracemalloc.get_traced_memory()[0]
    result = fn()
    peak = tracemalloc.get_traced_memory()[1] - base
    tracemalloc.stop()
    return peak, result


def report(out=sys.stdout):
    rows = []
    for name, (T, P, M) in SHAPES.items():
        raw = raw_arrays(T, P, M)
        for strategy in ("range", "roundrobin"):
            rounds = 15 if name == "B" else 200
            kw = median_s(lambda: run_kwire(raw, strategy), rounds)
            line = f"{name} {T}x{P} parts, {M} members, {strategy:10s}: kwire {kw * 1e3:8.2f} ms (target {TARGET_MS[name]} ms)"
            if name == "A":
                try:
                    cluster, members = kafka_python_inputs(T, P, M)
                except ImportError:
                    pass
                else:
                    kp = median_s(lambda: kafka_python_assignor(strategy).assign(cluster, members), 5)
                    ad = median_s(lambda: kwire_adapter(strategy).assign(cluster, members), 10)
                    line += f" | kafka-python {kp * 1e3:8.1f} ms ({kp / kw:6.0f}x slower)"
                    line += f" | kwire via kafka-python adapter {ad * 1e3:6.1f} ms ({kp / ad:5.1f}x faster than kafka-python)"
            anchor = JAVA_ANCHOR_S.get((name, strategy))
            if anchor:
                line += f" | Java {anchor[0]}-{anchor[1]} s ({anchor[0] / kw:5.0f}-{anchor[1] / kw:5.0f}x slower)"
            rows.append(line)
            if name == "B":
                peak, result = peak_bytes(lambda: run_kwire(raw, strategy))
                inp = input_nbytes(raw)
                outb = result.indptr.nbytes + result.topic.nbytes + result.partition.nbytes
                rows.append(
                    f"    peak traced memory {peak / 2**20:7.1f} MiB = {peak / inp:4.2f}x input arrays "
                    f"({inp / 2**20:.1f} MiB); output arrays {outb / 2**20:.1f} MiB"
                )
    print("\n".join(rows), file=out)


if __name__ == "__main__":
    if "--cpu" in sys.argv[1:]:
        CLOCK = time.process_time
    print(f"clock: {CLOCK.__name__}")
    report()
