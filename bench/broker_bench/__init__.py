"""odradek against a native Kafka-compatible peer (Tansu), driven by librdkafka clients in the same run.

`bench/run_broker_bench.py` is the entry point; `runner` plans and alternates the runs, `peers` starts
and watches the brokers, `scenarios` and `workers` are what the clients do, `report` and `plots`
turn the JSON lines into tables, PNGs and the "Broker vs Tansu" section of docs/bench/tansu.md, and
`profiling` records py-spy flame graphs of odradek under the produce and consume scenarios.
"""
