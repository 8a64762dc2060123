"""bench/spark_bench.py rewrites only its own section of docs/benchmarks.md."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

BENCH = Path(__file__).resolve().parents[2] / "bench" / "spark_bench.py"


def bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("spark_bench", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("spark_bench", module)  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def test_writing_the_spark_section_keeps_the_next_sections_start_marker(tmp_path: Path) -> None:
    doc = tmp_path / "benchmarks.md"
    doc.write_text(
        "# Benchmarks\n\n## Spark\n\nold figures\n\n<!-- broker-bench:start -->\n## Broker\n\nkept\n"
        "<!-- broker-bench:end -->\n\n## Last\n\nkept too\n"
    )
    bench().write_section(doc, "## Spark\n\nnew figures\n")
    assert doc.read_text() == (
        "# Benchmarks\n\n## Spark\n\nnew figures\n\n<!-- broker-bench:start -->\n## Broker\n\nkept\n"
        "<!-- broker-bench:end -->\n\n## Last\n\nkept too\n"
    )


def test_a_missing_spark_section_is_appended(tmp_path: Path) -> None:
    doc = tmp_path / "benchmarks.md"
    doc.write_text("# Benchmarks\n\n## Other\n\nkept\n")
    bench().write_section(doc, "## Spark\n\nfigures\n")
    assert doc.read_text() == "# Benchmarks\n\n## Other\n\nkept\n\n## Spark\n\nfigures\n"
