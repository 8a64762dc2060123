"""The import-lint test (docs/architecture.md, "The rules"), as a ratchet over a committed allow-list.

src/odradek may break an import rule only where known_violations.toml says so, with a reason; and an
allow-listed violation that no longer exists fails too, so the list shrinks as issue #28 lands. The
rest of the file tests the checker itself on small synthetic packages.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from tools.architecture import known_violations
from tools.architecture.layers import (
    APPLICATION,
    CYCLE,
    HANDLER,
    LEAF,
    SIBLING,
    UNPLACED,
    UPWARD,
    Violation,
    cycles,
    violations,
)
from tools.architecture.modules import LOCAL, TYPE_CHECKING, read_package

from tests.unit.architecture.conftest import PackageMaker

REPO = Path(__file__).resolve().parents[3]
PACKAGE = REPO / "src" / "odradek"
KNOWN = Path(__file__).with_name("known_violations.toml")


@pytest.fixture(scope="module")
def found() -> list[Violation]:
    return violations(read_package(PACKAGE))


def test_src_odradek_breaks_no_import_rule_beyond_the_allow_list(found: list[Violation]) -> None:
    new = known_violations.compare(found, known_violations.load(KNOWN)).new
    assert not new, "new import-rule violations (fix them; see docs/architecture.md):\n" + "\n".join(
        f"  [{v.rule}] {v.key} at {'; '.join(v.sites)}" for v in new
    )


def test_every_allow_listed_violation_still_exists(found: list[Violation]) -> None:
    stale = known_violations.compare(found, known_violations.load(KNOWN)).stale
    assert not stale, f"fixed: delete these lines from {KNOWN.name}:\n" + "\n".join(
        f"  [{rule}] {key}" for rule, key in stale
    )


def test_a_bad_import_added_to_a_copy_of_src_odradek_fails_the_ratchet(tmp_path: Path) -> None:
    copy = tmp_path / "odradek"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    with (copy / "storage" / "log.py").open("a") as log_module:
        log_module.write("\nfrom odradek.server.broker import Broker  # noqa\n")
    comparison = known_violations.compare(violations(read_package(copy)), known_violations.load(KNOWN))
    assert [(v.rule, v.key) for v in comparison.new if v.rule == UPWARD] == [
        (UPWARD, "odradek.storage.log -> odradek.server.broker")
    ]
    # storage/log.py now reaches everything above it, and it is imported by much below: a new cycle
    assert any(v.rule == CYCLE and "odradek.storage.log" in v.key for v in comparison.new)


# ----- the checker on synthetic packages ---------------------------------------------------------------


def _rules(package: Path) -> set[tuple[str, str]]:
    return {(v.rule, v.key) for v in violations(read_package(package))}


def test_an_import_up_the_chain_is_a_violation_and_one_down_is_not(make_package: PackageMaker) -> None:
    package = make_package(
        {
            "storage/log.py": "from odradek.handlers.produce import handle\n",
            "handlers/produce.py": "from odradek.storage import segment\ndef handle(): ...\n",
            "storage/segment.py": "",
        }
    )
    assert _rules(package) == {(UPWARD, "odradek.storage.log -> odradek.handlers.produce")}


def test_coordinator_and_cluster_may_not_import_each_other(make_package: PackageMaker) -> None:
    package = make_package(
        {
            "coordinator/runtime.py": "import odradek.cluster.metadata\n",
            "cluster/metadata.py": "",
            "cluster/controller/events.py": "from odradek.coordinator import settings\n",
            "coordinator/settings.py": "",
        }
    )
    assert _rules(package) == {
        (SIBLING, "odradek.coordinator.runtime -> odradek.cluster.metadata"),
        (SIBLING, "odradek.cluster.controller.events -> odradek.coordinator.settings"),
    }


def test_a_handler_may_import_handlers_common_but_no_other_handler(make_package: PackageMaker) -> None:
    package = make_package(
        {
            "handlers/produce.py": (
                "from odradek.handlers._common.context import RequestContext\n"
                "from odradek.handlers.fetch import handle\n"
            ),
            "handlers/fetch.py": "def handle(): ...\n",
            "handlers/_common/context.py": "class RequestContext: ...\n",
        }
    )
    assert _rules(package) == {(HANDLER, "odradek.handlers.produce -> odradek.handlers.fetch")}


def test_handlers_common_imports_no_api_module(make_package: PackageMaker) -> None:
    # _common is the layer under the API modules: an import of one from it points up
    package = make_package(
        {
            "handlers/_common/services.py": (
                "from odradek.handlers._common.context import RequestContext\n"
                "from odradek.handlers.fetch_sessions import FetchSessionCache\n"
            ),
            "handlers/_common/context.py": "class RequestContext: ...\n",
            "handlers/fetch_sessions.py": "class FetchSessionCache: ...\n",
        }
    )
    assert _rules(package) == {
        (HANDLER, "odradek.handlers._common.services -> odradek.handlers.fetch_sessions")
    }


def test_the_handlers_package_importing_every_handler_to_register_it_is_allowed(
    make_package: PackageMaker,
) -> None:
    package = make_package(
        {
            "handlers/__init__.py": (
                "import importlib, pkgutil\n"
                "for m in pkgutil.iter_modules(__path__):\n"
                "    importlib.import_module(f'{__name__}.{m.name}')\n"
            ),
            "handlers/produce.py": "",
            "handlers/fetch.py": "",
            "server/broker.py": "import odradek.handlers\n",
        }
    )
    source = read_package(package)
    assert {e.imported for e in source.modules["odradek.handlers"].imports} == {
        "odradek.handlers.produce",
        "odradek.handlers.fetch",
    }
    assert _rules(package) == set()


def test_a_cycle_hidden_behind_type_checking_is_found(make_package: PackageMaker) -> None:
    package = make_package(
        {
            "storage/log.py": "from odradek.storage.fetch import read\n",
            "storage/fetch.py": (
                "from typing import TYPE_CHECKING\n"
                "if TYPE_CHECKING:\n"
                "    from odradek.storage.log import Log\n"
                "def read(): ...\n"
            ),
        }
    )
    (cycle,) = cycles(read_package(package))
    assert cycle.modules == ("odradek.storage.fetch", "odradek.storage.log")
    assert cycle.hidden
    assert cycle.example == ("odradek.storage.fetch", "odradek.storage.log", "odradek.storage.fetch")
    assert [e.split()[-1] for e in cycle.hidden_edges] == [f"({TYPE_CHECKING})"]
    assert _rules(package) == {(CYCLE, "odradek.storage.fetch | odradek.storage.log")}


def test_a_cycle_through_a_function_local_import_is_found(make_package: PackageMaker) -> None:
    package = make_package(
        {
            "protocol/schema.py": "def codec():\n    from odradek.protocol import codec\n    return codec\n",
            "protocol/codec.py": "from .schema import codec as _\n",  # relative, resolved as Python does
        }
    )
    (cycle,) = cycles(read_package(package))
    assert cycle.modules == ("odradek.protocol.codec", "odradek.protocol.schema")
    assert cycle.hidden and cycle.hidden_edges[0].endswith(f"({LOCAL})")


def test_a_cycle_of_module_level_imports_is_not_called_hidden(make_package: PackageMaker) -> None:
    package = make_package(
        {"storage/a.py": "import odradek.storage.b\n", "storage/b.py": "import odradek.storage.a\n"}
    )
    (cycle,) = cycles(read_package(package))
    assert not cycle.hidden


def test_a_leaf_imports_only_leaves_and_protocol(make_package: PackageMaker) -> None:
    package = make_package(
        {
            "security/acl_store.py": (
                "from odradek.storage.files import atomic_write\nimport odradek.config.types\n"
            ),
            "storage/files.py": "def atomic_write(): ...\n",
            "config/types.py": "from odradek.protocol.error_codes import ErrorCode\n",
            "protocol/error_codes.py": "ErrorCode = int\n",
        }
    )
    assert _rules(package) == {(LEAF, "odradek.security.acl_store -> odradek.storage.files")}


def test_the_broker_never_imports_an_application(make_package: PackageMaker) -> None:
    package = make_package(
        {
            "server/console_process.py": "from odradek.console.users_file import load_users\n",
            "console/users_file.py": "from odradek.server import console_process\ndef load_users(): ...\n",
        }
    )
    assert (APPLICATION, "odradek.server.console_process -> odradek.console.users_file") in _rules(package)
    assert not any(key.startswith("odradek.console") for rule, key in _rules(package) if rule != CYCLE)


def test_a_package_not_placed_in_the_layers_is_a_violation(make_package: PackageMaker) -> None:
    package = make_package({"share/groups.py": "import odradek.storage.log\n", "storage/log.py": ""})
    assert _rules(package) == {(UNPLACED, "odradek.share.groups -> odradek.storage.log")}


def test_the_allow_list_reports_new_violations_and_entries_that_are_gone(tmp_path: Path) -> None:
    known = tmp_path / "known.toml"
    known.write_text(
        f'[{UPWARD}]\n"odradek.a.x -> odradek.b.y" = "issue #28: moves"\n'
        f'"odradek.gone -> odradek.b.y" = "issue #28: fixed already"\n'
    )
    found = [
        Violation(UPWARD, "odradek.a.x -> odradek.b.y", ()),
        Violation(HANDLER, "odradek.handlers.a -> odradek.handlers.b", ()),
    ]
    comparison = known_violations.compare(found, known_violations.load(known))
    assert [v.key for v in comparison.new] == ["odradek.handlers.a -> odradek.handlers.b"]
    assert comparison.stale == [(UPWARD, "odradek.gone -> odradek.b.y")]


@pytest.mark.parametrize(
    "text",
    [
        '[no-such-rule]\n"a -> b" = "issue #28"\n',
        f'[{UPWARD}]\n"a -> b" = ""\n',
        f'[{UPWARD}]\n"a -> b" = 3\n',
    ],
)
def test_an_allow_list_entry_without_a_rule_or_a_reason_is_refused(tmp_path: Path, text: str) -> None:
    known = tmp_path / "known.toml"
    known.write_text(text)
    with pytest.raises(known_violations.KnownViolationsError):
        known_violations.load(known)
