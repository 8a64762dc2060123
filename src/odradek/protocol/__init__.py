"""Sans-io codec for the Kafka wire protocol: bytes in, typed objects out; no sockets, no asyncio."""
