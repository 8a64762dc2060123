"""Structured logs: one line per event, `time level logger message key=value ...`."""

from __future__ import annotations

import logging
import sys
import time


class StructuredFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
        line = f"{stamp}.{int(record.msecs):03d}Z {record.levelname:<5} {record.name} {record.getMessage()}"
        fields = getattr(record, "fields", None)
        if isinstance(fields, dict):
            line += "".join(f" {key}={value}" for key, value in fields.items())
        if record.exc_info:
            line += "\n" + self.formatException(record.exc_info)
        return line


def configure_logging(level: str = "INFO") -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(StructuredFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
