"""Reads Apache Kafka's message schema files (JSON with // comments) and flattens them per version.

Used by the drift check (`check_specs`) and by the tool that drafts our definitions; the codec itself
never reads these files. A *layout* is what the wire looks like at one version: the ordered fields with
their types, nullability, tags and defaults, nested structs expanded.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from odradek.protocol.schema import NO_VERSIONS, FieldSpec, Message, Versions

_SNAKE_BOUNDARY = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")


def snake_case(name: str) -> str:
    """Kafka's PascalCase field names in Python's snake_case: ThrottleTimeMs -> throttle_time_ms."""
    return _SNAKE_BOUNDARY.sub("_", name).lower()


def load_spec(path: Path) -> dict[str, Any]:
    lines = [line for line in path.read_text().splitlines() if not line.strip().startswith("//")]
    spec: dict[str, Any] = json.loads("\n".join(lines))
    return spec


@dataclass(frozen=True)
class FieldLayout:
    """One field as it appears on the wire at one version."""

    name: str
    type: str  # primitive kind, "[]kind", "struct" or "[]struct"
    nullable: bool
    tag: int | None
    default: str
    children: tuple[FieldLayout, ...] = ()
    compact: bool | None = None  # only set where a field overrides the message's flexibility

    def describe(self) -> str:
        parts = [f"{self.name}: {self.type}"]
        if self.nullable:
            parts.append("nullable")
        if self.tag is not None:
            parts.append(f"tag={self.tag}")
        if self.default:
            parts.append(f"default={self.default}")
        if self.compact is not None:
            parts.append(f"compact={self.compact}")
        return " ".join(parts)


def _normal_default(kind: str, value: Any) -> str:
    """Defaults written the same way on both sides, so they compare equal when they mean the same."""
    if value is None:
        return "null"
    text = str(value).strip()
    if kind == "bool":
        return str(text.lower() == "true").lower()
    if kind in ("int8", "int16", "int32", "int64", "uint16", "uint32"):
        return str(int(text, 0))
    if kind == "float64":
        return repr(float(text))
    return text


class KafkaSpec:
    """One Kafka message file, with helpers to get the layout at a version."""

    def __init__(self, raw: dict[str, Any]) -> None:
        self.raw = raw
        self.name: str = raw["name"]
        self.kind: str = raw["type"]
        self.api_key: int | None = raw.get("apiKey")
        self.versions = Versions.parse(raw.get("validVersions"))
        self.flexible = Versions.parse(raw.get("flexibleVersions"))
        self.common = {s["name"]: s for s in raw.get("commonStructs", [])}

    @classmethod
    def read(cls, path: Path) -> KafkaSpec:
        return cls(load_spec(path))

    def struct_fields(self, field: dict[str, Any]) -> list[dict[str, Any]] | None:
        """The child fields of a struct-typed field (inline or a common struct), else None."""
        if "fields" in field:
            fields: list[dict[str, Any]] = field["fields"]
            return fields
        kind = field["type"].removeprefix("[]")
        if kind in self.common:
            common: list[dict[str, Any]] = self.common[kind]["fields"]
            return common
        return None

    def layout(self, version: int) -> tuple[FieldLayout, ...]:
        return self._layout(self.raw.get("fields", []), version)

    def _layout(self, fields: list[dict[str, Any]], version: int) -> tuple[FieldLayout, ...]:
        out = []
        for field in fields:
            if version not in Versions.parse(field.get("versions")):
                continue
            children_raw = self.struct_fields(field)
            kind = field["type"]
            is_array = kind.startswith("[]")
            if children_raw is not None:
                type_name = "[]struct" if is_array else "struct"
                children = self._layout(children_raw, version)
            else:
                type_name = kind
                children = ()
            tagged = Versions.parse(field.get("taggedVersions")) if "tag" in field else NO_VERSIONS
            flexible_override = field.get("flexibleVersions")
            out.append(
                FieldLayout(
                    name=snake_case(field["name"]),
                    type=type_name,
                    nullable=version in Versions.parse(field.get("nullableVersions")),
                    tag=int(field["tag"]) if version in tagged else None,
                    default=_normal_default(kind, field["default"]) if "default" in field else "",
                    children=children,
                    compact=(version in Versions.parse(flexible_override)) if flexible_override else None,
                )
            )
        return tuple(out)


def our_layout(cls: type[Message], version: int) -> tuple[FieldLayout, ...]:
    """The layout of one of our message classes at a version, in the same terms as KafkaSpec.layout."""
    return _our_fields(cls.FIELDS, version)


def _our_fields(fields: tuple[FieldSpec, ...], version: int) -> tuple[FieldLayout, ...]:
    out = []
    for spec in fields:
        if not spec.present_in(version):
            continue
        children: tuple[FieldLayout, ...] = ()
        if spec.kind == "array":
            if spec.struct is not None:
                type_name = "[]struct"
                children = _our_fields(spec.struct.FIELDS, version)
            else:
                type_name = f"[]{spec.element}"
        elif spec.kind == "struct":
            assert spec.struct is not None
            type_name = "struct"
            children = _our_fields(spec.struct.FIELDS, version)
        else:
            type_name = spec.kind
        default = _normal_default(spec.kind, spec.explicit_default) if spec.has_explicit_default else ""
        out.append(
            FieldLayout(
                name=spec.name,
                type=type_name,
                nullable=version in spec.nullable,
                tag=spec.tag if spec.is_tagged_in(version) else None,
                default=default,
                children=children,
                compact=(version in spec.flexible) if spec.flexible is not None else None,
            )
        )
    return tuple(out)


def diff_layouts(ours: tuple[FieldLayout, ...], theirs: tuple[FieldLayout, ...], path: str = "") -> list[str]:
    """Every difference between two layouts, as readable lines (empty when they agree)."""
    problems: list[str] = []
    our_names = [f.name for f in ours]
    their_names = [f.name for f in theirs]
    if our_names != their_names:
        problems.append(f"{path or '<top>'}: fields {our_names} != Kafka's {their_names}")
        return problems
    for mine, kafka in zip(ours, theirs, strict=True):
        where = f"{path}.{mine.name}" if path else mine.name
        if (mine.type, mine.nullable, mine.tag, mine.default, mine.compact) != (
            kafka.type,
            kafka.nullable,
            kafka.tag,
            kafka.default,
            kafka.compact,
        ):
            problems.append(f"{where}: ours [{mine.describe()}] != Kafka's [{kafka.describe()}]")
        problems.extend(diff_layouts(mine.children, kafka.children, where))
    return problems
