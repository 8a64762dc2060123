"""What people type into the console's forms, and the basic-auth user file."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

from odradek.console.auth import AuthFileError, BasicAuth, load_users
from odradek.console.pages.groups import posted_offsets
from odradek.console.pages.topics import parse_config_lines


def test_config_lines() -> None:
    text = "retention.ms = 1000\n\n# a comment\ncleanup.policy=compact,delete\n"
    assert parse_config_lines(text) == {"retention.ms": "1000", "cleanup.policy": "compact,delete"}


def test_a_config_line_without_equals_names_its_line() -> None:
    with pytest.raises(ValueError, match="line 2"):
        parse_config_lines("a=1\nretention.ms\n")


def test_users_file(tmp_path: Path) -> None:
    path = tmp_path / "users"
    path.write_text("# who may look\nadmin:s3cret:with:colons\nviewer:pw\n")
    assert load_users(path) == {"admin": "s3cret:with:colons", "viewer": "pw"}


@pytest.mark.parametrize("content", ["", "# nobody\n", "nopassword\n", "user:\n"])
def test_a_users_file_without_valid_users_is_refused(tmp_path: Path, content: str) -> None:
    path = tmp_path / "users"
    path.write_text(content)
    with pytest.raises(AuthFileError):
        load_users(path)


def test_basic_auth_header_checks() -> None:
    auth = BasicAuth(app=None, users={"admin": "pw"})  # type: ignore[arg-type]

    def header(credentials: str) -> str:
        return "Basic " + base64.b64encode(credentials.encode()).decode()

    assert auth.allowed(header("admin:pw"))
    assert not auth.allowed(header("admin:wrong"))
    assert not auth.allowed(header("nobody:pw"))
    assert not auth.allowed("Bearer token")
    assert not auth.allowed("Basic not-base64!")


def test_the_offsets_posted_by_the_reset_preview() -> None:
    items = [("offset:orders:0", "5"), ("offset:my.topic:12", "0"), ("other", "x")]
    assert posted_offsets(items) == {("orders", 0): 5, ("my.topic", 12): 0}


@pytest.mark.parametrize("item", [("offset:orders:x", "1"), ("offset:orders:0", "five"), ("offset::0", "1")])
def test_a_tampered_offset_is_refused(item: tuple[str, str]) -> None:
    with pytest.raises(ValueError, match="not an offset"):
        posted_offsets([item])
