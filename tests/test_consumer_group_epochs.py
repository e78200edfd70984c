"""The group's partition -> epoch map (``ConsumerGroup.maybeUpdatePartitionEpoch``): ``move_member``'s one-pass
update (``ConsumerGroup.shift_partitions``) leaves the map, and refuses, exactly as the full removal and addition
(``remove_partitions`` then ``add_partitions``) it stands for."""

import random

import pytest

from kwire.group._consumer_group import ConsumerGroup, ConsumerGroupMember, GroupInvariantError

TOPICS = [bytes([k]) * 16 for k in range(1, 4)]


def _assignment(rng, partitions=6):
    out = {}
    for topic in rng.sample(TOPICS, rng.randint(0, len(TOPICS))):
        # An entry with no partition is kept: add_partitions leaves an empty map for it.
        out[topic] = frozenset(rng.sample(range(partitions), rng.randint(0, 4)))
    return out


def _group(epochs):
    group = ConsumerGroup("g")
    group.partition_epochs = {t: dict(ps) for t, ps in epochs.items()}
    return group


def _full(group, member, state, epoch, assigned, pending):
    """move_member as it reads without the one-pass update."""
    if assigned == member.assigned and pending == member.pending and epoch == member.member_epoch:
        return
    group.remove_partitions(member.assigned, member.member_epoch)
    group.remove_partitions(member.pending, member.member_epoch)
    group.add_partitions(assigned, epoch)
    group.add_partitions(pending, epoch)


def _outcome(step):
    try:
        step()
    except GroupInvariantError as error:
        return str(error)
    return None


@pytest.mark.parametrize("seed", range(40))
def test_move_member_updates_the_partition_epochs_as_removing_then_adding_does(seed):
    rng = random.Random(seed)
    refused = 0
    for _ in range(200):
        old_epoch, epoch = rng.randint(1, 4), rng.randint(1, 5)
        assigned = _assignment(rng)
        pending = _assignment(rng) if rng.random() < 0.2 else {}
        # The others' partitions, at epochs that may or may not be the member's (then the move is refused).
        epochs = {}
        for source, at in ((assigned, old_epoch), (pending, old_epoch), (_assignment(rng), 9)):
            for topic, ps in source.items():
                held = epochs.setdefault(topic, {})
                for p in ps:
                    held[p] = at if rng.random() < 0.95 else at + 1
        if rng.random() < 0.1:
            epochs.pop(rng.choice(TOPICS), None)
        new_assigned = _assignment(rng) if rng.random() < 0.7 else assigned
        new_pending = _assignment(rng) if rng.random() < 0.2 else {}
        results = []
        for move in ("move_member", "full"):
            group = _group(epochs)
            member = ConsumerGroupMember("m")
            member.member_epoch, member.assigned, member.pending = old_epoch, assigned, pending
            if move == "full":
                outcome = _outcome(lambda: _full(group, member, member.state, epoch, new_assigned, new_pending))
            else:
                outcome = _outcome(lambda: group.move_member(member, member.state, epoch, old_epoch, new_assigned,
                                                             new_pending))
            results.append((outcome, group.partition_epochs))
        assert results[0] == results[1]
        refused += results[0][0] is not None
    assert 0 < refused < 200   # both refusals and successes were compared
