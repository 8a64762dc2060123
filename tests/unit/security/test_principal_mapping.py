"""TLS client principals: the certificate's DN in Java's RFC 2253 form through Kafka's mapping rules."""

from __future__ import annotations

import pytest

from odradek.security.principal_mapping import (
    PrincipalMapper,
    PrincipalMappingError,
    parse_rules,
    rfc2253_name,
)

# As ssl.SSLObject.getpeercert() gives a subject: RDNs most significant first.
SUBJECT = (
    (("countryName", "US"),),
    (("organizationName", "Example, Inc."),),
    (("organizationalUnitName", "Streaming"),),
    (("commonName", "kafka-client"),),
)


def test_dn_is_least_significant_first_with_rfc2253_escaping() -> None:
    assert rfc2253_name(SUBJECT) == "CN=kafka-client,OU=Streaming,O=Example\\, Inc.,C=US"


def test_multi_valued_rdn_leading_hash_and_trailing_space() -> None:
    subject = ((("commonName", "#a "), ("userId", "u1")),)
    assert rfc2253_name(subject) == "CN=\\#a\\ +UID=u1"


def test_email_address_is_written_as_java_writes_it() -> None:
    # X500Principal.getName() knows no keyword for emailAddress: OID and the DER IA5String in hex
    subject = ((("commonName", "c"),), (("emailAddress", "a@b.c"),))
    assert rfc2253_name(subject) == "1.2.840.113549.1.9.1=#16056140622e63,CN=c"


def test_default_rule_keeps_the_whole_dn() -> None:
    assert PrincipalMapper.from_rules("DEFAULT").name("CN=a,O=b") == "CN=a,O=b"


def test_first_matching_rule_wins_with_case_changes() -> None:
    rules = "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/,RULE:^CN=(.*?),OU=(.*?),.*$/$1@$2/L,DEFAULT"
    mapper = PrincipalMapper.from_rules(rules)
    assert mapper.name("CN=kafka-svc,OU=ServiceUsers,O=Unknown") == "kafka-svc"
    assert mapper.name("CN=Duke,OU=JavaSoft,O=Sun") == "duke@javasoft"
    assert mapper.name("O=Sun,C=US") == "O=Sun,C=US"
    assert PrincipalMapper.from_rules("RULE:^CN=([^,]*).*$/$1/U").name("CN=ab,O=x") == "AB"


def test_rules_may_be_separated_by_newlines() -> None:
    mapper = PrincipalMapper.from_rules("RULE:^CN=(.*?),.*$/$1/\n  DEFAULT")
    assert mapper.name("CN=x,O=y") == "x"


def test_no_rule_applying_is_an_error() -> None:
    with pytest.raises(PrincipalMappingError, match="No rules apply to O=x"):
        PrincipalMapper.from_rules("RULE:^CN=(.*)$/$1/").name("O=x")


@pytest.mark.parametrize("text", ["RULE:^CN=(.*)$/$1", "RULE:^CN=(.*)$/$1/X", "NOPE", "RULE:(/$1/"])
def test_malformed_rules_are_refused(text: str) -> None:
    with pytest.raises(PrincipalMappingError):
        parse_rules(text)
