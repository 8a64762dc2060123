"""A records value the codec does not copy: it places itself in the output being encoded.

partition/'s `FileRecords` is one (a fetch's file regions, which the server sends with sendfile): it
records its regions in the server's output, whose `spliced_length` the frame encoder adds to the size
prefix (frames.py). The codec appends plain buffers itself and hands it anything else.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable


@runtime_checkable
class PlacedRecords(Protocol):
    """A records value that writes itself into the output: its length is known before it is placed."""

    def __len__(self) -> int: ...

    def append_to(self, out: bytearray) -> None:
        """Place the records at the end of `out` (bytes appended, or regions `out` splices in and counts
        in its `spliced_length`); TypeError if `out` cannot take them."""
