"""PNG plots of the results (matplotlib, headless): medians as bars, the range of the runs as whiskers."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from broker_bench.report import Results, Stat

COLOURS = {"odradek": "#3b6ea8", "tansu": "#d9822b"}
LABELS = {"odradek": "odradek", "tansu": "Tansu"}


def draw(results: Results, out_dir: Path) -> list[Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    images = []
    for name, scenario, key, title, unit in (
        ("produce-throughput", "produce", "produce_msgs_per_s", "Produce throughput", "messages/s"),
        (
            "consume-throughput",
            "produce",
            "consume_msgs_per_s",
            "Consume throughput (read back)",
            "messages/s",
        ),
        ("produce-latency-p99", "produce", "produce_latency_p99_ms", "Produce delivery latency p99", "ms"),
        ("produce-cpu-per-mb", "produce", "produce_cpu_s_per_mb", "Broker CPU per MB produced", "CPU s / MB"),
        ("consume-cpu-per-mb", "produce", "fetch_cpu_s_per_mb", "Broker CPU per MB fetched", "CPU s / MB"),
    ):
        path = _bars(results, scenario, key, title, unit, out_dir / f"{name}.png")
        if path:
            images.append(path)
    path = _end_to_end(results, out_dir / "e2e-latency.png")
    if path:
        images.append(path)
    path = _ratios(results, out_dir / "throughput-ratios.png")
    if path:
        images.append(path)
    return images


def _ratios(results: Results, path: Path) -> Path | None:
    """odradek / Tansu of the median throughput, per case: produce and consume side by side."""
    rows = [(s, c) for s, c in results.order if s in ("produce", "many_partitions", "idle_connections")]
    if not rows:
        return None
    figure, axes = plt.subplots(figsize=(9, max(3.0, 0.42 * len(rows) + 1.2)))
    bar = 0.38
    for offset, (key, colour, label) in enumerate(
        (("produce_msgs_per_s", "#5a8f4e", "produce"), ("consume_msgs_per_s", "#8a5a9e", "consume"))
    ):
        values = []
        for scenario, case in rows:
            ours = results.cell(scenario, case, "odradek").stat(key)
            peer = results.cell(scenario, case, "tansu").stat(key)
            values.append(ours.median / peer.median if ours and peer and peer.median else 0.0)
        positions = [i + (offset - 0.5) * bar for i in range(len(rows))]
        axes.barh(positions, values, height=bar, color=colour, label=label)
    axes.axvline(1.0, color="black", linewidth=0.8)
    axes.set_yticks(range(len(rows)))
    axes.set_yticklabels([case for _, case in rows], fontsize=8)
    axes.invert_yaxis()
    axes.set_xlabel("odradek / Tansu, median messages/s (right of 1: odradek ahead)")
    axes.set_title("Throughput ratio")
    axes.grid(axis="x", alpha=0.3)
    axes.legend(loc="lower right", fontsize=8)
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)
    return path


def _bars(results: Results, scenario: str, key: str, title: str, unit: str, path: Path) -> Path | None:
    cases = results.cases(scenario)
    stats = {b: [results.cell(scenario, c, b).stat(key) for c in cases] for b in COLOURS}
    if not cases or all(s is None for values in stats.values() for s in values):
        return None
    height = max(3.0, 0.42 * len(cases) + 1.2)
    figure, axes = plt.subplots(figsize=(9, height))
    bar = 0.38
    for offset, broker in enumerate(COLOURS):
        positions = [i + (offset - 0.5) * bar for i in range(len(cases))]
        medians, errors = _with_errors(stats[broker])
        axes.barh(
            positions,
            medians,
            height=bar,
            xerr=errors,
            color=COLOURS[broker],
            label=LABELS[broker],
            error_kw={"elinewidth": 0.8, "capsize": 2},
        )
    axes.set_yticks(range(len(cases)))
    axes.set_yticklabels(cases, fontsize=8)
    axes.invert_yaxis()
    axes.set_xlabel(f"{unit} (median; whiskers: lowest and highest run)")
    axes.set_title(title)
    axes.grid(axis="x", which="both", alpha=0.3)
    axes.legend(loc="lower right", fontsize=8)
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)
    return path


def _end_to_end(results: Results, path: Path) -> Path | None:
    cases = results.cases("e2e")
    if not cases:
        return None
    figure, axes = plt.subplots(figsize=(8, 3.6))
    groups = [(case, key) for case in cases for key in ("e2e_p50_ms", "e2e_p99_ms", "e2e_max_ms")]
    for offset, broker in enumerate(COLOURS):
        stats = [results.cell("e2e", case, broker).stat(key) for case, key in groups]
        shown = [(i, s) for i, s in enumerate(stats) if s is not None]
        if not shown:
            continue
        medians, errors = _with_errors([s for _, s in shown])
        positions = [i + (offset - 0.5) * 0.3 for i, _ in shown]
        axes.errorbar(
            positions,
            medians,
            yerr=errors,
            fmt="o",
            color=COLOURS[broker],
            label=LABELS[broker],
            elinewidth=0.8,
            capsize=3,
        )
    axes.set_xticks(range(len(groups)))
    axes.set_xticklabels(
        [f"{case.replace('fetch.wait.max.ms', 'wait')}\n{key.split('_')[1]}" for case, key in groups],
        fontsize=8,
    )
    axes.set_yscale("log")
    axes.set_ylabel("ms (log scale)")
    axes.set_title("End-to-end latency, one message at a time (median; whiskers: range of runs)", fontsize=10)
    axes.grid(axis="y", which="both", alpha=0.3)
    axes.legend(fontsize=8)
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)
    return path


def _with_errors(stats: list[Stat | None]) -> tuple[list[float], list[list[float]]]:
    medians = [s.median if s else 0.0 for s in stats]
    below = [s.median - s.low if s else 0.0 for s in stats]
    above = [s.high - s.median if s else 0.0 for s in stats]
    return medians, [below, above]
