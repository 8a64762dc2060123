"""/brokers/topics/<topic> and its partitions' state znodes, as Kafka 3.9 writes them (TopicZNode and
TopicPartitionStateZNode in kafka/zk/ZkData.scala).

```
/brokers/topics/T: {"version":3,"partitions":{"0":[1,2,3]},"adding_replicas":{},
                    "removing_replicas":{},"topic_id":"<22-character base64 uuid>"}
.../partitions/0/state: {"version":1,"leader":1,"leader_epoch":0,"isr":[1,2,3],"controller_epoch":5}
```
`replicas[0]` is the preferred leader. A state znode's zkVersion is the partition epoch; a
`leader_recovery_state` field is written only when the partition is recovering (not 0).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from odradek.cluster.zookeeper import paths
from odradek.cluster.zookeeper.znode_json import (
    JsonObject,
    MalformedZnodeError,
    as_int_list,
    as_object,
    decode_object,
    encode,
    int_field,
    int_list_field,
    optional_str_field,
    shown,
)
from odradek.storage.partition import topic_id_from_string, topic_id_to_string

TOPIC_ASSIGNMENT_VERSION = 3
#: A partition number has at most 10 digits (an int32).
_PARTITION_DIGITS = 10
PARTITION_STATE_VERSION = 1
#: `leader` when no replica leads (the partition is offline).
NO_LEADER = -1
#: LeaderRecoveryState.RECOVERED, the value Kafka leaves out of the JSON; RECOVERING marks a leader
#: elected uncleanly (from inter.broker.protocol.version 3.2-IV0, KIP-704) until its next ISR change.
RECOVERED = 0
RECOVERING = 1


@dataclass(frozen=True, slots=True)
class TopicAssignmentZnode:
    """Replica assignment by partition, with the replicas being added/removed by a reassignment."""

    partitions: Mapping[int, Sequence[int]]
    topic_id: uuid.UUID | None = None
    adding_replicas: Mapping[int, Sequence[int]] = field(default_factory=dict)
    removing_replicas: Mapping[int, Sequence[int]] = field(default_factory=dict)

    def serialize(self) -> bytes:
        assignment: JsonObject = {
            "version": TOPIC_ASSIGNMENT_VERSION,
            "partitions": _by_partition(self.partitions),
            # Kafka lists a partition here only when it has replicas moving
            "adding_replicas": _by_partition({p: r for p, r in self.adding_replicas.items() if r}),
            "removing_replicas": _by_partition({p: r for p, r in self.removing_replicas.items() if r}),
        }
        if self.topic_id is not None:
            assignment["topic_id"] = topic_id_to_string(self.topic_id)
        return encode(assignment)

    @classmethod
    def parse(cls, topic: str, data: bytes | None) -> TopicAssignmentZnode:
        path = paths.topic(topic)
        obj = decode_object(data, path)
        topic_id_text = optional_str_field(obj, "topic_id", path)
        try:
            topic_id = None if topic_id_text is None else topic_id_from_string(topic_id_text)
        except ValueError:
            topic_id_shown = shown(topic_id_text, path)
            raise MalformedZnodeError(f"{path} has topic_id {topic_id_shown}, not a Kafka uuid") from None
        return cls(
            partitions=_parse_by_partition(obj, "partitions", path),
            topic_id=topic_id,
            adding_replicas=_parse_by_partition(obj, "adding_replicas", path),
            removing_replicas=_parse_by_partition(obj, "removing_replicas", path),
        )


@dataclass(frozen=True, slots=True)
class PartitionStateZnode:
    """A partition's leader, leader epoch and ISR, and the epoch of the controller that wrote them."""

    leader: int
    leader_epoch: int
    isr: Sequence[int]
    controller_epoch: int
    leader_recovery_state: int = RECOVERED

    def serialize(self) -> bytes:
        state: JsonObject = {
            "version": PARTITION_STATE_VERSION,
            "leader": self.leader,
            "leader_epoch": self.leader_epoch,
            "isr": list(self.isr),
            "controller_epoch": self.controller_epoch,
        }
        if self.leader_recovery_state != RECOVERED:
            state["leader_recovery_state"] = self.leader_recovery_state
        return encode(state)

    @classmethod
    def parse(cls, topic: str, partition: int, data: bytes | None) -> PartitionStateZnode:
        path = paths.partition_state(topic, partition)
        obj = decode_object(data, path)
        return cls(
            leader=int_field(obj, "leader", path),
            leader_epoch=int_field(obj, "leader_epoch", path),
            isr=int_list_field(obj, "isr", path),
            controller_epoch=int_field(obj, "controller_epoch", path),
            leader_recovery_state=(
                int_field(obj, "leader_recovery_state", path) if "leader_recovery_state" in obj else RECOVERED
            ),
        )


def _by_partition(replicas: Mapping[int, Sequence[int]]) -> dict[str, list[int]]:
    # JSON object keys are strings: partition numbers are written as "0", "1"...
    return {str(partition): list(ids) for partition, ids in sorted(replicas.items())}


def _parse_by_partition(obj: JsonObject, key: str, path: str) -> dict[int, list[int]]:
    # Kafka reads any of the three as empty when absent
    value, what = obj.get(key), f"{path} field {key!r}"
    if value is None:
        return {}
    replicas = {}
    for name, ids in as_object(value, what).items():
        # ASCII digits, and few (int() refuses thousands; "²" is a digit to isdigit() but not to int())
        if not (name.isascii() and name.isdigit() and len(name) <= _PARTITION_DIGITS):
            raise MalformedZnodeError(f"{what} has {shown(name, path)}, not a partition number, as a key")
        replicas[int(name)] = as_int_list(ids, f"{what}[{name!r}]")
    return replicas
