"""What a request costs against its client's quotas, and the throttle time written into its response."""

from __future__ import annotations

from odradek.protocol.api_keys import ApiKey
from odradek.protocol.messages.fetch import (
    FetchableTopicResponse,
    FetchRequest,
    FetchResponse,
    PartitionData,
    ReplicaState,
)
from odradek.protocol.messages.metadata import MetadataResponse
from odradek.protocol.messages.produce import ProduceResponse
from odradek.security.client_quotas import ClientQuotas, now_ms
from odradek.security.quota_entities import DEFAULT, QuotaEntity
from odradek.server.client_throttling import before_handling, throttle_time_ms


def _quotas(**values: float) -> ClientQuotas:
    quotas = ClientQuotas(11, 1)
    quotas.apply(QuotaEntity(client_id=DEFAULT), values)
    return quotas


def _fetch_response(size: int) -> FetchResponse:
    partition = PartitionData(partition_index=0, records=b"x" * size)
    return FetchResponse(responses=[FetchableTopicResponse(topic="t", partitions=[partition])])


def test_a_produce_over_the_byte_rate_is_throttled_in_its_response() -> None:
    quotas = _quotas(producer_byte_rate=100.0)
    response = ProduceResponse(responses=[])
    # 3000 bytes in one go against 100 B/s over 10 s windows: (300 - 100) / 100 * 10 s.
    throttle = throttle_time_ms(quotas, ApiKey.PRODUCE, 9, None, response, 3000, 0.0, "ANONYMOUS", "p")
    assert throttle == 20_000
    assert response.throttle_time_ms == 20_000


def test_a_produce_within_the_rate_and_an_unlimited_client_are_not_throttled() -> None:
    quotas = ClientQuotas(11, 1)
    quotas.apply(QuotaEntity(client_id="slow"), {"producer_byte_rate": 100.0})
    for client in ("slow", "fast"):
        response = ProduceResponse(responses=[])
        size = 500 if client == "slow" else 10_000_000
        assert (
            throttle_time_ms(quotas, ApiKey.PRODUCE, 9, None, response, size, 0.0, "ANONYMOUS", client) == 0
        )
        assert response.throttle_time_ms == 0


def test_a_consumer_fetch_counts_its_record_bytes_and_a_follower_fetch_is_exempt() -> None:
    quotas = _quotas(consumer_byte_rate=100.0)
    consumer = FetchRequest(replica_id=-1)
    follower = FetchRequest(replica_state=ReplicaState(replica_id=2))
    assert throttle_time_ms(quotas, ApiKey.FETCH, 15, follower, _fetch_response(5000), 0, 0.0, "A", "c") == 0
    response = _fetch_response(3000)
    assert throttle_time_ms(quotas, ApiKey.FETCH, 12, consumer, response, 0, 0.0, "A", "c") == 20_000
    assert response.throttle_time_ms == 20_000


def test_a_consumer_fetch_asks_for_no_more_than_one_quota_window_carries() -> None:
    quotas = _quotas(consumer_byte_rate=100.0)
    request = FetchRequest(replica_id=-1, max_bytes=50 * 1024 * 1024)
    before_handling(quotas, ApiKey.FETCH, 12, request, "A", "c")
    assert request.max_bytes == 100 * 10  # 100 B/s * (11 - 1) windows of 1 s


def test_the_request_quota_counts_handling_time_and_caps_the_throttle_at_one_window() -> None:
    quotas = _quotas(request_percentage=1.0)
    response = MetadataResponse()
    # 2 s of handling is 200 % against 1 %: far over, but the throttle is capped at the 1 s window.
    assert throttle_time_ms(quotas, ApiKey.METADATA, 12, None, response, 0, 2.0, "A", "c") == 1000
    assert response.throttle_time_ms == 1000


def test_inter_broker_requests_are_exempt() -> None:
    quotas = _quotas(request_percentage=1.0)
    assert throttle_time_ms(quotas, ApiKey.LEADER_AND_ISR, 5, None, None, 0, 2.0, "A", "c") == 0


def test_a_throttled_consumer_fetch_takes_its_bytes_back_off_the_rate() -> None:
    # KIP-219: the throttled answer carries no records, so its bytes must not count against the client.
    quotas = _quotas(consumer_byte_rate=100.0)
    check = before_handling(quotas, ApiKey.FETCH, 12, FetchRequest(replica_id=-1), "A", "c")
    assert check is not None
    assert check(3000) == 20_000  # 3000 B over 10 s against 100 B/s: (300 - 100) / 100 * 10 s
    response = FetchResponse(throttle_time_ms=20_000)
    assert throttle_time_ms(quotas, ApiKey.FETCH, 12, None, response, 0, 0.0, "A", "c", check) == 20_000
    # The 3000 bytes were taken back: 900 more are within the rate (90 B/s).
    again = before_handling(quotas, ApiKey.FETCH, 12, FetchRequest(replica_id=-1), "A", "c")
    assert again is not None and again(900) == 0


def test_a_consumer_fetch_over_the_request_quota_is_answered_empty_too() -> None:
    quotas = _quotas(request_percentage=1.0, consumer_byte_rate=1e9)
    check = before_handling(quotas, ApiKey.FETCH, 12, FetchRequest(replica_id=-1), "A", "c")
    assert check is not None
    check.started -= 2.0  # 2 s of handling: 200 % against 1 %, throttled for the 1 s window
    assert check(5000) == 1000
    # Within its byte rate, but answered empty all the same: the bytes are not counted.
    assert all(sensor.rate.measure(now_ms()) == 0 for sensor in quotas.fetch.sensors.values())


def test_a_follower_fetch_gets_no_quota_check() -> None:
    quotas = _quotas(consumer_byte_rate=100.0)
    follower = FetchRequest(replica_state=ReplicaState(replica_id=2))
    assert before_handling(quotas, ApiKey.FETCH, 15, follower, "A", "c") is None
