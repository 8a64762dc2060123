"""A PySpark Kafka source and sink (Python Data Source API), registered as the `odradek` format.

    import odradek.spark
    odradek.spark.register(spark)
    df = spark.read.format("odradek").option("kafka.bootstrap.servers", "localhost:9092") \
        .option("subscribe", "events").load()

Options, columns and semantics are those of Spark's built-in `kafka` format (see docs/pipeline.md).
"""

from odradek.spark.schema import source_schema
from odradek.spark.source import OdradekDataSource, register

__all__ = ["OdradekDataSource", "register", "source_schema"]
