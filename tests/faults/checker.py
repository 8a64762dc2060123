"""The checker: what a fault run's histories say about the records the cluster promised to keep.

Pure functions over plain data, so they can be tested on synthetic histories. A run gives three
histories: the writers' acknowledgements (value -> the partition and offset the delivery report named),
the readers' polls during the run (consumer, poll number, partition, offset, value), and the final read
of every partition from offset 0 by a fresh consumer once every fault is healed. The anomalies are
those Jepsen's Kafka checkers name (lost-write, duplicate, inconsistent-offsets, nonmonotonic-poll,
poll-skip), plus offset gaps in the final log and records a consumer saw that the final log lost.
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

#: How many examples of each anomaly a report keeps (the counts are always complete).
SAMPLES = 20


@dataclass(frozen=True)
class Ack:
    """A write the cluster acknowledged: the delivery report's partition and offset for `value`."""

    value: str
    partition: int
    offset: int


@dataclass(frozen=True)
class Read:
    """One record a consumer returned; `poll` numbers the consumer's calls (one call, many records)."""

    consumer: str
    poll: int
    partition: int
    offset: int
    value: str


@dataclass
class Histories:
    acks: list[Ack] = field(default_factory=list)
    #: Values written but never acknowledged (errors, timeouts): they may or may not be in the log.
    unacknowledged: set[str] = field(default_factory=set)
    reads: list[Read] = field(default_factory=list)
    #: partition -> [(offset, value)] in the order the final consumer returned them.
    final: dict[int, list[tuple[int, str]]] = field(default_factory=dict)


@dataclass
class Anomalies:
    """Every kind of anomaly with its examples; `clean` when there is none."""

    found: dict[str, list[Any]] = field(default_factory=lambda: defaultdict(list))
    counts: dict[str, int] = field(default_factory=lambda: defaultdict(int))

    def add(self, kind: str, example: Any) -> None:
        self.counts[kind] += 1
        if len(self.found[kind]) < SAMPLES:
            self.found[kind].append(example)

    @property
    def clean(self) -> bool:
        return not any(self.counts.values())

    def as_dict(self) -> dict[str, Any]:
        return {
            "clean": self.clean,
            "counts": {kind: self.counts.get(kind, 0) for kind in KINDS},
            "examples": {kind: self.found[kind] for kind in KINDS if self.found.get(kind)},
        }


#: Every kind the checker reports, in the order a reader of the report should look at them.
KINDS = (
    "lost",  # acknowledged, absent from the final log
    "vanished",  # read by a consumer during the run, absent from the final log at that offset
    "duplicate",  # one value at several offsets (in the final log or across all reads)
    "inconsistent_offset",  # one (partition, offset) holding different values across reads and acks
    "offset_gap",  # the final log skips offsets between its first and last record
    "nonmonotonic",  # a consumer got an offset of a partition not above the one it got before
    "poll_skip",  # a consumer jumped over offsets that the final log holds
)


def check(histories: Histories) -> Anomalies:
    """All anomalies of a run; a run that kept its promises has none."""
    anomalies = Anomalies()
    final_at = _final_positions(histories.final, anomalies)
    _lost(histories.acks, final_at, anomalies)
    _vanished(histories.reads, final_at, anomalies)
    _duplicates(histories, anomalies)
    _inconsistent_offsets(histories, anomalies)
    _offset_gaps(histories.final, anomalies)
    _nonmonotonic_and_skips(histories.reads, final_at, anomalies)
    return anomalies


def summary(histories: Histories) -> dict[str, int]:
    """Sizes of the histories, for the report."""
    final_values = {value for records in histories.final.values() for _, value in records}
    return {
        "acknowledged": len(histories.acks),
        "unacknowledged": len(histories.unacknowledged),
        "unacknowledged_but_present": len(histories.unacknowledged & final_values),
        "read_during_run": len(histories.reads),
        "final_records": sum(len(records) for records in histories.final.values()),
    }


# ----- the checks --------------------------------------------------------------------------------


def _final_positions(
    final: Mapping[int, Sequence[tuple[int, str]]], anomalies: Anomalies
) -> dict[tuple[int, int], str]:
    """(partition, offset) -> value in the final log; two values at one offset is an inconsistency."""
    positions: dict[tuple[int, int], str] = {}
    for partition, records in final.items():
        for offset, value in records:
            seen = positions.setdefault((partition, offset), value)
            if seen != value:
                anomalies.add(
                    "inconsistent_offset",
                    {"partition": partition, "offset": offset, "values": sorted({seen, value})},
                )
    return positions


def _lost(acks: Iterable[Ack], final_at: Mapping[tuple[int, int], str], anomalies: Anomalies) -> None:
    present = set(final_at.values())
    for ack in acks:
        if ack.value not in present:
            anomalies.add("lost", {"value": ack.value, "partition": ack.partition, "offset": ack.offset})


def _vanished(reads: Iterable[Read], final_at: Mapping[tuple[int, int], str], anomalies: Anomalies) -> None:
    present = set(final_at.values())
    reported: set[tuple[int, int, str]] = set()
    for read in reads:
        key = (read.partition, read.offset, read.value)
        if read.value not in present and key not in reported:
            reported.add(key)
            anomalies.add(
                "vanished",
                {
                    "consumer": read.consumer,
                    "partition": read.partition,
                    "offset": read.offset,
                    "value": read.value,
                },
            )


def _duplicates(histories: Histories, anomalies: Anomalies) -> None:
    places: dict[str, set[tuple[int, int]]] = defaultdict(set)
    for partition, records in histories.final.items():
        for offset, value in records:
            places[value].add((partition, offset))
    for read in histories.reads:
        places[read.value].add((read.partition, read.offset))
    for value, where in places.items():
        if len(where) > 1:
            anomalies.add("duplicate", {"value": value, "at": sorted(where)})


def _inconsistent_offsets(histories: Histories, anomalies: Anomalies) -> None:
    """Values at one (partition, offset) as acks and run-time reads say, compared with each other and
    with the final log (the final log's own clashes are found while indexing it)."""
    values: dict[tuple[int, int], set[str]] = defaultdict(set)
    for ack in histories.acks:
        values[(ack.partition, ack.offset)].add(ack.value)
    for read in histories.reads:
        values[(read.partition, read.offset)].add(read.value)
    for partition, records in histories.final.items():
        # only the first value per offset: a second one was reported already
        first: dict[int, str] = {}
        for offset, value in records:
            first.setdefault(offset, value)
        for offset, value in first.items():
            if (partition, offset) in values:
                values[(partition, offset)].add(value)
    for (partition, offset), seen in sorted(values.items()):
        if len(seen) > 1:
            anomalies.add(
                "inconsistent_offset", {"partition": partition, "offset": offset, "values": sorted(seen)}
            )


def _offset_gaps(final: Mapping[int, Sequence[tuple[int, str]]], anomalies: Anomalies) -> None:
    """Without transactions or compaction every offset from the first to the last holds a record."""
    for partition, records in final.items():
        offsets = sorted({offset for offset, _ in records})
        for before, after in itertools.pairwise(offsets):
            if after != before + 1:
                anomalies.add("offset_gap", {"partition": partition, "after": before, "next": after})


def _nonmonotonic_and_skips(
    reads: Iterable[Read], final_at: Mapping[tuple[int, int], str], anomalies: Anomalies
) -> None:
    last: dict[tuple[str, int], Read] = {}
    for read in reads:
        key = (read.consumer, read.partition)
        before = last.get(key)
        last[key] = read
        if before is None:
            continue
        if read.offset <= before.offset:
            anomalies.add(
                "nonmonotonic",
                {
                    "consumer": read.consumer,
                    "partition": read.partition,
                    "offsets": [before.offset, read.offset],
                    "polls": [before.poll, read.poll],
                },
            )
        elif read.offset > before.offset + 1:
            skipped = [o for o in range(before.offset + 1, read.offset) if (read.partition, o) in final_at]
            if skipped:
                anomalies.add(
                    "poll_skip",
                    {
                        "consumer": read.consumer,
                        "partition": read.partition,
                        "offsets": [before.offset, read.offset],
                        "skipped": len(skipped),
                        "polls": [before.poll, read.poll],
                    },
                )
