"""The driver's view of the cluster: which partitions a subscription covers, and their offsets.

One confluent-kafka consumer that never subscribes or commits: it lists topics, and asks ListOffsets for
earliest (-2), latest (-1) and by-timestamp offsets of many partitions in one request each. Created
lazily and never pickled (Spark pickles readers to send them to workers). A delegation token's login,
which librdkafka cannot make, asks the same through odradek's own client (client/offsets.py); a topic
the token's owner may not describe is then refused (TOPIC_AUTHORIZATION_FAILED), as by Spark's
connector, rather than left out.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar

from odradek.client.cluster import Cluster, RequestError
from odradek.client.offsets import list_offsets, topic_partitions
from odradek.client.security import ClientSecurityError
from odradek.spark.kafka_options import token_security
from odradek.spark.offsets import EARLIEST_OFFSET, LATEST_OFFSET, OffsetSpec, TopicPartition
from odradek.spark.options import SourceOptions
from odradek.spark.security import KafkaAuthenticationError, check_connection, is_secured

_T = TypeVar("_T")
_TIMEOUT_S = 30.0


class OffsetReader:
    def __init__(self, options: SourceOptions, role: str = "driver") -> None:
        self.options = options
        self.role = role
        self._consumer: Any = None
        self._cluster: Cluster | None = None

    def __getstate__(self) -> dict[str, Any]:
        return {"options": self.options, "role": self.role, "_consumer": None, "_cluster": None}

    def close(self) -> None:
        if self._consumer is not None:
            self._consumer.close()
            self._consumer = None
        if self._cluster is not None:
            self._cluster.close()
            self._cluster = None

    @property
    def cluster(self) -> Cluster:
        """odradek's client, for a delegation token's login."""
        if self._cluster is None:
            bootstrap = self.options.kafka_params["bootstrap.servers"]
            self._cluster = Cluster(bootstrap, _TIMEOUT_S, token_security(self.options.kafka_params))
        return self._cluster

    @property
    def consumer(self) -> Any:
        if self._consumer is None:
            from confluent_kafka import Consumer

            config = self.options.consumer_config(self.role)
            consumer = Consumer(config)
            if is_secured(config):
                try:
                    check_connection(consumer, _TIMEOUT_S)
                except BaseException:
                    consumer.close()
                    raise
            self._consumer = consumer
        return self._consumer

    def topic_partitions(self) -> list[TopicPartition]:
        """The partitions the subscription covers now (for `assign`, exactly the assigned ones)."""
        subscription = self.options.subscription
        if subscription.assigned:
            return sorted(subscription.assigned)
        if self.options.token_login:
            return self._token_topic_partitions()
        metadata = self._retry(lambda: self.consumer.list_topics(timeout=_TIMEOUT_S))
        result: list[TopicPartition] = []
        for name, topic in metadata.topics.items():
            if topic.error is not None or not subscription.matches(name):
                continue
            if subscription.pattern is not None and name.startswith("__"):
                continue  # internal topics, as the Java consumer's exclude.internal.topics
            result.extend((name, p) for p in topic.partitions)
        return sorted(result)

    def _token_topic_partitions(self) -> list[TopicPartition]:
        subscription = self.options.subscription
        names = None if subscription.pattern is not None else sorted(subscription.topics)
        found = self._retry(lambda: topic_partitions(self.cluster, names))
        return sorted(
            (name, p)
            for name, partitions in found.items()
            if subscription.matches(name) and not (subscription.pattern is not None and name.startswith("__"))
            for p in partitions
        )

    def earliest(self, partitions: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
        return self._list_offsets({tp: EARLIEST_OFFSET for tp in partitions})

    def latest(self, partitions: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
        return self._list_offsets({tp: LATEST_OFFSET for tp in partitions})

    def for_timestamps(self, timestamps: Mapping[TopicPartition, int]) -> dict[TopicPartition, int | None]:
        """The first offset whose timestamp is at or after the given one; None where there is none."""
        found = self._list_offsets(dict(timestamps))
        return {tp: (offset if offset >= 0 else None) for tp, offset in found.items()}

    def resolve(
        self, spec: OffsetSpec, partitions: list[TopicPartition], *, is_start: bool
    ) -> dict[TopicPartition, int]:
        """Concrete offsets for `partitions` from a spec (earliest/latest are resolved too)."""
        if spec.kind == "earliest":
            return self.earliest(partitions)
        if spec.kind == "latest":
            return self.latest(partitions)
        if spec.kind == "offsets":
            given = spec.partition_offsets or {}
            if set(given) != set(partitions):
                option = "startingOffsets" if is_start else "endingOffsets"
                raise ValueError(
                    f"If {option} contains specific offsets, you must specify all TopicPartitions.\n"
                    "Use -1 for latest, -2 for earliest.\n"
                    f"Specified: {_names(given)} Assigned: {_names(partitions)}"
                )
            return self._concrete(given)
        if spec.kind == "timestamp":
            assert spec.timestamp is not None
            timestamps = {tp: spec.timestamp for tp in partitions}
        else:
            timestamps = dict(spec.partition_timestamps or {})
            if set(timestamps) != set(partitions):
                option = "startingOffsetsByTimestamp" if is_start else "endingOffsetsByTimestamp"
                raise ValueError(
                    f"If {option} contains specific timestamps, you must specify all topic partitions.\n"
                    f"Specified: {_names(timestamps)} Assigned: {_names(partitions)}"
                )
        return self._from_timestamps(timestamps, is_start=is_start)

    def _from_timestamps(
        self, timestamps: dict[TopicPartition, int], *, is_start: bool
    ) -> dict[TopicPartition, int]:
        found = self.for_timestamps(timestamps)
        missing = [tp for tp, offset in found.items() if offset is None]
        result = {tp: offset for tp, offset in found.items() if offset is not None}
        if missing:
            if is_start and self.options.starting_by_timestamp_strategy == "error":
                tp = missing[0]
                raise ValueError(
                    f"No offset matched from request of topic-partition {tp[0]}-{tp[1]} and timestamp "
                    f"{timestamps[tp]}."
                )
            result.update(self.latest(missing))
        return result

    def _concrete(self, offsets: dict[TopicPartition, int]) -> dict[TopicPartition, int]:
        earliest = [tp for tp, o in offsets.items() if o == EARLIEST_OFFSET]
        latest = [tp for tp, o in offsets.items() if o == LATEST_OFFSET]
        result = dict(offsets)
        if earliest:
            result.update(self.earliest(earliest))
        if latest:
            result.update(self.latest(latest))
        return result

    def _list_offsets(self, queries: dict[TopicPartition, int]) -> dict[TopicPartition, int]:
        if not queries:
            return {}
        if self.options.token_login:
            return self._retry(lambda: list_offsets(self.cluster, queries, _TIMEOUT_S))
        from confluent_kafka import TopicPartition as KafkaTopicPartition

        request = [KafkaTopicPartition(t, p, q) for (t, p), q in queries.items()]

        def call() -> dict[TopicPartition, int]:
            answers = self.consumer.offsets_for_times(request, timeout=_TIMEOUT_S)
            for answer in answers:
                if answer.error is not None:
                    raise RuntimeError(f"ListOffsets for {answer.topic}-{answer.partition}: {answer.error}")
            return {(a.topic, a.partition): a.offset for a in answers}

        return self._retry(call)

    def _retry(self, call: Callable[[], _T], retries: int = 3, interval_s: float = 1.0) -> _T:
        for attempt in range(retries + 1):
            try:
                return call()
            except (KafkaAuthenticationError, ClientSecurityError, RequestError):
                raise  # a refused login or request: final (RequestError's retriable ones were retried)
            except Exception:
                if attempt == retries:
                    raise
                time.sleep(interval_s)
        raise AssertionError("unreachable")


def _names(partitions: Iterable[TopicPartition]) -> str:
    return "[" + ", ".join(f"{t}-{p}" for t, p in sorted(partitions)) + "]"
