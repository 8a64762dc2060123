"""A test whose input is missing skips on a developer's machine and fails under CI (requirements.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.broker_process import REPO
from tests.support.requirements import in_ci, missing, require_executable, require_module

KCAT_TESTS = "tests/compat/test_kcat_interop.py"


@pytest.mark.parametrize("value", ["true", "1", "yes", "True"])
def test_ci_set_turns_a_missing_input_into_a_failure(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv("CI", value)
    assert in_ci()
    with pytest.raises(pytest.fail.Exception, match=r"no-such-input.*under CI"):
        missing("no-such-input")


@pytest.mark.parametrize("value", [None, "", "false", "0"])
def test_outside_ci_a_missing_input_skips(monkeypatch: pytest.MonkeyPatch, value: str | None) -> None:
    if value is None:
        monkeypatch.delenv("CI", raising=False)
    else:
        monkeypatch.setenv("CI", value)
    assert not in_ci()
    with pytest.raises(pytest.skip.Exception, match="no-such-input"):
        missing("no-such-input")


def test_missing_program_and_module_fail_under_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="odradek-no-such-program is not installed"):
        require_executable("odradek-no-such-program")
    with pytest.raises(pytest.fail.Exception, match="cannot import odradek_no_such_module"):
        require_module("odradek_no_such_module")
    assert require_module("json").dumps([]) == "[]"


def test_kcat_tests_fail_under_ci_when_kcat_is_missing(tmp_path: Path) -> None:
    # PATH without kcat; pytest itself runs from this interpreter, found by its absolute path.
    outside_ci = _collect(KCAT_TESTS, tmp_path, CI="")
    assert outside_ci.returncode == pytest.ExitCode.NO_TESTS_COLLECTED, outside_ci.stdout
    assert "SKIPPED" in outside_ci.stdout and "kcat is not installed" in outside_ci.stdout
    under_ci = _collect(KCAT_TESTS, tmp_path, CI="true")
    assert under_ci.returncode == pytest.ExitCode.INTERRUPTED, under_ci.stdout  # a collection error
    assert "kcat is not installed" in under_ci.stdout and "under CI" in under_ci.stdout, under_ci.stdout


def _collect(test_file: str, empty_path: Path, **environment: str) -> subprocess.CompletedProcess[str]:
    """Collect `test_file` in a child pytest whose PATH holds no program at all."""
    env = {**os.environ, "PATH": str(empty_path), "PYTHONPATH": str(REPO), **environment}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-rs", "-p", "no:cacheprovider", test_file],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_ci_entry_point_runs_make_test_with_ci_set(tmp_path: Path) -> None:
    fake_make = tmp_path / "make"  # stands in for make: prints what .ci/run ran it with
    fake_make.write_text('#!/usr/bin/env bash\necho "CI=${CI:-} make $*"\n')
    fake_make.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    env["PATH"] = f"{tmp_path}{os.pathsep}{env.get('PATH', '')}"
    ran = subprocess.run(
        ["bash", str(REPO / ".ci" / "run")], env=env, capture_output=True, text=True, timeout=30, check=True
    )
    assert ran.stdout.strip() == "CI=true make test"
