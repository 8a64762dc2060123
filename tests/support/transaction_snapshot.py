"""What the brokers say of their transactions, for a failure's message: where a read_committed reader or
an exactly-once application is stuck, the open transaction holding a last stable offset is the usual
suspect.

For each partition of the topics named: its leader, ISR, high watermark, last stable offset, and the
producers with a transaction open there (DescribeProducers); for each transaction coordinator, the
transactions it knows and their state (ListTransactions, DescribeTransactions); for a consumer group,
the coordinator each broker names and the offsets it has committed on a topic, as a plain reader asks
and as a read_committed one does (`require_stable`, OffsetFetch v7). Plain Kafka APIs, so it
describes Apache Kafka's brokers as well as odradek's. Best effort: a broker that does not answer is
said so, never raised.
"""

from __future__ import annotations

from collections.abc import Sequence

from odradek.protocol.messages.describe_producers import DescribeProducersRequest, TopicRequest
from odradek.protocol.messages.describe_transactions import DescribeTransactionsRequest
from odradek.protocol.messages.find_coordinator import FindCoordinatorRequest
from odradek.protocol.messages.list_offsets import ListOffsetsPartition, ListOffsetsRequest, ListOffsetsTopic
from odradek.protocol.messages.list_transactions import ListTransactionsRequest
from odradek.protocol.messages.metadata import MetadataRequest, MetadataRequestTopic, MetadataResponse
from odradek.protocol.messages.offset_fetch import OffsetFetchRequest, OffsetFetchRequestTopic
from tests.support.raw_client import ConnectionClosedError, RawClient

TIMEOUT_S = 5.0
LATEST = -1


def snapshot(bootstrap: str, topics: Sequence[str], group: tuple[str, str] | None = None) -> str:
    """A few lines per partition and per coordinator (see the module's docstring); `group`: (group
    id, topic) for the group's lines."""
    metadata = _metadata(bootstrap, topics)
    if metadata is None:
        return "no broker answered Metadata"
    brokers = {b.node_id: (b.host, b.port) for b in metadata.brokers}
    lines = [f"live brokers {sorted(brokers)}"]
    for topic in sorted(metadata.topics, key=lambda t: t.name or ""):
        for partition in sorted(topic.partitions, key=lambda p: p.partition_index):
            where = f"{topic.name}-{partition.partition_index}"
            address = brokers.get(partition.leader_id)
            if address is None:
                lines.append(f"{where}: leader {partition.leader_id} not live, ISR {partition.isr_nodes}")
                continue
            lines.append(
                f"{where}: leader {partition.leader_id}, ISR {partition.isr_nodes}, "
                + _partition_state(address, topic.name or "", partition.partition_index)
            )
    for node, address in sorted(brokers.items()):
        lines.append(f"broker {node} coordinates: {_transactions(address)}")
    if group is not None:
        partitions = {
            t.name: [p.partition_index for p in t.partitions] for t in metadata.topics if t.name == group[1]
        }
        for node, address in sorted(brokers.items()):
            lines.append(f"broker {node} on group {group[0]}: " + _group(address, brokers, group, partitions))
    return "\n".join(lines)


def _metadata(bootstrap: str, topics: Sequence[str]) -> MetadataResponse | None:
    for address in bootstrap.split(","):
        host, port = address.rsplit(":", 1)
        try:
            with RawClient(int(port), TIMEOUT_S, host=host) as client:
                wanted = [MetadataRequestTopic(name=t) for t in topics]
                response: MetadataResponse = client.request(
                    MetadataRequest(topics=wanted, allow_auto_topic_creation=False), 9
                )
                return response
        except (OSError, ConnectionClosedError):
            continue
    return None


def _partition_state(address: tuple[str, int], topic: str, partition: int) -> str:
    try:
        with RawClient(address[1], TIMEOUT_S, host=address[0]) as client:
            offsets = []
            for isolation in (0, 1):  # read_uncommitted: the high watermark; read_committed: the LSO
                request = ListOffsetsRequest(
                    replica_id=-1,
                    isolation_level=isolation,
                    topics=[
                        ListOffsetsTopic(
                            name=topic,
                            partitions=[ListOffsetsPartition(partition_index=partition, timestamp=LATEST)],
                        )
                    ],
                )
                answer = client.request(request, 7).topics[0].partitions[0]
                offsets.append(str(answer.offset) if answer.error_code == 0 else f"error {answer.error_code}")
            described = (
                client.request(
                    DescribeProducersRequest(
                        topics=[TopicRequest(name=topic, partition_indexes=[partition])]
                    ),
                    0,
                )
                .topics[0]
                .partitions[0]
            )
    except (OSError, ConnectionClosedError) as failure:
        return f"not answered ({failure})"
    open_here = [
        f"producer {p.producer_id} epoch {p.producer_epoch} from offset {p.current_txn_start_offset}"
        for p in described.active_producers
        if p.current_txn_start_offset >= 0
    ]
    return (
        f"high watermark {offsets[0]}, last stable offset {offsets[1]}, "
        f"open transactions: {open_here or 'none'}"
    )


def _group(
    address: tuple[str, int],
    brokers: dict[int, tuple[str, int]],
    group: tuple[str, str],
    partitions: dict[str, list[int]],
) -> str:
    group_id, topic = group
    try:
        with RawClient(address[1], TIMEOUT_S, host=address[0]) as client:
            found = client.request(FindCoordinatorRequest(key=group_id, key_type=0), 2)
        if found.error_code != 0:
            return f"FindCoordinator error {found.error_code}"
        coordinator = brokers.get(found.node_id)
        if coordinator is None:
            return f"names coordinator {found.node_id}, not live"
        answers = []
        with RawClient(coordinator[1], TIMEOUT_S, host=coordinator[0]) as client:
            for stable in (False, True):
                request = OffsetFetchRequest(
                    group_id=group_id,
                    topics=[OffsetFetchRequestTopic(name=topic, partition_indexes=partitions.get(topic, []))],
                    require_stable=stable,
                )
                fetched = client.request(request, 7)
                offsets = [
                    (p.partition_index, p.committed_offset if p.error_code == 0 else f"error {p.error_code}")
                    for t in fetched.topics
                    for p in t.partitions
                ]
                answers.append(f"{'stable' if stable else 'plain'} {fetched.error_code or offsets}")
    except (OSError, ConnectionClosedError) as failure:
        return f"not answered ({failure})"
    return f"names coordinator {found.node_id}, which has committed on {topic}: " + "; ".join(answers)


def _transactions(address: tuple[str, int]) -> str:
    try:
        with RawClient(address[1], TIMEOUT_S, host=address[0]) as client:
            listed = client.request(ListTransactionsRequest(state_filters=[], producer_id_filters=[]), 0)
            ids = [t.transactional_id for t in listed.transaction_states]
            if not ids:
                return "no transactions"
            described = client.request(DescribeTransactionsRequest(transactional_ids=ids), 0)
    except (OSError, ConnectionClosedError) as failure:
        return f"not answered ({failure})"
    return "; ".join(
        f"{t.transactional_id} {t.transaction_state} (producer {t.producer_id} epoch {t.producer_epoch}, "
        f"started {t.transaction_start_time_ms}, partitions "
        f"{sorted(f'{topic.topic}-{p}' for topic in t.topics for p in topic.partitions)})"
        for t in described.transaction_states
    )
