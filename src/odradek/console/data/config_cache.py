"""Every topic's retention and min.insync.replicas, remembered for a while.

The topic list and the overview need these of every topic, and DescribeConfigs for 1,000 topics takes
about half a second: longer than the rest of the page. Topic configs rarely change, so answers are kept
for `ttl` seconds (the sampler refreshes them in the background), and a change the console makes
forgets the topic's entry at once.
"""

from __future__ import annotations

import threading
import time

from odradek.cli.client import Admin
from odradek.console.data.topics import topic_summary_configs


class SummaryConfigCache:
    def __init__(self, ttl: float = 30.0) -> None:
        self.ttl = ttl
        self._entries: dict[str, tuple[float, dict[str, str]]] = {}
        self._lock = threading.Lock()

    def get(self, admin: Admin, topics: list[str]) -> dict[str, dict[str, str]]:
        """The configs of `topics`, asking the cluster only for those not known or known too long."""
        now = time.monotonic()
        with self._lock:
            stale = [t for t in topics if t not in self._entries or now - self._entries[t][0] > self.ttl]
        fresh = topic_summary_configs(admin, stale) if stale else {}
        with self._lock:
            for topic, configs in fresh.items():
                self._entries[topic] = (now, configs)
            return {t: self._entries[t][1] for t in topics if t in self._entries}

    def forget(self, topic: str) -> None:
        with self._lock:
            self._entries.pop(topic, None)
