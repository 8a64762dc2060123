"""A local SparkSession set up for the `odradek` format (tests, the pipeline, the benchmark)."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

LOOPBACK = "127.0.0.1"
_SRC = str(Path(__file__).resolve().parents[2])


def local_spark(app_name: str = "odradek", master: str = "local[2]", **conf: str) -> SparkSession:
    """A SparkSession whose Python workers run this interpreter and can import odradek, with the
    `odradek` format registered. Extra Spark settings go in `conf` (dots as in Spark's names).

    The driver listens on loopback only (`spark.driver.host`, `spark.driver.bindAddress`): a local
    session has no executor elsewhere to reach it, and Spark otherwise picks the machine's external
    interface. Pass other values in `conf` (or set SPARK_LOCAL_IP) to change that."""
    from pyspark.sql import SparkSession

    from odradek.spark.source import register

    # Python workers (and the streaming source's planner) are separate processes: same interpreter,
    # and odradek on their path even when it is not installed.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    path = os.environ.get("PYTHONPATH", "")
    if _SRC not in path.split(os.pathsep):
        os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (_SRC, path) if p)
    # Spark's own address lookup (block manager, its warnings) follows SPARK_LOCAL_IP, not the conf.
    os.environ.setdefault("SPARK_LOCAL_IP", LOOPBACK)
    builder = (
        SparkSession.builder.master(master)
        .appName(app_name)
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.executorEnv.PYTHONPATH", os.environ["PYTHONPATH"])
        .config("spark.sql.streaming.stopTimeout", "30s")
        .config("spark.driver.host", os.environ["SPARK_LOCAL_IP"])
        .config("spark.driver.bindAddress", os.environ["SPARK_LOCAL_IP"])
    )
    for key, value in conf.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    register(spark)
    return spark
