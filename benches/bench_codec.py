"""Wire codec benchmarks: kwire (compiled and pure) against kafka-python, aiokafka and kio.

Run: ``python -m pytest benches/bench_codec.py --benchmark-only``
(``benches/codec_ratios.py`` runs the same cases with timeit and prints the
Markdown ratio table).

Every library encodes the same values and decodes its own bytes of them.
aiokafka implements only old versions of these APIs; its cases use its
highest version and say so in the name (``aiokafka@v5``), so its numbers
are for a smaller message layout and not strictly comparable.

Targets for compiled kwire:

* JoinGroupResponse v9, 1000 members: decode <= 100 us, encode <= 100 us
* SyncGroupRequest v5, 1000 assignments: decode / encode <= 80 us each
* HeartbeatRequest v4: decode / encode <= 0.4 us each

The timed call is only ``encode`` (from an object built beforehand) or only
``decode`` (from bytes encoded beforehand); building objects is outside it.
Calls go through ``functools.partial`` rather than lambdas: at the 100 ns
scale a Python frame per call would be a visible part of what is measured.
"""

import importlib
import io
import os
from functools import partial

import pytest

# --------------------------------------------------------------------------
# The messages
# --------------------------------------------------------------------------

GROUP = "bench-consumer-group"
HOST = "broker-1.kafka.internal.example"


def member_ids(n):
    # 40 bytes, like Java's "<client id>-<uuid>" member ids.
    return [f"consumer-{i:05d}-{i * 2654435761 % (1 << 64):025d}"[:40].ljust(40, "x") for i in range(n)]


def blob(i, size):
    return bytes((i * 31 + j) & 0xFF for j in range(size))


def join_group_response(n):
    ids = member_ids(n)
    return {
        "throttle_time_ms": 0, "error_code": 0, "generation_id": 17, "protocol_type": "consumer",
        "protocol_name": "cooperative-sticky", "leader": ids[0], "skip_assignment": False, "member_id": ids[0],
        "members": [{"member_id": m, "group_instance_id": None, "metadata": blob(i, 60)} for i, m in enumerate(ids)],
    }


def sync_group_request(n):
    ids = member_ids(n)
    return {
        "group_id": GROUP, "generation_id": 17, "member_id": ids[0], "group_instance_id": None,
        "protocol_type": "consumer", "protocol_name": "cooperative-sticky",
        "assignments": [{"member_id": m, "assignment": blob(i, 60)} for i, m in enumerate(ids)],
    }


def heartbeat_request():
    return {"group_id": GROUP, "generation_id": 17, "member_id": member_ids(1)[0], "group_instance_id": None}


def find_coordinator_response():
    return {"throttle_time_ms": 0, "coordinators": [
        {"key": GROUP, "node_id": 3, "host": HOST, "port": 9092, "error_code": 0, "error_message": None}]}


class Case:
    def __init__(self, cid, name, version, values):
        self.id = cid
        self.name = name
        self.version = version
        self.values = values


CASES = [
    Case("JoinGroupResponse-v9-1", "JoinGroupResponse", 9, lambda: join_group_response(1)),
    Case("JoinGroupResponse-v9-100", "JoinGroupResponse", 9, lambda: join_group_response(100)),
    Case("JoinGroupResponse-v9-1000", "JoinGroupResponse", 9, lambda: join_group_response(1000)),
    Case("SyncGroupRequest-v5-100", "SyncGroupRequest", 5, lambda: sync_group_request(100)),
    Case("SyncGroupRequest-v5-1000", "SyncGroupRequest", 5, lambda: sync_group_request(1000)),
    Case("HeartbeatRequest-v4", "HeartbeatRequest", 4, heartbeat_request),
    Case("FindCoordinatorResponse-v6", "FindCoordinatorResponse", 6, find_coordinator_response),
]

#: Compiled kwire targets in microseconds: (case id, op) -> limit.
TARGETS_US = {
    ("JoinGroupResponse-v9-1000", "decode"): 100.0,
    ("JoinGroupResponse-v9-1000", "encode"): 100.0,
    ("SyncGroupRequest-v5-1000", "decode"): 80.0,
    ("SyncGroupRequest-v5-1000", "encode"): 80.0,
    ("HeartbeatRequest-v4", "decode"): 0.4,
    ("HeartbeatRequest-v4", "encode"): 0.4,
}

# --------------------------------------------------------------------------
# Libraries: each turns (message name, version, values) into two callables
# --------------------------------------------------------------------------

_NESTED = {"members": "JoinGroupResponseMember", "assignments": "SyncGroupRequestAssignment",
           "coordinators": "Coordinator"}


def _kwire_prepare(module_name):
    def prepare(name, version, values):
        mod = importlib.import_module(module_name)
        cls = getattr(mod, name)
        kwargs = dict(values)
        for key, sub in _NESTED.items():
            if key in kwargs:
                kwargs[key] = [getattr(mod, sub)(**e) for e in kwargs[key]]
        msg = cls(**kwargs)
        data = msg.encode(version)
        return version, partial(msg.encode, version), partial(cls.decode, data, version)
    return prepare


def _kafka_python_prepare(name, version, values):
    from kafka.protocol import consumer, metadata
    cls = getattr(consumer if hasattr(consumer, name) else metadata, name)
    kwargs = dict(values)
    for key, sub in _NESTED.items():
        if key in kwargs:
            kwargs[key] = [getattr(cls, sub)(version=version, **e) for e in kwargs[key]]
    msg = cls(version=version, **kwargs)
    data = bytes(msg.encode(version=version))
    return version, partial(msg.encode, version=version), partial(cls.decode, data, version=version)


def _kio_prepare(name, version, values):
    import datetime

    from kio.schema.errors import ErrorCode
    from kio.serial import entity_reader, entity_writer

    api = name[:-len("Request")] if name.endswith("Request") else name[:-len("Response")]
    kind = "request" if name.endswith("Request") else "response"
    snake = "".join("_" + c.lower() if c.isupper() else c for c in api).lstrip("_")
    mod = importlib.import_module(f"kio.schema.{snake}.v{version}.{kind}")
    cls = getattr(mod, name)

    def convert(d):
        out = {}
        for k, v in d.items():
            if k.endswith("_ms"):
                k, v = k[:-3], datetime.timedelta(milliseconds=v)
            elif k == "error_code":
                v = ErrorCode(v)
            elif k in _NESTED:
                v = tuple(getattr(mod, _NESTED[k])(**convert(e)) for e in v)
            out[k] = v
        return out

    msg = cls(**convert(values))
    write = entity_writer(cls)
    read = entity_reader(cls)

    def encode():
        buf = io.BytesIO()
        write(buf, msg)
        return buf.getvalue()

    data = encode()
    return version, encode, partial(read, data, 0)


_AIOKAFKA_MAX = {"JoinGroupResponse": 5, "SyncGroupRequest": 3, "HeartbeatRequest": 1, "FindCoordinatorResponse": 1}


def _aiokafka_prepare(name, version, values):
    from aiokafka.protocol import coordination, group
    v = min(version, _AIOKAFKA_MAX[name])
    cls = getattr(coordination if name.startswith("FindCoordinator") else group, f"{name}_v{v}")
    if name == "JoinGroupResponse":
        args = (values["throttle_time_ms"], values["error_code"], values["generation_id"], values["protocol_name"],
                values["leader"], values["member_id"],
                [(m["member_id"], m["group_instance_id"], m["metadata"]) for m in values["members"]])
    elif name == "SyncGroupRequest":
        args = (values["group_id"], values["generation_id"], values["member_id"], values["group_instance_id"],
                [(a["member_id"], a["assignment"]) for a in values["assignments"]])
    elif name == "HeartbeatRequest":
        args = (values["group_id"], values["generation_id"], values["member_id"])
    else:
        # v1 answers one key with flat fields; the single coordinator supplies them.
        c = values["coordinators"][0]
        args = (values["throttle_time_ms"], c["error_code"], c["error_message"], c["node_id"], c["host"], c["port"])
    msg = cls(*args)
    data = msg.encode()
    return v, msg.encode, partial(cls.decode, data)


LIBRARIES = {
    "kwire-c": ("kwire.codec._codec_c", _kwire_prepare("kwire.codec._codec_c")),
    "kwire-py": ("kwire.codec._codec_py", _kwire_prepare("kwire.codec._codec_py")),
    "kafka-python": ("kafka.protocol.consumer", _kafka_python_prepare),
    "aiokafka": ("aiokafka.protocol.group", _aiokafka_prepare),
    "kio": ("kio.serial", _kio_prepare),
}


def available(lib):
    if lib == "kwire-c" and os.environ.get("KWIRE_NO_EXTENSIONS", "") not in ("", "0"):
        return False
    try:
        importlib.import_module(LIBRARIES[lib][0])
        return True
    except ImportError:
        return False


def prepare(lib, case):
    """``(version used, encode(), decode())`` for ``lib`` on ``case``."""
    return LIBRARIES[lib][1](case.name, case.version, case.values())


def label(lib, case, version_used):
    return lib if version_used == case.version else f"{lib}@v{version_used}"


# --------------------------------------------------------------------------
# pytest-benchmark
# --------------------------------------------------------------------------

_prepared = {}


def _prepared_case(lib, case):
    key = (lib, case.id)
    if key not in _prepared:
        _prepared[key] = prepare(lib, case)
    return _prepared[key]


_PARAMS = [
    pytest.param(case, op, lib, id=f"{case.id}-{op}-{lib}")
    for case in CASES for op in ("encode", "decode") for lib in LIBRARIES
]


@pytest.mark.parametrize("case,op,lib", _PARAMS)
def test_codec(benchmark, case, op, lib):
    if not available(lib):
        pytest.skip(f"{lib} not available")
    version_used, encode, decode = _prepared_case(lib, case)
    # Grouped by case and operation, so the libraries sit side by side.
    benchmark.group = f"{case.id} {op}"
    benchmark.name = f"{case.id}-{op}-{label(lib, case, version_used)}"
    benchmark.extra_info["version"] = version_used
    fn = encode if op == "encode" else decode
    result = benchmark(fn)
    assert result is not None
