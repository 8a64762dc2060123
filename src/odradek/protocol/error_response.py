"""The error response of any API, built from its request: what Kafka's `getErrorResponse` gives.

When a request cannot be handled (a bug, a failing disk), Kafka answers it with one error code in the
response's shape: every topic, partition, group or resource the request names comes back carrying the
code, and so does the response's top-level error code. Kafka writes that by hand for each API; here it is
derived from the schemas. A response array is filled by mirroring the request array that names the same
things (matched by their identity fields: topic name or id, partition index, group id, resource...),
copying those identity fields and setting every error code field; anything else keeps its default.
A request array that only groups what it names (AlterReplicaLogDirs' destination directories) is looked
through: the response answers each of its inner elements.
"""

from __future__ import annotations

from typing import Any, Final

from odradek.protocol.messages import RESPONSES
from odradek.protocol.schema import FieldSpec, Request, Response, Struct

#: Fields telling which thing a response element is about, and the request fields that give their value
#: (Fetch's `partition` answers as `partition_index`, a SCRAM `name` as `user`).
_IDENTITY_SOURCES: Final[dict[str, tuple[str, ...]]] = {
    "name": ("name", "topic", "topic_name"),
    "topic": ("topic", "name", "topic_name"),
    "topic_name": ("topic_name", "name", "topic"),
    "topic_id": ("topic_id",),
    "partition_index": ("partition_index", "partition", "index", "partition_id"),
    "partition": ("partition", "partition_index", "index", "partition_id"),
    "index": ("index", "partition_index", "partition"),
    "partition_id": ("partition_id", "partition_index", "partition"),
    "group_id": ("group_id",),
    "transactional_id": ("transactional_id",),
    "producer_id": ("producer_id",),
    "resource_type": ("resource_type",),
    "resource_name": ("resource_name",),
    "member_id": ("member_id",),
    "group_instance_id": ("group_instance_id",),
    "key": ("key",),
    "user": ("user", "name"),
    "entity_type": ("entity_type",),
    "entity_name": ("entity_name",),
}
#: Request arrays of plain values that name things (group ids, topic names, partition indexes, ...); other
#: plain arrays (ListGroups' states filter, DescribeConfigs' configuration keys) name nothing to answer for.
_NAMING_VALUE_ARRAYS: Final = frozenset(
    {
        "groups",
        "groups_names",
        "group_ids",
        "topic_names",
        "partition_indexes",
        "partitions",
        "coordinator_keys",
        "transactional_ids",
    }
)
#: Results answered one per request element, in order, with nothing naming them (CreateAcls, DeleteAcls;
#: otherwise the request array of the same name: AlterClientQuotas' entries).
_POSITIONAL: Final = {"results": "creations", "filter_results": "filters"}
_ERROR_CODE_FIELDS: Final = frozenset({"error_code", "partition_error_code"})


def error_response(request: Request, version: int, error_code: int) -> Response:
    """The response to `request` (decoded at `version`) that answers everything in it with `error_code`."""
    response_class = RESPONSES[request.API_KEY]
    response = _mirror(response_class, request, version, error_code, is_element=False)
    assert isinstance(response, Response)
    return response


def _mirror(
    struct: type[Struct], source: Struct | None, version: int, error_code: int, *, is_element: bool = True
) -> Struct:
    """A `struct` answering `source`: error codes set, arrays mirrored; an element (not the response
    itself, whose member or producer id must stay unknown) copies its identity fields from `source`."""
    made = struct()
    source_fields = _present(type(source), version) if source is not None else ()
    for spec in _present(struct, version):
        if spec.name in _ERROR_CODE_FIELDS:
            setattr(made, spec.name, error_code)
        elif spec.kind == "array" and spec.struct is not None:
            elements = _mirrored_elements(spec, source, source_fields, version, error_code)
            if elements is not None:
                setattr(made, spec.name, elements)
        elif source is not None and is_element and spec.name in _IDENTITY_SOURCES:
            match = _same_identity(spec, source_fields)
            if match is not None:
                setattr(made, spec.name, getattr(source, match.name))
        elif spec.kind == "records" and version not in spec.nullable and getattr(made, spec.name) is None:
            setattr(made, spec.name, b"")  # no records, where the version cannot say null (ShareFetch v1+)
    return made


def _mirrored_elements(
    spec: FieldSpec,
    source: Struct | None,
    source_fields: tuple[FieldSpec, ...],
    version: int,
    error_code: int,
) -> list[Struct] | None:
    """One element per element of the request array naming the same things (None when none does)."""
    element = spec.struct
    assert element is not None
    if source is None or not (_carries_error_code(element, version) or _only_names(element, version)):
        return None
    origin = _source_array(spec, source_fields, version)
    if origin is None:
        return _mirrored_from_nested(element, spec, source, source_fields, version, error_code)
    values: list[Any] | None = getattr(source, origin.name)
    if values is None:
        return []
    if origin.struct is not None:
        return [_mirror(element, value, version, error_code) for value in values]
    target = _identity_field_of_kind(element, origin.element, version)
    assert target is not None
    elements = []
    for value in values:
        made = _mirror(element, None, version, error_code)
        setattr(made, target.name, value)
        elements.append(made)
    return elements


def _mirrored_from_nested(
    element: type[Struct],
    spec: FieldSpec,
    source: Struct,
    source_fields: tuple[FieldSpec, ...],
    version: int,
    error_code: int,
) -> list[Struct] | None:
    """The elements answering a request array one level down, its outer elements only grouping what
    it names (AlterReplicaLogDirs' topics under each destination directory): one per inner element, in
    order, as Kafka's error response lists them."""
    for outer in source_fields:
        if outer.kind != "array" or outer.struct is None:
            continue
        inner = _source_array(spec, _present(outer.struct, version), version)
        if inner is None or inner.struct is None:
            continue
        return [
            _mirror(element, value, version, error_code)
            for group in getattr(source, outer.name) or []
            for value in getattr(group, inner.name) or []
        ]
    return None


def _source_array(spec: FieldSpec, source_fields: tuple[FieldSpec, ...], version: int) -> FieldSpec | None:
    """The request array whose elements name what the response array's elements are about: the first
    array of structs sharing most identity fields, else a naming array of plain values of an identity
    field's kind, else the one answered by position."""
    element = spec.struct
    assert element is not None
    wanted = [field for field in _present(element, version) if field.name in _IDENTITY_SOURCES]
    best: FieldSpec | None = None
    best_shared = 0
    for candidate in source_fields:
        if candidate.kind != "array" or candidate.struct is None:
            continue
        offered = _present(candidate.struct, version)
        shared = sum(1 for field in wanted if _same_identity(field, offered) is not None)
        if shared > best_shared:
            best, best_shared = candidate, shared
    if best is not None:
        return best
    for candidate in source_fields:
        naming = candidate.name in _NAMING_VALUE_ARRAYS and candidate.element is not None
        if naming and _identity_field_of_kind(element, candidate.element, version) is not None:
            return candidate
    positional = _POSITIONAL.get(spec.name, spec.name)  # else the request array of the same name
    for candidate in source_fields:
        if candidate.name == positional and candidate.kind == "array" and candidate.struct is not None:
            return candidate
    return None


def _carries_error_code(struct: type[Struct], version: int) -> bool:
    """Whether elements of `struct` answer for something: they (or elements within) have an error code."""
    for spec in _present(struct, version):
        if spec.name in _ERROR_CODE_FIELDS:
            return True
        if spec.struct is not None and _carries_error_code(spec.struct, version):
            return True
    return False


def _only_names(struct: type[Struct], version: int) -> bool:
    """Whether `struct` is nothing but identity fields: the name of what an answer is about
    (AlterClientQuotas' entity), echoed back with the error."""
    fields = _present(struct, version)
    return bool(fields) and all(spec.name in _IDENTITY_SOURCES for spec in fields)


def _identity_field_of_kind(element: type[Struct], kind: str | None, version: int) -> FieldSpec | None:
    for spec in _present(element, version):
        if spec.name in _IDENTITY_SOURCES and spec.kind == kind:
            return spec
    return None


def _same_identity(spec: FieldSpec, source_fields: tuple[FieldSpec, ...]) -> FieldSpec | None:
    by_name = {field.name: field for field in source_fields}
    for name in _IDENTITY_SOURCES[spec.name]:
        candidate = by_name.get(name)
        if candidate is not None and candidate.kind == spec.kind:
            return candidate
    return None


def _present(struct: type[Struct], version: int) -> tuple[FieldSpec, ...]:
    return tuple(spec for spec in struct.FIELDS if spec.present_in(version))
