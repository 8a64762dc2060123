"""docs/architecture.md, the source of truth for the layers, says what the import-lint test checks."""

from __future__ import annotations

import re
from pathlib import Path

from tools.architecture.layers import APPLICATIONS, CHAIN, LEAVES

REPO = Path(__file__).resolve().parents[3]
PACKAGE = REPO / "src" / "odradek"


def test_every_package_is_placed_in_the_docs_as_the_checker_places_it() -> None:
    """docs/architecture.md's package table and the checker's layers name the same packages."""
    rows = re.findall(
        r"^\| `(\w+)(?:/|\.py)` \| (\w+) \|", (REPO / "docs" / "architecture.md").read_text(), re.M
    )
    documented = dict(rows)
    present = {p.name for p in PACKAGE.iterdir() if p.is_dir() and p.name != "__pycache__"}
    present |= {p.stem for p in PACKAGE.glob("*.py") if p.stem != "__init__"}
    assert set(documented) >= present, present - set(documented)
    for package, layer in documented.items():
        if package in CHAIN:
            assert layer == "chain", package
        elif package in LEAVES:
            assert layer == "leaf", package
        else:
            assert package in APPLICATIONS and layer == "application", package
