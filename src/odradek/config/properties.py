"""Java ``.properties`` files, read the way ``java.util.Properties.load`` reads them, and ``--override``.

The format: ``#`` or ``!`` starts a comment line; a key ends at the first unescaped ``=``, ``:`` or
whitespace, and whitespace around the separator is skipped; a line ending in an odd number of
backslashes continues on the next line (whose leading whitespace is dropped); ``\\t \\n \\r \\f`` and
``\\uXXXX`` are escapes, and a backslash before any other character stands for that character. The last
of repeated keys wins. Java reads such files as ISO-8859-1; we read UTF-8 (falling back to ISO-8859-1
for bytes that are not UTF-8), since that is what people write today.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

from odradek.config.types import ConfigError

_WHITESPACE = " \t\f"
_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}
_NAMED_ESCAPES = {value: "\\" + name for name, value in _ESCAPES.items()}


def load_properties(path: str | Path) -> dict[str, str]:
    """The key/value pairs of a properties file, in file order."""
    data = Path(path).read_bytes()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        text = data.decode("iso-8859-1")
    return parse_properties(text)


def parse_properties(text: str) -> dict[str, str]:
    properties: dict[str, str] = {}
    for number, logical_line in _logical_lines(text):
        key, value = _split_key_value(logical_line, number)
        properties[key] = value
    return properties


def parse_override(text: str) -> tuple[str, str]:
    """One ``--override key=value``; the value may be empty, the key may not."""
    key, sep, value = text.partition("=")
    if not sep:
        raise ConfigError(f"Override '{text}' is not of the form key=value")
    if not key.strip():
        raise ConfigError("An override has no key before '='")  # (what follows may be a password)
    return key.strip(), value


def apply_overrides(properties: dict[str, str], overrides: Iterable[str]) -> dict[str, str]:
    """A copy of ``properties`` with each ``key=value`` override applied in order."""
    merged = dict(properties)
    for override in overrides:
        key, value = parse_override(override)
        merged[key] = value
    return merged


def format_property(key: str, value: str) -> str:
    """One ``key=value`` line that `parse_properties` reads back as these (the file to be written as
    UTF-8, which odradek reads; other control characters as ``\\uXXXX``)."""
    return f"{_escape(key, True)}={_escape(value, False)}\n"


def _escape(text: str, is_key: bool) -> str:
    out: list[str] = []
    for index, char in enumerate(text):
        if char == "\\":
            out.append("\\\\")
        elif char in _NAMED_ESCAPES:
            out.append(_NAMED_ESCAPES[char])
        elif char in "=:#!" or (char == " " and (is_key or index == 0)):
            out.append("\\" + char)
        elif char < " " or char == "\x7f":
            out.append(f"\\u{ord(char):04x}")
        else:
            out.append(char)
    return "".join(out)


def load_with_overrides(path: str | Path | None, overrides: Sequence[str] = ()) -> dict[str, str]:
    """What the broker starts from: the file (if any), then the command line's overrides."""
    properties = load_properties(path) if path is not None else {}
    return apply_overrides(properties, overrides)


def _logical_lines(text: str) -> Iterator[tuple[int, str]]:
    """(first line number, joined text) of each non-blank, non-comment logical line."""
    # Only \n, \r and \r\n end lines (str.splitlines would also split on \f, which is whitespace here).
    lines = re.split(r"\r\n|\r|\n", text)
    index = 0
    while index < len(lines):
        number = index + 1
        line = lines[index].lstrip(_WHITESPACE)
        index += 1
        if not line or line[0] in "#!":
            continue  # a comment line never continues onto the next line
        parts: list[str] = []
        while _continues(line) and index < len(lines):
            parts.append(line[:-1])
            line = lines[index].lstrip(_WHITESPACE)
            index += 1
        if _continues(line):
            line = line[:-1]  # a continuation at end of file continues into nothing
        parts.append(line)
        yield number, "".join(parts)


def _continues(line: str) -> bool:
    trailing = len(line) - len(line.rstrip("\\"))
    return trailing % 2 == 1


def _split_key_value(line: str, number: int) -> tuple[str, str]:
    index = 0
    while index < len(line):
        char = line[index]
        if char == "\\":
            index += 2
            continue
        if char in "=:" or char in _WHITESPACE:
            break
        index += 1
    key_end = min(index, len(line))
    rest = line[key_end:].lstrip(_WHITESPACE)
    if rest[:1] in ("=", ":"):
        rest = rest[1:].lstrip(_WHITESPACE)
    key = _unescape(line[:key_end], f"line {number}")
    return key, _unescape(rest, f"the value of {key} on line {number}")


def _unescape(text: str, where: str) -> str:
    """`text` with its escapes undone; a malformed one is refused naming `where` only, as the text may
    be a password (Java's Properties quotes nothing either)."""
    out: list[str] = []
    index = 0
    while index < len(text):
        char = text[index]
        index += 1
        if char != "\\" or index >= len(text):
            out.append(char)
            continue
        escaped = text[index]
        index += 1
        if escaped == "u":
            digits = text[index : index + 4]
            if len(digits) != 4 or any(d not in "0123456789abcdefABCDEF" for d in digits):
                raise ConfigError(f"Malformed \\uXXXX escape in {where}")
            out.append(chr(int(digits, 16)))
            index += 4
        else:
            out.append(_ESCAPES.get(escaped, escaped))
    return "".join(out)
