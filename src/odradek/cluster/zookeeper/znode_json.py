"""JSON in znodes as Kafka reads and writes it: compact UTF-8 (Jackson's output), typed field access.

Readers are tolerant where Kafka's are (extra fields are ignored, optional fields may be absent) and
strict about types: a znode whose fields are not what Kafka writes is refused with the path and the
field named, never half-read.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TypeAlias

JsonObject: TypeAlias = dict[str, object]


class MalformedZnodeError(ValueError):
    """A znode's data is not in the shape Kafka writes there."""


def encode(value: Mapping[str, object]) -> bytes:
    """Compact JSON, as Jackson writes it: no spaces, non-ASCII as UTF-8."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def decode_object(data: bytes | None, path: str) -> JsonObject:
    """The JSON object held by the znode at `path`."""
    if not data:
        raise MalformedZnodeError(f"{path} holds no data (a JSON object was expected)")
    try:
        value = json.loads(data)
    except (UnicodeDecodeError, ValueError) as error:
        raise MalformedZnodeError(f"{path} does not hold JSON ({error}): {_excerpt(data)}") from None
    if not isinstance(value, dict):
        raise MalformedZnodeError(f"{path} holds JSON but not an object: {_excerpt(data)}")
    return value


def required(obj: JsonObject, key: str, path: str) -> object:
    if key not in obj:
        raise MalformedZnodeError(f"{path} has no {key!r} field")
    return obj[key]


def int_field(obj: JsonObject, key: str, path: str) -> int:
    return as_int(required(obj, key, path), f"{path} field {key!r}")


def str_field(obj: JsonObject, key: str, path: str) -> str:
    return as_str(required(obj, key, path), f"{path} field {key!r}")


def optional_str_field(obj: JsonObject, key: str, path: str) -> str | None:
    """A string field that may be absent or null (as `rack`)."""
    value = obj.get(key)
    return None if value is None else as_str(value, f"{path} field {key!r}")


def object_field(obj: JsonObject, key: str, path: str) -> JsonObject:
    return as_object(required(obj, key, path), f"{path} field {key!r}")


def int_list_field(obj: JsonObject, key: str, path: str) -> list[int]:
    return as_int_list(required(obj, key, path), f"{path} field {key!r}")


def as_int(value: object, what: str) -> int:
    # bool is an int in Python but never in Kafka's JSON
    if not isinstance(value, int) or isinstance(value, bool):
        raise MalformedZnodeError(f"{what} is {value!r}, not an integer")
    return value


def as_str(value: object, what: str) -> str:
    if not isinstance(value, str):
        raise MalformedZnodeError(f"{what} is {value!r}, not a string")
    return value


def as_object(value: object, what: str) -> JsonObject:
    if not isinstance(value, dict):
        raise MalformedZnodeError(f"{what} is {value!r}, not an object")
    return value


def as_int_list(value: object, what: str) -> list[int]:
    if not isinstance(value, list):
        raise MalformedZnodeError(f"{what} is {value!r}, not a list")
    return [as_int(item, what) for item in value]


def as_str_list(value: object, what: str) -> list[str]:
    if not isinstance(value, list):
        raise MalformedZnodeError(f"{what} is {value!r}, not a list")
    return [as_str(item, what) for item in value]


def as_long_string(value: object, what: str) -> int:
    """A 64-bit number Kafka writes as a JSON string (timestamps, producer id block bounds)."""
    text = as_str(value, what)
    try:
        return int(text)
    except ValueError:
        raise MalformedZnodeError(f"{what} is {text!r}, not a number in a string") from None


def _excerpt(data: bytes) -> str:
    text = data[:200].decode("utf-8", "replace")
    return text + ("..." if len(data) > 200 else "")
