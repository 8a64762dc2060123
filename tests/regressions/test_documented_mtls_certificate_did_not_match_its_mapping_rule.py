"""docs/security.md's mutual-TLS examples: the client certificate its openssl commands made
(`-subj "/CN=app1/OU=payments/O=Example"`) has the DN `O=Example,OU=payments,CN=app1` (RFC 2253 writes
the last RDN first), which the documented rule `^CN=([^,]*),OU=([^,]*),.*$` never matches, so the
client was `User:O=Example,OU=payments,CN=app1` (DEFAULT), not the principal the text implied; and the
brokers' rule `^CN=([^,]*),.*$` cannot match a certificate of `CN=broker` alone.

Everything here is read from the doc, so it cannot drift again: step 1's shell commands are run as
written, step 2's server.properties is loaded as the broker loads it, a real TLS handshake presents the
documented certificate, and its DN and principal must be the ones the text names.
"""

from __future__ import annotations

import re
import ssl
import subprocess
from pathlib import Path

import pytest

from odradek.config.broker import BrokerConfig
from odradek.config.properties import parse_properties
from odradek.security.listener_security import listener_security
from odradek.security.principal_mapping import PrincipalMapper, rfc2253_name
from odradek.security.tls import ListenerTls
from tests.support.requirements import require_executable

DOC = Path(__file__).resolve().parents[2] / "docs" / "security.md"
SECRETS = "/etc/odradek/secrets"

pytestmark = pytest.mark.timeout(60)


@pytest.fixture(scope="module")
def secrets(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Step 1's commands as written (they make `secrets/` and work there)."""
    require_executable("openssl")
    commands = _section_block("### 1. A certificate authority", "sh")
    base = tmp_path_factory.mktemp("security-doc")
    subprocess.run(["bash", "-e", "-c", commands], cwd=base, check=True, capture_output=True, timeout=60)
    return base / "secrets"


def test_the_documented_client_certificate_maps_to_the_documented_principal(secrets: Path) -> None:
    tls = _step_2_listener(secrets, "SSL")
    documented = re.search(
        r"client certificate of step 1 \(`([^`]+)`\) connects to the SSL\s+listener as `User:([^`]+)`",
        _doc(),
    )
    assert documented is not None, "docs/security.md no longer names the client certificate's principal"
    dn, principal = documented.groups()
    seen_dn = _handshake(tls, secrets, secrets / "client-cert.pem", secrets / "client-key.pem")
    assert seen_dn == dn
    assert tls.principal_mapper.name(seen_dn) == principal


def test_the_documented_broker_rule_maps_a_broker_certificate_to_the_documented_principal(
    secrets: Path,
) -> None:
    found = re.search(
        r"`ssl\.principal\.mapping\.rules=([^`]+)` and\s+certificates with `([^`]+)` make it `User:([^`]+)`",
        _doc(),
    )
    assert found is not None, "docs/security.md no longer documents the brokers' mapping rule"
    rules, common_name, principal = found.groups()
    mapper = PrincipalMapper.from_rules(rules)
    tls = _step_2_listener(secrets, "SSL")
    # A broker's certificate named only so, and one with more to its name.
    for subject in (f"/{common_name}", f"/O=Example/{common_name}"):
        certificate, key = _issue(secrets, subject)
        dn = _handshake(tls, secrets, certificate, key)
        assert mapper.name(dn) == principal, dn


def _doc() -> str:
    return DOC.read_text()


def _section_block(heading: str, language: str) -> str:
    """The first ```language block after `heading` in the doc."""
    text = _doc()
    start = text.index(heading)
    block = re.compile(rf"```{language}\n(.*?)```", re.S).search(text, start)
    assert block is not None, f"no {language} block after {heading!r}"
    return block.group(1)


def _step_2_listener(secrets: Path, listener: str) -> ListenerTls:
    """Step 2's server.properties, its secrets where step 1 made them, as the broker reads it."""
    text = _section_block("### 2. server.properties", "properties").replace(SECRETS, str(secrets))
    settings = {**parse_properties(text), "log.dirs": str(secrets / "data")}
    tls = listener_security(BrokerConfig(settings, warn_unknown=False))[listener].tls
    assert tls is not None
    return tls


def _issue(secrets: Path, subject: str) -> tuple[Path, Path]:
    """A client certificate for `subject` from step 1's CA."""
    name = re.sub(r"\W", "_", subject)
    key, request, certificate = (secrets / f"{name}{suffix}" for suffix in ("-key.pem", ".csr", ".pem"))
    for command in (
        [
            "openssl",
            "req",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            key,
            "-out",
            request,
            "-subj",
            subject,
        ],
        [
            "openssl",
            "x509",
            "-req",
            "-in",
            request,
            "-CA",
            "ca.pem",
            "-CAkey",
            "ca-key.pem",
            "-CAcreateserial",
            "-days",
            "1",
            "-sha256",
            "-out",
            certificate,
        ],
    ):
        subprocess.run(
            [str(part) for part in command], cwd=secrets, check=True, capture_output=True, timeout=60
        )
    return certificate, key


def _handshake(tls: ListenerTls, secrets: Path, certificate: Path, key: Path) -> str:
    """The DN the listener sees (as the broker's connection reads it) when a client presents
    `certificate` in a TLS handshake, trusting step 1's CA for the broker's name."""
    client_context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    client_context.load_verify_locations(secrets / "ca.pem")
    client_context.load_cert_chain(certificate, key)
    to_server, to_client = ssl.MemoryBIO(), ssl.MemoryBIO()
    server_in, server_out = ssl.MemoryBIO(), ssl.MemoryBIO()
    client = client_context.wrap_bio(to_client, to_server, server_hostname="broker.example.com")
    server = tls.context.wrap_bio(server_in, server_out, server_side=True)
    done = {"client": False, "server": False}
    for _ in range(20):
        for side, endpoint in (("client", client), ("server", server)):
            if not done[side]:
                try:
                    endpoint.do_handshake()
                    done[side] = True
                except ssl.SSLWantReadError:
                    pass
        server_in.write(to_server.read())
        to_client.write(server_out.read())
        if all(done.values()):
            break
    assert all(done.values()), "the TLS handshake did not complete"
    peer = server.getpeercert()
    assert peer, "the listener saw no client certificate"
    return rfc2253_name(peer["subject"])
