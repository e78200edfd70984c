"""The migration what-if without Spark: membership histories replayed under the other protocol, on small
hand-made histories whose stall can be worked out by hand, and classic histories read from a capture with
known history."""

import numpy as np
import pytest

pytest.importorskip("pyarrow")
pytest.importorskip("pandas")

import pyarrow as pa  # noqa: E402

from kwire.errors import ArgumentValueError  # noqa: E402
from kwire.pipeline._decode import decode_capture  # noqa: E402
from kwire.pipeline._events import EVENT_COLUMNS  # noqa: E402
from kwire.pipeline._membership import MemberEvent, history  # noqa: E402
from kwire.pipeline._migrate_classic import simulate_classic  # noqa: E402
from kwire.pipeline._migrate_consumer import simulate_consumer  # noqa: E402
from kwire.pipeline._migrate_history import classic_histories  # noqa: E402
from kwire.pipeline._migrate_table import MIGRATION_SCHEMA, migration_rows  # noqa: E402

from tests.analysis_frames import events_from_frames  # noqa: E402
from tests.pipeline_captures import generated_and_damaged, scripted_capture  # noqa: E402

MS = 1000            # µs
SECOND = 1000 * MS
LATENCY = 2 * MS     # every member's request-to-response time: 1 ms each way
SESSION_MS = 45000
JOIN, LEAVE, CRASH, SUBSCRIBE = MemberEvent.JOIN, MemberEvent.LEAVE, MemberEvent.CRASH, MemberEvent.SUBSCRIBE


def two_then_three(join_at):
    """a and b form a group on one topic of 6 partitions at 0; c joins at ``join_at`` (µs)."""
    return history("g", "classic", [("t", 6)], [(m, LATENCY, SESSION_MS) for m in "abc"],
                   [(0, 0, JOIN, (0,), 0), (0, 1, JOIN, (0,), 0), (join_at, 2, JOIN, (0,), 1)],
                   [(0, 1, 0.0, 0), (join_at, 2, 0.0, 0)])


def crash_of_b(crash_at):
    return history("g", "classic", [("t", 6)], [(m, LATENCY, SESSION_MS) for m in "ab"],
                   [(0, 0, JOIN, (0,), 0), (0, 1, JOIN, (0,), 0), (crash_at, 1, CRASH, (), 1)],
                   [(0, 1, 0.0, 0), (crash_at, 2, 0.0, 0)])


# -- the consumer protocol ------------------------------------------------------------------------------

def test_consumer_protocol_join_unowns_only_the_moving_partitions_until_the_joiner_s_next_heartbeat():
    """Worked by hand, in ms, with 1 ms each way and the 5 s heartbeat interval.

    Formation: a's and b's joins reach the coordinator at 1 (a's first): a gets all 6 at epoch 1, b joins at
    epoch 2 with nothing (a still holds its share).  a acknowledges at once at 2 and is told at 4 to revoke
    3 partitions; it acknowledges at 4, which frees them at 5; b's next heartbeat goes at 5000 and gets them
    at 5002.  Unowned: all 6 from 0 to 2, and 3 from 4 to 5002: 6 × 2 + 3 × 4998 ms = 15.006 partition-s;
    stable at 5002.  From then a heartbeats at 4 + 5000k, b at 2 + 5000k.

    c joins at 101000 (its own heartbeats then go at 101000 + 5000k): it gets epoch 3 and nothing.  b sends
    at 105002 and a at 105004: each is told to give up one partition, revokes it on the answer (105004,
    105006) and acknowledges.  c's next heartbeat at 106000 gets both at 106002.  Unowned: (106002 - 105004)
    + (106002 - 105006) ms = 1.994 partition-s; the other 4 partitions are never unowned.  Stable at 106002,
    5002 ms after c's join."""
    result = simulate_consumer(two_then_three(101000 * MS))
    assert result.protocol == "consumer"
    np.testing.assert_allclose(result.unowned_ps, [15.006, 1.994], atol=1e-9)
    assert result.stable_us.tolist() == [5002 * MS, 5002 * MS]
    # joins, acks and the heartbeats of the rebalances, not the steady heartbeats in between
    assert 0 < result.total_member_events < 20


def test_consumer_protocol_crash_costs_the_session_timeout():
    """b's heartbeats go at 2 + 5000k ms (see above).  It goes silent at 100002.5, just after one was
    handled at 100003: its session is fenced at 145003, a's next heartbeat (145004, handled at 145005)
    computes a target giving a all 6, received at 145006.  b's 3 partitions are unowned from 100002.5 to
    145006: 3 × 45003.5 ms."""
    result = simulate_consumer(crash_of_b(100_002_500))
    np.testing.assert_allclose(result.unowned_ps[1], 3 * 45.0035, atol=1e-9)
    assert result.stable_us[1] == 45003_500


# -- the classic protocol -------------------------------------------------------------------------------

def test_classic_eager_formation_waits_the_initial_delay_with_every_partition_unowned():
    """Formation, in ms: FindCoordinator answered at 2, JoinGroup at 2 gets MEMBER_ID_REQUIRED at 4, the
    rejoins reach the coordinator at 5 and start ``group.initial.rebalance.delay.ms`` (3000), which is
    extended once since members were added during it (``GroupMetadataManager``'s initial delayed join):
    the join completes at 6005, SyncGroup answers at 6008.  All 6 partitions unowned from 0 to 6008."""
    result = simulate_classic(two_then_three(101000 * MS), cooperative=False)
    np.testing.assert_allclose(result.unowned_ps[0], 6 * 6.008, atol=1e-9)
    assert result.stable_us[0] == 6008 * MS


def test_classic_eager_join_unowns_every_partition_for_the_rebalance():
    """a and b heartbeat in the same phase, so both learn of c's JoinGroup from the same heartbeat answer,
    revoke all their partitions there and rejoin: JoinGroup then SyncGroup, two round trips of 2 ms, during
    which all 6 partitions are unowned, whenever in the heartbeat interval c joined."""
    for join_at in (101000 * MS, 101700 * MS, 102900 * MS):
        result = simulate_classic(two_then_three(join_at), cooperative=False)
        assert result.protocol == "classic-eager"
        np.testing.assert_allclose(result.unowned_ps[1], 6 * 0.004, atol=1e-9)
        # c's join, then at most one heartbeat interval before a and b hear of it, then the two round trips
        assert 6 * MS < result.stable_us[1] <= (3000 + 12) * MS


def test_classic_cooperative_join_unowns_only_the_moving_partitions():
    eager = simulate_classic(two_then_three(101000 * MS), cooperative=False)
    coop = simulate_classic(two_then_three(101000 * MS), cooperative=True)
    assert coop.protocol == "classic-cooperative"
    # Two partitions move (2 of 6 to c); each is revoked at its owner's first SyncGroup answer and assigned
    # in the follow-up rebalance: at least its two round trips, at most a heartbeat interval more.
    assert 2 * 0.004 <= coop.unowned_ps[1] <= 2 * 3.012
    assert coop.member_events[1] > eager.member_events[1]   # the follow-up rebalance's requests


@pytest.mark.parametrize("cooperative", [False, True])
def test_classic_crash_costs_the_session_timeout(cooperative):
    """b goes silent: the coordinator expels it one session after its last heartbeat, and a hears of the
    rebalance at its next heartbeat (3 s interval).  b's 3 partitions are unowned all that time."""
    result = simulate_classic(crash_of_b(100_002_500), cooperative=cooperative)
    assert 3 * (45.0 - 3.0) <= result.unowned_ps[1] <= 6 * (45.0 + 3.1)
    assert (45000 - 3000) * MS <= result.stable_us[1] <= (45000 + 3100) * MS


def test_a_leave_is_faster_than_a_crash_under_both_protocols():
    leave = history("g", "classic", [("t", 6)], [(m, LATENCY, SESSION_MS) for m in "ab"],
                    [(0, 0, JOIN, (0,), 0), (0, 1, JOIN, (0,), 0), (100_002_500, 1, LEAVE, (), 1)],
                    [(0, 1, 0.0, 0), (100_002_500, 2, 0.0, 0)])
    crash = crash_of_b(100_002_500)
    for simulate in (simulate_consumer, lambda h: simulate_classic(h, cooperative=False)):
        gone, silent = simulate(leave), simulate(crash)
        assert gone.stable_us[1] < 10 * SECOND < 40 * SECOND < silent.stable_us[1]
        assert gone.unowned_ps[1] < silent.unowned_ps[1]


def test_a_subscription_change_reaches_both_protocols():
    h = history("g", "classic", [("t", 4), ("u", 2)], [(m, LATENCY, SESSION_MS) for m in "ab"],
                [(0, 0, JOIN, (0,), 0), (0, 1, JOIN, (0,), 0), (60 * SECOND, 0, SUBSCRIBE, (0, 1), 1)],
                [(0, 1, 0.0, 0), (60 * SECOND, 2, 0.0, 0)])
    for result in (simulate_consumer(h), simulate_classic(h, cooperative=False)):
        # topic u's 2 partitions are unowned from the change until someone is assigned them
        assert result.unowned_ps[1] > 0 and 0 < result.stable_us[1] < 10 * SECOND


def test_the_replays_are_deterministic():
    h = two_then_three(101300 * MS)
    for simulate in (simulate_consumer, lambda x: simulate_classic(x, cooperative=True)):
        first, second = simulate(h), simulate(h)
        for a, b in zip(first, second):
            assert np.array_equal(a, b) if isinstance(a, np.ndarray) else a == b


def test_a_bad_history_is_a_typed_error():
    with pytest.raises(ArgumentValueError, match="member that is not in member_ids"):
        history("g", "classic", [("t", 6)], [("a", LATENCY, SESSION_MS)], [(0, 3, JOIN, (0,), -1)])
    with pytest.raises(ArgumentValueError, match="beyond the 1 topics"):
        history("g", "classic", [("t", 6)], [("a", LATENCY, SESSION_MS)], [(0, 0, JOIN, (4,), -1)])
    with pytest.raises(ArgumentValueError, match="protocol"):
        history("g", "kip848", [("t", 6)], [("a", LATENCY, SESSION_MS)], [(0, 0, JOIN, (0,), -1)])


# -- classic histories from a capture ------------------------------------------------------------------

@pytest.fixture(scope="module")
def scripted_histories(tmp_path_factory):
    path = tmp_path_factory.mktemp("migrate") / "capture.parquet"
    sims = scripted_capture(path, extra=generated_and_damaged)
    events = events_from_frames(decode_capture(path))
    table = pa.Table.from_pandas(events[EVENT_COLUMNS], preserve_index=False)
    return sims, {h.group_id: h for h in classic_histories(table)}


def test_classic_history_follows_the_scripted_group(scripted_histories):
    (sim, _coop, _members), histories = scripted_histories
    h = histories["orders-app"]
    assert h.protocol == "classic" and h.assignor == "range"
    assert h.topics == ["t", "u"] and h.partition_counts.tolist() == [6, 2]
    kinds = [(MemberEvent(k), int(r)) for k, r in zip(h.event_kind, h.event_rebalance)]
    # A, B, C join (generation 1), D joins (2), B leaves (3), C crashes (4), A subscribes to u (5)
    assert kinds == [(JOIN, 0)] * 3 + [(JOIN, 1), (LEAVE, 2), (CRASH, 3), (SUBSCRIBE, 4)]
    assert h.event_topics[-1] == (0, 1)
    assert h.rebalance_epoch.tolist() == [1, 2, 3, 4, 5]
    assert set(h.session_timeout_ms.tolist()) == {10000}
    assert (h.latency_us > 0).all()
    # The crash: from C's last heartbeat to the generation after its session ran out, at least the session.
    assert h.rebalance_stable_us[3] >= 10000 * MS - 3000 * MS
    # range is eager: every partition is unowned in every rebalance
    assert (h.rebalance_unowned_ps > 0).all()
    h.validate()


def test_migration_rows_keep_each_rebalance_beside_its_replay(scripted_histories):
    _sims, histories = scripted_histories
    h = histories["orders-app"]
    table = migration_rows([h])
    assert table.schema == MIGRATION_SCHEMA and table.num_rows == h.n_rebalances
    rows = table.to_pylist()
    assert {r["observed_protocol"] for r in rows} == {"classic-eager"}
    assert {r["simulated_protocol"] for r in rows} == {"consumer"}
    for r, observed in zip(rows, h.rebalance_unowned_ps):
        assert r["unowned_ps_observed"] == observed and r["error"] is None
        assert r["unowned_ps_difference"] == pytest.approx(r["unowned_ps_simulated"] - r["unowned_ps_observed"])
        assert r["member_events"] > 0
    # the crash costs its session timeout (10 s) under the consumer protocol too
    assert rows[3]["stable_ms_simulated"] >= 10000 - 5000
    coop = histories["coop-app"]
    assert migration_rows([coop]).column("observed_protocol").to_pylist()[0] == "classic-cooperative"


def test_consumer_histories_replay_under_both_classic_protocols():
    h = two_then_three(101000 * MS)._replace(protocol="consumer")
    rows = migration_rows([h]).to_pylist()
    assert [(r["rebalance"], r["simulated_protocol"]) for r in rows] == [
        (0, "classic-eager"), (1, "classic-eager"), (0, "classic-cooperative"), (1, "classic-cooperative")]
    assert rows[1]["unowned_ps_simulated"] == pytest.approx(0.024)


def test_no_partition_is_ever_consumed_twice_in_the_replays(scripted_histories):
    """Each replay's ledger, checked after every step: a protocol gives a partition only once its old owner
    let it go (the consumer protocol's two-owner invariant; classic: revocation before the next SyncGroup)."""
    from kwire.pipeline._migrate_classic import ClassicReplay
    from kwire.pipeline._migrate_consumer import ConsumerReplay

    def checked(replay_class):
        # A subclass, not a function set on the instance: compiled, a replay is a C class without a __dict__.
        class Checked(replay_class):
            steps = 0

            def handle(self, entry):
                replay_class.handle(self, entry)
                self.steps += 1
                assert not self.ledger.double_owned(), (self.h.group_id, self.protocol, entry[0])

        return Checked

    consumer, classic = checked(ConsumerReplay), checked(ClassicReplay)
    _sims, histories = scripted_histories
    for h in histories.values():
        for replay in (consumer(h, 5000, None, 0, None), classic(h, False, 3000, 3000, None),
                       classic(h, True, 3000, 3000, None)):
            replay.run()
            assert replay.steps > 0   # every step went through the check


def test_the_report_section_and_its_chart(scripted_histories):
    from kwire.pipeline._report_migration import migration_chart, migration_markdown, summarize_migration

    _sims, histories = scripted_histories
    consumer = two_then_three(101000 * MS)._replace(group_id="kip", protocol="consumer")
    pdf = migration_rows([histories["orders-app"], consumer]).to_pandas()
    summary = summarize_migration(pdf)
    assert summary["rows"] == 5 + 2 * 2 and summary["groups"] == 2 and summary["failed_groups"] == 0
    eager = [d for d in summary["directions"] if d["observed_protocol"] == "classic-eager"][0]
    assert eager["rebalances"] == 5
    assert eager["unowned_ps_observed"] == pytest.approx(float(histories["orders-app"].rebalance_unowned_ps.sum()))
    # every observed rebalance once in the observed distribution, every replayed one in its protocol's
    assert sum(summary["distribution"]["observed"]["classic-eager"]) == 5
    assert sum(summary["distribution"]["observed"]["consumer"]) == 2
    assert sum(summary["distribution"]["simulated"]["classic-cooperative"]) == 2
    lines = []
    migration_markdown(lines, summary, "chart-migration.png")
    text = "\n".join(lines)
    assert "| classic-eager | consumer | 1 | 5 |" in text and "| orders-app | classic-eager | consumer | 5 |" in text
    assert "![stall distribution under both protocols](chart-migration.png)" in text
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg", force=True)
    from matplotlib import pyplot as plt

    fig = migration_chart(plt, summary)
    # two observed protocols and three simulated ones, a bar per bin each
    assert len(fig.axes[0].patches) == 5 * (len(summary["distribution"]["bin_edges"]) - 1)
    plt.close(fig)


def test_a_replay_that_does_not_finish_is_an_error_row_not_an_abort(monkeypatch):
    from kwire.pipeline import _migrate_loop

    monkeypatch.setattr(_migrate_loop, "STEP_BUDGET_BASE", 5)
    monkeypatch.setattr(_migrate_loop, "STEP_BUDGET_PER_EVENT_MEMBER", 1)
    with pytest.raises(_migrate_loop.ReplayError, match="did not finish"):
        simulate_consumer(two_then_three(101000 * MS))
    rows = migration_rows([two_then_three(101000 * MS)]).to_pylist()
    assert len(rows) == 2 and all("ReplayError" in r["error"] for r in rows)
    assert all(r["unowned_ps_simulated"] is None and r["unowned_ps_observed"] == 0.0 for r in rows)


def test_every_group_of_a_capture_is_replayed(scripted_histories):
    _sims, histories = scripted_histories
    assert len(histories) == 6
    rows = migration_rows(histories.values()).to_pylist()
    assert rows and not [r for r in rows if r["error"]]
    assert len(rows) == sum(h.n_rebalances for h in histories.values())
    stale = histories["stale-app"]
    assert stale.partition_counts.tolist() == [12]   # Metadata's size, beyond the leader's view of 8


def test_migration_rows_time_the_simulations_in_wall_and_cpu_seconds(scripted_histories):
    class Sum:
        value = 0.0

        def add(self, seconds):
            self.value += seconds

    _sims, histories = scripted_histories
    wall, cpu = Sum(), Sum()
    migration_rows([histories["orders-app"], histories["coop-app"]], wall, cpu)
    # CPU seconds of this process never exceed the wall seconds they were spent in (a replay is one thread).
    assert 0 < cpu.value <= wall.value + 0.01
