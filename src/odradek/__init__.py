"""odradek: an event-streaming broker that speaks the Apache Kafka wire protocol."""

__version__ = "0.1.0"
