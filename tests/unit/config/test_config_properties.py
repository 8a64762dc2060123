"""Reading Java .properties files and applying --override key=value."""

from __future__ import annotations

from pathlib import Path

import pytest

from odradek.config.properties import (
    apply_overrides,
    format_property,
    load_properties,
    load_with_overrides,
    parse_override,
    parse_properties,
)
from odradek.config.types import ConfigError


def test_comments_blank_lines_and_separators() -> None:
    text = (
        "# a comment\n! also a comment\n\n   \t\na=1\nb: 2\nc 3\n  d =  4  \ne\t:\tfive\nf\ng=\nh = a=b:c\n"
    )
    assert parse_properties(text) == {
        "a": "1",
        "b": "2",
        "c": "3",
        "d": "4  ",  # trailing whitespace belongs to the value, as in Java
        "e": "five",
        "f": "",
        "g": "",
        "h": "a=b:c",
    }


def test_line_continuations() -> None:
    text = "listeners=PLAINTEXT://:9092,\\\n    SSL://:9093\nnext=1\n"
    assert parse_properties(text) == {"listeners": "PLAINTEXT://:9092,SSL://:9093", "next": "1"}


def test_even_backslashes_do_not_continue() -> None:
    text = "path=C:\\\\dir\\\\\nnext=1\n"
    assert parse_properties(text) == {"path": "C:\\dir\\", "next": "1"}


def test_comment_lines_never_continue() -> None:
    text = "# comment \\\nreal=1\n"
    assert parse_properties(text) == {"real": "1"}


def test_continuation_at_end_of_file() -> None:
    assert parse_properties("a=1\\") == {"a": "1"}


def test_escapes() -> None:
    text = "key\\ with\\:odd\\=chars = tab\\there\\nnewline \\u00e9t\\u00E9 \\q\n"
    assert parse_properties(text) == {"key with:odd=chars": "tab\there\nnewline été q"}


def test_crlf_and_cr_line_endings() -> None:
    assert parse_properties("a=1\r\nb=2\rc=3") == {"a": "1", "b": "2", "c": "3"}


def test_form_feed_is_whitespace_not_a_line_break() -> None:
    assert parse_properties("\fa\f=\fb\n") == {"a": "b"}


def test_last_duplicate_wins() -> None:
    assert parse_properties("a=1\na=2\n") == {"a": "2"}


def test_malformed_unicode_escape() -> None:
    with pytest.raises(ConfigError, match="line 2"):
        parse_properties("ok=1\nbad=\\u12g4\n")


def test_load_file_utf8_and_latin1(tmp_path: Path) -> None:
    utf8 = tmp_path / "utf8.properties"
    utf8.write_bytes("name=café\n".encode())
    latin1 = tmp_path / "latin1.properties"
    latin1.write_bytes("name=café\n".encode("iso-8859-1"))
    assert load_properties(utf8) == {"name": "café"}
    assert load_properties(latin1) == {"name": "café"}


def test_overrides() -> None:
    assert parse_override("log.dirs=./data") == ("log.dirs", "./data")
    assert parse_override("listeners=PLAINTEXT://:9092") == ("listeners", "PLAINTEXT://:9092")
    assert parse_override("empty=") == ("empty", "")
    merged = apply_overrides({"a": "1", "b": "2"}, ["b=3", "c=x=y"])
    assert merged == {"a": "1", "b": "3", "c": "x=y"}


@pytest.mark.parametrize("bad", ["novalue", "=value"])
def test_bad_overrides(bad: str) -> None:
    with pytest.raises(ConfigError):
        parse_override(bad)


def test_file_then_overrides(tmp_path: Path) -> None:
    path = tmp_path / "server.properties"
    path.write_text("node.id=1\nlog.dirs=/var/kafka\n")
    assert load_with_overrides(path, ["log.dirs=./data"]) == {"node.id": "1", "log.dirs": "./data"}
    assert load_with_overrides(None, ["node.id=2"]) == {"node.id": "2"}


def test_a_malformed_escape_in_a_password_is_not_quoted() -> None:
    """Before: "Malformed \\uXXXX escape on line 2: <the whole value>" put a password (a JAAS config,
    a key store's) into the start-up error, on a terminal or in a CI log."""
    text = 'a=1\nsasl.jaas.config=PlainLoginModule required password="s3cr\\uZZet";\n'
    with pytest.raises(ConfigError) as refused:
        parse_properties(text)
    assert "s3cr" not in str(refused.value)
    assert "line 2" in str(refused.value) and "sasl.jaas.config" in str(refused.value)


def test_an_override_without_a_key_is_not_quoted() -> None:
    with pytest.raises(ConfigError) as refused:
        parse_override("=s3cret")
    assert "s3cret" not in str(refused.value)


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("super.users", "User:alice;User:bob"),
        ("a key:with=separators", " leading space, trailing space "),
        ("ssl.keystore.password", "p\\a=s:s#w!o\trd\n\r\f\x01"),
        ("sasl.jaas.config", 'org.Module required username="élan";'),
        ("empty", ""),
    ],
)
def test_a_formatted_property_reads_back_as_written(key: str, value: str) -> None:
    assert parse_properties(format_property(key, value) + format_property("next", "x")) == {
        key: value,
        "next": "x",
    }
