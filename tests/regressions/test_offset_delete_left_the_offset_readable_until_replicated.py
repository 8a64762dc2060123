"""In a cluster, OffsetDelete answered NONE but OffsetFetch still returned the deleted offset until the
tombstone reached the in-sync replicas (Kafka's Java AdminClient read it back right after
deleteConsumerGroupOffsets on the 3-broker cluster, tests/compat/java AdminGroupsTest): the tombstone
waited with the offset commits to be applied once replicated. Kafka's group coordinator removes the
offsets from memory at once and drops the group's commits still on their way to the replicas, then
appends the tombstones (GroupMetadataManager.cleanupGroupMetadata); a deleted offset stays deleted.
"""

from __future__ import annotations

from pathlib import Path

from odradek.protocol.error_codes import ErrorCode
from tests.unit.coordinator.harness import Harness
from tests.unit.coordinator.test_coordinator_writes import commit, fetched, offsets_log, run


def test_a_deleted_offset_is_not_fetched_before_its_tombstone_is_replicated(tmp_path: Path) -> None:
    async def scenario(h: Harness) -> None:
        log = offsets_log(h)
        commit(h, "g", 5)
        log.update_high_watermark(log.log_end_offset)
        assert fetched(h, "g") == {("t", 0): 5}
        assert h.coordinator.offsets.delete_offsets("g", [("t", [0])]) == {("t", 0): ErrorCode.NONE}
        assert fetched(h, "g") == {}  # the tombstone is appended, not yet on the followers

    run(tmp_path, scenario)


def test_a_commit_still_waiting_for_the_replicas_when_its_offset_is_deleted_does_not_come_back(
    tmp_path: Path,
) -> None:
    async def scenario(h: Harness) -> None:
        log = offsets_log(h)
        commit(h, "g", 5)
        log.update_high_watermark(log.log_end_offset)
        commit(h, "g", 9)  # appended, not replicated yet
        assert h.coordinator.offsets.delete_offsets("g", [("t", [0])]) == {("t", 0): ErrorCode.NONE}
        log.update_high_watermark(log.log_end_offset)  # the commit and the tombstone replicated
        assert fetched(h, "g") == {}

    run(tmp_path, scenario)
