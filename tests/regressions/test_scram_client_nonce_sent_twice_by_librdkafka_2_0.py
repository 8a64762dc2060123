"""librdkafka before 2.1 (Debian's kcat 1.7.1) puts its client nonce in front of the whole server nonce
in the client-final message. Kafka accepts a nonce that ends with the server's; odradek refused it
("Server nonce doesn't match") while scramp checked the final message, so kcat could not use SCRAM."""

from __future__ import annotations

import base64
import hashlib
import hmac

from odradek.security.sasl_mechanisms import ScramServer
from odradek.security.scram_credentials import credential_from_password, salted_password


def test_client_nonce_prefixed_twice_is_accepted_as_kafka_does() -> None:
    credential = credential_from_password("SCRAM-SHA-256", "pw", 4096)
    server = ScramServer("SCRAM-SHA-256", lambda user, mechanism: credential if user == "u" else None)
    client_nonce = "abc"
    server_first = server.evaluate(f"n,,n=u,r={client_nonce}".encode()).decode()
    attributes = dict(part.split("=", 1) for part in server_first.split(","))
    without_proof = f"c=biws,r={client_nonce}{attributes['r']}"  # librdkafka 2.0's doubled prefix
    auth_message = f"n=u,r={client_nonce},{server_first},{without_proof}".encode()
    salted = salted_password("SCRAM-SHA-256", "pw", base64.b64decode(attributes["s"]), int(attributes["i"]))
    client_key = hmac.new(salted, b"Client Key", "sha256").digest()
    signature = hmac.new(hashlib.sha256(client_key).digest(), auth_message, "sha256").digest()
    proof = base64.b64encode(bytes(a ^ b for a, b in zip(client_key, signature, strict=True))).decode()
    final = server.evaluate(f"{without_proof},p={proof}".encode()).decode()
    server_key = hmac.new(salted, b"Server Key", "sha256").digest()
    assert final == "v=" + base64.b64encode(hmac.new(server_key, auth_message, "sha256").digest()).decode()
    assert server.complete and server.authorization_id == "u"
