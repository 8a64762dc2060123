"""How `odradek consume` prints a message: text, json or raw.

text and raw follow kafka-console-consumer's DefaultMessageFormatter: optional fields in the order
timestamp (``CreateTime:1700000000000``), partition (``Partition:0``), offset (``Offset:42``), headers
(``k:v,k2:v2`` or ``NO_HEADERS``), key, then the value, separated by the key separator (a tab by
default), one message a line; an absent key or value prints as ``null``. raw writes keys and values as
the bytes they are; text shows bytes that are not UTF-8 as ``\\xNN`` so a terminal stays sane.

json prints one object a line with every field, whatever --print-* say: topic, partition, offset,
timestamp, timestamp_type, key, headers ([{"key", "value"}]) and value. A key or value that is not
UTF-8 is given in base64, flagged by ``"key_encoding": "base64"`` (or value_encoding).
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from confluent_kafka import Message

FORMATS = ("text", "json", "raw")
TIMESTAMP_TYPES = {0: "NoTimestampType", 1: "CreateTime", 2: "LogAppendTime"}


@dataclass(frozen=True)
class Layout:
    """Which fields text and raw print, and what separates them."""

    format: str = "text"
    print_key: bool = False
    print_headers: bool = False
    print_timestamp: bool = False
    print_offset: bool = False
    print_partition: bool = False
    separator: str = "\t"


def format_message(message: Message, layout: Layout) -> bytes:
    """One message as a line of output, its line end included."""
    if layout.format == "json":
        return (json.dumps(_record(message), ensure_ascii=False) + "\n").encode()
    show = _raw if layout.format == "raw" else _text
    separator = layout.separator.encode()
    fields: list[bytes] = []
    if layout.print_timestamp:
        kind, timestamp = message.timestamp()
        fields.append(f"{TIMESTAMP_TYPES[kind]}:{timestamp}".encode() if kind in (1, 2) else b"NO_TIMESTAMP")
    if layout.print_partition:
        fields.append(f"Partition:{message.partition()}".encode())
    if layout.print_offset:
        fields.append(f"Offset:{message.offset()}".encode())
    if layout.print_headers:
        text = b",".join(name.encode() + b":" + show(value) for name, value in _headers(message))
        fields.append(text or b"NO_HEADERS")
    if layout.print_key:
        fields.append(show(message.key()))
    fields.append(show(message.value()))
    return separator.join(fields) + b"\n"


def _headers(message: Message) -> list[tuple[str, bytes | str | None]]:
    headers = message.headers() or []
    return list(headers.items()) if isinstance(headers, dict) else list(headers)


def _raw(data: bytes | str | None) -> bytes:
    if data is None:
        return b"null"
    return data.encode() if isinstance(data, str) else data


def _text(data: bytes | str | None) -> bytes:
    if data is None:
        return b"null"
    if isinstance(data, str):
        return data.encode()
    return data.decode("utf-8", "backslashreplace").encode()


def _record(message: Message) -> dict[str, Any]:
    kind, timestamp = message.timestamp()
    record: dict[str, Any] = {
        "topic": message.topic(),
        "partition": message.partition(),
        "offset": message.offset(),
        "timestamp": timestamp if kind else None,
        "timestamp_type": TIMESTAMP_TYPES.get(kind, "NoTimestampType"),
    }
    _put(record, "key", message.key())
    record["headers"] = [_put({"key": name}, "value", value) for name, value in _headers(message)]
    _put(record, "value", message.value())
    return record


def _put(record: dict[str, Any], name: str, data: bytes | str | None) -> dict[str, Any]:
    """record[name] = data as a string: UTF-8 text if it is, else base64 with `<name>_encoding`."""
    if data is None or isinstance(data, str):
        record[name] = data
        return record
    try:
        record[name] = data.decode("utf-8")
    except UnicodeDecodeError:
        record[name] = base64.b64encode(data).decode("ascii")
        record[f"{name}_encoding"] = "base64"
    return record
