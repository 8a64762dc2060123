"""State batches combine as Kafka's PersisterStateBatchCombiner: newer wins, cut at the start offset."""

from __future__ import annotations

from odradek.coordinator.share.batches import combine_batches
from odradek.partition.share.persister import DeliveryState, StateBatch

AVAILABLE, ACKED, ARCHIVED = DeliveryState.AVAILABLE, DeliveryState.ACKNOWLEDGED, DeliveryState.ARCHIVED


def test_a_newer_batch_splits_an_older_one_it_lands_inside() -> None:
    old = (StateBatch(0, 9, AVAILABLE, 1),)
    new = (StateBatch(3, 5, ACKED, 1),)
    assert combine_batches(old, new, 0) == (
        StateBatch(0, 2, AVAILABLE, 1),
        StateBatch(3, 5, ACKED, 1),
        StateBatch(6, 9, AVAILABLE, 1),
    )


def test_batches_below_the_start_offset_are_dropped_and_one_across_it_is_cut() -> None:
    old = (StateBatch(0, 4, ARCHIVED, 2), StateBatch(5, 9, AVAILABLE, 1))
    assert combine_batches(old, (), 7) == (StateBatch(7, 9, AVAILABLE, 1),)


def test_neighbours_in_the_same_state_and_count_become_one_batch() -> None:
    new = (StateBatch(0, 4, ACKED, 1), StateBatch(5, 9, ACKED, 1), StateBatch(10, 12, ACKED, 2))
    assert combine_batches((), new, 0) == (StateBatch(0, 9, ACKED, 1), StateBatch(10, 12, ACKED, 2))


def test_within_one_write_a_later_batch_wins_over_an_earlier_overlapping_one() -> None:
    new = (StateBatch(0, 9, AVAILABLE, 1), StateBatch(0, 9, ARCHIVED, 5))
    assert combine_batches((), new, 0) == (StateBatch(0, 9, ARCHIVED, 5),)


def test_an_inverted_batch_is_ignored_not_kept() -> None:
    assert combine_batches((), (StateBatch(9, 3, ACKED, 1),), 0) == ()


def test_many_batches_combine_in_far_less_than_quadratic_work() -> None:
    # 20,000 single-offset batches over 20,000 older ones: a quadratic overlay is 4e8 steps (minutes).
    old = tuple(StateBatch(i, i, AVAILABLE, 1 + i % 2) for i in range(0, 40_000, 2))
    new = tuple(StateBatch(i, i, ACKED, 1) for i in range(1, 40_000, 2))
    combined = combine_batches(old, new, 0)
    assert len(combined) == 40_000
    assert combined[1] == StateBatch(1, 1, ACKED, 1)
