"""The broker's log is one line per event (odradek.logs): a client-supplied string (a group id, a client
id, a transactional id, a principal) logged with a line break in it must not start a line of its own,
which a log reader would take for an event the broker never logged."""

from __future__ import annotations

import logging
import sys

from odradek.logs import StructuredFormatter

FORGED = "orders\n2026-01-01T00:00:00.000Z ERROR odradek.broker broker stopped"


def _format(message: str, *args: object, fields: dict[str, object] | None = None) -> str:
    record = logging.LogRecord("odradek.coordinator", logging.INFO, __file__, 1, message, args, None)
    if fields is not None:
        record.fields = fields
    return StructuredFormatter().format(record)


def test_a_client_supplied_line_break_forged_a_log_line() -> None:
    line = _format("member %s left consumer group %s", "m1\r\n", FORGED)
    assert "\n" not in line and "\r" not in line
    assert line.endswith(
        "left consumer group orders\\n2026-01-01T00:00:00.000Z ERROR odradek.broker broker stopped"
    )
    assert "m1\\r\\n" in line


def test_fields_and_other_control_characters_are_escaped_too() -> None:
    line = _format("request", fields={"client": FORGED, "id": "a\x1b[31mred\x00\u2028"})
    assert "\n" not in line and "\x1b" not in line and "\x00" not in line and "\u2028" not in line
    assert "id=a\\x1b[31mred\\x00\\u2028" in line


def test_c1_controls_and_bidirectional_overrides_from_a_client_were_left_as_they_came() -> None:
    """U+009B is a terminal's CSI as ESC [ is, and U+202E reverses what follows where the log is shown:
    only U+0085 of the C1 controls was escaped, no bidirectional control at all."""
    line = _format("member %s joined", "a\x9b31mred\x9d0;title\x07\u202etxt.exe\u2066x\u2069")
    for code in ("\x9b", "\x9d", "\u202e", "\u2066", "\u2069"):
        assert code not in line
    assert "a\\x9b31mred\\x9d0;title\\x07\\u202etxt.exe\\u2066x\\u2069" in line


def test_an_exception_still_follows_its_line() -> None:
    try:
        raise ValueError("boom")
    except ValueError:
        record = logging.LogRecord("odradek", logging.ERROR, __file__, 1, "failed", (), sys.exc_info())
    text = StructuredFormatter().format(record)
    first, *rest = text.split("\n")
    assert first.endswith("ERROR odradek failed") and rest[0].startswith("Traceback")
