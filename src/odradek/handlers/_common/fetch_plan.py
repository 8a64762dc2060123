"""Which partitions a Fetch reads (KIP-227): the request's own (v0-6, a full fetch, or one closing its
session), or its fetch session's, updated with what the request adds, changes and forgets; and the
session a full fetch asks for, opened once it is answered. The session cache itself is
``partition/fetch_sessions.py``'s."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from odradek.handlers._common.context import RequestContext
from odradek.partition.fetch_sessions import CachedPartition, FetchSession, PartitionKey
from odradek.protocol.fetch_session_epochs import FINAL_EPOCH, INITIAL_EPOCH, next_epoch
from odradek.protocol.messages.fetch import FetchRequest


@dataclass(slots=True)
class FetchPlan:
    """The partitions to read, in order, and the session (if any) they come from."""

    partitions: list[CachedPartition]
    session: FetchSession | None
    incremental: bool
    session_id: int
    #: A full fetch asking for a new session: opened when answered, and not by a throttled answer.
    opens_session: bool = False


def plan_fetch(request: FetchRequest, context: RequestContext) -> FetchPlan:
    """Which partitions to read, resolving the fetch session (if any) the request names."""
    version = context.api_version
    cache = context.services.fetch_sessions
    # Kafka keys a fetch by topic partition (FetchRequest.fetchData, a LinkedHashMap): a partition named
    # twice is read once, where it was first named, with what it was last asked for.
    requested = list({partition_key(entry): entry for entry in _requested(request, context)}.values())
    if version < 7 or request.session_epoch == FINAL_EPOCH:
        if version >= 7 and request.session_id:
            cache.close(request.session_id, context.principal)
        return FetchPlan(requested, None, False, 0)
    if request.session_epoch == INITIAL_EPOCH:
        if request.session_id:
            cache.close(request.session_id, context.principal)
        return FetchPlan(requested, None, False, 0, opens_session=True)
    session = cache.lookup(request.session_id, request.session_epoch, context.principal)
    session.epoch = next_epoch(session.epoch)
    if version >= 13:
        _resolve_unknown_names(session, context)
    for forgotten in request.forgotten_topics_data:
        topic = _topic_name(forgotten.topic, forgotten.topic_id, context) or ""
        for partition in forgotten.partitions:
            session.partitions.pop((topic, forgotten.topic_id if version >= 13 else None, partition), None)
    for entry in requested:
        cached = session.partitions.get(partition_key(entry))
        if cached is None:
            session.add(partition_key(entry), entry)
        else:
            cached.fetch_offset = entry.fetch_offset
            cached.max_bytes = entry.max_bytes
            cached.current_leader_epoch = entry.current_leader_epoch
            cached.last_fetched_epoch = entry.last_fetched_epoch
            cached.log_start_offset = entry.log_start_offset
    return FetchPlan(list(session.partitions.values()), session, True, session.session_id)


def _resolve_unknown_names(session: FetchSession, context: RequestContext) -> None:
    """A partition whose topic id was unknown when it joined the session (answered UNKNOWN_TOPIC_ID)
    gets its topic's name once this broker knows the id, as Kafka's maybeResolveUnknownName: else the
    session would answer it UNKNOWN_TOPIC_ID for as long as the session lives."""
    if not session.unknown_names:
        return  # the common case: one flag looked at per fetch
    session.unknown_names = False
    for key in [key for key in session.partitions if not key[0]]:
        entry = session.partitions.pop(key)
        entry.topic = _topic_name("", key[1], context) or ""
        session.add(partition_key(entry), entry)


def _requested(request: FetchRequest, context: RequestContext) -> Iterable[CachedPartition]:
    version = context.api_version
    for topic in request.topics:
        name = _topic_name(topic.topic, topic.topic_id, context)
        for p in topic.partitions:
            yield CachedPartition(
                topic=name if name is not None else "",
                topic_id=topic.topic_id if version >= 13 else None,
                partition=p.partition,
                fetch_offset=p.fetch_offset,
                max_bytes=p.partition_max_bytes,
                current_leader_epoch=p.current_leader_epoch,
                last_fetched_epoch=p.last_fetched_epoch,
                log_start_offset=p.log_start_offset,
            )


def _topic_name(name: str, topic_id: object, context: RequestContext) -> str | None:
    if context.api_version < 13:
        return name
    state = context.services.cluster.topic_by_id(topic_id)  # type: ignore[arg-type]
    return state.name if state is not None else None


def partition_key(entry: CachedPartition) -> PartitionKey:
    return (entry.topic, entry.topic_id, entry.partition)


def open_session(plan: FetchPlan, privileged: bool, context: RequestContext) -> None:
    """The session a full fetch asked for (none when the cache keeps its sessions: answered with id 0)."""
    session = context.services.fetch_sessions.create(
        len(plan.partitions), privileged=privileged, principal=context.principal
    )
    if session is None:
        return
    for entry in plan.partitions:
        session.add(partition_key(entry), entry)
    plan.session, plan.session_id = session, session.session_id
