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
    unsupported_settings,
)
from odradek.spark.kafka_options import kafka_client_settings
from odradek.spark.offsets import (
    EARLIEST,
    LATEST,
    OffsetSpec,
    TopicPartition,
    parse_partitions,
)
from odradek.spark.option_values import (
    boolean_option,
    check_batch_limits,
    duration_ms,
    offset_limit,
    positive_option,
)
from odradek.spark.schema import source_columns
from odradek.spark.security import (
    SecurityConfigError,
    is_secured,
    raise_on_authentication_error,
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
    kafka_params, token_login = kafka_client_settings(params, for_producer=False)
    subscription = _subscription(params)
    starting = offset_limit(
        params,
        "startingtimestamp",
        "startingoffsetsbytimestamp",
        "startingoffsets",
        LATEST if streaming else EARLIEST,
    )
    ending = offset_limit(params, "endingtimestamp", "endingoffsetsbytimestamp", "endingoffsets", LATEST)
    if not streaming:
        check_batch_limits(starting, ending)
    strategy = params.get("startingoffsetsbytimestampstrategy", "error").strip().lower()
    if strategy not in ("error", "latest"):
        raise ValueError(
            f"Invalid value '{strategy}' for option 'startingOffsetsByTimestampStrategy', "
            "must be 'error' or 'latest'"
        )
    min_offsets = positive_option(params, "minoffsetspertrigger")
    max_offsets = positive_option(params, "maxoffsetspertrigger")
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
        fail_on_data_loss=boolean_option(params, "failondataloss", True),
        include_headers=boolean_option(params, "includeheaders", False),
        min_partitions=positive_option(params, "minpartitions", "minPartitions must be positive"),
        max_records_per_partition=positive_option(
            params, "maxrecordsperpartition", "maxrecordsperpartition must be positive"
        ),
        max_offsets_per_trigger=max_offsets,
        min_offsets_per_trigger=min_offsets,
        max_trigger_delay_ms=duration_ms(params.get("maxtriggerdelay", "15m"), "maxTriggerDelay"),
        poll_timeout_ms=positive_option(params, "kafkaconsumer.polltimeoutms") or 120_000,
        group_id_prefix=params.get("groupidprefix", "spark-kafka-source"),
        reader=reader,
        token_login=token_login,
    )


def parse_sink_options(options: Mapping[str, str]) -> SinkOptions:
    params = {key.lower(): value for key, value in options.items()}
    _reject_unknown(params, _SINK_KEYS)
    topic = params.get("topic")
    kafka_params, token_login = kafka_client_settings(params, for_producer=True)
    prefix = params.get("transactionalidprefix", "").strip() or None
    exactly_once = boolean_option(params, "exactlyonce", False)
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
