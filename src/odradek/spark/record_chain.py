"""Where the records of decoded batches start: the chain of record lengths, followed with numpy.

A v2 record begins with its length (a zigzag varint), so record i + 1 starts where record i's length
says; the chain is sequential by nature, and walking it one record at a time in Python was the hot loop
of the decoder. `record_starts` guesses every start at once and then proves the guess:

- Every record's attributes byte, right after its length, is 0 (the field is unused in v2). So each zero
  byte z of the payloads, with a varint of 1 to 3 bytes ending at z - 1 that reads as a positive length,
  gives a candidate start (z - size) and its successor (z + length).
- The guess is accepted only if the candidates, in order, are exactly the chain: the first of each batch
  is where the batch's payload begins, each one's successor is the next candidate, and each batch's
  chain ends where its payload ends after exactly its record count. That is the recurrence the
  per-record walk computes (the same varint at the same position gives the same successor), so an
  accepted guess equals its result.
- Zeros inside keys or values can add candidates that are not record starts; those that have no
  predecessor or no successor among the candidates are pruned and the guess is checked again. A batch
  whose candidates still do not form its chain (a record longer than 1 MiB, nonzero attributes, or
  corrupt bytes) is walked record by record, which raises `CorruptRecordError` on corrupt input.
- Payloads with more than a few zero bytes per record (binary keys or values full of zeros) are walked
  record by record from the start: there the candidates would cost more than the walk.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from odradek.protocol.records.errors import CorruptRecordError
from odradek.spark.scratch import scratch

Int64s = npt.NDArray[np.int64]
Bytes = npt.NDArray[np.uint8]
PAD = 10  # zero bytes after the payloads: varint reads near the end (and at negative indexes) stay in
_MAX_SIZE = 3  # candidate length varints have 1 to 3 bytes: records up to 1 MiB
_PRUNE_ROUNDS = 8
# Above this many zero bytes per record, finding candidates costs more than walking record by record
# (about 30 ns a zero byte against 150 ns a record, measured).
_ZEROS_PER_RECORD = 5


def record_starts(
    data: bytes | memoryview, arr: Bytes, sizes: Sequence[int], counts: Sequence[int], where: str
) -> Int64s:
    """Start positions of the records of batches whose payloads (`sizes` bytes each) lie end to end in
    `data` (then PAD zero bytes; `arr` is the same buffer as uint8), `counts[i]` records in batch i.

    Raises CorruptRecordError when a batch's records do not fill it exactly."""
    total = len(data) - PAD
    ends = np.cumsum(np.asarray(sizes, dtype=np.int64))
    begins = ends - np.asarray(sizes, dtype=np.int64)
    count_array = np.asarray(counts, dtype=np.int64)
    record_count = int(count_array.sum())
    if record_count == 0:
        if total != 0:
            raise CorruptRecordError(f"records of a batch in {where} do not fill their batch")
        return np.zeros(0, dtype=np.int64)
    is_zero = np.equal(arr[:total], 0, out=scratch("zero bytes", total, np.bool_))
    if np.count_nonzero(is_zero) > _ZEROS_PER_RECORD * record_count:
        # Keys or values full of zeros: more candidates than the per-record walk has steps.
        empty = np.zeros(0, dtype=np.int64)
        return _per_batch(data, empty, empty, begins, ends, count_array, where)
    starts, successors = _candidates(arr, is_zero)
    if count_array.all():  # (a batch without records is checked on its own)
        firsts = np.cumsum(count_array) - count_array  # index of each batch's first record
        if _is_chain(starts, successors, begins, firsts, record_count, total):
            return starts
        starts, successors = _prune(starts, successors, begins, total)
        if _is_chain(starts, successors, begins, firsts, record_count, total):
            return starts
    return _per_batch(data, starts, successors, begins, ends, count_array, where)


def walk_record_starts(data: bytes | memoryview, pos: int, count: int, out: list[int]) -> int:
    """Follow `count` records from `pos` by their length varints, appending each start to `out`; return
    where the last one ends. The per-record walk: the reference for `record_starts` and its fallback.

    Record lengths are positive, so their zigzag encoding is even and decodes by a shift; lengths of one
    or two bytes (records under 8 KiB) are inline, longer ones go to `read_varint`. A corrupt length
    sends `pos` astray, which the caller notices (the records do not end where the batch ends) or which
    ends in an IndexError here."""
    append = out.append
    try:
        for _ in range(count):
            append(pos)
            byte = data[pos]
            if byte < 0x80:
                pos += 1 + (byte >> 1)
            else:
                second = data[pos + 1]
                if second < 0x80:
                    pos += 2 + (((second << 7) | (byte & 0x7F)) >> 1)
                else:
                    length, pos = read_varint(data, pos)
                    if length < 0:
                        raise CorruptRecordError(f"negative record length {length}")
                    pos += length
    except IndexError:
        raise CorruptRecordError("a record length points past the end of its batch") from None
    return pos


def read_varint(data: bytes | memoryview, pos: int) -> tuple[int, int]:
    """A zigzag varint at `pos`: (value, position after it)."""
    value = 0
    shift = 0
    while True:
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return (value >> 1) ^ -(value & 1), pos
        shift += 7


def _candidates(arr: Bytes, is_zero: npt.NDArray[np.bool_]) -> tuple[Int64s, Int64s]:
    """Candidate record starts (ascending) and their successors, from the zero bytes of the payloads.

    Each zero z is followed backwards through the varint that would end at z - 1, one byte size at a
    time; a size's work is done only for the zeros whose varint is still going (the bytes before it
    have the continuation bit), so most of it runs over about one zero in two."""
    zeros = np.flatnonzero(is_zero)
    # Bytes before each zero; a negative index reads the zero padding at the end, which never continues
    # a varint nor gives a positive length.
    last = arr[zeros - 1]
    ends_varint = np.flatnonzero(last < 0x80)
    if len(ends_varint) < len(zeros):
        zeros, last = zeros[ends_varint], last[ends_varint]
    value = last.astype(np.int64)
    starts: list[Int64s] = []  # one array per varint size
    successors: list[Int64s] = []
    for size in range(1, _MAX_SIZE + 1):
        if size > 1:
            byte = arr[zeros - size]
            going = np.flatnonzero(byte >= 0x80)
            if len(going) == 0:
                break
            zeros = zeros[going]
            value = (value[going] << 7) | (byte[going] & 0x7F)
        # A varint of exactly `size` bytes ends at z - 1; its zigzag value is even for a length >= 0.
        found = np.flatnonzero(((value & 1) == 0) & (value > 0))
        if len(found):
            starts.append(zeros[found] - size)
            successors.append(zeros[found] + (value[found] >> 1))
    if not starts:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    if len(starts) == 1:
        return starts[0], successors[0]
    all_starts = np.concatenate(starts)
    order = np.argsort(all_starts, kind="stable")
    return all_starts[order], np.concatenate(successors)[order]


def _is_chain(
    starts: Int64s, successors: Int64s, begins: Int64s, firsts: Int64s, record_count: int, total: int
) -> bool:
    """Whether the candidates are exactly the chains of all batches (see the module's docstring): the
    batches' chains joined end to end form one chain from 0 to `total` that passes each batch's
    beginning at that batch's first record."""
    if len(starts) != record_count:
        return False
    return bool(
        successors[-1] == total
        and np.array_equal(successors[:-1], starts[1:])
        and np.array_equal(starts[firsts], begins)
    )


def _prune(starts: Int64s, successors: Int64s, begins: Int64s, total: int) -> tuple[Int64s, Int64s]:
    """Drop candidates with no successor (a candidate or a batch boundary) or no predecessor (a
    candidate whose successor they are, or a batch beginning), until none is dropped. Record starts
    are never dropped: each has its successor and predecessor in the chain."""
    boundaries = np.append(begins, total)
    for _ in range(_PRUNE_ROUNDS):
        if len(starts) == 0:
            break
        index = np.minimum(np.searchsorted(starts, successors), len(starts) - 1)
        hit = starts[index] == successors
        has_successor = hit | np.isin(successors, boundaries)
        has_predecessor = np.isin(starts, begins)
        has_predecessor[index[hit]] = True
        keep = has_successor & has_predecessor
        if keep.all():
            break
        starts, successors = starts[keep], successors[keep]
    return starts, successors


def _per_batch(
    data: bytes | memoryview,
    starts: Int64s,
    successors: Int64s,
    begins: Int64s,
    ends: Int64s,
    counts: Int64s,
    where: str,
) -> Int64s:
    """Each batch on its own: its candidates if they are its chain, else the per-record walk."""
    lows = np.searchsorted(starts, begins).tolist()
    highs = np.searchsorted(starts, ends).tolist()
    pieces: list[Int64s] = []
    batches = zip(begins.tolist(), ends.tolist(), counts.tolist(), lows, highs, strict=True)
    for begin, end, count, low, high in batches:
        own, after = starts[low:high], successors[low:high]
        if count == 0:
            if begin != end:
                raise CorruptRecordError(f"records of a batch in {where} do not fill their batch")
            continue
        if (
            high - low == count
            and own[0] == begin
            and after[-1] == end
            and np.array_equal(after[:-1], own[1:])
        ):
            pieces.append(own)
            continue
        walked: list[int] = []
        if walk_record_starts(data, begin, count, walked) != end:
            raise CorruptRecordError(f"records of a batch in {where} do not fill their batch")
        pieces.append(np.array(walked, dtype=np.int64))
    return np.concatenate(pieces) if pieces else np.zeros(0, dtype=np.int64)
