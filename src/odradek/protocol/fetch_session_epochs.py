"""The epochs of a fetch session (KIP-227; Kafka's FetchMetadata), the same for the broker that keeps a
session and for the follower that fetches in one."""

from __future__ import annotations

from typing import Final

#: A full fetch that opens a session (and drops the one it names, if any).
INITIAL_EPOCH: Final = 0
#: A fetch outside any session (closing the one it names, if any).
FINAL_EPOCH: Final = -1
_MAX_EPOCH: Final = 0x7FFFFFFF


def next_epoch(epoch: int) -> int:
    """The epoch after `epoch` (Kafka's FetchMetadata.nextEpoch): past Int32 max clients go on at 1."""
    return 1 if epoch >= _MAX_EPOCH else epoch + 1
