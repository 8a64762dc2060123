"""``Setting``: a typed attribute that reads one config by its Kafka name from a config view.

``retention_ms = Setting[int]("retention.ms")`` in a class body makes ``view.retention_ms`` an ``int``
for type checkers and a lookup of ``view["retention.ms"]`` at run time. A unit test checks every
declared type against the catalog, so the annotation cannot drift from the config's real type.
"""

from __future__ import annotations

from typing import Any, Generic, Protocol, TypeVar, cast, overload

from odradek.config.types import ConfigValue

T = TypeVar("T")


class ConfigLookup(Protocol):
    def __getitem__(self, name: str) -> ConfigValue: ...


class Setting(Generic[T]):
    def __init__(self, kafka_name: str) -> None:
        self.kafka_name = kafka_name
        self.attribute = ""

    def __set_name__(self, owner: type[Any], name: str) -> None:
        self.attribute = name

    @overload
    def __get__(self, view: None, owner: type[Any]) -> Setting[T]: ...

    @overload
    def __get__(self, view: ConfigLookup, owner: type[Any]) -> T: ...

    def __get__(self, view: ConfigLookup | None, owner: type[Any]) -> Setting[T] | T:
        if view is None:
            return self
        return cast(T, view[self.kafka_name])

    def __repr__(self) -> str:
        return f"Setting({self.kafka_name!r})"
