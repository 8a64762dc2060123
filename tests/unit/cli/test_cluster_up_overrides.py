"""`odradek cluster up --override key=value`: set for every broker (written into each broker's
server.properties), checked by the broker's own config checks before anything starts, so that an
unknown, refused or malformed setting stops the command in one line naming it. It took no settings at
all: a user could not even set num.partitions."""

from __future__ import annotations

from pathlib import Path

import pytest

from odradek.cli.cluster import write_broker_configs
from odradek.cli.main import main
from odradek.config.properties import load_properties


def test_overrides_are_written_into_every_brokers_server_properties(tmp_path: Path) -> None:
    overrides = ["num.partitions=4", "offsets.topic.replication.factor=1", "log.retention.ms=60000"]
    paths = write_broker_configs(tmp_path, 3, 9092, "127.0.0.1:2181/odradek", overrides)
    for node, path in enumerate(paths, start=1):
        written = load_properties(path)
        assert written["broker.id"] == str(node)
        assert written["listeners"] == f"PLAINTEXT://127.0.0.{node + 1}:9092"
        assert written["num.partitions"] == "4"
        assert written["log.retention.ms"] == "60000"
        assert written["offsets.topic.replication.factor"] == "1"  # replaces the default it writes


def test_a_value_with_properties_syntax_reaches_the_broker_unchanged(tmp_path: Path) -> None:
    value = "User:alice;User:b=o b\\x #not a comment"
    (path,) = write_broker_configs(tmp_path, 1, 9092, "127.0.0.1:2181", [f"super.users={value}"])
    assert load_properties(path)["super.users"] == value


@pytest.mark.parametrize(
    ("override", "named"),
    [
        ("no.such.config=1", "no.such.config"),
        ("unstable.api.versions.enable=true", "unstable.api.versions.enable"),  # refused
        ("num.partitions=many", "num.partitions"),  # not a number
        ("num.partitions=0", "num.partitions"),  # out of range
        ("listeners=PLAINTEXT://127.0.0.1:9092", "listeners"),  # set per broker by cluster up itself
        ("log.dirs=/tmp/x", "log.dirs"),
        ("broker.id=7", "broker.id"),
        ("num.partitions", "num.partitions"),  # no '='
        # bytes that are not UTF-8 on the command line (Python's surrogate escapes): a traceback
        # writing server.properties, with the first broker's file already made
        ("super.users=User:al\udcffce", "super.users"),
    ],
)
def test_an_unusable_override_stops_cluster_up_in_one_line_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], override: str, named: str
) -> None:
    code = main(["cluster", "up", "--brokers", "1", "--dir", str(tmp_path), "--override", override])
    err = capsys.readouterr().err
    assert code == 2
    assert err.count("\n") == 1 and err.startswith("odradek cluster up: ") and named in err, err
    assert not (tmp_path / "zookeeper").exists()  # stopped before starting anything


def test_a_secret_given_as_an_override_is_warned_about_and_its_files_are_the_users_alone(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    paths = write_broker_configs(tmp_path, 2, 9092, "127.0.0.1:2181", ["ssl.key.password=hunter2"])
    assert all(path.stat().st_mode & 0o777 == 0o600 for path in paths)
    err = capsys.readouterr().err
    assert "ssl.key.password" in err and "hunter2" not in err


def test_a_small_cluster_gives_transaction_state_a_replication_factor_it_can_honour(tmp_path: Path) -> None:
    # only offsets.topic.replication.factor was lowered for few brokers: __transaction_state kept
    # Kafka's 3 (min.isr 2), so no transactional producer could start on a cluster of one or two
    for brokers, replication, min_isr in ((1, "1", "1"), (2, "2", "2"), (4, "3", "2")):
        paths = write_broker_configs(tmp_path / str(brokers), brokers, 9092, "127.0.0.1:2181/odradek", [])
        for path in paths:
            written = load_properties(path)
            assert written["offsets.topic.replication.factor"] == replication
            assert written["transaction.state.log.replication.factor"] == replication
            assert written["transaction.state.log.min.isr"] == min_isr
