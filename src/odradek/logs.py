"""Structured logs: one line per event, `time level logger message key=value ...`.

Messages carry what clients send (group, client and transactional ids, principals, topic names in
errors, join and leave reasons: up to 32 KiB each) and what ZooKeeper holds (up to 1 MB): control
characters in the message and the fields are written escaped (`\\n`, `\\x1b`), so a client cannot start
a line of its own (a forged event) or send escape sequences to a terminal, and each argument and field
is cut to `SHOWN_ARGUMENT_CHARS`, the message to `SHOWN_MESSAGE_CHARS`, so a client cannot swell a line
either (Kafka's log4j lines quote such strings whole). A traceback, the broker's own text, follows its
event's line as it is.
"""

from __future__ import annotations

import logging
import sys
import time
from typing import Final

#: The most of one string (a name, a config value, a reason) a log line quotes where it is built.
SHOWN_CHARS: Final = 200
#: The most of one argument or field the formatter writes.
SHOWN_ARGUMENT_CHARS: Final = 1000
#: The most of one message the formatter writes.
SHOWN_MESSAGE_CHARS: Final = 8000

#: C0 and C1 controls (a terminal's CSI is U+009B as well as ESC [), DEL, the characters Unicode counts
#: as line breaks, and the bidirectional controls (which reorder what a viewer shows), as Python escapes.
_ESCAPES = {
    code: ascii(chr(code))[1:-1]
    for code in (
        *range(0x20),
        *range(0x7F, 0xA0),
        0x2028,
        0x2029,
        *range(0x202A, 0x202F),
        *range(0x2066, 0x206A),
    )
}


def shortened(text: str, limit: int = SHOWN_CHARS) -> str:
    """`text`, cut to about `limit` characters: its start and its end (where a message's reason is),
    and how much was left out between them."""
    if len(text) <= limit:
        return text
    head, tail = text[: limit - limit // 3], text[len(text) - limit // 3 :]
    return f"{head}...({len(text) - len(head) - len(tail)} characters)...{tail}"


class StructuredFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
        message = shortened(_message(record), SHOWN_MESSAGE_CHARS).translate(_ESCAPES)
        line = f"{stamp}.{int(record.msecs):03d}Z {record.levelname:<5} {record.name} {message}"
        fields = getattr(record, "fields", None)
        if isinstance(fields, dict):
            line += "".join(f" {key}={_Bounded(value)}" for key, value in fields.items())
        if record.exc_info:
            line += "\n" + self.formatException(record.exc_info)
        return line


def configure_logging(level: str = "INFO") -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(StructuredFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())


def _message(record: logging.LogRecord) -> str:
    if not isinstance(record.args, tuple) or not record.args:
        return record.getMessage()
    # numbers stay numbers (%d); anything else is written through a bound, for %s as for %r
    args = tuple(arg if isinstance(arg, int | float) else _Bounded(arg) for arg in record.args)
    return str(record.msg) % args


class _Bounded:
    """An argument or field as %s or %r writes it, cut short and on one line."""

    __slots__ = ("value",)

    def __init__(self, value: object) -> None:
        self.value = value

    def __str__(self) -> str:
        return shortened(str(self.value), SHOWN_ARGUMENT_CHARS).translate(_ESCAPES)

    def __repr__(self) -> str:
        return shortened(repr(self.value), SHOWN_ARGUMENT_CHARS).translate(_ESCAPES)
