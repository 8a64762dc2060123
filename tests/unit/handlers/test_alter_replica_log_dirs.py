"""AlterReplicaLogDirs starts a move (KIP-113) and DescribeLogDirs shows the future replica in its
target dir while it copies (no copier runs here, so the move stays under way); a second request to
the replica's own dir stops it, as Kafka's futureReplicaDirChanged."""

from __future__ import annotations

import asyncio
from pathlib import Path

from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.messages.alter_replica_log_dirs import (
    AlterReplicaLogDir,
    AlterReplicaLogDirsRequest,
    AlterReplicaLogDirTopic,
)
from odradek.protocol.messages.describe_log_dirs import DescribeLogDirsRequest, DescribeLogDirsResponse
from tests.support.handler_services import HandlerBroker


def _move(path: Path, topic: str, partitions: list[int]) -> AlterReplicaLogDirsRequest:
    return AlterReplicaLogDirsRequest(
        dirs=[
            AlterReplicaLogDir(
                path=str(path), topics=[AlterReplicaLogDirTopic(name=topic, partitions=partitions)]
            )
        ]
    )


def _codes(response: object) -> dict[int, int]:
    return {p.partition_index: p.error_code for t in response.results for p in t.partitions}  # type: ignore[attr-defined]


def test_a_move_under_way_shows_its_future_replica_and_a_move_back_stops_it(tmp_path: Path) -> None:
    async def scenario() -> None:
        broker = HandlerBroker(tmp_path / "a", extra_log_dirs=(tmp_path / "b",))
        try:
            await broker.create_topic("t", 1)
            log = broker.log("t", 0)
            source = log.dir.parent
            target = next(d for d in broker.logs.log_dirs if d != source)
            assert _codes(await broker.call(_move(target, "t", [0, 7]), 2)) == {
                0: ErrorCode.NONE,
                7: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
            }
            assert _codes(await broker.call(_move(tmp_path / "elsewhere", "t", [0]), 2)) == {
                0: ErrorCode.LOG_DIR_NOT_FOUND
            }
            described: DescribeLogDirsResponse = await broker.call(DescribeLogDirsRequest(topics=None), 4)
            entries = {
                (r.log_dir, p.partition_index, p.is_future_key)
                for r in described.results
                for t in r.topics
                if t.name == "t"
                for p in t.partitions
            }
            assert entries == {(str(source), 0, False), (str(target), 0, True)}
            futures = [d for d in target.iterdir() if d.name.startswith("t-0.")]
            assert len(futures) == 1 and futures[0].name.endswith("-future")

            assert _codes(await broker.call(_move(source, "t", [0]), 2)) == {0: ErrorCode.NONE}
            assert broker.logs.future_logs == {}
        finally:
            broker.close()

    asyncio.run(scenario())


def test_a_move_asked_for_an_unknown_partition_is_not_remembered(tmp_path: Path) -> None:
    """Names a client makes up must not pile up in the broker's memory."""

    async def scenario() -> None:
        broker = HandlerBroker(tmp_path / "a", extra_log_dirs=(tmp_path / "b",))
        try:
            for i in range(50):
                assert _codes(await broker.call(_move(tmp_path / "b", f"made-up-{i}", [0]), 2)) == {
                    0: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                }
            assert broker.logs.moves.preferred == {}
        finally:
            broker.close()

    asyncio.run(scenario())
