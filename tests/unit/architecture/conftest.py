"""Synthetic packages for the checker's own tests: a directory named `odradek` with the modules given."""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

PackageMaker = Callable[[dict[str, str]], Path]


@pytest.fixture
def make_package(tmp_path: Path) -> PackageMaker:
    """Writes `{"storage/log.py": "source", ...}` under tmp_path/odradek (each directory gets an
    `__init__.py` unless given) and returns the package directory."""

    def make(files: dict[str, str]) -> Path:
        root = tmp_path / "odradek"
        root.mkdir()
        (root / "__init__.py").write_text("")
        for relative, text in files.items():
            path = root / relative
            path.parent.mkdir(parents=True, exist_ok=True)
            for directory in path.relative_to(root).parents:
                init = root / directory / "__init__.py"
                if not init.exists() and f"{directory.as_posix()}/__init__.py" not in files:
                    init.write_text("")
            path.write_text(textwrap.dedent(text))
        return root

    return make
