"""The README's promises, checked against the code so they cannot rot.

- The Python blocks of the section "A mock Kafka cluster for tests" are read from README.md at test time and run
  as written: each block is executed, then every ``test_*`` function it defines is called.  They drive real
  confluent-kafka clients in this process, so they skip without it; each must finish in a few seconds.
- The table "Supported versions" names every api kwire's codec has, with the version range of
  ``kwire.codec.API_VERSIONS_RANGE`` and the first flexible version of the message classes.
"""

import pathlib
import re
import time

import pytest

import kwire.codec as codec
from kwire.codec import API_VERSIONS_RANGE, ApiKey

README = pathlib.Path(__file__).resolve().parent.parent / "README.md"
MOCK_SECTION = "A mock Kafka cluster for tests"
# A block runs in well under a second on a quiet machine; the README's poll(10) is its worst case when broken.
BLOCK_BUDGET_S = 10.0


def _section(title):
    text = README.read_text(encoding="utf-8")
    match = re.search(rf"^## {re.escape(title)}\n(.*?)(?=^## )", text, re.S | re.M)
    assert match, f"README.md has no section {title!r}"
    return match.group(1)


def _python_blocks(title):
    return re.findall(r"^```python\n(.*?)^```", _section(title), re.S | re.M)


def test_mock_section_shows_both_protocols():
    blocks = _python_blocks(MOCK_SECTION)
    assert len(blocks) >= 2
    assert any("Producer(" in b and "Consumer(" in b for b in blocks), "no produce -> consume example"
    consumer_protocol = [b for b in blocks if '"group.protocol": "consumer"' in b]
    assert consumer_protocol, "no consumer-protocol (KIP-848) fixture"
    for key in ("group.consumer.session.timeout.ms", "group.consumer.min.session.timeout.ms",
                "group.consumer.heartbeat.interval.ms", "group.consumer.min.heartbeat.interval.ms"):
        assert f'"{key}"' in consumer_protocol[0], key


@pytest.mark.parametrize("index", range(len(_python_blocks(MOCK_SECTION))))
def test_mock_section_block_runs(index):
    pytest.importorskip("confluent_kafka")
    source = _python_blocks(MOCK_SECTION)[index]
    namespace = {"__name__": f"readme_mock_block_{index}"}
    exec(compile(source, f"README.md:{MOCK_SECTION}:block{index}", "exec"), namespace)
    tests = [f for name, f in namespace.items() if name.startswith("test_") and callable(f)]
    assert tests, "the block defines no test function"
    for test in tests:
        started = time.monotonic()
        test()
        elapsed = time.monotonic() - started
        assert elapsed < BLOCK_BUDGET_S, f"{test.__name__} took {elapsed:.1f} s"


def _versions_table():
    rows = {}
    for line in _section("Supported versions").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 4 or not cells[1].isdigit():
            continue          # the header, the rule, and the rows of things that are not apis (key "–")
        rows[int(cells[1])] = (cells[0], cells[2], cells[3])
    return rows


def _request_class(key):
    found = [getattr(codec, n) for n in codec.__all__
             if n.endswith("Request") and getattr(getattr(codec, n), "api_key", None) == key]
    assert len(found) == 1, (key, found)
    return found[0]


def test_supported_versions_table_matches_the_codec():
    rows = _versions_table()
    assert set(rows) == set(API_VERSIONS_RANGE), "README's api rows differ from kwire.codec.API_VERSIONS_RANGE"
    for key, (lo, hi) in API_VERSIONS_RANGE.items():
        name, versions, flexible = rows[key]
        cls = _request_class(key)
        assert name.split(" (")[0] == cls.__name__[:-len("Request")], (key, name)
        assert versions == f"{lo}–{hi}", (name, versions)
        assert (cls.min_version, cls.max_version) == (lo, hi)
        assert flexible == str(cls.flexible_from), (name, flexible)
    assert {ApiKey(k).name for k in rows} == {ApiKey(k).name for k in API_VERSIONS_RANGE}
