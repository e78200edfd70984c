"""Consumer-protocol events built by hand, with exactly the event columns the ``events`` stage gives the analysis
(the classic ones and the consumer protocol's: docs/PIPELINE.md), as an Arrow table."""

from __future__ import annotations

import pyarrow as pa

from kwire.codec import ApiKey
from kwire.pipeline._decode import FRAMES_SCHEMA
from kwire.pipeline._events import EVENT_COLUMNS
from kwire.codec import topic_id_text

HB, DESCRIBE, METADATA = int(ApiKey.CONSUMER_GROUP_HEARTBEAT), int(ApiKey.CONSUMER_GROUP_DESCRIBE), int(ApiKey.METADATA)
JOIN, SYNC, LEAVE = int(ApiKey.JOIN_GROUP), int(ApiKey.SYNC_GROUP), int(ApiKey.LEAVE_GROUP)
REQUEST, RESPONSE = 0, 1
#: A topic id in Kafka's text form, and the name a Metadata response gives it.
FOO_ID = "AAAAAAAAAAAAAAAAAAAAAQ"


def event_schema():
    """The events' Arrow schema: the decoded frames' types, times in µs."""
    frames = FRAMES_SCHEMA()
    return pa.schema([pa.field(name, pa.int64()) if name in ("ts", "request_ts") else frames.field(name)
                      for name in EVENT_COLUMNS])


def tp(*partitions, topic=FOO_ID):
    return [{"topic_id": topic, "partitions": list(partitions)}]


class Events:
    """Rows in capture order: ``request`` returns the request's seq for its ``response``."""

    def __init__(self, group_id="g"):
        self.group_id = group_id
        self.rows = []
        self.seq = 0

    def _row(self, **kw):
        self.seq += 1
        row = {"group_id": self.group_id, "seq": self.seq, **kw}
        self.rows.append(row)
        return self.seq

    def hb(self, ms, member, epoch, owned=None, topics=None, instance=None, rebalance_timeout_ms=-1):
        """A ConsumerGroupHeartbeat request at ``ms``."""
        return self._row(ts=ms * 1000, direction=REQUEST, api_key=HB, member_id=member, generation_id=epoch,
                         topic_partitions=owned, topics=topics, group_instance_id=instance,
                         rebalance_timeout_ms=rebalance_timeout_ms)

    def join(self, ms, member, topics=("foo",), instance=None):
        return self.hb(ms, member, 0, owned=[], topics=list(topics), instance=instance, rebalance_timeout_ms=300000)

    def resp(self, ms, request_seq, member, epoch, assigned=None, error=0, interval=5000):
        req = next(r for r in self.rows if r["seq"] == request_seq)
        return self._row(ts=ms * 1000, direction=RESPONSE, api_key=req["api_key"], member_id=member,
                         generation_id=epoch, error_code=error, topic_partitions=assigned,
                         heartbeat_interval_ms=interval if not error else 0, request_seq=request_seq,
                         request_ts=req["ts"], group_instance_id=req.get("group_instance_id"))

    def metadata(self, ms, names):
        """A Metadata response naming ``{topic id: name}``."""
        self.seq += 1
        self.rows.append({"group_id": None, "seq": self.seq, "ts": ms * 1000, "direction": RESPONSE,
                          "api_key": METADATA, "topics": list(names.values()), "topic_ids": list(names),
                          "partition_counts": [4] * len(names), "request_seq": self.seq - 1,
                          "request_ts": ms * 1000})

    def describe(self, ms, group_epoch, assignment_epoch, members=()):
        """A ConsumerGroupDescribe response as the consumer stage hands it to a group: with its group id."""
        self.seq += 1
        self.rows.append({"group_id": self.group_id, "seq": self.seq, "ts": ms * 1000, "direction": RESPONSE,
                          "api_key": DESCRIBE, "request_seq": self.seq - 1, "request_ts": ms * 1000,
                          "described": [{"group_id": self.group_id, "error_code": 0, "group_state": "Stable",
                                         "group_epoch": group_epoch, "assignment_epoch": assignment_epoch,
                                         "assignor_name": "uniform", "members": list(members)}]})
        return self.seq

    def classic(self, ms, api, direction, member, generation=None, error=0, request_seq=None, **kw):
        req = next((r for r in self.rows if r["seq"] == request_seq), None)
        return self._row(ts=ms * 1000, direction=direction, api_key=api, member_id=member, generation_id=generation,
                         error_code=error if direction == RESPONSE else None, request_seq=request_seq,
                         request_ts=None if req is None else req["ts"], **kw)

    def table(self):
        schema = event_schema()
        return pa.Table.from_pylist([{c: r.get(c) for c in schema.names} for r in self.rows], schema=schema)


def record_heartbeats(coordinator, events: Events):
    """Record every ConsumerGroupHeartbeat ``coordinator`` answers as a request row and a response row of
    ``events``, at the loop's clock, with the fields the batch decoder reads from each."""
    answer = coordinator.heartbeat

    def tps(value):
        return None if value is None else [{"topic_id": topic_id_text(t.topic_id), "partitions": list(t.partitions)}
                                           for t in value]

    def heartbeat(req, version, now, **kw):
        resp = answer(req, version, now, **kw)
        events.group_id = req.group_id
        seq = events._row(ts=now * 1000, direction=REQUEST, api_key=HB, member_id=req.member_id,
                          generation_id=req.member_epoch, group_instance_id=req.instance_id,
                          rebalance_timeout_ms=req.rebalance_timeout_ms, topics=req.subscribed_topic_names,
                          protocol_name=req.server_assignor, topic_partitions=tps(req.topic_partitions))
        events._row(ts=now * 1000, direction=RESPONSE, api_key=HB,
                    member_id=resp.member_id if resp.member_id is not None else req.member_id,
                    generation_id=resp.member_epoch, error_code=resp.error_code, group_instance_id=req.instance_id,
                    heartbeat_interval_ms=resp.heartbeat_interval_ms, request_seq=seq, request_ts=now * 1000,
                    topic_partitions=None if resp.assignment is None else tps(resp.assignment.topic_partitions))
        return resp

    coordinator.heartbeat = heartbeat


def folded(events: Events) -> Events:
    """The ``events`` stage's reduction of ConsumerGroupHeartbeat rows (docs/PIPELINE.md): requests that join,
    leave or carry a subscription or owned partitions, and responses with an error, an assignment or a new epoch,
    are kept; every other pair folds into one row per (group, member, member epoch) holding the last one's request
    time and the response's fields."""
    out = Events(events.group_id)
    requests = {r["seq"]: r for r in events.rows if r["direction"] == REQUEST}
    folds = {}
    for r in events.rows:
        if r["api_key"] != HB:
            out.rows.append(r)
            continue
        if r["direction"] == REQUEST:
            if (r["generation_id"] <= 0 or r.get("topics") is not None or r.get("subscribed_regex") is not None
                    or r.get("topic_partitions") is not None):
                out.rows.append(r)
            continue
        req = requests[r["request_seq"]]
        if r["error_code"] or r.get("topic_partitions") is not None or r["generation_id"] != req["generation_id"]:
            out.rows.append(r)
            continue
        key = (r["group_id"], r["member_id"], r["generation_id"])
        fold = folds.get(key)
        if fold is None:
            fold = folds[key] = dict(r)
            out.rows.append(fold)
        fold.update(ts=req["ts"], seq=r["seq"], request_seq=None, request_ts=None,
                    heartbeat_interval_ms=r["heartbeat_interval_ms"])
    out.rows.sort(key=lambda r: r["seq"])
    out.seq = events.seq
    return out
