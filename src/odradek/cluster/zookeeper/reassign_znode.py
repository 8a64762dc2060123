"""/admin/reassign_partitions, the reassignment plan Kafka's controller still reads in 3.9 (its
ReassignPartitionsZNode, deprecated for the AlterPartitionReassignments API):

```
{"version":1,"partitions":[{"topic":"orders","partition":0,"replicas":[2,3]}]}
```
The controller starts each partition's reassignment, removes a partition from the plan when its
reassignment completes or fails (or the API replaces it), and deletes the znode once it is empty.
Its writes go through the controller's fence.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from kazoo.exceptions import NodeExistsError, NoNodeError

from odradek.cluster.zookeeper import paths
from odradek.cluster.zookeeper.client import ZooKeeperClient
from odradek.cluster.zookeeper.controller_fence import ControllerFence, CreateOp, DeleteOp, SetDataOp
from odradek.cluster.zookeeper.znode_json import (
    MalformedZnodeError,
    as_int_list,
    as_object,
    decode_object,
    encode,
    int_field,
    str_field,
)

VERSION = 1
Plan = dict[tuple[str, int], list[int]]


def parse_plan(data: bytes | None) -> Plan:
    path = paths.REASSIGN_PARTITIONS
    obj = decode_object(data, path)
    entries = obj.get("partitions")
    if not isinstance(entries, list):
        raise MalformedZnodeError(f'{path} has no "partitions" list')
    plan: Plan = {}
    for entry in entries:
        item = as_object(entry, f"{path} partition")
        topic, partition = str_field(item, "topic", path), int_field(item, "partition", path)
        plan[(topic, partition)] = as_int_list(
            item.get("replicas"), f"{path} replicas of {topic}-{partition}"
        )
    return plan


def serialize_plan(plan: Mapping[tuple[str, int], Sequence[int]]) -> bytes:
    return encode(
        {
            "version": VERSION,
            "partitions": [
                {"topic": topic, "partition": partition, "replicas": list(replicas)}
                for (topic, partition), replicas in sorted(plan.items())
            ],
        }
    )


def read_plan(zk: ZooKeeperClient) -> Plan | None:
    """The plan, or None when there is none."""
    found = zk.read(paths.REASSIGN_PARTITIONS)
    return None if found is None else parse_plan(found[0])


def write_plan(fence: ControllerFence, plan: Mapping[tuple[str, int], Sequence[int]]) -> None:
    """Replace the plan; an empty one deletes the znode (nothing left to reassign)."""
    try:
        if plan:
            fence.commit([SetDataOp(paths.REASSIGN_PARTITIONS, serialize_plan(plan))])
        else:
            fence.commit([DeleteOp(paths.REASSIGN_PARTITIONS)])
    except NoNodeError:
        if plan:
            try:
                fence.commit([CreateOp(paths.REASSIGN_PARTITIONS, serialize_plan(plan))])
            except NodeExistsError:
                fence.commit([SetDataOp(paths.REASSIGN_PARTITIONS, serialize_plan(plan))])
