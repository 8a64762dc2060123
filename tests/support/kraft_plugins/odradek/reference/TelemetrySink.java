package odradek.reference;

import java.util.List;
import java.util.Map;

import org.apache.kafka.common.metrics.KafkaMetric;
import org.apache.kafka.common.metrics.MetricsReporter;
import org.apache.kafka.server.telemetry.ClientTelemetryExporter;
import org.apache.kafka.server.telemetry.ClientTelemetryExporterProvider;

/**
 * A client telemetry exporter that drops what it is given. Kafka serves GetTelemetrySubscriptions and
 * PushTelemetry (KIP-714) only when a metrics reporter offers an exporter; odradek is its own (its
 * metrics endpoint), so the KRaft reference loads this one to serve them as odradek does.
 */
public class TelemetrySink implements MetricsReporter, ClientTelemetryExporterProvider {

    @Override
    public void configure(Map<String, ?> configs) {
    }

    @Override
    public void init(List<KafkaMetric> metrics) {
    }

    @Override
    public void metricChange(KafkaMetric metric) {
    }

    @Override
    public void metricRemoval(KafkaMetric metric) {
    }

    @Override
    public void close() {
    }

    @Override
    public ClientTelemetryExporter clientTelemetryExporter() {
        return (context, payload) -> { };
    }
}
