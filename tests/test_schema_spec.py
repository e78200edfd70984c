"""kwire's schema tables against Apache Kafka's own JSON message specs.

The tables in kwire/codec/_schema.py are written by hand; this test is what makes
them trustworthy: every message, every field, every version.  The specs' facts
are committed in tests/data/kafka-spec (scripts/kafka_spec_facts.py derives
them from Kafka's own files, and CI checks the copy against them).
"""

import pytest

from kwire.codec import _schema
from tests._data import SPEC_DIR
from tests._data import kafka_spec


def _resolve_common_structs(fields, common):
    """Kafka's ``commonStructs`` written into the fields that name them, as kwire's tables hold them."""
    out = []
    for f in fields:
        f = dict(f)
        element = f["type"][2:] if f["type"].startswith("[]") else f["type"]
        if "fields" not in f and element in common:
            f["fields"] = common[element]
        if "fields" in f:
            f["fields"] = _resolve_common_structs(f["fields"], common)
        out.append(f)
    return out


def _load(name):
    spec = dict(kafka_spec(name))
    common = {s["name"]: s["fields"] for s in spec.get("commonStructs", [])}
    spec["fields"] = _resolve_common_structs(spec["fields"], common)
    return spec


def _json_default(field_json):
    t = field_json["type"]
    raw = field_json.get("default")
    if t.startswith("[]"):
        return None if raw == "null" else []
    if raw is None:
        # Kafka's zero uuid is Uuid.ZERO_UUID; records (like bytes) have no zero but null.
        return {"bool": False, "string": "", "bytes": b"", "float64": 0.0, "uuid": b"\x00" * 16}.get(t, 0 if t in (
            "int8", "int16", "int32", "int64", "uint16") else None)
    if raw == "null":
        return None
    if t == "bool":
        return raw == "true"
    if t in ("int8", "int16", "int32", "int64", "uint16"):
        return int(str(raw), 0)  # Kafka writes some defaults as JSON numbers
    return raw


def _compare_fields(json_fields, fields, path):
    assert [f["name"] for f in json_fields] == [f.name for f in fields], f"field list of {path}"
    for fj, f in zip(json_fields, fields):
        where = f"{path}.{f.name}"
        assert f.type == fj["type"], where
        assert f.versions == _schema.VersionRange(fj["versions"]), where
        assert f.nullable == _schema.VersionRange(fj.get("nullableVersions", "none")), where
        assert f.ignorable == bool(fj.get("ignorable", False)), where
        assert f.tag == fj.get("tag"), where
        assert f.tagged == _schema.VersionRange(fj.get("taggedVersions", "none")), where
        assert f.map_key == bool(fj.get("mapKey", False)), where
        override = fj.get("flexibleVersions")
        if override is None:
            assert f.flexible_override is None, where
        else:
            assert f.flexible_override == _schema.VersionRange(override), where
        if f.is_struct:
            # A struct array defaults as Kafka says ([] or null); a single struct to None.
            assert f.default == (_json_default(fj) if f.is_array else None), where
        else:
            assert f.default == _json_default(fj), where
        if "fields" in fj or f.is_struct:
            _compare_fields(fj.get("fields", []), f.fields, where)


def _layout(fields, version, flexible):
    """The wire layout of one version as a comparable tuple, from either source."""
    out = []
    for f in fields:
        name, type_, versions = f["name"], f["type"], _schema.VersionRange(f["versions"])
        if version not in versions:
            continue
        nullable = version in _schema.VersionRange(f.get("nullableVersions", "none"))
        tagged = flexible and version in _schema.VersionRange(f.get("taggedVersions", "none"))
        override = f.get("flexibleVersions")
        compact = flexible and (override is None or version in _schema.VersionRange(override))
        sub = _layout(f["fields"], version, flexible) if "fields" in f else None
        out.append((name, type_, nullable, tagged, f.get("tag") if tagged else None, compact, sub))
    return tuple(out)


def _as_json(fields):
    out = []
    for f in fields:
        d = {"name": f.name, "type": f.type, "versions": repr(f.versions)}
        if not f.nullable.empty:
            d["nullableVersions"] = repr(f.nullable)
        if f.tag is not None:
            d["tag"] = f.tag
            d["taggedVersions"] = repr(f.tagged)
        if f.flexible_override is not None:
            d["flexibleVersions"] = repr(f.flexible_override)
        if f.fields:
            d["fields"] = _as_json(f.fields)
        out.append(d)
    return out


@pytest.mark.parametrize("msg", _schema.SPEC_CHECKED, ids=lambda m: m.name)
def test_message_matches_kafka_spec(msg):
    spec = _load(msg.name)
    assert spec["name"] == msg.name
    assert spec["type"] == msg.kind
    assert spec.get("apiKey") == msg.api_key
    assert msg.valid == _schema.VersionRange(spec["validVersions"])
    assert msg.flexible == _schema.VersionRange(spec["flexibleVersions"])
    _compare_fields(spec["fields"], msg.fields, msg.name)


@pytest.mark.parametrize("msg", _schema.SPEC_CHECKED, ids=lambda m: m.name)
def test_every_version_has_the_spec_layout(msg):
    spec = _load(msg.name)
    valid = _schema.VersionRange(spec["validVersions"])
    flexible = _schema.VersionRange(spec["flexibleVersions"])
    mine = _as_json(msg.fields)
    for version in range(valid.lo, valid.hi + 1):
        fl = version in flexible
        assert _layout(mine, version, fl) == _layout(spec["fields"], version, fl), f"{msg.name} v{version}"


def test_required_apis_and_versions():
    """The versions kwire promises: JoinGroup 0-9, SyncGroup 0-5, FindCoordinator 0-6, Heartbeat 0-4."""
    want = {11: (0, 9, 6), 14: (0, 5, 4), 10: (0, 6, 3), 12: (0, 4, 4)}
    for msg in _schema.API_MESSAGES:
        if msg.api_key in want:
            lo, hi, flex = want[msg.api_key]
            assert (msg.valid.lo, msg.valid.hi, msg.flexible.lo) == (lo, hi, flex), msg.name


def test_spec_files_cover_every_checked_message():
    names = {p.stem for p in SPEC_DIR.glob("*.json")}
    assert {m.name for m in _schema.SPEC_CHECKED} <= names
