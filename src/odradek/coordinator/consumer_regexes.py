"""KIP-848 regex subscriptions, resolved as Kafka 4's GroupMetadataManager resolves them.

A heartbeat never matches a regex. The group's regexes are resolved together in the background
(client_regex.RegexMatcher: RE2, in the regex worker process) against every non-internal topic; the topics the
member whose heartbeat asked for it may not DESCRIBE are dropped (Kafka resolves with that member's
rights too), so a subscription to `.*` names only topics its member could see. The result is written
as records (type 16, kept across failovers) with a group epoch bump when the topics changed, and the
members get them at their next heartbeat. Until its first resolution a regex subscribes to nothing,
and a member bringing it does not bump the epoch (its resolution will).

A group's regexes are resolved again at most every 10 s after the last try (Kafka's
REGEX_BATCH_REFRESH_MIN_INTERVAL_MS, which counts from the last success), and then only when one is
not resolved yet, a topic was created since, or 10 minutes have passed (the default of Kafka 4.1's
group.consumer.regex.refresh.interval.ms, a constant here). A regex no member subscribes to any more
has its resolution deleted (a tombstone).

Beyond Kafka, which has no bound on the work: each regex is a job of its own in the regex worker, held
to its own CPU budget. One that fails there (over the budget or the worker's memory) stays unresolved,
is logged, and is tried again only once a topic was created or 10 minutes have passed (the same names
would cost the same); the group's other regexes are resolved as usual. A busy or failed worker leaves
the rest for the next try, 10 s later.
"""

from __future__ import annotations

import asyncio
import enum
import logging
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Final, Protocol

from odradek.coordinator import consumer_records as cr
from odradek.coordinator.client_regex import RegexMatcher
from odradek.coordinator.consumer_group import ConsumerGroup, ConsumerMember, ResolvedRegex
from odradek.coordinator.consumer_targets import metadata_hash
from odradek.coordinator.ports import MetadataView
from odradek.coordinator.records import CoordinatorRecord
from odradek.coordinator.result import CoordinatorResult
from odradek.coordinator.timer import CoordinatorTimer
from odradek.protocol.error_codes import ErrorCode, KafkaError

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


class RegexShard(Protocol):
    """What the resolver needs of its shard (coordinator.shard.GroupShard): its groups, its timer (a
    resolution is written from it, as every change of a group) and its clock."""

    @property
    def groups(self) -> Mapping[str, object]: ...

    @property
    def timer(self) -> CoordinatorTimer: ...

    def now_ms(self) -> int: ...


@dataclass(frozen=True)
class _Failure:
    """A regex that could not be resolved: at which count of topic creations, and when."""

    version: int
    at_ms: int


class RegexResolver:
    """The regex resolutions of one shard's consumer groups, and the ones under way."""

    def __init__(self, shard: RegexShard, cluster: MetadataView, matcher: RegexMatcher) -> None:
        self.shard = shard
        self.cluster = cluster
        self.matcher = matcher
        self._refreshing: dict[str, asyncio.Task[None]] = {}
        #: Groups with a resolution under way or waiting to be written: never two at once.
        self._pending: set[str] = set()
        #: When each group's regexes were last tried, resolved or not.
        self._tried_ms: dict[str, int] = {}
        #: Each group's regexes that failed in the worker, not tried again until new topics or later.
        self._failed: dict[str, dict[str, _Failure]] = {}

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
        else:
            self._tried_ms.pop(group.group_id, None)
            self._failed.pop(group.group_id, None)
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
        self._tried_ms.clear()
        self._failed.clear()

    # ----- resolution ------------------------------------------------------------------------------

    def _maybe_refresh(self, group: ConsumerGroup, regexes: set[str], describable: TopicFilter) -> None:
        group_id = group.group_id
        if group_id in self._pending:
            return
        now = self.shard.now_ms()
        resolved_ms = group.last_regex_refresh_ms
        tried = [t for t in (resolved_ms, self._tried_ms.get(group_id)) if t is not None]
        if tried and now <= max(tried) + REFRESH_MIN_INTERVAL_MS:
            return
        version = self.cluster.topic_creations
        failed = {regex: f for regex, f in self._failed.get(group_id, {}).items() if regex in regexes}
        self._failed[group_id] = failed
        held = {r for r, f in failed.items() if f.version >= version and now <= f.at_ms + REFRESH_INTERVAL_MS}
        wanted = regexes - held
        due = bool(wanted) and (
            not wanted <= group.resolved_regexes.keys()
            or group.regexes_resolved_before(version)
            or (resolved_ms is not None and now > resolved_ms + REFRESH_INTERVAL_MS)
        )
        if not due:
            return
        names = [name for name, state in self.cluster.topics.items() if not state.is_internal]
        task = asyncio.get_running_loop().create_task(
            self._refresh(group_id, wanted, names, version, now, describable)
        )
        self._refreshing[group_id] = task
        self._pending.add(group_id)
        self._tried_ms[group_id] = now
        task.add_done_callback(lambda done: self._forget(group_id, done))

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
            resolved = await self._resolve_each(group_id, regexes, names, version, started_ms)
            allowed = set(describable({name for topics in resolved.values() for name in topics}))
        except RuntimeError as error:  # the broker is stopping: its worker takes no more work
            log.info("regexes of consumer group %s not resolved: %s", group_id, error)
            self._pending.discard(group_id)
            return
        except Exception:
            log.exception("resolving the regexes of consumer group %s failed", group_id)
            self._pending.discard(group_id)  # tried again at a heartbeat 10 s from now
            return
        if not resolved:
            self._pending.discard(group_id)
            return
        filtered = {regex: topics & allowed for regex, topics in resolved.items()}
        log.info(
            "consumer group %s: %d regexes resolved against %d topics", group_id, len(resolved), len(names)
        )
        self.shard.timer.schedule(
            refresh_key(group_id), 0, lambda: self._apply(group_id, filtered, version, started_ms)
        )

    async def _resolve_each(
        self, group_id: str, regexes: set[str], names: Sequence[str], version: int, started_ms: int
    ) -> dict[str, frozenset[str]]:
        """Each regex's topics, one job each; those that fail are left out (and remembered)."""
        resolved: dict[str, frozenset[str]] = {}
        failed = self._failed.setdefault(group_id, {})
        for regex in sorted(regexes):
            try:
                resolved[regex] = await self.matcher.resolve(group_id, regex, names)
            except KafkaError as error:
                if error.error_code is not ErrorCode.INVALID_REGULAR_EXPRESSION:
                    # The worker busy or failing: the rest waits for the next try.
                    log.warning("regexes of consumer group %s not resolved: %s", group_id, error)
                    break
                failed[regex] = _Failure(version, started_ms)
                log.warning(
                    "consumer group %s: a regex resolves to no topic until a topic is created or 10 minutes "
                    "have passed: %s",
                    group_id,
                    _shortened(error.error_message or ""),
                )
            else:
                failed.pop(regex, None)
        return resolved

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


def _shortened(text: str, limit: int = 300) -> str:
    """A client's pattern may be thousands of characters: the log keeps its start."""
    return text if len(text) <= limit else text[:limit] + "..."
