package odradek.compat;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ExecutionException;

import odradek.compat.support.Clients;
import odradek.compat.support.Consume;
import odradek.compat.support.Names;
import odradek.compat.support.Produce;
import odradek.compat.support.Target;
import odradek.compat.support.Topics;
import odradek.compat.support.Waits;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.NewPartitionReassignment;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.PartitionReassignment;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.TopicPartitionInfo;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.errors.InvalidReplicaAssignmentException;
import org.apache.kafka.common.errors.NoReassignmentInProgressException;
import org.apache.kafka.common.errors.UnknownTopicOrPartitionException;
import org.junit.jupiter.api.Test;

/** alterPartitionReassignments and listPartitionReassignments, as Kafka 3.9 in ZooKeeper mode answers. */
class AdminReassignmentTest {

    @Test
    void aReplicaMovedToAnotherBrokerTakesItsRecordsAndTheReassignmentEnds() throws Exception {
        assumeTrue(Target.brokers() > 1, "moving a replica needs a second broker");
        try (Admin admin = Clients.admin()) {
            List<Integer> brokers = brokerIds(admin);
            String topic = Names.unique("reassign-move");
            admin.createTopics(List.of(new NewTopic(topic, Map.of(0, List.of(brokers.get(0)))))).all().get();
            Topics.awaitLeaders(admin, topic, 1);
            TopicPartition partition = new TopicPartition(topic, 0);
            Produce.values(topic, 0, "r", 5);

            admin.alterPartitionReassignments(Map.of(partition,
                Optional.of(new NewPartitionReassignment(List.of(brokers.get(1)))))).all().get();
            Waits.until(Duration.ofSeconds(60), "the replica to move to broker " + brokers.get(1), () -> {
                if (!admin.listPartitionReassignments(Set.of(partition)).reassignments().get().isEmpty()) {
                    return false;
                }
                TopicPartitionInfo info = admin.describeTopics(List.of(topic)).allTopicNames().get().get(topic)
                    .partitions().get(0);
                return info.replicas().stream().map(Node::id).toList().equals(List.of(brokers.get(1)))
                    && info.leader() != null && info.leader().id() == brokers.get(1);
            });
            try (KafkaConsumer<String, String> consumer = Clients.consumer()) {
                consumer.assign(List.of(partition));
                assertEquals(Produce.expected("r", 5), Consume.values(Consume.records(consumer, 5)));
            }
        }
    }

    @Test
    void aThrottledReassignmentIsListedWhileInProgressAndCancellingItRestoresTheReplicas() throws Exception {
        assumeTrue(Target.brokers() > 2, "a throttled target broker of each line's own needs three brokers");
        // The controller answers reassignments in the order of its event queue: in the full suite both
        // client lines create some 200 topics within a minute on the loaded 2-core machine, and it answered
        // after up to 25 s (past the 15 s request timeout) although it does the reassignment right. This
        // checks what it does, not how fast: the admin's request timeout is the API timeout here.
        try (Admin admin = Clients.admin(
            "request.timeout.ms", Clients.API_TIMEOUT_MS, "default.api.timeout.ms", 2 * Clients.API_TIMEOUT_MS)) {
            List<Integer> brokers = brokerIds(admin);
            int source = brokers.get(0);
            // Each line throttles a broker of its own: a broker's dynamic configs are one ZooKeeper node,
            // which Kafka rewrites whole (AdminBrokerConfigsTest alters the first broker's).
            int target = brokers.get(Target.clientMajor() == 4 ? 2 : 1);
            String topic = Names.unique("reassign-cancel");
            TopicPartition partition = new TopicPartition(topic, 0);
            admin.createTopics(List.of(new NewTopic(topic, Map.of(0, List.of(source)))
                .configs(Map.of("follower.replication.throttled.replicas", "0:" + target)))).all().get();
            Topics.awaitLeaders(admin, topic, 1);
            ConfigResource throttled = new ConfigResource(ConfigResource.Type.BROKER, String.valueOf(target));
            alterThrottle(admin, throttled, AlterConfigOp.OpType.SET);
            try {
                // The throttle reaches the target broker through ZooKeeper a moment after the answer.
                Waits.until(Duration.ofSeconds(30), "the throttle on broker " + target, () -> "1".equals(
                    admin.describeConfigs(List.of(throttled)).all().get().get(throttled)
                        .get("follower.replication.throttled.rate").value()));
                // More than one fetch's worth (replica.fetch.max.bytes, 1 MiB): the first fetch is never throttled.
                String value = "x".repeat(10_000);
                try (KafkaProducer<String, String> producer = Clients.producer("linger.ms", 20)) {
                    for (int i = 0; i < 300; i++) {
                        producer.send(new ProducerRecord<>(topic, 0, null, value));
                    }
                    producer.flush();
                }
                admin.alterPartitionReassignments(Map.of(partition,
                    Optional.of(new NewPartitionReassignment(List.of(target))))).all().get();
                Map<TopicPartition, PartitionReassignment> ongoing =
                    admin.listPartitionReassignments().reassignments().get();
                PartitionReassignment listed = ongoing.get(partition);
                assertNotNull(listed, ongoing.toString());
                assertEquals(List.of(target), listed.addingReplicas());
                assertEquals(List.of(source), listed.removingReplicas());
                assertEquals(Set.of(source, target), Set.copyOf(listed.replicas()));

                admin.alterPartitionReassignments(Map.of(partition, Optional.empty())).all().get();
                Waits.until(Duration.ofSeconds(60), "the replicas back to " + source, () -> {
                    TopicPartitionInfo info = admin.describeTopics(List.of(topic)).allTopicNames().get().get(topic)
                        .partitions().get(0);
                    return info.replicas().stream().map(Node::id).toList().equals(List.of(source));
                });
                assertTrue(admin.listPartitionReassignments(Set.of(partition)).reassignments().get().isEmpty());
            } finally {
                alterThrottle(admin, throttled, AlterConfigOp.OpType.DELETE);
            }
        }
    }

    private static void alterThrottle(Admin admin, ConfigResource broker, AlterConfigOp.OpType type)
        throws Exception {
        admin.incrementalAlterConfigs(Map.of(broker, List.of(new AlterConfigOp(
            new ConfigEntry("follower.replication.throttled.rate", "1"), type)))).all().get();
    }

    @Test
    void aReassignmentToTheReplicasItHasEndsAtOnceAndCancellingNoneIsNoReassignmentInProgress()
        throws Exception {
        try (Admin admin = Clients.admin()) {
            String topic = Topics.create(admin, "reassign-same", 1);
            TopicPartition partition = new TopicPartition(topic, 0);
            TopicDescription described = Topics.describeLed(admin, topic, 1);
            List<Integer> replicas = described.partitions().get(0).replicas().stream().map(Node::id).toList();

            admin.alterPartitionReassignments(Map.of(partition,
                Optional.of(new NewPartitionReassignment(replicas)))).all().get();
            Waits.until(Duration.ofSeconds(30), "no reassignment listed",
                () -> admin.listPartitionReassignments(Set.of(partition)).reassignments().get().isEmpty());
            assertFalse(admin.listPartitionReassignments().reassignments().get().containsKey(partition));

            ExecutionException cancelled = assertThrows(ExecutionException.class,
                () -> admin.alterPartitionReassignments(Map.of(partition, Optional.empty())).all().get());
            assertInstanceOf(NoReassignmentInProgressException.class, cancelled.getCause(), cancelled.toString());
        }
    }

    @Test
    void aReassignmentToABrokerThatDoesNotExistOrOfAnUnknownPartitionIsRefused() throws Exception {
        try (Admin admin = Clients.admin()) {
            String topic = Topics.create(admin, "reassign-refused", 1);
            TopicPartition partition = new TopicPartition(topic, 0);
            int self = brokerIds(admin).get(0);
            assertRefused(admin, partition, List.of(99), InvalidReplicaAssignmentException.class);
            assertRefused(admin, partition, List.of(self, self), InvalidReplicaAssignmentException.class);
            assertRefused(admin, partition, List.of(-1), InvalidReplicaAssignmentException.class);
            assertRefused(admin, new TopicPartition(topic, 7), List.of(self), UnknownTopicOrPartitionException.class);
            assertRefused(admin, new TopicPartition(Names.unique("absent"), 0), List.of(self),
                UnknownTopicOrPartitionException.class);
            assertTrue(admin.listPartitionReassignments(Set.of(partition)).reassignments().get().isEmpty());
        }
    }

    private static void assertRefused(Admin admin, TopicPartition partition, List<Integer> replicas,
                                      Class<? extends Throwable> expected) {
        ExecutionException refused = assertThrows(ExecutionException.class, () -> admin.alterPartitionReassignments(
            Map.of(partition, Optional.of(new NewPartitionReassignment(replicas)))).all().get(), replicas.toString());
        assertInstanceOf(expected, refused.getCause(), replicas + ": " + refused.getCause());
    }

    static List<Integer> brokerIds(Admin admin) throws Exception {
        return admin.describeCluster().nodes().get().stream().map(Node::id).sorted().toList();
    }
}
