"""Runnable pipelines on odradek. `odradek pipeline` runs the page-view analytics demonstration:
a generator produces page views into a topic, a Structured Streaming job reads them through the
`odradek` Spark source, aggregates per minute with a watermark, and writes the results to an output
topic (the `odradek` sink) and to Parquet. See docs/pipeline.md."""

from odradek.pipelines.checkpoint import CheckpointMismatch
from odradek.pipelines.errors import PipelineError
from odradek.pipelines.events import PageView, page_views
from odradek.pipelines.job import JobSettings
from odradek.pipelines.local_broker import local_broker
from odradek.pipelines.run import PipelineResult, PipelineRun, run_pipeline

__all__ = [
    "CheckpointMismatch",
    "JobSettings",
    "PageView",
    "PipelineError",
    "PipelineResult",
    "PipelineRun",
    "local_broker",
    "page_views",
    "run_pipeline",
]
