"""``ssl.cipher.suites``: Kafka's (IANA) suite names applied to an `ssl.SSLContext`.

TLS 1.2 suites are restricted with ``set_ciphers`` under their OpenSSL names. The standard library
cannot restrict TLS 1.3 suites (OpenSSL's three defaults always apply), so a list is accepted with
TLSv1.3 enabled only when it names all three of them; otherwise the start fails naming the setting,
and ``ssl.enabled.protocols=TLSv1.2`` is the way to a restricted list. A list with no TLS 1.2 suite
leaves TLS 1.2 nothing to negotiate, so the context's minimum becomes TLSv1.3, as a JVM would behave.
"""

from __future__ import annotations

import ssl

from odradek.config.types import ConfigError

#: The TLS 1.3 suites OpenSSL offers, which Python's ssl cannot narrow.
TLS13_SUITES = ("TLS_AES_256_GCM_SHA384", "TLS_CHACHA20_POLY1305_SHA256", "TLS_AES_128_GCM_SHA256")

#: IANA name -> OpenSSL name, for the TLS 1.2 suites OpenSSL 3 offers by default.
TLS12_SUITES = {
    "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384": "ECDHE-ECDSA-AES256-GCM-SHA384",
    "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384": "ECDHE-RSA-AES256-GCM-SHA384",
    "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256": "ECDHE-ECDSA-AES128-GCM-SHA256",
    "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256": "ECDHE-RSA-AES128-GCM-SHA256",
    "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256": "ECDHE-ECDSA-CHACHA20-POLY1305",
    "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256": "ECDHE-RSA-CHACHA20-POLY1305",
    "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA384": "ECDHE-ECDSA-AES256-SHA384",
    "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA384": "ECDHE-RSA-AES256-SHA384",
    "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256": "ECDHE-ECDSA-AES128-SHA256",
    "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256": "ECDHE-RSA-AES128-SHA256",
    "TLS_DHE_RSA_WITH_AES_256_GCM_SHA384": "DHE-RSA-AES256-GCM-SHA384",
    "TLS_DHE_RSA_WITH_AES_128_GCM_SHA256": "DHE-RSA-AES128-GCM-SHA256",
    "TLS_DHE_RSA_WITH_AES_256_CBC_SHA256": "DHE-RSA-AES256-SHA256",
    "TLS_DHE_RSA_WITH_AES_128_CBC_SHA256": "DHE-RSA-AES128-SHA256",
}
NAME = "ssl.cipher.suites"


def apply_cipher_suites(context: ssl.SSLContext, suites: list[str], source: str) -> None:
    """Restrict `context` (its protocol versions already set) to `suites`; raises ConfigError."""
    if not suites:
        return
    unknown = [suite for suite in suites if suite not in TLS12_SUITES and suite not in TLS13_SUITES]
    if unknown:
        raise ConfigError(f"{source}: unknown or unavailable suite(s) {', '.join(unknown)}", NAME)
    tls12 = [TLS12_SUITES[suite] for suite in suites if suite in TLS12_SUITES]
    tls13_enabled = context.maximum_version >= ssl.TLSVersion.TLSv1_3
    tls12_enabled = context.minimum_version <= ssl.TLSVersion.TLSv1_2
    if tls13_enabled and not set(TLS13_SUITES) <= set(suites):
        raise ConfigError(
            f"{source}: TLS 1.3 suites cannot be restricted here (Python's ssl), so with TLSv1.3 enabled the "
            f"list must name all of {', '.join(TLS13_SUITES)}; or set ssl.enabled.protocols=TLSv1.2",
            NAME,
        )
    if tls12_enabled and not tls12:
        if not tls13_enabled:
            raise ConfigError(f"{source}: no TLS 1.2 suite is listed, and only TLSv1.2 is enabled", NAME)
        context.minimum_version = ssl.TLSVersion.TLSv1_3  # TLS 1.2 would have nothing to negotiate
        return
    context.set_ciphers(":".join(tls12))
