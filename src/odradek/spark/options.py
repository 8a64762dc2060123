"""Source and sink options, with the names, defaults and validation messages of Spark's `kafka` format.

Option keys reach a Python data source lower-cased; every lookup here is by the lower-cased name. Options
that Spark's connector rejects are rejected with its wording; options it does not know are rejected too
(Spark ignores them silently), so that a typo fails at start instead of being ignored.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from odradek.client.security import (
    SETTINGS,
    ClientSecurity,
    ClientSecurityError,
    client_security,
    unsupported_settings,
)
from odradek.spark.offsets import (
    EARLIEST,
    LATEST,
    OffsetSpec,
    TopicPartition,
    parse_offset_spec,
    parse_partitions,
    parse_timestamp_spec,
)
from odradek.spark.schema import source_columns
from odradek.spark.security import (
    SecurityConfigError,
    is_secured,
    librdkafka_security,
    raise_on_authentication_error,
    take_token_login,
)

STRATEGY_KEYS = ("subscribe", "subscribepattern", "assign")

_SOURCE_KEYS = {
    *STRATEGY_KEYS,
    "startingoffsets",
    "endingoffsets",
    "startingtimestamp",
    "endingtimestamp",
    "startingoffsetsbytimestamp",
    "endingoffsetsbytimestamp",
    "startingoffsetsbytimestampstrategy",
    "failondataloss",
    "minpartitions",
    "maxrecordsperpartition",
    "maxoffsetspertrigger",
    "minoffsetspertrigger",
    "maxtriggerdelay",
    "includeheaders",
    "groupidprefix",
    "kafkaconsumer.polltimeoutms",
    "fetchoffset.numretries",
    "fetchoffset.retryintervalms",
    "reader",
}
_SINK_KEYS = {"topic", "includeheaders", "exactlyonce", "transactionalidprefix", "batchid"}
# Set by Spark itself on some code paths; never the user's typo.
_SPARK_KEYS = {"path", "checkpointlocation", "queryname"}

_AUTO_OFFSET_RESET_MESSAGE = (
    "Kafka option 'auto.offset.reset' is not supported.\n"
    "Instead set the source option 'startingoffsets' to 'earliest' or 'latest' to specify where to start. "
    "Structured Streaming manages which offsets are consumed internally, rather than relying on the "
    "kafkaConsumer to do it. This will ensure that no data is missed when new topics/partitions are "
    "dynamically subscribed. Note that 'startingoffsets' only applies when a new Streaming query is "
    "started, and that resuming will always pick up from where the query left off."
)


@dataclass(frozen=True)
class Subscription:
    """Which topic-partitions a source reads: exactly one of Spark's three strategies."""

    topics: tuple[str, ...] = ()
    pattern: str | None = None
    assigned: tuple[TopicPartition, ...] = ()

    def matches(self, topic: str) -> bool:
        if self.pattern is not None:
            return re.fullmatch(self.pattern, topic) is not None
        return topic in self.topics

    def describe(self) -> str:
        if self.pattern is not None:
            return f"subscribePattern[{self.pattern}]"
        if self.topics:
            return f"subscribe[{', '.join(self.topics)}]"
        return f"assign[{', '.join(f'{t}-{p}' for t, p in self.assigned)}]"


@dataclass(frozen=True)
class SourceOptions:
    """A source's options, validated and typed."""

    kafka_params: dict[str, str]
    subscription: Subscription
    starting: OffsetSpec
    ending: OffsetSpec
    starting_by_timestamp_strategy: str = "error"
    fail_on_data_loss: bool = True
    include_headers: bool = False
    min_partitions: int | None = None
    max_records_per_partition: int | None = None
    max_offsets_per_trigger: int | None = None
    min_offsets_per_trigger: int | None = None
    max_trigger_delay_ms: int = 15 * 60 * 1000
    poll_timeout_ms: int = 120_000
    group_id_prefix: str = "spark-kafka-source"
    reader: str = "auto"
    query_id: str = field(default_factory=lambda: uuid.uuid4().hex)
    # The columns a user-specified schema projects to (schema.projected_columns); None: the full schema.
    columns: tuple[str, ...] | None = None
    #: A delegation token's login: every connection through odradek's client (`token_security`).
    token_login: bool = False

    @property
    def output_columns(self) -> tuple[str, ...]:
        """The columns every yielded Arrow batch has, in order."""
        return self.columns if self.columns is not None else source_columns(self.include_headers)

    def consumer_config(self, role: str) -> dict[str, Any]:
        """librdkafka settings for a consumer that assigns and seeks (never subscribes or commits)."""
        _no_librdkafka(self.token_login)
        config: dict[str, Any] = {
            "group.id": f"{self.group_id_prefix}-{self.query_id}-{role}",
            "enable.auto.commit": False,
            "auto.offset.reset": "error",
            "isolation.level": "read_uncommitted",
            "enable.partition.eof": False,
        }
        config.update(self.kafka_params)
        if is_secured(config):
            config.setdefault("error_cb", raise_on_authentication_error)
        return config


@dataclass(frozen=True)
class SinkOptions:
    """A sink's options, validated and typed."""

    kafka_params: dict[str, str]
    topic: str | None
    #: Exactly-once mode (two-phase commit transactions): the prefix of the tasks' transactional ids,
    #: None in the default at-least-once mode.
    transactional_id_prefix: str | None = None
    #: The micro-batch a batch write belongs to (foreachBatch's batch id), so that a replayed
    #: micro-batch is recognised; streaming writes learn it from Spark.
    batch_id: int | None = None
    #: A delegation token's login: every connection through odradek's client (`token_security`).
    token_login: bool = False

    @property
    def exactly_once(self) -> bool:
        return self.transactional_id_prefix is not None

    def producer_config(self) -> dict[str, Any]:
        _no_librdkafka(self.token_login)
        # murmur2 is the Java client's partitioner: a key lands where Spark's connector would put it.
        config: dict[str, Any] = {"linger.ms": 5, "partitioner": "murmur2_random"}
        config.update(self.kafka_params)
        if is_secured(config):
            config.setdefault("error_cb", raise_on_authentication_error)
        return config


def _no_librdkafka(token_login: bool) -> None:
    """A token's credentials in librdkafka would be tried as a SCRAM user's (no `tokenauth`)."""
    if token_login:
        raise SecurityConfigError("librdkafka cannot log in with a delegation token (tokenauth=true)")


def parse_source_options(options: Mapping[str, str], *, streaming: bool) -> SourceOptions:
    """Validate a source's options as Spark's connector does; raises ValueError with its wording."""
    params = {key.lower(): value for key, value in options.items()}
    _reject_unknown(params, _SOURCE_KEYS)
    if streaming:
        if "endingoffsets" in params:
            raise ValueError("ending offset not valid in streaming queries")
        if "endingoffsetsbytimestamp" in params or "endingtimestamp" in params:
            raise ValueError("ending timestamp not valid in streaming queries")
    kafka_params, token_login = _kafka_params(params, for_producer=False)
    subscription = _subscription(params)
    starting = _offset_limit(
        params,
        "startingtimestamp",
        "startingoffsetsbytimestamp",
        "startingoffsets",
        LATEST if streaming else EARLIEST,
    )
    ending = _offset_limit(params, "endingtimestamp", "endingoffsetsbytimestamp", "endingoffsets", LATEST)
    if not streaming:
        _check_batch_limits(starting, ending)
    strategy = params.get("startingoffsetsbytimestampstrategy", "error").strip().lower()
    if strategy not in ("error", "latest"):
        raise ValueError(
            f"Invalid value '{strategy}' for option 'startingOffsetsByTimestampStrategy', "
            "must be 'error' or 'latest'"
        )
    min_offsets = _positive(params, "minoffsetspertrigger")
    max_offsets = _positive(params, "maxoffsetspertrigger")
    if min_offsets is not None and max_offsets is not None and min_offsets > max_offsets:
        raise ValueError(
            f"The value of minOffsetPerTrigger({min_offsets}) is higher than the "
            f"maxOffsetsPerTrigger({max_offsets})."
        )
    reader = params.get("reader", "auto").strip().lower()
    if reader not in ("auto", "raw", "consumer"):
        raise ValueError(f"Invalid value '{reader}' for option 'reader', must be 'auto', 'raw' or 'consumer'")
    if token_login and reader == "consumer":
        raise ValueError(
            "reader=consumer (librdkafka) cannot log in with a delegation token (tokenauth=true)"
        )
    return SourceOptions(
        kafka_params=kafka_params,
        subscription=subscription,
        starting=starting,
        ending=ending,
        starting_by_timestamp_strategy=strategy,
        fail_on_data_loss=_boolean(params, "failondataloss", True),
        include_headers=_boolean(params, "includeheaders", False),
        min_partitions=_positive(params, "minpartitions", "minPartitions must be positive"),
        max_records_per_partition=_positive(
            params, "maxrecordsperpartition", "maxrecordsperpartition must be positive"
        ),
        max_offsets_per_trigger=max_offsets,
        min_offsets_per_trigger=min_offsets,
        max_trigger_delay_ms=_duration_ms(params.get("maxtriggerdelay", "15m"), "maxTriggerDelay"),
        poll_timeout_ms=_positive(params, "kafkaconsumer.polltimeoutms") or 120_000,
        group_id_prefix=params.get("groupidprefix", "spark-kafka-source"),
        reader=reader,
        token_login=token_login,
    )


def parse_sink_options(options: Mapping[str, str]) -> SinkOptions:
    params = {key.lower(): value for key, value in options.items()}
    _reject_unknown(params, _SINK_KEYS)
    topic = params.get("topic")
    kafka_params, token_login = _kafka_params(params, for_producer=True)
    prefix = params.get("transactionalidprefix", "").strip() or None
    exactly_once = _boolean(params, "exactlyonce", False)
    batch_id = params.get("batchid")
    if exactly_once and prefix is None:
        raise ValueError("exactlyOnce=true needs the option 'transactionalIdPrefix' (one per query)")
    if not exactly_once and (prefix is not None or batch_id is not None):
        raise ValueError("options 'transactionalIdPrefix' and 'batchId' apply only with exactlyOnce=true")
    unsupported = unsupported_settings(kafka_params) if exactly_once else []
    if unsupported:
        raise ValueError(
            f"Kafka option(s) {', '.join(unsupported)} not supported with exactlyOnce=true (its "
            "two-phase commit client reads security.protocol, the TLS key and trust settings, "
            "ssl.endpoint.identification.algorithm, ssl.cipher.suites and sasl.mechanism/username/password)"
        )
    if exactly_once and "transactional.id" in kafka_params:
        raise ValueError("Kafka option 'transactional.id' is set by the sink in exactlyOnce mode")
    if batch_id is not None and not batch_id.strip().isdigit():
        raise ValueError(f"Invalid value '{batch_id}' for option 'batchId', must be a batch id (0 or more)")
    return SinkOptions(
        kafka_params=kafka_params,
        topic=topic.strip() if topic else None,
        transactional_id_prefix=prefix if exactly_once else None,
        batch_id=int(batch_id) if batch_id is not None else None,
        token_login=token_login,
    )


def _reject_unknown(params: Mapping[str, str], known: set[str]) -> None:
    unknown = sorted(
        k for k in params if not k.startswith("kafka.") and k not in known and k not in _SPARK_KEYS
    )
    if unknown:
        raise ValueError(
            f"Unknown option(s) for the odradek format: {', '.join(unknown)}. "
            f"Known options: kafka.*, {', '.join(sorted(known))}."
        )


def _kafka_params(params: Mapping[str, str], *, for_producer: bool) -> tuple[dict[str, str], bool]:
    """The Kafka client settings in librdkafka's names, and whether the login is a delegation token's."""
    kafka = {key[len("kafka.") :]: value for key, value in params.items() if key.startswith("kafka.")}
    if for_producer:
        for name, what in (("key.serializer", "keys"), ("value.serializer", "values")):
            if name in kafka:
                raise ValueError(
                    f"Kafka option '{name}' is not supported as {what} are serialized with "
                    "ByteArraySerializer."
                )
    else:
        if "auto.offset.reset" in kafka:
            raise ValueError(_AUTO_OFFSET_RESET_MESSAGE)
        for name, what in (("key.deserializer", "keys"), ("value.deserializer", "values")):
            if name in kafka:
                raise ValueError(
                    f"Kafka option '{name}' is not supported as {what} are deserialized as byte arrays with "
                    f"ByteArrayDeserializer. Use DataFrame operations to explicitly deserialize the {what}."
                )
        for name in ("enable.auto.commit", "interceptor.classes"):
            if name in kafka:
                raise ValueError(f"Kafka option '{name}' is not supported")
    if "bootstrap.servers" not in kafka:
        role = "producer" if for_producer else "consumer"
        raise ValueError(f"Option 'kafka.bootstrap.servers' must be specified for configuring Kafka {role}")
    token_login = take_token_login(kafka)
    config = librdkafka_security(kafka)
    if token_login:
        _check_token_settings(config)
    return config, token_login


def _check_token_settings(config: Mapping[str, str]) -> None:
    """A token's login connects through odradek's own client only, which reads the connection's
    security settings and nothing else: any other Kafka option would be ignored, so it is refused."""
    unsupported = sorted(k for k in config if k not in SETTINGS and k != "bootstrap.servers")
    if unsupported:
        raise ValueError(
            f"Kafka option(s) {', '.join(unsupported)} not supported with a delegation token login "
            "(tokenauth=true): its connections go through odradek's own client, which reads "
            "bootstrap.servers, security.protocol, the TLS key and trust settings, "
            "ssl.endpoint.identification.algorithm, ssl.cipher.suites and sasl.mechanism"
        )
    try:
        client_security(config, token=True)
    except ClientSecurityError as error:
        raise ValueError(f"Delegation token login (tokenauth=true): {error}") from None


def token_security(params: Mapping[str, str]) -> ClientSecurity:
    """The connections' TLS and a token's SASL login for odradek's client (made where used: an SSL
    context does not travel to the executors)."""
    return client_security(params, token=True)


def _subscription(params: Mapping[str, str]) -> Subscription:
    given = [key for key in STRATEGY_KEYS if key in params]
    names = "subscribe, subscribepattern, assign"
    if not given:
        raise ValueError(
            f"One of the following options must be specified for Kafka source: {names}. "
            "See the docs for more details."
        )
    if len(given) > 1:
        raise ValueError(
            f"Only one of the following options can be specified for Kafka source: {names}. "
            "See the docs for more details."
        )
    key = given[0]
    value = params[key]
    if key == "assign":
        if not value.strip().startswith("{"):
            raise ValueError(
                f"No topicpartitions to assign as specified value for option 'assign' is '{value}'"
            )
        return Subscription(assigned=tuple(parse_partitions(value)))
    if key == "subscribe":
        topics = tuple(t.strip() for t in value.split(",") if t.strip())
        if not topics:
            raise ValueError(
                f"No topics to subscribe to as specified value for option 'subscribe' is '{value}'"
            )
        return Subscription(topics=topics)
    pattern = value.strip()
    if not pattern:
        raise ValueError(
            f"Pattern to subscribe is empty as specified value for option 'subscribePattern' is '{value}'"
        )
    try:
        re.compile(pattern)
    except re.error as error:
        raise ValueError(f"Invalid regular expression for option 'subscribePattern': {error}") from None
    return Subscription(pattern=pattern)


def _offset_limit(
    params: Mapping[str, str], global_key: str, by_timestamp_key: str, offsets_key: str, default: OffsetSpec
) -> OffsetSpec:
    """Spark's precedence: a global timestamp, then per-partition timestamps, then offsets."""
    if global_key in params:
        value = params[global_key].strip()
        try:
            return OffsetSpec(timestamp=int(value))
        except ValueError:
            raise ValueError(f"Invalid value '{value}' for option '{global_key}', must be a long") from None
    if by_timestamp_key in params:
        return parse_timestamp_spec(params[by_timestamp_key])
    if offsets_key in params:
        return parse_offset_spec(params[offsets_key])
    return default


def _check_batch_limits(starting: OffsetSpec, ending: OffsetSpec) -> None:
    if starting.kind == "latest":
        raise ValueError("starting offset can't be latest for batch queries on Kafka")
    for (topic, partition), offset in (starting.partition_offsets or {}).items():
        if offset == -1:
            raise ValueError(
                f"startingOffsets for {topic}-{partition} can't be latest for batch queries on Kafka"
            )
    if ending.kind == "earliest":
        raise ValueError("ending offset can't be earliest for batch queries on Kafka")
    for (topic, partition), offset in (ending.partition_offsets or {}).items():
        if offset == -2:
            raise ValueError(
                f"ending offset for {topic}-{partition} can't be earliest for batch queries on Kafka"
            )
    if starting.partition_offsets is not None and ending.partition_offsets is not None:
        start_keys, end_keys = set(starting.partition_offsets), set(ending.partition_offsets)
        if start_keys != end_keys:
            raise ValueError(
                "The specified start and end offsets do not have the same topic-partitions: "
                f"start {sorted(start_keys)}, end {sorted(end_keys)}"
            )
        for tp, start in starting.partition_offsets.items():
            end = ending.partition_offsets[tp]
            if start >= 0 and end >= 0 and start > end:
                raise ValueError(
                    f"The specified starting offset ({start}) is greater than the ending offset ({end}) "
                    f"for topic partition {tp[0]}-{tp[1]}"
                )


def _boolean(params: Mapping[str, str], key: str, default: bool) -> bool:
    if key not in params:
        return default
    value = params[key].strip().lower()
    if value not in ("true", "false"):
        raise ValueError(f"Invalid value '{params[key]}' for option '{key}', must be true or false")
    return value == "true"


def _positive(params: Mapping[str, str], key: str, message: str | None = None) -> int | None:
    if key not in params:
        return None
    try:
        value = int(params[key].strip())
    except ValueError:
        raise ValueError(
            f"Invalid value '{params[key]}' for option '{key}', must be a positive integer"
        ) from None
    if value <= 0:
        raise ValueError(message or f"Invalid value '{value}' for option '{key}', must be a positive integer")
    return value


_DURATION = re.compile(r"^\s*(\d+)\s*(ms|s|m|min|h|d)?\s*$")
_UNIT_MS = {None: 1, "ms": 1, "s": 1000, "m": 60_000, "min": 60_000, "h": 3_600_000, "d": 86_400_000}


def _duration_ms(value: str, name: str) -> int:
    match = _DURATION.match(value.lower())
    if match is None:
        raise ValueError(
            f"Invalid value '{value}' for option '{name}', must be a duration such as 30s or 15m"
        )
    return int(match.group(1)) * _UNIT_MS[match.group(2)]
