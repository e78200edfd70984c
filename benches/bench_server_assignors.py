"""The server-side assignors of KIP-848 (``uniform``, ``range``) at the sizes of Kafka's own timing harness.

    python -m benches.bench_server_assignors             # every scenario, both levels, 20 runs each
    python -m benches.bench_server_assignors --runs 5 uniform-homo-full

The groups are the formula-defined ones Kafka's classes were timed on (``xl_v1``, seed ``java848-xl``):
10,000 members, 1,000 topics of 100 partitions (or 500), ids from SHA-256 of the seed; heterogeneous = 5
buckets of members, each subscribed to its own fifth of the topics (the layout of Kafka's JMH
``ServerSideAssignorBenchmark``); incremental = the assignor's own full output given back as the current
assignment, with member 5000 gone.  Each scenario is timed at:

- the array level (:func:`kwire.assignors.assign_server_arrays`, columns in, CSR out),
- the member level (:func:`kwire.assignors.assign_server`) with one subscription list object shared by the
  members that subscribe alike, and with a fresh list per member,
- the cold first call of the member level in a fresh process (imports excluded).

Medians of ``--runs`` calls after 3 warm-up calls.  ``output_sha256`` is the SHA-256 of the result as Kafka's
harness prints it (members and topic ids sorted, partitions ascending), to compare with Java's line.
Java's own figures come from running ``timing.sh`` of the reference classes in the same sitting.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REPO not in sys.path:
    sys.path.insert(0, REPO)

from kwire.assignors import (  # noqa: E402
    ServerGroupArrays,
    ServerMember,
    TopicMetadata,
    assign_server,
    assign_server_arrays,
)

SEED = "java848-xl"
SCENARIOS = {
    # name: (assignor, subscription, partitions per topic, incremental)
    "uniform-homo-full": ("uniform", "homogeneous", 100, False),
    "uniform-homo-incr": ("uniform", "homogeneous", 100, True),
    "uniform-hetero-full": ("uniform", "bucketed", 100, False),
    "uniform-hetero-incr": ("uniform", "bucketed", 100, True),
    "range-homo-full": ("range", "homogeneous", 100, False),
    "range-homo-incr": ("range", "homogeneous", 100, True),
    "uniform-homo-500k-full": ("uniform", "homogeneous", 500, False),
}
MEMBERS, TOPICS, BUCKETS, LEAVER = 10_000, 1_000, 5, 5000


def uuid_from_seed(text: str) -> bytes:
    """16 bytes of SHA-256(text), retried with ``#k`` while the id is reserved or its base64 starts with '-'."""
    k = 0
    while True:
        raw = hashlib.sha256((text if k == 0 else f"{text}#{k}").encode()).digest()[:16]
        if raw not in (bytes(16), bytes(15) + b"\x01") and not _b64(raw).startswith("-"):
            return raw
        k += 1


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def subscriptions(kind: str):
    """Per member, its topic indices (a shared list per distinct subscription)."""
    if kind == "homogeneous":
        everything = list(range(TOPICS))
        return [everything] * MEMBERS
    per_bucket_topics = -(-TOPICS // BUCKETS)
    per_bucket_members = -(-MEMBERS // BUCKETS)
    rows = [list(range(b * per_bucket_topics, min((b + 1) * per_bucket_topics, TOPICS))) for b in range(BUCKETS)]
    return [rows[j // per_bucket_members] for j in range(MEMBERS)]


class Shape:
    """One scenario's group, built once: member-level inputs (shared and fresh lists) and the array columns."""

    def __init__(self, name: str):
        self.name = name
        self.assignor, kind, ppt, self.incremental = SCENARIOS[name]
        self.topic_ids = [uuid_from_seed(f"{SEED}:topic:{t}") for t in range(TOPICS)]
        self.topics = {tid: TopicMetadata(name=f"topic-{t}", partitions=ppt) for t, tid in enumerate(self.topic_ids)}
        self.member_ids = [_b64(uuid_from_seed(f"{SEED}:member:{j}")) for j in range(MEMBERS)]
        subs = subscriptions(kind)
        shared = {}
        self.shared_subs = [shared.setdefault(id(s), [self.topic_ids[t] for t in s]) for s in subs]
        assignment = [{} for _ in range(MEMBERS)]
        if self.incremental:
            full = assign_server(self.assignor, self.members(self.shared_subs, assignment), self.topics)
            assignment = [full.get(m, {}) for m in self.member_ids]
            del self.member_ids[LEAVER], self.shared_subs[LEAVER], assignment[LEAVER]
        self.assignment = assignment
        self.fresh_subs = [list(s) for s in self.shared_subs]
        from kwire.assignors._server_members import server_group

        self.arrays, _ = server_group(self.members(self.shared_subs, assignment), self.topics)

    def members(self, subs, assignment=None):
        assignment = self.assignment if assignment is None else assignment
        return {m: ServerMember(subscribed_topic_ids=s, assignment=a)
                for m, s, a in zip(self.member_ids, subs, assignment)}

    def partitions(self) -> int:
        return sum(t.partitions for t in self.topics.values())


def output_sha256(result) -> str:
    """SHA-256 of the result in the form Kafka's harness hashes (``Json.sha256Canonical``)."""
    canon = {m: {_b64(t): sorted(ps) for t, ps in a.items()} for m, a in result.items()}
    text = json.dumps(canon, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()


def median_ms(fn, runs: int, warmup: int = 3) -> float:
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e3


def cold_ms(name: str) -> float:
    """The member level's first call in a fresh interpreter (kwire imported and the group built first)."""
    code = ("import time, benches.bench_server_assignors as b; s = b.Shape(%r); m = s.members(s.shared_subs); "
            "t0 = time.perf_counter(); b.assign_server(s.assignor, m, s.topics); "
            "print((time.perf_counter() - t0) * 1e3)" % name)
    if os.environ.get("KWIRE_BENCH_NO_COLD"):
        return float("nan")
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True)
    return float(out.stdout.strip().splitlines()[-1])


def measure(name: str, runs: int, cold: bool = True) -> dict:
    shape = Shape(name)
    shared = shape.members(shape.shared_subs)
    fresh = shape.members(shape.fresh_subs)
    result = assign_server(shape.assignor, shared, shape.topics)
    row = {
        "scenario": name,
        "members": len(shape.member_ids),
        "partitions": shape.partitions(),
        "array_ms": median_ms(lambda: assign_server_arrays(shape.assignor, shape.arrays), runs),
        "member_shared_ms": median_ms(lambda: assign_server(shape.assignor, shared, shape.topics), runs),
        "member_fresh_ms": median_ms(lambda: assign_server(shape.assignor, fresh, shape.topics), runs),
        "cold_ms": cold_ms(name) if cold else float("nan"),
        "output_sha256": output_sha256(result)[:16],
    }
    return row


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("scenarios", nargs="*", default=list(SCENARIOS))
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args(argv)
    import kwire

    with open("/proc/loadavg") as fh:
        load = " ".join(fh.read().split()[:3])
    print(f"# kwire {kwire.IMPLEMENTATION}; load: {load}; runs={args.runs} (median ms)")
    for name in args.scenarios:
        row = measure(name, args.runs)
        print(f"{name:24s} members={row['members']:<5d} partitions={row['partitions']:<6d} "
              f"array={row['array_ms']:8.2f} member_shared={row['member_shared_ms']:8.2f} "
              f"member_fresh={row['member_fresh_ms']:8.2f} cold={row['cold_ms']:8.2f} "
              f"output_sha256={row['output_sha256']}", flush=True)
    with open("/proc/loadavg") as fh:
        print(f"# load after: {' '.join(fh.read().split()[:3])}")


if __name__ == "__main__":
    main()
