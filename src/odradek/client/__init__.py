"""odradek's own Kafka clients, for what Python's Kafka libraries cannot do (KIP-939 two-phase commit)."""
