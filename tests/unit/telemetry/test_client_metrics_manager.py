"""The client instances of KIP-714 (Kafka's ClientMetricsManager): instance ids, subscription ids, the
push interval, the checks of a push, and the bounds on what a client can make the broker hold."""

from __future__ import annotations

import gzip
import uuid

import pytest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.metrics.v1.metrics_pb2 import (
    Gauge,
    Metric,
    MetricsData,
    NumberDataPoint,
    ResourceMetrics,
    ScopeMetrics,
    Sum,
)

from odradek.protocol.error_codes import ErrorCode, KafkaError
from odradek.telemetry.manager import ClientMetricsManager, Push
from odradek.telemetry.subscriptions import ClientAttributes

ZERO = uuid.UUID(int=0)
CLIENT = ClientAttributes(None, "producer-1", "apache-kafka-java", "4.4.0", "127.0.0.1", 50000)
NONE, GZIP, ZSTD = 0, 1, 4


def otlp(**values: float) -> bytes:
    metrics = [
        Metric(name=name, gauge=Gauge(data_points=[NumberDataPoint(as_double=value)]))
        for name, value in values.items()
    ]
    return MetricsData(
        resource_metrics=[ResourceMetrics(scope_metrics=[ScopeMetrics(metrics=metrics)])]
    ).SerializeToString()


def manager(**subscriptions: dict[str, str]) -> ClientMetricsManager:
    found = ClientMetricsManager(telemetry_max_bytes=1024 * 1024)
    for name, configs in subscriptions.items():
        found.update_subscription(name, configs)
    return found


def push(
    subject: ClientMetricsManager,
    instance: uuid.UUID,
    subscription_id: int,
    now_ms: int,
    payload: bytes = b"",
    *,
    compression: int = NONE,
    terminating: bool = False,
) -> None:
    subject.push(Push(instance, subscription_id, terminating, compression, payload), CLIENT, now_ms)


def error_of(call: object) -> ErrorCode:
    assert isinstance(call, KafkaError)
    return call.error_code


def test_a_client_without_an_instance_id_is_given_a_new_one_and_keeps_it() -> None:
    subject = manager(all={"metrics": "*", "interval.ms": "1000"})
    first = subject.get_subscriptions(uuid.UUID(int=0), CLIENT, now_ms=10_000)
    assert first.client_instance_id != uuid.UUID(int=0)
    assert first.requested_metrics == ["*"]
    assert first.push_interval_ms == 1000
    assert first.accepted_compression_types == [ZSTD, 3, GZIP, 2]  # Kafka's order of preference
    again = subject.get_subscriptions(first.client_instance_id, CLIENT, now_ms=11_000)
    assert again.client_instance_id == first.client_instance_id
    assert again.subscription_id == first.subscription_id


def test_a_client_that_matches_no_subscription_is_asked_for_no_metrics_every_five_minutes() -> None:
    subject = manager(consumers={"metrics": "org.apache.kafka.consumer", "match": "client_id=consumer-.*"})
    answer = subject.get_subscriptions(uuid.UUID(int=0), CLIENT, now_ms=0)
    assert answer.requested_metrics == []
    assert answer.push_interval_ms == 300_000


def test_overlapping_subscriptions_ask_for_the_union_of_their_metrics_at_the_shortest_interval() -> None:
    subject = manager(
        a={"metrics": "org.apache.kafka.producer", "interval.ms": "60000"},
        b={"metrics": "org.apache.kafka.consumer", "interval.ms": "30000"},
    )
    answer = subject.get_subscriptions(uuid.UUID(int=0), CLIENT, now_ms=0)
    assert sorted(answer.requested_metrics) == ["org.apache.kafka.consumer", "org.apache.kafka.producer"]
    assert answer.push_interval_ms == 30_000


def test_asking_for_subscriptions_again_before_the_push_interval_is_throttled() -> None:
    subject = manager(all={"metrics": "*", "interval.ms": "1000"})
    first = subject.get_subscriptions(uuid.UUID(int=0), CLIENT, now_ms=10_000)
    with pytest.raises(KafkaError) as early:
        subject.get_subscriptions(first.client_instance_id, CLIENT, now_ms=10_500)
    assert early.value.error_code == ErrorCode.THROTTLING_QUOTA_EXCEEDED


def test_a_changed_subscription_is_given_at_once_with_a_new_subscription_id() -> None:
    subject = manager(all={"metrics": "*", "interval.ms": "1000"})
    first = subject.get_subscriptions(uuid.UUID(int=0), CLIENT, now_ms=10_000)
    subject.update_subscription("all", {"metrics": "org.apache.kafka.producer", "interval.ms": "2000"})
    changed = subject.get_subscriptions(first.client_instance_id, CLIENT, now_ms=10_001)
    assert changed.requested_metrics == ["org.apache.kafka.producer"]
    assert changed.subscription_id != first.subscription_id
    with pytest.raises(KafkaError) as outdated:
        push(subject, first.client_instance_id, first.subscription_id, 10_002)
    assert outdated.value.error_code == ErrorCode.UNKNOWN_SUBSCRIPTION_ID


def test_a_push_right_after_the_subscription_is_accepted_and_the_next_early_one_throttled() -> None:
    subject = manager(all={"metrics": "*", "interval.ms": "1000"})
    answer = subject.get_subscriptions(uuid.UUID(int=0), CLIENT, now_ms=10_000)
    push(subject, answer.client_instance_id, answer.subscription_id, 10_100, otlp(a=1.0))
    with pytest.raises(KafkaError) as early:
        push(subject, answer.client_instance_id, answer.subscription_id, 10_600, otlp(a=2.0))
    assert early.value.error_code == ErrorCode.THROTTLING_QUOTA_EXCEEDED
    push(subject, answer.client_instance_id, answer.subscription_id, 11_100, otlp(a=3.0))
    assert [(p.name, p.value) for p in subject.instance(answer.client_instance_id).points] == [("a", 3.0)]


def test_a_terminating_push_is_accepted_early_and_nothing_after_it() -> None:
    subject = manager(all={"metrics": "*", "interval.ms": "1000"})
    answer = subject.get_subscriptions(uuid.UUID(int=0), CLIENT, now_ms=10_000)
    push(subject, answer.client_instance_id, answer.subscription_id, 10_100)
    push(subject, answer.client_instance_id, answer.subscription_id, 10_200, terminating=True)
    with pytest.raises(KafkaError) as after:
        push(subject, answer.client_instance_id, answer.subscription_id, 20_000)
    assert after.value.error_code == ErrorCode.INVALID_REQUEST


def test_a_push_with_the_zero_instance_id_is_an_invalid_request() -> None:
    with pytest.raises(KafkaError) as refused:
        push(manager(), uuid.UUID(int=0), 0, 0)
    assert refused.value.error_code == ErrorCode.INVALID_REQUEST


def test_a_push_in_an_unknown_compression_is_refused() -> None:
    subject = manager(all={"metrics": "*"})
    answer = subject.get_subscriptions(uuid.UUID(int=0), CLIENT, now_ms=0)
    with pytest.raises(KafkaError) as refused:
        push(subject, answer.client_instance_id, answer.subscription_id, 1, b"x", compression=9)
    assert refused.value.error_code == ErrorCode.UNSUPPORTED_COMPRESSION_TYPE


def test_a_push_larger_than_telemetry_max_bytes_is_refused() -> None:
    subject = ClientMetricsManager(telemetry_max_bytes=100)
    subject.update_subscription("all", {"metrics": "*"})
    answer = subject.get_subscriptions(uuid.UUID(int=0), CLIENT, now_ms=0)
    assert answer.telemetry_max_bytes == 100
    with pytest.raises(KafkaError) as refused:
        push(subject, answer.client_instance_id, answer.subscription_id, 1, b"x" * 101)
    assert refused.value.error_code == ErrorCode.TELEMETRY_TOO_LARGE


def test_a_compressed_push_is_decoded() -> None:
    subject = manager(all={"metrics": "*"})
    answer = subject.get_subscriptions(uuid.UUID(int=0), CLIENT, now_ms=0)
    push(
        subject,
        answer.client_instance_id,
        answer.subscription_id,
        1,
        gzip.compress(otlp(b=2.5)),
        compression=GZIP,
    )
    assert [(p.name, p.value) for p in subject.instance(answer.client_instance_id).points] == [("b", 2.5)]


def test_a_push_that_is_not_otlp_is_an_invalid_record() -> None:
    subject = manager(all={"metrics": "*"})
    answer = subject.get_subscriptions(uuid.UUID(int=0), CLIENT, now_ms=0)
    with pytest.raises(KafkaError) as refused:
        push(subject, answer.client_instance_id, answer.subscription_id, 1, b"\xff\xff\xff garbage")
    assert refused.value.error_code == ErrorCode.INVALID_RECORD


def test_a_compressed_push_that_inflates_past_the_bound_is_an_invalid_record() -> None:
    subject = ClientMetricsManager(telemetry_max_bytes=64 * 1024)
    subject.update_subscription("all", {"metrics": "*"})
    answer = subject.get_subscriptions(uuid.UUID(int=0), CLIENT, now_ms=0)
    bomb = gzip.compress(b"\0" * (64 * 1024 * 1024))
    assert len(bomb) < 64 * 1024
    with pytest.raises(KafkaError) as refused:
        push(subject, answer.client_instance_id, answer.subscription_id, 1, bomb, compression=GZIP)
    assert refused.value.error_code == ErrorCode.INVALID_RECORD


def test_counters_and_attributes_are_kept_per_data_point() -> None:
    subject = manager(all={"metrics": "*"})
    answer = subject.get_subscriptions(uuid.UUID(int=0), CLIENT, now_ms=0)
    point = NumberDataPoint(
        as_int=7, attributes=[KeyValue(key="topic", value=AnyValue(string_value="orders"))]
    )
    payload = MetricsData(
        resource_metrics=[
            ResourceMetrics(
                scope_metrics=[
                    ScopeMetrics(
                        metrics=[Metric(name="records", sum=Sum(data_points=[point], is_monotonic=True))]
                    )
                ]
            )
        ]
    ).SerializeToString()
    push(subject, answer.client_instance_id, answer.subscription_id, 1, payload)
    [kept] = subject.instance(answer.client_instance_id).points
    assert (kept.name, kept.value, kept.attributes, kept.monotonic) == (
        "records",
        7.0,
        (("topic", "orders"),),
        True,
    )


def test_a_client_instance_expires_after_three_push_intervals_or_a_minute() -> None:
    subject = manager(all={"metrics": "*", "interval.ms": "100000"})
    answer = subject.get_subscriptions(uuid.UUID(int=0), CLIENT, now_ms=0)
    subject.expire(now_ms=299_999)
    assert subject.instance(answer.client_instance_id) is not None
    subject.expire(now_ms=300_000)
    assert subject.instance(answer.client_instance_id) is None


def test_the_instance_cache_is_bounded_and_drops_the_least_recently_seen() -> None:
    subject = ClientMetricsManager(telemetry_max_bytes=1024, max_instances=3)
    ids = [subject.get_subscriptions(uuid.UUID(int=0), CLIENT, now_ms=i).client_instance_id for i in range(4)]
    assert subject.instance(ids[0]) is None
    assert all(subject.instance(i) is not None for i in ids[1:])


def test_the_data_points_kept_are_bounded_across_every_client() -> None:
    subject = ClientMetricsManager(telemetry_max_bytes=1024 * 1024, max_points=5, max_points_per_instance=3)
    subject.update_subscription("all", {"metrics": "*"})
    first = subject.get_subscriptions(uuid.UUID(int=0), CLIENT, now_ms=0)
    push(subject, first.client_instance_id, first.subscription_id, 1, otlp(a=1, b=2, c=3, d=4))
    assert len(subject.instance(first.client_instance_id).points) == 3  # the rest are dropped
    second = subject.get_subscriptions(uuid.UUID(int=0), CLIENT, now_ms=2)
    push(subject, second.client_instance_id, second.subscription_id, 3, otlp(a=1, b=2, c=3))
    # over the broker's bound: the points of the client that pushed least recently make room
    assert subject.instance(first.client_instance_id).points == ()
    assert len(subject.instance(second.client_instance_id).points) == 3
    assert subject.point_count == 3


def test_instances_with_the_longest_client_ids_cannot_hold_more_than_the_byte_bound() -> None:
    subject = ClientMetricsManager(telemetry_max_bytes=1024, max_instance_bytes=100_000)
    long_id = CLIENT._replace(client_id="c" * 30_000)  # a request header's client id may be 32 KiB
    for now in range(10):
        subject.get_subscriptions(uuid.UUID(int=0), long_id, now_ms=now)
    assert len(subject.instances()) == 3  # 3 x 30 KB fit in 100 KB, the least recently seen went first
    assert subject.instance_bytes <= 100_000


def test_the_data_points_kept_are_bounded_in_bytes_across_every_client() -> None:
    subject = ClientMetricsManager(
        telemetry_max_bytes=1024 * 1024, max_point_bytes=2_500
    )  # five points of ~400 bytes fit, ten do not
    subject.update_subscription("all", {"metrics": "*"})
    first = subject.get_subscriptions(uuid.UUID(int=0), CLIENT, now_ms=0)
    push(
        subject,
        first.client_instance_id,
        first.subscription_id,
        1,
        otlp(**{"m" * 200 + str(i): i for i in range(5)}),
    )
    second = subject.get_subscriptions(uuid.UUID(int=0), CLIENT, now_ms=2)
    push(
        subject,
        second.client_instance_id,
        second.subscription_id,
        3,
        otlp(**{"n" * 200 + str(i): i for i in range(5)}),
    )
    assert subject.instance(first.client_instance_id).points == ()
    assert len(subject.instance(second.client_instance_id).points) == 5
    assert subject.point_bytes <= 2_500


def test_a_client_refused_for_its_codec_may_ask_for_its_subscription_again_at_once() -> None:
    # Kafka 4.4: a client told UNSUPPORTED_COMPRESSION_TYPE or UNKNOWN_SUBSCRIPTION_ID asks again at
    # once, and is answered rather than throttled
    subject = manager(all={"metrics": "*", "interval.ms": "60000"})
    answer = subject.get_subscriptions(uuid.UUID(int=0), CLIENT, now_ms=0)
    with pytest.raises(KafkaError):
        push(subject, answer.client_instance_id, answer.subscription_id, 1, b"x", compression=9)
    again = subject.get_subscriptions(answer.client_instance_id, CLIENT, now_ms=2)
    assert again.subscription_id == answer.subscription_id
    with pytest.raises(KafkaError) as unknown:
        push(subject, answer.client_instance_id, answer.subscription_id + 1, 60_003)  # not the id given
    assert unknown.value.error_code == ErrorCode.UNKNOWN_SUBSCRIPTION_ID
    subject.get_subscriptions(answer.client_instance_id, CLIENT, now_ms=60_004)


def test_clients_that_push_and_close_their_connections_leave_nothing_behind() -> None:
    subject = manager(all={"metrics": "*", "interval.ms": "1000"})
    for connection_id in range(1, 1001):
        answer = subject.get_subscriptions(ZERO, CLIENT, 0, connection_id=connection_id)
        subject.push(
            Push(answer.client_instance_id, answer.subscription_id, True, NONE, otlp(a=1.0)),
            CLIENT,
            1,
            connection_id=connection_id,
        )
        subject.connection_closed(connection_id)
    assert subject.instances() == []
    assert (subject.point_count, subject.point_bytes, subject.instance_bytes) == (0, 0, 0)
    assert subject.connections() == 0


def test_closing_another_connection_keeps_a_client_instance() -> None:
    subject = manager()
    answer = subject.get_subscriptions(ZERO, CLIENT, 0, connection_id=1)
    subject.connection_closed(2)
    assert subject.instance(answer.client_instance_id) is not None
    subject.connection_closed(1)
    assert subject.instance(answer.client_instance_id) is None


def test_an_expired_instance_forgets_its_connection() -> None:
    subject = manager()
    subject.get_subscriptions(ZERO, CLIENT, 0, connection_id=1)
    subject.expire(60 * 60_000)
    assert subject.instances() == [] and subject.connections() == 0
