"""The replication quotas on the metrics endpoint, as Kafka's LeaderReplication / FollowerReplication
byte-rate sensors: the rate of the throttled replicas measured now, with the bytes recorded and the
partitions held back counted, per side."""

from __future__ import annotations

from pathlib import Path

from tests.support.requirements import require_module

require_module("prometheus_client", allow_module_level=True)

from odradek.cluster.replication.replication_quota import ReplicationQuota, ReplicationQuotas  # noqa: E402
from odradek.server.broker_metrics import BrokerMetrics  # noqa: E402
from tests.support.handler_services import HandlerBroker  # noqa: E402


def test_each_sides_byte_rate_bytes_and_throttled_partitions_are_exported(tmp_path: Path) -> None:
    broker = HandlerBroker(tmp_path / "data")
    try:
        leader = ReplicationQuota("leader", 1, 11, 1, lambda: 1000)
        follower = ReplicationQuota("follower", 1, 11, 1, lambda: 1000)
        broker.services.replication_quotas = ReplicationQuotas(leader, follower)
        leader.record(5000)
        leader.count_throttled(2)
        follower.record(300)
        samples = {
            (sample.name, sample.labels.get("side")): sample.value
            for family in BrokerMetrics(broker.services, lambda: 0).collect()
            for sample in family.samples
            if sample.name.startswith("odradek_replication_quota")
        }
    finally:
        broker.close()
    assert samples[("odradek_replication_quota_bytes_total", "leader")] == 5000
    assert samples[("odradek_replication_quota_bytes_total", "follower")] == 300
    assert samples[("odradek_replication_quota_throttled_partitions_total", "leader")] == 2
    assert samples[("odradek_replication_quota_throttled_partitions_total", "follower")] == 0
    assert samples[("odradek_replication_quota_byte_rate", "leader")] > 1000  # over its bound now
    assert samples[("odradek_replication_quota_bound", "follower")] == 1000
