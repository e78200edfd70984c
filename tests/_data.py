"""The committed test data (tests/data): Kafka's spec facts and Java's golden assignments.

Both live in the repository so that a plain clone runs every test; see
tests/data/README.md for where they come from and how CI keeps them true.
"""

import json
from functools import lru_cache
from pathlib import Path

DATA = Path(__file__).resolve().parent / "data"
GOLDEN_PATH = DATA / "golden" / "java-assignors.jsonl"
#: Where kwire's default sticky answer departs from Java's, one case per kind (scripts/sticky_departures.py).
DEPARTURES_PATH = DATA / "golden" / "kwire-departures.jsonl"
SPEC_DIR = DATA / "kafka-spec"


@lru_cache(maxsize=None)
def _all_golden_cases():
    with GOLDEN_PATH.open(encoding="utf-8") as fh:
        return tuple(json.loads(line) for line in fh if line.strip())


def golden_cases(strategies=None):
    """Java's golden cases, in file order; only those of ``strategies`` when given."""
    cases = _all_golden_cases()
    if strategies is not None:
        cases = tuple(c for c in cases if c["assignor"] in strategies)
    return list(cases)


def departure_cases():
    """kwire's departures from Java's sticky assignors, in file order."""
    with DEPARTURES_PATH.open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


@lru_cache(maxsize=None)
def kafka_spec(name):
    """The facts of Kafka's JSON spec of message ``name`` (e.g. "JoinGroupRequest")."""
    with (SPEC_DIR / f"{name}.json").open(encoding="utf-8") as fh:
        return json.load(fh)
