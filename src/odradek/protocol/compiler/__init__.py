"""Writes the Python source of the codec's flat encode and decode functions (used by `codec.py`)."""
