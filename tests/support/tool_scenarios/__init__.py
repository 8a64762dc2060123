"""Scenarios of Apache Kafka's command-line tools (tests/support/tool_scenarios/session.py), one module
per tool or family of tools; importing the package registers them all in `SCENARIOS`, in this order."""

from __future__ import annotations

from tests.support.tool_scenarios import (
    acls,
    configs,
    console,
    elections,
    groups,
    offsets,
    perf,
    quick_start,
    reassign,
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
    "configs",
    "console",
    "elections",
    "groups",
    "offsets",
    "perf",
    "quick_start",
    "reassign",
    "topics",
    "transactions",
]
