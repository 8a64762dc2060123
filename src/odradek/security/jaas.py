"""Kafka's `sasl.jaas.config` syntax: one login module, its control flag, then ``key=value`` options.

    org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="secret" user_bob=pw;

As Kafka's JaasConfig (a StreamTokenizer): words and double-quoted strings (backslash escapes), ``//``
and ``/* */`` comments, and exactly one login module ending with ``;``.

A JAAS file (`java.security.auth.login.config`) holds named sections of such modules, as Java's
ConfigFile reads them: ``Client { org.apache.zookeeper.server.auth.DigestLoginModule required
username="kafka" password="secret"; };`` (`parse_jaas_file`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

CONTROL_FLAGS = ("required", "requisite", "sufficient", "optional")


class JaasConfigError(ValueError):
    """The JAAS text is malformed; the message says where (never the secrets)."""


@dataclass(frozen=True, slots=True)
class LoginModule:
    name: str
    control_flag: str
    options: dict[str, str] = field(default_factory=dict)

    def __repr__(self) -> str:  # the options hold passwords: keep them out of any log line
        return f"LoginModule({self.name}, {self.control_flag}, options={sorted(self.options)})"


def parse_jaas_config(text: str) -> LoginModule:
    """The single login module of `text`; raises JaasConfigError."""
    modules = _parse_all(_tokens(text))
    if len(modules) != 1:
        raise JaasConfigError(
            f"JAAS config property contains {len(modules)} login modules, should be 1 module"
        )
    return modules[0]


def parse_jaas_file(text: str) -> dict[str, tuple[LoginModule, ...]]:
    """Every section of a JAAS file by name: ``Name { module flag key=value ...; ... };``."""
    tokens = _tokens(text, _FILE_TOKEN)
    sections: dict[str, tuple[LoginModule, ...]] = {}
    index = 0
    while index < len(tokens):
        kind, name = tokens[index]
        if kind != "word" or index + 1 >= len(tokens) or tokens[index + 1][0] != "{":
            raise JaasConfigError("a JAAS file's sections must be written Name { module flag options; };")
        end = next((i for i in range(index + 2, len(tokens)) if tokens[i][0] == "}"), None)
        if end is None or end + 1 >= len(tokens) or tokens[end + 1][0] != ";":
            raise JaasConfigError(f"JAAS section {name} must end with '}};'")
        modules = _parse_all(tokens[index + 2 : end])
        if not modules:
            raise JaasConfigError(f"JAAS section {name} has no login module")
        sections[name] = tuple(modules)
        index = end + 2
    return sections


def plain_users(module: LoginModule) -> dict[str, str]:
    """PLAIN's users, from ``user_<name>="<password>"`` options as Kafka's PlainServerCallbackHandler."""
    return {name[len("user_") :]: value for name, value in module.options.items() if name.startswith("user_")}


_TOKEN = re.compile(
    r"""\s+|//[^\n]*|/\*.*?\*/|(?P<quoted>"(?:\\.|[^"\\])*")|(?P<word>[^\s=;"]+)|(?P<punct>[=;])""",
    re.DOTALL,
)


#: A JAAS file's tokens: braces, too, delimit its sections.
_FILE_TOKEN = re.compile(
    r"""\s+|//[^\n]*|/\*.*?\*/|(?P<quoted>"(?:\\.|[^"\\])*")|(?P<word>[^\s=;"{}]+)|(?P<punct>[=;{}])""",
    re.DOTALL,
)


def _tokens(text: str, pattern: re.Pattern[str] = _TOKEN) -> list[tuple[str, str]]:
    tokens: list[tuple[str, str]] = []
    position = 0
    while position < len(text):
        match = pattern.match(text, position)
        if match is None:
            raise JaasConfigError(f"unexpected character at position {position} of the JAAS config")
        position = match.end()
        if match.group("quoted") is not None:
            tokens.append(("value", re.sub(r"\\(.)", r"\1", match.group("quoted")[1:-1])))
        elif match.group("word") is not None:
            tokens.append(("word", match.group("word")))
        elif match.group("punct") is not None:
            tokens.append((match.group("punct"), match.group("punct")))
    return tokens


def _parse_all(tokens: list[tuple[str, str]]) -> list[LoginModule]:
    modules: list[LoginModule] = []
    index = 0
    while index < len(tokens):
        kind, name = tokens[index]
        if kind != "word":
            raise JaasConfigError("a JAAS login module must start with its class name")
        if index + 1 >= len(tokens) or tokens[index + 1][1].lower() not in CONTROL_FLAGS:
            raise JaasConfigError(
                f"login module {name}: expected a control flag ({', '.join(CONTROL_FLAGS)})"
            )
        flag = tokens[index + 1][1].lower()
        index += 2
        options: dict[str, str] = {}
        while True:
            if index >= len(tokens):
                raise JaasConfigError(f"login module {name}: the JAAS config must end with ';'")
            kind, value = tokens[index]
            if kind == ";":
                index += 1
                break
            if (
                kind != "word"
                or index + 2 >= len(tokens)
                or tokens[index + 1][0] != "="
                or tokens[index + 2][0] not in ("word", "value")
            ):
                raise JaasConfigError(f"login module {name}: options must be written key=value")
            options[value] = tokens[index + 2][1]
            index += 3
        modules.append(LoginModule(name, flag, options))
    return modules
