"""Kafka's metrics plugin settings: reporter classes and the sampling of Kafka's own metrics library.

odradek's metrics are served by its own HTTP endpoint (``metrics.port``, catalog_network.py), in
Prometheus's format, computed as they are read: it loads no Java reporter and keeps no sample windows.
Each is refused unless left at Kafka 3.9's default: unknown to the catalog they were logged as unknown
and ignored, so a reporter in an operator's server.properties silently did not run.
"""

from __future__ import annotations

from odradek.config.types import ConfigKey, ConfigType, ConfigValue, Importance
from odradek.config.validators import at_least

REPORTERS = "odradek cannot load Java metrics reporters: its metrics are served by metrics.port (Prometheus)."
SAMPLING = "odradek keeps no sample windows: its metrics endpoint (metrics.port) computes values as read."


def _refused(name: str, kind: ConfigType, default: ConfigValue, doc: str, why: str) -> ConfigKey:
    return ConfigKey(name, kind, default, Importance.LOW, doc, refused=why)


METRICS_CONFIG_KEYS: tuple[ConfigKey, ...] = (
    _refused("metric.reporters", ConfigType.LIST, [], "Classes of Kafka MetricsReporter plugins.", REPORTERS),
    _refused(
        "kafka.metrics.reporters", ConfigType.LIST, [], "Classes of Yammer metrics reporters.", REPORTERS
    ),
    _refused(
        "kafka.metrics.polling.interval.secs",
        ConfigType.INT,
        10,
        "How often the Yammer metrics reporters poll.",
        REPORTERS,
    ),
    _refused("metrics.num.samples", ConfigType.INT, 2, "Samples kept to compute a metric.", SAMPLING),
    _refused(
        "metrics.recording.level", ConfigType.STRING, "INFO", "Highest recording level of metrics.", SAMPLING
    ),
    _refused("metrics.sample.window.ms", ConfigType.LONG, 30000, "Window of a metric sample.", SAMPLING),
    # KIP-714: the largest PushTelemetry payload (as sent, compressed or not) a client may push; pushed
    # metrics are kept by the broker itself and served on metrics.port (Kafka hands them to a plugin).
    ConfigKey(
        "telemetry.max.bytes",
        ConfigType.INT,
        1024 * 1024,
        Importance.LOW,
        "The largest telemetry push (after compression, if any) a client may send; larger ones are "
        "refused with TELEMETRY_TOO_LARGE.",
        at_least(1),
    ),
)
