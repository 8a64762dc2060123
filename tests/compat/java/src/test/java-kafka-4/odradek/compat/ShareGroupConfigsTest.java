package odradek.compat;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;

import odradek.compat.support.Clients;
import odradek.compat.support.Names;
import odradek.compat.support.Produce;
import odradek.compat.support.Target;
import odradek.compat.support.Topics;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.errors.InvalidConfigurationException;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * GROUP config resources of share groups (Kafka 4.4's GroupConfig) through the 4.x Admin: set, described
 * and obeyed (share.auto.offset.reset=earliest makes a new group read what was written before it joined),
 * and refused outside the broker's group.share.* bounds.
 */
@Tag(Target.NOT_IN_KAFKA_ZOOKEEPER_MODE)
class ShareGroupConfigsTest {
    private static final long DEADLINE_MS = 60_000;

    @Test
    void aGroupSetToEarliestReadsWhatWasWrittenBeforeItJoined() throws Exception {
        String topic = Topics.create("share-config-earliest", 1);
        String group = Names.unique("share-config-earliest");
        Produce.values(topic, 0, "before", 3);
        ConfigResource resource = new ConfigResource(ConfigResource.Type.GROUP, group);
        try (Admin admin = Clients.admin()) {
            AlterConfigOp earliest = new AlterConfigOp(
                new ConfigEntry("share.auto.offset.reset", "earliest"), AlterConfigOp.OpType.SET);
            admin.incrementalAlterConfigs(Map.of(resource, List.of(earliest))).all().get();
            Config described = admin.describeConfigs(List.of(resource)).all().get().get(resource);
            ConfigEntry entry = described.get("share.auto.offset.reset");
            assertEquals("earliest", entry.value(), described.toString());
            assertEquals(ConfigEntry.ConfigSource.DYNAMIC_GROUP_CONFIG, entry.source(), described.toString());
        }
        List<String> values = new ArrayList<>();
        try (KafkaShareConsumer<String, String> consumer = ShareConsumerTest.shareConsumer(group, "implicit")) {
            consumer.subscribe(List.of(topic));
            long deadline = System.currentTimeMillis() + DEADLINE_MS;
            while (values.size() < 3 && System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<String, String> record : consumer.poll(Duration.ofMillis(200))) {
                    values.add(record.value());
                }
            }
        }
        assertEquals(List.of("before-0", "before-1", "before-2"), values);
    }

    @Test
    void aGroupConfigOutsideTheBrokersBoundsIsAnInvalidConfiguration() throws Exception {
        ConfigResource resource = new ConfigResource(ConfigResource.Type.GROUP, Names.unique("share-config-bounds"));
        try (Admin admin = Clients.admin()) {
            // group.share.min.session.timeout.ms is 45000 by default
            AlterConfigOp tooShort = new AlterConfigOp(
                new ConfigEntry("share.session.timeout.ms", "1000"), AlterConfigOp.OpType.SET);
            ExecutionException refused = assertThrows(ExecutionException.class,
                () -> admin.incrementalAlterConfigs(Map.of(resource, List.of(tooShort))).all().get());
            assertInstanceOf(InvalidConfigurationException.class, refused.getCause(), refused.toString());
        }
    }
}
