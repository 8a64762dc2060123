"""The page-view pipeline end to end, its aggregates checked against the same numbers in plain Python."""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from odradek.pipelines import JobSettings, PipelineRun, page_views, run_pipeline
from tests.spark.kafka_helpers import consume_all
from tests.support.broker_process import BrokerProcess

EVENTS = 3000
EVENTS_PER_SECOND = 15.0  # of event time: about 200 s, four one-minute windows


def test_pipeline_aggregates_match_plain_python(
    spark: Any, spark_broker: BrokerProcess, tmp_path: Path
) -> None:
    settings = JobSettings(
        bootstrap=spark_broker.bootstrap,
        input_topic="pipeline-views",
        output_topic="pipeline-stats",
        output_dir=str(tmp_path / "out"),
        checkpoint_dir=str(tmp_path / "checkpoints"),
        max_offsets_per_trigger=1000,
        trigger="1 second",
    )
    run = PipelineRun(settings, events=EVENTS, rate=None, seed=11, events_per_second=EVENTS_PER_SECOND)
    assert run_pipeline(run, spark, say=lambda _: None) == EVENTS

    views = list(page_views(EVENTS, seed=11, events_per_second=EVENTS_PER_SECOND))
    expected_views = Counter((v.ts // 60_000 * 60_000, v.page) for v in views)
    users: dict[int, set[str]] = defaultdict(set)
    for v in views:
        users[v.ts // 60_000 * 60_000].add(v.user_id)
    expected_users = {start: len(u) for start, u in users.items()}

    def millis(value: datetime) -> int:
        return (
            int(value.replace(tzinfo=UTC).timestamp() * 1000)
            if value.tzinfo is None
            else int(value.timestamp() * 1000)
        )

    page_rows = spark.read.parquet(settings.output_dir).where("metric = 'views_per_page'").collect()
    got_views = {(millis(r.window_start), r.page): r.value for r in page_rows}
    assert len(got_views) == len(page_rows), "a window was written twice"
    per_window_got = Counter[int]()
    per_window_expected = Counter[int]()
    for (start, _), n in got_views.items():
        per_window_got[start] += n
    for (start, _), n in expected_views.items():
        per_window_expected[start] += n
    assert sorted(per_window_got.items()) == sorted(per_window_expected.items())
    assert got_views == dict(expected_views)

    user_rows = spark.read.parquet(settings.output_dir).where("metric = 'active_users'").collect()
    assert {millis(r.window_start): r.value for r in user_rows} == expected_users
    assert len(user_rows) == len(expected_users)

    # The same rows went to the output topic through the sink.
    messages = [json.loads(m.value or b"") for m in consume_all(spark_broker.bootstrap, "pipeline-stats")]
    assert len(messages) == len(page_rows) + len(user_rows)
    assert sum(m["value"] for m in messages if m["metric"] == "views_per_page") == EVENTS
    assert sorted(m["value"] for m in messages if m["metric"] == "active_users") == sorted(
        expected_users.values()
    )
