"""Kafka's metrics plugin settings (metric.reporters and its sampling) in an operator's server.properties
were logged as unknown and ignored: a broker replacing a Kafka broker (issue #27) silently did not run
its reporter. They are refused unless left at Kafka 3.9's defaults."""

from __future__ import annotations

import pytest

from odradek.config import BrokerConfig
from odradek.config.types import ConfigError


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("metric.reporters", "com.example.Reporter"),
        ("kafka.metrics.reporters", "com.example.YammerReporter"),
        ("metrics.num.samples", "3"),
        ("metrics.recording.level", "DEBUG"),
        ("metrics.sample.window.ms", "10000"),
        ("kafka.metrics.polling.interval.secs", "5"),
    ],
)
def test_a_kafka_metrics_plugin_setting_refuses_to_start_naming_it(name: str, value: str) -> None:
    with pytest.raises(ConfigError) as caught:
        BrokerConfig({name: value})
    assert caught.value.name == name
    assert str(caught.value).startswith(f"odradek cannot honour {name}: ")


def test_kafka_metrics_plugin_settings_at_kafkas_defaults_are_accepted_as_known() -> None:
    config = BrokerConfig(
        {
            "metric.reporters": "",
            "kafka.metrics.reporters": "",
            "metrics.num.samples": "2",
            "metrics.recording.level": "INFO",
            "metrics.sample.window.ms": "30000",
            "kafka.metrics.polling.interval.secs": "10",
        }
    )
    assert config.unknown == {}
