"""The checker on synthetic histories: each anomaly is found, and a clean history has none.

Each test builds the smallest history showing one anomaly; removing that check from checker.py makes
its test fail (the clean-history test keeps the checks from crying wolf).
"""

from __future__ import annotations

from tests.faults.checker import Ack, Histories, Read, check, summary


def _clean() -> Histories:
    """Two partitions, four acknowledged values, read during the run and at the end, all agreeing."""
    return Histories(
        acks=[Ack("a", 0, 0), Ack("b", 0, 1), Ack("c", 1, 0), Ack("d", 1, 1)],
        reads=[
            Read("r", 1, 0, 0, "a"),
            Read("r", 1, 1, 0, "c"),
            Read("r", 2, 0, 1, "b"),
            Read("r", 2, 1, 1, "d"),
        ],
        final={0: [(0, "a"), (1, "b")], 1: [(0, "c"), (1, "d")]},
    )


def _only(histories: Histories) -> dict[str, int]:
    """The anomaly kinds found, with their counts (those with none left out)."""
    return {kind: n for kind, n in check(histories).counts.items() if n}


def test_a_clean_history_has_no_anomaly() -> None:
    anomalies = check(_clean())
    assert anomalies.clean
    assert anomalies.as_dict()["clean"] is True


def test_an_acknowledged_value_missing_from_the_final_log_is_lost() -> None:
    histories = _clean()
    histories.acks.append(Ack("e", 1, 2))
    assert _only(histories) == {"lost": 1}
    assert check(histories).found["lost"] == [{"value": "e", "partition": 1, "offset": 2}]


def test_an_unacknowledged_value_missing_from_the_final_log_is_not_lost() -> None:
    histories = _clean()
    histories.unacknowledged.add("never-acked")
    assert check(histories).clean


def test_a_value_read_during_the_run_and_gone_at_the_end_vanished() -> None:
    histories = _clean()
    # read at an offset past what the final log holds: the log was truncated under the consumer
    histories.reads.append(Read("r", 3, 0, 2, "x"))
    assert _only(histories) == {"vanished": 1}


def test_one_value_at_two_offsets_is_a_duplicate() -> None:
    histories = _clean()
    histories.final[0].append((2, "a"))
    assert _only(histories) == {"duplicate": 1}
    assert check(histories).found["duplicate"][0] == {"value": "a", "at": [(0, 0), (0, 2)]}


def test_a_value_read_at_another_offset_than_the_final_log_is_a_duplicate_and_inconsistent() -> None:
    histories = _clean()
    # a consumer saw "b" at offset 1 of partition 1, where the final log (and the ack) put "d"
    histories.reads.append(Read("other", 1, 1, 1, "b"))
    assert _only(histories) == {"duplicate": 1, "inconsistent_offset": 1}


def test_an_offset_acknowledged_for_one_value_and_holding_another_is_inconsistent() -> None:
    histories = _clean()
    # a new leader without the old one's records handed offset 1 out again
    histories.acks.append(Ack("e", 0, 1))
    histories.final[0].append((2, "e"))
    assert _only(histories) == {"inconsistent_offset": 1}
    assert check(histories).found["inconsistent_offset"] == [
        {"partition": 0, "offset": 1, "values": ["b", "e"]}
    ]


def test_two_values_at_one_offset_of_the_final_log_are_inconsistent() -> None:
    histories = _clean()
    histories.final[1].append((1, "e"))
    assert _only(histories) == {"inconsistent_offset": 1}


def test_missing_offsets_in_the_final_log_are_a_gap() -> None:
    histories = _clean()
    histories.final[1].append((5, "e"))
    assert _only(histories) == {"offset_gap": 1}
    assert check(histories).found["offset_gap"] == [{"partition": 1, "after": 1, "next": 5}]


def test_a_consumer_going_back_in_a_partition_is_nonmonotonic() -> None:
    histories = _clean()
    histories.reads.append(Read("r", 3, 0, 0, "a"))
    assert _only(histories) == {"nonmonotonic": 1}


def test_offsets_out_of_order_within_one_poll_are_nonmonotonic() -> None:
    histories = Histories(
        acks=[Ack("a", 0, 0), Ack("b", 0, 1)],
        reads=[Read("r", 1, 0, 1, "b"), Read("r", 1, 0, 0, "a")],
        final={0: [(0, "a"), (1, "b")]},
    )
    assert _only(histories) == {"nonmonotonic": 1}


def test_another_consumer_reading_from_the_start_is_not_nonmonotonic() -> None:
    histories = _clean()
    histories.reads += [Read("s", 1, 0, 0, "a"), Read("s", 1, 0, 1, "b")]
    assert check(histories).clean


def test_a_consumer_jumping_over_records_of_the_final_log_skipped_them() -> None:
    histories = Histories(
        acks=[Ack("a", 0, 0), Ack("b", 0, 1), Ack("c", 0, 2)],
        reads=[Read("r", 1, 0, 0, "a"), Read("r", 2, 0, 2, "c")],
        final={0: [(0, "a"), (1, "b"), (2, "c")]},
    )
    assert _only(histories) == {"poll_skip": 1}


def test_the_summary_counts_unacknowledged_values_that_made_it_into_the_log() -> None:
    histories = _clean()
    histories.unacknowledged |= {"b", "z"}
    assert summary(histories) == {
        "acknowledged": 4,
        "unacknowledged": 2,
        "unacknowledged_but_present": 1,
        "read_during_run": 4,
        "final_records": 4,
    }


def test_examples_are_capped_but_counts_are_complete() -> None:
    histories = _clean()
    histories.acks += [Ack(f"lost-{n}", 0, 10 + n) for n in range(50)]
    anomalies = check(histories)
    assert anomalies.counts["lost"] == 50
    assert len(anomalies.found["lost"]) == 20
