"""JKS and PKCS12 key and trust stores, read as Kafka reads them and turned into PEM for `ssl`.

The standard library loads PEM only, so a store is decoded in memory: PKCS12 with `cryptography`,
JKS (and JCEKS) with `pyjks`. As in Kafka, the key is opened with ``ssl.key.password`` or, when that is
not set, with the store's password. Every failure is a StoreError with a one-line reason; the caller
names the setting.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import jks
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.serialization import pkcs12

STORE_TYPES = ("JKS", "PKCS12", "PEM")


class StoreError(Exception):
    """A store that cannot be read; the message is one line and never holds a password."""


@dataclass(frozen=True)
class KeyMaterial:
    """A private key (unencrypted PKCS#8 PEM) and its certificate chain (PEM, leaf first)."""

    key_pem: str
    chain_pem: str


def read_key_store(path: str, store_type: str, store_password: str, key_password: str | None) -> KeyMaterial:
    """The one private key of a JKS or PKCS12 key store and its chain."""
    data = _read(path)
    if store_type == "PKCS12":
        return _pkcs12_key(data, store_password, key_password)
    if store_type == "JKS":
        return _jks_key(data, store_password, key_password)
    raise StoreError(f"unknown store type {store_type}")


def read_trust_store(path: str, store_type: str, store_password: str) -> str:
    """Every certificate of a JKS or PKCS12 trust store, as concatenated PEM."""
    data = _read(path)
    if store_type == "PKCS12":
        try:
            _, certificate, others = pkcs12.load_key_and_certificates(data, store_password.encode())
        except ValueError:
            raise StoreError("not a PKCS12 store, or the password is wrong") from None
        certificates = ([certificate] if certificate is not None else []) + list(others)
    elif store_type == "JKS":
        store = _jks_load(data, store_password)
        certificates = [x509.load_der_x509_certificate(entry.cert) for entry in store.certs.values()]
        for entry in store.private_keys.values():
            certificates.extend(x509.load_der_x509_certificate(der) for _, der in entry.cert_chain[:1])
    else:
        raise StoreError(f"unknown store type {store_type}")
    if not certificates:
        raise StoreError("the store holds no certificate")
    return "".join(_pem(certificate) for certificate in certificates)


def _read(path: str) -> bytes:
    try:
        return Path(path).read_bytes()
    except OSError as error:
        raise StoreError(error.strerror or str(error)) from None


def _pkcs12_key(data: bytes, store_password: str, key_password: str | None) -> KeyMaterial:
    # keytool and openssl protect a PKCS12 store and its key with one password, and `cryptography`
    # opens both with it: a different ssl.key.password cannot open the key (as in Kafka, where it fails).
    if key_password is not None and key_password != store_password:
        raise StoreError("the key password is wrong (a PKCS12 key has the store's password)")
    try:
        key, certificate, others = pkcs12.load_key_and_certificates(data, store_password.encode())
    except ValueError:
        raise StoreError("not a PKCS12 store, or the password is wrong") from None
    if key is None or certificate is None:
        raise StoreError("the store holds no private key with a certificate")
    key_pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()
    return KeyMaterial(key_pem, "".join(_pem(c) for c in [certificate, *others]))


def _jks_key(data: bytes, store_password: str, key_password: str | None) -> KeyMaterial:
    store = _jks_load(data, store_password)
    if len(store.private_keys) != 1:
        # Kafka's key manager would pick one by the client's wishes; one key is what a listener presents
        raise StoreError(f"the store must hold exactly one private key, it holds {len(store.private_keys)}")
    (entry,) = store.private_keys.values()
    try:
        entry.decrypt(key_password if key_password is not None else store_password)
    except jks.util.DecryptionFailureException:
        raise StoreError("the key password is wrong") from None
    key = serialization.load_der_private_key(entry.pkey_pkcs8, password=None)
    key_pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()
    chain = "".join(_pem(x509.load_der_x509_certificate(der)) for _, der in entry.cert_chain)
    return KeyMaterial(key_pem, chain)


def _jks_load(data: bytes, password: str) -> jks.KeyStore:
    try:
        return jks.KeyStore.loads(data, password, try_decrypt_keys=False)
    except jks.util.KeystoreSignatureException:
        raise StoreError("the store password is wrong") from None
    except (jks.util.BadKeystoreFormatException, jks.util.UnsupportedKeystoreVersionException) as error:
        raise StoreError(f"not a JKS store ({error})") from None
    except Exception as error:  # pyjks raises bare errors (struct, ASN.1) on damaged files
        raise StoreError(f"not a JKS store ({type(error).__name__})") from None


def _pem(certificate: x509.Certificate) -> str:
    return certificate.public_bytes(serialization.Encoding.PEM).decode()
