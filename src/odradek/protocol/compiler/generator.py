"""What generating decoders and encoders share: the namespace the source runs in, names for constants and
precompiled `struct` methods, and the fields of a struct at one version."""

from __future__ import annotations

import functools
import struct
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

from odradek.protocol.codec_error import CodecError, TruncatedError
from odradek.protocol.fields import FieldSpec, Struct, Versions
from odradek.protocol.varint import read_uvarint, uvarint_bytes

FIXED_FORMATS: Final[dict[str, str]] = {
    "int8": "b",
    "int16": "h",
    "int32": "i",
    "int64": "q",
    "uint16": "H",
    "uint32": "I",
    "float64": "d",
    "bool": "?",
}
FIXED_SIZES: Final[dict[str, int]] = {k: struct.calcsize(">" + v) for k, v in FIXED_FORMATS.items()}

#: Arrays of fixed-width values shorter than this use a precompiled struct.Struct per length.
PRECOMPILED_RUNS: Final = 32
#: Nested structs this many levels down are decoded and encoded by a call, shallower ones inline.
#: Each level may open a loop, and Python allows 20 nested blocks in one function.
INLINE_DEPTH: Final = 4


class SourceGenerator:
    """Generates the source of the functions for one version of one message and its nested structs;
    subclassed once per direction (decoders.py, encoders.py)."""

    def __init__(self, version: int, flexible: Versions) -> None:
        self.version = version
        self.message_flexible = version in flexible
        self.namespace: dict[str, Any] = {
            "CodecError": CodecError,
            "TruncatedError": TruncatedError,
            "read_uvarint": read_uvarint,
            "uvarint_bytes": uvarint_bytes,
            "UUID": uuid.UUID,
            "UUID_SAFE_UNKNOWN": uuid.SafeUUID.unknown,
            "set_slot": object.__setattr__,  # UUID's own __setattr__ refuses: it is immutable
            "int_from_bytes": int.from_bytes,
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

    def _segments(self, regular: list[FieldSpec]) -> list[list[FieldSpec] | FieldSpec | Bridge]:
        """Regular fields in wire order as runs of fixed-width fields (lists), other fields, and
        bridges: a compact array between two runs, which is mostly null or empty."""
        plain: list[list[FieldSpec] | FieldSpec] = []
        for spec in regular:
            if spec.kind not in FIXED_FORMATS:
                plain.append(spec)
            elif plain and isinstance(plain[-1], list):
                plain[-1].append(spec)
            else:
                plain.append([spec])
        segments: list[list[FieldSpec] | FieldSpec | Bridge] = []
        index = 0
        while index < len(plain):
            window = plain[index : index + 3]
            if (
                len(window) == 3
                and isinstance(window[0], list)
                and isinstance(window[1], FieldSpec)
                and isinstance(window[2], list)
                and window[1].kind == "array"
                and self._flexible(window[1])
            ):
                segments.append(Bridge(window[0], window[1], window[2]))
                index += 3
            else:
                segments.append(plain[index])
                index += 1
        return segments

    def _function_name(self, cls: type[Struct], direction: str) -> tuple[str, bool]:
        """The generated function's name for (struct, direction), and whether it is still to be written."""
        key = (cls, direction)
        if key in self.done:
            return self.done[key], False
        name = f"{direction}_{cls.__name__}_{len(self.done)}"
        self.done[key] = name
        return name, True

    def _variable(self) -> str:
        self.counter += 1
        return f"t{self.counter}"


@dataclass
class Bridge:
    """Fixed-width fields, a compact array, fixed-width fields: when the array is null or empty (its
    count one byte, 0 or 1), all three are read or written by one precompiled `struct` call. Fetch
    partitions are this way round their `aborted_transactions`, null but in transactional reads."""

    before: list[FieldSpec]
    array: FieldSpec
    after: list[FieldSpec]

    def format(self) -> str:
        """The struct format of the fields before, the count byte and the fields after."""
        before = "".join(FIXED_FORMATS[s.kind] for s in self.before)
        return before + "B" + "".join(FIXED_FORMATS[s.kind] for s in self.after)

    def count_offset(self) -> int:
        """Where the array's count byte lies from the first field before it."""
        return sum(FIXED_SIZES[s.kind] for s in self.before)


@functools.cache
def precompiled_runs(fmt: str, method: str) -> tuple[Callable[..., Any], ...]:
    """`method` of struct.Struct(">{n}{fmt}") for n in 0..PRECOMPILED_RUNS-1, indexed by n."""
    return tuple(getattr(struct.Struct(f">{n}{fmt}"), method) for n in range(PRECOMPILED_RUNS))
