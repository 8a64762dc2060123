"""Where CLIENT_METRICS config resources are kept: a single node's log dir or ZooKeeper
(cluster/metadata/client_metrics.py: a local and a ZooKeeper store). Either applies what it stores to
the broker's ClientMetricsManager (the ZooKeeper one on every broker, through the change notifications),
which is what DescribeConfigs and ListConfigResources read."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

#: A change of a subscription's configs: the new whole set from the current one; it raises KafkaError
#: (an invalid change) before anything is written.
ConfigChange = Callable[[dict[str, str]], dict[str, str]]


class ClientMetricsConfigStore(Protocol):
    async def alter(self, name: str, change: ConfigChange, *, validate_only: bool) -> None:
        """Apply `change` to the subscription's stored configs, as one step against other changes; an
        empty result deletes the subscription."""
        ...
