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
