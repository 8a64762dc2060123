"""An in-process group coordinator on real partition logs, with a manual clock and timer.

Time only moves when a test calls `advance(ms)`: every timer due by then fires in deadline order (and
timers they schedule, if due too), exactly as the coordinator's loop timers would, but without sleeps.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
from collections.abc import Awaitable
from pathlib import Path
from typing import Any, TypeVar

from odradek.cluster.internal_topics import SingleNodeInternalTopics
from odradek.cluster.metadata import BrokerEndpoint, ClusterMetadata
from odradek.cluster.metadata.topics import LocalTopicAdmin
from odradek.config.broker import BrokerConfig
from odradek.config.group_catalog import GroupConfigLookup, no_group_configs
from odradek.config.topic import resolve_topic_config
from odradek.coordinator.group_coordinator import GroupCoordinator
from odradek.coordinator.timer import Operation, Runner
from odradek.partition.replica_manager import ReplicaManager
from odradek.partition.share.persister import SharePersister
from odradek.protocol.messages.consumer_protocol_subscription import ConsumerProtocolSubscription
from odradek.protocol.messages.join_group import JoinGroupRequest, JoinGroupRequestProtocol, JoinGroupResponse
from odradek.storage.config import LogConfig
from odradek.storage.log_manager import LogManager

T = TypeVar("T")
START_MS = 1_700_000_000_000
DEFAULTS = {
    "group.initial.rebalance.delay.ms": "0",
    "group.min.session.timeout.ms": "10",
    "offsets.topic.num.partitions": "1",
}


class ManualClock:
    def __init__(self) -> None:
        self.now_ms = START_MS

    def __call__(self) -> float:
        return self.now_ms / 1000


class ManualTimer:
    """CoordinatorTimer's interface on a manual clock."""

    def __init__(self, runner: Runner, clock: ManualClock) -> None:
        self.runner = runner
        self.clock = clock
        self.due: dict[str, tuple[int, int, Operation]] = {}
        self._order = itertools.count()

    def schedule(self, key: str, delay_ms: float, operation: Operation) -> None:
        self.due[key] = (self.clock.now_ms + int(delay_ms), next(self._order), operation)

    def cancel(self, key: str) -> None:
        self.due.pop(key, None)

    def is_scheduled(self, key: str) -> bool:
        return key in self.due

    def cancel_all(self) -> None:
        self.due.clear()

    def __len__(self) -> int:
        return len(self.due)

    def fire_until(self, deadline_ms: int) -> None:
        while True:
            ready = [(at, order, key) for key, (at, order, _) in self.due.items() if at <= deadline_ms]
            if not ready:
                return
            at, _, key = heapq.nsmallest(1, ready)[0]
            _, _, operation = self.due.pop(key)
            self.clock.now_ms = max(self.clock.now_ms, at)
            self.runner(key, operation)


class Harness:
    def __init__(
        self,
        tmp_path: Path,
        *,
        share_persister: SharePersister | None = None,
        group_configs: GroupConfigLookup = no_group_configs,
        **overrides: str,
    ) -> None:
        self.overrides = overrides
        self.share_persister = share_persister
        settings = {"node.id": "1", "log.dirs": str(tmp_path), **DEFAULTS, **overrides}
        self.config = BrokerConfig(settings, warn_unknown=False)
        self.tmp_path = tmp_path
        self.clock = ManualClock()
        self.timers: list[ManualTimer] = []
        self.logs = LogManager(
            [tmp_path], LogConfig.from_mapping(dict(resolve_topic_config({}, self.config)))
        )
        self.logs.startup()
        self.cluster = ClusterMetadata("cluster", 1, [BrokerEndpoint(1, "localhost", 9092)])
        self.replicas = ReplicaManager(1, self.cluster, self.logs)
        self.topics = LocalTopicAdmin(self.config, self.cluster, self.logs, 1, self.replicas)
        self.topics.load()
        self.coordinator = GroupCoordinator(
            self.config,
            self.cluster,
            SingleNodeInternalTopics(self.topics, self.cluster),
            self.logs,
            1,
            leadership=self.replicas,
            share_persister=share_persister,
            group_configs=group_configs,
            clock=self.clock,
            timer_factory=self._timer,
        )

    def _timer(self, runner: Runner) -> ManualTimer:
        timer = ManualTimer(runner, self.clock)
        self.timers.append(timer)
        return timer

    async def start(self) -> GroupCoordinator:
        await self.coordinator.start()
        await self.coordinator.runtime.wait_loaded()
        return self.coordinator

    def stop(self) -> None:
        self.coordinator.stop()
        self.logs.shutdown()

    async def restart(self) -> GroupCoordinator:
        """A new coordinator on the same logs (as after a broker restart)."""
        self.stop()
        now = self.clock.now_ms
        fresh = Harness(self.tmp_path, share_persister=self.share_persister, **self.overrides)
        fresh.clock.now_ms = now
        self.__dict__.update(fresh.__dict__)
        return await self.start()

    async def advance(self, ms: int) -> None:
        """Move the clock by `ms`, firing due timers, then let waiting requests run."""
        await settle()
        deadline = self.clock.now_ms + ms
        for timer in list(self.timers):
            timer.fire_until(deadline)
        self.clock.now_ms = deadline
        await settle()

    async def create_topic(self, name: str, partitions: int = 3) -> None:
        await self.topics.create_topic(name, partitions, 1)


async def settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


def subscription(*topics: str) -> bytes:
    return b"\x00\x00" + ConsumerProtocolSubscription(topics=list(topics), user_data=None).encode(0)


def join_request(
    group: str,
    member_id: str = "",
    *,
    session_ms: int = 1000,
    rebalance_ms: int = 2000,
    instance: str | None = None,
    protocols: tuple[str, ...] = ("range",),
    topics: tuple[str, ...] = ("t",),
) -> JoinGroupRequest:
    return JoinGroupRequest(
        group_id=group,
        session_timeout_ms=session_ms,
        rebalance_timeout_ms=rebalance_ms,
        member_id=member_id,
        group_instance_id=instance,
        protocol_type="consumer",
        protocols=[JoinGroupRequestProtocol(name=p, metadata=subscription(*topics)) for p in protocols],
    )


def start(awaitable: Awaitable[T]) -> asyncio.Task[T]:
    return asyncio.ensure_future(awaitable)


async def join(
    h: Harness, request: JoinGroupRequest, version: int = 7, client_id: str = "client"
) -> asyncio.Task[JoinGroupResponse]:
    """Send a JoinGroup; returns its task (done at once, or when the join phase completes).
    Timers due now (a zero initial rebalance delay) fire before it returns."""
    task = start(h.coordinator.join_group(request, version, client_id, "/127.0.0.1"))
    await h.advance(0)
    return task


async def join_new_member(h: Harness, group: str, **options: Any) -> asyncio.Task[JoinGroupResponse]:
    """The two JoinGroups of a new member (MEMBER_ID_REQUIRED, then with the id)."""
    first = await join(h, join_request(group, **options))
    assert first.done() and first.result().error_code == 79
    return await join(h, join_request(group, first.result().member_id, **options))
