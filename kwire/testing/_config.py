"""The mock cluster's configuration: Kafka's broker config names, each with its default and its bounds.

``kwire serve --config key=value`` (repeatable) and ``MockCluster(config={...})`` take these keys; an unknown
key, a value of the wrong type or out of bounds is a :class:`kwire.errors.ArgumentValueError` at start-up.
Values may be given typed (``5000``, ``True``, ``["uniform"]``) or as the strings Kafka's ``server.properties``
holds (``"5000"``, ``"true"``, ``"uniform,range"``).

Where kwire's default differs from Kafka's, the table says so and why (a test cluster wants groups at once, not
after Kafka's 3 s initial rebalance delay).  Keys starting ``kwire.`` are kwire's own.
"""

from typing import Any, NamedTuple

from kwire.errors import ArgumentValueError
from kwire.group import CONSUMER_CONFIG_DEFAULTS, ConsumerGroupConfig

_INT32_MAX = 2**31 - 1
_INT64_MAX = 2**63 - 1
MIB = 1 << 20

class Key(NamedTuple):
    kind: str          # int | bool
    default: Any       # kwire's default
    lo: Any = None     # bounds of an int (inclusive)
    hi: Any = None
    kafka_default: Any = None   # set only where it differs from kwire's
    doc: str = ""


KEYS = {
    # Topics and storage.
    "num.partitions": Key("int", 1, 1, _INT32_MAX, doc="partitions of a topic created without a count"),
    "auto.create.topics.enable": Key("bool", True, doc="Metadata creates a topic it is asked for"),
    "retention.bytes": Key("int", -1, -1, _INT64_MAX,
                           doc="bytes a partition holds before its oldest batches go; -1: no cap but the total"),
    "kwire.storage.total.bytes": Key("int", 1 << 30, 1, _INT64_MAX,
                                     doc="bytes the whole cluster holds; a Produce beyond is POLICY_VIOLATION"),
    "kwire.max.partitions": Key("int", 100_000, 1, _INT32_MAX,
                                doc="partitions of every topic together; a topic or partitions beyond are "
                                    "POLICY_VIOLATION"),
    "message.max.bytes": Key("int", 1048588, 0, _INT32_MAX, doc="the largest record batch a Produce may carry"),
    "fetch.max.bytes": Key("int", 57_671_680, 1024, _INT32_MAX,
                           doc="record bytes in one Fetch answer, whatever its max_bytes asks"),
    "socket.request.max.bytes": Key("int", 100 * MIB, 1, _INT32_MAX,
                                    doc="the largest request frame; a bigger one closes its connection"),
    "max.connections": Key("int", 1000, 1, _INT32_MAX, kafka_default=_INT32_MAX,
                           doc="connections in all; one more is closed when accepted"),
    "kwire.max.groups": Key("int", 10_000, 1, _INT32_MAX,
                            doc="groups; one more replaces the oldest idle group, or is COORDINATOR_NOT_AVAILABLE"),
    "kwire.connection.max.buffered.bytes": Key(
        "int", 4 * MIB, 1, _INT32_MAX,
        doc="unsent answer bytes past which a connection is not read until they drain"),
    "kwire.connection.max.inflight.requests": Key(
        "int", 64, 1, 1 << 16, doc="read but unanswered requests past which a connection is not read"),
    # Classic groups.
    "group.initial.rebalance.delay.ms": Key("int", 0, 0, _INT32_MAX, kafka_default=3000,
                                            doc="how long a new group waits for more members"),
    "group.min.session.timeout.ms": Key("int", 1, 0, _INT32_MAX, kafka_default=6000,
                                        doc="the least JoinGroup session timeout accepted"),
    "group.max.session.timeout.ms": Key("int", 1_800_000, 0, _INT32_MAX,
                                        doc="the greatest JoinGroup session timeout accepted"),
    "group.max.size": Key("int", 10_000, 1, _INT32_MAX, kafka_default=_INT32_MAX,
                          doc="members of a classic group; one more is GROUP_MAX_SIZE_REACHED"),
}


def _int(key, spec, value):
    if isinstance(value, bool):
        raise ArgumentValueError(f"{key} wants an integer, not {value!r}")
    try:
        n = int(value.strip()) if isinstance(value, str) else int(value)
    except (TypeError, ValueError):
        raise ArgumentValueError(f"{key} wants an integer, not {value!r}") from None
    if not spec.lo <= n <= spec.hi:
        raise ArgumentValueError(f"{key} must be in [{spec.lo}, {spec.hi}], not {n}")
    return n


def _bool(key, value):
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("true", "false"):
        return text == "true"
    raise ArgumentValueError(f"{key} wants true or false, not {value!r}")


def _value(key, value):
    spec = KEYS[key]
    if spec.kind == "int":
        return _int(key, spec, value)
    return _bool(key, value)


def _require(ok, message):
    if not ok:
        raise ArgumentValueError(message)


def resolve(given=None):
    """Every key's value: the defaults, overridden by ``given`` (a mapping of key to value), checked one by one
    and together as Kafka's ``GroupCoordinatorConfig`` checks them.  The consumer-group keys
    (``group.consumer.*``, ``group.coordinator.rebalance.protocols``) are kwire.group's: their defaults and
    bounds live in :class:`kwire.group.ConsumerGroupConfig`, which checks them here, and they are kept as given
    for the coordinator."""
    config = {key: spec.default for key, spec in KEYS.items()}
    consumer = dict(CONSUMER_CONFIG_DEFAULTS)
    for key, value in (given or {}).items():
        if key in CONSUMER_CONFIG_DEFAULTS:
            consumer[key] = value
        elif key in KEYS:
            config[key] = _value(key, value)
        else:
            raise ArgumentValueError(f"unknown config key {key!r}; docs/MOCK_CLUSTER.md lists the keys")
    c = config
    _require(c["group.min.session.timeout.ms"] <= c["group.max.session.timeout.ms"],
             "group.min.session.timeout.ms must not be greater than group.max.session.timeout.ms")
    ConsumerGroupConfig(consumer)
    config.update(consumer)
    return config


def parse_assignments(specs):
    """``["key=value", ...]`` (``kwire serve --config``) as a dict, refusing a spec without ``=``."""
    out = {}
    for spec in specs:
        key, sep, value = spec.partition("=")
        if not sep or not key.strip():
            raise ArgumentValueError(f"--config wants KEY=VALUE, not {spec!r}")
        out[key.strip()] = value
    return out


#: The keyword arguments and flags kwire had before the config keys, as aliases of them.
ALIASES = {
    "initial_rebalance_delay_ms": "group.initial.rebalance.delay.ms",
    "min_session_timeout_ms": "group.min.session.timeout.ms",
    "max_session_timeout_ms": "group.max.session.timeout.ms",
    "max_frame_size": "socket.request.max.bytes",
    "max_members_per_group": "group.max.size",
    "max_groups": "kwire.max.groups",
    "max_connections": "max.connections",
}


def with_aliases(config, aliases):
    """``config`` (a mapping, or None) with the alias arguments that were given (not None) as their keys; an
    alias and its key both given is an error."""
    out = dict(config or {})
    for alias, value in aliases.items():
        if value is None:
            continue
        key = ALIASES[alias]
        if key in out:
            raise ArgumentValueError(f"{alias} and the config key {key} are the same setting: give one")
        out[key] = value
    return out
