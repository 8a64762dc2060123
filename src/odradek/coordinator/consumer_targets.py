"""What a consumer group's members subscribe to, as the cluster has it, and their target assignment.

Subscriptions are topic names and/or a regex, whose topics are those of its last resolution
(consumer_regexes: matched against every non-internal topic in the background, never here); they are
resolved to topic ids and partition counts from the metadata cache. A hash of that resolution is kept
with the group epoch: when it changes (a topic is created, deleted or grows), the group rebalances.
"""

from __future__ import annotations

import hashlib
import uuid
from collections import Counter
from collections.abc import Iterable, Mapping

from odradek.coordinator.assignors import ASSIGNORS, MemberSpec
from odradek.coordinator.consumer_group import ConsumerGroup, ConsumerMember, Partitions, ResolvedRegex
from odradek.coordinator.ports import MetadataView

#: A group's regexes as last resolved (ConsumerGroup.resolved_regexes).
Resolutions = Mapping[str, ResolvedRegex]


def subscribed_names(member: ConsumerMember, resolutions: Resolutions) -> set[str]:
    """The member's topic names and its regex's resolved topics (none while it is not resolved)."""
    names = set(member.subscribed_topic_names)
    if member.subscribed_topic_regex:
        resolved = resolutions.get(member.subscribed_topic_regex)
        if resolved is not None:
            names |= resolved.topics
    return names


def subscribed_ids(cluster: MetadataView, member: ConsumerMember, resolutions: Resolutions) -> set[uuid.UUID]:
    ids = set()
    for name in subscribed_names(member, resolutions):
        state = cluster.topic(name)
        if state is not None:
            ids.add(state.topic_id)
    return ids


def metadata_hash(cluster: MetadataView, members: Iterable[ConsumerMember], resolutions: Resolutions) -> int:
    """A hash of the subscribed topics (name, id, partition count): any change rebalances the group."""
    names: set[str] = set()
    for member in members:
        names |= subscribed_names(member, resolutions)
    digest = hashlib.blake2b(digest_size=8)
    for name in sorted(names):
        state = cluster.topic(name)
        if state is not None:
            digest.update(f"{name}\0{state.topic_id}\0{len(state.partitions)}\n".encode())
    return int.from_bytes(digest.digest(), "big", signed=True)


def preferred_assignor(names: list[str], members: Iterable[ConsumerMember]) -> str:
    """The server assignor most members ask for, else the broker's default (the first configured)."""
    votes = Counter(m.server_assignor for m in members if m.server_assignor in names)
    return votes.most_common(1)[0][0] if votes else names[0]


def compute_targets(
    cluster: MetadataView,
    assignor_names: list[str],
    group: ConsumerGroup,
    members: Mapping[str, ConsumerMember],
    replaced: ConsumerMember | None,
    joining: ConsumerMember,
) -> dict[str, Partitions]:
    """Every member's new target; a member replacing an earlier incarnation starts from its target."""
    specs = {}
    for member_id, member in members.items():
        previous = group.target.get(member_id, {})
        if replaced is not None and member_id == joining.member_id:
            previous = group.target.get(replaced.member_id, {})
        specs[member_id] = MemberSpec(
            frozenset(subscribed_ids(cluster, member, group.resolved_regexes)), previous
        )
    topics: dict[uuid.UUID, int] = {}
    for member in members.values():
        for name in subscribed_names(member, group.resolved_regexes):
            state = cluster.topic(name)
            if state is not None:
                topics[state.topic_id] = len(state.partitions)
    return ASSIGNORS[preferred_assignor(assignor_names, members.values())](specs, topics)
