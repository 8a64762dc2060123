"""Partition directories a single node does not know (KIP-516): set aside as `-stray`, never served.

A log dir can hold a partition directory of a topic this broker has no record of (a topic deleted
while the directory was elsewhere, a directory restored from a backup or copied from another broker).
It used to be loaded and kept, and a topic created later under its name was handed the old records."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.support.broker_process import BrokerProcess
from tests.support.interop import produce_acknowledged, stored_batches

pytestmark = pytest.mark.timeout(90)


def test_a_partition_directory_of_an_unknown_topic_is_set_aside_and_its_name_starts_empty(
    tmp_path: Path,
) -> None:
    data = tmp_path / "data"
    broker = BrokerProcess(data).start()
    try:
        assert produce_acknowledged(broker.bootstrap, "orders", [b"a", b"b", b"c"], timeout=30) == [0, 1, 2]
    finally:
        broker.stop()
    shutil.copytree(data / "orders-0", data / "ghost-0")  # a topic this broker has no record of
    broker.start()
    try:
        strays = [p.name for p in data.iterdir() if p.name.endswith("-stray")]
        assert len(strays) == 1 and strays[0].startswith("ghost-0.")
        assert "set aside as ghost-0." in broker.log_text()
        # the name is free: a topic made under it starts at offset 0 with none of the old records
        assert produce_acknowledged(broker.bootstrap, "ghost", [b"new"], timeout=30) == [0]
        records = [r.value for batch in stored_batches(broker.port, "ghost", 0) for r in batch.records]
        assert records == [b"new"]
        kept = [r.value for batch in stored_batches(broker.port, "orders", 0) for r in batch.records]
        assert kept == [b"a", b"b", b"c"]  # the known topic is untouched
    finally:
        broker.stop()
    assert (data / strays[0]).is_dir()  # kept for the operator, across restarts
