"""Structured logs: one line per event, `time level logger message key=value ...`.

Messages carry what clients send (group, client and transactional ids, principals, topic names in
errors): control characters in the message and the fields are written escaped (`\\n`, `\\x1b`), so a
client cannot start a line of its own (a forged event) or send escape sequences to a terminal. A
traceback, the broker's own text, follows its event's line as it is.
"""

from __future__ import annotations

import logging
import sys
import time
from typing import Final

#: The most of one string (a name, a config value, a reason) a log line quotes: a client's string may
#: be 32 KiB and a znode about 1 MB.
SHOWN_CHARS: Final = 200


def shortened(text: str, limit: int = SHOWN_CHARS) -> str:
    """`text`, cut to about `limit` characters: its start and its end (where a message's reason is),
    and how much was left out between them."""
    if len(text) <= limit:
        return text
    head, tail = text[: limit - limit // 3], text[len(text) - limit // 3 :]
    return f"{head}...({len(text) - len(head) - len(tail)} characters)...{tail}"

#: C0 controls, DEL, and the characters Unicode counts as line breaks, written as Python escapes.
_ESCAPES = {code: ascii(chr(code))[1:-1] for code in (*range(0x20), 0x7F, 0x85, 0x2028, 0x2029)}


class StructuredFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
        message = record.getMessage().translate(_ESCAPES)
        line = f"{stamp}.{int(record.msecs):03d}Z {record.levelname:<5} {record.name} {message}"
        fields = getattr(record, "fields", None)
        if isinstance(fields, dict):
            line += "".join(f" {key}={str(value).translate(_ESCAPES)}" for key, value in fields.items())
        if record.exc_info:
            line += "\n" + self.formatException(record.exc_info)
        return line


def configure_logging(level: str = "INFO") -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(StructuredFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
