"""The checks of tests/support/mixed_load.py catch what they are there to catch: an integration test
whose checks pass whatever the cluster did would prove nothing."""

from __future__ import annotations

import pytest

from tests.support.mixed_load import LoadOutcomes, Outcome, parse_outcome

#: Offset -> value by partition, as a fresh read_committed reader finds the topics.
IDEMPOTENT_LOG = {0: {0: "java-0", 1: "java-2"}, 1: {0: "java-1"}}
TRANSACTIONAL_LOG = {0: {0: "txn-0", 2: "txn-2"}, 1: {0: "txn-1"}}


def outcomes(reader: Outcome | None = None, seen: list[dict[int, int]] | None = None) -> LoadOutcomes:
    """A load whose every client saw what the logs above hold, but for the group's `reader` and the
    committed offsets `seen` as listed."""
    writer = parse_outcome(["ack 0 0 java-0", "ack 1 0 java-1", "ack 0 1 java-2", "done"])
    transactional = parse_outcome(["commit 0 txn-0", "commit 1 txn-1", "abort 1 txn-4", "commit 0 txn-2"])
    if reader is None:
        reader = parse_outcome(["read 0 0 txn-0", "read 1 0 txn-1", "committed 0 1", "committed 1 1"])
    return LoadOutcomes(
        idempotent={"java": writer},
        transactional={"txn": transactional},
        readers={"java": reader},
        offsets_seen=[seen if seen is not None else [{0: 1}, {0: 1, 1: 1}]],
    )


def test_a_load_whose_records_are_all_where_acknowledged_passes() -> None:
    outcomes().check(IDEMPOTENT_LOG, TRANSACTIONAL_LOG)


@pytest.mark.parametrize(
    ("idempotent_log", "transactional_log", "problem"),
    [
        ({0: {0: "java-0"}, 1: {0: "java-1"}}, TRANSACTIONAL_LOG, "java: 1 acknowledged lost in 0"),
        (
            {0: {0: "java-0", 1: "java-2", 2: "java-2"}, 1: {0: "java-1"}},
            TRANSACTIONAL_LOG,
            "java: 1 duplicated",
        ),
        ({0: {0: "java-2", 1: "java-0"}, 1: {0: "java-1"}}, TRANSACTIONAL_LOG, "java: out of order in 0"),
        (IDEMPOTENT_LOG, {0: {0: "txn-0"}, 1: {0: "txn-1"}}, "txn: 1 acknowledged lost in 0"),
        (IDEMPOTENT_LOG, {**TRANSACTIONAL_LOG, 1: {0: "txn-1", 1: "txn-4"}}, "txn: aborted txn-4 read"),
        (
            IDEMPOTENT_LOG,
            {0: {0: "txn-2", 2: "txn-0"}, 1: {0: "txn-1"}},
            "group java read txn-0 at 0/0, now txn-2",
        ),
    ],
)
def test_a_record_lost_duplicated_reordered_aborted_but_read_or_moved_is_named(
    idempotent_log: dict[int, dict[int, str]], transactional_log: dict[int, dict[int, str]], problem: str
) -> None:
    with pytest.raises(AssertionError, match=problem.replace("/", ".")):
        outcomes().check(idempotent_log, transactional_log)


def test_an_aborted_record_a_group_read_is_named() -> None:
    reader = parse_outcome(["read 0 0 txn-0", "read 1 0 txn-4"])
    with pytest.raises(AssertionError, match="group java read the aborted txn-4"):
        outcomes(reader=reader).check(IDEMPOTENT_LOG, {**TRANSACTIONAL_LOG, 1: {0: "txn-4"}})


def test_committed_offsets_going_back_are_named_as_listed_and_as_committed() -> None:
    back = parse_outcome(["read 0 0 txn-0", "committed 0 2", "committed 0 1"])
    with pytest.raises(AssertionError, match="group java's commits: partition 0 back from 2 to 1"):
        outcomes(reader=back).check(IDEMPOTENT_LOG, TRANSACTIONAL_LOG)
    with pytest.raises(AssertionError, match="committed offsets as listed: partition 1 back from 5 to 1"):
        outcomes(seen=[{1: 5}, {1: 1}]).check(IDEMPOTENT_LOG, TRANSACTIONAL_LOG)
