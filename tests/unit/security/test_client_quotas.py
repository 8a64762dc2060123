"""The quota managers: one rate per set of metric tags, shared as Kafka shares it, forgotten after an
hour of silence."""

from __future__ import annotations

from odradek.security.client_quotas import INACTIVE_SENSOR_EXPIRATION_MS, ClientQuotas
from odradek.security.quota_entities import DEFAULT, QuotaEntity


def test_a_user_quota_is_one_rate_shared_by_all_its_client_ids() -> None:
    quotas = ClientQuotas(11, 1)
    quotas.apply(QuotaEntity("alice"), {"producer_byte_rate": 100.0})
    assert quotas.produce.record_and_throttle_ms("alice", "app-1", 600, 0) == 0
    # The same user from another client id adds to the same rate: 1200 B over 10 s is over 100 B/s.
    assert quotas.produce.record_and_throttle_ms("alice", "app-2", 600, 0) == 2000
    assert list(quotas.produce.sensors) == [("alice", "")]


def test_a_default_client_id_quota_is_a_rate_per_client_id() -> None:
    quotas = ClientQuotas(11, 1)
    quotas.apply(QuotaEntity(client_id=DEFAULT), {"producer_byte_rate": 100.0})
    assert quotas.produce.record_and_throttle_ms("alice", "app-1", 600, 0) == 0
    assert quotas.produce.record_and_throttle_ms("bob", "app-2", 600, 0) == 0
    assert set(quotas.produce.sensors) == {("", "app-1"), ("", "app-2")}


def test_the_rate_of_a_client_silent_for_an_hour_is_forgotten() -> None:
    quotas = ClientQuotas(11, 1)
    quotas.apply(QuotaEntity(client_id=DEFAULT), {"producer_byte_rate": 100.0})
    quotas.produce.record_and_throttle_ms("u", "gone", 1, 0)
    quotas.produce.record_and_throttle_ms("u", "busy", 1, INACTIVE_SENSOR_EXPIRATION_MS - 1)
    assert set(quotas.produce.sensors) == {("", "gone"), ("", "busy")}
    # Looked for at most once a minute.
    quotas.produce.record_and_throttle_ms("u", "busy", 1, INACTIVE_SENSOR_EXPIRATION_MS + 1)
    assert set(quotas.produce.sensors) == {("", "gone"), ("", "busy")}
    quotas.produce.record_and_throttle_ms("u", "busy", 1, INACTIVE_SENSOR_EXPIRATION_MS + 60_000)
    assert set(quotas.produce.sensors) == {("", "busy")}


def test_quotas_are_active_only_while_one_is_configured() -> None:
    quotas = ClientQuotas(11, 1)
    assert not quotas.active
    quotas.apply(QuotaEntity("alice"), {"request_percentage": 10.0})
    assert quotas.active and quotas.request.enabled and not quotas.produce.enabled
    quotas.apply(QuotaEntity("alice"), {})
    assert not quotas.active


def test_connections_over_an_ips_rate_are_throttled_for_at_most_a_window_and_not_counted() -> None:
    quotas = ClientQuotas(2, 1)
    assert quotas.connection_throttle_ms("10.0.0.1", 0) == 0  # no IP quota: nothing measured
    assert quotas.connection_rates == {}
    quotas.apply(QuotaEntity(ip="10.0.0.1"), {"connection_creation_rate": 2.0})
    quotas.apply(QuotaEntity(ip=DEFAULT), {"connection_creation_rate": 0.0})
    assert quotas.connection_throttle_ms("10.0.0.1", 0) == 0
    assert quotas.connection_throttle_ms("10.0.0.1", 0) == 0
    # A third within the second: 3/s over 2/s, (3 - 2) / 2 * 1000 ms. It is not counted, so the
    # next one is throttled the same.
    assert quotas.connection_throttle_ms("10.0.0.1", 0) == 500
    assert quotas.connection_throttle_ms("10.0.0.1", 0) == 500
    # The default IP's rate of 0 admits nothing: each for one window.
    assert quotas.connection_throttle_ms("10.0.0.2", 0) == 1000
    # IP quotas alone leave the request path alone.
    assert not quotas.active


def test_the_connection_rate_of_an_address_silent_for_an_hour_is_forgotten() -> None:
    """With a default IP quota every client address gets a rate: one per address ever seen, kept for
    good, grew without bound (Kafka's per-IP sensors expire after an hour of silence)."""
    quotas = ClientQuotas(11, 1)
    quotas.apply(QuotaEntity(ip=DEFAULT), {"connection_creation_rate": 100.0})
    for host in range(50):
        quotas.connection_throttle_ms(f"10.0.0.{host}", 0)
    quotas.connection_throttle_ms("10.0.1.1", INACTIVE_SENSOR_EXPIRATION_MS - 1)
    assert len(quotas.connection_rates) == 51
    quotas.connection_throttle_ms("10.0.1.1", INACTIVE_SENSOR_EXPIRATION_MS + 60_000)
    assert set(quotas.connection_rates) == {"10.0.1.1"}
