"""A broker with ACL authorization and a SASL_PLAINTEXT listener of PLAIN users, a raw client that
authenticates as one of them, and a helper to grant ACLs as the super user."""

from __future__ import annotations

from pathlib import Path

from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.messages.create_acls import AclCreation, CreateAclsRequest
from odradek.protocol.messages.sasl_authenticate import SaslAuthenticateRequest
from odradek.protocol.messages.sasl_handshake import SaslHandshakeRequest
from odradek.security.acl import AclOperation, AclPermissionType, PatternType, ResourceType
from tests.support.broker_process import BrokerProcess, free_port
from tests.support.raw_client import RawClient

#: admin is the super user; the others get only what a test grants them.
USERS = {"admin": "admin-secret", "alice": "alice-secret", "bob": "bob-secret"}
JAAS = (
    "org.apache.kafka.common.security.plain.PlainLoginModule required "
    + " ".join(f'user_{name}="{password}"' for name, password in USERS.items())
    + ";"
)
AUTHORIZER = "kafka.security.authorizer.AclAuthorizer"


def start_acl_broker(data_dir: Path, extra: dict[str, str] | None = None) -> tuple[BrokerProcess, int]:
    """A broker whose PLAINTEXT listener (anonymous) is for start-up checks only; returns the SASL port."""
    plain, sasl = free_port(), free_port()
    listeners = f"PLAINTEXT://127.0.0.1:{plain},SASL_PLAINTEXT://127.0.0.1:{sasl}"
    settings = {
        "listeners": listeners,
        "advertised.listeners": listeners,
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT",
        "inter.broker.listener.name": "PLAINTEXT",
        "sasl.enabled.mechanisms": "PLAIN",
        "sasl.jaas.config": JAAS,
        "authorizer.class.name": AUTHORIZER,
        "super.users": "User:admin",
        "offsets.topic.num.partitions": "1",
        "group.initial.rebalance.delay.ms": "0",
        **(extra or {}),
    }
    return BrokerProcess(data_dir, settings, port=plain).start(), sasl


def sasl_client(port: int, user: str, host: str = "127.0.0.1") -> RawClient:
    """A raw client authenticated with SASL PLAIN (SaslHandshake v1, then SaslAuthenticate v2)."""
    client = RawClient(port, client_id=f"{user}-client", host=host)
    handshake = client.request(SaslHandshakeRequest(mechanism="PLAIN"), 1)
    assert handshake.error_code == ErrorCode.NONE, handshake
    token = b"\0" + user.encode() + b"\0" + USERS[user].encode()
    answer = client.request(SaslAuthenticateRequest(auth_bytes=token), 2)
    assert answer.error_code == ErrorCode.NONE, answer
    return client


def grant(
    admin: RawClient,
    principal: str,
    resource_type: ResourceType,
    name: str,
    *operations: AclOperation,
    pattern: PatternType = PatternType.LITERAL,
    permission: AclPermissionType = AclPermissionType.ALLOW,
) -> None:
    creations = [
        AclCreation(
            resource_type=resource_type,
            resource_name=name,
            resource_pattern_type=pattern,
            principal=principal,
            host="*",
            operation=operation,
            permission_type=permission,
        )
        for operation in operations
    ]
    response = admin.request(CreateAclsRequest(creations=creations), 3)
    assert [r.error_code for r in response.results] == [ErrorCode.NONE] * len(creations), response
