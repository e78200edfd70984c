"""The consumer-protocol analysis on hand-built events (tests/consumer_events.py): epochs, members' assignments and
revocations, joins, leaves and fencing, reconciliations (time to stable, partition-seconds unowned, worked out by
hand in each test), anomalies, mixed groups and ConsumerGroupDescribe rows."""

import pytest

from kwire.codec import ErrorCode
from kwire.pipeline._consumer_tables import consumer_tables, consumer_timelines

from .consumer_events import FOO_ID, JOIN, LEAVE, REQUEST, RESPONSE, SYNC, Events, tp


def tables(events, **kw):
    return {name: t.to_pylist() for name, t in consumer_tables(consumer_timelines(events.table(), **kw)).items()}


def worked_sequence(b_gets=(2, 3)):
    """Two members, partitions 0-3: A joins alone, B joins, A revokes 2 and 3, B gets them (the coordinator's
    CurrentAssignmentBuilder sequence: B waits UNRELEASED at epoch 2 while A is UNREVOKED at epoch 1)."""
    e = Events()
    e.metadata(0, {FOO_ID: "foo"})
    a = e.join(1000, "A")
    e.resp(1010, a, "A", 1, tp(0, 1, 2, 3))
    b = e.join(2000, "B")
    e.resp(2010, b, "B", 2, tp())
    r = e.hb(3000, "A", 1)
    e.resp(3010, r, "A", 1, tp(0, 1))
    r = e.hb(3500, "A", 1, owned=tp(0, 1))
    e.resp(3510, r, "A", 2)
    r = e.hb(7000, "B", 2)
    e.resp(7010, r, "B", 2, tp(*b_gets))
    return e


def test_the_worked_sequence_gives_each_reconciliations_time_to_stable_and_unowned_partition_seconds():
    t = tables(worked_sequence())
    first, second = t["reconciliations"]
    # Epoch 1: A alone gets everything in its join response: stable at once, nothing unowned for any time.
    assert (first["group_epoch"], first["start_ts"], first["end_ts"], first["time_to_stable_ms"]) == (
        1, 1_010_000, 1_010_000, 0.0)
    assert first["partition_seconds_unowned"] == 0.0 and first["trigger"] == "initial" and first["outcome"] == "stable"
    # Epoch 2: first seen in B's join response at 2.010 s; the last member to own exactly its target at epoch 2 is
    # B at 7.010 s.  Partitions 2 and 3 are unowned from A's ack at 3.500 s to B's response at 7.010 s.
    assert (second["group_epoch"], second["start_ts"], second["end_ts"]) == (2, 2_010_000, 7_010_000)
    assert second["time_to_stable_ms"] == 5000.0
    assert second["partition_seconds_unowned"] == pytest.approx(2 * 3.51)
    assert (second["trigger"], second["joined"], second["members"], second["partitions"],
            second["moved_partitions"]) == ("member_joined", ["B"], 2, 4, 2)
    assert t["consumer_anomalies"] == []


def test_member_rows_follow_the_assignment_and_the_partitions_still_to_revoke():
    rows = [(r["member_id"], r["ts"] // 1000, r["member_epoch"], r["assigned_count"], r["to_revoke_count"])
            for r in tables(worked_sequence())["consumer_members"]]
    assert rows == [("A", 1010, 1, 4, 0), ("A", 3010, 1, 2, 2), ("A", 3500, 1, 2, 0), ("A", 3510, 2, 2, 0),
                    ("B", 2010, 2, 0, 0), ("B", 7010, 2, 2, 0)]
    a_revoking = tables(worked_sequence())["consumer_members"][1]
    assert a_revoking["to_revoke"] == [{"topic": "foo", "partitions": [2, 3]}]


def test_group_epochs_come_from_member_epochs_and_topic_ids_without_metadata_keep_their_text():
    e = Events()
    a = e.join(1000, "A")
    e.resp(1010, a, "A", 1, tp(0, 1))
    t = tables(e)
    assert [(r["group_epoch"], r["assignment_epoch"], r["source"]) for r in t["consumer_epochs"]] == [
        (1, 1, "heartbeat")]
    assert t["consumer_members"][0]["assigned"] == [{"topic": FOO_ID, "partitions": [0, 1]}]


def test_a_clean_leave_releases_partitions_at_the_leave_request():
    e = worked_sequence()
    r = e.hb(10_000, "B", -1)
    e.resp(10_005, r, "B", -1)
    r = e.hb(12_000, "A", 2)
    e.resp(12_010, r, "A", 3, tp(0, 1, 2, 3))
    t = tables(e)
    third = t["reconciliations"][-1]
    # B stops consuming 2 and 3 at its leave request (10 s); A is given them at 12.010 s, at epoch 3.
    assert (third["group_epoch"], third["trigger"], third["left"], third["members"]) == (3, "member_left", ["B"], 1)
    assert third["partition_seconds_unowned"] == pytest.approx(2 * 2.01)
    assert third["time_to_stable_ms"] == 0.0
    assert [(r["member_id"], r["kind"]) for r in t["consumer_membership"]] == [
        ("A", "join"), ("B", "join"), ("B", "leave")]


def test_fencing_errors_are_recorded_with_their_error_and_the_member_rejoins():
    e = worked_sequence()
    r = e.hb(9000, "B", 5)
    e.resp(9010, r, "B", 0, error=int(ErrorCode.FENCED_MEMBER_EPOCH))
    r = e.join(9020, "B")
    e.resp(9030, r, "B", 3, tp())
    t = tables(e)
    fenced = [(r["member_id"], r["kind"], r["error_code"]) for r in t["consumer_membership"] if r["kind"] != "join"]
    assert fenced == [("B", "fenced", int(ErrorCode.FENCED_MEMBER_EPOCH)), ("B", "rejoin", None)]
    # B loses 2 and 3 at the error (9.010 s); nobody has them again by the end of the capture (9.030 s).
    last = t["reconciliations"][-1]
    assert last["group_epoch"] == 3 and last["outcome"] == "open"
    assert last["partition_seconds_unowned"] == pytest.approx(2 * 0.02)
    assert last["triggers"][:2] == ["member_fenced", "member_joined"]


def test_a_member_never_heard_from_again_is_fenced_by_its_session_timeout():
    e = silent_b_handed_over(confirmed=False)   # B's last heartbeat is its request at 8 s, then silence
    t = tables(e, session_timeout_ms=3000)
    timeout = [r for r in t["consumer_membership"] if r["kind"] == "session_timeout"]
    assert [(r["member_id"], r["ts"]) for r in timeout] == [("B", 11_000_000)]
    third = t["reconciliations"][-1]
    assert (third["trigger"], third["fenced"]) == ("session_timeout", ["B"])
    # B stopped consuming at its last heartbeat (8 s); A got 2 and 3 at 14.010 s.
    assert third["partition_seconds_unowned"] == pytest.approx(2 * 6.01)
    # With Kafka's default session (45 s), and nothing showing the coordinator removed B (A's answers stay at
    # epoch 2), the same silence is no timeout yet.
    quiet = worked_sequence()
    for ms, member in ((8000, "B"), (12_000, "A"), (14_000, "A")):
        r = quiet.hb(ms, member, 2)
        quiet.resp(ms + 10, r, member, 2)
    assert not [r for r in tables(quiet)["consumer_membership"] if r["kind"] == "session_timeout"]


def silent_b_handed_over(confirmed=True):
    """B's last heartbeat is its request at 8 s; at 14.01 s A is given B's partitions at epoch 3: the
    coordinator removed B (its session, not in any frame, ran out between the two).  ``confirmed``: A then
    acknowledges them at 15 s."""
    e = worked_sequence()
    r = e.hb(8000, "B", 2)
    e.resp(8010, r, "B", 2)
    r = e.hb(12_000, "A", 2)
    e.resp(12_010, r, "A", 2)
    r = e.hb(14_000, "A", 2)
    e.resp(14_010, r, "A", 3, tp(0, 1, 2, 3))
    if confirmed:
        r = e.hb(15_000, "A", 3, owned=tp(0, 1, 2, 3))
        e.resp(15_010, r, "A", 3)
    return e


def test_a_silent_member_whose_partitions_go_to_another_at_a_later_epoch_was_removed_by_the_coordinator():
    # Kafka's default session (45 s) is far from over at 14 s, yet the handover shows B was fenced by then.
    t = tables(silent_b_handed_over())
    timeout = [r for r in t["consumer_membership"] if r["kind"] == "session_timeout"]
    assert [(r["member_id"], r["ts"], r["silent_ms"]) for r in timeout] == [("B", 14_010_000, 6010.0)]
    third = t["reconciliations"][-1]
    assert (third["group_epoch"], third["trigger"], third["fenced"]) == (3, "session_timeout", ["B"])
    # B is not in the group epoch 3 made: the reconciliation is stable once A owns its target.
    assert (third["members"], third["outcome"], third["end_ts"]) == (1, "stable", 14_010_000)
    # B stopped consuming at its last heartbeat (8 s); A got 2 and 3 at 14.010 s.
    assert third["partition_seconds_unowned"] == pytest.approx(2 * 6.01)
    # A given session timeout that expires first gives the same cause, at the expiry.
    timeout = [r for r in tables(silent_b_handed_over(), session_timeout_ms=3000)["consumer_membership"]
               if r["kind"] == "session_timeout"]
    assert [(r["member_id"], r["ts"], r["silent_ms"]) for r in timeout] == [("B", 11_000_000, None)]


def test_a_silent_member_a_later_describe_no_longer_lists_was_removed_by_the_coordinator():
    e = worked_sequence()
    r = e.hb(8000, "B", 2)
    e.resp(8010, r, "B", 2)
    e.describe(13_000, 3, 3, [described("A", 2, tp(0, 1), tp(0, 1, 2, 3))])
    t = tables(e)
    timeout = [r for r in t["consumer_membership"] if r["kind"] == "session_timeout"]
    assert [(r["member_id"], r["ts"]) for r in timeout] == [("B", 13_000_000)]
    assert t["reconciliations"][-1]["trigger"] == "session_timeout"


def test_a_member_that_speaks_again_or_left_is_not_taken_as_removed():
    # B's partitions go to A at a later epoch, but B is heard from afterwards: its own answer tells its fate.
    e = silent_b_handed_over()
    r = e.hb(16_000, "B", 2)
    e.resp(16_010, r, "B", 0, error=int(ErrorCode.FENCED_MEMBER_EPOCH))
    kinds = [r["kind"] for r in tables(e)["consumer_membership"] if r["member_id"] == "B"]
    assert kinds == ["join", "fenced"]


def test_an_error_after_a_session_of_silence_counts_as_a_session_timeout():
    e = worked_sequence()
    r = e.hb(60_000, "B", 2)
    e.resp(60_010, r, "B", 0, error=int(ErrorCode.UNKNOWN_MEMBER_ID))
    (row,) = [r for r in tables(e)["consumer_membership"] if r["member_id"] == "B" and r["kind"] != "join"]
    # B's last successful heartbeat was its request at 7 s; Kafka's default session is 45 s.
    assert (row["kind"], row["error_code"], row["ts"]) == ("session_timeout", int(ErrorCode.UNKNOWN_MEMBER_ID),
                                                          52_000_000)


def test_anomalies_are_counted_and_kept():
    e = worked_sequence()
    r = e.hb(8000, "A", 2, owned=tp(0, 1, 3))                  # 3 was given to A once: no anomaly
    e.resp(8010, r, "A", 1)                                     # epoch backwards: 2 -> 1
    r = e.hb(8500, "B", 2, owned=tp(2, 3, 9))                  # 9 was never given to B
    e.resp(8510, r, "B", 2)
    e._row(ts=9_000_000, direction=RESPONSE, api_key=JOIN, member_id="A", generation_id=2, error_code=0,
           request_seq=None)                                    # a response without its request
    anomalies = [(r["kind"], r["member_id"], r["detail"]) for r in tables(e)["consumer_anomalies"]]
    assert anomalies == [("epoch_backwards", "A", "member epoch 2 -> 1"), ("ack_not_given", "B", "foo-9"),
                         ("response_without_request", "A", "api 11 response with no request in the capture")]


def test_a_mixed_group_reads_classic_members_sync_group_responses_as_their_assignments():
    e = Events()
    e.metadata(0, {FOO_ID: "foo"})
    a = e.join(1000, "A")
    e.resp(1010, a, "A", 1, tp(0, 1, 2, 3))
    j = e.classic(2000, JOIN, REQUEST, "C", session_timeout_ms=10_000, topics=["foo"])
    e.classic(2010, JOIN, RESPONSE, "C", generation=2, request_seq=j)
    s = e.classic(2020, SYNC, REQUEST, "C", generation=2)
    e.classic(2030, SYNC, RESPONSE, "C", generation=2, request_seq=s, assignments=[])
    r = e.hb(3000, "A", 1)
    e.resp(3010, r, "A", 1, tp(0, 1))
    r = e.hb(3100, "A", 1, owned=tp(0, 1))
    e.resp(3110, r, "A", 2)
    s = e.classic(4000, SYNC, REQUEST, "C", generation=2)
    e.classic(4010, SYNC, RESPONSE, "C", generation=2, request_seq=s,
              assignments=[{"member_id": "C", "topic": "foo", "partitions": [2, 3]}])
    t = tables(e)
    rec = t["reconciliations"][-1]
    assert rec["protocol"] == "mixed" and rec["group_epoch"] == 2
    # The bump is C's JoinGroup response (2.010 s); C owns its target at its SyncGroup response (4.010 s);
    # 2 and 3 are unowned from A's ack (3.100 s) to then.
    assert (rec["start_ts"], rec["end_ts"], rec["time_to_stable_ms"]) == (2_010_000, 4_010_000, 2000.0)
    assert rec["partition_seconds_unowned"] == pytest.approx(2 * 0.91)
    assert {r["member_id"]: r["member_protocol"] for r in t["consumer_members"]} == {"A": "consumer", "C": "classic"}
    # A classic member's LeaveGroup releases what it holds.
    e.classic(5000, LEAVE, REQUEST, "C", leaving=["C"])
    t = tables(e)
    assert t["consumer_membership"][-1]["kind"] == "leave"


def described(member_id, member_epoch, assigned, target):
    return {"member_id": member_id, "group_instance_id": None, "member_epoch": member_epoch, "member_type": -1,
            "assigned": assigned, "target": target}


def in_time_order(e):
    """The events renumbered in the order of their times (the capture's ``seq`` order)."""
    e.rows.sort(key=lambda r: r["ts"])
    for i, r in enumerate(e.rows):
        r["seq"] = i + 1
    return e


def test_a_describe_response_shows_the_bump_before_any_member_response():
    e = worked_sequence()
    # A Describe at 2.005 s, between B's join request and its response: group epoch 2, target epoch 2.
    e.describe(2005, 2, 2, [described("A", 1, tp(0, 1, 2, 3), tp(0, 1)), described("B", 0, tp(), tp(2, 3))])
    t = tables(in_time_order(e))
    assert [(r["group_epoch"], r["assignment_epoch"], r["source"]) for r in t["consumer_epochs"]] == [
        (1, 1, "heartbeat"), (2, 2, "describe")]
    rec = t["reconciliations"][-1]
    assert (rec["start_ts"], rec["end_ts"], rec["time_to_stable_ms"]) == (2_005_000, 7_010_000, 5005.0)
    # An earlier group epoch in a later Describe is an epoch going backwards.
    e.describe(8000, 1, 1)
    assert [r["kind"] for r in tables(e)["consumer_anomalies"]] == ["epoch_backwards"]


def test_a_described_target_is_what_members_must_reach():
    e = worked_sequence(b_gets=(2,))     # B has 2 of its target {2, 3} by the end of the capture
    # Without a Describe, what B holds last at epoch 2 is taken as its target.
    assert tables(e)["reconciliations"][-1]["outcome"] == "stable"
    e.describe(2500, 2, 2, [described("A", 1, tp(0, 1), tp(0, 1)), described("B", 2, tp(), tp(2, 3))])
    rec = tables(in_time_order(e))["reconciliations"][-1]
    assert (rec["outcome"], rec["time_to_stable_ms"], rec["partitions"]) == ("open", None, 4)


def test_a_reconciliation_superseded_by_the_next_bump_has_no_time_to_stable():
    e = Events()
    a = e.join(1000, "A")
    e.resp(1010, a, "A", 1, tp(0, 1, 2, 3))
    b = e.join(2000, "B")
    e.resp(2010, b, "B", 2, tp())
    c = e.join(2500, "C")
    e.resp(2510, c, "C", 3, tp())
    recs = tables(e)["reconciliations"]
    assert [(r["group_epoch"], r["outcome"], r["time_to_stable_ms"]) for r in recs] == [
        (1, "stable", 0.0), (2, "superseded", None), (3, "open", None)]


def test_the_membership_history_of_a_consumer_group():
    from kwire.pipeline._consumer_history import consumer_history
    from kwire.pipeline._membership import MemberEvent

    e = silent_b_handed_over(confirmed=False)
    (tl,) = consumer_timelines(e.table(), session_timeout_ms=3000)
    # Without the session, the handover at 14.01 s shows the same crash at B's last heartbeat, and bounds the
    # session the replay takes by B's silence (6.01 s) instead of Kafka's default.
    (unknown_session,) = consumer_timelines(e.table())
    assert list(consumer_history(unknown_session).event_ts) == list(consumer_history(tl).event_ts)
    assert list(consumer_history(unknown_session).session_timeout_ms) == [6010, 6010]
    h = consumer_history(tl)
    assert (h.protocol, h.topics, list(h.partition_counts), h.member_ids) == ("consumer", ["foo"], [4], ["A", "B"])
    # A joined (request at 1 s), B joined (2 s), B went silent after its heartbeat at 8 s: a CRASH then.
    assert [(int(t) // 1000, int(m), MemberEvent(k).name, s) for t, m, k, s in zip(
        h.event_ts, h.event_member, h.event_kind, h.event_topics)] == [
        (1000, 0, "JOIN", (0,)), (2000, 1, "JOIN", (0,)), (8000, 1, "CRASH", ())]
    assert list(h.event_rebalance) == [0, 1, 2]
    assert list(h.rebalance_epoch) == [1, 2, 3] and list(h.rebalance_stable_us) == [0, 5_000_000, 0]
    assert list(h.rebalance_unowned_ps) == pytest.approx([0.0, 7.02, 12.02])
    assert list(h.latency_us) == [10_000, 10_000] and list(h.session_timeout_ms) == [3000, 3000]
    assert h.heartbeat_interval_ms == 5000 and h.rebalance_timeout_ms == 300000


def test_an_epoch_seen_once_and_gone_back_from_is_a_damaged_frame_not_a_bump():
    e = worked_sequence()
    r = e.hb(8000, "A", 2)
    e.resp(8010, r, "A", 2 + (1 << 16))   # a flipped bit in the epoch decodes to a valid, wrong one
    r = e.hb(9000, "A", 2)
    e.resp(9010, r, "A", 2)
    c = e.join(10_000, "C")
    e.resp(10_010, c, "C", 3, tp())
    t = tables(e)
    assert [r["group_epoch"] for r in t["reconciliations"]] == [1, 2, 3]
    assert [r["group_epoch"] for r in t["consumer_epochs"]] == [1, 2, 3]
    (anomaly,) = t["consumer_anomalies"]
    assert anomaly["kind"] == "epoch_backwards"
    assert anomaly["detail"] == "member epoch 65538 -> 2 (group epoch 65538, seen nowhere else, left out)"


def test_a_group_every_member_left_starts_its_epochs_again():
    # The coordinator deletes an empty consumer group (GroupMetadataManager.maybeDeleteEmptyConsumerGroup): the
    # next member to join starts a new group at epoch 1.
    e = worked_sequence()
    for ms, member in ((8000, "A"), (8100, "B")):
        r = e.hb(ms, member, -1)
        e.resp(ms + 5, r, member, -1)
    c = e.join(20_000, "C")
    e.resp(20_010, c, "C", 1, tp(0, 1, 2, 3))
    e.describe(21_000, 1, 1)
    t = tables(e)
    assert t["consumer_anomalies"] == []
    assert [(r["group_epoch"], r["start_ts"] // 1000, r["outcome"]) for r in t["reconciliations"]] == [
        (1, 1010, "stable"), (2, 2010, "stable"), (1, 20_010, "stable")]
    last = t["reconciliations"][-1]
    assert (last["trigger"], last["joined"], last["left"]) == ("initial", ["C"], ["A", "B"])
    # Nobody consumed 0 and 1 from A's leave (8 s), 2 and 3 from B's (8.1 s), to C's response (20.01 s).
    assert last["partition_seconds_unowned"] == pytest.approx(2 * 12.01 + 2 * 11.91)


def test_a_fencing_told_after_the_bump_it_caused_is_its_trigger():
    # B stops heartbeating after 7.01 s; the coordinator fences it (unseen) and A's next answer shows epoch 3
    # at 12.01 s; B hears of it only at 13 s.
    e = worked_sequence()
    r = e.hb(12_000, "A", 2)
    e.resp(12_010, r, "A", 3, tp(0, 1, 2, 3))
    r = e.hb(13_000, "B", 2)
    e.resp(13_010, r, "B", 0, error=int(ErrorCode.UNKNOWN_MEMBER_ID))
    recs = tables(e)["reconciliations"]
    assert [(r["group_epoch"], r["trigger"], r["fenced"]) for r in recs] == [
        (1, "initial", []), (2, "member_joined", []), (3, "member_fenced", ["B"])]
    # A alone is in the group epoch 3 made; it owns everything in its answer at 12.01 s.
    assert (recs[-1]["members"], recs[-1]["outcome"], recs[-1]["time_to_stable_ms"]) == (1, "stable", 0.0)
    # B stopped consuming 2 and 3 at the error (13.01 s), after A had them: nothing unowned.
    assert recs[-1]["partition_seconds_unowned"] == 0.0


def test_the_report_section_and_report_json_keys():
    import json

    from kwire.pipeline._report import render_markdown, report_json
    from kwire.pipeline._report_consumer import summarize_consumer

    e = worked_sequence()
    r = e.hb(9000, "B", 5)
    e.resp(9010, r, "B", 0, error=int(ErrorCode.FENCED_MEMBER_EPOCH))
    t = consumer_tables(consumer_timelines(e.table()))
    recs = t["reconciliations"].to_pandas()
    membership = [(r["kind"], r["error_code"], 1) for r in t["consumer_membership"].to_pylist()]
    s = {"frames": 30, "connections": 2, "bad_frames": 0, "decode_errors": 0, "inconsistent_frames": 0,
         "groups": 0, "rebalances": 0, "group_traffic": True, "bad_frame_kinds": [], "stall": {}, "triggers": [],
         "errors": [], "whatif": [], "whatif_failures": [], "reproduced": (0, 0), "top_groups": []}
    summarize_consumer(s, recs, membership, [], {"consumer": 1})
    c = s["consumer"]
    assert (c["groups"], c["reconciliations"], c["outcomes"]) == (1, 2, {"stable": 2})
    assert c["time_to_stable_ms"] == {"p50": 2500.0, "p95": 4750.0, "max": 5000.0}
    assert c["fencing"] == {"fenced": 1, "session_timeout": 0, "errors": {str(int(ErrorCode.FENCED_MEMBER_EPOCH)): 1},
                            "session_timeout_at_most_ms": None}
    md = render_markdown("c.parquet", s, {"stages": {}})
    assert "## Consumer-protocol groups (KIP-848)" in md and "110 FENCED_MEMBER_EPOCH" in md
    # Counts agree with their nouns, and with only consumer-protocol groups the classic figures say so.
    assert ("no classic-protocol group. With the consumer protocol: 1 group (none mixed), 2 reconciliations."
            in md)
    assert "1 group heartbeats with ConsumerGroupHeartbeat (not mixed;" in md
    assert "session timeout" in md and "was at most" not in md
    assert "no consumer-group rebalance" not in md and "no consumer-group traffic" not in md
    doc = json.loads(json.dumps(report_json("c.parquet", s, {"spark": {}, "stages": {}})))
    assert doc["consumer"]["partition_seconds_unowned"]["total"] == pytest.approx(7.02) and doc["group_traffic"]
    # A member the coordinator was seen removing bounds the session timeout by its silence.
    silent = tables(silent_b_handed_over())["consumer_membership"]
    summarize_consumer(s, recs, membership, [], {"consumer": 2}, min(r["silent_ms"] for r in silent
                                                                    if r["silent_ms"] is not None))
    md = render_markdown("c.parquet", s, {"stages": {}})
    assert "2 groups heartbeat with ConsumerGroupHeartbeat (none of them mixed" in md and "1 group (" not in md
    assert "was at most 6.01 s" in md
    # A capture with frames and no group at all says there was nothing to analyse.
    s.update(group_traffic=False)
    summarize_consumer(s, recs.iloc[:0], [], [], {})
    md = render_markdown("c.parquet", s, {"stages": {}})
    assert "no consumer-group traffic at all" in md and "nothing to analyse" in md
    assert "## Consumer-protocol groups" not in md
