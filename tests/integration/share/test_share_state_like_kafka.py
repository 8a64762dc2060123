"""The share-state sequence of tests/support/share_state_reference.py on odradek answers as Kafka 4.4
(KRaft) answered it, and leaves the same `__share_group_state` records, except where odradek differs
on purpose (listed below with the reason)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.support.broker_process import BrokerProcess
from tests.support.share_state_reference import RECORDED, SETTINGS, run

pytestmark = pytest.mark.timeout(120)
UNDEFINED_STATE = [13, 13, 3, 1]
#: odradek's answers where they differ from Kafka 4.4's on purpose.
DIFFERENCES: dict[str, Any] = {
    # A delivery state Kafka does not define (3): Kafka stores it as given; odradek refuses the write,
    # as nothing could read such a state back.
    "write undefined delivery state": 42,
}


def _odradek_expected(kafka: dict[str, Any]) -> dict[str, Any]:
    expected = json.loads(json.dumps(kafka))
    expected["steps"] = [[name, DIFFERENCES.get(name, answer)] for name, answer in expected["steps"]]
    for name, answer in expected["steps"]:
        if name == "read":  # ... so the refused batch is not in the state
            answer[3] = [[12, 12, 4, 3], [13, 14, 2, 1], [15, 19, 0, 1]]
    expected["records"] = [
        record
        for record in expected["records"]
        if record[1] is None or UNDEFINED_STATE not in record[1]["batches"]
    ]
    return expected


def test_share_state_answers_and_records_are_kafka_4_4s(tmp_path: Path) -> None:
    kafka = json.loads(RECORDED.read_text())
    broker = BrokerProcess(tmp_path / "data", SETTINGS).start()
    try:
        answers = run(broker.port, "127.0.0.1", tmp_path / "data")
    finally:
        broker.stop()
    assert json.loads(json.dumps(answers)) == _odradek_expected(kafka)
