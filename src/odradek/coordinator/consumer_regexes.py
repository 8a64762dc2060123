"""KIP-848 regex subscriptions, resolved as Kafka 4's GroupMetadataManager resolves them.

A heartbeat never matches a regex. The group's regexes are resolved together in the background
(client_regex.RegexMatcher: RE2, in the regex worker process) against every non-internal topic; the topics the
member whose heartbeat asked for it may not DESCRIBE are dropped (Kafka resolves with that member's
rights too), so a subscription to `.*` names only topics its member could see. The result is written
as records (type 16, kept across failovers) with a group epoch bump when the topics changed, and the
members get them at their next heartbeat. Until its first resolution a regex subscribes to nothing,
and a member bringing it does not bump the epoch (its resolution will).

A group's regexes are resolved again at most every 10 s (Kafka's REGEX_BATCH_REFRESH_MIN_INTERVAL_MS),
and then only when one is not resolved yet, a topic was created since, or 10 minutes have passed
(the default of Kafka 4.1's group.consumer.regex.refresh.interval.ms, a constant here). A regex no
member subscribes to any more has its resolution deleted (a tombstone).
"""

from __future__ import annotations

import asyncio
import enum
import logging
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

from odradek.coordinator import consumer_records as cr
from odradek.coordinator.client_regex import RegexMatcher
from odradek.coordinator.consumer_group import ConsumerGroup, ConsumerMember, ResolvedRegex
from odradek.coordinator.consumer_targets import metadata_hash
from odradek.coordinator.records import CoordinatorRecord
from odradek.coordinator.result import CoordinatorResult
from odradek.protocol.error_codes import KafkaError

if TYPE_CHECKING:
    from odradek.coordinator.shard import GroupShard

log = logging.getLogger("odradek.coordinator.consumer")

REFRESH_MIN_INTERVAL_MS: Final = 10_000
REFRESH_INTERVAL_MS: Final = 600_000

#: Of these topic names, the ones the member whose heartbeat it is may DESCRIBE.
TopicFilter = Callable[[Collection[str]], Collection[str]]


def describe_all(names: Collection[str]) -> Collection[str]:
    """No authorizer: every topic may be described."""
    return names


class RegexUpdate(enum.Enum):
    """What a heartbeat did to its member's regex (Kafka's UpdateRegularExpressionsResult)."""

    NO_CHANGE = enum.auto()
    UPDATED = enum.auto()
    #: Changed to a regex the group has resolved already: the epoch moves now.
    UPDATED_AND_RESOLVED = enum.auto()


def refresh_key(group_id: str) -> str:
    return f"regex-refresh-{group_id}"


class RegexResolver:
    """The regex resolutions of one shard's consumer groups, and the ones under way."""

    def __init__(self, shard: GroupShard, cluster: Any, matcher: RegexMatcher) -> None:
        self.shard = shard
        self.cluster = cluster
        self.matcher = matcher
        self._refreshing: dict[str, asyncio.Task[None]] = {}
        #: Groups with a resolution under way or waiting to be written: never two at once.
        self._pending: set[str] = set()

    def on_heartbeat(
        self,
        group: ConsumerGroup,
        old_regex: str | None,
        new_regex: str | None,
        members: Mapping[str, ConsumerMember],
        records: list[CoordinatorRecord],
        describable: TopicFilter,
    ) -> RegexUpdate:
        """A member's heartbeat: `members` is the group as it will be. Deletes the resolution of a regex
        nobody subscribes to any more, and starts a resolution if one is due."""
        update = RegexUpdate.NO_CHANGE
        if (old_regex or None) != (new_regex or None):
            update = RegexUpdate.UPDATED
            if new_regex and new_regex in group.resolved_regexes:
                update = RegexUpdate.UPDATED_AND_RESOLVED
        records += self.unused_tombstones(group, members.values())
        subscribed = set(group.subscribed_regexes(members.values()))
        if subscribed:
            self._maybe_refresh(group, subscribed, describable)
        return update

    def unused_tombstones(
        self, group: ConsumerGroup, members: Collection[ConsumerMember]
    ) -> list[CoordinatorRecord]:
        """Tombstones of the resolutions no one of `members` subscribes to."""
        subscribed = group.subscribed_regexes(members)
        return [
            cr.regex_record(group.group_id, regex, None)
            for regex in group.resolved_regexes
            if not subscribed[regex]
        ]

    def all_tombstones(self, group: ConsumerGroup) -> list[CoordinatorRecord]:
        return [cr.regex_record(group.group_id, regex, None) for regex in group.resolved_regexes]

    async def idle(self) -> None:
        """Wait for the resolutions under way (tests)."""
        while self._refreshing:
            await asyncio.gather(*self._refreshing.values(), return_exceptions=True)

    def cancel_all(self) -> None:
        """The shard is unloaded: resolutions under way are dropped."""
        for task in self._refreshing.values():
            task.cancel()
        self._refreshing.clear()
        self._pending.clear()

    # ----- resolution ------------------------------------------------------------------------------

    def _maybe_refresh(self, group: ConsumerGroup, regexes: set[str], describable: TopicFilter) -> None:
        if group.group_id in self._pending:
            return
        now = self.shard.now_ms()
        last = group.last_regex_refresh_ms
        if last is not None and now <= last + REFRESH_MIN_INTERVAL_MS:
            return
        due = (
            last is None
            or not regexes <= group.resolved_regexes.keys()
            or group.regexes_resolved_before(self.cluster.topic_creations)
            or now > last + REFRESH_INTERVAL_MS
        )
        if not due:
            return
        names = [name for name, state in self.cluster.topics.items() if not state.is_internal]
        task = asyncio.get_running_loop().create_task(
            self._refresh(group.group_id, regexes, names, self.cluster.topic_creations, now, describable)
        )
        self._refreshing[group.group_id] = task
        self._pending.add(group.group_id)
        task.add_done_callback(lambda done: self._forget(group.group_id, done))

    def _forget(self, group_id: str, task: asyncio.Task[None]) -> None:
        if self._refreshing.get(group_id) is task:
            del self._refreshing[group_id]

    async def _refresh(
        self,
        group_id: str,
        regexes: set[str],
        names: Sequence[str],
        version: int,
        started_ms: int,
        describable: TopicFilter,
    ) -> None:
        try:
            resolved = await self.matcher.resolve(regexes, names)
            allowed = set(describable({name for topics in resolved.values() for name in topics}))
        except RuntimeError as error:  # the broker is stopping: its worker takes no more work
            log.info("regexes of consumer group %s not resolved: %s", group_id, error)
            self._pending.discard(group_id)
            return
        except KafkaError as error:  # over the worker's budget, or the worker failed: next time
            log.warning("regexes of consumer group %s not resolved: %s", group_id, error)
            self._pending.discard(group_id)
            return
        except Exception:
            log.exception("resolving the regexes of consumer group %s failed", group_id)
            self._pending.discard(group_id)  # the next heartbeat tries again
            return
        filtered = {regex: topics & allowed for regex, topics in resolved.items()}
        log.info(
            "consumer group %s: %d regexes resolved against %d topics", group_id, len(regexes), len(names)
        )
        self.shard.timer.schedule(
            refresh_key(group_id), 0, lambda: self._apply(group_id, filtered, version, started_ms)
        )

    def _apply(
        self, group_id: str, resolved: Mapping[str, frozenset[str]], version: int, timestamp_ms: int
    ) -> CoordinatorResult[None] | None:
        """Write the resolutions of the regexes still subscribed, and bump the group epoch if that
        changed the group's topics (Kafka's handleRegularExpressionsResult)."""
        self._pending.discard(group_id)
        group = self.shard.groups.get(group_id)
        if not isinstance(group, ConsumerGroup):
            return None  # deleted, or the shard was unloaded meanwhile
        subscribed = group.subscribed_regexes()
        resolutions = dict(group.resolved_regexes)
        records: list[CoordinatorRecord] = []
        changed = False
        for regex, topics in resolved.items():
            if not subscribed[regex]:
                continue
            before = group.resolved_regexes.get(regex)
            changed = changed or before is None or before.topics != topics
            resolutions[regex] = ResolvedRegex(topics, version, timestamp_ms)
            records.append(cr.regex_record(group_id, regex, topics, version, timestamp_ms))
        if not records:
            return None
        topics_hash = metadata_hash(self.cluster, group.members.values(), resolutions)
        if changed or topics_hash != group.metadata_hash:
            epoch = group.group_epoch + 1
            records.append(cr.group_epoch_record(group_id, epoch, topics_hash))
            log.info("group %s epoch bumped to %d: its regexes resolved to other topics", group_id, epoch)
        return CoordinatorResult(records, None, replay=True)
