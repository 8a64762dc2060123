"""Topic configs in a ZooKeeper cluster: read from /config/topics, followed through /config/changes.

As Kafka's ZkConfigManager with its TopicConfigHandler: a broker reads a topic's overrides when the
topic appears under /brokers/topics, and again whenever a /config/changes notification names it
(AlterConfigs on any broker writes the config, then the notification). What it read goes into the
metadata cache (DescribeConfigs, Metadata) and into the topic's logs on this broker (retention,
segment size, cleanup policy...). Logs created later by a LeaderAndIsr take them when the replica
manager reports the new replicas (`apply_known`), as do cache entries an UpdateMetadata creates.
Notifications of other entity types go to whoever follows that type (`follow`): the SCRAM credential
store follows `users`, the dynamic broker configs (cluster/metadata/broker_configs.py) `brokers`. Those
nobody follows are logged and not applied. After each round, notifications older than 15 minutes are
deleted, as Kafka's brokers do (ZkConfigManager).
`on_change` hears of each topic whose configs a notification changed (the controller elects offline
partitions again when a topic turns unclean election on).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

from odradek.cluster.config_changes import describe_configs
from odradek.cluster.metadata import ClusterMetadata
from odradek.cluster.zookeeper import paths
from odradek.cluster.zookeeper.client import ZooKeeperClient
from odradek.cluster.zookeeper.configs import config_changes_after, entity_config
from odradek.cluster.zookeeper.errors import ZooKeeperError
from odradek.cluster.zookeeper.notifications import CHANGE_EXPIRATION_MS, purge_expired_notifications
from odradek.cluster.zookeeper.znode_json import MalformedZnodeError
from odradek.config.catalog import TOPIC_CONFIGS
from odradek.config.types import ConfigError
from odradek.logs import shortened
from odradek.storage.errors import InvalidLogConfigError
from odradek.storage.log_manager import LogManager

log = logging.getLogger(__name__)


class TopicConfigSync:
    def __init__(
        self,
        zk: ZooKeeperClient,
        cluster: ClusterMetadata,
        logs: LogManager,
        change_expiration_ms: int = CHANGE_EXPIRATION_MS,
        on_change: Callable[[str, dict[str, str]], None] | None = None,
    ) -> None:
        """`on_change`: told of each topic whose configs a notification changed, with its overrides."""
        self.zk = zk
        self.change_expiration_ms = change_expiration_ms
        self.cluster = cluster
        self.logs = logs
        #: Each topic's overrides as last read from /config/topics.
        self.known: dict[str, dict[str, str]] = {}
        #: The newest /config/changes notification handled (-1: none yet).
        self.sequence = -1
        self._reading: set[asyncio.Task[None]] = set()
        #: One read-and-apply of a topic's configs at a time (notifications and new topics each spawn
        #: theirs): a read begun before another must not be applied after it, its configs older.
        self._read_turns: dict[str, asyncio.Lock] = {}
        #: Who else reads a changed entity, by entity type (`users`: the SCRAM credential store).
        self._followers: dict[str, list[Callable[[str], Awaitable[None]]]] = {}
        #: Called with a topic and its new overrides after a notification changed them.
        self.on_change = on_change

    def follow(self, entity_type: str, on_change: Callable[[str], Awaitable[None]]) -> None:
        """Call `on_change(entity name)` for each notification naming an entity of `entity_type`
        (the name as in the notification: sanitized, possibly `<user>/clients/<client>`)."""
        self._followers.setdefault(entity_type, []).append(on_change)

    def start(self, loop: asyncio.AbstractEventLoop) -> None:
        self.zk.watch_children(paths.TOPICS, self._on_topics, loop)
        self.zk.watch_children(paths.CONFIG_CHANGES, lambda _: self._spawn(self._read_changes()), loop)

    def apply_known(self) -> None:
        """Give the configs read to cache entries and logs that lack them (cheap: dict comparisons)."""
        for name, configs in self.known.items():
            state = self.cluster.topic(name)
            if state is not None and state.configs != configs:
                state.configs = dict(configs)
                self._apply_to_logs(name, configs)

    def _on_topics(self, names: list[str]) -> None:
        for name in names:
            if name not in self.known:
                self._spawn(self._read(name))
        for gone in set(self.known) - set(names):
            del self.known[gone]
            self._read_turns.pop(gone, None)

    def _spawn(self, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.get_running_loop().create_task(work)
        self._reading.add(task)
        task.add_done_callback(self._reading.discard)

    async def _read(self, name: str) -> None:
        async with self._read_turns.setdefault(name, asyncio.Lock()):
            try:
                configs = await asyncio.to_thread(entity_config, self.zk, paths.TOPIC_CONFIG, name)
            except MalformedZnodeError as error:  # written by another tool: the configs read before stay
                log.warning("configs of topic %s not read: %s", shortened(name), error)
                return
            self.known[name] = dict(configs)
            state = self.cluster.topic(name)
            if state is not None:
                state.configs = dict(configs)
            self._apply_to_logs(name, configs)

    async def _read_changes(self) -> None:
        changes = await asyncio.to_thread(config_changes_after, self.zk, self.sequence)
        for sequence, change in changes:
            self.sequence = max(self.sequence, sequence)
            entity_type, _, name = change.entity_path.partition("/")
            if entity_type == paths.TOPIC_CONFIG:
                await self._read(name)
                # (as Kafka's "Processing override", every value but cut short: a znode may hold 1 MB)
                log.info(
                    "configs of topic %s changed: %s",
                    shortened(name),
                    describe_configs(self.known.get(name, {}), TOPIC_CONFIGS.get),
                )
                if self.on_change is not None:
                    self.on_change(name, self.known.get(name, {}))
            elif entity_type in self._followers:
                for on_change in self._followers[entity_type]:
                    try:
                        await on_change(name)
                    except MalformedZnodeError as error:  # it keeps what it had; later changes still apply
                        log.warning(
                            "config change of %s not applied: %s", shortened(change.entity_path), error
                        )
            elif entity_type not in (paths.USER_CONFIG, paths.CLIENT_CONFIG, paths.IP_CONFIG):
                # (quotas: cluster/metadata/client_quotas.py follows these notifications itself)
                log.warning(
                    "config change of %s not applied: nothing follows its entity type",
                    shortened(change.entity_path),
                )
        try:
            await asyncio.to_thread(
                purge_expired_notifications, self.zk, paths.CONFIG_CHANGES, None, self.change_expiration_ms
            )
        except ZooKeeperError as error:  # the next notification tries again
            log.warning("expired config change notifications not purged: %s", error)

    def _apply_to_logs(self, name: str, configs: dict[str, str]) -> None:
        _report_not_honoured(name, configs)
        try:
            self.logs.apply_topic_config(name, self.logs.topic_log_config(configs))
        except InvalidLogConfigError as error:  # another tool wrote what this broker cannot use
            log.error(
                "cannot apply the configs of topic %s (the previous ones stay): %s",
                shortened(name),
                shortened(str(error)),
            )
        except Exception:  # keep the old ones; the traceback says why, the configs are read above
            log.exception("cannot apply the configs of topic %s", shortened(name))


def _report_not_honoured(name: str, configs: dict[str, str]) -> None:
    """Another broker (Kafka's, with tiered storage) may have stored a value odradek's AlterConfigs
    refuses: too late to refuse it, so it is said once per read that this broker does not honour it."""
    for config_name, raw in configs.items():
        key = TOPIC_CONFIGS.get(config_name)
        if key is None or not key.refused:
            continue
        try:
            key.check_supported(key.parse(raw))
        except ConfigError as error:
            log.error(
                "topic %s: %s=%s is stored but not honoured by this broker (%s)",
                shortened(name),
                config_name,
                shortened(raw),
                shortened(str(error)),
            )
