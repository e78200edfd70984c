"""Kafka's server-side assignors (KIP-848 ``uniform`` and ``range``) against
the exact output of Apache Kafka's own classes (tests/data/golden/java848-assignors.jsonl).

Every case runs through the member level in both twins, with topic ids as
Kafka's base64 text; once more with 16-byte ids and with ``uuid.UUID`` ids
(the result must use the caller's form); and the Java orders the cases record
(the member map's order, the homogeneous builder's topic set) are checked on
their own, so a failure names the rule that broke."""

import hashlib
import json
import uuid

import numpy as np
import pytest

from kwire import AssignmentError
from kwire.assignors import assign_server
from kwire.assignors._server import hashset_topic_order, is_homogeneous, server_kernels as _kernels
from kwire.assignors._server_common import check_columns
from kwire.assignors._server_members import server_group
from tests._server_golden import as_expected, case_input, golden848_cases, raw_id
from tests._twins import assignor_implementations

IMPLEMENTATIONS = assignor_implementations()
CASES = golden848_cases()


def _ids(cases):
    return [c["id"] for c in cases]


def _outcome(case, implementation, key=str):
    members, topics = case_input(case, key)
    try:
        return as_expected(assign_server(case["assignor"], members, topics, implementation=implementation)), None
    except AssignmentError as exc:
        return None, str(exc)


def test_the_file_is_whole():
    assert len(CASES) >= 200
    for case in CASES:
        if case["expected"] is not None:
            text = json.dumps(case["expected"], sort_keys=True, separators=(",", ":"), ensure_ascii=False)
            assert hashlib.sha256(text.encode("utf-8")).hexdigest() == case["expected_sha256"], case["id"]
    assert {c["assignor"] for c in CASES} == {"uniform", "range"}


@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
@pytest.mark.parametrize("case", CASES, ids=_ids(CASES))
def test_matches_java(case, implementation):
    got, error = _outcome(case, implementation)
    assert error == case["expected_error"]
    assert got == case["expected"]


@pytest.mark.parametrize("form", ["bytes", "uuid"])
def test_topic_id_forms(form):
    key = raw_id if form == "bytes" else (lambda text: uuid.UUID(bytes=raw_id(text)))
    kind = bytes if form == "bytes" else uuid.UUID
    for case in CASES[::7]:
        members, topics = case_input(case, key)
        try:
            result = assign_server(case["assignor"], members, topics)
        except AssignmentError as exc:
            assert str(exc) == case["expected_error"]
            continue
        assert all(isinstance(t, kind) for a in result.values() for t in a)
        assert as_expected(result) == case["expected"], case["id"]


@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
def test_member_map_order(implementation):
    kernels = _kernels(implementation)
    for case in CASES:
        ids = [m["member_id"] for m in case["members"]]
        if case.get("java_member_order") is not None:
            assert [ids[i] for i in kernels.member_map_order(ids)] == case["java_member_order"], case["id"]


def test_homogeneous_topic_set_order_and_subscription_type():
    for case in CASES:
        members, topics = case_input(case)
        group, tx = server_group(members, topics)
        member_sub, sub_indptr, sub_topics = check_columns(group, _kernels(None).first_repeat)[:3]
        homogeneous = is_homogeneous(group, member_sub, sub_indptr, sub_topics)
        assert homogeneous == (case["subscription_type"] == "HOMOGENEOUS"), case["id"]
        if case.get("java_topic_order"):
            first = case["members"][[m["member_id"] for m in case["members"]].index(case["java_member_order"][0])]
            row = np.array([tx(t) for t in first["subscribed_topic_ids"]], dtype=np.int32)
            got = [tx.keys[t] for t in hashset_topic_order(group.topic_ids, row)]
            assert got == case["java_topic_order"], case["id"]


def test_chains_feed_java_output_back():
    """A chain step's current assignment is the previous step's output: the
    cases hold both, so kwire's output of step k, as a set per topic, is step
    k+1's input (members that left dropped)."""
    by_id = {c["id"]: c for c in CASES}
    checked = 0
    for case in CASES:
        chain = case.get("chain")
        if not chain or not chain.get("prev_case") or chain["prev_case"] not in by_id:
            continue
        prev = by_id[chain["prev_case"]]
        if prev["expected"] is None:
            continue
        got, _ = _outcome(prev, None)
        for m in case["members"]:
            if m["member_id"] in got:
                want = {t: sorted(ps) for t, ps in m["assignment"]}
                assert want == got[m["member_id"]], (case["id"], m["member_id"])
                checked += 1
    assert checked > 100


def test_chains_give_java_results_from_ascending_lists():
    """kwire returns partitions ascending where Kafka's record lists a set in its
    own order: fed back, the ascending lists give Java's result on every chained case."""
    checked = 0
    for case in CASES:
        if not case.get("chain"):
            continue
        members, topics = case_input(case)
        for m in members.values():
            m.assignment = {t: sorted(ps) for t, ps in m.assignment.items()}
        try:
            got, error = as_expected(assign_server(case["assignor"], members, topics)), None
        except AssignmentError as exc:
            got, error = None, str(exc)
        assert (got, error) == (case["expected"], case["expected_error"]), case["id"]
        checked += 1
    assert checked > 100
