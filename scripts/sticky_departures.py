"""Write tests/data/golden/kwire-departures.jsonl: one case per kind of input
where the default sticky strategies depart from Java (docs/ASSIGNORS.md,
"Where the default departs from Java").

Each case holds the input, Java's answer (from ``java_exact=True``, which the
Java golden tests prove equal to Java; or the Java failure it stands for)
and kwire's default answer.  tests/test_assign_sticky.py checks both against
this file in both twins.  Run from the repository root:

    python scripts/sticky_departures.py
"""

import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from kwire.assignors import ArrayGroup  # noqa: E402
from kwire.assignors._model import GroupInput, MemberInput  # noqa: E402
from kwire.assignors._sticky import assign_cooperative_sticky, assign_sticky  # noqa: E402
from kwire.assignors._sticky_rules import JavaAssignorFailure  # noqa: E402

OUT = REPO / "tests" / "data" / "golden" / "kwire-departures.jsonl"


def m(member_id, topics, owned=(), generation=-1, subscription_generation=None, rack=None):
    member = dict(member_id=member_id, topics=list(topics), owned=[list(tp) for tp in owned], generation=generation,
                  subscription_generation=generation if subscription_generation is None else subscription_generation)
    if rack is not None:  # only the rack-aware kinds carry racks, so the other cases read as before
        member["rack"] = rack
    return member


# The rack-aware kind's replica racks: topic -> the racks of each partition's replicas.
_REPLICA_RACKS = {"t0": [["r0", "r1"], ["r2"], ["r2"]],
                  "t1": [["r1"], ["r0", "r1"], ["r1", "r2"], ["r0"], ["r2"]],
                  "t2": [["r0"], ["r0", "r2"], ["r0"]]}


# kind -> (why Java's answer is not valid, partitions_per_topic, members[, partition_racks])
KINDS = {
    "empty-subscription-first": (
        "a member with an empty subscription comes first in Java's HashMap order: Java takes the constrained "
        "path and gives it a share of topics it does not subscribe to",
        {"t": 3}, [m("A", []), m("B", ["t"]), m("C", ["t"])]),
    "topic-listed-twice": (
        "a subscription lists a topic twice: Java compares its length with the first subscription's topic set, "
        "takes the constrained path, and gives the member partitions of a topic it does not subscribe to",
        {"a": 2, "b": 2}, [m("m1", ["a", "b"]), m("m2", ["a", "a"])]),
    "claim-past-the-end-constrained": (
        "a member claims a partition its topic no longer has (recreated smaller): Java's constrained path "
        "throws IllegalStateException",
        {"t": 1}, [m("m0", ["t"], [("t", 1)], 3)]),
    "claim-past-the-end-general": (
        "the same on the general path: Java keeps the claim on a partition that does not exist and hands "
        "another partition out twice",
        {"a": 0, "t": 1, "b": 1}, [m("m2", ["a"]), m("m3", ["t", "b"], [("t", 0), ("b", 1)], 5)]),
    "older-generation-left-the-topic": (
        "a member of an older generation claims a partition of a topic it has left: Java's prevAssignment "
        "moves the partition back to it",
        {"a": 2, "b": 2, "c": 1},
        [m("X", ["a"], [("b", 0)], 1), m("Y", ["a", "b"], [("a", 0), ("a", 1), ("b", 0), ("b", 1)], 2),
         m("Z", ["b"], (), 2), m("W", ["a"], (), 2)]),
    "older-generation-owner-is-fixed": (
        "the same, with that member unable to take anything more: Java throws NullPointerException",
        {"a": 2, "b": 2, "c": 1},
        [m("X", ["c"], [("b", 0)], 1), m("Y", ["a", "b"], [("a", 0), ("a", 1), ("b", 0), ("b", 1)], 2),
         m("Z", ["b"], (), 2), m("W", ["a"], (), 2)]),
    "fresh-racks-constrained": (
        "a fresh group (no claims at all) with consumer racks on the constrained path: Java's rack-aware pass "
        "cannot bring enough members up to the minimum quota and throws IllegalStateException; kwire places every "
        "partition itself",
        {"t0": 3, "t1": 5, "t2": 3},
        [m(f"m{i}", ["t0", "t1", "t2"], rack=rack) for i, rack in enumerate(["r2", "r0", None, "r1", "r1"])],
        _REPLICA_RACKS),
}


def group_of(case):
    return GroupInput(
        members=[MemberInput(member_id=x["member_id"], topics=tuple(x["topics"]),
                             owned=tuple((t, p) for t, p in x["owned"]), generation=x["generation"],
                             subscription_generation=x["subscription_generation"], rack=x.get("rack"))
                 for x in case["members"]],
        partitions_per_topic=dict(case["partitions_per_topic"]), partition_racks=case.get("partition_racks"))


def answers(case, implementation=None):
    """(Java's answer or {"error": message}, kwire's default answer) for a case."""
    run = assign_sticky if case["assignor"] == "sticky" else assign_cooperative_sticky
    group = ArrayGroup.from_group_input(group_of(case))
    try:
        java = run(group, implementation, java_exact=True).to_dict()
    except JavaAssignorFailure as exc:
        java = {"error": str(exc)}
    return java, run(group, implementation).to_dict()


def _plain(result):
    return {k: [list(tp) for tp in v] for k, v in result.items()} if "error" not in result else result


def main():
    lines = []
    for kind, (why, ppt, members, *racks) in KINDS.items():
        for assignor in ("sticky", "cooperative-sticky"):
            case = {"id": f"{assignor}/{kind}", "assignor": assignor, "kind": kind, "why": why,
                    "partitions_per_topic": ppt, "members": members}
            if racks:
                case["partition_racks"] = racks[0]
            java, default = answers(case)
            if java == default:
                raise SystemExit(f"{case['id']}: Java's answer is kwire's; not a departure")
            case["java"], case["kwire"] = _plain(java), _plain(default)
            lines.append(json.dumps(case, ensure_ascii=False, sort_keys=False))
    OUT.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"{len(lines)} cases -> {OUT.relative_to(REPO)}")


if __name__ == "__main__":
    main()
