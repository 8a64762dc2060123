"""Inputs that cost RE2 itself (not only backtracking engines) a lot of CPU, for the regex worker's tests."""

from __future__ import annotations

import random

#: RE2's DFA gives up on it and its NFA takes ~0.15 s of CPU for each of LONG_NAMES.
COSTLY = "(?:[ab]*a[ab]{30}|[ab]*b[ab]{30}){10}"
#: A thousand different runs of 20,000 random a/b (repeating one name would let RE2's DFA cache through):
#: minutes of CPU for COSTLY.
LONG_NAMES = [
    format(bits, "020000b").translate(str.maketrans("01", "ab"))
    for bits in (random.Random(7).getrandbits(20_000) for _ in range(1000))
]
#: Costly to compile: RE2 parses each \pL into a Unicode class of some 650 ranges (~31 KiB and ~0.1 ms of
#: CPU each) before it finds the program too big. Under MAX_PATTERN_CHARS: ~0.9 s and ~190 MiB.
COSTLY_TO_COMPILE = "\\pL" * 5400
