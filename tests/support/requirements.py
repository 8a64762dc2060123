"""What a test needs from outside the repository: skipped where it is missing, a failure under CI.

Some tests need an input the repository does not hold: kcat, Kafka's message files in
../shared/kafka-specs, an optional package, an API the broker must serve. On a developer's machine a
missing input skips the test with the reason. Under CI (the environment variable `CI` set, as `.ci/run`
and every CI service set it) everything is installed by `make test`, so a missing input is a broken
install or a regression, and a skip would hide it: the test fails instead, with the same reason.
"""

from __future__ import annotations

import importlib
import os
import shutil
from types import ModuleType
from typing import NoReturn

import pytest

#: Values of CI that mean "not under CI" (CI=false is how some services and people turn it off).
_NOT_CI = frozenset({"", "0", "false", "no", "off"})


def in_ci() -> bool:
    """Whether the tests run under CI, where every input they need must be present."""
    return os.environ.get("CI", "").strip().lower() not in _NOT_CI


def missing(reason: str, *, allow_module_level: bool = False) -> NoReturn:
    """Skip the calling test (or module) for `reason`; under CI, fail it instead."""
    if in_ci():
        pytest.fail(f"{reason} (under CI a missing test input is a failure, not a skip)", pytrace=False)
    pytest.skip(reason, allow_module_level=allow_module_level)


def require(present: bool, reason: str, *, allow_module_level: bool = False) -> None:
    """`missing(reason)` unless `present`."""
    if not present:
        missing(reason, allow_module_level=allow_module_level)


def require_executable(name: str, *, allow_module_level: bool = False) -> str:
    """The path of the program `name` on PATH (kcat is installed by scripts/install-system-deps.sh)."""
    path = shutil.which(name)
    if path is None:
        missing(
            f"{name} is not installed (scripts/install-system-deps.sh installs it)",
            allow_module_level=allow_module_level,
        )
    return path


def require_module(name: str, *, allow_module_level: bool = False) -> ModuleType:
    """The module `name`, imported (as pytest.importorskip, but failing under CI)."""
    try:
        return importlib.import_module(name)
    except ImportError as error:
        missing(
            f"cannot import {name} ({error}); `make test` installs it with the dev extra",
            allow_module_level=allow_module_level,
        )
