"""Scenarios of Apache Kafka's command-line tools (tests/support/tool_scenarios/session.py), one module
per tool or family of tools; importing the package registers them all in `SCENARIOS`, in this order."""

from __future__ import annotations

from tests.support.tool_scenarios import (
    acls,
    client_metrics,
    configs,
    console,
    delegation_tokens,
    elections,
    groups,
    offsets,
    perf,
    quick_start,
    reassign,
    share_groups,
    topics,
    transactions,
)
from tests.support.tool_scenarios.session import SCENARIOS, TARGETS, Scenario, Session, StepFailed

__all__ = [
    "SCENARIOS",
    "TARGETS",
    "Scenario",
    "Session",
    "StepFailed",
    "acls",
    "client_metrics",
    "configs",
    "console",
    "delegation_tokens",
    "elections",
    "groups",
    "offsets",
    "perf",
    "quick_start",
    "reassign",
    "share_groups",
    "topics",
    "transactions",
]
