"""Drafts odradek's message definitions (src/odradek/protocol/messages/) from Kafka's schema files.

    python tools/generate_definitions.py ../shared/kafka-specs/3.9 ../shared/kafka-specs/4.3

Kafka 4.x dropped the old versions (KIP-896) and the fields only they had, so each message is merged:
at every version the newer directory defines, its layout wins; older versions come from the older
directory. Only wire facts are carried over (names, types, versions, nullability, tags, defaults); the
prose is not. The output is ordinary source that we own and may edit; `python -m
odradek.protocol.check_specs` proves it still matches Kafka's files version by version.
"""

from __future__ import annotations

import keyword
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from odradek.protocol.kafka_specs import KafkaSpec, snake_case
from odradek.protocol.schema import Versions

OUT = Path(__file__).resolve().parents[1] / "src" / "odradek" / "protocol" / "messages"

PRIMITIVES = {
    "int8": ("Int8", "int"),
    "int16": ("Int16", "int"),
    "int32": ("Int32", "int"),
    "int64": ("Int64", "int"),
    "uint16": ("UInt16", "int"),
    "uint32": ("UInt32", "int"),
    "float64": ("Float64", "float"),
    "bool": ("Bool", "bool"),
    "uuid": ("Uuid", "UUID"),
    "string": ("String", "str"),
    "bytes": ("Bytes", "bytes"),
    "records": ("Records", "bytes"),
}


@dataclass
class MergedField:
    name: str
    kind: str  # Kafka type string, e.g. "int32", "[]string", "[]TopicData", "Cursor"
    versions: set[int] = field(default_factory=set)
    nullable: set[int] = field(default_factory=set)
    tagged: set[int] = field(default_factory=set)
    tag: int | None = None
    default: Any = None
    has_default: bool = False
    flexible: str | None = None
    children: list[MergedField] | None = None  # struct fields

    @property
    def struct_name(self) -> str:
        return self.kind.removeprefix("[]")


def version_set(text: str | None, valid: set[int]) -> set[int]:
    versions = Versions.parse(text)
    return {v for v in valid if v in versions}


def merge_fields(
    sources: list[tuple[KafkaSpec, list[dict[str, Any]], set[int]]],
) -> list[MergedField]:
    """Merge field lists from several specs, each counted only at the versions it is authoritative for."""
    order: list[str] = []
    groups: dict[str, list[tuple[KafkaSpec, dict[str, Any], set[int], set[int]]]] = {}
    for spec, fields, valid in sources:
        previous: str | None = None
        for raw in fields:
            name = raw["name"]
            if name not in groups:
                groups[name] = []
                order.insert(order.index(previous) + 1 if previous is not None else 0, name)
            groups[name].append((spec, raw, valid, version_set(raw.get("versions"), valid)))
            previous = name
    merged = []
    for name in order:
        item: MergedField | None = None
        child_sources = []
        for spec, raw, valid, present in groups[name]:
            if item is None:
                item = MergedField(name=name, kind=raw["type"])
            elif present and item.versions and raw["type"] != item.kind and raw["type"][-1].islower():
                raise SystemExit(f"{spec.name}.{name}: type {item.kind} vs {raw['type']}")
            item.versions |= present
            item.nullable |= version_set(raw.get("nullableVersions"), valid) & present
            if "tag" in raw:
                item.tag = int(raw["tag"])
                item.tagged |= version_set(raw.get("taggedVersions"), valid) & present
            if "default" in raw and (present or not item.has_default):
                item.default, item.has_default = raw["default"], True
            if "flexibleVersions" in raw:
                item.flexible = raw["flexibleVersions"]
            children = spec.struct_fields(raw)
            if children is not None:
                child_sources.append((spec, children, present))
        assert item is not None
        if child_sources:
            item.children = merge_fields(child_sources)
        if item.versions:
            merged.append(item)
    return merged


def render_versions(versions: set[int], top: int) -> str:
    if not versions:
        return "none"
    low, high = min(versions), max(versions)
    if set(range(low, high + 1)) != versions:
        raise ValueError(f"versions are not contiguous: {sorted(versions)}")
    if high >= top:
        return f"{low}+"
    return str(low) if low == high else f"{low}-{high}"


class ModuleWriter:
    def __init__(self, module: str) -> None:
        self.module = module
        self.classes: list[str] = []
        self.defined: dict[str, str] = {}  # class name -> rendered body, to share identical structs
        self.imports: set[str] = set()
        self.uses_uuid = False

    def struct_class(self, item: MergedField, top: int, suffix: str) -> str:
        assert item.children is not None
        body = self.fields_source(item.children, top, suffix)
        name = item.struct_name
        while name in self.defined and self.defined[name] != body:
            name = name + suffix
        if name not in self.defined:
            self.defined[name] = body
            self.imports.add("Struct")
            self.classes.append(f"class {name}(Struct):\n{body}")
        return name

    def fields_source(self, fields: list[MergedField], top: int, suffix: str) -> str:
        lines = []
        for item in fields:
            lines.append("    " + self.field_line(item, top, suffix))
        return "\n".join(lines) if lines else "    pass"

    def field_line(self, item: MergedField, top: int, suffix: str) -> str:
        name = snake_case(item.name)
        if keyword.iskeyword(name):
            raise SystemExit(f"field name {name} is a Python keyword")
        args: list[str] = []
        kind = item.kind
        versions = render_versions(item.versions, top)
        nullable = bool(item.nullable)
        if item.children is not None:
            struct = self.struct_class(item, top, suffix)
            if kind.startswith("[]"):
                specifier, annotation = "Array", f"list[{struct}]"
            else:
                specifier, annotation = "Nested", struct
            args.append(struct)
        elif kind.startswith("[]"):
            element = kind[2:]
            specifier, annotation = "Array", f"list[{PRIMITIVES[element][1]}]"
            args.append(repr(element))
            if element == "uuid":
                self.uses_uuid = True
        else:
            specifier, annotation = PRIMITIVES[kind]
            if kind == "uuid":
                self.uses_uuid = True
            if kind == "records":
                nullable = True if item.nullable else nullable
        if versions != "0+":
            args.append(repr(versions))
        if item.nullable:
            args.append(f"nullable={render_versions(item.nullable, top)!r}")
        if item.tag is not None:
            args.append(f"tag={item.tag}")
            if item.tagged != item.versions:
                args.append(f"tagged={render_versions(item.tagged, top)!r}")
        if item.has_default:
            args.append(f"default={python_default(kind, item.default)}")
        if item.flexible is not None:
            args.append(f"flexible={item.flexible!r}")
        if nullable:
            annotation += " | None"
        self.imports.add(specifier)
        return f"{name}: {annotation} = {specifier}({', '.join(args)})"


def python_default(kind: str, value: Any) -> str:
    if value is None or (isinstance(value, str) and value == "null"):
        return "None"
    text = str(value).strip()
    if kind == "bool":
        return str(text.lower() == "true")
    if kind in ("int8", "int16", "int32", "int64", "uint16", "uint32"):
        return str(int(text, 0))
    if kind == "float64":
        return repr(float(text))
    return repr(text)


def module_name(message_name: str) -> str:
    for ending in ("Request", "Response"):
        if message_name.endswith(ending):
            return snake_case(message_name[: -len(ending)])
    return snake_case(message_name)


def merged_message(
    old: KafkaSpec | None, new: KafkaSpec | None
) -> tuple[KafkaSpec, set[int], list[MergedField]]:
    sources = []
    new_valid = (
        set(range(new.versions.low, new.versions.high + 1)) if new and not new.versions.empty else set()
    )
    if new is not None:
        sources.append((new, new.raw.get("fields", []), new_valid))
    if old is not None and not old.versions.empty:
        old_valid = set(range(old.versions.low, old.versions.high + 1)) - new_valid
        sources.append((old, old.raw.get("fields", []), old_valid))
        valid = new_valid | old_valid
    else:
        valid = new_valid
    primary = new if new is not None and not new.versions.empty else old
    assert primary is not None
    return primary, valid, merge_fields(sources)


def main(old_dir: Path, new_dir: Path) -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    modules: dict[str, list[tuple[KafkaSpec | None, KafkaSpec | None]]] = {}
    for old, new in sorted(pair_files(old_dir, new_dir).values(), key=_request_first):
        latest = new if new is not None else old
        assert latest is not None
        modules.setdefault(module_name(latest.name), []).append((old, new))
    registry: list[tuple[str, str, str, int | None]] = []
    for module, pairs in sorted(modules.items()):
        writer = ModuleWriter(module)
        messages = []
        for old, new in pairs:
            primary, valid, fields = merged_message(old, new)
            if not valid:
                continue
            top = max(valid)
            base = {"request": "Request", "response": "Response", "header": "Header"}.get(
                primary.kind, "Message"
            )
            suffix = "Result" if primary.kind == "response" else "Data"
            body = writer.fields_source(fields, top, suffix)
            keywords = []
            if primary.api_key is not None:
                keywords.append(f"api_key={primary.api_key}")
            keywords.append(f"versions={_range(valid)!r}")
            if not primary.flexible.empty:
                keywords.append(f"flexible={str(primary.flexible)!r}")
            if new is not None and new.raw.get("latestVersionUnstable"):
                keywords.append(f"unstable={str(new.versions.high)!r}")
            writer.imports.add(base)
            messages.append(f"class {primary.name}({base}, {', '.join(keywords)}):\n{body}")
            registry.append((module, primary.name, primary.kind, primary.api_key))
        if messages:
            write_module(writer, messages)
    write_registry(registry)


def pair_files(
    old_dir: Path, new_dir: Path
) -> dict[tuple[str, object], tuple[KafkaSpec | None, KafkaSpec | None]]:
    """Each message's file in the old and the new release, matched by api key (names can change)."""
    pairs: dict[tuple[str, object], list[KafkaSpec | None]] = {}
    for index, directory in enumerate((old_dir, new_dir)):
        for path in sorted(directory.glob("*.json")):
            spec = KafkaSpec.read(path)
            if spec.kind not in ("request", "response", "header", "data"):
                continue
            key: tuple[str, object] = (spec.kind, spec.api_key if spec.api_key is not None else spec.name)
            pairs.setdefault(key, [None, None])[index] = spec
    return {key: (value[0], value[1]) for key, value in pairs.items()}


def _request_first(pair: tuple[KafkaSpec | None, KafkaSpec | None]) -> tuple[int, str]:
    latest = pair[1] if pair[1] is not None else pair[0]
    assert latest is not None
    return (0 if latest.kind == "request" else 1, latest.name)


def _range(valid: set[int]) -> str:
    low, high = min(valid), max(valid)
    assert set(range(low, high + 1)) == valid
    return str(low) if low == high else f"{low}-{high}"


def write_module(writer: ModuleWriter, messages: list[str]) -> None:
    title = writer.module.replace("_", " ").capitalize()
    imports = ", ".join(sorted(writer.imports))
    header = [
        f'"""{title}: wire schema.',
        "",
        "Drafted from Kafka's message files by tools/generate_definitions.py; check_specs proves they agree.",
        '"""',
        "",
        "from __future__ import annotations",
        "",
    ]
    if writer.uses_uuid:
        header += ["from uuid import UUID", ""]
    header += [f"from odradek.protocol.schema import {imports}", ""]
    body = "\n\n\n".join(writer.classes + messages)
    (OUT / f"{writer.module}.py").write_text("\n".join(header) + "\n\n" + body + "\n")


def write_registry(registry: list[tuple[str, str, str, int | None]]) -> None:
    modules = sorted({m for m, _, _, _ in registry})
    lines = [
        '"""Every message the codec knows: requests and responses by api key, and the other schemas."""',
        "",
        "from __future__ import annotations",
        "",
        "from odradek.protocol.messages import (",
        *[f"    {m}," for m in modules],
        ")",
        "from odradek.protocol.schema import Message, Request, Response",
        "",
        "REQUESTS: dict[int, type[Request]] = {",
        *[
            f"    {key}: {m}.{c},"
            for m, c, k, key in sorted(registry, key=lambda r: r[3] or 0)
            if k == "request"
        ],
        "}",
        "",
        "RESPONSES: dict[int, type[Response]] = {",
        *[
            f"    {key}: {m}.{c},"
            for m, c, k, key in sorted(registry, key=lambda r: r[3] or 0)
            if k == "response"
        ],
        "}",
        "",
        "OTHER_SCHEMAS: dict[str, type[Message]] = {",
        *[f"    {c!r}: {m}.{c}," for m, c, k, _ in registry if k not in ("request", "response")],
        "}",
        "",
    ]
    (OUT / "__init__.py").write_text("\n".join(lines))


if __name__ == "__main__":
    if len(sys.argv) != 3:
        raise SystemExit(__doc__)
    main(Path(sys.argv[1]), Path(sys.argv[2]))
