"""The topic-config cache asks the cluster only for topics it does not know, or knows for too long."""

from __future__ import annotations

from typing import Any

import pytest

from odradek.console.data import config_cache
from odradek.console.data.config_cache import SummaryConfigCache


@pytest.fixture
def asked(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    calls: list[list[str]] = []

    def describe(admin: Any, topics: list[str]) -> dict[str, dict[str, str]]:
        calls.append(list(topics))
        return {topic: {"retention.ms": "1000"} for topic in topics}

    monkeypatch.setattr(config_cache, "topic_summary_configs", describe)
    return calls


def test_known_topics_are_not_asked_again(asked: list[list[str]]) -> None:
    cache = SummaryConfigCache(ttl=60)
    assert cache.get(None, ["a", "b"]) == {"a": {"retention.ms": "1000"}, "b": {"retention.ms": "1000"}}  # type: ignore[arg-type]
    cache.get(None, ["a", "b", "c"])  # type: ignore[arg-type]
    assert asked == [["a", "b"], ["c"]]


def test_stale_and_forgotten_topics_are_asked_again(asked: list[list[str]]) -> None:
    cache = SummaryConfigCache(ttl=0)
    cache.get(None, ["a"])  # type: ignore[arg-type]
    cache.get(None, ["a"])  # type: ignore[arg-type]
    fresh = SummaryConfigCache(ttl=60)
    fresh.get(None, ["b"])  # type: ignore[arg-type]
    fresh.forget("b")
    fresh.get(None, ["b"])  # type: ignore[arg-type]
    assert asked == [["a"], ["a"], ["b"], ["b"]]
