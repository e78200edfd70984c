"""Golden-case loading shared by the sticky test modules."""

import importlib
from pathlib import Path

import pytest

from kwire import _impl
from kwire.assignors._model import GroupInput
from kwire.assignors._userdata import cooperative_member_input, sticky_member_input
from tests._data import GOLDEN_PATH, golden_cases

STICKY_STRATEGIES = ("sticky", "cooperative-sticky")


def golden_path() -> Path:
    assert GOLDEN_PATH.exists(), f"{GOLDEN_PATH} is part of the repository"
    return GOLDEN_PATH


def load_cases(strategies=STICKY_STRATEGIES):
    return golden_cases(strategies)


def member_from_golden(strategy, m, *, from_user_data=False):
    """MemberInput as the Java leader saw it.

    For eager sticky the golden file repeats what Java decoded from userData;
    ``from_user_data=True`` decodes ``user_data_hex`` instead."""
    ud = bytes.fromhex(m["user_data_hex"]) if m.get("user_data_hex") is not None else None
    if strategy == "sticky":
        if from_user_data:
            return sticky_member_input(m["member_id"], m["topics"], ud, m.get("subscription_generation_id"),
                                       m.get("group_instance_id"), m.get("rack"))
        from kwire.assignors._model import MemberInput
        sg = m.get("subscription_generation_id")
        return MemberInput(
            member_id=m["member_id"], group_instance_id=m.get("group_instance_id"), topics=tuple(m["topics"]),
            owned=tuple((t, p) for t, p in m["owned_partitions"]),
            generation=-1 if m["generation"] is None else m["generation"],
            subscription_generation=-1 if sg is None or sg < 0 else sg, rack=m.get("rack"))
    return cooperative_member_input(m["member_id"], m["topics"], [tuple(x) for x in m["owned_partitions"]],
                                    m.get("generation"), ud, m.get("group_instance_id"), m.get("rack"))


def group_from_golden(case, *, from_user_data=False):
    strategy = case["assignor"]
    return GroupInput(
        members=[member_from_golden(strategy, m, from_user_data=from_user_data) for m in case["members"]],
        partitions_per_topic=dict(case["partitions_per_topic"]),
        partition_racks=case.get("partition_racks"),
    )


def expected_of(case):
    return {k: [tuple(x) for x in v] for k, v in case["expected"].items()}


def compiled_sticky():
    """The compiled kernel ``kwire.assignors._sticky_c``.

    A missing compiled kernel is a build defect: its ImportError propagates
    (the importing test module fails) unless ``KWIRE_NO_EXTENSIONS=1``, the
    one setting where None is returned and the compiled tests skip."""
    try:
        return importlib.import_module("kwire.assignors._sticky_c")
    except ImportError:
        if _impl.NO_EXTENSIONS:
            return None
        raise


#: Skips only under KWIRE_NO_EXTENSIONS=1 without a compiled kernel (see compiled_sticky).
needs_compiled = pytest.mark.skipif(compiled_sticky() is None, reason="KWIRE_NO_EXTENSIONS=1 and _sticky_c not built")
