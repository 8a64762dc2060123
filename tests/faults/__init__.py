"""The fault-injection harness: a real cluster, faults on a seeded schedule, a checker of what survived.

Run on its own: `.venv/bin/python -m tests.faults --brokers 3 --faults 50 --seed 1 --report out.json`
(or `make faults`); the short pytest run is `tests/faults/test_replication_acceptance.py`. What it
injects and checks: docs/testing.md.
"""
