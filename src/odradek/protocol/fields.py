"""The schema language's vocabulary: versions, field specifiers and structs.

`schema.py` is what message modules import; this is the part of it below the compiler and the codec
(`odradek.protocol.compiler` reads field specifiers and structs to write a message's encode and decode
functions), so that `schema.Message` can call the codec while nothing the codec imports calls back up.
As Kafka's `protocol.types` (Field, Schema, Struct) below its generated message classes.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar, Final

#: Highest version number we ever see; "N+" means N..OPEN_END.
OPEN_END: Final = 0x7FFF

ZERO_UUID: Final = uuid.UUID(int=0)

PRIMITIVE_KINDS: Final = frozenset(
    {
        "int8",
        "int16",
        "int32",
        "int64",
        "uint16",
        "uint32",
        "float64",
        "bool",
        "uuid",
        "string",
        "bytes",
        "records",
    }
)


@dataclass(frozen=True, slots=True)
class Versions:
    """An inclusive range of versions; empty when low > high."""

    low: int
    high: int

    @classmethod
    def parse(cls, text: str | None) -> Versions:
        if text is None or text == "none":
            return NO_VERSIONS
        text = text.strip()
        if text.endswith("+"):
            return cls(int(text[:-1]), OPEN_END)
        if "-" in text:
            low, high = text.split("-", 1)
            return cls(int(low), int(high))
        return cls(int(text), int(text))

    def __contains__(self, version: object) -> bool:
        return isinstance(version, int) and self.low <= version <= self.high

    @property
    def empty(self) -> bool:
        return self.low > self.high

    def __str__(self) -> str:
        if self.empty:
            return "none"
        if self.high == OPEN_END:
            return f"{self.low}+"
        if self.low == self.high:
            return str(self.low)
        return f"{self.low}-{self.high}"


NO_VERSIONS: Final = Versions(1, 0)
ALL_VERSIONS: Final = Versions(0, OPEN_END)


_NO_DEFAULT: Any = object()


@dataclass(eq=False)
class FieldSpec:
    """One field of a struct: its wire type, the versions it exists in, nullability, tag, default."""

    kind: str  # a primitive kind, "array" or "struct"
    versions: Versions
    nullable: Versions = NO_VERSIONS
    tag: int | None = None
    tagged: Versions = NO_VERSIONS
    explicit_default: Any = _NO_DEFAULT
    element: str | None = None  # primitive kind of an array's elements
    struct: type[Struct] | None = None  # struct of a struct field or an array of structs
    flexible: Versions | None = None  # overrides the message's flexible versions (RequestHeader.client_id)
    ignorable: bool = False
    name: str = ""  # set when the owning class is created
    order: int = field(default=0)

    @property
    def has_explicit_default(self) -> bool:
        return self.explicit_default is not _NO_DEFAULT

    def present_in(self, version: int) -> bool:
        return version in self.versions

    def is_tagged_in(self, version: int) -> bool:
        return self.tag is not None and version in self.tagged

    @property
    def made_on_first_read(self) -> bool:
        """A struct field whose default is a new struct: decoders and `__init__` leave None in its slot
        and the first read makes the default. Most such fields are tagged and absent from the wire, and
        making three default structs for every Fetch partition cost a fifth of decoding the response.
        Not for a nullable struct: there None is a value."""
        return self.kind == "struct" and self.explicit_default is _NO_DEFAULT and self.nullable.empty

    @property
    def slot(self) -> str:
        """The attribute that holds the value: the field's name, or a private slot behind a property."""
        return f"_{self.name}_or_none" if self.made_on_first_read else self.name

    def make_default_factory(self) -> tuple[Any, Callable[[], Any] | None]:
        """(constant default, factory) — exactly one is meaningful: factory is not None for mutable values."""
        if self.explicit_default is not _NO_DEFAULT:
            value = self.explicit_default
            if value is None:
                return None, None
            if self.kind == "uuid" and isinstance(value, str):
                return uuid.UUID(value) if value else ZERO_UUID, None
            return value, None
        if self.kind == "array":
            return None, list
        if self.kind == "struct":
            struct = self.struct
            assert struct is not None
            return None, struct
        return _ZERO_VALUES[self.kind], None


_ZERO_VALUES: Final[dict[str, Any]] = {
    "int8": 0,
    "int16": 0,
    "int32": 0,
    "int64": 0,
    "uint16": 0,
    "uint32": 0,
    "float64": 0.0,
    "bool": False,
    "uuid": ZERO_UUID,
    "string": "",
    "bytes": b"",
    "records": None,
}


def _spec(
    kind: str,
    versions: str = "0+",
    *,
    nullable: str | None = None,
    tag: int | None = None,
    tagged: str | None = None,
    default: Any = _NO_DEFAULT,
    element: str | None = None,
    struct: type[Struct] | None = None,
    flexible: str | None = None,
    ignorable: bool = False,
) -> Any:
    # Returns Any so that `name: int = Int32()` type-checks: the class machinery replaces it.
    return FieldSpec(
        kind=kind,
        versions=Versions.parse(versions),
        nullable=Versions.parse(nullable),
        tag=tag,
        tagged=_tagged_versions(versions, tag, tagged),
        explicit_default=default,
        element=element,
        struct=struct,
        flexible=Versions.parse(flexible) if flexible is not None else None,
        ignorable=ignorable,
    )


def _tagged_versions(versions: str, tag: int | None, tagged: str | None) -> Versions:
    if tagged is not None:
        return Versions.parse(tagged)
    return Versions.parse(versions) if tag is not None else NO_VERSIONS


def _primitive(kind: str) -> Callable[..., Any]:
    def specifier(versions: str = "0+", **options: Any) -> Any:
        return _spec(kind, versions, **options)

    specifier.__name__ = kind
    return specifier


Int8 = _primitive("int8")
Int16 = _primitive("int16")
Int32 = _primitive("int32")
Int64 = _primitive("int64")
UInt16 = _primitive("uint16")
UInt32 = _primitive("uint32")
Float64 = _primitive("float64")
Bool = _primitive("bool")
Uuid = _primitive("uuid")
String = _primitive("string")
Bytes = _primitive("bytes")
Records = _primitive("records")


def Array(element: str | type[Struct], versions: str = "0+", **options: Any) -> Any:
    """An array of a primitive kind ("int32", "string", ...) or of a Struct class."""
    if isinstance(element, str):
        if element not in PRIMITIVE_KINDS:
            raise ValueError(f"unknown array element kind {element!r}")
        return _spec("array", versions, element=element, **options)
    return _spec("array", versions, struct=element, **options)


def Nested(struct: type[Struct], versions: str = "0+", **options: Any) -> Any:
    """A single struct-valued field."""
    return _spec("struct", versions, struct=struct, **options)


_MISSING: Any = object()


def _make_init(cls: type, fields: list[FieldSpec]) -> Callable[..., None]:
    """A keyword-only __init__ with each field's default; generated so construction stays cheap."""
    namespace: dict[str, Any] = {"_MISSING": _MISSING}
    params = []
    body = []
    for spec in fields:
        constant, factory = spec.make_default_factory()
        if spec.made_on_first_read:
            params.append(f"{spec.name}=None")
            body.append(f"    self.{spec.slot} = {spec.name}")
        elif factory is None:
            namespace[f"_d_{spec.name}"] = constant
            params.append(f"{spec.name}=_d_{spec.name}")
            body.append(f"    self.{spec.name} = {spec.name}")
        else:
            namespace[f"_f_{spec.name}"] = factory
            params.append(f"{spec.name}=_MISSING")
            body.append(
                f"    self.{spec.name} = _f_{spec.name}() if {spec.name} is _MISSING else {spec.name}"
            )
    body.append("    self.unknown_tagged_fields = None")
    signature = ", ".join(["self", "*", *params]) if params else "self"
    source = f"def __init__({signature}):\n" + "\n".join(body) + "\n"
    exec(source, namespace)
    init: Callable[..., None] = namespace["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    return init


def _made_on_first_read(spec: FieldSpec) -> property:
    """The property of a struct field whose slot holds None until the field is first read."""
    namespace: dict[str, Any] = {"make_default": spec.struct}
    slot = spec.slot
    source = (
        f"def get(self):\n    value = self.{slot}\n    if value is None:\n"
        f"        value = self.{slot} = make_default()\n    return value\n\n"
        f"def set(self, value):\n    self.{slot} = value\n"
    )
    exec(source, namespace)
    return property(namespace["get"], namespace["set"])


class StructMeta(type):
    """Collects the field specifiers of a Struct class body, in order, and gives the class slots."""

    def __new__(
        mcs, name: str, bases: tuple[type, ...], namespace: dict[str, Any], **kwargs: Any
    ) -> StructMeta:
        fields: list[FieldSpec] = []
        for attr, value in list(namespace.items()):
            if isinstance(value, FieldSpec):
                value.name = attr
                value.order = len(fields)
                fields.append(value)
                del namespace[attr]
        namespace["__slots__"] = (*(f.slot for f in fields), *namespace.get("__slots__", ()))
        for spec in fields:
            if spec.made_on_first_read:
                namespace[spec.name] = _made_on_first_read(spec)
        cls = super().__new__(mcs, name, bases, namespace, **kwargs)
        cls.FIELDS = tuple(fields)  # type: ignore[attr-defined]
        cls.__init__ = _make_init(cls, fields)  # type: ignore[misc]
        return cls

    def __init__(cls, name: str, bases: tuple[type, ...], namespace: dict[str, Any], **kwargs: Any) -> None:
        super().__init__(name, bases, namespace)


class Struct(metaclass=StructMeta):
    """A decoded (or to-be-encoded) structure; attributes are its fields, in Kafka's names."""

    __slots__ = ("unknown_tagged_fields",)
    FIELDS: ClassVar[tuple[FieldSpec, ...]] = ()

    #: Tagged fields this codec does not know, kept as raw bytes by tag so they re-encode unchanged.
    unknown_tagged_fields: dict[int, bytes] | None

    def __init__(self, **values: Any) -> None:  # replaced per class by StructMeta
        self.unknown_tagged_fields = None

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return all(getattr(self, f.name) == getattr(other, f.name) for f in self.FIELDS) and (
            (self.unknown_tagged_fields or None) == (other.unknown_tagged_fields or None)
        )

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        inner = ", ".join(f"{f.name}={getattr(self, f.name)!r}" for f in self.FIELDS)
        return f"{type(self).__name__}({inner})"

    def to_dict(self) -> dict[str, Any]:
        """Plain nested dicts and lists, for logging and tests."""
        return {f.name: _plain(getattr(self, f.name)) for f in self.FIELDS}


def _plain(value: Any) -> Any:
    if isinstance(value, Struct):
        return value.to_dict()
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


class VersionedStruct(Struct):
    """A struct with versions of its own: the top-level classes the codec compiles (`schema.Message`)."""

    __slots__ = ()
    API_KEY: ClassVar[int] = -1
    VERSIONS: ClassVar[Versions] = NO_VERSIONS
    FLEXIBLE: ClassVar[Versions] = NO_VERSIONS
    #: Versions Kafka marks as still unstable (not advertised to clients).
    UNSTABLE: ClassVar[Versions] = NO_VERSIONS
    KIND: ClassVar[str] = "data"

    def __init_subclass__(
        cls,
        *,
        api_key: int | None = None,
        versions: str | None = None,
        flexible: str | None = None,
        unstable: str | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init_subclass__(**kwargs)
        if api_key is not None:
            cls.API_KEY = api_key
        if versions is not None:
            cls.VERSIONS = Versions.parse(versions)
        if flexible is not None:
            cls.FLEXIBLE = Versions.parse(flexible)
        if unstable is not None:
            cls.UNSTABLE = Versions.parse(unstable)
