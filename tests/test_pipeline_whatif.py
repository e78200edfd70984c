"""The array what-if against the member-level replay it replaced, and the
batch (``replay_batch``) against the per-generation replay (``replay``).

The references are in tests/whatif_oracle.py: the member-level replay is the
replay as it was before it moved to arrays (GroupInput per strategy,
``assign_group``, dicts of tuples), kept only to check the array replay
gives the same rows on the sample capture and on synthetic ones, clean and
corrupt."""

from __future__ import annotations

import copy
import itertools
import os
from collections import Counter

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from kwire.pipeline._events import JOIN_GROUP, REQUEST, RESPONSE, STRATEGIES, SYNC_GROUP, WHATIF_SCHEMA
from kwire.pipeline._timeline import completed_generations, timelines_of, timelines_of_arrow
from kwire.pipeline import _whatif_batch as whatif_batch
from kwire.pipeline._whatif_batch import replay_batch, whatif_table
from kwire.pipeline._whatif_pack import replayed as replayed_generations
from kwire.pipeline._decode import decode_capture
from kwire.pipeline._synth import synth

from tests.analysis_frames import events_from_frames, whatif_of
from tests.whatif_oracle import packed_inputs, replay, replay_input, replay_inputs, whatif_group_input, whatif_rows

SAMPLE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples", "sample",
                      "capture.parquet")


def _oracle(events):
    rows = [r for tl in timelines_of(events) for r in whatif_rows(tl)]
    return _normalized(pd.DataFrame(rows, columns=WHATIF_SCHEMA.names))


def _normalized(df):
    df = df.astype(object).where(df.notna(), None)
    return sorted(tuple(r) for r in df.itertuples(index=False))


def _events(path):
    return events_from_frames(decode_capture(path))


def _same(events):
    new = whatif_of(events)
    assert _normalized(new) == _oracle(events)
    return new


def test_sample_capture_replays_as_before():
    wi = _same(_events(SAMPLE))
    assert (~wi.observed).sum() > 0


@pytest.mark.parametrize("seed, corrupt", [(3, 0.0), (11, 0.0), (7, 0.01)])
def test_synthetic_captures_replay_as_before(tmp_path, seed, corrupt):
    path = tmp_path / "synth.parquet"
    synth(path, groups=25, seed=seed, duration_s=300, corrupt_rate=corrupt)
    wi = _same(_events(path))
    replayed = wi[~wi.observed]
    assert set(replayed.strategy) == set(STRATEGIES) and replayed.moved.notna().any()


def test_the_arrow_path_gives_the_pandas_path_rows(tmp_path):

    path = tmp_path / "synth.parquet"
    synth(path, groups=8, seed=2, duration_s=200)
    events = _events(path)
    table = pa.Table.from_pandas(events, preserve_index=False)
    seconds = []

    class Timer:
        def add(self, s):
            seconds.append(s)

    wi = whatif_table(timelines_of_arrow(table), timer=Timer())
    assert _normalized(wi.to_pandas()) == _normalized(whatif_of(events))
    assert len(seconds) == 1 and seconds[0] > 0


# -- the batch against the per-generation replay --------------------------------------------------------


def _tampered(timelines, rng):
    """Timelines with what a capture can make of a generation beyond what the
    synthetic one gives: a member listed twice and a subscription to a
    topic that is no string (inputs kwire's assignors refuse, so error
    rows), an owned topic that is no string (only the sticky strategies
    claim it), a list received by a member named None (with a partition
    of a topic gone by the next generation: no owner then, no owner
    before), a partition received by two members, and lists received
    exactly as sticky gives them, which may not group topics (the
    Assignment bytes do; several assignment rows of one topic in a
    SyncGroup response would not)."""
    from kwire.assignors import assign_arrays

    for tl in timelines:
        prev = None
        for gg in completed_generations(tl):
            observed = gg.assignment or gg.leader_assignment
            if not gg.members or not observed:
                prev = gg if observed else prev
                continue
            roll = rng.random()
            first = next(iter(observed))
            if roll < 0.05:
                gg.members = gg.members + [gg.members[0]]
            elif roll < 0.1:
                mid, instance, topics = gg.members[0]
                gg.members = [(mid, instance, topics + (7,))] + gg.members[1:]
            elif roll < 0.15:
                observed[first] = list(observed[first]) + [(7, 0)]
            elif roll < 0.25:
                observed[None] = list(observed.pop(first)) + [("gone", 0)]
            elif roll < 0.35 and len(observed) > 1:
                other = list(observed)[1]
                if observed[other]:
                    observed[first] = list(observed[first]) + [observed[other][0]]
            elif roll < 0.6:
                group = replay_input(tl, gg, prev).sticky.group
                if group is not None:
                    answer = assign_arrays("sticky", group).to_dict()
                    observed.clear()
                    observed.update(answer)
            prev = gg
    return timelines


def _per_generation(inputs, strategies, implementation):
    rows: list = []
    for inp in inputs:
        replay(inp, rows, strategies, implementation)
    columns = list(zip(*rows)) if rows else [()] * len(WHATIF_SCHEMA)
    return pa.Table.from_arrays([pa.array(c, type=f.type) for c, f in zip(columns, WHATIF_SCHEMA)],
                                schema=WHATIF_SCHEMA)


def _batch_is_per_generation(inputs, strategies, implementation):
    batch = replay_batch(packed_inputs(inputs), strategies, implementation)
    reference = _per_generation(inputs, strategies, implementation)
    assert batch.num_rows == reference.num_rows == len(inputs) * (len(strategies) + 1)
    for i, (got, want) in enumerate(zip(batch.to_pylist(), reference.to_pylist())):
        assert got == want, i
    assert batch.schema == reference.schema
    return batch


@pytest.mark.parametrize("seed, corrupt, implementation", [(3, 0.0, None), (7, 0.01, None), (5, 0.05, "python")])
def test_the_batch_gives_the_per_generation_rows(tmp_path, seed, corrupt, implementation):
    import random

    path = tmp_path / "synth.parquet"
    synth(path, groups=25, seed=seed, duration_s=300, corrupt_rate=corrupt)
    timelines = _tampered(list(timelines_of(_events(path))), random.Random(seed))
    inputs = [inp for tl in timelines for inp in replay_inputs(tl)]
    batch = _batch_is_per_generation(inputs, STRATEGIES, implementation)
    # The cases the tampering is for did happen, so the comparison covered them.
    errors = Counter(e.split(":")[0] for e in batch.column("error").to_pylist() if e is not None)
    assert errors["AssignmentError"] >= 4
    assert any(inp.none_code >= 0 and inp.has_prev for inp in inputs)
    assert any(len(inp.obs_keys) < len(inp.obs_lists) for inp in inputs)  # a partition received twice
    ungrouped = [inp for inp in inputs
                 if any(len(set(t)) < len([k for k, _ in itertools.groupby(t)])
                        for t in np.split(inp.obs_lists >> 32, np.cumsum(inp.obs_counts)[:-1]))]
    assert ungrouped
    wi = batch.to_pandas()
    refused = wi[~wi.observed & wi.error.notna()].strategy.value_counts()
    assert refused["sticky"] > refused["range"]  # an owned topic refused, the subscriptions fine
    replayed = wi[~wi.observed & wi.error.isna()]
    assert replayed.reproduces_observed.any() and not replayed.reproduces_observed.all()
    assert replayed.moved.notna().any() and (replayed.moved > 0).any()


def test_the_batch_in_blocks_gives_the_per_generation_rows(tmp_path, monkeypatch):
    """A batch longer than a block is replayed block by block; its rows are
    still the per-generation ones, in order (blocks of 7 here, so that
    refused groups, errors and sticky fallbacks fall in several blocks)."""
    import random

    path = tmp_path / "synth.parquet"
    synth(path, groups=25, seed=11, duration_s=300, corrupt_rate=0.01)
    timelines = _tampered(list(timelines_of(_events(path))), random.Random(11))
    inputs = [inp for tl in timelines for inp in replay_inputs(tl)]
    monkeypatch.setattr(whatif_batch, "_BLOCK", 7)
    assert len(inputs) > 3 * 7
    batch = _batch_is_per_generation(inputs, STRATEGIES, None)
    assert batch.column("error").null_count < batch.num_rows  # errors, in some block


def test_the_batch_runs_any_strategies_and_none(tmp_path):
    path = tmp_path / "synth.parquet"
    synth(path, groups=6, seed=4, duration_s=200)
    inputs = [inp for tl in timelines_of(_events(path)) for inp in replay_inputs(tl)]
    # without the sticky pair, each sticky strategy runs on its own
    _batch_is_per_generation(inputs, ("cooperative-sticky", "range"), None)
    _batch_is_per_generation(inputs, (), None)
    assert replay_batch(packed_inputs([]), STRATEGIES).equals(WHATIF_SCHEMA.empty_table())


@pytest.mark.parametrize("seed, corrupt", [(3, 0.0), (5, 0.05)])
def test_packed_groups_are_those_of_the_member_level_input(tmp_path, seed, corrupt):
    """Each generation's packed ArrayGroups, the plain one and the sticky one
    (which shares the plain one's topic layout where it can), are what
    ``ArrayGroup.from_group_input`` makes of the member-level input the
    oracle above replays, or are refused where it is; on tampered timelines too."""
    import random

    from kwire.assignors import ArrayGroup
    from kwire.errors import KwireError

    path = tmp_path / "synth.parquet"
    synth(path, groups=25, seed=seed, duration_s=300, corrupt_rate=corrupt)
    timelines = _tampered(list(timelines_of(_events(path))), random.Random(seed))
    columns = ("partition_counts", "sub_indptr", "sub_topics", "owned_indptr", "owned_topic", "owned_partition",
               "generation", "subscription_generation")
    shared = 0
    for tl in timelines:
        prev = None
        for gg in completed_generations(tl):
            observed = gg.assignment or gg.leader_assignment
            if gg.members and observed:
                inp = replay_input(tl, gg, prev)
                shared += inp.sticky is not inp.plain and inp.sticky.topic_ids is inp.plain.topic_ids
                for strategy, variant in (("range", inp.plain), ("sticky", inp.sticky)):
                    try:
                        want = ArrayGroup.from_group_input(whatif_group_input(strategy, gg, prev, gg.partition_counts))
                    except KwireError:
                        # refused either way (the member-level checks word some refusals otherwise)
                        assert variant.group is None and variant.error is not None
                        continue
                    got = variant.group
                    assert got is not None, variant.error
                    assert (got.topics, got.member_ids, got.group_instance_ids) == (
                        want.topics, want.member_ids, want.group_instance_ids)
                    for name in columns:
                        assert np.array_equal(getattr(got, name), getattr(want, name)), name
            if observed:
                prev = gg
    assert shared


# -- the columnar packing against the per-generation one ------------------------------------------------
#
# The pipeline packs the what-if straight from a bucket's Arrow event
# columns (pack_replayed); replay_input packs one generation at a time from
# its member-level fields, and replay its rows one at a time.  The events
# are tampered with as Arrow rows (not as Generation objects, which the
# columnar packing does not read), so that every case the timeline's rules
# decide reaches both.


def _typed_events(path):
    """The events of a capture as Arrow, their nested columns in the decoder's types."""
    from kwire.pipeline._decode import FRAMES_SCHEMA

    table = pa.Table.from_pandas(_events(path), preserve_index=False)
    schema = pa.schema([FRAMES_SCHEMA().field(f.name) if f.name in ("members", "assignments") else f
                        for f in table.schema])
    return table.cast(schema)


def _tampered_events(table, rng):
    """``table`` with what a capture can make of a generation's frames: a
    member listed twice, a member id or a topic that is None, a member that
    drops a topic it owned (its claim is then of a topic it does not
    subscribe to) or subscribes to one nobody assigns (no size), a partition
    listed twice (in one list, or in another member's), an assignment that
    names no member (its frame's member owns it) or whose frame names none
    either (a None owner), a list given to another member, and SyncGroup
    responses or leader requests that were not captured."""

    def join(members):
        return rng.choice([
            lambda: members.append(dict(members[0])),
            lambda: members[-1].update(member_id=None),
            lambda: members[0].update(topics=list(members[0]["topics"] or ()) + [None]),
            lambda: members[0].update(topics=list(members[0]["topics"] or ())[1:]),
            lambda: members[-1].update(topics=list(members[-1]["topics"] or ()) + ["ghost"]),
        ])()

    def sync(row, sent):
        first, last = sent[0], sent[-1]
        return rng.choice([
            lambda: first.update(partitions=list(first["partitions"]) + list(first["partitions"][:1])),
            lambda: first.update(partitions=list(first["partitions"]) + [0, 1]),
            lambda: first.update(member_id=None),  # the frame's member is the owner
            lambda: (first.update(member_id=None), row.update(member_id=None)),
            lambda: (first.update(member_id=None, topic=None), row.update(member_id=None)),
            lambda: last.update(partitions=list(last["partitions"]) + list(first["partitions"])),
            lambda: first.update(member_id=last["member_id"]),
        ])()

    rows = []
    events = table.to_pylist()
    # generations none of whose SyncGroup responses was captured: the leader's request tells the assignment
    led = sorted({(r["group_id"], r["generation_id"]) for r in events if r["api_key"] == SYNC_GROUP
                  and r["direction"] == REQUEST and r["assignments"]})
    unanswered = set(rng.sample(led, len(led) // 8))
    for row in events:
        roll = rng.random()
        if row["api_key"] == JOIN_GROUP and row["members"] and roll < 0.4:
            join(row["members"])
        elif row["api_key"] == SYNC_GROUP and (row["group_id"], row["generation_id"]) in unanswered:
            if row["direction"] == RESPONSE:
                continue
            if roll < 0.5 and len(row["assignments"]) > 1:
                # the leader sent again, the same seq: a later request replaces the earlier one
                again = copy.deepcopy(row)
                owners = [a["member_id"] for a in again["assignments"]]
                for a, owner in zip(again["assignments"], owners[1:] + owners[:1]):
                    a["member_id"] = owner
                rows += [row, again]
                continue
        elif row["api_key"] == SYNC_GROUP and row["assignments"] and roll < 0.5:
            if roll < 0.1:
                continue  # not captured
            sync(row, row["assignments"])
        rows.append(row)
    return pa.Table.from_pylist(rows, schema=table.schema)


def _columnar_is_per_generation(events):
    """The what-if of ``events`` packed from their columns, against the
    per-generation reference on the same timelines; returns the timelines,
    the reference's inputs and its table."""
    timelines = list(timelines_of_arrow(events))
    inputs = [inp for tl in timelines for inp in replay_inputs(tl)]
    reference = _per_generation(inputs, STRATEGIES, None)
    got = whatif_table(timelines)
    assert got.num_rows == reference.num_rows == len(inputs) * (len(STRATEGIES) + 1)
    for i, (row, want) in enumerate(zip(got.to_pylist(), reference.to_pylist())):
        assert row == want, i
    assert got.equals(reference)
    # the same from event dicts (build_timeline, each group's source made Arrow), as pandas gives them
    assert whatif_table(timelines_of(events.to_pandas())).equals(reference)
    return timelines, inputs, reference


@pytest.mark.parametrize("seed, corrupt", [(3, 0.0), (7, 0.01), (5, 0.2)])
def test_the_columnar_packing_gives_the_per_generation_rows(tmp_path, seed, corrupt):
    path = tmp_path / "synth.parquet"
    synth(path, groups=25, seed=seed, duration_s=300, corrupt_rate=corrupt)
    _timelines, inputs, table = _columnar_is_per_generation(_typed_events(path))
    assert len(inputs) > 50 and table.column("moved").null_count < table.num_rows


@pytest.mark.parametrize("seed", [11, 12])
def test_the_columnar_packing_on_tampered_events(tmp_path, seed):
    import random

    path = tmp_path / "synth.parquet"
    synth(path, groups=25, seed=seed, duration_s=300, corrupt_rate=0.01)
    events = _tampered_events(_typed_events(path), random.Random(seed))
    timelines, inputs, table = _columnar_is_per_generation(events)
    # The cases the tampering is for reached the replay, so the comparison covered them.
    errors = Counter(e for e in table.column("error").to_pylist() if e is not None)
    assert any("appears more than once" in e for e in errors)
    assert any(e.startswith("AssignmentError: member ids must be str") for e in errors)
    assert any(e == "AssignmentError: topic names must be str, got None" for e in errors)
    assert any(len(inp.obs_keys) < len(inp.obs_lists) for inp in inputs)  # a partition listed twice
    assert any(inp.none_code >= 0 and inp.has_prev for inp in inputs)  # a None owner, before or now
    claims_more = [inp for inp in inputs if inp.sticky.group is not None and inp.plain.group is not None
                   and inp.sticky.group.topics != inp.plain.group.topics]
    assert claims_more  # a member claims a topic it no longer subscribes to
    assert any((inp.plain.group.partition_counts == 0).any() for inp in inputs if inp.plain.group is not None)
    from_leader = [gg for tl in timelines for gg, _prev in replayed_generations(tl)
                   if not gg.assignment and gg.leader_assignment]
    assert from_leader  # observed from the leader's request: its members' responses were not captured
    sent_twice = Counter(s for s, k in zip(events.column("seq").to_pylist(), events.column("api_key").to_pylist())
                         if k == SYNC_GROUP)
    assert max(sent_twice.values()) > 1  # a leader request sent again, replacing the first
    replayed = table.filter(pa.compute.invert(table.column("observed")))
    assert replayed.column("error").null_count > replayed.num_rows // 2  # most generations still replay
