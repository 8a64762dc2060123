"""A short run (10 s) of bench/groups_soak.py: a few groups whose members join, consume, commit and leave
in random order; every group must settle, its committed offsets must be the ones its members had
acknowledged, and nothing below them may have been skipped."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

from bench.groups_soak import BROKER_OVERRIDES, run_soak

from tests.support.broker_process import BrokerProcess


def test_groups_survive_random_joins_and_leaves(tmp_path: Path) -> None:
    logging.getLogger("aiokafka").setLevel(logging.CRITICAL)
    broker = BrokerProcess(tmp_path / "data", BROKER_OVERRIDES).start()
    try:
        report = asyncio.run(run_soak(broker.bootstrap, groups=4, members_per_group=3, seconds=10, seed=7))
    finally:
        broker.stop()
    assert report.members_started > 12 and report.members_left == report.members_started
    assert report.commits_acked > 0 and report.produced > 0
    assert not report.unsettled_groups, report.unsettled_groups
    assert not report.offset_mismatches, report.offset_mismatches
    assert not report.skipped, report.skipped
    assert not report.member_errors, report.member_errors
