package odradek.compat;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.time.Duration;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;

import odradek.compat.support.Clients;
import odradek.compat.support.Target;
import odradek.compat.support.Waits;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.AlterConfigsOptions;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.ConfigEntry.ConfigSource;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.errors.InvalidRequestException;
import org.junit.jupiter.api.Test;

/** incrementalAlterConfigs of dynamic broker configs, per broker and as the cluster default, as Kafka 3.9 answers. */
class AdminBrokerConfigsTest {

    @Test
    void aPerBrokerValueWinsOverTheClusterDefaultWhichWinsOverTheStaticDefault() throws Exception {
        // The two lines run side by side on the same brokers. A broker's dynamic configs (and the cluster
        // default) are one ZooKeeper node each, which Kafka rewrites whole without a version check: one
        // line's change could undo the other's. The request is the same from either line; the 4.x runs it.
        assumeTrue(Target.clientMajor() == 4, "the 4.x line alters the shared broker configs");
        String key = KEY;
        try (Admin admin = Clients.admin()) {
            Node node = firstBroker(admin);
            ConfigResource broker = new ConfigResource(ConfigResource.Type.BROKER, node.idString());
            ConfigResource clusterDefault = new ConfigResource(ConfigResource.Type.BROKER, "");
            ConfigEntry initial = entry(admin, broker, key);
            assertEquals(ConfigSource.DEFAULT_CONFIG, initial.source(), initial.toString());
            try {
                alter(admin, clusterDefault, AlterConfigOp.OpType.SET, "20000");
                // Each broker applies the cluster default when ZooKeeper tells it, a moment later.
                Waits.until(Duration.ofSeconds(30), "the cluster default on broker " + node.id(),
                    () -> entry(admin, broker, key).source() == ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG);
                assertEquals("20000", entry(admin, broker, key).value());
                ConfigEntry asDefault = entry(admin, clusterDefault, key);
                assertEquals("20000", asDefault.value());
                assertEquals(ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG, asDefault.source());

                alter(admin, broker, AlterConfigOp.OpType.SET, "30000");
                // The broker applies even its own per-broker value when ZooKeeper tells it.
                Waits.until(Duration.ofSeconds(30), "the per-broker value on broker " + node.id(),
                    () -> entry(admin, broker, key).source() == ConfigSource.DYNAMIC_BROKER_CONFIG);
                ConfigEntry perBroker = entry(admin, broker, key);
                assertEquals("30000", perBroker.value());
                assertEquals(ConfigSource.DYNAMIC_BROKER_CONFIG, perBroker.source());
                assertEquals(List.of(ConfigSource.DYNAMIC_BROKER_CONFIG, ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG,
                        ConfigSource.DEFAULT_CONFIG),
                    synonymSources(admin, broker, key));

                alter(admin, broker, AlterConfigOp.OpType.DELETE, "");
                Waits.until(Duration.ofSeconds(30), "the cluster default again on broker " + node.id(),
                    () -> entry(admin, broker, key).source() == ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG);
                assertEquals("20000", entry(admin, broker, key).value());
            } finally {
                alter(admin, broker, AlterConfigOp.OpType.DELETE, "");
                alter(admin, clusterDefault, AlterConfigOp.OpType.DELETE, "");
            }
            Waits.until(Duration.ofSeconds(30), "the static default again",
                () -> entry(admin, broker, key).source() == ConfigSource.DEFAULT_CONFIG);
            assertEquals(initial.value(), entry(admin, broker, key).value());
        }
    }

    @Test
    void validateOnlyChangesNothingAndBadValuesOrStaticKeysAreRefused() throws Exception {
        // Not KEY: the other test sets KEY on the same broker at the same time.
        String key = "log.cleaner.min.compaction.lag.ms";
        try (Admin admin = Clients.admin()) {
            Node node = firstBroker(admin);
            ConfigResource broker = new ConfigResource(ConfigResource.Type.BROKER, node.idString());
            admin.incrementalAlterConfigs(Map.of(broker, List.of(op(key, AlterConfigOp.OpType.SET, "25000"))),
                new AlterConfigsOptions().validateOnly(true)).all().get();
            assertEquals(ConfigSource.DEFAULT_CONFIG, entry(admin, broker, key).source());

            ExecutionException notANumber = assertThrows(ExecutionException.class, () -> admin.incrementalAlterConfigs(
                Map.of(broker, List.of(op(key, AlterConfigOp.OpType.SET, "soon")))).all().get());
            assertInstanceOf(InvalidRequestException.class, notANumber.getCause(), notANumber.toString());
            ExecutionException notDynamic = assertThrows(ExecutionException.class, () -> admin.incrementalAlterConfigs(
                Map.of(broker, List.of(op("log.dirs", AlterConfigOp.OpType.SET, "/elsewhere")))).all().get());
            assertInstanceOf(InvalidRequestException.class, notDynamic.getCause(), notDynamic.toString());
        }
    }

    /** A dynamic broker setting no other test reads (the default of the topic config delete.retention.ms). */
    private static final String KEY = "log.cleaner.delete.retention.ms";

    /** The broker of the lowest id (AdminReassignmentTest throttles the others). */
    private static Node firstBroker(Admin admin) throws Exception {
        return admin.describeCluster().nodes().get().stream().min(Comparator.comparingInt(Node::id)).orElseThrow();
    }

    private static AlterConfigOp op(String key, AlterConfigOp.OpType type, String value) {
        return new AlterConfigOp(new ConfigEntry(key, value), type);
    }

    private static void alter(Admin admin, ConfigResource resource, AlterConfigOp.OpType type, String value)
        throws Exception {
        admin.incrementalAlterConfigs(Map.of(resource, List.of(op(KEY, type, value)))).all().get();
    }

    private static ConfigEntry entry(Admin admin, ConfigResource resource, String key) throws Exception {
        return admin.describeConfigs(List.of(resource)).all().get().get(resource).get(key);
    }

    private static List<ConfigSource> synonymSources(Admin admin, ConfigResource resource, String key)
        throws Exception {
        ConfigEntry entry = admin.describeConfigs(List.of(resource),
                new org.apache.kafka.clients.admin.DescribeConfigsOptions().includeSynonyms(true))
            .all().get().get(resource).get(key);
        return entry.synonyms().stream().map(ConfigEntry.ConfigSynonym::source).toList();
    }
}
