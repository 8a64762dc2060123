"""Secrets on a command line are readable by every user of the machine (ps, /proc/PID/cmdline): the
commands warn when given one, and name the file that keeps it private instead."""

from __future__ import annotations

import pytest

from odradek.cli.main import main


def test_a_secret_client_setting_given_with_x_is_warned_about_once_each(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = main(
        [
            "topics",
            "list",
            "--bootstrap-server",
            "127.0.0.1:1",
            "-X",
            "sasl.password=hunter2",
            "-X",
            "ssl.key.password=swordfish",
            "-X",
            "client.id=not-a-secret",
            "--request-timeout",
            "1",
        ]
    )
    assert code != 0  # nothing listens there
    warnings = [line for line in capsys.readouterr().err.splitlines() if "warning" in line]
    assert warnings == [
        f"odradek topics: warning: -X {name} on the command line is visible to every user of this machine "
        "(ps, /proc); put it in a --command-config file"
        for name in ("sasl.password", "ssl.key.password")
    ]


def test_a_password_given_to_users_add_is_warned_about(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["users", "add", "--user", "u", "--password", "hunter2", "--bootstrap-server", "127.0.0.1:1"])
    assert code != 0
    error = capsys.readouterr().err
    assert "hunter2" not in error
    assert (
        "odradek users add: warning: --password on the command line is visible to every user of this "
        "machine (ps, /proc); use --password-file, or type it when asked" in error
    )
