"""docs/compatibility.md is what tools/write_compatibility.py writes from the current definitions."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

import pytest

import odradek.handlers  # noqa: F401 - registers every handler
from odradek.handlers._common.registry import REGISTRY
from odradek.protocol.api_keys import ApiKey
from odradek.protocol.messages import REQUESTS, RESPONSES

REPO_ROOT = Path(__file__).resolve().parents[3]


def _render() -> str:
    text: str = _tool().render()
    return text


def test_compatibility_doc_is_up_to_date() -> None:
    expected = _render()
    actual = (REPO_ROOT / "docs" / "compatibility.md").read_text()
    assert actual == expected, "run: .venv/bin/python tools/write_compatibility.py"


def test_every_api_key_has_a_row() -> None:
    text = _render()
    for api_key, request in REQUESTS.items():
        name = request.__name__.removesuffix("Request")
        assert f"| {api_key} | {name} | {request.VERSIONS} |" in text


def _tool() -> Any:
    """tools/write_compatibility.py as a module (registered, as its dataclasses need)."""
    loaded = sys.modules.get("write_compatibility")
    if loaded is not None:
        return loaded
    spec = importlib.util.spec_from_file_location(
        "write_compatibility", REPO_ROOT / "tools" / "write_compatibility.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["write_compatibility"] = module
    spec.loader.exec_module(module)
    return module


def _not_served_part(introduction: str) -> str:
    """What the introduction lists as not served: from "Not served" to the end of its paragraph, its
    lines joined."""
    for paragraph in introduction.split("\n\n"):
        _, found, rest = " ".join(paragraph.split()).partition("Not served")
        if found:
            return rest
    return ""


def test_the_introduction_does_not_call_what_the_registry_serves_not_served() -> None:
    """It said ACL administration and transactions were not served, long after both were."""
    introduction = (REPO_ROOT / "docs" / "compatibility.md").read_text().split("| key |")[0]
    served_areas = {
        "ACL administration": (ApiKey.DESCRIBE_ACLS, ApiKey.CREATE_ACLS, ApiKey.DELETE_ACLS),
        "transactions": (ApiKey.INIT_PRODUCER_ID, ApiKey.ADD_PARTITIONS_TO_TXN, ApiKey.END_TXN),
        "quotas": (ApiKey.DESCRIBE_CLIENT_QUOTAS, ApiKey.ALTER_CLIENT_QUOTAS),
    }
    for area, api_keys in served_areas.items():
        assert all(key in REGISTRY for key in api_keys)
        assert area not in _not_served_part(introduction), area
    for area in _tool().AREAS:
        if any(key in REGISTRY for key in area.api_keys):
            assert area.name not in _not_served_part(introduction), area.name


def test_the_introduction_follows_the_registry() -> None:
    tool = _tool()
    transactions = next(area for area in tool.AREAS if area.name == "transactions")
    without = {key: r for key, r in REGISTRY.items() if key not in transactions.api_keys}
    assert "transactions" in _not_served_part(tool.introduction(without))
    partly = {key: r for key, r in REGISTRY.items() if key != ApiKey.END_TXN}
    # the paragraph is wrapped at 100 columns: a phrase may straddle a line break
    assert "transactions (all but EndTxn)" in " ".join(tool.introduction(partly).split())
    assert "transactions" not in _not_served_part(tool.introduction(REGISTRY))


def test_every_api_key_is_in_exactly_one_area() -> None:
    areas = [key for area in _tool().AREAS for key in area.api_keys]
    assert sorted(areas) == sorted(set(REQUESTS) | set(RESPONSES))


def test_check_passes_on_the_written_file(capsys: pytest.CaptureFixture[str]) -> None:
    assert _tool().main(["--check"]) == 0
    assert capsys.readouterr().err == ""
