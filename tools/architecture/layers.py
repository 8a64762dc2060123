"""The layers of src/odradek and the import rules between them (docs/architecture.md, "The rules").

Imports point down the chain `protocol <- storage <- partition <- {coordinator, cluster} <- handlers
<- server`. `config`, `security`, `tasks`, `telemetry` and `logs` are leaves: anyone may import them, and they
import only each other and `protocol`. `coordinator` and `cluster` never import each other. A handler
imports no other handler module, except the shared ones under `handlers/_common/` (and the package's
`__init__`, which imports every handler to register it); `handlers/_common/` imports no API module.
The applications (`cli`, `client`, `console`, `pipelines`, `spark`) sit above the broker and may
import it; the broker never imports them. A new top-level package must be placed here before
anything imports it. No import cycle between modules, whatever the kind of import (module level,
`if TYPE_CHECKING:` or in a function).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

from tools.architecture.modules import TOP, Import, Source

#: The chain, bottom first; a package may import those of lower rank.
CHAIN: dict[str, int] = {
    "protocol": 0,
    "storage": 1,
    "partition": 2,
    "coordinator": 3,
    "cluster": 3,
    "handlers": 4,
    "server": 5,
}
#: Imported by anyone; they import only each other and `protocol`. `` is the root package itself.
LEAVES = frozenset({"config", "security", "tasks", "telemetry", "logs", ""})
#: Above the broker: they may import it, it never imports them.
APPLICATIONS = frozenset({"cli", "client", "console", "pipelines", "spark"})
#: The packages that must never import each other (siblings in the chain).
SIBLINGS = frozenset({"coordinator", "cluster"})
HANDLERS = "handlers"
#: The handlers' shared layer (context, registry, authorization, services): API modules import it,
#: it imports none of them.
HANDLERS_COMMON = "handlers._common"

UPWARD = "upward-import"
SIBLING = "coordinator-cluster"
LEAF = "leaf-imports-broker"
APPLICATION = "broker-imports-application"
HANDLER = "handler-imports-handler"
UNPLACED = "unplaced-package"
CYCLE = "import-cycle"
RULES = (UPWARD, SIBLING, LEAF, APPLICATION, HANDLER, UNPLACED, CYCLE)


@dataclass(frozen=True, slots=True)
class Violation:
    rule: str
    #: `importer -> imported` for an edge, the cycle's modules joined by ` | ` for a cycle.
    key: str
    #: Where: `path:line (kind)` of each import statement behind it.
    sites: tuple[str, ...]


def package_of(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def edge_rule(importer: str, imported: str) -> str | None:
    """The rule an import from module `importer` of module `imported` breaks, None if it breaks none."""
    source, target = package_of(importer), package_of(imported)
    for package in (source, target):
        if package not in CHAIN and package not in LEAVES and package not in APPLICATIONS:
            return UNPLACED
    if source == target:
        if (
            source == HANDLERS
            and _handler_module(imported)
            and (_handler_module(importer) or _common(importer))
        ):
            # an API module imports only _common; _common, the layer under them, imports no API module
            return HANDLER
        return None
    if source in APPLICATIONS:
        return None
    if target in APPLICATIONS:
        return APPLICATION
    if source in LEAVES:
        return None if target in LEAVES or target == "protocol" else LEAF
    if target in LEAVES:
        return None
    if source in SIBLINGS and target in SIBLINGS:
        return SIBLING
    return UPWARD if CHAIN[target] > CHAIN[source] else None


def _common(module: str) -> bool:
    """Under handlers/_common/ (the handlers' shared layer)."""
    _, _, rest = module.partition(".")
    return (rest + ".").startswith(HANDLERS_COMMON + ".")


def _handler_module(module: str) -> bool:
    """A handler module: in handlers/, not the package itself, not under handlers/_common/."""
    _, _, rest = module.partition(".")
    return bool(rest) and rest != HANDLERS and not _common(module)


def edge_violations(source: Source) -> list[Violation]:
    by_edge: dict[tuple[str, str, str], list[Import]] = defaultdict(list)
    for edge in source.edges():
        rule = edge_rule(edge.importer, edge.imported)
        if rule is not None:
            by_edge[(rule, edge.importer, edge.imported)].append(edge)
    return [
        Violation(rule, f"{importer} -> {imported}", _sites(source, edges))
        for (rule, importer, imported), edges in sorted(by_edge.items())
    ]


def _sites(source: Source, edges: Iterable[Import]) -> tuple[str, ...]:
    """`path:line (kind)` of each import statement, once (`from a import b, c` is one statement)."""
    sites = (f"{source.modules[e.importer].relative}:{e.line} ({e.kind})" for e in edges)
    return tuple(dict.fromkeys(sites))


@dataclass(frozen=True, slots=True)
class Cycle:
    #: The modules of one strongly connected component of the import graph, sorted.
    modules: tuple[str, ...]
    #: One shortest way round, from the first module back to it.
    example: tuple[str, ...]
    #: The edges inside it that are `if TYPE_CHECKING:` or function-local imports.
    hidden_edges: tuple[str, ...]
    #: Whether the cycle exists only through such imports (no cycle among module-level ones).
    hidden: bool


def cycles(source: Source) -> list[Cycle]:
    """Every import cycle, one per strongly connected component of more than one module (or of a
    module importing itself)."""
    graph = _graph(source.edges())
    top_graph = _graph(e for e in source.edges() if e.kind == TOP)
    found = []
    for component in _components(graph):
        members = set(component)
        if len(members) == 1:
            (only,) = members
            if only not in graph.get(only, ()):
                continue
        inside_top = {m: top_graph.get(m, set()) & members for m in members}
        top_components = [c for c in _components(inside_top) if len(c) > 1]
        hidden = not (len(top_components) == 1 and set(top_components[0]) == members)
        hidden_edges = sorted(
            {
                f"{source.modules[e.importer].relative}:{e.line} {e.importer} -> {e.imported} ({e.kind})"
                for e in source.edges()
                if e.importer in members and e.imported in members and e.kind != TOP
            }
        )
        ordered = tuple(sorted(members))
        found.append(Cycle(ordered, _shortest_cycle(graph, ordered[0], members), tuple(hidden_edges), hidden))
    return sorted(found, key=lambda c: c.modules)


def violations(source: Source) -> list[Violation]:
    """Every violation of the import rules: edges, then cycles."""
    return edge_violations(source) + cycle_violations(cycles(source))


def cycle_violations(found: list[Cycle]) -> list[Violation]:
    return [Violation(CYCLE, " | ".join(c.modules), (" -> ".join(c.example),)) for c in found]


def _graph(edges: Iterable[Import]) -> dict[str, set[str]]:
    graph: dict[str, set[str]] = defaultdict(set)
    for edge in edges:
        graph[edge.importer].add(edge.imported)
    return graph


def _components(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's strongly connected components, iteratively (no recursion limit on long chains)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    result: list[list[str]] = []
    nodes = sorted(set(graph) | {t for targets in graph.values() for t in targets})
    counter = 0
    for start in nodes:
        if start in index:
            continue
        work: list[tuple[str, list[str]]] = [(start, sorted(graph.get(start, ())))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, pending = work[-1]
            if pending:
                nxt = pending.pop()
                if nxt not in index:
                    index[nxt] = low[nxt] = counter
                    counter += 1
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, sorted(graph.get(nxt, ()))))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                result.append(component)
    return result


def _shortest_cycle(graph: dict[str, set[str]], start: str, members: set[str]) -> tuple[str, ...]:
    """Breadth-first from `start` inside the component, back to `start`."""
    previous: dict[str, str] = {}
    frontier = [start]
    seen = {start}
    while frontier:
        following = []
        for node in frontier:
            for nxt in sorted(graph.get(node, set()) & members):
                if nxt == start:
                    path = [node]
                    while path[-1] != start:
                        path.append(previous[path[-1]])
                    return (start, *reversed(path[:-1]), start) if node != start else (start, start)
                if nxt not in seen:
                    seen.add(nxt)
                    previous[nxt] = node
                    following.append(nxt)
        frontier = following
    return (start,)
