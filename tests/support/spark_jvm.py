"""The Spark JVMs the tests start run the client JIT only (C1), as the Java suite's JVMs do.

A test's Spark JVM lives seconds to minutes on little data: C2's compiler threads cost more CPU than
they give back. On the loaded 2-core machine a local session running one small aggregation took 9-11 s
of JVM CPU with C1 only, 19-20 s with both tiers, and three Spark test modules (48 tests) ran in 250 s
against 415 s. What the tests show does not depend on the JIT.
"""

from __future__ import annotations

import os

from tests.support.broker_process import REPO

DRIVER_JAVA_OPTIONS = "-XX:TieredStopAtLevel=1"


def pipeline_environment() -> dict[str, str]:
    """An `odradek pipeline` child process's environment: odradek importable from the source tree, and
    its Spark driver JVM given DRIVER_JAVA_OPTIONS (pyspark starts it with PYSPARK_SUBMIT_ARGS)."""
    return {
        **os.environ,
        "PYTHONPATH": str(REPO / "src"),
        "PYSPARK_SUBMIT_ARGS": f"--driver-java-options {DRIVER_JAVA_OPTIONS} pyspark-shell",
    }
