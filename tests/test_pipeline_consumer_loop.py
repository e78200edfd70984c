"""The consumer-protocol analysis on traffic kwire's own sans-IO ConsumerGroupCoordinator and ConsumerProtocolMember
exchange on an injected clock (tests/consumer_group_loop.py), against what the loop itself knows: when each group
epoch first reached a member, when the group was stable again, and for how long each partition was held by no
client (the clients' PartitionsAssigned / PartitionsRevoked events).  The traffic is read both as every heartbeat
and as the ``events`` stage reduces it (keep-alives folded)."""

import pyarrow as pa
import pytest

from kwire.pipeline._consumer_history import consumer_history
from kwire.pipeline._consumer_tables import consumer_tables, consumer_timelines
from kwire.pipeline._membership import MemberEvent

from .analysis_frames import events_from_frames
from .consumer_captures import LATENCY_US, RecordingLoop, write_capture
from .consumer_events import Events, event_schema, folded, record_heartbeats, topic_id_text
from .consumer_group_loop import ConsumerLoop
from .test_consumer_group_loop import FAST

STEP_MS = 100


class Truth:
    """What the loop knows, sampled after every step."""

    def __init__(self, loop, topics):
        self.loop = loop
        self.partitions = [(t, p) for t, n in topics.items() for p in range(n)]
        self.unowned_ms = 0          # partitions held by no client, summed over time, once first held
        self.ever_held = set()
        self.sampled = (0, 0)        # (time, partitions unowned then)
        self.first_seen = {}         # group epoch -> first time a client had it
        self.stable_at = {}          # group epoch -> first time the loop was stable at it

    def step(self):
        loop = self.loop
        loop.step(STEP_MS)
        self.sample()
        for m in loop.members.values():
            if m.member_epoch > 0:
                self.first_seen.setdefault(m.member_epoch, loop.now)
        group = loop.group()
        if group is not None and loop.stable():
            self.stable_at.setdefault(group.group_epoch, loop.now)

    def sample(self):
        """The clients' holdings now: they held since the last sample."""
        held = set(self.loop.held)
        then, unowned = self.sampled
        self.unowned_ms += (self.loop.now - then) * unowned
        self.ever_held |= held
        self.sampled = (self.loop.now, sum(1 for tp in self.ever_held if tp not in held))

    def run(self, ms):
        for _ in range(ms // STEP_MS):
            self.step()


def scenario(recorded=None):
    """Three members join one after the other, then the first leaves; six partitions of one topic.  ``recorded``:
    a list that gets the traffic as encoded capture frames (tests/consumer_captures.py), instead of event rows."""
    topics = {"a": 6}
    events = Events()
    if recorded is None:
        loop = ConsumerLoop(topics, FAST)
        events.metadata(0, {topic_id_text(tid): name for name, tid in loop.ids.items()})
        record_heartbeats(loop.coordinator, events)
    else:
        loop = RecordingLoop(topics, FAST, frames=recorded)
        loop.topic_sizes = dict(topics)
        loop.metadata()
    truth = Truth(loop, topics)
    for name in ("c0", "c1", "c2"):
        loop.add(name, ["a"])
        truth.run(4000)
    first = loop.members["c0"]
    loop.handle("c0", first.leave(loop.now))
    del loop.members["c0"]
    truth.sample()
    truth.run(4000)
    return loop, events, truth


@pytest.mark.parametrize("fold", [False, True], ids=["every heartbeat", "folded"])
def test_reconciliations_match_what_the_loop_saw(fold):
    loop, events, truth = scenario()
    if fold:
        reduced = folded(events)
        assert len(reduced.rows) < len(events.rows) / 2
        events = reduced
    t = {k: v.to_pylist() for k, v in consumer_tables(consumer_timelines(events.table(),
                                                                         session_timeout_ms=3000)).items()}
    recs = t["reconciliations"]
    assert [r["group_epoch"] for r in recs] == sorted(truth.first_seen) == [1, 2, 3, 4]
    for r in recs:
        e = r["group_epoch"]
        assert r["outcome"] == "stable"
        assert r["start_ts"] == truth.first_seen[e] * 1000
        assert r["end_ts"] == truth.stable_at[e] * 1000, e
    assert [r["trigger"] for r in recs] == ["initial", "member_joined", "member_joined", "member_left"]
    total = sum(r["partition_seconds_unowned"] for r in recs)
    assert truth.unowned_ms > 0
    assert total == pytest.approx(truth.unowned_ms / 1000.0)
    assert t["consumer_anomalies"] == []
    # Every member's last snapshot is what the coordinator holds for it.
    group = loop.group()
    last = {}
    for row in t["consumer_members"]:
        last[row["member_id"]] = row
    for member_id, member in group.members.items():
        got = {(p["topic"], q) for p in last[member_id]["assigned"] for q in p["partitions"]}
        assert got == {("a", p) for ps in member.assigned.values() for p in ps}
        assert last[member_id]["member_epoch"] == member.member_epoch


def test_the_membership_history_of_the_loop():
    loop, events, truth = scenario()
    (tl,) = consumer_timelines(folded(events).table(), session_timeout_ms=3000)
    h = consumer_history(tl)
    kinds = [(h.member_ids[m], MemberEvent(k).name) for m, k in zip(h.event_member, h.event_kind)]
    assert kinds == [("member-0001", "JOIN"), ("member-0002", "JOIN"), ("member-0003", "JOIN"),
                     ("member-0001", "LEAVE")]
    assert h.topics == ["a"] and list(h.partition_counts) == [6]
    assert h.event_topics == [(0,), (0,), (0,), ()]
    assert h.heartbeat_interval_ms == FAST["group.consumer.heartbeat.interval.ms"]
    assert list(h.rebalance_epoch) == [1, 2, 3, 4]


def test_the_analysis_of_the_loop_s_frames_encoded_decoded_and_reduced(tmp_path):
    # kwire's codec encodes every exchange (a response LATENCY_US after its request, a request just after the
    # capture's previous frame), the batch decoder decodes the capture, and the events stage's reduction
    # (its pandas twin) folds the keep-alives: the reconciliations are the loop's, to the capture's shifts.
    from kwire.pipeline._decode import decode_capture

    frames = []
    loop, _events, truth = scenario(recorded=frames)
    decoded = decode_capture(write_capture(str(tmp_path / "capture.parquet"), frames))
    assert decoded.column("decode_error").null_count == decoded.num_rows
    events = pa.Table.from_pandas(events_from_frames(decoded), schema=event_schema(), preserve_index=False)
    t = {k: v.to_pylist() for k, v in consumer_tables(consumer_timelines(events, session_timeout_ms=3000)).items()}
    recs = t["reconciliations"]
    assert [r["group_epoch"] for r in recs] == [1, 2, 3, 4]
    slack = 10 * LATENCY_US   # the capture spreads one step's exchanges over a few LATENCY_US
    for r in recs:
        assert r["outcome"] == "stable"
        assert abs(r["start_ts"] - truth.first_seen[r["group_epoch"]] * 1000) <= slack
        assert abs(r["end_ts"] - truth.stable_at[r["group_epoch"]] * 1000) <= slack
    assert sum(r["partition_seconds_unowned"] for r in recs) == pytest.approx(truth.unowned_ms / 1000.0, abs=0.02)
    assert t["consumer_anomalies"] == []
    # Topic ids are named by the capture's Metadata response (v12, with topic ids).
    assert {p["topic"] for row in t["consumer_members"] for p in row["assigned"]} == {"a"}
    (tl,) = consumer_timelines(events, session_timeout_ms=3000)
    assert consumer_history(tl).latency_us.tolist() == [LATENCY_US] * 3


def test_consumer_histories_feed_the_migration_what_if(tmp_path):
    # Classic groups (tests/pipeline_captures.py) and two consumer-protocol groups in one capture: the consumer
    # analysis gives the consumer groups' histories, the classic path the classic groups'.
    from kwire.pipeline._consumer_history import consumer_histories
    from kwire.pipeline._consumer_tables import consumer_group_ids
    from kwire.pipeline._decode import decode_capture
    from kwire.pipeline._migrate_table import migrate_bucket
    from kwire.pipeline._spark_consumer import TOPIC_NAME_SCHEMA

    from .consumer_captures import add_consumer_groups
    from .pipeline_captures import T0, scripted_capture

    capture = str(tmp_path / "capture.parquet")
    scripted_capture(capture, extra=lambda out: add_consumer_groups(out, T0, groups=2))
    events = pa.Table.from_pandas(events_from_frames(decode_capture(capture)), schema=event_schema(),
                                  preserve_index=False)
    events = events.filter(pa.compute.is_valid(events.column("group_id")))
    is_848 = pa.compute.is_in(events.column("group_id"), pa.array(consumer_group_ids(events), pa.string()))
    kip848, classic = events.filter(is_848), events.filter(pa.compute.invert(is_848))
    histories = consumer_histories(consumer_timelines(kip848))
    assert [(h.group_id, h.protocol, h.n_members, h.n_rebalances) for h in histories] == [
        ("kip848-0", "consumer", 4, 4), ("kip848-1", "consumer", 4, 4)]
    rows = (migrate_bucket(classic).to_pylist()
            + migrate_bucket(kip848, names=TOPIC_NAME_SCHEMA.empty_table()).to_pylist())
    observed = {(r["group_id"], r["observed_protocol"]) for r in rows}
    assert {g for g, p in observed if p == "consumer"} == {"kip848-0", "kip848-1"}
    assert {g for g, p in observed if p != "consumer"} == {"orders-app", "coop-app"}


def test_corrupt_heartbeats_are_bad_frames_and_the_analysis_goes_on(tmp_path):
    from kwire.pipeline._decode import decode_capture

    frames = []
    scenario(recorded=frames)
    # Cut two heartbeat responses short, as a lossy capture would.
    cut = [i for i, f in enumerate(frames) if f[2] == 1][20:22]
    for i in cut:
        ts, conn, direction, frame = frames[i]
        frames[i] = (ts, conn, direction, frame[: len(frame) // 2])
    decoded = decode_capture(write_capture(str(tmp_path / "capture.parquet"), frames))
    assert decoded.num_rows - decoded.column("decode_error").null_count == 2
    events = pa.Table.from_pandas(events_from_frames(decoded), schema=event_schema(), preserve_index=False)
    recs = consumer_tables(consumer_timelines(events, session_timeout_ms=3000))["reconciliations"].to_pylist()
    assert [r["group_epoch"] for r in recs] == [1, 2, 3, 4]
