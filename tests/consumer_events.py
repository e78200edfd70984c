"""Consumer-protocol events built by hand, with exactly the event columns the ``events`` stage gives the analysis
(the classic ones and the consumer protocol's: docs/PIPELINE.md), as an Arrow table."""

from __future__ import annotations

import pyarrow as pa

from kwire.codec import ApiKey
from kwire.pipeline._consumer_schemas import CONSUMER_EVENT_COLUMNS, CONSUMER_EXTRA_TYPES
from kwire.pipeline._decode import FRAMES_SCHEMA

HB, DESCRIBE, METADATA = int(ApiKey.CONSUMER_GROUP_HEARTBEAT), int(ApiKey.CONSUMER_GROUP_DESCRIBE), int(ApiKey.METADATA)
JOIN, SYNC, LEAVE = int(ApiKey.JOIN_GROUP), int(ApiKey.SYNC_GROUP), int(ApiKey.LEAVE_GROUP)
REQUEST, RESPONSE = 0, 1
#: A topic id in Kafka's text form, and the name a Metadata response gives it.
FOO_ID = "AAAAAAAAAAAAAAAAAAAAAQ"


def event_schema():
    frames = FRAMES_SCHEMA()
    fields = []
    for name in CONSUMER_EVENT_COLUMNS:
        if name in ("ts", "request_ts"):
            fields.append(pa.field(name, pa.int64()))
        elif name in CONSUMER_EXTRA_TYPES and name not in frames.names:
            fields.append(pa.field(name, CONSUMER_EXTRA_TYPES[name]))
        else:
            fields.append(frames.field(name))
    return pa.schema(fields)


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
