"""The kinds of group a `__consumer_offsets` shard holds, under one name.

Kafka's group coordinator keeps every group behind one `Group` interface; here the shard branches on
the kind where their rules differ (classic, consumer (KIP-848), share (KIP-932)), so a group is one of
the three classes. The modules that work on a shard's groups (the shard, the consumer protocol and its
replay, the classic rebalancer, the share members) import the name from here, below all of them.
"""

from __future__ import annotations

from typing import TypeAlias

from odradek.coordinator.classic_group import ClassicGroup
from odradek.coordinator.consumer_group import ConsumerGroup
from odradek.coordinator.share_group import ShareGroup

Group: TypeAlias = ClassicGroup | ConsumerGroup | ShareGroup
