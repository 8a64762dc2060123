"""User and client names as ZooKeeper node names, as Kafka's Sanitizer makes them (URL encoding).

`/config/users/<name>` holds a sanitized name: Java's URLEncoder output (letters, digits and `.-*_` kept,
everything else as `%XX` of its UTF-8 bytes, space as `+`), then `*` as `%2A` and `+` as `%20`. Reading
a znode name back is URL decoding (`+` is a space), as Kafka's desanitize.
"""

from __future__ import annotations

import string
from typing import Final
from urllib.parse import unquote_plus

_KEPT: Final = frozenset(string.ascii_letters + string.digits + ".-_")


def sanitize(name: str) -> str:
    return "".join(
        char if char in _KEPT else "".join(f"%{byte:02X}" for byte in char.encode("utf-8")) for char in name
    )


def desanitize(node_name: str) -> str:
    return unquote_plus(node_name, encoding="utf-8", errors="strict")
