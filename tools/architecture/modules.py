"""A package's modules and the imports between them, read with `ast` (nothing is imported).

Every import statement of a module is an edge, of one of three kinds: `top` (run when the module is
imported), `type_checking` (under `if TYPE_CHECKING:`, seen only by the type checker) and `local`
(inside a function or method, run when it is called). The last two are how a cycle hides from Python's
import machinery, so cycles are looked for over all three.

A package whose `__init__.py` imports every module in it (`pkgutil.iter_modules(__path__)`, as
handlers/ does to register its handlers) has an edge to each of them.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

TOP = "top"
TYPE_CHECKING = "type_checking"
LOCAL = "local"


@dataclass(frozen=True, slots=True)
class Import:
    """One import statement's edge from a module to another module of the package."""

    importer: str
    imported: str
    line: int
    kind: str


@dataclass(slots=True)
class Module:
    name: str
    path: Path
    #: The path relative to the package's parent directory (`odradek/handlers/produce.py`).
    relative: str
    tree: ast.Module
    text_lines: list[str]
    imports: list[Import] = field(default_factory=list)

    @property
    def lines(self) -> int:
        return len(self.text_lines)

    @property
    def package(self) -> str:
        """Its top-level package below the root (`handlers`), or the module's own name at the root
        (`logs`), or `` for the root package itself."""
        parts = self.name.split(".")
        return parts[1] if len(parts) > 1 else ""


@dataclass(slots=True)
class Source:
    """Every module of one package (`odradek`), by dotted name."""

    root: str
    modules: dict[str, Module]

    def edges(self) -> Iterator[Import]:
        for module in self.modules.values():
            yield from module.imports


def read_package(package_dir: Path) -> Source:
    """Read every `.py` file under `package_dir` (a directory named after its package)."""
    root = package_dir.name
    modules: dict[str, Module] = {}
    for path in sorted(package_dir.rglob("*.py")):
        relative = path.relative_to(package_dir.parent)
        parts = list(relative.with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        text = path.read_text(encoding="utf-8")
        name = ".".join(parts)
        tree = ast.parse(text, filename=str(path))
        modules[name] = Module(name, path, relative.as_posix(), tree, text.splitlines())
    for module in modules.values():
        module.imports = list(dict.fromkeys(_imports(module, modules, root)))  # `from a import b, c`: once
    return Source(root, modules)


def _imports(module: Module, modules: dict[str, Module], root: str) -> Iterator[Import]:
    for node, kind in _import_nodes(module.tree):
        for target in _targets(node, module, modules):
            if target != module.name and (target == root or target.startswith(root + ".")):
                yield Import(module.name, target, node.lineno, kind)
    if _imports_every_submodule(module):
        prefix = module.name + "."
        for name in modules:
            if name.startswith(prefix) and "." not in name[len(prefix) :]:
                yield Import(module.name, name, 1, TOP)


def _import_nodes(tree: ast.Module) -> Iterator[tuple[ast.Import | ast.ImportFrom, str]]:
    """Every import statement with its kind: walks the tree, remembering whether it is inside a
    function or an `if TYPE_CHECKING:` block."""

    def walk(node: ast.AST, kind: str) -> Iterator[tuple[ast.Import | ast.ImportFrom, str]]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.Import | ast.ImportFrom):
                yield child, kind
            elif isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
                yield from walk(child, LOCAL if kind == TOP else kind)
            elif isinstance(child, ast.If) and _is_type_checking(child.test):
                for statement in child.body:
                    yield from walk_statement(statement, TYPE_CHECKING if kind == TOP else kind)
                for statement in child.orelse:
                    yield from walk_statement(statement, kind)
            else:
                yield from walk(child, kind)

    def walk_statement(node: ast.stmt, kind: str) -> Iterator[tuple[ast.Import | ast.ImportFrom, str]]:
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node, kind
        else:
            yield from walk(node, kind)

    yield from walk(tree, TOP)


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _targets(node: ast.Import | ast.ImportFrom, module: Module, modules: dict[str, Module]) -> list[str]:
    """The modules of the package an import statement loads: `from a.b import c` is module `a.b.c`
    when that is a module, else `a.b` (c is a name in it)."""
    if isinstance(node, ast.Import):
        return [_known(alias.name, modules) for alias in node.names]
    base = node.module or ""
    if node.level:  # relative: resolved against the importer's package
        package = module.name.split(".")
        if module.path.name != "__init__.py":
            package = package[:-1]
        package = package[: len(package) - (node.level - 1)]
        base = ".".join([*package, *([base] if base else [])])
    targets = []
    for alias in node.names:
        submodule = f"{base}.{alias.name}"
        targets.append(submodule if submodule in modules else _known(base, modules))
    return targets


def _known(name: str, modules: dict[str, Module]) -> str:
    """The longest prefix of a dotted name that is a module of the package (the name itself if none)."""
    parts = name.split(".")
    while parts:
        candidate = ".".join(parts)
        if candidate in modules:
            return candidate
        parts.pop()
    return name


def _imports_every_submodule(module: Module) -> bool:
    if module.path.name != "__init__.py":
        return False
    for node in ast.walk(module.tree):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "iter_modules"
            and any(isinstance(a, ast.Name) and a.id == "__path__" for a in node.args)
        ):
            return True
    return False
