"""docs/benchmarks.md is a summary whose detail lives in docs/bench/: every relative link of both resolves."""

from __future__ import annotations

import re
from pathlib import Path

from tests.support.broker_process import REPO

LINK = re.compile(r"\]\(([^)\s#]+)(?:#[^)]*)?\)")


def test_every_relative_link_of_the_benchmark_docs_names_a_file_that_exists() -> None:
    pages = [REPO / "docs" / "benchmarks.md", *sorted((REPO / "docs" / "bench").glob("*.md"))]
    broken = [
        f"{page.relative_to(REPO)} -> {target}"
        for page in pages
        for target in LINK.findall(page.read_text())
        if "://" not in target and not (page.parent / target).exists()
    ]
    assert broken == []


def test_the_summary_links_to_every_detail_page() -> None:
    summary = (REPO / "docs" / "benchmarks.md").read_text()
    linked = {Path(target).name for target in LINK.findall(summary)}
    pages = {page.name for page in (REPO / "docs" / "bench").glob("*.md")} - {"table.md"}
    assert pages - linked == set()
