"""KIP-848 consumer group state (placeholder)."""

from __future__ import annotations


class ConsumerGroup:
    is_empty = True
