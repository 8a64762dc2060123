"""docs/compatibility.md is what tools/write_compatibility.py writes from the current definitions."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from odradek.protocol.messages import REQUESTS

REPO_ROOT = Path(__file__).resolve().parents[3]


def _render() -> str:
    spec = importlib.util.spec_from_file_location(
        "write_compatibility", REPO_ROOT / "tools" / "write_compatibility.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    text: str = module.render()
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
