"""The message browser of a topic: a partition (or all), a start (newest, oldest, an offset, a timestamp),
keys and values shown as text, pretty JSON or hex, headers and timestamps; `live=1` re-reads the newest
messages every two seconds (htmx), which is the live tail."""

from __future__ import annotations

import argparse
from dataclasses import dataclass

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from odradek.cli.arguments import timestamp_ms
from odradek.console.data.cluster import cluster_state
from odradek.console.data.messages import START_KINDS, BrowsedMessage, Position, browse
from odradek.console.data.session import ClusterError
from odradek.console.format import MODES, Rendered, render
from odradek.console.pages.common import cluster, console, page

DEFAULT_LIMIT = 50


@dataclass(frozen=True)
class ShownMessage:
    message: BrowsedMessage
    key: Rendered
    value: Rendered
    headers: list[tuple[str, Rendered]]


async def messages(request: Request) -> Response:
    name = request.path_params["name"]
    shared = console(request)
    state = await cluster(request, lambda admin: cluster_state(admin, shared.memory))
    topic = state.topics.get(name)
    if topic is None:
        raise HTTPException(404, f"topic '{name}' does not exist")
    query = request.query_params
    live = query.get("live") == "1"
    display = query.get("display", "auto") if query.get("display") in MODES else "auto"
    partition_text = query.get("partition", "all")
    start = query.get("start", "newest") if query.get("start") in START_KINDS else "newest"
    start_value = query.get("value", "").strip()
    limit = _int(query.get("limit", ""), DEFAULT_LIMIT)
    all_partitions = [p.partition for p in topic.partitions]
    chosen = all_partitions if partition_text == "all" else [_int(partition_text, -1)]
    error = None
    shown: list[ShownMessage] = []
    try:
        if any(p not in all_partitions for p in chosen):
            raise ValueError(f"topic '{name}' has no partition {partition_text}")
        position = Position("newest") if live else _position(start, start_value)
        found = await cluster(request, lambda admin: browse(admin, name, chosen, position, limit))
        shown = [_shown(message, display) for message in found]
    except ValueError as problem:
        error = str(problem)
    except ClusterError as problem:
        if problem.unreachable:
            raise
        error = problem.message
    return page(
        request,
        "messages.html",
        {
            "topic": topic,
            "messages": shown,
            "error": error,
            "live": live,
            "display": display,
            "modes": MODES,
            "partition": partition_text,
            "start": start,
            "start_value": start_value,
            "starts": START_KINDS,
            "limit": limit,
        },
    )


def _position(kind: str, text: str) -> Position:
    if kind in ("newest", "oldest"):
        return Position(kind)
    if not text:
        raise ValueError(f"starting at an {kind} needs a value")
    if kind == "offset":
        if not text.isdigit():
            raise ValueError(f"an offset is a whole number, not {text!r}")
        return Position("offset", int(text))
    try:
        return Position("timestamp", timestamp_ms(text))
    except argparse.ArgumentTypeError as error:  # the CLI's parser: its message is the sentence to show
        raise ValueError(str(error)) from None


def _shown(message: BrowsedMessage, display: str) -> ShownMessage:
    return ShownMessage(
        message=message,
        key=render(message.key, display),
        value=render(message.value, display),
        headers=[(name, render(value, "auto")) for name, value in message.headers],
    )


def _int(text: str, default: int) -> int:
    return int(text) if text.isdigit() else default


routes = [Route("/topics/{name}/messages", messages, name="messages")]
