"""Hypothesis strategies built from the schema itself: any message class, any version.

The strategy walks a message's FieldSpecs at one version: every present field gets a value of its
kind within its wire range, nullable fields are sometimes None, tagged fields are sometimes left at
their default and sometimes not, and (in flexible versions, when asked) every struct sometimes carries
unknown tagged fields, which the codec must keep and write back in tag order.
"""

from __future__ import annotations

import functools
import uuid
from typing import Any

from hypothesis import strategies as st

from odradek.protocol.messages import OTHER_SCHEMAS, REQUESTS, RESPONSES
from odradek.protocol.schema import FieldSpec, Message, Struct

#: Every (message class, version) the codec defines: requests, responses, headers and data schemas.
ALL_CASES: list[tuple[type[Message], int]] = [
    (cls, version)
    for registry in (REQUESTS, RESPONSES, OTHER_SCHEMAS)
    for cls in registry.values()
    for version in range(cls.VERSIONS.low, cls.VERSIONS.high + 1)
]

INTEGER_RANGES: dict[str, tuple[int, int]] = {
    "int8": (-(2**7), 2**7 - 1),
    "int16": (-(2**15), 2**15 - 1),
    "int32": (-(2**31), 2**31 - 1),
    "int64": (-(2**63), 2**63 - 1),
    "uint16": (0, 2**16 - 1),
    "uint32": (0, 2**32 - 1),
}

#: Kept small so one example of a deeply nested message stays cheap to build and to encode.
MAX_ITEMS = 3
MAX_TEXT = 12
#: Tags are unsigned varints; Kafka's own tags are small, but any 32-bit tag must survive.
MAX_TAG = 2**32 - 1


def case_id(case: tuple[type[Message], int]) -> str:
    cls, version = case
    return f"{cls.__name__}-v{version}"


@functools.cache
def message_strategy(cls: type[Message], version: int, unknown_tags: bool = True) -> st.SearchStrategy[Any]:
    """Messages of `cls` at `version`, with values only at fields that exist at that version."""
    flexible = version in cls.FLEXIBLE
    return struct_strategy(cls, version, flexible, unknown_tags and flexible)


def struct_strategy(
    cls: type[Struct], version: int, flexible: bool, unknown_tags: bool
) -> st.SearchStrategy[Any]:
    fields: dict[str, st.SearchStrategy[Any]] = {}
    known_tags: set[int] = set()
    for spec in cls.FIELDS:
        if not spec.present_in(version):
            continue
        value = field_strategy(spec, version, flexible, unknown_tags)
        if spec.is_tagged_in(version):
            assert spec.tag is not None
            known_tags.add(spec.tag)
            value = st.one_of(default_strategy(spec), value)
        fields[spec.name] = value
    unknown: st.SearchStrategy[dict[int, bytes] | None] = st.none()
    if unknown_tags:
        tags = st.integers(0, MAX_TAG).filter(lambda tag: tag not in known_tags)
        unknown = st.none() | st.dictionaries(tags, st.binary(max_size=8), max_size=3)

    def build(values: dict[str, Any], unknown_fields: dict[int, bytes] | None) -> Struct:
        struct = cls(**values)
        struct.unknown_tagged_fields = unknown_fields or None
        return struct

    return st.builds(build, st.fixed_dictionaries(fields), unknown)


def default_strategy(spec: FieldSpec) -> st.SearchStrategy[Any]:
    constant, factory = spec.make_default_factory()
    if factory is not None:
        return st.builds(factory)
    return st.just(constant)


def field_strategy(
    spec: FieldSpec, version: int, flexible: bool, unknown_tags: bool
) -> st.SearchStrategy[Any]:
    """Values of one field at `version`: its kind, and None where it is nullable."""
    if spec.kind == "array":
        if spec.struct is not None:
            element = struct_strategy(spec.struct, version, flexible, unknown_tags)
        else:
            assert spec.element is not None
            element = primitive_strategy(spec.element)
        value: st.SearchStrategy[Any] = st.lists(element, max_size=MAX_ITEMS)
    elif spec.kind == "struct":
        assert spec.struct is not None
        value = struct_strategy(spec.struct, version, flexible, unknown_tags)
    else:
        value = primitive_strategy(spec.kind)
    if version in spec.nullable:
        value = st.none() | value
    return value


@functools.cache
def primitive_strategy(kind: str) -> st.SearchStrategy[Any]:
    if kind in INTEGER_RANGES:
        low, high = INTEGER_RANGES[kind]
        return st.integers(low, high)
    if kind == "bool":
        return st.booleans()
    if kind == "float64":
        return st.floats(allow_nan=False)
    if kind == "uuid":
        return st.just(uuid.UUID(int=0)) | st.uuids()
    if kind == "string":
        return st.text(max_size=MAX_TEXT)
    if kind in ("bytes", "records"):
        return st.binary(max_size=MAX_TEXT)
    raise AssertionError(f"no strategy for kind {kind!r}")
