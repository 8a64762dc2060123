"""results.jsonl -> medians with their spread, odradek/Tansu ratios, Markdown tables, plots, docs section.

Every figure shown is the median of the successful runs of one broker on one case, with the lowest
and highest run in brackets. A ratio is odradek's median divided by Tansu's, whatever the unit: above
1 means odradek moved more messages (throughput) or spent more (latency, CPU, memory).
"""

from __future__ import annotations

import json
import math
import statistics
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / "docs" / "bench" / "tansu.md"
DOCS_BENCH = REPO / "docs" / "bench"
START = "<!-- broker-bench:start -->"
END = "<!-- broker-bench:end -->"


@dataclass
class Stat:
    median: float
    low: float
    high: float
    runs: int


@dataclass
class Cell:
    """One broker on one case: every run's record and the statistics of each figure."""

    records: list[dict[str, Any]] = field(default_factory=list)

    @property
    def ok(self) -> list[dict[str, Any]]:
        return [r for r in self.records if r.get("ok")]

    def stat(self, name: str) -> Stat | None:
        values = [_value(r, name) for r in self.ok]
        numbers = [v for v in values if isinstance(v, int | float) and not math.isnan(v)]
        if not numbers:
            return None
        return Stat(statistics.median(numbers), min(numbers), max(numbers), len(numbers))

    def problems(self) -> list[str]:
        return sorted(
            {r.get("error") or r.get("skipped") or "" for r in self.records if not r.get("ok")} - {""}
        )

    def skipped_note(self) -> str | None:
        notes = {r.get("skipped") for r in self.records if r.get("skipped")}
        return "; ".join(sorted(n for n in notes if n)) or None


def _value(record: dict[str, Any], name: str) -> Any:
    if name in record.get("figures", {}):
        return record["figures"][name]
    return record.get(name)


@dataclass
class Results:
    meta: dict[str, Any]
    cells: dict[tuple[str, str], dict[str, Cell]]  # (scenario, case) -> broker -> cell
    order: list[tuple[str, str]]

    def cases(self, scenario: str) -> list[str]:
        return [case for s, case in self.order if s == scenario]

    def cell(self, scenario: str, case: str, broker: str) -> Cell:
        return self.cells.get((scenario, case), {}).get(broker, Cell())


def load(path: Path) -> Results:
    meta: dict[str, Any] = {}
    cells: dict[tuple[str, str], dict[str, Cell]] = defaultdict(lambda: defaultdict(Cell))
    order: list[tuple[str, str]] = []
    for line in path.read_text().splitlines():
        if not line.strip():
            continue
        record = json.loads(line)
        if record.get("kind") == "meta":
            meta = record
            continue
        key = (record["scenario"], record["case"])
        if key not in order:
            order.append(key)
        cells[key][record["broker"]].records.append(record)
    return Results(meta, cells, order)


# ----- formatting --------------------------------------------------------------------------------------


def number(value: float | None, digits: int = 3) -> str:
    """Three significant figures, with k/M for large counts."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    magnitude = abs(value)
    if value == int(value) and magnitude < 1e4:
        return str(int(value))  # counts
    for limit, suffix in ((1e6, "M"), (1e3, "k")):
        if magnitude >= limit * 0.9995:
            return _significant(value / limit, digits) + suffix
    return _significant(value, digits)


def _significant(value: float, digits: int) -> str:
    if value == 0:
        return "0"
    decimals = max(0, digits - 1 - math.floor(math.log10(abs(value))))
    return f"{value:,.{decimals}f}"


def spread(stat: Stat | None, scale: float = 1.0) -> str:
    if stat is None:
        return "n/a"
    if stat.runs == 1:
        return number(stat.median * scale)
    return f"{number(stat.median * scale)} ({number(stat.low * scale)}..{number(stat.high * scale)})"


def ratio(ours: Stat | None, peer: Stat | None) -> str:
    if ours is None or peer is None or not peer.median:
        return "n/a"
    value = ours.median / peer.median
    return f"{value:.2f}x" if 0.1 <= value < 100 else f"{value:.3g}x"


def table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(" --- " for _ in header) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


# ----- outputs -----------------------------------------------------------------------------------------


def build(out_dir: Path, log: Callable[[str], None]) -> str:
    """table.md and the plots next to results.jsonl; returns the Markdown."""
    path = out_dir / "results.jsonl"
    if not path.exists():
        log(f"no {path}: nothing to report")
        return ""
    results = load(path)
    from broker_bench import plots, sections

    images = plots.draw(results, out_dir)
    markdown = sections.full_report(results, [image.name for image in images])  # beside table.md
    (out_dir / "table.md").write_text(markdown + "\n")
    log(f"table in {out_dir / 'table.md'}, plots: {', '.join(i.name for i in images)}")
    return markdown


def update_docs(log: Callable[[str], None]) -> None:
    """Replace (or add) only the text between our markers in docs/bench/tansu.md."""
    from broker_bench import sections

    parts = []
    full = DOCS_BENCH / "results.jsonl"
    if full.exists():
        results = load(full)
        images = sorted(DOCS_BENCH.glob("*.png"))
        # the plots lie beside tansu.md
        parts.append(sections.full_report(results, [image.name for image in images]))
    profile = DOCS_BENCH / "profile.json"
    if profile.exists():
        parts.append(sections.profile_section(json.loads(profile.read_text())))
    quick = DOCS_BENCH / "quick" / "results.jsonl"
    if quick.exists():
        parts.append(sections.quick_section(load(quick)))
    body = "\n\n".join(parts) or "No broker benchmark has been run yet: `make bench`."
    section = f"{START}\n## Broker vs Tansu\n\n{sections.introduction()}\n\n{body}\n{END}"
    text = DOCS.read_text() if DOCS.exists() else "# Benchmarks\n"
    if START in text and END in text:
        before, rest = text.split(START, 1)
        after = rest.split(END, 1)[1]
        text = before + section + after
    else:
        text = text.rstrip("\n") + "\n\n" + section + "\n"
    DOCS.write_text(text)
    log(f"rewrote the Broker vs Tansu section of {DOCS}")
