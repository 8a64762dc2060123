"""The pipeline's input topic, created before the job starts, and the identity its checkpoint is bound to."""

from __future__ import annotations

from odradek.pipelines.checkpoint import StreamIdentity
from odradek.pipelines.errors import PipelineError

_TIMEOUT_S = 30.0


def ensure_input_topic(bootstrap: str, topic: str, partitions: int | None = None) -> StreamIdentity:
    """Create `topic` unless it exists (`partitions`, or the broker's num.partitions when None); returns
    the cluster id and the topic id, which change when the cluster or the topic is a new one."""
    from confluent_kafka import KafkaError, KafkaException, TopicCollection
    from confluent_kafka.admin import AdminClient
    from confluent_kafka.cimpl import NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})  # failures are said below
    try:
        created = admin.create_topics([NewTopic(topic, partitions or -1)], request_timeout=_TIMEOUT_S)
        try:
            created[topic].result(_TIMEOUT_S)
        except KafkaException as error:
            if error.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
                raise
        cluster = admin.describe_cluster(request_timeout=_TIMEOUT_S).result(_TIMEOUT_S)
        described = admin.describe_topics(TopicCollection([topic]), request_timeout=_TIMEOUT_S)
        description = described[topic].result(_TIMEOUT_S)
    except KafkaException as error:
        reason = error.args[0].str() if error.args and isinstance(error.args[0], KafkaError) else error
        raise PipelineError(f"cannot create or describe topic {topic} at {bootstrap}: {reason}") from None
    return StreamIdentity(str(cluster.cluster_id), topic, str(description.topic_id))
