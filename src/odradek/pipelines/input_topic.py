"""The pipeline's input topic, created before the job starts, and the identity its checkpoint is bound to."""

from __future__ import annotations

from collections.abc import Mapping

from odradek.pipelines.checkpoint import StreamIdentity
from odradek.pipelines.client import client_config
from odradek.pipelines.errors import PipelineError
from odradek.spark.security import KafkaAuthenticationError, check_connection, is_secured

_TIMEOUT_S = 30.0


def ensure_input_topic(
    bootstrap: str,
    topic: str,
    partitions: int | None = None,
    client_settings: Mapping[str, str] | None = None,
) -> StreamIdentity:
    """Create `topic` unless it exists (`partitions`, or the broker's num.partitions when None); returns
    the cluster id and the topic id, which change when the cluster or the topic is a new one."""
    from confluent_kafka import KafkaError, KafkaException, TopicCollection
    from confluent_kafka.admin import AdminClient
    from confluent_kafka.cimpl import NewTopic

    # librdkafka's own log lines off: failures are said below
    config = client_config(bootstrap, client_settings, {"log_level": 0})
    admin = AdminClient(config)
    try:
        if is_secured(config):
            check_connection(admin, _TIMEOUT_S)  # a refused password fails here, at once
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
    except KafkaAuthenticationError as error:
        raise PipelineError(f"cannot connect to {bootstrap}: {error}") from None
    return StreamIdentity(str(cluster.cluster_id), topic, str(description.topic_id))
