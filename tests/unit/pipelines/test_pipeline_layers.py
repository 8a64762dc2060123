"""The pipeline is a client of the broker: it runs beside Spark, speaks the Kafka protocol and may run
against any Kafka cluster, so it must not import the broker's own layers. Its checkpoint marker was
written with the storage layer's atomic_write, tying the client package to the broker's internals."""

from __future__ import annotations

import ast
from pathlib import Path

import odradek.pipelines

BROKER_LAYERS = ("storage", "server", "cluster", "coordinator", "handlers", "security")


def _imported_modules(path: Path) -> set[str]:
    modules: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            modules.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module is not None and node.level == 0:
            modules.add(node.module)
    return modules


def test_the_pipeline_package_imports_none_of_the_broker_layers() -> None:
    package = Path(odradek.pipelines.__file__).parent
    found = {
        f"{path.name}: {module}"
        for path in sorted(package.glob("*.py"))
        for module in _imported_modules(path)
        if module.split(".")[:2] in [["odradek", layer] for layer in BROKER_LAYERS]
    }
    assert found == set()
