"""Kafka's Java client security settings, as Spark's Kafka source takes them, in librdkafka's names.

Spark passes `kafka.security.protocol`, `kafka.sasl.*` and `kafka.ssl.*` to the Java client; the source
and sink here connect through confluent-kafka (librdkafka), so the Java names are translated:

- `sasl.mechanism` -> `sasl.mechanisms` (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512; GSSAPI and OAUTHBEARER refused)
- `sasl.jaas.config` (a PlainLoginModule or ScramLoginModule line) -> `sasl.username` / `sasl.password`
- `ssl.truststore.location` (type PEM) -> `ssl.ca.location`; `ssl.truststore.certificates` -> `ssl.ca.pem`
- `ssl.keystore.location` (type PEM: key and certificate chain in one file) -> `ssl.certificate.location`
  and `ssl.key.location`; `ssl.keystore.key` / `ssl.keystore.certificate.chain` -> `ssl.key.pem` /
  `ssl.certificate.pem`; `ssl.key.password` stays
- `ssl.endpoint.identification.algorithm` empty -> `none`

JKS and PKCS12 stores (`ssl.*.type`, or a location named `.jks`/`.p12` with no type, Java's default being
JKS) are read here with their passwords and passed as inline PEM. librdkafka's own names
(`sasl.username`, `ssl.ca.location`, ...) pass through unchanged, so either style works.

A delegation token's login (a ScramLoginModule line with `tokenauth="true"`) is one librdkafka cannot
make (its SCRAM sends no extensions): `take_token_login` turns it into `sasl.username`/`sasl.password`
for odradek's own client (client/security.py, `token=True`), which the source and sink then use for
every connection. Elsewhere (`parse_jaas_login`: the CLI, the pipeline) it is refused by name.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from odradek.security.key_stores import STORE_TYPES, StoreError, read_key_store, read_trust_store

SUPPORTED_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
SUPPORTED_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")

_LOGIN_MODULES = {
    "org.apache.kafka.common.security.plain.PlainLoginModule": ("PLAIN",),
    "org.apache.kafka.common.security.scram.ScramLoginModule": ("SCRAM-SHA-256", "SCRAM-SHA-512"),
}
_JAAS = re.compile(
    r"^\s*(?P<module>[\w.$]+)\s+(?P<flag>required|requisite|sufficient|optional)(?P<rest>.*?);?\s*$", re.S
)
_JAAS_OPTION = re.compile(r'\s*(?P<key>[\w.]+)\s*=\s*(?:"(?P<quoted>(?:[^"\\]|\\.)*)"|(?P<bare>[^\s;"]+))')
# Java settings with no librdkafka counterpart that would change what the connection does: refused.
_UNSUPPORTED = {
    "sasl.kerberos.service.name": "Kerberos (GSSAPI) is not supported",
    "sasl.login.callback.handler.class": "Java callback handlers cannot run here",
    "sasl.client.callback.handler.class": "Java callback handlers cannot run here",
    "sasl.login.class": "Java login classes cannot run here",
    "ssl.keymanager.algorithm": "Java key managers are not used (PEM files are read directly)",
    "ssl.trustmanager.algorithm": "Java trust managers are not used (PEM files are read directly)",
    "ssl.engine.factory.class": "Java SSL engine factories cannot run here",
}


class SecurityConfigError(ValueError):
    """A security setting that cannot be honoured; the message names it and says what to do."""


def librdkafka_security(params: Mapping[str, str]) -> dict[str, str]:
    """`params` (Kafka client settings, without the `kafka.` prefix) with the Java security settings
    translated to librdkafka's; everything else is returned as given."""
    config = dict(params)
    protocol = config.get("security.protocol")
    if protocol is not None:
        if protocol.strip().upper() not in SUPPORTED_PROTOCOLS:
            raise SecurityConfigError(
                f"Unsupported security.protocol '{protocol}': use one of {', '.join(SUPPORTED_PROTOCOLS)}"
            )
        config["security.protocol"] = protocol.strip().upper()
    for name, reason in _UNSUPPORTED.items():
        if name in config:
            raise SecurityConfigError(f"Kafka option '{name}' is not supported: {reason}")

    mechanism = config.pop("sasl.mechanism", None)
    if mechanism is not None:
        config.setdefault("sasl.mechanisms", mechanism)
    if "sasl.mechanisms" in config:
        value = config["sasl.mechanisms"].strip().upper()
        if value not in SUPPORTED_MECHANISMS:
            raise SecurityConfigError(
                f"Unsupported sasl.mechanism '{config['sasl.mechanisms']}': use one of "
                f"{', '.join(SUPPORTED_MECHANISMS)} (GSSAPI and OAUTHBEARER are not supported)"
            )
        config["sasl.mechanisms"] = value
    translate_java_login(config)
    _store(config, "truststore", {"location": "ssl.ca.location", "certificates": "ssl.ca.pem"})
    _store(config, "keystore", {"key": "ssl.key.pem", "certificate.chain": "ssl.certificate.pem"})
    _translate_endpoint_identification(config)
    return config


def translate_java_client_settings(config: dict[str, str]) -> None:
    """What Kafka's own tools read from a client properties file (`--command-config`) and librdkafka
    does not, in librdkafka's names, in place: the JAAS login line, trust and key stores (as
    `translate_java_stores`), and an empty `ssl.endpoint.identification.algorithm` (Java's "do not
    check the host name"). librdkafka's own names, and settings it shares with Java, are left alone."""
    translate_java_login(config)
    translate_java_stores(config)
    _translate_endpoint_identification(config)


def translate_java_login(config: dict[str, str]) -> None:
    """`sasl.jaas.config` (a PlainLoginModule or ScramLoginModule line) as `sasl.username` and
    `sasl.password`, in place; those, when given too, win."""
    jaas = config.pop("sasl.jaas.config", None)
    if jaas is not None:
        mechanism = config.get("sasl.mechanism", config.get("sasl.mechanisms", "PLAIN"))
        username, password = parse_jaas_login(jaas, mechanism)
        config.setdefault("sasl.username", username)
        config.setdefault("sasl.password", password)


def translate_java_stores(config: dict[str, str]) -> None:
    """Java's trust store settings, and a key store given a Java type (or named `.jks`), turned into
    librdkafka's in place; librdkafka's own `ssl.keystore.location` with `ssl.keystore.password` (a
    PKCS12 file, which librdkafka reads itself) is left as it is."""
    _store(config, "truststore", {"location": "ssl.ca.location", "certificates": "ssl.ca.pem"})
    location = config.get("ssl.keystore.location", "").lower()
    if "ssl.keystore.type" in config or location.endswith((".jks", ".keystore")):
        _store(config, "keystore", {"key": "ssl.key.pem", "certificate.chain": "ssl.certificate.pem"})


@dataclass(frozen=True)
class JaasLogin:
    """A PLAIN or SCRAM login line's credentials; `token`: a delegation token's (`tokenauth=true`)."""

    username: str
    password: str = field(repr=False)
    token: bool = False


def parse_jaas_login(text: str, mechanism: str) -> tuple[str, str]:
    """Username and password from a Java `sasl.jaas.config` line for PLAIN or SCRAM (a delegation
    token's refused: librdkafka cannot log in with one)."""
    login = parse_jaas(text, mechanism)
    if login.token:
        # librdkafka's SCRAM client sends no extensions: it cannot say `tokenauth=true`, and its login
        # would be refused as an unknown user's
        raise SecurityConfigError(
            "sasl.jaas.config with tokenauth=true (a delegation token) is not supported here: librdkafka "
            "cannot log in with a token; the odradek source and sink (format odradek) and Spark's Kafka "
            "connector (format kafka) can"
        )
    return login.username, login.password


def take_token_login(config: dict[str, str]) -> bool:
    """Java settings (`sasl.jaas.config`, `sasl.mechanism`): when the login line is a delegation token's
    (ScramLoginModule with `tokenauth="true"`), it is replaced in place by `sasl.username` (the token
    id) and `sasl.password` (its HMAC) and True returned; any other login is left as it is."""
    jaas = config.get("sasl.jaas.config")
    if jaas is None:
        return False
    login = parse_jaas(jaas, config.get("sasl.mechanism", config.get("sasl.mechanisms", "PLAIN")))
    if not login.token:
        return False
    del config["sasl.jaas.config"]
    config.setdefault("sasl.username", login.username)
    config.setdefault("sasl.password", login.password)
    return True


def parse_jaas(text: str, mechanism: str) -> JaasLogin:
    """The credentials of a Java `sasl.jaas.config` line for PLAIN or SCRAM."""
    match = _JAAS.match(text)
    if match is None:
        raise SecurityConfigError(
            "Kafka option 'sasl.jaas.config' must be '<LoginModule> required username=\"...\" "
            'password="...";\''
        )
    module = match["module"]
    if module not in _LOGIN_MODULES:
        raise SecurityConfigError(
            f"Login module {module} in sasl.jaas.config is not supported: use "
            f"{' or '.join(sorted(_LOGIN_MODULES))}"
        )
    if mechanism.upper() not in _LOGIN_MODULES[module]:
        raise SecurityConfigError(f"Login module {module} does not serve sasl.mechanism {mechanism}")
    options: dict[str, str] = {}
    rest = match["rest"]
    position = 0
    while rest[position:].strip():
        option = _JAAS_OPTION.match(rest, position)
        if option is None:  # (what follows is most often the password: never quoted)
            after = f"after option {list(options)[-1]}" if options else "after the login module"
            raise SecurityConfigError(
                f'Cannot read sasl.jaas.config {after}: options are key=value or key="value" '
                '(a \\" inside quotes), separated by spaces, ending with ";"'
            )
        quoted = option["quoted"]
        value = re.sub(r"\\(.)", r"\1", quoted) if quoted is not None else option["bare"]
        options[option["key"]] = value
        position = option.end()
    if "username" not in options or "password" not in options:
        raise SecurityConfigError("sasl.jaas.config must give both username and password")
    return JaasLogin(options["username"], options["password"], options.get("tokenauth", "").lower() == "true")


def _translate_endpoint_identification(config: dict[str, str]) -> None:
    endpoint = config.get("ssl.endpoint.identification.algorithm")
    if endpoint is not None and endpoint.strip() == "":
        config["ssl.endpoint.identification.algorithm"] = "none"


def _store(config: dict[str, str], store: str, pem_names: dict[str, str]) -> None:
    """ssl.<store>.* : PEM only, translated; a password only for the keystore's key."""
    prefix = f"ssl.{store}."
    names = [k for k in config if k.startswith(prefix)]
    if not names:
        return
    given = config.pop(f"{prefix}type", None)
    store_file = config.get(f"{prefix}location", "").lower()
    # Java's default store type is JKS: without a type, a store file named as one is not read as PEM.
    if given is None and store_file.endswith((".jks", ".p12", ".pfx", ".keystore", ".truststore")):
        given = "PKCS12" if store_file.endswith((".p12", ".pfx")) else "JKS"
    kind = (given or "PEM").strip().upper()
    if kind in STORE_TYPES and kind != "PEM":
        _binary_store(config, store, kind)
        return
    if kind != "PEM":
        raise SecurityConfigError(f"ssl.{store}.type {kind} is not supported: use JKS, PKCS12 or PEM")
    for suffix, target in pem_names.items():
        value = config.pop(prefix + suffix, None)
        if value is not None:
            config.setdefault(target, value)
    location = config.pop(f"{prefix}location", None)
    if location is not None:  # only the keystore gets here: the truststore's is in pem_names
        config.setdefault("ssl.certificate.location", location)
        config.setdefault("ssl.key.location", location)
    password = config.pop(f"{prefix}password", None)
    if password and store == "truststore":
        raise SecurityConfigError("ssl.truststore.password cannot be given for a PEM truststore")
    if password:
        config.setdefault("ssl.key.password", password)
    leftover = [k for k in config if k.startswith(prefix)]
    if leftover:
        raise SecurityConfigError(
            f"Kafka option(s) {', '.join(sorted(leftover))} not supported with PEM stores"
        )


def _binary_store(config: dict[str, str], store: str, kind: str) -> None:
    """A JKS or PKCS12 store read here and handed to librdkafka as inline PEM (`ssl.ca.pem`, or
    `ssl.key.pem` with `ssl.certificate.pem`): librdkafka reads no JKS, and no trust store in PKCS12."""
    prefix = f"ssl.{store}."
    location = config.pop(f"{prefix}location", None)
    password = config.pop(f"{prefix}password", None)
    if not location:
        raise SecurityConfigError(f"ssl.{store}.type {kind} needs ssl.{store}.location")
    if password is None:
        raise SecurityConfigError(f"ssl.{store}.location is a {kind} store: set ssl.{store}.password")
    leftover = [k for k in config if k.startswith(prefix)]
    if leftover:
        raise SecurityConfigError(f"Kafka option(s) {', '.join(sorted(leftover))} need ssl.{store}.type=PEM")
    try:
        if store == "truststore":
            config["ssl.ca.pem"] = read_trust_store(location, kind, password)
            return
        material = read_key_store(location, kind, password, config.pop("ssl.key.password", None))
    except StoreError as error:
        raise SecurityConfigError(
            f"ssl.{store}.location {location}: the {kind} store cannot be read: {error}"
        ) from None
    config["ssl.key.pem"], config["ssl.certificate.pem"] = material.key_pem, material.chain_pem


class KafkaAuthenticationError(RuntimeError):
    """The broker refused the SASL credentials or the TLS handshake failed: retrying will not help."""


def raise_on_authentication_error(error: object) -> None:
    """A librdkafka `error_cb`: authentication failures stop the query (raised from the next poll, flush
    or consume) instead of being retried until a timeout; other errors are left to librdkafka."""
    from confluent_kafka import KafkaError

    code = getattr(error, "code", lambda: None)()
    if code == KafkaError._AUTHENTICATION:
        raise KafkaAuthenticationError(
            f"Authentication to Kafka failed: {getattr(error, 'str', lambda: error)()} "
            "(check kafka.sasl.jaas.config / kafka.sasl.mechanism and kafka.ssl.* options)"
        )


def is_secured(config: Mapping[str, object]) -> bool:
    return str(config.get("security.protocol", "PLAINTEXT")).upper() != "PLAINTEXT"


def check_connection(client: object, timeout_s: float) -> None:
    """Metadata from a freshly made secured client within `timeout_s`, failing at once (not at the end of
    the timeout) when authentication is refused: `list_topics` does not serve `error_cb`, `poll` does."""
    import time

    from confluent_kafka import KafkaException

    deadline = time.monotonic() + timeout_s
    while True:
        try:
            client.list_topics(timeout=1.0)  # type: ignore[attr-defined]
            return
        except KafkaException:
            client.poll(0)  # type: ignore[attr-defined]  # raises KafkaAuthenticationError via error_cb
            if time.monotonic() >= deadline:
                raise
