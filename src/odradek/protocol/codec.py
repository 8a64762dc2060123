"""Compiles schema classes into flat encode and decode functions, one pair per (struct, version).

The generated code reads fixed-width runs of fields with one precompiled `struct` call, lengths and
counts inline, and calls a sibling function per nested struct. Bad input surfaces as struct.error,
IndexError or UnicodeDecodeError inside the generated code; `decode_body` turns all of those into
CodecError at the edge, so the hot path pays for no checks that Python already makes.
Allocation bombs are the one thing Python does not check: every count and length is compared with
the bytes that remain before anything is allocated.
"""

from __future__ import annotations

import functools
import struct
import uuid
from collections.abc import Callable
from typing import Any, Final

from odradek.protocol.codec_error import CodecError, TruncatedError
from odradek.protocol.schema import FieldSpec, Message, Struct, Versions
from odradek.protocol.varint import read_uvarint, uvarint_bytes

Decoder = Callable[[bytes | bytearray, int], tuple[Any, int]]
Encoder = Callable[[Any, bytearray], None]

_FIXED_FORMATS: Final[dict[str, str]] = {
    "int8": "b",
    "int16": "h",
    "int32": "i",
    "int64": "q",
    "uint16": "H",
    "uint32": "I",
    "float64": "d",
    "bool": "?",
}
_FIXED_SIZES: Final[dict[str, int]] = {k: struct.calcsize(">" + v) for k, v in _FIXED_FORMATS.items()}

_DECODE_ERRORS: Final = (struct.error, IndexError, UnicodeDecodeError, ValueError, TypeError, OverflowError)
_ENCODE_ERRORS: Final = (
    struct.error,
    AttributeError,
    TypeError,
    ValueError,
    UnicodeEncodeError,
    OverflowError,
)

#: Arrays of fixed-width values shorter than this use a precompiled struct.Struct per length.
_PRECOMPILED_RUNS: Final = 32
#: Nested structs this many levels down are decoded and encoded by a call, shallower ones inline.
#: Each level may open a loop, and Python allows 20 nested blocks in one function.
_INLINE_DEPTH: Final = 4

_decoders: dict[tuple[type, int], Decoder] = {}
_encoders: dict[tuple[type, int], Encoder] = {}
_body_encoders: dict[tuple[type, int], Callable[[Any], bytes]] = {}
_raw_encoders: dict[tuple[type, int], Encoder] = {}


def decode_body(
    cls: type[Message],
    data: bytes | bytearray | memoryview,
    version: int,
    *,
    start: int = 0,
    allow_trailing: bool = False,
) -> Any:
    """Decode a message body that must span all of `data` from `start` (unless `allow_trailing`).

    bytes and bytearray are read in place; a bytearray's records fields come back as writable views of
    it (Produce appends them without a copy), other fields as str/bytes either way."""
    if data.__class__ is not bytes and data.__class__ is not bytearray:
        data = bytes(data)
    decoder = _decoders.get((cls, version)) or decoder_for(cls, version)
    try:
        message, end = decoder(data, start)
    except CodecError:
        raise
    except _DECODE_ERRORS as error:
        raise _as_codec_error(error, cls, version) from error
    if end != len(data) and not allow_trailing:
        raise CodecError(f"{cls.__name__} v{version}: {len(data) - end} unexpected trailing bytes")
    return message


def decode_from(cls: type[Message], data: bytes | bytearray, pos: int, version: int) -> tuple[Any, int]:
    """Decode one message starting at `pos`; returns it and the position after it."""
    try:
        return decoder_for(cls, version)(data, pos)
    except CodecError:
        raise
    except _DECODE_ERRORS as error:
        raise _as_codec_error(error, cls, version) from error


def _as_codec_error(error: Exception, cls: type, version: int) -> CodecError:
    if isinstance(error, struct.error | IndexError):
        return TruncatedError(f"{cls.__name__} v{version}: message ends early ({error})")
    return CodecError(f"{cls.__name__} v{version}: {error}")


def decoder_for(cls: type[Message], version: int) -> Decoder:
    """The compiled decoder of a top-level message at `version` (compiled once, then cached)."""
    key = (cls, version)
    decoder = _decoders.get(key)
    if decoder is None:
        _check_version(cls, version)
        decoder = _Compiler(version, cls.FLEXIBLE).decoder(cls)
        _decoders[key] = decoder
    return decoder


def encoder_for(cls: type[Message], version: int) -> Callable[[Any], bytes]:
    """A function that encodes a message of `cls` at `version` to bytes (compiled once, then cached)."""
    key = (cls, version)
    encode = _body_encoders.get(key)
    if encode is None:
        raw = _raw_encoder(cls, version)

        def encode(message: Any, _raw: Encoder = raw) -> bytes:
            out = bytearray()
            try:
                _raw(message, out)
            except CodecError:
                raise
            except _ENCODE_ERRORS as error:
                raise CodecError(f"{cls.__name__} v{version}: cannot encode: {error}") from error
            return bytes(out)

        _body_encoders[key] = encode
    return encode


def encode_into_for(cls: type[Message], version: int) -> Encoder:
    """A function that appends the encoding of a message of `cls` at `version` to a bytearray."""
    key = (cls, version)
    encoder = _encoders.get(key)
    if encoder is None:
        raw = _raw_encoder(cls, version)

        def encoder(message: Any, out: bytearray, _raw: Encoder = raw) -> None:
            try:
                _raw(message, out)
            except CodecError:
                raise
            except _ENCODE_ERRORS as error:
                raise CodecError(f"{cls.__name__} v{version}: cannot encode: {error}") from error

        _encoders[key] = encoder
    return encoder


def _raw_encoder(cls: type[Message], version: int) -> Encoder:
    """The compiled encoder itself, which lets Python's own exceptions through."""
    key = (cls, version)
    raw = _raw_encoders.get(key)
    if raw is None:
        _check_version(cls, version)
        raw = _Compiler(version, cls.FLEXIBLE).encoder(cls)
        _raw_encoders[key] = raw
    return raw


def _check_version(cls: type[Message], version: int) -> None:
    if version not in cls.VERSIONS:
        raise CodecError(f"{cls.__name__} has no version {version} (versions {cls.VERSIONS})")


class _Compiler:
    """Generates the source of the functions for one version of one message and its nested structs."""

    def __init__(self, version: int, flexible: Versions) -> None:
        self.version = version
        self.message_flexible = version in flexible
        self.namespace: dict[str, Any] = {
            "CodecError": CodecError,
            "TruncatedError": TruncatedError,
            "read_uvarint": read_uvarint,
            "uvarint_bytes": uvarint_bytes,
            "UUID": uuid.UUID,
            "new": object.__new__,
            "unpack_from": struct.unpack_from,
            "pack": struct.pack,
        }
        self.sources: list[str] = []
        self.done: dict[tuple[type, str], str] = {}
        self.counter = 0
        self.struct_names: dict[tuple[str, str], str] = {}

    # ----- shared helpers -------------------------------------------------------------------

    def _const(self, prefix: str, value: Any) -> str:
        self.counter += 1
        name = f"_{prefix}{self.counter}"
        self.namespace[name] = value
        return name

    def _struct_name(self, fmt: str, method: str) -> str:
        """The name of a precompiled struct method for `fmt` ("?" and friends are no identifiers)."""
        key = (fmt, method)
        name = self.struct_names.get(key)
        if name is None:
            name = f"_{method}{len(self.struct_names)}"
            self.struct_names[key] = name
            self.namespace[name] = getattr(struct.Struct(">" + fmt), method)
        return name

    def _flexible(self, spec: FieldSpec) -> bool:
        if spec.flexible is not None:
            return self.version in spec.flexible
        return self.message_flexible

    def _finish(self, entry: str) -> Any:
        source = "\n\n".join(self.sources)
        code = compile(source, f"<odradek codec v{self.version}>", "exec")
        exec(code, self.namespace)
        return self.namespace[entry]

    @staticmethod
    def _fields(cls: type[Struct], version: int) -> tuple[list[FieldSpec], list[FieldSpec], list[FieldSpec]]:
        """(regular fields in wire order, tagged fields by tag, fields absent at this version)."""
        regular, tagged, absent = [], [], []
        for spec in cls.FIELDS:
            if not spec.present_in(version):
                absent.append(spec)
            elif spec.is_tagged_in(version):
                tagged.append(spec)
            else:
                regular.append(spec)
        tagged.sort(key=lambda s: s.tag or 0)
        return regular, tagged, absent

    # ----- decoding -------------------------------------------------------------------------

    def decoder(self, cls: type[Struct]) -> Decoder:
        entry = self._decode_struct(cls)
        decoder: Decoder = self._finish(entry)
        return decoder

    def _function_name(self, cls: type[Struct], direction: str) -> tuple[str, bool]:
        """The generated function's name for (struct, direction), and whether it is still to be written."""
        key = (cls, direction)
        if key in self.done:
            return self.done[key], False
        name = f"{direction}_{cls.__name__}_{len(self.done)}"
        self.done[key] = name
        return name, True

    def _decode_struct(self, cls: type[Struct]) -> str:
        name, new = self._function_name(cls, "decode")
        if not new:
            return name
        lines = [f"def {name}(buf, pos):"]
        self._decode_struct_body(cls, "o", lines, "    ", depth=0)
        lines.append("    return o, pos")
        self.sources.append("\n".join(lines))
        return name

    def _decode_struct_body(
        self, cls: type[Struct], obj: str, lines: list[str], indent: str, depth: int
    ) -> None:
        """Lines that decode a `cls` into a new object named `obj`; nested structs up to _INLINE_DEPTH
        levels down are decoded inline, not by a call (a call and its returned tuple cost ~40 ns)."""
        regular, tagged, absent = self._fields(cls, self.version)
        lines.append(f"{indent}{obj} = new({self._const('cls', cls)})")
        run: list[FieldSpec] = []
        for spec in regular:
            if spec.kind in _FIXED_FORMATS:
                run.append(spec)
                continue
            self._flush_fixed_run(run, obj, lines, indent)
            run = []
            self._decode_value(spec, self._flexible(spec), f"{obj}.{spec.slot}", lines, indent, depth + 1)
        self._flush_fixed_run(run, obj, lines, indent)
        for spec in absent + tagged:
            self._assign_default(spec, f"{obj}.{spec.slot}", lines, indent)
        lines.append(f"{indent}{obj}.unknown_tagged_fields = None")
        if self.message_flexible:
            self._decode_tagged_section(tagged, obj, lines, indent)

    def _flush_fixed_run(self, run: list[FieldSpec], obj: str, lines: list[str], indent: str) -> None:
        if not run:
            return
        fmt = "".join(_FIXED_FORMATS[s.kind] for s in run)
        size = sum(_FIXED_SIZES[s.kind] for s in run)
        unpack = self._struct_name(fmt, "unpack_from")
        targets = ", ".join(f"{obj}.{s.name}" for s in run)
        lines.append(f"{indent}{targets}{',' if len(run) == 1 else ''} = {unpack}(buf, pos)")
        lines.append(f"{indent}pos += {size}")

    def _assign_default(self, spec: FieldSpec, target: str, lines: list[str], indent: str) -> None:
        """`target = <the field's default>`. A struct field's slot gets None: its default struct is made
        when the field is first read (see `FieldSpec.made_on_first_read`)."""
        constant, factory = spec.make_default_factory()
        if factory is None:
            lines.append(f"{indent}{target} = {self._const('default', constant)}")
        elif factory is list:
            lines.append(f"{indent}{target} = []")
        else:
            lines.append(f"{indent}{target} = None")

    def _decode_length(self, flexible: bool, target: str, lines: list[str], indent: str, wide: bool) -> None:
        """Read a length or count into `target`: -1 means null."""
        if flexible:
            lines.append(f"{indent}{target} = buf[pos]")
            lines.append(f"{indent}if {target} < 128:")
            lines.append(f"{indent}    pos += 1")
            if wide:  # bytes, records and array counts: two-byte lengths (128..16383) are common
                lines.append(f"{indent}elif buf[pos + 1] < 128:")
                lines.append(f"{indent}    {target} = ({target} & 127) | (buf[pos + 1] << 7)")
                lines.append(f"{indent}    pos += 2")
            lines.append(f"{indent}else:")
            lines.append(f"{indent}    {target}, pos = read_uvarint(buf, pos)")
            lines.append(f"{indent}{target} -= 1")
        else:
            unpack = self._struct_name("i" if wide else "h", "unpack_from")
            lines.append(f"{indent}{target}, = {unpack}(buf, pos)")
            lines.append(f"{indent}pos += {4 if wide else 2}")

    def _null_or_error(self, spec: FieldSpec, target: str, lines: list[str], indent: str, what: str) -> None:
        """After a length of -1 (or below): null where the field is nullable, an error otherwise."""
        if self.version in spec.nullable:
            lines.append(f"{indent}    {target} = None")
        else:
            message = f"{spec.name}: null or negative {what} in a non-nullable field"
            lines.append(f"{indent}    raise CodecError({message!r})")

    def _decode_value(
        self, spec: FieldSpec, flexible: bool, target: str, lines: list[str], indent: str, depth: int
    ) -> None:
        """Lines that decode one value into `target`; `depth` is how deep in inlined structs this is
        (_INLINE_DEPTH or more: nested structs are decoded by a call)."""
        kind = spec.kind
        if kind in _FIXED_FORMATS:
            unpack = self._struct_name(_FIXED_FORMATS[kind], "unpack_from")
            lines.append(f"{indent}{target}, = {unpack}(buf, pos)")
            lines.append(f"{indent}pos += {_FIXED_SIZES[kind]}")
        elif kind == "uuid":
            lines.append(f"{indent}if len(buf) < pos + 16:")
            lines.append(f"{indent}    raise TruncatedError('{spec.name}: uuid ends early')")
            lines.append(f"{indent}{target} = UUID(bytes=bytes(buf[pos:pos + 16]))")
            lines.append(f"{indent}pos += 16")
        elif kind in ("string", "bytes", "records"):
            wide = kind != "string"
            self._decode_length(flexible, "n", lines, indent, wide)
            lines.append(f"{indent}if n < 0:")
            self._null_or_error(spec, target, lines, indent, "length")
            lines.append(f"{indent}else:")
            lines.append(f"{indent}    e = pos + n")
            lines.append(f"{indent}    if e > len(buf):")
            lines.append(
                f"{indent}        raise TruncatedError('{spec.name}: {kind} longer than the bytes left')"
            )
            if kind == "string":
                value = "buf[pos:e].decode()"
            elif kind == "bytes":
                value = "bytes(buf[pos:e])"  # the same object when buf is bytes; a copy from a bytearray
            else:  # records from a bytearray frame stay in it: a writable view, no copy
                value = "buf[pos:e] if buf.__class__ is bytes else memoryview(buf)[pos:e]"
            lines.append(f"{indent}    {target} = {value}")
            lines.append(f"{indent}    pos = e")
        elif kind == "struct":
            assert spec.struct is not None
            if self.version in spec.nullable:
                lines.append(f"{indent}present = buf[pos]")
                lines.append(f"{indent}pos += 1")
                lines.append(f"{indent}if present == 255:")  # int8 -1
                lines.append(f"{indent}    {target} = None")
                lines.append(f"{indent}else:")
                self._decode_nested(spec.struct, target, lines, indent + "    ", depth)
            else:
                self._decode_nested(spec.struct, target, lines, indent, depth)
        elif kind == "array":
            self._decode_array(spec, flexible, target, lines, indent, depth)
        else:
            raise AssertionError(f"unknown kind {kind}")

    def _decode_nested(
        self, cls: type[Struct], target: str, lines: list[str], indent: str, depth: int
    ) -> None:
        if depth >= _INLINE_DEPTH:
            lines.append(f"{indent}{target}, pos = {self._decode_struct(cls)}(buf, pos)")
            return
        obj = f"o{self._variable()}"
        self._decode_struct_body(cls, obj, lines, indent, depth)
        lines.append(f"{indent}{target} = {obj}")

    def _decode_array(
        self, spec: FieldSpec, flexible: bool, target: str, lines: list[str], indent: str, depth: int
    ) -> None:
        count = f"c{len(indent)}"
        self._decode_length(flexible, count, lines, indent, wide=True)
        lines.append(f"{indent}if {count} < 0:")
        self._null_or_error(spec, target, lines, indent, "count")
        # Every element takes at least a byte: a count beyond the bytes left is a lie, not a size to allocate.
        lines.append(f"{indent}elif {count} > len(buf) - pos:")
        lines.append(f"{indent}    raise TruncatedError('{spec.name}: array count beyond the bytes left')")
        lines.append(f"{indent}else:")
        inner = indent + "    "
        element = spec.element
        if element is not None and element in _FIXED_FORMATS:
            fmt = _FIXED_FORMATS[element]
            size = _FIXED_SIZES[element]
            runs = self._const("unpack_runs", _precompiled_runs(fmt, "unpack_from"))
            lines.append(f"{inner}if {count} < {_PRECOMPILED_RUNS}:")
            lines.append(f"{inner}    {target} = list({runs}[{count}](buf, pos))")
            lines.append(f"{inner}else:")
            lines.append(f"{inner}    {target} = list(unpack_from('>%d{fmt}' % {count}, buf, pos))")
            lines.append(f"{inner}pos += {size} * {count}")
            return
        items = f"items{len(indent)}"
        lines.append(f"{inner}{items} = []")
        lines.append(f"{inner}for _ in range({count}):")
        if element is not None:
            element_spec = FieldSpec(kind=element, versions=spec.versions, name=spec.name)
            self._decode_value(element_spec, flexible, "item", lines, inner + "    ", depth)
            lines.append(f"{inner}    {items}.append(item)")
        elif depth >= _INLINE_DEPTH:
            assert spec.struct is not None
            function = self._decode_struct(spec.struct)
            lines.append(f"{inner}    item, pos = {function}(buf, pos)")
            lines.append(f"{inner}    {items}.append(item)")
        else:
            assert spec.struct is not None
            obj = f"o{self._variable()}"
            self._decode_struct_body(spec.struct, obj, lines, inner + "    ", depth)
            lines.append(f"{inner}    {items}.append({obj})")
        lines.append(f"{inner}{target} = {items}")

    def _decode_tagged_section(self, tagged: list[FieldSpec], obj: str, lines: list[str], base: str) -> None:
        add = lines.append
        add(f"{base}tags = buf[pos]")
        add(f"{base}if tags < 128:")
        add(f"{base}    pos += 1")
        add(f"{base}else:")
        add(f"{base}    tags, pos = read_uvarint(buf, pos)")
        add(f"{base}if tags:")
        add(f"{base}    if tags > len(buf) - pos:")
        add(f"{base}        raise TruncatedError('tagged field count beyond the bytes left')")
        add(f"{base}    for _ in range(tags):")
        add(f"{base}        tag, pos = read_uvarint(buf, pos)")
        add(f"{base}        size, pos = read_uvarint(buf, pos)")
        # Not `e`: decoding a string or bytes value uses `e` for its own end.
        add(f"{base}        tag_end = pos + size")
        add(f"{base}        if tag_end > len(buf):")
        add(f"{base}            raise TruncatedError('tagged field longer than the bytes left')")
        keyword = "if"
        for spec in tagged:
            add(f"{base}        {keyword} tag == {spec.tag}:")
            # Present tagged values are rare: decoded by a call (depth _INLINE_DEPTH), to keep this short.
            self._decode_value(spec, True, f"{obj}.{spec.slot}", lines, base + "            ", _INLINE_DEPTH)
            add(f"{base}            if pos != tag_end:")
            add(f"{base}                raise CodecError('tagged field {spec.name}: size does not match')")
            keyword = "elif"
        if tagged:
            add(f"{base}        else:")
            indent = base + "            "
        else:
            indent = base + "        "
        add(f"{indent}if {obj}.unknown_tagged_fields is None:")
        add(f"{indent}    {obj}.unknown_tagged_fields = {{}}")
        add(f"{indent}{obj}.unknown_tagged_fields[tag] = bytes(buf[pos:tag_end])")
        add(f"{indent}pos = tag_end")

    # ----- encoding -------------------------------------------------------------------------

    def encoder(self, cls: type[Struct]) -> Encoder:
        entry = self._encode_struct(cls)
        encoder: Encoder = self._finish(entry)
        return encoder

    def _encode_struct(self, cls: type[Struct]) -> str:
        name, new = self._function_name(cls, "encode")
        if not new:
            return name
        lines = [f"def {name}(o, out):"]
        self._encode_struct_body(cls, "o", lines, "    ", depth=0)
        self.sources.append("\n".join(lines))
        return name

    def _encode_struct_body(
        self, cls: type[Struct], obj: str, lines: list[str], indent: str, depth: int
    ) -> None:
        """Lines that encode the struct `obj`; nested ones inline as in `_decode_struct_body`."""
        regular, tagged, _ = self._fields(cls, self.version)
        start = len(lines)
        run: list[FieldSpec] = []
        for spec in regular:
            if spec.kind in _FIXED_FORMATS:
                run.append(spec)
                continue
            self._flush_fixed_pack(run, obj, lines, indent)
            run = []
            self._encode_value(spec, self._flexible(spec), f"{obj}.{spec.name}", lines, indent, depth + 1)
        self._flush_fixed_pack(run, obj, lines, indent)
        if self.message_flexible:
            self._encode_tagged_section(tagged, obj, lines, indent)
        if len(lines) == start:
            lines.append(f"{indent}pass")

    def _flush_fixed_pack(self, run: list[FieldSpec], obj: str, lines: list[str], indent: str) -> None:
        if not run:
            return
        fmt = "".join(_FIXED_FORMATS[s.kind] for s in run)
        pack = self._struct_name(fmt, "pack")
        values = ", ".join(f"{obj}.{s.name}" for s in run)
        lines.append(f"{indent}out += {pack}({values})")

    def _encode_length(self, flexible: bool, value: str, lines: list[str], indent: str, wide: bool) -> None:
        """Write a length or count `value` (already an int; -1 for null)."""
        if flexible and value == "-1":
            lines.append(f"{indent}out.append(0)")
        elif flexible:
            lines.append(f"{indent}if {value} < 127:")
            lines.append(f"{indent}    out.append({value} + 1)")
            if wide:  # bytes, records and array counts: two-byte lengths (127..16382) are common
                lines.append(f"{indent}elif {value} < 16383:")
                lines.append(f"{indent}    out.append(({value} + 1) & 127 | 128)")
                lines.append(f"{indent}    out.append(({value} + 1) >> 7)")
            lines.append(f"{indent}else:")
            lines.append(f"{indent}    out += uvarint_bytes({value} + 1)")
        else:
            pack = self._struct_name("i" if wide else "h", "pack")
            lines.append(f"{indent}out += {pack}({value})")

    def _encode_value(
        self, spec: FieldSpec, flexible: bool, source: str, lines: list[str], indent: str, depth: int
    ) -> None:
        kind = spec.kind
        nullable = self.version in spec.nullable
        if kind in _FIXED_FORMATS:
            pack = self._struct_name(_FIXED_FORMATS[kind], "pack")
            lines.append(f"{indent}out += {pack}({source})")
        elif kind == "uuid":
            lines.append(f"{indent}out += {source}.bytes")
        elif kind in ("string", "bytes", "records"):
            wide = kind != "string"
            lines.append(f"{indent}v = {source}")
            if nullable:
                lines.append(f"{indent}if v is None:")
                self._encode_length(flexible, "-1", lines, indent + "    ", wide)
                lines.append(f"{indent}else:")
                indent += "    "
            if kind == "string":
                lines.append(f"{indent}v = v.encode()")
            lines.append(f"{indent}n = len(v)")
            self._encode_length(flexible, "n", lines, indent, wide)
            if kind == "records":
                # Records may also be a file region that the server sends with sendfile.
                self.namespace["append_records"] = append_records
                lines.append(f"{indent}if v.__class__ is bytes:")
                lines.append(f"{indent}    out += v")
                lines.append(f"{indent}else:")
                lines.append(f"{indent}    append_records(v, out)")
            else:
                lines.append(f"{indent}out += v")
        elif kind == "struct":
            assert spec.struct is not None
            obj = f"s{self._variable()}"
            lines.append(f"{indent}{obj} = {source}")
            if nullable:
                lines.append(f"{indent}if {obj} is None:")
                lines.append(f"{indent}    out.append(255)")
                lines.append(f"{indent}else:")
                lines.append(f"{indent}    out.append(1)")
                indent += "    "
            if depth >= _INLINE_DEPTH:
                lines.append(f"{indent}{self._encode_struct(spec.struct)}({obj}, out)")
            else:
                self._encode_struct_body(spec.struct, obj, lines, indent, depth)
        elif kind == "array":
            self._encode_array(spec, flexible, source, lines, indent, nullable, depth)
        else:
            raise AssertionError(f"unknown kind {kind}")

    def _encode_array(
        self,
        spec: FieldSpec,
        flexible: bool,
        source: str,
        lines: list[str],
        indent: str,
        nullable: bool,
        depth: int,
    ) -> None:
        items = f"items{len(indent)}"
        lines.append(f"{indent}{items} = {source}")
        if nullable:
            lines.append(f"{indent}if {items} is None:")
            self._encode_length(flexible, "-1", lines, indent + "    ", True)
            lines.append(f"{indent}else:")
            indent += "    "
        count = f"c{len(indent)}"
        lines.append(f"{indent}{count} = len({items})")
        self._encode_length(flexible, count, lines, indent, True)
        element = spec.element
        if element is not None and element in _FIXED_FORMATS:
            fmt = _FIXED_FORMATS[element]
            runs = self._const("pack_runs", _precompiled_runs(fmt, "pack"))
            lines.append(f"{indent}if {count} < {_PRECOMPILED_RUNS}:")
            lines.append(f"{indent}    out += {runs}[{count}](*{items})")
            lines.append(f"{indent}else:")
            lines.append(f"{indent}    out += pack('>%d{fmt}' % {count}, *{items})")
            return
        item = f"item{len(indent)}"
        lines.append(f"{indent}for {item} in {items}:")
        if element is not None:
            element_spec = FieldSpec(kind=element, versions=spec.versions, name=spec.name)
            self._encode_value(element_spec, flexible, item, lines, indent + "    ", depth)
        elif depth >= _INLINE_DEPTH:
            assert spec.struct is not None
            lines.append(f"{indent}    {self._encode_struct(spec.struct)}({item}, out)")
        else:
            assert spec.struct is not None
            self._encode_struct_body(spec.struct, item, lines, indent + "    ", depth)

    def _encode_tagged_section(self, tagged: list[FieldSpec], obj: str, lines: list[str], base: str) -> None:
        self.namespace["write_tagged"] = write_tagged_fields
        add = lines.append
        if not tagged:
            add(f"{base}if {obj}.unknown_tagged_fields:")
            add(f"{base}    write_tagged(out, [], {obj}.unknown_tagged_fields)")
            add(f"{base}else:")
            add(f"{base}    out.append(0)")
            return
        add(f"{base}if not {obj}.unknown_tagged_fields and {self._all_default(tagged, obj)}:")
        add(f"{base}    out.append(0)")
        add(f"{base}else:")
        add(f"{base}    tagged = []")
        for spec in tagged:
            add(f"{base}    if {self._differs_from_default(spec, obj)}:")
            add(f"{base}        field_out = out")
            add(f"{base}        out = bytearray()")
            # Written by a call (depth _INLINE_DEPTH): an inlined struct could reuse `tagged`.
            self._encode_value(spec, True, f"{obj}.{spec.name}", lines, base + "        ", _INLINE_DEPTH)
            add(f"{base}        tagged.append(({spec.tag}, out))")
            add(f"{base}        out = field_out")
        add(f"{base}    write_tagged(out, tagged, {obj}.unknown_tagged_fields)")

    def _differs_from_default(self, spec: FieldSpec, owner: str) -> str:
        """An expression that is true when field `spec` of `owner` is not its default (so is written)."""
        constant, factory = spec.make_default_factory()
        if factory is None:
            return f"{owner}.{spec.name} != {self._const('default', constant)}"
        if factory is list:
            return f"{owner}.{spec.name} != []"
        # A struct default: None in the slot until read; else compared field by field, no struct made.
        assert spec.struct is not None
        variable = self._variable()
        check = self._const("is_default", default_check(spec.struct))
        return f"(({variable} := {owner}.{spec.slot}) is not None and not {check}({variable}))"

    def _all_default(self, tagged: list[FieldSpec], obj: str) -> str:
        """An expression that is true when every tagged field holds its default: the common case, which
        then writes one zero byte. Struct defaults are compared inline, one level deep (deeper ones by
        their compiled check), so the common case calls no function."""
        terms = []
        for spec in tagged:
            _, factory = spec.make_default_factory()
            if factory is None or factory is list:
                terms.append(f"not ({self._differs_from_default(spec, obj)})")
                continue
            assert spec.struct is not None
            variable = self._variable()
            inner = [f"{variable}.__class__ is {self._const('cls', spec.struct)}"]
            for field in spec.struct.FIELDS:
                inner.append(f"not ({self._differs_from_default(field, variable)})")
            inner.append(f"not {variable}.unknown_tagged_fields")
            terms.append(f"(({variable} := {obj}.{spec.slot}) is None or ({' and '.join(inner)}))")
        return " and ".join(terms)

    def _variable(self) -> str:
        self.counter += 1
        return f"t{self.counter}"


@functools.cache
def _precompiled_runs(fmt: str, method: str) -> tuple[Callable[..., Any], ...]:
    """`method` of struct.Struct(">{n}{fmt}") for n in 0.._PRECOMPILED_RUNS-1, indexed by n."""
    return tuple(getattr(struct.Struct(f">{n}{fmt}"), method) for n in range(_PRECOMPILED_RUNS))


_default_checks: dict[type, Callable[[Any], bool]] = {}


def default_check(cls: type[Struct]) -> Callable[[Any], bool]:
    """A compiled `value == cls()`: true when every field of `value` holds its default."""
    check = _default_checks.get(cls)
    if check is not None:
        return check
    namespace: dict[str, Any] = {"cls": cls}
    terms = ["type(v) is cls"]
    for spec in cls.FIELDS:
        constant, factory = spec.make_default_factory()
        if factory is None:
            namespace[f"d_{spec.name}"] = constant
            terms.append(f"v.{spec.name} == d_{spec.name}")
        elif factory is list:
            terms.append(f"v.{spec.name} == []")
        else:
            assert spec.struct is not None
            namespace[f"check_{spec.name}"] = default_check(spec.struct)
            terms.append(f"(v.{spec.slot} is None or check_{spec.name}(v.{spec.slot}))")
    terms.append("not v.unknown_tagged_fields")
    exec(f"def is_default(v):\n    return {' and '.join(terms)}\n", namespace)
    compiled: Callable[[Any], bool] = namespace["is_default"]
    _default_checks[cls] = compiled
    return compiled


def append_records(records: Any, out: bytearray) -> None:
    """Append a records value that is not plain bytes: any buffer, or an object that places itself.

    An object that places itself (a file region sent later by sendfile) must count its bytes in the
    output's `spliced_length`, which the frame encoder adds to the size prefix.
    """
    if isinstance(records, bytearray | memoryview):
        out += records
    else:
        records.append_to(out)


def write_tagged_fields(
    out: bytearray, known: list[tuple[int, bytearray]], unknown: dict[int, bytes] | None
) -> None:
    """Write a tagged-field section: known and unknown fields together, in ascending tag order."""
    fields: list[tuple[int, bytes | bytearray]] = list(known)
    if unknown:
        fields.extend(unknown.items())
        fields.sort(key=lambda item: item[0])
    out += uvarint_bytes(len(fields))
    for tag, data in fields:
        out += uvarint_bytes(tag)
        out += uvarint_bytes(len(data))
        out += data
