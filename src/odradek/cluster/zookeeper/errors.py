"""What can go wrong talking to ZooKeeper, in Kafka's terms (malformed znodes: znode_json)."""

from __future__ import annotations


class ZooKeeperError(Exception):
    """Base of the errors of odradek.cluster.zookeeper."""


class ZooKeeperConnectionError(ZooKeeperError):
    """ZooKeeper could not be reached within zookeeper.connection.timeout.ms, or the connection broke."""


class ZnodeTooBigError(ZooKeeperError):
    """A write's data is over ZooKeeper's packet limit: refused before it is sent."""


class ZooKeeperAuthenticationError(ZooKeeperError):
    """ZooKeeper refused the broker's SASL login (wrong credentials, or no SASL on the server)."""


class ZooKeeperAuthorizationError(ZooKeeperError):
    """A znode's ACL refused this session (the znode belongs to another ZooKeeper identity), or
    zookeeper.set.acl's ACL was refused because ZooKeeper gave the session no identity."""


class ControllerMovedError(ZooKeeperError):
    """Another broker became controller (/controller_epoch moved on): this one must resign."""


class ZnodeVersionMovedError(ZooKeeperError):
    """A controller write's check of a znode's version failed (controller_fence.CheckOp): nothing of
    the write was applied."""


class BrokerIdAlreadyRegisteredError(ZooKeeperError):
    """/brokers/ids/<id> exists and belongs to another session: two brokers were given the same id."""


class TopicAlreadyExistsError(ZooKeeperError):
    """/brokers/topics/<topic> exists."""


class TopicAlreadyMarkedForDeletionError(ZooKeeperError):
    """/admin/delete_topics/<topic> exists."""
