"""kafka-python 3.0.12's protocol classes as an independent oracle for our codec (tests only).

kafka-python builds its classes from its own copy of Kafka's JSON files. Its field names are mostly ours
(both snake_case Kafka's names) but it renames a few (e.g. `authorized_operations` as a set-valued
"bitfield"), so values are converted field by field *by position* at a version: the regular fields in
wire order, the tagged fields by tag. Representations that differ are mapped on the way:

- a zero UUID is `None` in kafka-python and `UUID(int=0)` in odradek;
- a 32-bit authorized-operations field is a set of bit numbers in kafka-python (`None` for
  "not provided", i.e. only bit 31), an int32 in odradek;
- a tagged struct left at its default is `None` in kafka-python and a default-valued struct in odradek.
"""

from __future__ import annotations

import io
import uuid
from typing import Any

from kafka.protocol import sasl
from kafka.protocol.admin import acl, client_quotas, cluster, configs, groups, topics, transactions, users
from kafka.protocol.api_data import ApiData
from kafka.protocol.api_header import RequestHeader as KafkaRequestHeader
from kafka.protocol.api_header import ResponseHeader as KafkaResponseHeader
from kafka.protocol.api_message import ApiMessage
from kafka.protocol.consumer import fetch, group, offsets
from kafka.protocol.consumer import metadata as consumer_metadata
from kafka.protocol.metadata import api_versions, find_coordinator, metadata
from kafka.protocol.producer import produce, transaction
from kafka.protocol.schemas.fields.array import ArrayField
from kafka.protocol.schemas.fields.codecs import BitField
from kafka.protocol.schemas.fields.simple import SimpleField
from kafka.protocol.schemas.fields.struct import StructField
from kafka.protocol.schemas.fields.struct_array import StructArrayField

from odradek.protocol.messages import OTHER_SCHEMAS, REQUESTS, RESPONSES
from odradek.protocol.schema import FieldSpec, Message, Struct

ZERO_UUID = uuid.UUID(int=0)

_MODULES = (
    acl,
    client_quotas,
    cluster,
    configs,
    groups,
    topics,
    transactions,
    users,
    fetch,
    group,
    offsets,
    api_versions,
    find_coordinator,
    metadata,
    produce,
    transaction,
    sasl,
)


def _kafka_python_messages() -> dict[tuple[str, int], type[ApiMessage]]:
    """kafka-python's request and response classes by (kind, api key)."""
    found: dict[tuple[str, int], type[ApiMessage]] = {}
    for module in _MODULES:
        for value in vars(module).values():
            if isinstance(value, type) and issubclass(value, ApiMessage) and value is not ApiMessage:
                found[(value.type, value.API_KEY)] = value
    return found


KAFKA_PYTHON_MESSAGES = _kafka_python_messages()
KAFKA_PYTHON_DATA: dict[str, type[ApiData]] = {
    "ConsumerProtocolSubscription": consumer_metadata.ConsumerProtocolSubscription,
    "ConsumerProtocolAssignment": consumer_metadata.ConsumerProtocolAssignment,
}


def kafka_python_class(ours: type[Message]) -> type[Any] | None:
    """kafka-python's class for one of ours, or None when kafka-python lacks the message."""
    if ours.KIND in ("request", "response"):
        return KAFKA_PYTHON_MESSAGES.get((ours.KIND, ours.API_KEY))
    return KAFKA_PYTHON_DATA.get(ours.__name__)


def kafka_python_versions(theirs: type[Any]) -> range:
    """The versions kafka-python's JSON declares valid (it accepts lower ones but lacks their fields)."""
    low, high = theirs._valid_versions
    return range(low, high + 1)


def shared_cases() -> list[tuple[type[Message], int]]:
    """Every (message, version) that both codecs define."""
    cases = []
    for registry in (REQUESTS, RESPONSES, OTHER_SCHEMAS):
        for ours in registry.values():
            theirs = kafka_python_class(ours)
            if theirs is None:
                continue
            for version in kafka_python_versions(theirs):
                if version in ours.VERSIONS:
                    cases.append((ours, version))
    return cases


def missing_from_kafka_python() -> list[str]:
    """Our requests/responses kafka-python does not define at all."""
    return sorted(
        ours.__name__
        for registry in (REQUESTS, RESPONSES)
        for ours in registry.values()
        if kafka_python_class(ours) is None
    )


# ----- encoding and decoding with kafka-python ------------------------------------------------------


def encode_with_kafka_python(ours_cls: type[Message], value: Any, version: int) -> bytes:
    theirs = kafka_python_class(ours_cls)
    assert theirs is not None
    if issubclass(theirs, ApiData):
        return bytes(value.encode(version=version, header=False))
    if not hasattr(value, "_header"):
        # A decoded kafka-python message is built without __init__ and lacks the slot its
        # encode() reads; give it the value a constructed one has.
        value._header = None
    return bytes(value.encode(version=version))


def decode_with_kafka_python(ours_cls: type[Message], data: bytes, version: int) -> Any:
    theirs = kafka_python_class(ours_cls)
    assert theirs is not None
    if issubclass(theirs, ApiData):
        return theirs.decode(data, version=version, header=False)
    return theirs.decode(data, version=version)


# ----- converting values between the two object models ----------------------------------------------


def _field_pairs(ours: type[Struct], theirs: StructField, version: int) -> list[tuple[FieldSpec, Any]]:
    """Our fields paired with kafka-python's at `version`: regular ones by position, tagged ones by tag."""
    present = [spec for spec in ours.FIELDS if spec.present_in(version)]
    regular = [spec for spec in present if not spec.is_tagged_in(version)]
    tagged = [spec for spec in present if spec.is_tagged_in(version)]
    their_regular = theirs.untagged_fields(version)
    their_tagged = theirs.tagged_fields(version)._tags
    if len(regular) != len(their_regular) or {s.tag for s in tagged} != set(their_tagged):
        raise AssertionError(
            f"{ours.__name__} v{version}: fields {[s.name for s in regular]} / tags "
            f"{sorted(s.tag or 0 for s in tagged)} differ from kafka-python's "
            f"{[f.name for f in their_regular]} / {sorted(their_tagged)}"
        )
    pairs = list(zip(regular, their_regular, strict=True))
    pairs += [(spec, their_tagged[spec.tag]) for spec in tagged]
    return pairs


def to_kafka_python(message: Message, version: int) -> Any:
    """kafka-python's object for one of our messages (no unknown tagged fields: it cannot write them)."""
    theirs = kafka_python_class(type(message))
    assert theirs is not None
    return theirs(version=version, **_struct_values(message, theirs._struct, version))


def _struct_values(struct: Struct, theirs: StructField, version: int) -> dict[str, Any]:
    if struct.unknown_tagged_fields:
        raise ValueError("kafka-python does not re-encode unknown tagged fields")
    values = {}
    for spec, field in _field_pairs(type(struct), theirs, version):
        values[field.name] = _to_theirs(spec, field, getattr(struct, spec.name), version)
    return values


def _to_theirs(spec: FieldSpec, field: Any, value: Any, version: int) -> Any:
    if value is None:
        return None
    if spec.kind == "struct":
        assert isinstance(field, StructField)
        if spec.is_tagged_in(version) and value == _default(spec):
            return None
        return field.data_class(**_struct_values(value, field, version))
    if spec.kind == "array":
        assert isinstance(field, ArrayField)
        if isinstance(field, StructArrayField):
            inner = field.array_of
            return [inner.data_class(**_struct_values(item, inner, version)) for item in value]
        return [_primitive_to_theirs(spec.element or "", field.array_of, item) for item in value]
    return _primitive_to_theirs(spec.kind, field, value)


def _primitive_to_theirs(kind: str, field: SimpleField, value: Any) -> Any:
    if kind == "uuid":
        return None if value == ZERO_UUID else value
    if field.type_str == "bitfield":
        bits = BitField.from_32_bit_field(value & 0xFFFFFFFF)
        return None if bits == {31} else bits
    return value


def from_kafka_python(ours_cls: type[Message], value: Any, version: int) -> Message:
    """Our message for a kafka-python object (kafka-python's unknown tagged fields are dropped)."""
    theirs = kafka_python_class(ours_cls)
    assert theirs is not None
    message: Message = _from_struct(ours_cls, theirs._struct, value, version)
    return message


def _from_struct(ours: type[Struct], theirs: StructField, value: Any, version: int) -> Any:
    values = {}
    for spec, field in _field_pairs(ours, theirs, version):
        values[spec.name] = _from_theirs(spec, field, getattr(value, field.name), version)
    return ours(**values)


def _from_theirs(spec: FieldSpec, field: Any, value: Any, version: int) -> Any:
    if spec.kind == "uuid":
        return ZERO_UUID if value is None else value
    if value is None:
        if spec.kind == "struct" and spec.is_tagged_in(version):
            return _default(spec)
        if field.type_str == "bitfield":
            return -(2**31)
        return None
    if spec.kind == "struct":
        assert spec.struct is not None
        return _from_struct(spec.struct, field, value, version)
    if spec.kind == "array":
        if isinstance(field, StructArrayField):
            assert spec.struct is not None
            return [_from_struct(spec.struct, field.array_of, item, version) for item in value]
        if spec.element == "uuid":
            return [ZERO_UUID if item is None else item for item in value]
        return list(value)
    if field.type_str == "bitfield":
        bits = BitField.to_32_bit_field(value)
        return bits - 2**32 if bits >= 2**31 else bits
    return value


def _default(spec: FieldSpec) -> Any:
    constant, factory = spec.make_default_factory()
    return constant if factory is None else factory()


# ----- headers -------------------------------------------------------------------------------------


def encode_header_with_kafka_python(kind: str, values: dict[str, Any], flexible: bool) -> bytes:
    cls = KafkaRequestHeader if kind == "request" else KafkaResponseHeader
    return bytes(cls(**values).encode(flexible=flexible))


def decode_header_with_kafka_python(kind: str, data: bytes, flexible: bool) -> Any:
    cls = KafkaRequestHeader if kind == "request" else KafkaResponseHeader
    return cls.decode(io.BytesIO(data), flexible=flexible)
