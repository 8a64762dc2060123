"""Client telemetry (KIP-714): the CLIENT_METRICS subscriptions operators set, the client instances
that ask for them, and the metrics those clients push (kept bounded, for the metrics endpoint)."""
