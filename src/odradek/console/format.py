"""How the message browser shows a key or a value: as text, pretty-printed JSON, or a hex dump.

`auto` picks what a person would: JSON objects and arrays pretty-printed, other UTF-8 without control
characters as text, anything else as hex. A person can force any of the three; a value that is not
what they asked for (JSON that does not parse, text that is not UTF-8) falls back to hex and says so.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Final

MODES: Final = ("auto", "text", "json", "hex")
#: Bytes shown in a hex dump before it is cut, so one 1 MiB value does not make a 5 MiB page.
HEX_LIMIT: Final = 4096
TEXT_LIMIT: Final = 65536
_ALLOWED_CONTROLS: Final = frozenset("\n\r\t")


@dataclass(frozen=True)
class Rendered:
    """A key or value ready for the page: the kind shown (null, text, json, hex) and its text."""

    kind: str
    text: str
    size: int
    truncated: bool = False


def render(data: bytes | None, mode: str = "auto") -> Rendered:
    """`data` shown in `mode` (one of MODES)."""
    if data is None:
        return Rendered("null", "null", 0)
    if mode not in MODES:
        raise ValueError(f"unknown display mode {mode!r}; expected one of {', '.join(MODES)}")
    if mode == "hex":
        return _hex(data)
    text = _utf8(data)
    if mode == "json" or (mode == "auto" and text is not None and _looks_like_json(text)):
        pretty = _pretty_json(text) if text is not None else None
        return Rendered("json", pretty, len(data)) if pretty is not None else _hex(data)
    if text is not None and (mode == "text" or _is_printable(text)):
        return Rendered("text", text[:TEXT_LIMIT], len(data), truncated=len(text) > TEXT_LIMIT)
    return _hex(data)


def detect(data: bytes | None) -> str:
    """The kind `auto` would show: null, json, text or hex."""
    return render(data).kind


def hex_dump(data: bytes, limit: int = HEX_LIMIT) -> str:
    """16 bytes a line: offset, the bytes in hex, and the printable ASCII ones (as `xxd` shows them)."""
    lines = []
    for start in range(0, min(len(data), limit), 16):
        chunk = data[start : start + 16]
        hex_part = " ".join(f"{byte:02x}" for byte in chunk)
        ascii_part = "".join(chr(byte) if 32 <= byte < 127 else "." for byte in chunk)
        lines.append(f"{start:08x}  {hex_part:<47}  {ascii_part}")
    return "\n".join(lines)


def _hex(data: bytes) -> Rendered:
    return Rendered("hex", hex_dump(data), len(data), truncated=len(data) > HEX_LIMIT)


def _utf8(data: bytes) -> str | None:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _looks_like_json(text: str) -> bool:
    # Only objects and arrays: "42" or "true" are valid JSON too, but a person reads them as text.
    stripped = text.strip()
    return stripped[:1] in ("{", "[") and _pretty_json(stripped) is not None


def _pretty_json(text: str) -> str | None:
    try:
        return json.dumps(json.loads(text), indent=2, ensure_ascii=False)
    except ValueError:
        return None


def _is_printable(text: str) -> bool:
    return all(char.isprintable() or char in _ALLOWED_CONTROLS for char in text)
