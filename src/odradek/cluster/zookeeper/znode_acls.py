"""The ACL a broker gives each znode it creates, as Kafka 3.9's ZkData.defaultAcls.

Without `zookeeper.set.acl` every znode is open to anyone who reaches ZooKeeper (world: all). With it,
a znode belongs to the identity the broker authenticated as (ZooKeeper's "auth" scheme: every identity
of the session, `sasl:<user>` or `x509:<certificate subject>`) and the world may read it, except under
the sensitive roots, which only that identity may read: SCRAM credentials (/config/users), broker
configs (which may hold passwords, /config/brokers) and delegation tokens. The old consumers' root stays
open, as in Kafka (clients of the old consumer API wrote under it). Paths are relative to the chroot, as
Kafka's are; every broker of a cluster must authenticate as the same identity to change the others'
znodes.
"""

from __future__ import annotations

from typing import Final

from kazoo.security import ACL, CREATOR_ALL_ACL, OPEN_ACL_UNSAFE, READ_ACL_UNSAFE

from odradek.cluster.zookeeper import paths

#: Kafka's ZkData.SensitiveRootPaths: readable by the brokers' identity only.
SENSITIVE_ROOT_PATHS: Final = (
    paths.config_entity_type(paths.USER_CONFIG),
    paths.config_entity_type(paths.BROKER_CONFIG),
    "/delegation_token/tokens",
)


def sensitive_path(path: str) -> bool:
    # A prefix test, as Kafka's (so /config/usersX would count too; no such znode exists).
    return path.startswith(SENSITIVE_ROOT_PATHS)


def default_acls(path: str, secure: bool) -> list[ACL]:
    """The ACL of a znode created at `path` (chroot-relative), with or without zookeeper.set.acl."""
    if not secure or path == paths.CONSUMERS:
        return list(OPEN_ACL_UNSAFE)
    if sensitive_path(path):
        return list(CREATOR_ALL_ACL)
    return [*CREATOR_ALL_ACL, *READ_ACL_UNSAFE]
