"""Combining state batches, as Kafka's PersisterStateBatchCombiner: a write's batches replace what
the state held for the same offsets, nothing below the start offset is kept, and neighbours in the
same delivery state and count become one batch.

A share partition writes only the batches that changed, and they may overlap what is stored (an
acquired range acknowledged in part, say): the newer batch wins for every offset it covers.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Iterable

from odradek.partition.share.persister import StateBatch


def combine_batches(
    current: Iterable[StateBatch], newer: Iterable[StateBatch], start_offset: int
) -> tuple[StateBatch, ...]:
    """`current` overlaid with `newer` (each list may overlap itself: later entries win), cut at
    `start_offset`, sorted and merged. A sweep over the batches' edges, O(n log n): a write may carry
    many batches, and this runs on the broker's loop."""
    ordered = [b for b in (*current, *newer) if b.last_offset >= b.first_offset]
    return _merge_neighbours(_cut(_overlay(ordered), start_offset))


def _overlay(batches: list[StateBatch]) -> list[StateBatch]:
    """Disjoint pieces, sorted, each offset taken from the last batch in `batches` covering it."""
    edges = sorted({b.first_offset for b in batches} | {b.last_offset + 1 for b in batches})
    starting = sorted(range(len(batches)), key=lambda i: batches[i].first_offset)
    active: list[tuple[int, int]] = []  # (-position in `batches`, last offset): the latest on top
    pieces: list[StateBatch] = []
    next_start = 0
    for edge, following in itertools.pairwise(edges):
        while next_start < len(starting) and batches[starting[next_start]].first_offset <= edge:
            index = starting[next_start]
            heapq.heappush(active, (-index, batches[index].last_offset))
            next_start += 1
        while active and active[0][1] < edge:
            heapq.heappop(active)
        if active:
            pieces.append(_span(batches[-active[0][0]], edge, following - 1))
    return pieces


def _cut(batches: list[StateBatch], start_offset: int) -> list[StateBatch]:
    if start_offset < 0:
        return batches
    return [
        _span(b, max(b.first_offset, start_offset), b.last_offset)
        for b in batches
        if b.last_offset >= start_offset
    ]


def _merge_neighbours(batches: list[StateBatch]) -> tuple[StateBatch, ...]:
    merged: list[StateBatch] = []
    for batch in batches:
        last = merged[-1] if merged else None
        if (
            last is not None
            and last.last_offset + 1 == batch.first_offset
            and last.delivery_state == batch.delivery_state
            and last.delivery_count == batch.delivery_count
        ):
            merged[-1] = _span(last, last.first_offset, batch.last_offset)
        else:
            merged.append(batch)
    return tuple(merged)


def _span(batch: StateBatch, first: int, last: int) -> StateBatch:
    return StateBatch(first, last, batch.delivery_state, batch.delivery_count)
