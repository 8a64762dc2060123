"""The one exception type the codec raises for bad input."""

from __future__ import annotations


class CodecError(ValueError):
    """Input that cannot be decoded (or a value that cannot be encoded) at the requested version.

    Every failure of the codec on hostile or malformed input is a CodecError (or a subclass), so a
    server can catch exactly this and answer with an error code or a clean disconnect.
    """


class TruncatedError(CodecError):
    """The buffer ended before the structure being read did."""
