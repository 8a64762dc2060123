"""The messages between the broker and its regex workers, on the worker's stdin and stdout: a 4-byte
big-endian length, then a JSON object. Both ends use this module (client_regex's WorkerLane writes
requests and reads replies, regex_worker the other way round)."""

from __future__ import annotations

import json
import struct
from typing import Any, BinaryIO, Final

HEADER: Final = struct.Struct(">I")

Message = dict[str, Any]


def encode(message: Message) -> bytes:
    data = json.dumps(message).encode()
    return HEADER.pack(len(data)) + data


def read(stream: BinaryIO) -> Message | None:
    """The next message from a blocking stream; None at its end (or if it ends within a message)."""
    header = stream.read(HEADER.size)
    if len(header) < HEADER.size:
        return None
    (size,) = HEADER.unpack(header)
    body = stream.read(size)
    if len(body) < size:
        return None
    return _decode(body)


class MessageReader:
    """Assembles one message from the chunks a non-blocking reader gets."""

    def __init__(self) -> None:
        self._data = bytearray()

    def feed(self, chunk: bytes) -> Message | None:
        """Add `chunk`; the message once it is complete, else None."""
        self._data += chunk
        if len(self._data) < HEADER.size:
            return None
        (size,) = HEADER.unpack_from(self._data)
        if len(self._data) < HEADER.size + size:
            return None
        return _decode(bytes(self._data[HEADER.size : HEADER.size + size]))


def _decode(body: bytes) -> Message:
    message = json.loads(body)
    if not isinstance(message, dict):
        raise ValueError("a regex worker message is a JSON object")
    return message
