"""What a broker's coordinator answers for a partition of its internal topic around a leadership change:
the error tells the client whether to retry here (COORDINATOR_LOAD_IN_PROGRESS) or find the coordinator
again (NOT_COORDINATOR)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

import pytest

from odradek.coordinator.runtime import PartitionState
from odradek.coordinator.settings import OFFSETS_TOPIC
from odradek.protocol.error_codes import ErrorCode, KafkaError
from tests.unit.coordinator.harness import Harness


def test_a_partition_this_broker_is_named_leader_of_answers_load_in_progress_until_its_load_starts(
    tmp_path: Path,
) -> None:
    """Between the metadata naming this broker leader and the leadership hook starting the load (the
    transaction coordinator's runs after the LeaderAndIsr), the answer used to be NOT_COORDINATOR:
    FindCoordinator named this broker, which then denied it (librdkafka's OffsetFetch never recovers)."""

    async def main() -> list[ErrorCode]:
        harness = Harness(tmp_path)
        await harness.start()
        try:
            runtime = harness.coordinator.runtime
            partition = runtime.partition_for("g")
            runtime.resign(partition)  # the metadata still names broker 1 leader: its load is to come
            answers = [_refusal(lambda: runtime.shard_for("g"))]
            cached = harness.cluster.partition(OFFSETS_TOPIC, partition)
            assert cached is not None
            cached.leader_id = 2  # another broker leads it now: the client must find it
            answers.append(_refusal(lambda: runtime.shard_for("g")))
            cached.leader_id = 1
            runtime.become_leader(partition)
            answers.append(_refusal(lambda: runtime.shard_for("g")))  # loading
            await runtime.wait_loaded()
            assert runtime.states[partition] is PartitionState.ACTIVE
            return answers
        finally:
            harness.stop()

    assert asyncio.run(main()) == [
        ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
        ErrorCode.NOT_COORDINATOR,
        ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
    ]


def _refusal(call: Callable[[], object]) -> ErrorCode:
    with pytest.raises(KafkaError) as refused:
        call()
    return refused.value.error_code
