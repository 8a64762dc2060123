package odradek.compat;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import java.util.stream.IntStream;

import odradek.compat.support.Clients;
import odradek.compat.support.Names;
import odradek.compat.support.Secured;
import odradek.compat.support.Target;
import odradek.compat.support.Topics;
import odradek.compat.support.Waits;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.DescribeTopicsOptions;
import org.apache.kafka.clients.admin.DescribeTopicsResult;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.common.TopicCollection;
import org.apache.kafka.common.TopicPartitionInfo;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.acl.AclOperation;
import org.apache.kafka.common.errors.TopicAuthorizationException;
import org.apache.kafka.common.errors.UnknownTopicOrPartitionException;
import org.apache.kafka.common.resource.ResourceType;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * KIP-966's DescribeTopicPartitions, which the 4.x admin client asks to describe topics by name, in pages of
 * partitionSizeLimitPerResponse partitions that it follows by the answer's cursor. Kafka 3.9 serves it only
 * in KRaft mode (its ZooKeeper-mode brokers make the client fall back to Metadata: AdminDescribeTopicsTest),
 * so this class is checked against Kafka 4.x in KRaft mode (java_reference --kraft).
 */
@Tag(Target.NOT_IN_KAFKA_ZOOKEEPER_MODE)
class DescribeTopicPartitionsTest {
    private static final String PASSWORD = "java-suite-password";

    @Test
    void aTopicWiderThanAPageIsDescribedWholeAcrossPages() throws Exception {
        try (Admin admin = Clients.admin()) {
            String wide = Topics.create(admin, "dtp-wide", 25);
            String narrow = Topics.create(admin, "dtp-narrow", 2);
            Map<String, TopicDescription> paged = admin.describeTopics(List.of(wide, narrow),
                new DescribeTopicsOptions().partitionSizeLimitPerResponse(4)).allTopicNames().get();
            TopicDescription described = paged.get(wide);
            assertEquals(IntStream.range(0, 25).boxed().toList(), numbers(described));
            assertEquals(List.of(0, 1), numbers(paged.get(narrow)));
            for (TopicPartitionInfo partition : described.partitions()) {
                assertNotNull(partition.leader(), "the leader of " + partition);
                assertTrue(partition.replicas().contains(partition.leader()), partition.toString());
                assertEquals(Target.replicationFactor(), partition.replicas().size(), partition.toString());
                assertEquals(Set.copyOf(partition.replicas()), Set.copyOf(partition.isr()), partition.toString());
                // No eligible leader replica while the ISR is full (with or without KIP-966's ELR).
                assertEquals(List.of(), partition.elr(), partition.toString());
                assertEquals(List.of(), partition.lastKnownElr(), partition.toString());
            }
            Uuid id = described.topicId();
            assertNotEquals(Uuid.ZERO_UUID, id);
            // The same topic described by id (Metadata): the same replicas for every partition.
            TopicDescription byId = admin.describeTopics(TopicCollection.ofTopicIds(List.of(id)))
                .allTopicIds().get().get(id);
            assertEquals(wide, byId.name());
            assertEquals(replicas(byId), replicas(described));
        }
    }

    @Test
    void manyTopicsAreDescribedInOneCallWhateverThePageSize() throws Exception {
        try (Admin admin = Clients.admin()) {
            Map<String, Integer> widths = new HashMap<>();
            for (int i = 0; i < 12; i++) {
                widths.put(Topics.create(admin, "dtp-many-" + i, 1 + i % 4), 1 + i % 4);
            }
            for (int limit : new int[] {1, 5, 2000}) {
                Map<String, TopicDescription> described = admin.describeTopics(widths.keySet(),
                    new DescribeTopicsOptions().partitionSizeLimitPerResponse(limit)).allTopicNames().get();
                assertEquals(widths.keySet(), described.keySet());
                for (Map.Entry<String, Integer> topic : widths.entrySet()) {
                    assertEquals(IntStream.range(0, topic.getValue()).boxed().toList(),
                        numbers(described.get(topic.getKey())), topic.getKey() + " in pages of " + limit);
                }
            }
        }
    }

    @Test
    void anUnknownTopicFailsAloneAmongTopicsDescribedAcrossPages() throws Exception {
        try (Admin admin = Clients.admin()) {
            String known = Topics.create(admin, "dtp-known", 10);
            String missing = Names.unique("dtp-missing");
            DescribeTopicsResult result = admin.describeTopics(List.of(missing, known),
                new DescribeTopicsOptions().partitionSizeLimitPerResponse(3));
            assertEquals(IntStream.range(0, 10).boxed().toList(),
                numbers(result.topicNameValues().get(known).get()));
            ExecutionException failed = assertThrows(ExecutionException.class,
                () -> result.topicNameValues().get(missing).get());
            assertInstanceOf(UnknownTopicOrPartitionException.class, failed.getCause());
        }
    }

    @Test
    void aTopicTheUserMayNotDescribeIsRefusedWhetherItExistsOrNot() throws Exception {
        String user = Names.unique("dtp-describer");
        String mine;
        String hidden;
        try (Admin admin = Clients.admin()) {
            Secured.createUsers(admin, user, PASSWORD);
            mine = Topics.create(admin, "dtp-mine", 5);
            hidden = Topics.create(admin, "dtp-hidden", 3);
            admin.createAcls(List.of(Secured.allow("User:" + user, ResourceType.TOPIC, mine,
                AclOperation.DESCRIBE))).all().get();
        }
        String missing = Names.unique("dtp-nowhere");
        try (Admin admin = Clients.admin(Secured.scram(user, PASSWORD))) {
            DescribeTopicsOptions options = new DescribeTopicsOptions()
                .partitionSizeLimitPerResponse(2).includeAuthorizedOperations(true);
            // The grant reaches every broker a moment later (in Kafka too).
            TopicDescription[] described = new TopicDescription[1];
            Waits.until(Duration.ofSeconds(30), "the grant on " + mine, () -> {
                try {
                    described[0] = admin.describeTopics(List.of(mine), options).allTopicNames().get().get(mine);
                    return true;
                } catch (ExecutionException notYet) {
                    return false;
                }
            });
            assertEquals(IntStream.range(0, 5).boxed().toList(), numbers(described[0]));
            assertEquals(Set.of(AclOperation.DESCRIBE), described[0].authorizedOperations());
            DescribeTopicsResult result = admin.describeTopics(List.of(hidden, missing, mine), options);
            assertEquals(5, result.topicNameValues().get(mine).get().partitions().size());
            for (String refused : List.of(hidden, missing)) {
                ExecutionException failed = assertThrows(ExecutionException.class,
                    () -> result.topicNameValues().get(refused).get());
                assertInstanceOf(TopicAuthorizationException.class, failed.getCause(), refused);
            }
        }
    }

    private static List<Integer> numbers(TopicDescription description) {
        return description.partitions().stream().map(TopicPartitionInfo::partition).toList();
    }

    private static List<List<Integer>> replicas(TopicDescription description) {
        List<List<Integer>> each = new ArrayList<>();
        for (TopicPartitionInfo partition : description.partitions()) {
            each.add(partition.replicas().stream().map(node -> node.id()).toList());
        }
        return each;
    }
}
