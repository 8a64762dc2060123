"""The TLS client context of a broker's ZooKeeper sessions, from Kafka's zookeeper.ssl.* configs.

As Kafka hands them to ZooKeeper's client (KafkaServer.zkClientConfigFromKafkaConfig, ZooKeeper's
X509Util): a key store is optional (presented as client certificate: ZooKeeper's x509 provider then
authenticates the session as the certificate's subject); without a trust store the system's CAs check
ZooKeeper's certificate; a store's type, when not given, follows its file name's extension (.jks, .p12
or .pfx, .pem); the enabled protocols default to zookeeper.ssl.protocol alone; the host name is checked
when zookeeper.ssl.endpoint.identification.algorithm is HTTPS (the default). CRL and OCSP checks are
refused by the catalog: Python's ssl fetches neither. Every problem is a ConfigError naming the config.
"""

from __future__ import annotations

import ssl

from odradek.config.broker import BrokerConfig
from odradek.config.types import ConfigError, Password
from odradek.security.cipher_suites import apply_cipher_suites
from odradek.security.key_stores import StoreError, read_key_store, read_trust_store
from odradek.security.tls import load_inline_key

_VERSIONS = {"TLSv1.2": ssl.TLSVersion.TLSv1_2, "TLSv1.3": ssl.TLSVersion.TLSv1_3}
_EXTENSIONS = {".jks": "JKS", ".p12": "PKCS12", ".pfx": "PKCS12", ".pem": "PEM"}
#: ZooKeeper's client socket classes: the JVM's choice of I/O, nothing to odradek's client, which
#: does what Netty's does (TLS included). Any other class name is refused.
CLIENT_SOCKETS = ("org.apache.zookeeper.ClientCnxnSocketNetty", "org.apache.zookeeper.ClientCnxnSocketNIO")


def zookeeper_tls(config: BrokerConfig) -> ssl.SSLContext:
    """The context TLS connections to ZooKeeper are made with; raises ConfigError."""
    socket_class = config.zookeeper_clientcnxnsocket
    if socket_class is not None and socket_class not in CLIENT_SOCKETS:
        raise ConfigError(
            f"zookeeper.clientCnxnSocket={socket_class}: odradek knows ZooKeeper's "
            f"{' and '.join(CLIENT_SOCKETS)}",
            "zookeeper.clientCnxnSocket",
        )
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.minimum_version, context.maximum_version = _versions(config)
    apply_cipher_suites(context, config.zookeeper_ssl_cipher_suites or [], "zookeeper.ssl.cipher.suites")
    identification = (config.zookeeper_ssl_endpoint_identification_algorithm or "").lower()
    if identification not in ("", "https"):
        raise ConfigError(
            f"zookeeper.ssl.endpoint.identification.algorithm={identification}: only HTTPS or empty is known",
            "zookeeper.ssl.endpoint.identification.algorithm",
        )
    context.check_hostname = identification == "https"
    _load_key_store(context, config)
    if not _load_trust_store(context, config):
        context.load_default_certs(ssl.Purpose.SERVER_AUTH)
    return context


def _versions(config: BrokerConfig) -> tuple[ssl.TLSVersion, ssl.TLSVersion]:
    protocol = config.zookeeper_ssl_protocol
    # ZooKeeper enables the context's protocol alone unless told otherwise; "TLS" is every version
    enabled = config.zookeeper_ssl_enabled_protocols or (list(_VERSIONS) if protocol == "TLS" else [protocol])
    name = (
        "zookeeper.ssl.enabled.protocols"
        if config.zookeeper_ssl_enabled_protocols
        else "zookeeper.ssl.protocol"
    )
    unknown = [version for version in enabled if version not in _VERSIONS]
    if unknown:
        raise ConfigError(f"{name}: odradek speaks TLSv1.2 and TLSv1.3, not {', '.join(unknown)}", name)
    versions = sorted(_VERSIONS[version] for version in enabled)
    return versions[0], versions[-1]


def _store_type(location: str, configured: str | None, name: str) -> str:
    store_type = (configured or "").upper() or _EXTENSIONS.get(_extension(location), "")
    if store_type not in ("JKS", "PKCS12", "PEM"):
        raise ConfigError(
            f"{name}: give JKS, PKCS12 or PEM (or a file named .jks, .p12, .pfx or .pem), not "
            f"{configured or location!r}",
            name,
        )
    return store_type


def _load_key_store(context: ssl.SSLContext, config: BrokerConfig) -> None:
    location = config.zookeeper_ssl_keystore_location
    if not location:
        return
    store_type = _store_type(location, config.zookeeper_ssl_keystore_type, "zookeeper.ssl.keystore.type")
    password = _secret(config.zookeeper_ssl_keystore_password)
    name = "zookeeper.ssl.keystore.location"
    try:
        if store_type == "PEM":  # ZooKeeper opens an encrypted PEM key with the store's password
            context.load_cert_chain(location, password=password)
            return
        if password is None:
            raise ConfigError(
                f"{name}: a {store_type} key store needs zookeeper.ssl.keystore.password",
                "zookeeper.ssl.keystore.password",
            )
        material = read_key_store(location, store_type, password, None)
        load_inline_key(context, material.key_pem, material.chain_pem, None)
    except (StoreError, OSError, ssl.SSLError) as error:
        reason = getattr(error, "strerror", None) or getattr(error, "reason", None) or str(error)
        raise ConfigError(f"{name}: the {store_type} key store cannot be loaded: {reason}", name) from None


def _load_trust_store(context: ssl.SSLContext, config: BrokerConfig) -> bool:
    location = config.zookeeper_ssl_truststore_location
    if not location:
        return False
    store_type = _store_type(location, config.zookeeper_ssl_truststore_type, "zookeeper.ssl.truststore.type")
    password = _secret(config.zookeeper_ssl_truststore_password)
    name = "zookeeper.ssl.truststore.location"
    try:
        if store_type == "PEM":
            context.load_verify_locations(cafile=location)
            return True
        if password is None:
            # ZooKeeper would read the certificates unchecked; the store's integrity is not given up here
            raise ConfigError(
                f"{name}: a {store_type} trust store needs zookeeper.ssl.truststore.password",
                "zookeeper.ssl.truststore.password",
            )
        context.load_verify_locations(cadata=read_trust_store(location, store_type, password))
    except (StoreError, OSError, ssl.SSLError) as error:
        reason = getattr(error, "strerror", None) or getattr(error, "reason", None) or str(error)
        raise ConfigError(f"{name}: the {store_type} trust store cannot be loaded: {reason}", name) from None
    return True


def _extension(location: str) -> str:
    dot = location.rfind(".")
    return location[dot:].lower() if dot > location.rfind("/") else ""


def _secret(value: Password | None) -> str | None:
    return value.value if value is not None else None
