"""A follower refused a batch its leader had accepted because it was over max.message.bytes, and could
then never catch up.

max.message.bytes is checked when a client's batch reaches the leader; the batches a follower fetches
are already in the leader's log. Lowered after a large batch was written (or a broker's
message.max.bytes smaller than the leader's), the follower's append raised RecordTooLargeError, the
replica fetcher backed off and fetched the same batch again, forever: a replica that never joins the
ISR, and an acks=all producer of the partition waiting on it. Kafka's appendAsFollower skips the size
check (UnifiedLog.appendAsFollower, ignoreRecordSize = true).
"""

from __future__ import annotations

from pathlib import Path

from odradek.protocol.records import patch_base_offset, patch_partition_leader_epoch
from tests.unit.storage.helpers import FakeClock, batch, open_log, read_records, values


def test_a_follower_appends_a_batch_over_its_max_message_bytes_that_its_leader_accepted(
    tmp_path: Path,
) -> None:
    log = open_log(tmp_path / "t-0", FakeClock(), max_message_bytes=200)
    try:
        large = batch([b"x" * 400])
        assert len(large) > 200
        patch_base_offset(large, 0, 0)
        patch_partition_leader_epoch(large, 0, 3)

        log.append_as_follower(large)

        assert log.log_end_offset == 1
        log.update_high_watermark(1)
        assert values(read_records(log)) == [b"x" * 400]
    finally:
        log.close()
