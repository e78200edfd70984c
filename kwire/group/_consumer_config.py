"""The consumer-protocol coordinator's settings, under Kafka's broker config names and with its defaults and
bounds checks (``GroupCoordinatorConfig``).

Only the ``group.consumer.*`` keys and ``group.coordinator.rebalance.protocols`` are read here; a dict that
also holds the classic group's keys (``group.min.session.timeout.ms``, ...) or the server's is accepted, and
those keys are left to their owners.  An unknown ``group.consumer.*`` key, a value that is not a number where
one is needed, or a value outside its bounds is an :class:`kwire.errors.ArgumentValueError` naming the key,
as Kafka refuses to start with it.
"""

from kwire.errors import ArgumentValueError

__all__ = ["ConsumerGroupConfig", "ASSIGNOR_CLASS_NAMES", "CONSUMER_CONFIG_DEFAULTS"]

INT_MAX = 2147483647

# group.consumer.assignors takes Kafka's class names or the assignors' short names.
ASSIGNOR_CLASS_NAMES = {
    "org.apache.kafka.coordinator.group.assignor.UniformAssignor": "uniform",
    "org.apache.kafka.coordinator.group.assignor.RangeAssignor": "range",
    "uniform": "uniform",
    "range": "range",
}

# key -> default (GroupCoordinatorConfig's defaults at the reference commit).
_INT_KEYS = {
    "group.consumer.session.timeout.ms": 45000,
    "group.consumer.min.session.timeout.ms": 45000,
    "group.consumer.max.session.timeout.ms": 60000,
    "group.consumer.heartbeat.interval.ms": 5000,
    "group.consumer.min.heartbeat.interval.ms": 5000,
    "group.consumer.max.heartbeat.interval.ms": 15000,
    "group.consumer.max.size": INT_MAX,
    # Kafka 4.3's assignment batching (KAFKA-20251): at most one target computation per interval per group.
    # 0 computes on every heartbeat that finds the target behind the group epoch, as Kafka 4.0 does.
    "group.consumer.assignment.interval.ms": 1000,
}
_STR_KEYS = {
    "group.consumer.assignors": "uniform,range",
    "group.consumer.migration.policy": "bidirectional",
    "group.coordinator.rebalance.protocols": "classic,consumer",
}
_MIGRATION_POLICIES = ("disabled", "upgrade", "downgrade", "bidirectional")
_PREFIX = "group.consumer."
# The keys (without _PREFIX) GroupCoordinatorConfig requires to be at least 1, in the order it checks them.
_AT_LEAST_ONE = ("max.size", "session.timeout.ms", "min.session.timeout.ms", "max.session.timeout.ms",
                 "heartbeat.interval.ms", "min.heartbeat.interval.ms", "max.heartbeat.interval.ms")

#: Every key this module reads, with Kafka's default: a server's config table takes its list of consumer-group
#: keys from here and hands their values to :class:`ConsumerGroupConfig` to check.
CONSUMER_CONFIG_DEFAULTS = {**_INT_KEYS, **_STR_KEYS}


def _as_int(key, value):
    if isinstance(value, bool):
        raise ArgumentValueError(f"{key} must be an integer, got {value!r}")
    try:
        return int(str(value).strip()) if not isinstance(value, int) else value
    except ValueError:
        raise ArgumentValueError(f"{key} must be an integer, got {value!r}") from None


def _as_list(value):
    if isinstance(value, str):
        return [v.strip() for v in value.split(",") if v.strip()]
    return [str(v).strip() for v in value]


class ConsumerGroupConfig:
    """Parsed settings; attributes are the keys with dots as underscores and without ``group.consumer.``."""

    __slots__ = ("session_timeout_ms", "min_session_timeout_ms", "max_session_timeout_ms", "heartbeat_interval_ms",
                 "min_heartbeat_interval_ms", "max_heartbeat_interval_ms", "max_size", "assignment_interval_ms",
                 "assignors", "migration_policy", "rebalance_protocols")

    def __init__(self, config=None):
        config = dict(config or {})
        for key in config:
            if key.startswith("group.consumer.") and key not in _INT_KEYS and key not in _STR_KEYS:
                raise ArgumentValueError(f"unknown consumer group config {key!r}; known: "
                                         f"{', '.join(sorted([*_INT_KEYS, *_STR_KEYS]))}")
        ints = {k: _as_int(k, config.get(k, d)) for k, d in _INT_KEYS.items()}
        self.session_timeout_ms = ints["group.consumer.session.timeout.ms"]
        self.min_session_timeout_ms = ints["group.consumer.min.session.timeout.ms"]
        self.max_session_timeout_ms = ints["group.consumer.max.session.timeout.ms"]
        self.heartbeat_interval_ms = ints["group.consumer.heartbeat.interval.ms"]
        self.min_heartbeat_interval_ms = ints["group.consumer.min.heartbeat.interval.ms"]
        self.max_heartbeat_interval_ms = ints["group.consumer.max.heartbeat.interval.ms"]
        self.max_size = ints["group.consumer.max.size"]
        self.assignment_interval_ms = ints["group.consumer.assignment.interval.ms"]
        self._check()
        names = []
        for raw in _as_list(config.get("group.consumer.assignors", _STR_KEYS["group.consumer.assignors"])):
            short = ASSIGNOR_CLASS_NAMES.get(raw)
            if short is None:
                raise ArgumentValueError(f"group.consumer.assignors: unknown assignor {raw!r}; known: "
                                         f"{', '.join(ASSIGNOR_CLASS_NAMES)}")
            if short in names:
                raise ArgumentValueError(f"group.consumer.assignors: {raw!r} is listed twice")
            names.append(short)
        if not names:
            raise ArgumentValueError("group.consumer.assignors must name at least one assignor")
        self.assignors = tuple(names)   # the first is the default (GroupCoordinatorConfig.consumerGroupAssignors)
        policy = str(config.get("group.consumer.migration.policy", "bidirectional")).strip().lower()
        # ConsumerGroupMigrationPolicy.parse: an unknown string means disabled.
        self.migration_policy = policy if policy in _MIGRATION_POLICIES else "disabled"
        protocols = [p.lower() for p in _as_list(config.get("group.coordinator.rebalance.protocols",
                                                            _STR_KEYS["group.coordinator.rebalance.protocols"]))]
        for p in protocols:
            if p not in ("classic", "consumer", "share", "streams"):
                raise ArgumentValueError(f"group.coordinator.rebalance.protocols: unknown protocol {p!r}")
        if "classic" not in protocols:
            raise ArgumentValueError("group.coordinator.rebalance.protocols must contain classic")
        self.rebalance_protocols = tuple(protocols)

    def _check(self):
        # GroupCoordinatorConfig's constructor `require`s, in its order and with its texts: the keys that must be
        # at least 1, then for heartbeats and sessions a max at least its min and a value between them.
        def value(name):
            return getattr(self, name.replace(".", "_"))

        def require(ok, text):
            if not ok:
                raise ArgumentValueError(text)
        for name in _AT_LEAST_ONE:
            require(value(name) >= 1, f"{_PREFIX}{name} must be greater than or equal to 1")
        require(self.assignment_interval_ms >= 0, "group.consumer.assignment.interval.ms must be >= 0")
        for name in ("heartbeat.interval.ms", "session.timeout.ms"):
            low, high = "min." + name, "max." + name
            require(value(high) >= value(low), f"{_PREFIX}{high} must be greater than or equal to {_PREFIX}{low}")
            require(value(low) <= value(name) <= value(high),
                    f"{_PREFIX}{name} must be greater than or equal to {_PREFIX}{low} and less than or equal to "
                    f"{_PREFIX}{high}")
        require(self.heartbeat_interval_ms < self.session_timeout_ms,
                "group.consumer.heartbeat.interval.ms must be less than group.consumer.session.timeout.ms")

    @property
    def consumer_protocol_enabled(self):
        """``KafkaApis.isConsumerGroupProtocolEnabled``: api 68 and 69 answer UNSUPPORTED_VERSION without it."""
        return "consumer" in self.rebalance_protocols
