package odradek.compat;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ExecutionException;
import java.util.stream.Collectors;

import odradek.compat.support.Clients;
import odradek.compat.support.Names;
import odradek.compat.support.Target;
import odradek.compat.support.Topics;
import odradek.compat.support.Waits;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.ListConfigResourcesOptions;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.errors.InvalidConfigurationException;
import org.apache.kafka.common.errors.InvalidRequestException;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * Client telemetry (KIP-714): client-metrics subscriptions made, listed (ListConfigResources) and described
 * with the Admin client, and a producer with enable.metrics.push given a client instance id. Each
 * subscription matches only its own test's client id: the other classes' clients run beside these.
 */
@Tag(Target.NOT_IN_KAFKA_ZOOKEEPER_MODE)
class ClientTelemetryTest {

    @Test
    void aClientMetricsSubscriptionIsListedAndDescribed() throws Exception {
        String name = Names.unique("telemetry-subscription");
        ConfigResource resource = new ConfigResource(ConfigResource.Type.CLIENT_METRICS, name);
        try (Admin admin = Clients.admin()) {
            subscribe(admin, resource, "org.apache.kafka.producer.", "1000", "client_id=" + name);
            Set<String> listed = awaitListed(admin, name);
            assertTrue(listed.contains(name), listed.toString());
            Config described = admin.describeConfigs(List.of(resource)).all().get().get(resource);
            assertEquals("org.apache.kafka.producer.", described.get("metrics").value());
            assertEquals("1000", described.get("interval.ms").value());
            assertEquals("client_id=" + name, described.get("match").value());
            assertEquals(ConfigEntry.ConfigSource.DYNAMIC_CLIENT_METRICS_CONFIG, described.get("metrics").source());
            admin.incrementalAlterConfigs(Map.of(resource, List.of(
                new AlterConfigOp(new ConfigEntry("metrics", ""), AlterConfigOp.OpType.DELETE),
                new AlterConfigOp(new ConfigEntry("interval.ms", ""), AlterConfigOp.OpType.DELETE),
                new AlterConfigOp(new ConfigEntry("match", ""), AlterConfigOp.OpType.DELETE)))).all().get();
        }
    }

    @Test
    void invalidSubscriptionsAreRefusedAsKafkaRefusesThem() throws Exception {
        ConfigResource resource = new ConfigResource(ConfigResource.Type.CLIENT_METRICS, Names.unique("telemetry-bad"));
        try (Admin admin = Clients.admin()) {
            ExecutionException interval = assertThrows(ExecutionException.class,
                () -> subscribe(admin, resource, "*", "50", "client_id=x"));
            assertTrue(interval.getCause() instanceof InvalidRequestException, interval.getCause().toString());
            ExecutionException match = assertThrows(ExecutionException.class,
                () -> subscribe(admin, resource, "*", "1000", "user=alice"));
            assertTrue(match.getCause() instanceof InvalidConfigurationException, match.getCause().toString());
        }
    }

    @Test
    void aProducerPushingMetricsIsGivenAClientInstanceId() throws Exception {
        String clientId = Names.unique("telemetry-producer");
        ConfigResource resource = new ConfigResource(ConfigResource.Type.CLIENT_METRICS, clientId);
        try (Admin admin = Clients.admin()) {
            subscribe(admin, resource, "org.apache.kafka.producer.", "500", "client_id=" + clientId);
            awaitListed(admin, clientId);
            String topic = Topics.create(admin, "telemetry", 1);
            try (KafkaProducer<String, String> producer = Clients.producer(
                    "client.id", clientId, "enable.metrics.push", "true")) {
                producer.send(new ProducerRecord<>(topic, "k", "v")).get();
                Uuid instance = producer.clientInstanceId(Duration.ofSeconds(20));
                assertNotNull(instance);
                assertNotEquals(Uuid.ZERO_UUID, instance);
                assertEquals(instance, producer.clientInstanceId(Duration.ofSeconds(5)));
                producer.send(new ProducerRecord<>(topic, "k", "v")).get();
                awaitPushedMetrics(instance, clientId);
            }
            try (Admin other = Clients.admin("client.id", clientId + "-admin", "enable.metrics.push", "true")) {
                assertNotEquals(Uuid.ZERO_UUID, other.clientInstanceId(Duration.ofSeconds(20)));
            }
        }
    }

    /** odradek only: the endpoint shows the producer's pushed metrics under its instance and client id. */
    private static void awaitPushedMetrics(Uuid instance, String clientId) throws Exception {
        String url = Target.metrics();
        if (url == null) {
            return; // Kafka hands pushed metrics to its exporter plugin; the cluster target has no endpoint
        }
        String id = new UUID(instance.getMostSignificantBits(), instance.getLeastSignificantBits()).toString();
        HttpClient http = HttpClient.newHttpClient();
        HttpRequest scrape = HttpRequest.newBuilder(URI.create(url)).timeout(Duration.ofSeconds(10)).build();
        Waits.until(Duration.ofSeconds(30), "the producer's pushed metrics on " + url, () ->
            http.send(scrape, HttpResponse.BodyHandlers.ofString()).body().lines().anyMatch(line ->
                line.startsWith("odradek_client_telemetry_metric{")
                    && line.contains("client_instance_id=\"" + id + "\"")
                    && line.contains("client_id=\"" + clientId + "\"")
                    && line.contains("metric=\"org.apache.kafka.producer.")));
    }

    private static void subscribe(Admin admin, ConfigResource resource, String metrics, String interval,
            String match) throws Exception {
        admin.incrementalAlterConfigs(Map.of(resource, List.of(
            new AlterConfigOp(new ConfigEntry("metrics", metrics), AlterConfigOp.OpType.SET),
            new AlterConfigOp(new ConfigEntry("interval.ms", interval), AlterConfigOp.OpType.SET),
            new AlterConfigOp(new ConfigEntry("match", match), AlterConfigOp.OpType.SET)))).all().get();
    }

    /** The subscriptions listed, once `name` is among them (in a cluster it reaches the broker asked a moment later). */
    private static Set<String> awaitListed(Admin admin, String name) throws Exception {
        long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
        while (true) {
            Collection<ConfigResource> found = admin.listConfigResources(
                Set.of(ConfigResource.Type.CLIENT_METRICS), new ListConfigResourcesOptions()).all().get();
            Set<String> names = found.stream().map(ConfigResource::name).collect(Collectors.toSet());
            if (names.contains(name) || System.nanoTime() > deadline) {
                return names;
            }
            Thread.sleep(100);
        }
    }
}
