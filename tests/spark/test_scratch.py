"""Per-thread scratch buffers: reused while they are large enough, never shared between threads."""

from __future__ import annotations

import threading

import numpy as np

from odradek.spark.scratch import KEEP_AT_MOST, scratch


def test_a_request_that_fits_reuses_the_buffer_and_a_larger_one_replaces_it() -> None:
    first = scratch("test", 1000)
    assert len(first) == 1000 and first.dtype == np.uint8
    first[:] = 7
    again = scratch("test", 900)
    assert len(again) == 900 and np.shares_memory(first, again)
    larger = scratch("test", 5000)
    assert len(larger) == 5000 and not np.shares_memory(first, larger)
    assert np.shares_memory(scratch("test", 5000), larger)


def test_purposes_and_dtypes_do_not_share() -> None:
    a = scratch("test a", 100)
    b = scratch("test b", 100)
    assert not np.shares_memory(a, b)
    flags = scratch("test a", 100, np.bool_)
    assert flags.dtype == np.bool_ and not np.shares_memory(a, flags)


def test_a_huge_request_gets_its_own_buffer_each_time() -> None:
    size = KEEP_AT_MOST + 1
    assert not np.shares_memory(scratch("test huge", size), scratch("test huge", size))


def test_each_thread_has_its_own() -> None:
    mine = scratch("test thread", 100)
    theirs: list[np.ndarray] = []
    thread = threading.Thread(target=lambda: theirs.append(scratch("test thread", 100)))
    thread.start()
    thread.join()
    assert not np.shares_memory(mine, theirs[0])
