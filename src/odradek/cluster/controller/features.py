"""The /feature znode a new controller sets up (KafkaController.enableFeatureVersioning, KIP-584).

Every inter.broker.protocol.version odradek honours is past 2.7-IV0, where Kafka's controller enables
feature versioning: absent, the znode is created enabled with no finalized features (a ZooKeeper-mode
broker supports none); disabled, it is enabled and its features dropped; enabled, its features are
kept and it is rewritten only if its layout version is not the IBP's. Kafka's brokers take their
finalized features and the features epoch (the znode's version) from it. The writes go behind the
controller epoch, unlike Kafka's (a controller that lost the election writes nothing).
"""

from __future__ import annotations

import logging

from kazoo.exceptions import BadVersionError, NodeExistsError

from odradek.cluster.zookeeper import paths
from odradek.cluster.zookeeper.client import ZooKeeperClient
from odradek.cluster.zookeeper.controller_fence import ControllerFence, CreateOp, SetDataOp
from odradek.cluster.zookeeper.feature_znode import ENABLED, FeatureZnode
from odradek.cluster.zookeeper.znode_json import MalformedZnodeError

logger = logging.getLogger(__name__)


def enable_feature_versioning(zk: ZooKeeperClient, fence: ControllerFence, layout_version: int) -> None:
    """Run in a thread at controller failover, before anything else is loaded."""
    try:
        _enable(zk, fence, layout_version)
    except (NodeExistsError, BadVersionError):
        # only controllers write it, behind the epoch: someone else (an operator) wrote it meanwhile
        logger.warning("Controller leaves %s as another writer left it", paths.FEATURE)


def _enable(zk: ZooKeeperClient, fence: ControllerFence, layout_version: int) -> None:
    found = zk.read(paths.FEATURE)
    if found is None:
        fence.commit([CreateOp(paths.FEATURE, FeatureZnode(layout_version, ENABLED).serialize())])
        return
    data, stat = found
    try:
        existing = FeatureZnode.parse(data)
    except MalformedZnodeError as error:
        # Kafka's controller fails its failover on it (and the next one too); left as it is, the
        # cluster keeps a controller and Kafka's brokers report what they make of it
        logger.error("Controller leaves %s as it is: %s", paths.FEATURE, error)
        return
    if existing.status != ENABLED and existing.features:
        logger.warning("%s is disabled with finalized features %s: they are dropped", paths.FEATURE, existing)
    features = existing.features if existing.status == ENABLED else {}
    wanted = FeatureZnode(layout_version, ENABLED, dict(features))
    if wanted != existing:
        fence.commit([SetDataOp(paths.FEATURE, wanted.serialize(), stat.version)])
