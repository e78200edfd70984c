"""The states of both group machines as values a caller compares: GroupState and MemberState, str-valued
enums exported from kwire.group, equal to the strings earlier versions used; and every move of either
machine goes through its transition table."""

import ast
import inspect
import os

import pytest

import kwire.group
from kwire.group import ConsumerMember, GroupState, MemberState
from tests.group_loop import Loop
from tests.group_net import Net

TOPICS = {"t": 4}


def formed_group(n=2):
    loop = Loop(initial_rebalance_delay_ms=100)
    for i in range(n):
        loop.add(f"m{i}", "g", ["t"], partitions_per_topic=TOPICS, session_timeout_ms=10_000,
                 heartbeat_interval_ms=1_000)
    loop.run_until(lambda: all(m.state == MemberState.STABLE and m.owned for m in loop.members.values()), 30_000)
    return loop


def test_a_member_of_a_formed_group_is_stable_by_the_enum_and_by_the_old_string():
    loop = formed_group()
    for member in loop.members.values():
        assert member.state == kwire.group.MemberState.STABLE
        assert member.state == "STABLE" and member.state is MemberState.STABLE
        assert isinstance(member.state, str) and str(member.state) == "STABLE" and f"{member.state}" == "STABLE"
    view = loop.coordinator.describe_group("g")
    assert view.state == kwire.group.GroupState.STABLE and view.state == "Stable"
    assert loop.coordinator.list_groups() == [("g", "consumer", GroupState.STABLE, "classic")]


def test_the_coordinators_group_state_in_each_phase():
    net = Net()
    assert net.state() is None
    ids, gen, leader = net.stable_group(2)
    assert net.state() is GroupState.STABLE
    net.join(leader)
    assert net.state() is GroupState.PREPARING_REBALANCE and net.state() == "PreparingRebalance"
    net.join(next(m for m in ids if m != leader))
    assert net.state() is GroupState.COMPLETING_REBALANCE and net.state() == "CompletingRebalance"
    net.leave(*[(m, None) for m in ids])
    assert net.state() is GroupState.EMPTY and net.state() == "Empty"


def test_the_old_names_are_the_enum_members():
    # The coordinator's constants as before (kwire.group.STABLE == "Stable"), now members of GroupState.
    assert [kwire.group.EMPTY, kwire.group.PREPARING_REBALANCE, kwire.group.COMPLETING_REBALANCE,
            kwire.group.STABLE, kwire.group.DEAD] == list(GroupState)
    assert [s.value for s in GroupState] == ["Empty", "PreparingRebalance", "CompletingRebalance", "Stable", "Dead"]
    assert [s.value for s in MemberState] == ["UNJOINED", "PREPARING_REBALANCE", "COMPLETING_REBALANCE", "STABLE",
                                              "CLOSED", "FAILED"]
    assert "Stable" == GroupState.STABLE and GroupState("Stable") is GroupState.STABLE
    assert hash(GroupState.STABLE) == hash("Stable") and {"Stable": 1}[GroupState.STABLE] == 1
    # The member's and the coordinator's Stable are different strings, so neither compares to the other's.
    assert MemberState.STABLE != GroupState.STABLE


def _state_assignments(cls):
    """``(method, line)`` of every ``self.state = ...`` in a class's source."""
    # The module's .py source, read as a file: a module that runs compiled (kwire/_compiled.py) has no source
    # for inspect to give.
    module = inspect.getmodule(cls)
    source = os.path.join(os.path.dirname(module.__file__), module.__name__.rpartition(".")[2] + ".py")
    with open(source, encoding="utf-8") as fh:
        tree = ast.parse(fh.read())
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and node.name == cls.__name__:
            for fn in node.body:
                if not isinstance(fn, ast.FunctionDef):
                    continue
                for stmt in ast.walk(fn):
                    targets = stmt.targets if isinstance(stmt, ast.Assign) else \
                        [stmt.target] if isinstance(stmt, (ast.AugAssign, ast.AnnAssign)) else []
                    for t in targets:
                        if isinstance(t, ast.Attribute) and t.attr == "state":
                            out.append((fn.name, stmt.lineno))
    return out


@pytest.mark.parametrize("cls, mover", [(ConsumerMember, "_to"), (kwire.group.GroupCoordinator, None)])
def test_every_state_change_goes_through_the_transition_table(cls, mover):
    # The member's state is written in __init__ (the start) and in _to (the table's check) alone; the
    # coordinator never writes a group's state itself (ClassicGroup.to does, with its table).
    allowed = {"__init__", mover} if mover else set()
    assert {name for name, _ in _state_assignments(cls)} <= allowed
    if mover:
        assert mover in {name for name, _ in _state_assignments(cls)}


def test_the_member_table_names_every_state_and_ends_are_final():
    from kwire.group._member import _ALLOWED_FROM

    assert set(_ALLOWED_FROM) == set(MemberState)
    assert all(MemberState.CLOSED not in sources and MemberState.FAILED not in sources
               for sources in _ALLOWED_FROM.values())


def test_an_illegal_member_transition_raises():
    member = ConsumerMember("g", ["t"])
    assert member.state is MemberState.UNJOINED
    with pytest.raises(AssertionError, match="illegal transition UNJOINED -> STABLE"):
        member._to(MemberState.STABLE)
    with pytest.raises(AssertionError, match="illegal transition UNJOINED -> COMPLETING_REBALANCE"):
        member._to(MemberState.COMPLETING_REBALANCE)
    assert member.state is MemberState.UNJOINED
    member.close(0)
    assert member.state is MemberState.CLOSED
    for target in MemberState:
        with pytest.raises(AssertionError, match="illegal transition CLOSED"):
            member._to(target)  # nothing leaves an end state


def test_an_illegal_group_transition_raises():
    net = Net()
    net.stable_group(2)
    view_before = net.view()
    group_of = net.c.describe_group  # the public view cannot move a group; the group object can
    group = next(g for g in net.c._groups.values() if g.group_id == "g")
    with pytest.raises(AssertionError, match="illegal transition Stable -> Empty"):
        group.to(GroupState.EMPTY, net.now)
    assert group_of("g") == view_before
