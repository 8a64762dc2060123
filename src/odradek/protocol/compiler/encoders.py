"""Generates encoders: a struct's object in, its bytes appended to a bytearray."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from odradek.protocol.compiler.generator import (
    FIXED_FORMATS,
    INLINE_DEPTH,
    PRECOMPILED_RUNS,
    Bridge,
    SourceGenerator,
    precompiled_runs,
)
from odradek.protocol.fields import FieldSpec, Struct
from odradek.protocol.placed_records import PlacedRecords
from odradek.protocol.varint import uvarint_bytes


class EncoderGenerator(SourceGenerator):
    """The source of a message's encoder at one version: `encode_<Struct>_<n>(o, out)` functions."""

    def encoder(self, cls: type[Struct]) -> Any:
        """The encoder function of `cls`: (object, bytearray) -> None."""
        return self._finish(self._encode_struct(cls))

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
        for segment in self._segments(regular):
            if isinstance(segment, list):
                self._flush_fixed_pack(segment, obj, lines, indent)
            elif isinstance(segment, Bridge):
                self._encode_bridge(segment, obj, lines, indent, depth + 1)
            else:
                flexible = self._flexible(segment)
                self._encode_value(segment, flexible, f"{obj}.{segment.name}", lines, indent, depth + 1)
        if self.message_flexible:
            self._encode_tagged_section(tagged, obj, lines, indent)
        if len(lines) == start:
            lines.append(f"{indent}pass")

    def _flush_fixed_pack(self, run: list[FieldSpec], obj: str, lines: list[str], indent: str) -> None:
        if not run:
            return
        fmt = "".join(FIXED_FORMATS[s.kind] for s in run)
        pack = self._struct_name(fmt, "pack")
        values = ", ".join(f"{obj}.{s.name}" for s in run)
        lines.append(f"{indent}out += {pack}({values})")

    def _encode_bridge(self, bridge: Bridge, obj: str, lines: list[str], indent: str, depth: int) -> None:
        items = self._variable()
        nullable = self.version in bridge.array.nullable
        pack = self._struct_name(bridge.format(), "pack")
        count = f"0 if {items} is None else 1" if nullable else "1"
        values = ", ".join(
            [*(f"{obj}.{s.name}" for s in bridge.before), count, *(f"{obj}.{s.name}" for s in bridge.after)]
        )
        lines.append(f"{indent}{items} = {obj}.{bridge.array.name}")
        empty = f"{items} is None or {items} == []" if nullable else f"{items} == []"
        lines.append(f"{indent}if {empty}:  # one call for the fields around a null or empty array")
        lines.append(f"{indent}    out += {pack}({values})")
        lines.append(f"{indent}else:")
        inner = indent + "    "
        self._flush_fixed_pack(bridge.before, obj, lines, inner)
        self._encode_value(bridge.array, True, f"{obj}.{bridge.array.name}", lines, inner, depth)
        self._flush_fixed_pack(bridge.after, obj, lines, inner)

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

    def _null_or_else(self, flexible: bool, value: str, lines: list[str], indent: str, wide: bool) -> str:
        """Write the null length or count when `value` is None; returns the indent for the rest."""
        lines.append(f"{indent}if {value} is None:")
        self._encode_length(flexible, "-1", lines, indent + "    ", wide)
        lines.append(f"{indent}else:")
        return indent + "    "

    def _encode_value(
        self, spec: FieldSpec, flexible: bool, source: str, lines: list[str], indent: str, depth: int
    ) -> None:
        kind = spec.kind
        nullable = self.version in spec.nullable
        if kind in FIXED_FORMATS:
            pack = self._struct_name(FIXED_FORMATS[kind], "pack")
            lines.append(f"{indent}out += {pack}({source})")
        elif kind == "uuid":
            # What the .bytes property does, without the property's call.
            lines.append(f"{indent}out += {source}.int.to_bytes(16, 'big')")
        elif kind in ("string", "bytes", "records"):
            wide = kind != "string"
            lines.append(f"{indent}v = {source}")
            if nullable:
                indent = self._null_or_else(flexible, "v", lines, indent, wide)
            if kind == "string":
                lines.append(f"{indent}v = v.encode()")
            lines.append(f"{indent}n = len(v)")
            self._encode_length(flexible, "n", lines, indent, wide)
            if kind == "records":
                # Records may also be a file region that the server sends with sendfile.
                self.namespace["append_records"] = append_records
                # bytes, or a view of a decoded frame: appended here; anything else by the function.
                lines.append(f"{indent}if v.__class__ is bytes or v.__class__ is memoryview:")
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
            if depth >= INLINE_DEPTH:
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
            indent = self._null_or_else(flexible, items, lines, indent, True)
        count = f"c{len(indent)}"
        lines.append(f"{indent}{count} = len({items})")
        self._encode_length(flexible, count, lines, indent, True)
        element = spec.element
        if element is not None and element in FIXED_FORMATS:
            fmt = FIXED_FORMATS[element]
            runs = self._const("pack_runs", precompiled_runs(fmt, "pack"))
            lines.append(f"{indent}if {count} < {PRECOMPILED_RUNS}:")
            lines.append(f"{indent}    out += {runs}[{count}](*{items})")
            lines.append(f"{indent}else:")
            lines.append(f"{indent}    out += pack('>%d{fmt}' % {count}, *{items})")
            return
        item = f"item{len(indent)}"
        lines.append(f"{indent}for {item} in {items}:")
        if element is not None:
            element_spec = FieldSpec(kind=element, versions=spec.versions, name=spec.name)
            self._encode_value(element_spec, flexible, item, lines, indent + "    ", depth)
        elif depth >= INLINE_DEPTH:
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
            # Written by a call (depth INLINE_DEPTH): an inlined struct could reuse `tagged`.
            self._encode_value(spec, True, f"{obj}.{spec.name}", lines, base + "        ", INLINE_DEPTH)
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
        check = self._const("is_default", default_check(spec.struct))
        if not spec.made_on_first_read:  # a null struct is then a value, not the default
            return f"not {check}({owner}.{spec.name})"
        variable = self._variable()
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
            if spec.made_on_first_read:
                terms.append(f"(({variable} := {obj}.{spec.slot}) is None or ({' and '.join(inner)}))")
            else:
                terms.append(f"(({variable} := {obj}.{spec.slot}) is not None and {' and '.join(inner)})")
        return " and ".join(terms)


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
            unmade = f"v.{spec.slot} is None or " if spec.made_on_first_read else ""
            terms.append(f"({unmade}check_{spec.name}(v.{spec.slot}))")
    terms.append("not v.unknown_tagged_fields")
    exec(f"def is_default(v):\n    return {' and '.join(terms)}\n", namespace)
    compiled: Callable[[Any], bool] = namespace["is_default"]
    _default_checks[cls] = compiled
    return compiled


def append_records(records: bytearray | memoryview | PlacedRecords, out: bytearray) -> None:
    """Append a records value that is not plain bytes: any buffer, or a value that places itself
    (protocol/placed_records.py: a file region sent later by sendfile counts its bytes in the output's
    `spliced_length`, which the frame encoder adds to the size prefix)."""
    if isinstance(records, (bytearray, memoryview)):  # a tuple: faster than a union on 3.11
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
