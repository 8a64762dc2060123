"""Generates decoders: bytes in, the struct's objects out, every length and count checked against the
bytes left before anything is allocated."""

from __future__ import annotations

import struct
from typing import Any

from odradek.protocol.compiler.generator import (
    FIXED_FORMATS,
    FIXED_SIZES,
    INLINE_DEPTH,
    PRECOMPILED_RUNS,
    Bridge,
    SourceGenerator,
    precompiled_runs,
)
from odradek.protocol.fields import FieldSpec, Struct


class DecoderGenerator(SourceGenerator):
    """The source of a message's decoder at one version: `decode_<Struct>_<n>(buf, pos)` functions."""

    def decoder(self, cls: type[Struct]) -> Any:
        """The decoder function of `cls`: (buffer, position) -> (object, position after it)."""
        return self._finish(self._decode_struct(cls))

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
        """Lines that decode a `cls` into a new object named `obj`; nested structs up to INLINE_DEPTH
        levels down are decoded inline, not by a call (a call and its returned tuple cost ~40 ns)."""
        regular, tagged, absent = self._fields(cls, self.version)
        lines.append(f"{indent}{obj} = new({self._const('cls', cls)})")
        for segment in self._segments(regular):
            if isinstance(segment, list):
                self._flush_fixed_run(segment, obj, lines, indent)
            elif isinstance(segment, Bridge):
                self._decode_bridge(segment, obj, lines, indent, depth + 1)
            else:
                flexible = self._flexible(segment)
                self._decode_value(segment, flexible, f"{obj}.{segment.slot}", lines, indent, depth + 1)
        for spec in absent + tagged:
            self._assign_default(spec, f"{obj}.{spec.slot}", lines, indent)
        lines.append(f"{indent}{obj}.unknown_tagged_fields = None")
        if self.message_flexible:
            self._decode_tagged_section(tagged, obj, lines, indent)

    def _flush_fixed_run(self, run: list[FieldSpec], obj: str, lines: list[str], indent: str) -> None:
        if not run:
            return
        fmt = "".join(FIXED_FORMATS[s.kind] for s in run)
        size = sum(FIXED_SIZES[s.kind] for s in run)
        unpack = self._struct_name(fmt, "unpack_from")
        targets = ", ".join(f"{obj}.{s.name}" for s in run)
        lines.append(f"{indent}{targets}{',' if len(run) == 1 else ''} = {unpack}(buf, pos)")
        lines.append(f"{indent}pos += {size}")

    def _decode_bridge(self, bridge: Bridge, obj: str, lines: list[str], indent: str, depth: int) -> None:
        count = self._variable()
        nullable = self.version in bridge.array.nullable
        targets = ", ".join(
            [*(f"{obj}.{s.name}" for s in bridge.before), "_", *(f"{obj}.{s.name}" for s in bridge.after)]
        )
        unpack = self._struct_name(bridge.format(), "unpack_from")
        size = struct.calcsize(">" + bridge.format())
        lines.append(f"{indent}{count} = buf[pos + {bridge.count_offset()}]")
        lines.append(f"{indent}if {count} {'< 2' if nullable else '== 1'}:  # null or empty: one call")
        lines.append(f"{indent}    {targets} = {unpack}(buf, pos)")
        value = f"[] if {count} else None" if nullable else "[]"
        lines.append(f"{indent}    {obj}.{bridge.array.slot} = {value}")
        lines.append(f"{indent}    pos += {size}")
        lines.append(f"{indent}else:")
        inner = indent + "    "
        self._flush_fixed_run(bridge.before, obj, lines, inner)
        self._decode_value(bridge.array, True, f"{obj}.{bridge.array.slot}", lines, inner, depth)
        self._flush_fixed_run(bridge.after, obj, lines, inner)

    def _assign_default(self, spec: FieldSpec, target: str, lines: list[str], indent: str) -> None:
        """`target = <the field's default>`. A struct field's slot gets None: its default struct is made
        when the field is first read (see `FieldSpec.made_on_first_read`)."""
        constant, factory = spec.make_default_factory()
        if factory is None:
            lines.append(f"{indent}{target} = {self._const('default', constant)}")
        elif factory is list:
            lines.append(f"{indent}{target} = []")
        elif spec.made_on_first_read:
            lines.append(f"{indent}{target} = None")
        else:  # a nullable struct with a struct default (none in Kafka's schemas today): made now
            lines.append(f"{indent}{target} = {self._const('make', factory)}()")

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
        (INLINE_DEPTH or more: nested structs are decoded by a call)."""
        kind = spec.kind
        if kind in FIXED_FORMATS:
            unpack = self._struct_name(FIXED_FORMATS[kind], "unpack_from")
            lines.append(f"{indent}{target}, = {unpack}(buf, pos)")
            lines.append(f"{indent}pos += {FIXED_SIZES[kind]}")
        elif kind == "uuid":
            lines.append(f"{indent}if len(buf) < pos + 16:")
            lines.append(f"{indent}    raise TruncatedError('{spec.name}: uuid ends early')")
            # UUID(bytes=...) runs a long keyword __init__ (1.9 µs, 15% of a 100-topic Metadata
            # response's decoding); setting its two slots as that __init__ does takes 0.5 µs.
            lines.append(f"{indent}u = new(UUID)")
            lines.append(f"{indent}set_slot(u, 'int', int_from_bytes(buf[pos:pos + 16], 'big'))")
            lines.append(f"{indent}set_slot(u, 'is_safe', UUID_SAFE_UNKNOWN)")
            lines.append(f"{indent}{target} = u")
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
        if depth >= INLINE_DEPTH:
            lines.append(f"{indent}{target}, pos = {self._decode_struct(cls)}(buf, pos)")
            return
        obj = f"o{self._variable()}"
        self._decode_struct_body(cls, obj, lines, indent, depth)
        lines.append(f"{indent}{target} = {obj}")

    def _decode_array(
        self, spec: FieldSpec, flexible: bool, target: str, lines: list[str], indent: str, depth: int
    ) -> None:
        count = f"c{len(indent)}"
        element = spec.element
        fixed = element is not None and element in FIXED_FORMATS
        if fixed:
            assert element is not None
            runs = self._const("unpack_runs", precompiled_runs(FIXED_FORMATS[element], "unpack_from"))
        if flexible and fixed:
            # The common case first: a one-byte count below PRECOMPILED_RUNS, read by one precompiled
            # call (short input raises struct.error there); anything else takes the general way below.
            assert element is not None
            lines.append(f"{indent}{count} = buf[pos] - 1")
            lines.append(f"{indent}if 0 <= {count} < {PRECOMPILED_RUNS}:")
            lines.append(f"{indent}    {target} = [*{runs}[{count}](buf, pos + 1)]")
            lines.append(f"{indent}    pos += 1 + {FIXED_SIZES[element]} * {count}")
            lines.append(f"{indent}else:")
            indent += "    "
        self._decode_length(flexible, count, lines, indent, wide=True)
        lines.append(f"{indent}if {count} < 0:")
        self._null_or_error(spec, target, lines, indent, "count")
        # Every element takes at least a byte: a count beyond the bytes left is a lie, not a size to allocate.
        lines.append(f"{indent}elif {count} > len(buf) - pos:")
        lines.append(f"{indent}    raise TruncatedError('{spec.name}: array count beyond the bytes left')")
        lines.append(f"{indent}else:")
        inner = indent + "    "
        if fixed:
            assert element is not None
            fmt = FIXED_FORMATS[element]
            size = FIXED_SIZES[element]
            lines.append(f"{inner}if {count} < {PRECOMPILED_RUNS}:")
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
        elif depth >= INLINE_DEPTH:
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
        add(f"{base}if not buf[pos]:")  # no tagged fields: the common case, one zero byte
        add(f"{base}    pos += 1")
        add(f"{base}else:")
        add(f"{base}    tags, pos = read_uvarint(buf, pos)")
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
            # Present tagged values are rare: decoded by a call (depth INLINE_DEPTH), to keep this short.
            self._decode_value(spec, True, f"{obj}.{spec.slot}", lines, base + "            ", INLINE_DEPTH)
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
