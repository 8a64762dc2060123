"""`odradek pipeline`: the page-view streaming demonstration (generator -> Spark job -> topic and Parquet)."""

from __future__ import annotations

import argparse
import contextlib
import sys
from pathlib import Path


def add_parser(subcommands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subcommands.add_parser(
        "pipeline",
        help="run the page-view streaming pipeline on Spark",
        description="Produce page views, aggregate them with Spark Structured Streaming, write the results "
        "to a topic and to Parquet. Without --bootstrap a temporary local broker is started.",
    )
    parser.add_argument("--bootstrap", metavar="HOST:PORT", help="a running broker (default: start one)")
    parser.add_argument("--events", type=int, default=20_000, help="page views to generate (default 20000)")
    parser.add_argument("--rate", type=float, default=1_000.0, help="page views per second, 0 for no limit")
    parser.add_argument("--seed", type=int, default=7, help="generator seed (default 7)")
    parser.add_argument("--input-topic", default="page-views")
    parser.add_argument("--output-topic", default="page-stats")
    parser.add_argument(
        "--output-dir", default="pipeline-output", help="Parquet output (default ./pipeline-output)"
    )
    parser.add_argument("--checkpoint-dir", help="default: <output-dir>/_checkpoints")
    parser.add_argument(
        "--trigger",
        default="2 seconds",
        help="a processing-time interval ('2 seconds', the default: runs while the generator produces) "
        "or 'available-now' (generate first, then process everything and stop)",
    )
    parser.add_argument("--max-offsets-per-trigger", type=int, default=5000)
    parser.add_argument("--partitions", type=int, default=3, help="partitions of the started broker's topics")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    try:
        from odradek.pipelines import JobSettings, PipelineRun, local_broker, run_pipeline
    except ImportError as error:
        print(
            f"odradek pipeline needs the spark extra (pip install 'odradek[spark]'): {error}", file=sys.stderr
        )
        return 2
    output_dir = Path(args.output_dir).resolve()
    checkpoint_dir = (
        Path(args.checkpoint_dir).resolve() if args.checkpoint_dir else output_dir / "_checkpoints"
    )
    with contextlib.ExitStack() as stack:
        bootstrap = args.bootstrap or stack.enter_context(local_broker(args.partitions))
        settings = JobSettings(
            bootstrap=bootstrap,
            input_topic=args.input_topic,
            output_topic=args.output_topic,
            output_dir=str(output_dir),
            checkpoint_dir=str(checkpoint_dir),
            max_offsets_per_trigger=args.max_offsets_per_trigger or None,
            trigger=args.trigger,
        )
        run_pipeline(
            PipelineRun(
                settings,
                events=args.events,
                rate=args.rate or None,
                seed=args.seed,
                partitions=args.partitions,
            )
        )
    return 0
