"""The broker's log lines stay bounded whatever a client put in the strings they quote: a client id,
group id, member id, a join or leave reason and a SASL user name are each up to 32 KiB, and a line may
list many of them. (Line breaks in them: test_log_lines.py.) Issue #25, "What the authorizer should
hide"."""

from __future__ import annotations

import logging

from odradek.logs import StructuredFormatter

#: One line never needs more than this, whatever its arguments hold.
LINE_BOUND = 10_000


def _format(message: str, *args: object, fields: dict[str, object] | None = None) -> str:
    record = logging.LogRecord("odradek.test", logging.INFO, __file__, 1, message, args, None)
    if fields is not None:
        record.fields = fields
    return StructuredFormatter().format(record)


def test_client_strings_are_cut_short() -> None:
    """Before: each 32 KiB string went whole into the line."""
    group = "g" * 32_767
    members = ["c" * 32_000 + f"-{i}" for i in range(10)]
    line = _format("group %s removed members who did not rejoin: %s", group, members)
    assert len(line) < LINE_BOUND, len(line)
    assert "group ggg" in line and "removed members who did not rejoin: ['ccc" in line
    assert "characters)..." in line  # says that it was cut, and by how much
    fields = _format("closing idle connection", fields={"principal": "User:" + "p" * 32_000})
    assert len(fields) < LINE_BOUND


def test_numbers_and_short_strings_are_as_logging_formats_them() -> None:
    line = _format("Controller %d: topic %s gets partitions %s (%r, %.1f)", 3, "orders", [1, 2], "x", 2.5)
    assert line.endswith("odradek.test Controller 3: topic orders gets partitions [1, 2] ('x', 2.5)")
