"""Reusable per-thread buffers for the decoder's large temporaries.

A fetched region is about 8 MB, and the decoder needs a few temporaries that size (the payloads laid end to
end, a mask of their zero bytes). Allocated afresh for every region they were served as new pages by the
kernel, and on the virtual machines this runs on a first write to a new page is slow: filling a new 8 MB
buffer took 7 ms, refilling one already in use 0.1 ms, about what decoding the 100,000 records in it
costs. So each thread keeps one buffer per purpose and hands out views of it.

A view is valid until the next request for the same purpose on the same thread: nothing built from it may
keep referring to it (the decoder's Arrow columns are copies).
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np
import numpy.typing as npt

#: Larger requests get a buffer of their own, so that a worker does not hold on to a rare huge one.
KEEP_AT_MOST = 64 * 1024 * 1024

_local = threading.local()


def scratch(purpose: str, size: int, dtype: npt.DTypeLike = np.uint8) -> npt.NDArray[Any]:
    """An array of `size` items of `dtype` whose contents are left over from earlier use."""
    dtype = np.dtype(dtype)
    if size * dtype.itemsize > KEEP_AT_MOST:
        return np.empty(size, dtype=dtype)
    buffers: dict[str, npt.NDArray[Any]] = _local.__dict__.setdefault("buffers", {})
    buffer = buffers.get(purpose)
    if buffer is None or buffer.dtype != dtype or len(buffer) < size:
        # Some headroom, so that a region a little larger than the last does not allocate again.
        buffer = np.empty(size + size // 8, dtype=dtype)
        buffers[purpose] = buffer
    return buffer[:size]
