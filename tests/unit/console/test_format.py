"""How the message browser shows keys and values: JSON pretty-printed, text, hex, and the fallbacks."""

from __future__ import annotations

import json

import pytest

from odradek.console.format import HEX_LIMIT, detect, hex_dump, render


def test_json_objects_and_arrays_are_pretty_printed() -> None:
    shown = render(b'{"item":"book","qty":2}')
    assert shown.kind == "json"
    assert shown.text == json.dumps({"item": "book", "qty": 2}, indent=2)
    assert detect(b" [1, 2]\n") == "json"


def test_scalars_that_are_valid_json_read_as_text() -> None:
    assert detect(b"42") == "text"
    assert detect(b"true") == "text"
    assert detect(b'"quoted"') == "text"


def test_utf8_text_stays_text_with_line_ends_and_accents() -> None:
    shown = render("héllo\nwörld\tok".encode())
    assert (shown.kind, shown.text, shown.size) == ("text", "héllo\nwörld\tok", 16)


def test_bytes_that_are_not_utf8_or_hold_control_characters_are_hex() -> None:
    assert detect(b"\xff\xfe\x00") == "hex"
    assert detect(b"abc\x00def") == "hex"
    assert detect(b"broken {") == "text"


def test_none_is_null_and_empty_is_empty_text() -> None:
    assert render(None).kind == "null"
    assert render(b"").kind == "text"


def test_forced_json_that_does_not_parse_falls_back_to_hex() -> None:
    shown = render(b"not json", "json")
    assert shown.kind == "hex"
    assert "6e 6f 74" in shown.text


def test_forced_text_shows_control_characters_as_text() -> None:
    assert render(b"a\x01b", "text").kind == "text"
    assert render(b'{"a":1}', "text").text == '{"a":1}'


def test_forced_hex_of_text() -> None:
    assert render(b"AB", "hex").text == "00000000  41 42" + " " * 42 + "  AB"


def test_hex_dump_lines_have_offset_bytes_and_ascii() -> None:
    lines = hex_dump(bytes(range(20))).splitlines()
    assert lines[0] == "00000000  " + " ".join(f"{b:02x}" for b in range(16)) + "  " + "." * 16
    assert lines[1].startswith("00000010  10 11 12 13")


def test_a_large_value_is_cut_and_says_so() -> None:
    shown = render(b"\x00" * (HEX_LIMIT + 100))
    assert shown.truncated
    assert len(shown.text.splitlines()) == HEX_LIMIT // 16


def test_an_unknown_mode_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown display mode"):
        render(b"x", "base64")
