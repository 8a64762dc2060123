"""`odradek console`: a web console for any Kafka-compatible cluster, talking only the Kafka protocol.

`command` parses the command line, `app` builds the Starlette application, `pages/` serve one area each
(overview, topics, messages, groups, brokers), `data/` is the client side (confluent-kafka, as the CLI),
`history` keeps the charts' samples in memory, `format` renders keys and values.
"""
