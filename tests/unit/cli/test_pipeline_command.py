"""`odradek pipeline` failing before Spark starts: one line on stderr, exit code 1, no traceback."""

from __future__ import annotations

import pytest

from odradek.cli.main import main
from tests.support.broker_process import free_port


def test_pipeline_with_an_unreachable_broker_says_so_in_one_line(
    capsys: pytest.CaptureFixture[str], tmp_path: object
) -> None:
    port = free_port()  # nothing listens there
    code = main(["pipeline", "--bootstrap-server", f"127.0.0.1:{port}", "--output-dir", str(tmp_path)])
    assert code == 1
    assert capsys.readouterr().err == (
        f"odradek pipeline: cannot reach broker at 127.0.0.1:{port} (connection refused)\n"
    )


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--connector", "flink"], "unknown connector 'flink': use odradek or kafka"),
        (
            ["--connector", "kafka", "--delivery", "exactly-once"],
            "Spark's kafka sink writes at least once: exactly-once delivery needs the odradek connector",
        ),
        (["--connector-jars", "/x.jar"], "--connector-jars is for --connector kafka"),
        (
            ["--connector", "kafka", "--connector-jars", "/no/such.jar"],
            "connector jar /no/such.jar is not a file",
        ),
        (
            ["--connector", "kafka", "--bootstrap-server", "127.0.0.1:1", "-X", "sasl.username=u"],
            "'sasl.username' is librdkafka's name, which Spark's kafka connector (the Java client) does not "
            "know: use sasl.jaas.config",
        ),
    ],
)
def test_pipeline_refuses_connector_arguments_it_cannot_honour_in_one_line(
    capsys: pytest.CaptureFixture[str], tmp_path: object, arguments: list[str], message: str
) -> None:
    """Before any broker, generator or Spark: exit code 2 and one line naming what is wrong."""
    assert main(["pipeline", "--output-dir", str(tmp_path), *arguments]) == 2
    assert capsys.readouterr().err == f"odradek pipeline: {message}\n"
