"""The Makefile's test targets run what they say (checked with `make -n`, which prints without running)."""

from __future__ import annotations

import subprocess

from tests.support.broker_process import REPO
from tests.support.requirements import require_executable


def test_make_unit_runs_the_unit_tests() -> None:
    assert _pytest_runs("unit") == [["tests/unit"]]


def test_make_regressions_runs_the_regression_tests() -> None:
    assert _pytest_runs("regressions") == [["tests/regressions"]]


def test_make_test_fast_lints_type_checks_and_runs_unit_and_regression_tests_only() -> None:
    commands = _planned("test-fast")
    assert any(c.endswith("ruff check src tests bench") for c in commands), commands
    assert any(c.endswith("ruff format --check src tests bench") for c in commands), commands
    assert any(c.endswith("mypy") for c in commands), commands
    assert _pytest_runs("test-fast") == [["tests/unit", "tests/regressions"]]


def test_make_test_still_runs_everything() -> None:
    assert _pytest_runs("test") == [[]]  # pytest's testpaths: every folder under tests/


def _pytest_runs(target: str) -> list[list[str]]:
    """The arguments of each pytest command `make target` would run."""
    runs = []
    for command in _planned(target):
        words = command.split()
        if "pytest" in words:
            runs.append([w for w in words[words.index("pytest") + 1 :] if not w.startswith("-")])
    return runs


def _planned(target: str) -> list[str]:
    make = require_executable("make")
    planned = subprocess.run(
        [make, "--no-print-directory", "-n", "-C", str(REPO), target],
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    return planned.stdout.splitlines()
