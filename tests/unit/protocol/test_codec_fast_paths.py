"""The codec's shortcuts agree with the plain definitions they replace."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from odradek.protocol.codec import default_check
from odradek.protocol.schema import Struct

from .schema_strategies import ALL_CASES, struct_strategy


def _tagged_struct_defaults() -> list[type[Struct]]:
    """Every struct class that is the default of a tagged field somewhere."""
    found: dict[str, type[Struct]] = {}

    def walk(cls: type[Struct]) -> None:
        for spec in cls.FIELDS:
            if spec.struct is not None:
                if spec.kind == "struct" and spec.tag is not None:
                    found[f"{cls.__qualname__}.{spec.name}"] = spec.struct
                walk(spec.struct)

    for cls, _ in ALL_CASES:
        walk(cls)
    return sorted(set(found.values()), key=lambda c: c.__qualname__)


TAGGED_DEFAULTS = _tagged_struct_defaults()


def test_there_are_tagged_struct_fields() -> None:
    assert len(TAGGED_DEFAULTS) >= 5


@pytest.mark.parametrize("cls", TAGGED_DEFAULTS, ids=[c.__qualname__ for c in TAGGED_DEFAULTS])
@settings(max_examples=30, deadline=None, database=None)
@given(data=st.data())
def test_default_check_is_equality_with_a_default_struct(cls: type[Struct], data: Any) -> None:
    check = default_check(cls)
    assert check(cls())
    version = data.draw(st.integers(0, 20), label="version")
    value = data.draw(st.just(cls()) | struct_strategy(cls, version, True, True), label="value")
    assert check(value) == (value == cls())
    assert not check(None)
