"""Our message definitions against Kafka's own message files (../shared/kafka-specs; required in CI)."""

from __future__ import annotations

from pathlib import Path

import pytest

from odradek.protocol import check_specs
from tests.support.requirements import require

REPO_ROOT = Path(__file__).resolve().parents[3]
KAFKA_SPECS = REPO_ROOT.parent / "shared" / "kafka-specs"
RELEASES = [KAFKA_SPECS / "3.9", KAFKA_SPECS / "4.3"]


def test_no_drift_from_kafkas_message_files(capsys: pytest.CaptureFixture[str]) -> None:
    require(all(p.is_dir() for p in RELEASES), f"{KAFKA_SPECS} (3.9 and 4.3) is not present")
    status = check_specs.main([str(p) for p in RELEASES])
    output = capsys.readouterr().out
    assert output.strip().endswith(": 0 difference(s)"), output
    assert status == 0
    checked = int(output.rsplit("checked ", 1)[1].split(" ", 1)[0])
    assert checked > 700  # both releases were really read
