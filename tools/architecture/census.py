"""The census: every number issue #28 counts before and after, from one reading of the source."""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tools.architecture.layers import (
    APPLICATIONS,
    CHAIN,
    LEAVES,
    RULES,
    Cycle,
    Violation,
    cycle_violations,
    cycles,
    edge_violations,
    package_of,
)
from tools.architecture.modules import LOCAL, TOP, TYPE_CHECKING, Source, read_package
from tools.architecture.patterns import PATTERNS, Finding, find_all

#: A module longer than this is to be split by meaning (STYLE.md).
MAX_LINES = 400


@dataclass(slots=True)
class Census:
    source: Source
    violations: list[Violation]
    cycles: list[Cycle]
    findings: list[Finding]

    @property
    def broker_modules(self) -> list[str]:
        return sorted(m for m in self.source.modules if package_of(m) not in APPLICATIONS)

    def package_edges(self) -> dict[str, dict[str, int]]:
        """Import statements from each top-level package into each other one (all kinds)."""
        edges: dict[str, Counter[str]] = defaultdict(Counter)
        for edge in self.source.edges():
            source, target = package_of(edge.importer), package_of(edge.imported)
            if source != target:
                edges[_label(source)][_label(target)] += 1
        return {s: dict(sorted(t.items())) for s, t in sorted(edges.items())}

    def hidden_imports(self) -> dict[str, int]:
        kinds = Counter(e.kind for e in self.source.edges() if package_of(e.importer) not in APPLICATIONS)
        return {kind: kinds[kind] for kind in (TOP, TYPE_CHECKING, LOCAL)}

    def large_modules(self) -> list[tuple[str, int]]:
        return sorted(
            ((m.relative, m.lines) for m in self.source.modules.values() if m.lines > MAX_LINES),
            key=lambda item: (-item[1], item[0]),
        )

    def counts(self) -> dict[str, Any]:
        broker = set(self.broker_modules)
        rules = Counter(v.rule for v in self.violations)
        findings = Counter(f.pattern for f in self.findings)
        broker_cycles = [c for c in self.cycles if set(c.modules) <= broker]
        return {
            "modules": len(broker),
            "lines": sum(self.source.modules[m].lines for m in broker),
            "violations": {rule: rules[rule] for rule in RULES},
            "cycles": len(broker_cycles),
            "cycles_hidden": sum(c.hidden for c in broker_cycles),
            "cycles_in_applications": len(self.cycles) - len(broker_cycles),
            "imports_by_kind": self.hidden_imports(),
            **{pattern: findings[pattern] for pattern in PATTERNS},
            "modules_over_400_lines": sum(1 for path, _ in self.large_modules() if _in_broker(path)),
        }

    def to_json(self) -> dict[str, Any]:
        return {
            "about": "python tools/architecture_census.py --json; definitions in docs/architecture.md",
            "counts": self.counts(),
            "package_edges": self.package_edges(),
            "violations": {
                rule: {v.key: list(v.sites) for v in self.violations if v.rule == rule} for rule in RULES
            },
            "cycles": [
                {
                    "modules": list(c.modules),
                    "example": " -> ".join(c.example),
                    "hidden": c.hidden,
                    "hidden_edges": list(c.hidden_edges),
                }
                for c in self.cycles
            ],
            "findings": {
                pattern: [
                    f"{f.path}:{f.line} [{f.kind}] {f.text}" for f in self.findings if f.pattern == pattern
                ]
                for pattern in PATTERNS
            },
            "per_package": self.per_package(),
            "modules_over_400_lines": dict(self.large_modules()),
        }

    def per_package(self) -> dict[str, dict[str, int]]:
        table: dict[str, Counter[str]] = defaultdict(Counter)
        for module in self.source.modules.values():
            table[_label(module.package)]["modules"] += 1
            table[_label(module.package)]["lines"] += module.lines
        for finding in self.findings:
            table[_label(finding.path.split("/")[1].removesuffix(".py"))][finding.pattern] += 1
        for violation in self.violations:
            if violation.rule != "import-cycle":
                importer = violation.key.split(" -> ")[0]
                table[_label(package_of(importer))][violation.rule] += 1
        return {package: dict(sorted(counts.items())) for package, counts in sorted(table.items())}


def take(package_dir: Path) -> Census:
    source = read_package(package_dir)
    found_cycles = cycles(source)
    violations = edge_violations(source) + cycle_violations(found_cycles)
    broker = [m for m in source.modules.values() if package_of(m.name) not in APPLICATIONS]
    return Census(source, violations, found_cycles, find_all(source, broker))


def report(census: Census) -> str:
    """The census as text: the numbers first, then every finding with its line."""
    counts = census.counts()
    out = [
        f"src/odradek broker (without {', '.join(sorted(APPLICATIONS))}): "
        f"{counts['modules']} modules, {counts['lines']} lines",
        "",
        "Import rules broken (module edges; cycles as strongly connected components):",
    ]
    out += [f"  {rule:28} {n}" for rule, n in counts["violations"].items()]
    out += [
        f"  cycles in the broker: {counts['cycles']} ({counts['cycles_hidden']} only through "
        f"TYPE_CHECKING or function-local imports); in the applications: {counts['cycles_in_applications']}",
        "  imports of a broker module (statement x module imported) by kind: "
        + ", ".join(f"{k} {n}" for k, n in counts["imports_by_kind"].items()),
        "",
        "Shapes #28 removes:",
    ]
    out += [f"  {pattern:28} {counts[pattern]}" for pattern in PATTERNS]
    out += [f"  {'modules over 400 lines':28} {counts['modules_over_400_lines']}", ""]
    out.append("Imports between packages (importer: imported count):")
    for source, targets in census.package_edges().items():
        out.append(f"  {source:12} " + ", ".join(f"{t} {n}" for t, n in targets.items()))
    out += ["", "Layers: " + " <- ".join(_chain_text()) + f"; leaves: {', '.join(sorted(LEAVES - {''}))}"]
    for rule in RULES:
        listed = [v for v in census.violations if v.rule == rule]
        if listed:
            out += ["", f"== {rule} ({len(listed)})"]
            out += [f"  {v.key}    [{'; '.join(v.sites)}]" for v in listed]
    for c in census.cycles:
        out += [
            "",
            f"== cycle of {len(c.modules)} modules{' (hidden)' if c.hidden else ''}: "
            + " -> ".join(c.example),
        ]
        out += [f"  hidden edge {e}" for e in c.hidden_edges]
    for pattern in PATTERNS:
        listed_findings = [f for f in census.findings if f.pattern == pattern]
        out += ["", f"== {pattern} ({len(listed_findings)})"]
        out += [f"  {f.path}:{f.line} [{f.kind}] {f.text}" for f in listed_findings]
    out += ["", f"== modules over {MAX_LINES} lines"]
    out += [f"  {path} {lines}" for path, lines in census.large_modules()]
    return "\n".join(out) + "\n"


def _label(package: str) -> str:
    return package or "(root)"


def _in_broker(path: str) -> bool:
    parts = path.split("/")
    return (parts[1].removesuffix(".py") if len(parts) > 1 else "") not in APPLICATIONS


def _chain_text() -> list[str]:
    ranks: dict[int, list[str]] = defaultdict(list)
    for package, rank in CHAIN.items():
        ranks[rank].append(package)
    return [
        names[0] if len(names) == 1 else "{" + ", ".join(names) + "}" for _, names in sorted(ranks.items())
    ]
