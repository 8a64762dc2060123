"""A realistic page-view stream: users with sessions, a long tail of pages, event times slightly out of order.

Deterministic for a seed, so a test can recompute every aggregate from the same events in plain Python.
Events are JSON with the key set to the user id (a user's events stay in one partition, in order):

    {"kind": "page_view", "event_id": 17, "user_id": "u0042", "session_id": "u0042-3",
     "page": "/products/12", "referrer": "/search", "ts": 1700000000123, "duration_ms": 5400}

After the page views the generator sends `heartbeat` events (no user, no page) whose time is past the last
window plus the watermark delay, so that a job in append mode closes and emits every window.
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass

from odradek.pipelines.client import client_config

SECTIONS = ("/", "/search", "/products/{}", "/blog/{}", "/cart", "/checkout", "/account", "/help/{}")


@dataclass(frozen=True)
class PageView:
    event_id: int
    user_id: str
    session_id: str
    page: str
    referrer: str | None
    ts: int  # event time, epoch milliseconds
    duration_ms: int

    def to_json(self) -> bytes:
        return json.dumps({"kind": "page_view", **self.__dict__}, separators=(",", ":")).encode()


def page_views(
    count: int,
    *,
    seed: int = 7,
    start_ms: int = 1_767_225_600_000,
    events_per_second: float = 50.0,
    users: int = 500,
    max_disorder_ms: int = 5_000,
) -> Iterator[PageView]:
    """`count` page views whose event times advance at `events_per_second` from `start_ms`, each shifted
    back by up to `max_disorder_ms` (late arrivals, as from mobile clients)."""
    rng = random.Random(seed)
    weights = [1 / (rank + 1) for rank in range(users)]  # a few heavy users, a long tail
    user_ids = [f"u{n:04d}" for n in range(users)]
    sessions: dict[str, tuple[int, str]] = {}  # user -> (session number, last page)
    step_ms = 1000.0 / events_per_second
    for event_id in range(count):
        user = rng.choices(user_ids, weights)[0]
        number, last_page = sessions.get(user, (0, ""))
        if not last_page or rng.random() < 0.1:
            number, last_page = number + 1, ""
        page = _page(rng)
        sessions[user] = (number, page)
        nominal = start_ms + int(event_id * step_ms)
        yield PageView(
            event_id=event_id,
            user_id=user,
            session_id=f"{user}-{number}",
            page=page,
            referrer=last_page or None,
            ts=nominal - rng.randint(0, max_disorder_ms),
            duration_ms=int(rng.expovariate(1 / 8000)),
        )


def heartbeat(ts: int) -> bytes:
    return json.dumps({"kind": "heartbeat", "ts": ts}, separators=(",", ":")).encode()


def closing_time(last_event_ms: int, window_ms: int, watermark_delay_ms: int) -> int:
    """An event time that moves the watermark past the window holding `last_event_ms`."""
    window_end = (last_event_ms // window_ms + 1) * window_ms
    return window_end + watermark_delay_ms + window_ms


def produce_page_views(
    bootstrap: str,
    topic: str,
    views: list[PageView],
    *,
    rate: float | None = None,
    window_ms: int = 60_000,
    watermark_delay_ms: int = 30_000,
    on_progress: Callable[[int], None] | None = None,
    stop: Callable[[], bool] = lambda: False,
    client_settings: Mapping[str, str] | None = None,
) -> int:
    """Produce the views (at about `rate` per second of wall time, or as fast as possible), then the
    closing heartbeats; returns how many page views were sent."""
    from confluent_kafka import Producer

    producer = Producer(
        client_config(bootstrap, client_settings, {"linger.ms": 20, "partitioner": "murmur2_random"})
    )
    started = time.monotonic()
    sent = 0
    for view in views:
        if stop():
            break
        while True:
            try:
                producer.produce(topic, view.to_json(), view.user_id.encode())
                break
            except BufferError:
                producer.poll(0.05)
        sent += 1
        if sent % 1000 == 0:
            producer.poll(0)
            if on_progress is not None:
                on_progress(sent)
            if rate:
                ahead = sent / rate - (time.monotonic() - started)
                if ahead > 0:
                    time.sleep(ahead)
    if views and not stop():
        close = closing_time(max(v.ts for v in views), window_ms, watermark_delay_ms)
        metadata = producer.list_topics(topic, timeout=30)
        for partition in metadata.topics[topic].partitions:  # every partition moves the watermark
            producer.produce(topic, heartbeat(close), partition=partition)
    if producer.flush(60) != 0:
        raise RuntimeError("page views were not all acknowledged within 60 s")
    if on_progress is not None:
        on_progress(sent)
    return sent


def _page(rng: random.Random) -> str:
    section = rng.choices(SECTIONS, (20, 15, 30, 10, 8, 4, 5, 3))[0]
    if "{}" in section:
        return section.format(int(rng.paretovariate(1.2)) % 50)
    return section
