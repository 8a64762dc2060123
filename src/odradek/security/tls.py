"""A TLS listener's server context, built with the standard library's `ssl` from Kafka's settings.

Key store: ``ssl.keystore.type`` JKS or PKCS12 (``ssl.keystore.location`` with
``ssl.keystore.password``, decoded by security/key_stores.py) or PEM, either ``ssl.keystore.location``
(one PEM file: the private key and the certificate chain) or ``ssl.keystore.key`` with
``ssl.keystore.certificate.chain`` given inline; an encrypted key is opened with ``ssl.key.password``.
Trust store (for client certificates): JKS or PKCS12 with its password, or PEM,
``ssl.truststore.location`` or ``ssl.truststore.certificates``. ``ssl.client.auth``
none/requested/required; ``ssl.enabled.protocols`` TLSv1.2 and TLSv1.3, capped by ``ssl.protocol``;
``ssl.cipher.suites`` as security/cipher_suites.py allows.
Every problem is a ConfigError naming the setting.
"""

from __future__ import annotations

import os
import ssl
import tempfile
from dataclasses import dataclass

from odradek.config.types import ConfigError, ConfigValue, Password
from odradek.security.cipher_suites import apply_cipher_suites
from odradek.security.key_stores import STORE_TYPES, StoreError, read_key_store, read_trust_store
from odradek.security.listener_settings import ListenerSettings
from odradek.security.principal_mapping import PrincipalMapper, PrincipalMappingError

_VERSIONS = {"TLSv1.2": ssl.TLSVersion.TLSv1_2, "TLSv1.3": ssl.TLSVersion.TLSv1_3}
_PROTOCOLS = {"TLS": ssl.TLSVersion.TLSv1_3, **_VERSIONS}
_CLIENT_AUTH = {"none": ssl.CERT_NONE, "requested": ssl.CERT_OPTIONAL, "required": ssl.CERT_REQUIRED}


@dataclass(frozen=True)
class ListenerTls:
    context: ssl.SSLContext
    principal_mapper: PrincipalMapper


def listener_tls(settings: ListenerSettings) -> ListenerTls:
    """The server context of a TLS listener (SSL or SASL_SSL); raises ConfigError."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    _load_key_store(context, settings)
    minimum, maximum = _versions(settings)
    context.minimum_version, context.maximum_version = minimum, maximum
    apply_cipher_suites(context, settings.strings("ssl.cipher.suites"), settings.source("ssl.cipher.suites"))
    client_auth = str(settings.get("ssl.client.auth")).lower()
    context.verify_mode = _CLIENT_AUTH[client_auth]
    if client_auth != "none" and not _load_trust_store(context, settings):
        context.load_default_certs(ssl.Purpose.CLIENT_AUTH)  # as Kafka falls back to the JVM's trust store
    elif client_auth == "none":
        _load_trust_store(context, settings)  # still checked, so a bad trust store is found now
    identification = str(settings.get("ssl.endpoint.identification.algorithm") or "")
    if identification.lower() not in ("", "https"):
        raise ConfigError(
            f"{settings.source('ssl.endpoint.identification.algorithm')}: only https or empty is known",
            "ssl.endpoint.identification.algorithm",
        )
    try:
        mapper = PrincipalMapper.from_rules(str(settings.get("ssl.principal.mapping.rules")))
    except PrincipalMappingError as error:
        raise ConfigError(f"ssl.principal.mapping.rules: {error}", "ssl.principal.mapping.rules") from None
    return ListenerTls(context, mapper)


def client_tls(settings: ListenerSettings) -> ssl.SSLContext:
    """The client context a broker opens TLS connections to other brokers with, from the settings of
    its inter-broker listener, as Kafka's inter-broker client: the trust store checks the peer (the
    system's CAs when none is given), the key store is presented as client certificate (for peers with
    ssl.client.auth), and ssl.endpoint.identification.algorithm=https checks the peer's host name."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    _load_key_store(context, settings)
    context.minimum_version, context.maximum_version = _versions(settings)
    apply_cipher_suites(context, settings.strings("ssl.cipher.suites"), settings.source("ssl.cipher.suites"))
    if not _load_trust_store(context, settings):
        context.load_default_certs(ssl.Purpose.SERVER_AUTH)
    identification = str(settings.get("ssl.endpoint.identification.algorithm") or "").lower()
    if identification not in ("", "https"):
        raise ConfigError(
            f"{settings.source('ssl.endpoint.identification.algorithm')}: only https or empty is known",
            "ssl.endpoint.identification.algorithm",
        )
    context.check_hostname = identification == "https"
    return context


def _load_key_store(context: ssl.SSLContext, settings: ListenerSettings) -> None:
    store_type = _store_type(settings, "ssl.keystore.type")
    if store_type != "PEM":
        _load_binary_key_store(context, settings, store_type)
        return
    if settings.get("ssl.keystore.password") is not None:
        raise ConfigError(
            f"{settings.source('ssl.keystore.password')}: SSL key store password cannot be specified with "
            "PEM format, only key password may be specified",
            "ssl.keystore.password",
        )
    location = settings.text("ssl.keystore.location")
    key, chain = settings.text("ssl.keystore.key"), settings.text("ssl.keystore.certificate.chain")
    key_password = _secret(settings.get("ssl.key.password"))
    if location and (key or chain):
        raise ConfigError(
            f"listener {settings.listener_name}: give ssl.keystore.location or ssl.keystore.key with "
            "ssl.keystore.certificate.chain, not both",
            "ssl.keystore.location",
        )
    try:
        if location:
            context.load_cert_chain(location, password=key_password)
        elif key and chain:
            load_inline_key(context, key, chain, key_password)
        else:
            raise ConfigError(
                f"listener {settings.listener_name} is a TLS listener: set ssl.keystore.location (a PEM "
                "file with the key and certificate chain) or ssl.keystore.key and "
                "ssl.keystore.certificate.chain",
                "ssl.keystore.location",
            )
    except (OSError, ssl.SSLError) as error:
        name = settings.source("ssl.keystore.location") if location else settings.source("ssl.keystore.key")
        reason = getattr(error, "strerror", None) or getattr(error, "reason", None) or str(error)
        raise ConfigError(f"{name}: the key and certificate cannot be loaded: {reason}", name) from None


def _load_binary_key_store(context: ssl.SSLContext, settings: ListenerSettings, store_type: str) -> None:
    """A JKS or PKCS12 key store file, as Kafka's: location and password are both required."""
    location = settings.text("ssl.keystore.location")
    if not location:
        raise ConfigError(
            f"listener {settings.listener_name} is a TLS listener: set ssl.keystore.location (the "
            f"{store_type} key store)",
            "ssl.keystore.location",
        )
    if settings.text("ssl.keystore.key") or settings.text("ssl.keystore.certificate.chain"):
        raise ConfigError(
            f"{settings.source('ssl.keystore.key')}: an inline key needs ssl.keystore.type=PEM",
            "ssl.keystore.key",
        )
    password = _secret(settings.get("ssl.keystore.password"))
    if password is None:
        raise ConfigError(
            f"{settings.source('ssl.keystore.location')}: SSL key store is specified, but key store "
            "password (ssl.keystore.password) is not specified",
            "ssl.keystore.password",
        )
    try:
        material = read_key_store(location, store_type, password, _secret(settings.get("ssl.key.password")))
        load_inline_key(context, material.key_pem, material.chain_pem, None)
    except (StoreError, OSError, ssl.SSLError) as error:
        name = settings.source("ssl.keystore.location")
        reason = getattr(error, "reason", None) or str(error)
        raise ConfigError(f"{name}: the {store_type} key store cannot be loaded: {reason}", name) from None


def load_inline_key(context: ssl.SSLContext, key: str, chain: str, password: str | None) -> None:
    # load_cert_chain reads files only: a private directory, removed as soon as the context holds the key.
    with tempfile.TemporaryDirectory(prefix="odradek-tls-") as directory:
        path = os.path.join(directory, "keystore.pem")
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as file:
            file.write(key.strip() + "\n" + chain.strip() + "\n")
        context.load_cert_chain(path, password=password)


def _load_trust_store(context: ssl.SSLContext, settings: ListenerSettings) -> bool:
    """Load the configured trusted certificates; False when none are configured."""
    location = settings.text("ssl.truststore.location")
    certificates = settings.text("ssl.truststore.certificates")
    if not (location or certificates):
        return False  # the catalog's default type is Kafka's JKS, which matters only once a store is given
    store_type = _store_type(settings, "ssl.truststore.type")
    password = _secret(settings.get("ssl.truststore.password"))
    if store_type != "PEM":
        if certificates or not location:
            raise ConfigError(
                f"{settings.source('ssl.truststore.certificates')}: inline certificates need "
                "ssl.truststore.type=PEM",
                "ssl.truststore.certificates",
            )
        if password is None:
            # Kafka would read the certificates unchecked; the store's integrity is not given up here
            raise ConfigError(
                f"{settings.source('ssl.truststore.location')}: a {store_type} trust store needs "
                "ssl.truststore.password",
                "ssl.truststore.password",
            )
        name = settings.source("ssl.truststore.location")
        try:
            context.load_verify_locations(cadata=read_trust_store(location, store_type, password))
        except (StoreError, ssl.SSLError) as error:
            reason = getattr(error, "reason", None) or str(error)
            raise ConfigError(
                f"{name}: the {store_type} trust store cannot be loaded: {reason}", name
            ) from None
        return True
    if password is not None:
        raise ConfigError(
            f"{settings.source('ssl.truststore.password')}: a PEM trust store has no password",
            "ssl.truststore.password",
        )
    try:
        if location:
            context.load_verify_locations(cafile=location)
        if certificates:
            context.load_verify_locations(cadata=certificates)
    except (OSError, ssl.SSLError) as error:
        name = settings.source("ssl.truststore.location" if location else "ssl.truststore.certificates")
        reason = getattr(error, "strerror", None) or getattr(error, "reason", None) or str(error)
        raise ConfigError(f"{name}: the trusted certificates cannot be loaded: {reason}", name) from None
    return True


def _store_type(settings: ListenerSettings, name: str) -> str:
    store_type = str(settings.get(name)).upper()
    if store_type not in STORE_TYPES:
        raise ConfigError(
            f"{settings.source(name)}={store_type}: odradek reads JKS, PKCS12 and PEM stores",
            name,
        )
    return store_type


def _versions(settings: ListenerSettings) -> tuple[ssl.TLSVersion, ssl.TLSVersion]:
    enabled = settings.strings("ssl.enabled.protocols")
    unknown = [name for name in enabled if name not in _VERSIONS]
    if unknown or not enabled:
        raise ConfigError(
            f"{settings.source('ssl.enabled.protocols')}: only TLSv1.2 and TLSv1.3 can be enabled, not "
            f"{', '.join(unknown) or 'nothing'}",
            "ssl.enabled.protocols",
        )
    protocol = str(settings.get("ssl.protocol"))
    if protocol not in _PROTOCOLS:
        raise ConfigError(
            f"{settings.source('ssl.protocol')}={protocol}: odradek knows TLS, TLSv1.2 and TLSv1.3",
            "ssl.protocol",
        )
    versions = sorted(_VERSIONS[name] for name in enabled)
    highest = min(versions[-1], _PROTOCOLS[protocol])
    if highest < versions[0]:
        raise ConfigError(f"ssl.protocol {protocol} is below every enabled protocol", "ssl.protocol")
    return versions[0], highest


def _secret(value: ConfigValue) -> str | None:
    if value is None:
        return None
    return value.value if isinstance(value, Password) else str(value)
