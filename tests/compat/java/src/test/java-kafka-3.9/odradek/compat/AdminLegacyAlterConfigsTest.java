package odradek.compat;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;

import odradek.compat.support.Clients;
import odradek.compat.support.Topics;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterConfigsOptions;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.ConfigEntry.ConfigSource;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.errors.InvalidConfigurationException;
import org.apache.kafka.common.errors.InvalidRequestException;
import org.junit.jupiter.api.Test;

/**
 * The legacy alterConfigs (AlterConfigs, removed from the 4.0 API): it replaces every dynamic config of the
 * resource with those given, as Kafka 3.9 in ZooKeeper mode does.
 */
class AdminLegacyAlterConfigsTest {

    @Test
    @SuppressWarnings("deprecation")
    void alterConfigsReplacesATopicsConfigsAndValidateOnlyChangesNothing() throws Exception {
        try (Admin admin = Clients.admin()) {
            String topic = Topics.create(admin, "legacy-alter", 1, Map.of("cleanup.policy", "compact"));
            ConfigResource resource = new ConfigResource(ConfigResource.Type.TOPIC, topic);
            Config replacement = new Config(List.of(new ConfigEntry("retention.ms", "3600000")));

            admin.alterConfigs(Map.of(resource, replacement), new AlterConfigsOptions().validateOnly(true)).all().get();
            assertEquals("compact", describe(admin, resource).get("cleanup.policy").value());
            assertEquals(ConfigSource.DEFAULT_CONFIG, describe(admin, resource).get("retention.ms").source());

            admin.alterConfigs(Map.of(resource, replacement)).all().get();
            Config after = describe(admin, resource);
            assertEquals("3600000", after.get("retention.ms").value());
            assertEquals(ConfigSource.DYNAMIC_TOPIC_CONFIG, after.get("retention.ms").source());
            assertEquals("delete", after.get("cleanup.policy").value(), "the configs not given are removed");
            assertEquals(ConfigSource.DEFAULT_CONFIG, after.get("cleanup.policy").source());

            ExecutionException invalid = assertThrows(ExecutionException.class, () -> admin.alterConfigs(Map.of(
                resource, new Config(List.of(new ConfigEntry("retention.ms", "soon"))))).all().get());
            assertInstanceOf(InvalidConfigurationException.class, invalid.getCause(), invalid.toString());
        }
    }

    @Test
    @SuppressWarnings("deprecation")
    void alterConfigsOfABrokerValidatesOnlyWhenAsked() throws Exception {
        try (Admin admin = Clients.admin()) {
            Node node = admin.describeCluster().nodes().get().iterator().next();
            ConfigResource broker = new ConfigResource(ConfigResource.Type.BROKER, node.idString());
            // validateOnly: replacing every dynamic config of a broker other tests share would race them.
            admin.alterConfigs(Map.of(broker, new Config(List.of(new ConfigEntry("log.cleaner.threads", "2")))),
                new AlterConfigsOptions().validateOnly(true)).all().get();
            ConfigEntry threads = describe(admin, broker).get("log.cleaner.threads");
            assertEquals(ConfigSource.DEFAULT_CONFIG, threads.source(), threads.toString());
            ExecutionException invalid = assertThrows(ExecutionException.class, () -> admin.alterConfigs(
                Map.of(broker, new Config(List.of(new ConfigEntry("log.cleaner.threads", "many")))),
                new AlterConfigsOptions().validateOnly(true)).all().get());
            assertInstanceOf(InvalidRequestException.class, invalid.getCause(), invalid.toString());
        }
    }

    private static Config describe(Admin admin, ConfigResource resource) throws Exception {
        return admin.describeConfigs(List.of(resource)).all().get().get(resource);
    }
}
