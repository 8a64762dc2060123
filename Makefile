# The two commands of the quick start: `make run` and `make test`.
# `make test` runs everything; `make test-fast` (lint, type checks, tests/unit and tests/regressions)
# leaves out tests/integration, tests/compat and tests/spark, for the edit-test loop.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
PYTEST := $(BIN)/python -m pytest -q
# `make test` spreads the suite over this many pytest-xdist workers: most tests wait on brokers, ZooKeeper
# and clients in other processes, so more workers than the 2 cores pay off. Each test module stays on one
# worker, the longest modules first (tests/conftest.py; --no-loadscope-reorder keeps that order, where
# xdist would sort the modules by their number of tests). With 4 workers the suite took 21:00 on a quiet
# machine (3 took 29:27 under other load, 30:00 before, 2026-12-06). TEST_WORKERS=0: one process.
TEST_WORKERS ?= 4

.PHONY: console-screenshots eos-acceptance mixed-long run test test-fast lint typecheck unit regressions bench clean faults \
	java-compat java-compat-reference spark-kafka-jars kafka-tools kafka-tools-reference

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q -e '.[dev]'
	touch $(STAMP)

run: $(STAMP)
	$(BIN)/odradek broker --config config/server.properties --override log.dirs=./data

lint: $(STAMP)
	$(BIN)/ruff check src tests bench
	$(BIN)/ruff format --check src tests bench

typecheck: $(STAMP)
	$(BIN)/mypy

unit: $(STAMP)
	$(PYTEST) tests/unit

regressions: $(STAMP)
	$(PYTEST) tests/regressions

test-fast: $(STAMP) lint typecheck
	$(PYTEST) tests/unit tests/regressions

test: $(STAMP) lint typecheck
	@bash scripts/install-system-deps.sh
	$(PYTEST) --numprocesses=$(TEST_WORKERS) --dist=loadfile --no-loadscope-reorder --durations=25

bench: $(STAMP)
	$(BIN)/python -m pip install -q -e '.[dev,bench]'
	$(BIN)/python bench/protocol_bench.py
	$(BIN)/python bench/protocol_ceiling.py
	$(BIN)/python bench/run_broker_bench.py
	$(BIN)/python bench/txn_bench.py
	$(BIN)/python bench/compression_bench.py
	$(BIN)/python bench/security_bench.py
	$(BIN)/python bench/replication_bench.py
	$(BIN)/python bench/fetch_session_bench.py
	$(BIN)/python bench/failover_bench.py
	$(BIN)/python bench/spark_connectors_bench.py
	$(BIN)/python bench/kafka_side_by_side.py
	$(BIN)/python bench/kafka_scale_bench.py

# The fault-injection harness's long run (tests/faults; docs/testing.md): 50 faults on 3 brokers, its raw
# report to docs/bench/faults-report.json. FAULTS, BROKERS and SEED override the defaults.
FAULTS ?= 50
BROKERS ?= 3
SEED ?= 1
faults: $(STAMP)
	@bash scripts/install-system-deps.sh
	$(BIN)/python -m tests.faults --brokers $(BROKERS) --faults $(FAULTS) --seed $(SEED) --report docs/bench/faults-report.json

clean:
	rm -rf $(VENV) .mypy_cache .pytest_cache .ruff_cache tests/compat/java/target tests/compat/kafka_tools/target \
		tests/compat/streams/target tests/compat/connect/target

# Apache Kafka's Java clients against odradek (tests/compat/java; docs/testing.md): `make test` builds the
# JUnit suite on first use, once per kafka-clients line, its Maven dependencies in .cache/maven; this
# builds it by hand. java-compat-reference runs the suite against Apache Kafka 3.9 itself (ZooKeeper
# mode, one broker then three): a new Java test must pass there before it asserts anything of odradek.
java-compat: $(STAMP)
	$(BIN)/python -m tests.support.java_suite

java-compat-reference: $(STAMP)
	@bash scripts/install-system-deps.sh
	$(BIN)/python -m tests.support.java_reference

# Spark's own Kafka connector (spark-sql-kafka-0-10 and its dependencies, tests/spark/kafka-connector/pom.xml)
# into .cache/maven, its jars printed comma-separated: what `odradek pipeline --connector kafka
# --connector-jars` takes. The Spark tests and bench/spark_connectors_bench.py resolve them on first use.
spark-kafka-jars: $(STAMP)
	@$(BIN)/python -m tests.support.spark_kafka_jars

# Apache Kafka's command-line tools against odradek (tests/compat/kafka_tools; docs/testing.md): `make test`
# resolves the kafka-tools and kafka_2.13 jars of each line (4.x, 3.9) on first use; this does it by hand.
# kafka-tools-reference runs every scenario against Apache Kafka 3.9 itself (one broker, then three) and
# records what the tools print there as the golden transcripts the tests compare odradek's with.
kafka-tools: $(STAMP)
	$(BIN)/python -m tests.support.kafka_tools

kafka-tools-reference: $(STAMP)
	@bash scripts/install-system-deps.sh
	$(BIN)/python -m tests.support.kafka_tools_reference

# Issue 27's mixed clusters (Apache Kafka 3.9 and odradek brokers on one ZooKeeper) with each leader
# SIGKILLed 5 times under load and 3 rounds of the rolling replacement (the suite does one of each).
# See docs/testing.md.
mixed-long: $(STAMP)
	@bash scripts/install-system-deps.sh
	ODRADEK_MIXED_KILL_ROUNDS=5 ODRADEK_ROLLING_ROUNDS=3 $(PYTEST) tests/integration/mixed

# The README's console screenshots, taken by the console's browser tests (tests/console).
console-screenshots: $(STAMP)
	@bash scripts/install-system-deps.sh
	ODRADEK_SCREENSHOTS=docs/console $(BIN)/python -m pytest -q tests/console

# Issue 19's exactly-once acceptance run: `odradek pipeline` SIGKILLed at random moments and restarted
# 10 times (the suite runs 2 kills); about 7 minutes. See docs/pipeline.md.
eos-acceptance: $(STAMP)
	@bash scripts/install-system-deps.sh
	ODRADEK_EOS_KILLS=10 $(PYTEST) tests/spark/test_pipeline_exactly_once.py
