"""A TLS client's principal: its certificate's distinguished name (RFC 2253, as Java's X500Principal
writes it) through `ssl.principal.mapping.rules`, as Kafka's SslPrincipalMapper.

Rules are ``DEFAULT`` (the DN unchanged) or ``RULE:pattern/replacement/[LU]``, comma- or
newline-separated; the first rule whose pattern matches the whole DN gives the name (``L``/``U`` lower-
or upper-case it). No rule matching is an authentication failure, as in Kafka.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

ANONYMOUS = "ANONYMOUS"

#: Attribute keywords Java's RFC 2253 form writes by name; any other attribute is written as its OID.
_KEYWORDS = {
    "commonName": "CN",
    "countryName": "C",
    "localityName": "L",
    "stateOrProvinceName": "ST",
    "organizationName": "O",
    "organizationalUnitName": "OU",
    "streetAddress": "STREET",
    "domainComponent": "DC",
    "userId": "UID",
}
#: OIDs (and DER string tags) of the attributes that Python names but Java writes as ``OID=#hex``.
_OIDS = {
    "emailAddress": ("1.2.840.113549.1.9.1", 0x16),
    "serialNumber": ("2.5.4.5", 0x13),
    "title": ("2.5.4.12", 0x0C),
    "surname": ("2.5.4.4", 0x0C),
    "givenName": ("2.5.4.42", 0x0C),
}


class PrincipalMappingError(ValueError):
    pass


@dataclass(frozen=True, slots=True)
class MappingRule:
    pattern: re.Pattern[str] | None  # None: DEFAULT
    replacement: str = ""
    case: str = ""

    def apply(self, dn: str) -> str | None:
        if self.pattern is None:
            return dn
        if self.pattern.fullmatch(dn) is None:
            return None
        name = self.pattern.sub(self.replacement, dn)
        return name.lower() if self.case == "L" else name.upper() if self.case == "U" else name


class PrincipalMapper:
    def __init__(self, rules: Sequence[MappingRule]) -> None:
        self.rules = tuple(rules)

    @classmethod
    def from_rules(cls, text: str) -> PrincipalMapper:
        return cls(parse_rules(text))

    def name(self, dn: str) -> str:
        for rule in self.rules:
            mapped = rule.apply(dn)
            if mapped is not None:
                return mapped
        raise PrincipalMappingError(f"No rules apply to {dn}")


_RULE = re.compile(
    r"\s*(?:(?P<default>DEFAULT)|RULE:(?P<pattern>(?:\\.|[^\\/])*)/(?P<replacement>(?:\\.|[^\\/])*)/"
    r"(?P<case>[LU]?)(?P<rest>[^,\n]*?))\s*(?:[,\n]\s*|$)"
)


def parse_rules(text: str) -> list[MappingRule]:
    """Kafka's rule list; raises PrincipalMappingError naming the first rule it cannot read."""
    rules: list[MappingRule] = []
    text = text.strip()
    position = 0
    while position < len(text):
        match = _RULE.match(text, position)
        if match is None or match.end() == position or (match.group("rest") or "").strip():
            raise PrincipalMappingError(f"Invalid rule: {text[position:]}")
        position = match.end()
        if match.group("default"):
            rules.append(MappingRule(None))
            continue
        try:
            pattern = re.compile(match.group("pattern"))
        except re.error as error:
            raise PrincipalMappingError(f"Invalid rule pattern {match.group('pattern')}: {error}") from None
        replacement = re.sub(r"\$(\d+)", r"\\g<\1>", match.group("replacement"))
        rules.append(MappingRule(pattern, replacement, match.group("case")))
    return rules or [MappingRule(None)]


def rfc2253_name(subject: Sequence[Sequence[tuple[str, str]]]) -> str:
    """The DN of `ssl.SSLObject.getpeercert()["subject"]` (its RDNs most significant first) as Java's
    ``X500Principal.getName()``: least significant first, comma-separated, RFC 2253 escaping."""
    parts = []
    for rdn in reversed(subject):
        parts.append("+".join(_attribute(name, value) for name, value in rdn))
    return ",".join(parts)


def _attribute(name: str, value: str) -> str:
    if name in _KEYWORDS:
        return f"{_KEYWORDS[name]}={_escape(value)}"
    if name in _OIDS:
        oid, tag = _OIDS[name]
        encoded = value.encode()
        return f"{oid}=#{tag:02x}{_der_length(len(encoded))}{encoded.hex()}"
    return f"{name}={_escape(value)}"


def _der_length(length: int) -> str:
    if length < 0x80:
        return f"{length:02x}"
    body = length.to_bytes((length.bit_length() + 7) // 8, "big")
    return f"{0x80 | len(body):02x}{body.hex()}"


def _escape(value: str) -> str:
    escaped = re.sub(r'([,+"\\<>;])', r"\\\1", value)
    if escaped.startswith(("#", " ")):
        escaped = "\\" + escaped
    if escaped.endswith(" ") and not escaped.endswith("\\ "):
        escaped = escaped[:-1] + "\\ "
    return escaped
