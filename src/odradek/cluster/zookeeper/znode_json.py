"""JSON in znodes as Kafka reads and writes it: compact UTF-8 (Jackson's output), typed field access.

Readers are tolerant where Kafka's are (extra fields are ignored, optional fields may be absent) and
strict about types: a znode whose fields are not what Kafka writes is refused with the path and the
field named, never half-read.

The refusal is logged, and may end a start-up, so it quotes little of the znode: nothing at all from
Kafka's sensitive paths (SCRAM credentials, broker configs: znode_acls.sensitive_path), elsewhere a
short excerpt (a znode may hold about 1 MB). Every `what` below names the znode's path first.
"""

from __future__ import annotations

import json
import reprlib
from collections.abc import Mapping
from typing import Final, TypeAlias

from odradek.cluster.zookeeper.znode_acls import sensitive_path

JsonObject: TypeAlias = dict[str, object]

#: The most of a znode's bytes an error message quotes.
EXCERPT_BYTES: Final = 120

_SHORT = reprlib.Repr()  # (keyword arguments only from Python 3.12)
_SHORT.maxstring = _SHORT.maxother = 60
_SHORT.maxlist = _SHORT.maxdict = 4
_SHORT.maxlevel = 2
_JSON_TYPES: Final = {
    dict: "an object",
    list: "a list",
    str: "a string",
    bool: "a boolean",
    type(None): "null",
}


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
    except (UnicodeDecodeError, ValueError, RecursionError) as error:
        # (RecursionError: JSON nested deeper than the parser goes, "[[[[...")
        reason = "" if sensitive_path(path) else f" ({error}): {excerpt(data)}"
        raise MalformedZnodeError(f"{path} does not hold JSON{reason}") from None
    if not isinstance(value, dict):
        shown = "" if sensitive_path(path) else f": {excerpt(data)}"
        raise MalformedZnodeError(f"{path} holds JSON but not an object{shown}")
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
        raise MalformedZnodeError(f"{what} is {shown(value, what)}, not an integer")
    return value


def as_str(value: object, what: str) -> str:
    if not isinstance(value, str):
        raise MalformedZnodeError(f"{what} is {shown(value, what)}, not a string")
    return value


def as_object(value: object, what: str) -> JsonObject:
    if not isinstance(value, dict):
        raise MalformedZnodeError(f"{what} is {shown(value, what)}, not an object")
    return value


def as_int_list(value: object, what: str) -> list[int]:
    if not isinstance(value, list):
        raise MalformedZnodeError(f"{what} is {shown(value, what)}, not a list")
    return [as_int(item, what) for item in value]


def as_str_list(value: object, what: str) -> list[str]:
    if not isinstance(value, list):
        raise MalformedZnodeError(f"{what} is {shown(value, what)}, not a list")
    return [as_str(item, what) for item in value]


def as_long_string(value: object, what: str) -> int:
    """A 64-bit number Kafka writes as a JSON string (timestamps, producer id block bounds)."""
    text = as_str(value, what)
    try:
        return int(text)
    except ValueError:
        raise MalformedZnodeError(f"{what} is {shown(text, what)}, not a number in a string") from None


def shown(value: object, what: str) -> str:
    """`value`, read from the znode `what` names, for an error message: its JSON type alone for a
    sensitive znode, else a short repr."""
    if sensitive_path(what):
        return _JSON_TYPES.get(type(value), "a number")
    return _SHORT.repr(value)


def naming(path: str, kind: str, key: str) -> str:
    """A `what` for the value of `key` (read from the znode) at `path`, e.g. "/config/topics/t config
    'retention.ms'": the key shortened, and left out for a sensitive znode."""
    return f"{path} {kind}" if sensitive_path(path) else f"{path} {kind} {_SHORT.repr(key)}"


def excerpt(data: bytes) -> str:
    """The start of a znode's bytes (of a path that is not sensitive), for an error message."""
    text = data[:EXCERPT_BYTES].decode("utf-8", "replace")
    return text + ("..." if len(data) > EXCERPT_BYTES else "")
