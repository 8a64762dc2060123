"""Option parsing and offset-range planning, without Spark."""

from __future__ import annotations

import pytest

from odradek.spark.options import parse_sink_options, parse_source_options
from odradek.spark.ranges import OffsetRange, plan_ranges, rate_limit

BOOTSTRAP = {"kafka.bootstrap.servers": "localhost:9092"}


def test_rate_limit_never_exceeds_the_limit_and_follows_the_backlog() -> None:
    starts = {("t", p): 0 for p in range(20)}
    latest = {("t", p): 1 for p in range(20)} | {("t", 0): 1000}
    end = rate_limit(starts, latest, 10)
    assert sum(end[tp] - starts[tp] for tp in end) == 10
    assert end[("t", 0)] - starts[("t", 0)] >= 9  # the partition with the backlog gets most of it
    assert rate_limit(starts, latest, 5000) == latest


def test_plan_ranges_splits_to_min_partitions_and_max_records() -> None:
    starts = {("a", 0): 0, ("a", 1): 10, ("b", 0): 5}
    ends = {("a", 0): 900, ("a", 1): 110, ("b", 0): 5}
    ranges = plan_ranges(starts, ends, min_partitions=10)
    assert len(ranges) >= 10
    covered = sorted((r.topic, r.partition, o) for r in ranges for o in range(r.from_offset, r.until_offset))
    assert covered == sorted([("a", 0, o) for o in range(900)] + [("a", 1, o) for o in range(10, 110)])
    assert all(r.size <= 50 for r in plan_ranges(starts, ends, max_records_per_partition=50))
    assert plan_ranges(starts, ends) == [OffsetRange("a", 0, 0, 900), OffsetRange("a", 1, 10, 110)]


def test_source_options_are_typed() -> None:
    options = parse_source_options(
        BOOTSTRAP
        | {
            "subscribepattern": "events-.*",
            "startingoffsets": '{"events-a": {"0": 5, "1": -2}}',
            "maxoffsetspertrigger": "100",
            "failondataloss": "false",
            "includeheaders": "true",
            "kafka.security.protocol": "PLAINTEXT",
        },
        streaming=True,
    )
    assert options.subscription.matches("events-b") and not options.subscription.matches("other")
    assert options.starting.partition_offsets == {("events-a", 0): 5, ("events-a", 1): -2}
    assert (options.max_offsets_per_trigger, options.fail_on_data_loss, options.include_headers) == (
        100,
        False,
        True,
    )
    assert options.consumer_config("driver")["security.protocol"] == "PLAINTEXT"


@pytest.mark.parametrize(
    ("options", "streaming", "message"),
    [
        ({"subscribe": "a", "endingoffsets": "latest"}, True, "ending offset not valid in streaming queries"),
        ({"subscribe": " , "}, False, "No topics to subscribe to"),
        ({"assign": "a"}, False, "No topicpartitions to assign"),
        ({"subscribe": "a", "endingoffsets": "earliest"}, False, "ending offset can't be earliest"),
        ({"subscribe": "a", "kafka.key.deserializer": "x"}, False, "keys are deserialized as byte arrays"),
        (
            {"subscribe": "a", "kafka.enable.auto.commit": "true"},
            False,
            "'enable.auto.commit' is not supported",
        ),
        (
            {"subscribe": "a", "minoffsetspertrigger": "10", "maxoffsetspertrigger": "5"},
            True,
            "is higher than",
        ),
        ({"subscribe": "a", "failondataloss": "maybe"}, False, "must be true or false"),
        (
            {"subscribe": "a", "startingoffsets": '{"a":{"0":9}}', "endingoffsets": '{"a":{"0":3}}'},
            False,
            "greater than the ending offset",
        ),
    ],
)
def test_source_option_errors(options: dict[str, str], streaming: bool, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_source_options(BOOTSTRAP | options, streaming=streaming)


def test_missing_bootstrap_and_sink_errors() -> None:
    with pytest.raises(ValueError, match=r"'kafka\.bootstrap\.servers' must be specified"):
        parse_source_options({"subscribe": "a"}, streaming=False)
    with pytest.raises(ValueError, match=r"'value\.serializer' is not supported"):
        parse_sink_options(BOOTSTRAP | {"kafka.value.serializer": "x"})
    assert parse_sink_options(BOOTSTRAP | {"topic": " out "}).topic == "out"
