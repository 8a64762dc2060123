"""Log directories and partition sizes, from DescribeLogDirs sent to each live broker.

librdkafka has no DescribeLogDirs, so this goes through odradek's own codec (`odradek.cli.wire`), with
the client's TLS and SASL settings; where it cannot ask, sizes are shown as unknown, with the reason.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from odradek.cli.client import Admin
from odradek.cli.errors import CliError
from odradek.cli.group_offsets import Partition
from odradek.console.data.cluster import Broker
from odradek.protocol.error_codes import ErrorCode


@dataclass(frozen=True)
class LogDir:
    broker_id: int
    path: str
    error: str | None
    total_bytes: int | None
    usable_bytes: int | None
    partition_sizes: dict[Partition, int] = field(default_factory=dict)

    @property
    def size(self) -> int:
        return sum(self.partition_sizes.values())


@dataclass(frozen=True)
class LogDirReport:
    """Every live broker's directories; `errors` says, per broker, why it could not be asked."""

    dirs: list[LogDir]
    errors: dict[int, str]

    def partition_sizes(self) -> dict[Partition, int]:
        """Each partition's size on its largest copy (replicas hold the same data, give or take lag)."""
        sizes: dict[Partition, int] = {}
        for log_dir in self.dirs:
            for partition, size in log_dir.partition_sizes.items():
                sizes[partition] = max(size, sizes.get(partition, 0))
        return sizes

    def topic_sizes(self) -> dict[str, int]:
        sizes: dict[str, int] = {}
        for (topic, _), size in self.partition_sizes().items():
            sizes[topic] = sizes.get(topic, 0) + size
        return sizes


def describe_log_dirs(admin: Admin, brokers: tuple[Broker, ...] | list[Broker]) -> LogDirReport:
    from odradek.cli.wire import describe_log_dirs as ask

    dirs: list[LogDir] = []
    errors: dict[int, str] = {}
    for broker in brokers:
        if not broker.up:
            continue
        try:
            results = ask(admin.config, broker.address, admin.timeout)
        except CliError as error:
            errors[broker.id] = _reason(error.message)
            continue
        for result in results:
            sizes = {
                (topic.name, p.partition_index): p.partition_size
                for topic in result.topics
                for p in topic.partitions
                if not p.is_future_key
            }
            dirs.append(
                LogDir(
                    broker_id=broker.id,
                    path=result.log_dir,
                    error=ErrorCode.for_code(result.error_code).name if result.error_code else None,
                    total_bytes=result.total_bytes if result.total_bytes >= 0 else None,
                    usable_bytes=result.usable_bytes if result.usable_bytes >= 0 else None,
                    partition_sizes=sizes,
                )
            )
    return LogDirReport(dirs, errors)


def _reason(message: str) -> str:
    if "PLAINTEXT" in message:
        return "sizes are asked with DescribeLogDirs, which the console sends over PLAINTEXT listeners only"
    return message
