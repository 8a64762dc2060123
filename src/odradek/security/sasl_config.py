"""A SASL listener's settings, read and checked once at start-up: the mechanisms it offers
(`sasl.enabled.mechanisms`), PLAIN's users (from the mechanism's JAAS config), and the limits.

Kafka's default mechanism list is GSSAPI (Kerberos), which odradek does not offer: a SASL listener must
name its mechanisms. A PLAIN listener without a JAAS config fails the start, as Kafka's does.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from odradek.config.types import ConfigError
from odradek.security.jaas import JaasConfigError, parse_jaas_config, plain_users
from odradek.security.listener_settings import ListenerSettings
from odradek.security.scram_credentials import MECHANISMS as SCRAM_MECHANISMS

PLAIN = "PLAIN"
SUPPORTED_MECHANISMS = (PLAIN, *SCRAM_MECHANISMS)
PLAIN_LOGIN_MODULE = "org.apache.kafka.common.security.plain.PlainLoginModule"


@dataclass(frozen=True)
class ListenerSasl:
    listener_name: str
    mechanisms: tuple[str, ...]
    plain_users: dict[str, str] = field(repr=False)
    max_receive_size: int
    #: connections.max.reauth.ms: 0 means sessions never expire.
    max_reauth_ms: int
    failed_authentication_delay_ms: int


def listener_sasl(settings: ListenerSettings) -> ListenerSasl:
    """The SASL settings of a SASL_PLAINTEXT or SASL_SSL listener; raises ConfigError."""
    enabled = settings.strings("sasl.enabled.mechanisms")
    mechanisms = tuple(name.strip().upper() for name in enabled if name.strip())
    unsupported = [name for name in mechanisms if name not in SUPPORTED_MECHANISMS]
    if unsupported or not mechanisms:
        raise ConfigError(
            f"{settings.source('sasl.enabled.mechanisms')}: odradek offers "
            f"{', '.join(SUPPORTED_MECHANISMS)}, not {', '.join(unsupported) or 'nothing'} "
            f"(listener {settings.listener_name})",
            "sasl.enabled.mechanisms",
        )
    users: dict[str, str] = {}
    if PLAIN in mechanisms:
        users = _plain_users(settings)
    return ListenerSasl(
        settings.listener_name,
        mechanisms,
        users,
        int(str(settings.get("sasl.server.max.receive.size"))),
        int(str(settings.get("connections.max.reauth.ms"))),
        int(str(settings.get("connection.failed.authentication.delay.ms"))),
    )


def _plain_users(settings: ListenerSettings) -> dict[str, str]:
    text = settings.text("sasl.jaas.config", PLAIN)
    source = settings.source("sasl.jaas.config", PLAIN)
    if not text:
        raise ConfigError(
            f"listener {settings.listener_name} offers PLAIN but has no JAAS config: set "
            f"{settings.prefix}plain.sasl.jaas.config (or sasl.jaas.config) to "
            f'{PLAIN_LOGIN_MODULE} required user_<name>="<password>";',
            "sasl.jaas.config",
        )
    try:
        module = parse_jaas_config(text)
    except JaasConfigError as error:
        raise ConfigError(f"{source}: {error}", "sasl.jaas.config") from None
    if module.name != PLAIN_LOGIN_MODULE:
        raise ConfigError(f"{source}: PLAIN needs the login module {PLAIN_LOGIN_MODULE}", "sasl.jaas.config")
    return plain_users(module)
