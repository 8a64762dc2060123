"""JKS and PKCS12 key and trust stores made with Java's keytool, as Kafka users make them: a trustme
key pair is exported to PKCS12 and imported with `keytool -importkeystore`, the CA with -importcert."""

from __future__ import annotations

import subprocess
from pathlib import Path

import trustme
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.serialization import pkcs12
from cryptography.x509 import load_pem_x509_certificate

from tests.support.requirements import require_executable


def _keytool(*arguments: str) -> None:
    require_executable("keytool")
    result = subprocess.run(["keytool", *arguments], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr


def key_store(cert: trustme.LeafCert, path: Path, store_type: str, password: str) -> Path:
    """A key store of `store_type` (JKS or PKCS12) holding the key and chain of `cert`, alias "broker"."""
    key = serialization.load_pem_private_key(cert.private_key_pem.bytes(), password=None)
    chain = [load_pem_x509_certificate(pem.bytes()) for pem in cert.cert_chain_pems]
    source = path.with_suffix(".source.p12")
    source.write_bytes(
        pkcs12.serialize_key_and_certificates(
            b"broker",
            key,
            chain[0],
            chain[1:],
            serialization.BestAvailableEncryption(password.encode()),  # type: ignore[arg-type]
        )
    )
    _keytool(
        "-importkeystore", "-noprompt", "-srckeystore", str(source), "-srcstoretype", "PKCS12",
        "-srcstorepass", password, "-destkeystore", str(path), "-deststoretype", store_type,
        "-deststorepass", password,
    )  # fmt: skip
    source.unlink()
    return path


def trust_store(ca: trustme.CA, path: Path, store_type: str, password: str) -> Path:
    """A trust store of `store_type` holding the CA's certificate, alias "ca"."""
    ca_file = path.with_suffix(".ca.pem")
    ca.cert_pem.write_to_path(str(ca_file))
    _keytool(
        "-importcert", "-noprompt", "-alias", "ca", "-file", str(ca_file), "-keystore", str(path),
        "-storetype", store_type, "-storepass", password,
    )  # fmt: skip
    return path


def written_key_store(cert: trustme.LeafCert, path: Path, password: str) -> Path:
    """A PKCS12 key store of `cert` written here, as `openssl pkcs12 -export` would, without a JVM: for
    a server the test does not examine (Java 17 reads it as keytool's). Alias "server"."""
    key = serialization.load_pem_private_key(cert.private_key_pem.bytes(), password=None)
    chain = [load_pem_x509_certificate(pem.bytes()) for pem in cert.cert_chain_pems]
    path.write_bytes(
        pkcs12.serialize_key_and_certificates(
            b"server",
            key,  # type: ignore[arg-type]
            chain[0],
            chain[1:],
            serialization.BestAvailableEncryption(password.encode()),
        )
    )
    return path


def written_trust_store(ca: trustme.CA, path: Path, password: str) -> Path:
    """A PKCS12 trust store of the CA with Java's trusted-certificate attribute, written here without a
    JVM (cryptography's Java trust store). Alias "ca"."""
    certificate = load_pem_x509_certificate(ca.cert_pem.bytes())
    path.write_bytes(
        pkcs12.serialize_java_truststore(
            [pkcs12.PKCS12Certificate(certificate, b"ca")],
            serialization.BestAvailableEncryption(password.encode()),
        )
    )
    return path
