"""The golden cases of Kafka's server-side assignors (``java848-assignors.jsonl``)
as kwire's member-level input, shared by the server-assignor tests."""

import base64
import json
import pathlib

from kwire.assignors import ServerMember, TopicMetadata
from kwire.assignors._server_common import topic_id_bytes
from kwire.codec import topic_id_text

GOLDEN848_PATH = pathlib.Path(__file__).parent / "data" / "golden" / "java848-assignors.jsonl"


def golden848_cases():
    with open(GOLDEN848_PATH, encoding="ascii") as f:
        return [json.loads(line) for line in f if line.strip()]


def raw_id(text):
    """16 bytes from Kafka's base64 text form of a Uuid."""
    return base64.urlsafe_b64decode(text + "==")


def case_input(case, key=str):
    """``(members, topics)`` for :func:`kwire.assignors.assign_server`, topic ids
    converted by ``key`` from their base64 text (``str`` keeps it)."""
    topics = {key(t["topic_id"]): TopicMetadata(name=t["name"], partitions=t["partitions"],
                                                 partition_racks=t["partition_racks"]) for t in case["topics"]}
    members = {}
    for m in case["members"]:
        members[m["member_id"]] = ServerMember(
            subscribed_topic_ids=[key(t) for t in m["subscribed_topic_ids"]],
            assignment={key(t): list(ps) for t, ps in m["assignment"]},
            instance_id=m["instance_id"], rack=m["rack"],
            unresolved_topic_names=tuple(m.get("unresolved_topic_names", ())))
    return members, topics


def as_expected(result):
    """A member-level result in the golden file's form: topic ids as Kafka's
    base64 text, whatever form the call used."""
    return {m: {topic_id_text(topic_id_bytes(t)): list(ps) for t, ps in a.items()} for m, a in result.items()}
