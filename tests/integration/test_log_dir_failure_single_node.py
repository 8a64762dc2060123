"""A single node with two log dirs, one failing, then the other (Kafka 3.9's LogDirFailureChannel and
LogManager.handleLogDirFailure): the failed dir's partitions answer KAFKA_STORAGE_ERROR while the other
dir's are served; DescribeLogDirs reports it; once every dir has failed the broker halts (exit 1).

A dir fails for real, unprivileged: renamed away with a file in its place, so the next checkpoint
written there by path fails with ENOTDIR.
"""

from __future__ import annotations

from pathlib import Path

from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.messages.describe_log_dirs import DescribeLogDirsRequest, DescribeLogDirsResponse
from tests.support.broker_process import BrokerProcess
from tests.support.interop import create_topic, wait_until
from tests.support.raw_client import RawClient
from tests.support.requirements import require_module
from tests.support.txn_wire import produce

PATIENCE_S = 30


def _break(log_dir: Path) -> None:
    log_dir.rename(log_dir.with_name(log_dir.name + ".gone"))
    log_dir.write_bytes(b"")


def _dir_of(dirs: list[Path], topic: str, partition: int) -> Path:
    return next(d for d in dirs if (d / f"{topic}-{partition}").is_dir())


def test_a_failed_log_dir_answers_kafka_storage_error_and_the_broker_halts_once_all_have_failed(
    tmp_path: Path,
) -> None:
    require_module("confluent_kafka")
    dirs = [tmp_path / "a", tmp_path / "b"]
    broker = BrokerProcess(
        tmp_path / "broker",
        {"log.dirs": ",".join(str(d) for d in dirs), "log.flush.offset.checkpoint.interval.ms": "300"},
    )
    broker.start()
    try:
        create_topic(broker.bootstrap, "jbod", partitions=2)
        with RawClient(broker.port, timeout=10) as client:
            for partition in (0, 1):
                assert produce(client, "jbod", [b"before"], partition=partition)[0] is ErrorCode.NONE
            failing = _dir_of(dirs, "jbod", 0)
            surviving = _dir_of(dirs, "jbod", 1)
            assert failing != surviving
            _break(failing)

            def refused() -> bool:
                return produce(client, "jbod", [b"after"], partition=0)[0] is ErrorCode.KAFKA_STORAGE_ERROR

            wait_until(refused, PATIENCE_S, "KAFKA_STORAGE_ERROR from the failed dir's partition", 0.2)
            assert produce(client, "jbod", [b"after"], partition=1)[0] is ErrorCode.NONE
            described: DescribeLogDirsResponse = client.request(DescribeLogDirsRequest(topics=None), 4)
            by_dir = {r.log_dir: r for r in described.results}
            assert by_dir[str(failing)].error_code == ErrorCode.KAFKA_STORAGE_ERROR
            assert by_dir[str(failing)].total_bytes == -1
            assert by_dir[str(surviving)].error_code == ErrorCode.NONE
            assert "jbod" in [t.name for t in by_dir[str(surviving)].topics]

        _break(surviving)
        assert broker.process is not None
        code = broker.process.wait(PATIENCE_S)
        assert code == 1, broker.log_text()
        assert "every log dir" in broker.log_text()
    finally:
        broker.kill()


def test_a_broker_starts_with_an_unusable_log_dir_offline_and_serves_it_again_once_it_is_back(
    tmp_path: Path,
) -> None:
    """As Kafka 3.9: a dir that cannot be used at start is offline, the others serve; its partitions
    are not made again empty elsewhere, so once the dir is back their records are all there."""
    require_module("confluent_kafka")
    dirs = [tmp_path / "a", tmp_path / "b"]
    broker = BrokerProcess(tmp_path / "broker", {"log.dirs": ",".join(str(d) for d in dirs)})
    broker.start()
    try:
        create_topic(broker.bootstrap, "jbod", partitions=2)
        with RawClient(broker.port, timeout=10) as client:
            for partition in (0, 1):
                assert produce(client, "jbod", [b"kept"], partition=partition)[0] is ErrorCode.NONE
        broker.stop()
        second = dirs[1]
        in_second = 0 if (second / "jbod-0").is_dir() else 1
        hidden = second.with_name("b.hidden")
        second.rename(hidden)
        second.write_bytes(b"")

        broker.start()
        with RawClient(broker.port, timeout=10) as client:
            assert produce(client, "jbod", [b"x"], partition=in_second)[0] is ErrorCode.KAFKA_STORAGE_ERROR
            assert produce(client, "jbod", [b"x"], partition=1 - in_second)[0] is ErrorCode.NONE
            described: DescribeLogDirsResponse = client.request(DescribeLogDirsRequest(topics=None), 4)
            codes = {r.log_dir: r.error_code for r in described.results}
            assert codes == {str(dirs[0]): ErrorCode.NONE, str(second): ErrorCode.KAFKA_STORAGE_ERROR}
        broker.stop()
        assert not (dirs[0] / f"jbod-{in_second}").exists()  # not made again in the other dir

        second.unlink()
        hidden.rename(second)
        broker.start()
        with RawClient(broker.port, timeout=10) as client:
            assert produce(client, "jbod", [b"back"], partition=in_second) == (ErrorCode.NONE, 1)
    finally:
        broker.kill()
