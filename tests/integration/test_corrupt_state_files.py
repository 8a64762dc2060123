"""A broker whose persisted state cannot be read says so in one line naming the file, and exits
non-zero without a traceback. Each case runs the real `odradek broker` command on a log directory
prepared with one bad file. Before, these ended start-up in a Python traceback."""

from __future__ import annotations

from pathlib import Path

import pytest

from odradek.cluster.metadata.broker_configs import FILE_NAME as DYNAMIC_CONFIGS
from odradek.cluster.metadata.client_metrics import FILE_NAME as CLIENT_METRICS_FILE
from odradek.cluster.metadata.group_configs import FILE_NAME as GROUP_CONFIGS_FILE
from odradek.storage.files import TOPICS_FILE
from tests.support.broker_command import assert_refused_in_one_line, minimal_settings, run_broker
from tests.support.broker_process import BrokerProcess
from tests.support.interop import produce_acknowledged

pytestmark = pytest.mark.timeout(60)


@pytest.mark.parametrize(
    ("content", "named"),
    [
        ("[1, 2]", "an array"),
        ("42", "a number"),
        ('"configs"', "a string"),
        ("null", "null"),
        ('{"version": 1, "cluster_default": ["log.retention.ms"]}', "'cluster_default'"),
        ('{"version": 1, "brokers": 1}', "'brokers'"),
        ('{"version": 1, "brokers": {"1": "max.connections=5"}}', "'1'"),
    ],
    ids=["array", "number", "string", "null", "cluster default array", "brokers number", "own layer string"],
)
def test_dynamic_broker_configs_of_the_wrong_json_shape_refuse_start_up_in_one_line(
    tmp_path: Path, content: str, named: str
) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (data / DYNAMIC_CONFIGS).write_text(content)
    result = run_broker(*minimal_settings(data), "--override", "node.id=1")
    assert_refused_in_one_line(result, DYNAMIC_CONFIGS, named)


CHECKPOINTS = [
    "recovery-point-offset-checkpoint",
    "log-start-offset-checkpoint",
    "replication-offset-checkpoint",
    "cleaner-offset-checkpoint",
]
NOT_TEXT = b"\xff\xfe\x00\x01\x80"


@pytest.mark.parametrize("checkpoint", CHECKPOINTS)
@pytest.mark.parametrize("corruption", ["not text", "not a number"])
def test_an_unreadable_checkpoint_refuses_start_up_in_one_line_naming_it(
    tmp_path: Path, checkpoint: str, corruption: str
) -> None:
    """Kafka takes the log dir offline for an unreadable checkpoint, which stops a broker with one
    log dir. Before, these ended start-up in UnicodeDecodeError or ValueError tracebacks (and other
    malformed contents were ignored, though after a clean shutdown nothing rebuilt what they held)."""
    data = tmp_path / "data"
    data.mkdir()
    content, named = {
        "not text": (NOT_TEXT, "not a text file"),
        "not a number": (b"0\n1\norders x 5\n", "'x' is not a number"),
    }[corruption]
    (data / checkpoint).write_bytes(content)
    result = run_broker(*minimal_settings(data), "--override", "node.id=1")
    assert_refused_in_one_line(result, "Error while reading checkpoint file", str(data / checkpoint), named)


def test_a_leader_epoch_checkpoint_a_power_loss_zeroed_is_rebuilt_and_the_broker_starts(
    tmp_path: Path,
) -> None:
    """Unlike the checkpoints above (fsynced before their rename), the leader epoch checkpoint is
    rewritten on the event loop without fsync, so a power loss can leave it zero-filled: the broker
    rebuilds it from the epochs in the batches. It refused to start ("Error while reading checkpoint
    file ... not a number")."""
    data = tmp_path / "data"
    broker = BrokerProcess(data).start()
    try:
        produce_acknowledged(broker.bootstrap, "orders", [b"a", b"b", b"c"], timeout=30)
    finally:
        broker.stop()
    checkpoint = data / "orders-0" / "leader-epoch-checkpoint"
    whole = checkpoint.read_bytes()
    assert whole == b"0\n1\n0 0\n"
    checkpoint.write_bytes(b"\x00" * len(whole))
    broker.start()
    try:
        assert checkpoint.read_bytes() == whole
        assert "rebuilding the leader epochs" in broker.log_text()
    finally:
        broker.stop()


def test_meta_properties_that_is_not_text_refuses_start_up_in_one_line(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (data / "meta.properties").write_bytes(NOT_TEXT)
    result = run_broker(*minimal_settings(data), "--override", "node.id=1")
    assert_refused_in_one_line(result, "meta.properties", "not a text file")


@pytest.mark.parametrize(
    ("content", "named"),
    [
        ("[]", "not topic metadata"),
        ("7", "not topic metadata"),
        ('{"version": 1, "topics": ["orders"]}', "not topic metadata"),
        ('{"version": 1, "topics": {"orders": "3 partitions"}}', "'orders'"),
        ('{"version": 1, "topics": {"orders": {"partitions": 3}}}', "'orders'"),
        (
            '{"version": 1, "topics": {"orders": {"topic_id": "AAAAAAAAAAAAAAAAAAAAAQ", "partitions": "x"}}}',
            "'orders'",
        ),
        ('{"version": 1, "topics": {"orders": {"topic_id": 5, "partitions": 1}}}', "'orders'"),
    ],
    ids=[
        "array",
        "number",
        "topics array",
        "topic string",
        "no topic id",
        "partitions not a number",
        "id number",
    ],
)
def test_topic_metadata_of_the_wrong_json_shape_refuses_start_up_in_one_line(
    tmp_path: Path, content: str, named: str
) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (data / TOPICS_FILE).write_text(content)
    result = run_broker(*minimal_settings(data), "--override", "node.id=1")
    assert_refused_in_one_line(result, TOPICS_FILE, named)


@pytest.mark.parametrize("name", ["lost+found", "orders-x", "orders-0.not-a-uid-delete"])
def test_a_directory_that_is_no_partition_refuses_start_up_in_one_line(tmp_path: Path, name: str) -> None:
    """Kafka's LogManager refuses to load a log dir holding a directory whose name is not a topic
    partition's; before, it was silently skipped (a partition renamed by hand vanished unnoticed)."""
    data = tmp_path / "data"
    (data / name).mkdir(parents=True)
    result = run_broker(*minimal_settings(data), "--override", "node.id=1")
    assert_refused_in_one_line(result, str(data / name), "not in the form of topic-partition")


@pytest.mark.parametrize(
    "content",
    ["not json", "[]", '{"version": 1, "subscriptions": []}', '{"version": 2, "subscriptions": {}}'],
    ids=["not json", "array", "subscriptions array", "unknown version"],
)
def test_client_metrics_subscriptions_of_the_wrong_shape_refuse_start_up_in_one_line(
    tmp_path: Path, content: str
) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (data / CLIENT_METRICS_FILE).write_text(content)
    result = run_broker(*minimal_settings(data), "--override", "node.id=1")
    assert_refused_in_one_line(result, CLIENT_METRICS_FILE)


@pytest.mark.parametrize(
    "content",
    ["not json", "[]", '{"version": 1, "groups": []}', '{"version": 2, "groups": {}}'],
    ids=["not json", "array", "groups array", "unknown version"],
)
def test_group_configs_of_the_wrong_shape_refuse_start_up_in_one_line(tmp_path: Path, content: str) -> None:
    """Before, the GROUP configs file's error was no start-up failure: a traceback."""
    data = tmp_path / "data"
    data.mkdir()
    (data / GROUP_CONFIGS_FILE).write_text(content)
    result = run_broker(*minimal_settings(data), "--override", "node.id=1")
    assert_refused_in_one_line(result, GROUP_CONFIGS_FILE)
