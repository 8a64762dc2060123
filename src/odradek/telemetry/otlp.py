"""The metrics a client pushes (KIP-714): an OTLP `MetricsData` protobuf, maybe compressed with one of
Kafka's record codecs, read into flat data points.

Gauges and sums give their value; histograms and summaries their count and sum (as `<name>.count`
and `<name>.sum`); exponential histograms likewise. What cannot be read (a corrupt codec stream, bytes
that are not OTLP, more than the bound once inflated) is a TelemetryDecodeError, which the broker
answers INVALID_RECORD as Kafka answers a receiver plugin's failure.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Final

from google.protobuf.message import DecodeError
from opentelemetry.proto.metrics.v1.metrics_pb2 import (
    ExponentialHistogramDataPoint,
    HistogramDataPoint,
    MetricsData,
    NumberDataPoint,
    SummaryDataPoint,
)

from odradek.protocol.records.attributes import Compression
from odradek.protocol.records.compression import decompress
from odradek.protocol.records.errors import CompressionError

#: Bytes an attribute key or value is cut to: labels a hostile client makes long stay short.
MAX_LABEL_CHARS: Final = 256
#: Attributes kept per data point (the rest are dropped).
MAX_ATTRIBUTES: Final = 16


class TelemetryDecodeError(Exception):
    pass


@dataclass(frozen=True, slots=True)
class MetricPoint:
    name: str
    value: float
    #: (key, value) pairs, sorted by key
    attributes: tuple[tuple[str, str], ...]
    #: a monotonic sum (a counter) rather than a gauge
    monotonic: bool = False


def decode(payload: bytes, compression: int, max_inflated: int, max_points: int) -> list[MetricPoint]:
    """The first `max_points` data points of a push, holding at most `max_inflated` bytes inflated."""
    try:
        raw = decompress(Compression(compression), payload, max_size=max_inflated)
        data = MetricsData.FromString(bytes(raw))
    except (CompressionError, DecodeError, ValueError) as error:
        raise TelemetryDecodeError(f"the pushed metrics cannot be read: {error}") from None
    points: list[MetricPoint] = []
    for point in _points(data):
        if len(points) >= max_points:
            break
        points.append(point)
    return points


def _points(data: MetricsData) -> Iterator[MetricPoint]:
    for resource in data.resource_metrics:
        for scope in resource.scope_metrics:
            for metric in scope.metrics:
                name = metric.name[:MAX_LABEL_CHARS]
                kind = metric.WhichOneof("data")
                if kind == "gauge":
                    for point in metric.gauge.data_points:
                        yield MetricPoint(name, _number(point), _attributes(point))
                elif kind == "sum":
                    monotonic = bool(metric.sum.is_monotonic)
                    for point in metric.sum.data_points:
                        yield MetricPoint(name, _number(point), _attributes(point), monotonic)
                elif kind in ("histogram", "exponential_histogram", "summary"):
                    for point in getattr(metric, kind).data_points:
                        labels = _attributes(point)
                        yield MetricPoint(f"{name}.count", float(point.count), labels, True)
                        yield MetricPoint(f"{name}.sum", float(point.sum), labels, True)


def _number(point: NumberDataPoint) -> float:
    return float(point.as_int) if point.WhichOneof("value") == "as_int" else float(point.as_double)


def _attributes(
    point: NumberDataPoint | HistogramDataPoint | ExponentialHistogramDataPoint | SummaryDataPoint,
) -> tuple[tuple[str, str], ...]:
    pairs = []
    for attribute in point.attributes[:MAX_ATTRIBUTES]:
        value = attribute.value
        kind = value.WhichOneof("value")
        text = "" if kind is None else str(getattr(value, kind))
        pairs.append((attribute.key[:MAX_LABEL_CHARS], text[:MAX_LABEL_CHARS]))
    return tuple(sorted(pairs))
