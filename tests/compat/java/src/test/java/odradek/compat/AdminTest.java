package odradek.compat;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import java.util.stream.Collectors;

import odradek.compat.support.Clients;
import odradek.compat.support.Consume;
import odradek.compat.support.Names;
import odradek.compat.support.Produce;
import odradek.compat.support.Target;
import odradek.compat.support.Topics;
import odradek.compat.support.Waits;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.admin.ConsumerGroupListing;
import org.apache.kafka.clients.admin.CreateTopicsOptions;
import org.apache.kafka.clients.admin.CreateTopicsResult;
import org.apache.kafka.clients.admin.DescribeClusterOptions;
import org.apache.kafka.clients.admin.DescribeClusterResult;
import org.apache.kafka.clients.admin.DescribeTopicsOptions;
import org.apache.kafka.clients.admin.ListOffsetsResult.ListOffsetsResultInfo;
import org.apache.kafka.clients.admin.LogDirDescription;
import org.apache.kafka.clients.admin.MemberDescription;
import org.apache.kafka.clients.admin.NewPartitions;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.RecordsToDelete;
import org.apache.kafka.clients.admin.ReplicaInfo;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.ConsumerGroupState;
import org.apache.kafka.common.ElectionType;
import org.apache.kafka.common.KafkaFuture;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.TopicPartitionInfo;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.acl.AclOperation;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.errors.ElectionNotNeededException;
import org.apache.kafka.common.errors.InvalidConfigurationException;
import org.apache.kafka.common.errors.InvalidPartitionsException;
import org.apache.kafka.common.errors.InvalidReplicationFactorException;
import org.apache.kafka.common.errors.InvalidTopicException;
import org.apache.kafka.common.errors.OffsetOutOfRangeException;
import org.apache.kafka.common.errors.TopicExistsException;
import org.apache.kafka.common.errors.UnknownTopicOrPartitionException;
import org.junit.jupiter.api.Test;

/** The AdminClient's basics, with the answers and exceptions Kafka 3.9 in ZooKeeper mode gives. */
class AdminTest {

    @Test
    void aTopicIsCreatedListedDescribedAndDeleted() throws Exception {
        String name = Names.unique("admin-topic");
        short replication = Target.replicationFactor();
        try (Admin admin = Clients.admin()) {
            CreateTopicsResult created = admin.createTopics(List.of(new NewTopic(name, 3, replication)));
            assertEquals(3, created.numPartitions(name).get());
            assertEquals(replication, created.replicationFactor(name).get());
            Uuid topicId = created.topicId(name).get();
            assertNotEquals(Uuid.ZERO_UUID, topicId);
            assertEquals("delete", created.config(name).get().get("cleanup.policy").value());
            TopicDescription described = Topics.describeLed(admin, name, 3);

            assertTrue(admin.listTopics().names().get().contains(name));
            assertEquals(topicId, described.topicId());
            assertFalse(described.isInternal());
            assertEquals(List.of(0, 1, 2),
                described.partitions().stream().map(TopicPartitionInfo::partition).toList());
            for (TopicPartitionInfo partition : described.partitions()) {
                assertEquals(replication, partition.replicas().size(), partition.toString());
                assertEquals(Set.copyOf(partition.replicas()), Set.copyOf(partition.isr()), partition.toString());
                assertTrue(partition.replicas().contains(partition.leader()), partition.toString());
            }

            ExecutionException again = assertThrows(ExecutionException.class,
                () -> admin.createTopics(List.of(new NewTopic(name, 3, replication))).all().get());
            assertInstanceOf(TopicExistsException.class, again.getCause());

            admin.deleteTopics(List.of(name)).all().get();
            Waits.until(Duration.ofSeconds(30), "the topic to be gone",
                () -> !admin.listTopics().names().get().contains(name));
            ExecutionException gone = assertThrows(ExecutionException.class,
                () -> admin.describeTopics(List.of(name)).allTopicNames().get());
            assertInstanceOf(UnknownTopicOrPartitionException.class, gone.getCause());
            ExecutionException deletedTwice = assertThrows(ExecutionException.class,
                () -> admin.deleteTopics(List.of(name)).all().get());
            assertInstanceOf(UnknownTopicOrPartitionException.class, deletedTwice.getCause());
        }
    }

    @Test
    void createTopicsRefusesWhatKafkaRefusesAndValidateOnlyCreatesNothing() throws Exception {
        try (Admin admin = Clients.admin()) {
            assertRefused(admin, new NewTopic(Names.unique("rf"), 1, (short) (Target.brokers() + 1)),
                InvalidReplicationFactorException.class);
            assertRefused(admin, new NewTopic(Names.unique("zero"), 0, (short) 1), InvalidPartitionsException.class);
            assertRefused(admin, new NewTopic(Names.unique("bad-value"), 1, (short) 1)
                .configs(Map.of("retention.ms", "not-a-number")), InvalidConfigurationException.class);
            assertRefused(admin, new NewTopic(Names.unique("unknown-key"), 1, (short) 1)
                .configs(Map.of("no.such.config", "1")), InvalidConfigurationException.class);
            assertRefused(admin, new NewTopic("bad/name", 1, (short) 1), InvalidTopicException.class);

            String validated = Names.unique("validate-only");
            admin.createTopics(List.of(new NewTopic(validated, 2, (short) 1)),
                new CreateTopicsOptions().validateOnly(true)).all().get();
            assertFalse(admin.listTopics().names().get().contains(validated));
        }
    }

    @Test
    void topicConfigsAreDescribedAndIncrementallySetAppendedAndDeleted() throws Exception {
        try (Admin admin = Clients.admin()) {
            String topic = Topics.create(admin, "configs", 1);
            ConfigResource resource = new ConfigResource(ConfigResource.Type.TOPIC, topic);
            ConfigEntry retention = describe(admin, resource).get("retention.ms");
            assertEquals("604800000", retention.value());
            assertEquals(ConfigEntry.ConfigSource.DEFAULT_CONFIG, retention.source());
            assertTrue(retention.isDefault());

            alter(admin, resource, new AlterConfigOp(new ConfigEntry("retention.ms", "3600000"), AlterConfigOp.OpType.SET),
                new AlterConfigOp(new ConfigEntry("cleanup.policy", "compact"), AlterConfigOp.OpType.APPEND));
            Config altered = describe(admin, resource);
            assertEquals("3600000", altered.get("retention.ms").value());
            assertEquals(ConfigEntry.ConfigSource.DYNAMIC_TOPIC_CONFIG, altered.get("retention.ms").source());
            assertEquals("delete,compact", altered.get("cleanup.policy").value());

            alter(admin, resource, new AlterConfigOp(new ConfigEntry("retention.ms", ""), AlterConfigOp.OpType.DELETE),
                new AlterConfigOp(new ConfigEntry("cleanup.policy", "delete"), AlterConfigOp.OpType.SUBTRACT));
            Config restored = describe(admin, resource);
            assertEquals("604800000", restored.get("retention.ms").value());
            assertEquals(ConfigEntry.ConfigSource.DEFAULT_CONFIG, restored.get("retention.ms").source());
            assertEquals("compact", restored.get("cleanup.policy").value());

            ExecutionException invalid = assertThrows(ExecutionException.class, () -> alter(admin, resource,
                new AlterConfigOp(new ConfigEntry("retention.ms", "soon"), AlterConfigOp.OpType.SET)));
            assertInstanceOf(InvalidConfigurationException.class, invalid.getCause(), invalid.toString());
        }
    }

    @Test
    void brokerConfigsAreDescribedWithTheirSources() throws Exception {
        try (Admin admin = Clients.admin()) {
            Node node = admin.describeCluster().nodes().get().iterator().next();
            ConfigResource broker = new ConfigResource(ConfigResource.Type.BROKER, node.idString());
            Config config = describe(admin, broker);
            ConfigEntry threads = config.get("num.io.threads");
            assertNotNull(threads, "num.io.threads");
            assertEquals("8", threads.value());
            assertEquals(ConfigEntry.ConfigSource.DEFAULT_CONFIG, threads.source());
            ConfigEntry partitions = config.get("num.partitions");
            assertEquals(ConfigEntry.ConfigSource.STATIC_BROKER_CONFIG, partitions.source(), partitions.toString());
        }
    }

    @Test
    void createPartitionsAddsPartitionsAndRefusesToShrink() throws Exception {
        try (Admin admin = Clients.admin()) {
            String topic = Topics.create(admin, "partitions", 1);
            admin.createPartitions(Map.of(topic, NewPartitions.increaseTo(3))).all().get();
            Topics.awaitLeaders(admin, topic, 3);
            ExecutionException shrink = assertThrows(ExecutionException.class,
                () -> admin.createPartitions(Map.of(topic, NewPartitions.increaseTo(2))).all().get());
            assertInstanceOf(InvalidPartitionsException.class, shrink.getCause());
            ExecutionException same = assertThrows(ExecutionException.class,
                () -> admin.createPartitions(Map.of(topic, NewPartitions.increaseTo(3))).all().get());
            assertInstanceOf(InvalidPartitionsException.class, same.getCause());
            ExecutionException unknown = assertThrows(ExecutionException.class,
                () -> admin.createPartitions(Map.of(Names.unique("absent"), NewPartitions.increaseTo(3))).all().get());
            assertInstanceOf(UnknownTopicOrPartitionException.class, unknown.getCause());
            try (KafkaProducer<String, String> producer = Clients.producer()) {
                assertEquals(0, producer.send(new ProducerRecord<>(topic, 2, null, "new")).get().offset());
            }
        }
    }

    @Test
    void consumerGroupsAreListedDescribedAndTheirOffsetsRead() throws Exception {
        try (Admin admin = Clients.admin()) {
            String topic = Topics.create(admin, "groups", 2);
            String group = Names.unique("admin-group");
            Produce.values(topic, 0, "r", 3);
            TopicPartition p0 = new TopicPartition(topic, 0);
            try (KafkaConsumer<String, String> consumer = Clients.consumer("group.id", group,
                "client.id", "described", "enable.auto.commit", "false")) {
                consumer.subscribe(List.of(topic));
                Consume.records(consumer, 3);
                consumer.commitSync(Map.of(p0, new OffsetAndMetadata(3)));

                ConsumerGroupDescription described = admin.describeConsumerGroups(List.of(group))
                    .describedGroups().get(group).get();
                assertEquals(ConsumerGroupState.STABLE, described.state());
                assertEquals("range", described.partitionAssignor());
                assertFalse(described.isSimpleConsumerGroup());
                assertNotNull(described.coordinator());
                Collection<MemberDescription> members = described.members();
                assertEquals(1, members.size());
                MemberDescription member = members.iterator().next();
                assertEquals("described", member.clientId());
                assertEquals(Set.of(p0, new TopicPartition(topic, 1)), member.assignment().topicPartitions());

                Map<String, ConsumerGroupListing> listed = listGroups(admin);
                assertTrue(listed.containsKey(group), listed.keySet().toString());
                assertEquals(ConsumerGroupState.STABLE, listed.get(group).state().orElseThrow());
            }
            Map<TopicPartition, OffsetAndMetadata> offsets =
                admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get();
            assertEquals(Map.of(p0, new OffsetAndMetadata(3, offsets.get(p0).leaderEpoch(), "")), offsets);
            ConsumerGroupDescription empty = admin.describeConsumerGroups(List.of(group))
                .describedGroups().get(group).get();
            assertEquals(ConsumerGroupState.EMPTY, empty.state());
            assertTrue(empty.members().isEmpty());
            admin.deleteConsumerGroups(List.of(group)).all().get();
            assertFalse(listGroups(admin).containsKey(group));
        }
    }

    @Test
    void deleteRecordsMovesTheLogStartAndRefusesAnOffsetPastTheEnd() throws Exception {
        try (Admin admin = Clients.admin()) {
            String topic = Topics.create(admin, "delete-records", 1);
            TopicPartition partition = new TopicPartition(topic, 0);
            Produce.values(topic, 0, "r", 10);
            long low = admin.deleteRecords(Map.of(partition, RecordsToDelete.beforeOffset(4)))
                .lowWatermarks().get(partition).get().lowWatermark();
            assertEquals(4, low);
            assertEquals(4, listOffset(admin, partition, OffsetSpec.earliest()).offset());
            try (KafkaConsumer<String, String> consumer = Clients.consumer()) {
                consumer.assign(List.of(partition));
                consumer.seekToBeginning(List.of(partition));
                assertEquals(Produce.expected("r", 10).subList(4, 10), Consume.values(Consume.records(consumer, 6)));
            }
            ExecutionException pastTheEnd = assertThrows(ExecutionException.class, () -> admin.deleteRecords(
                Map.of(partition, RecordsToDelete.beforeOffset(11))).lowWatermarks().get(partition).get());
            assertInstanceOf(OffsetOutOfRangeException.class, pastTheEnd.getCause());
            long all = admin.deleteRecords(Map.of(partition, RecordsToDelete.beforeOffset(-1)))
                .lowWatermarks().get(partition).get().lowWatermark();
            assertEquals(10, all, "beforeOffset(-1) deletes up to the high watermark");
        }
    }

    @Test
    void listOffsetsAnswersEarliestLatestByTimestampAndMaxTimestamp() throws Exception {
        try (Admin admin = Clients.admin()) {
            String topic = Topics.create(admin, "list-offsets", 1);
            TopicPartition partition = new TopicPartition(topic, 0);
            long base = System.currentTimeMillis() - 3_600_000L;
            long[] timestamps = {base, base + 5000, base + 1000, base + 2000};
            try (KafkaProducer<String, String> producer = Clients.producer()) {
                for (int i = 0; i < timestamps.length; i++) {
                    producer.send(new ProducerRecord<>(topic, 0, timestamps[i], null, "t" + i)).get();
                }
            }
            assertEquals(0, listOffset(admin, partition, OffsetSpec.earliest()).offset());
            assertEquals(4, listOffset(admin, partition, OffsetSpec.latest()).offset());
            ListOffsetsResultInfo byTime = listOffset(admin, partition, OffsetSpec.forTimestamp(base + 1500));
            assertEquals(1, byTime.offset(), "the first record whose timestamp is at or after");
            assertEquals(base + 5000, byTime.timestamp());
            ListOffsetsResultInfo max = listOffset(admin, partition, OffsetSpec.maxTimestamp());
            assertEquals(1, max.offset());
            assertEquals(base + 5000, max.timestamp());
            ListOffsetsResultInfo none = listOffset(admin, partition, OffsetSpec.forTimestamp(base + 6000));
            assertEquals(-1, none.offset());
        }
    }

    @Test
    void describeClusterNamesEveryBrokerTheControllerAndTheClusterId() throws Exception {
        try (Admin admin = Clients.admin()) {
            DescribeClusterResult cluster = admin.describeCluster();
            Collection<Node> nodes = cluster.nodes().get();
            assertEquals(Target.brokers(), nodes.size(), nodes.toString());
            Node controller = cluster.controller().get();
            assertTrue(nodes.contains(controller), controller + " among " + nodes);
            String clusterId = cluster.clusterId().get();
            assertNotNull(clusterId);
            assertFalse(clusterId.isEmpty());
            assertEquals(null, cluster.authorizedOperations().get(), "not asked for");
            Set<String> bootstrap = Set.of(Target.bootstrap().split(","));
            assertEquals(bootstrap, nodes.stream().map(n -> n.host() + ":" + n.port()).collect(Collectors.toSet()));
        }
    }

    /**
     * The PLAINTEXT principal is a super user of the target's ACL authorizer (tests/support/java_security.py):
     * a super user is allowed every operation, as every client is with no authorizer at all.
     */
    @Test
    void authorizedOperationsOfASuperUserAreEveryOperationOfTheResource() throws Exception {
        try (Admin admin = Clients.admin()) {
            String topic = Topics.create(admin, "authorized-operations", 1);
            Set<AclOperation> cluster = admin.describeCluster(
                new DescribeClusterOptions().includeAuthorizedOperations(true)).authorizedOperations().get();
            assertEquals(Set.of(AclOperation.ALTER, AclOperation.ALTER_CONFIGS, AclOperation.CLUSTER_ACTION,
                AclOperation.CREATE, AclOperation.DESCRIBE, AclOperation.DESCRIBE_CONFIGS,
                AclOperation.IDEMPOTENT_WRITE), cluster);
            Set<AclOperation> onTopic = admin.describeTopics(List.of(topic),
                new DescribeTopicsOptions().includeAuthorizedOperations(true)).allTopicNames().get().get(topic)
                .authorizedOperations();
            assertEquals(Set.of(AclOperation.ALTER, AclOperation.ALTER_CONFIGS, AclOperation.CREATE,
                AclOperation.DELETE, AclOperation.DESCRIBE, AclOperation.DESCRIBE_CONFIGS, AclOperation.READ,
                AclOperation.WRITE), onTopic);
        }
    }

    @Test
    void listOffsetsOfATopicThatDoesNotExistIsUnknownTopicOrPartition() throws Exception {
        try (Admin admin = Clients.admin()) {
            TopicPartition absent = new TopicPartition(Names.unique("absent"), 0);
            ExecutionException unknown = assertThrows(ExecutionException.class,
                () -> listOffset(admin, absent, OffsetSpec.latest()));
            assertInstanceOf(UnknownTopicOrPartitionException.class, unknown.getCause(), unknown.toString());
        }
    }

    @Test
    void aTopicCreatedWithExplicitReplicasKeepsTheirOrder() throws Exception {
        try (Admin admin = Clients.admin()) {
            List<Integer> brokers = admin.describeCluster().nodes().get().stream().map(Node::id).sorted().toList();
            List<Integer> reversed = new java.util.ArrayList<>(brokers);
            java.util.Collections.reverse(reversed);
            String name = Names.unique("explicit-replicas");
            admin.createTopics(List.of(new NewTopic(name, Map.of(0, reversed, 1, brokers)))).all().get();
            TopicDescription described = Topics.describeLed(admin, name, 2);
            assertEquals(reversed, described.partitions().get(0).replicas().stream().map(Node::id).toList());
            assertEquals(brokers, described.partitions().get(1).replicas().stream().map(Node::id).toList());
            assertEquals(reversed.get(0), described.partitions().get(0).leader().id(), "the first replica leads");
        }
    }

    @Test
    void describeLogDirsNamesEachReplicaOfEveryBroker() throws Exception {
        try (Admin admin = Clients.admin()) {
            String topic = Topics.create(admin, "log-dirs", 1);
            Produce.values(topic, 0, "r", 10);
            TopicPartition partition = new TopicPartition(topic, 0);
            List<Integer> brokers = admin.describeCluster().nodes().get().stream().map(Node::id).toList();
            Map<Integer, Map<String, LogDirDescription>> dirs = admin.describeLogDirs(brokers).allDescriptions().get();
            assertEquals(Set.copyOf(brokers), dirs.keySet());
            for (Map<String, LogDirDescription> ofBroker : dirs.values()) {
                assertEquals(1, ofBroker.size(), ofBroker.toString());
                LogDirDescription dir = ofBroker.values().iterator().next();
                assertEquals(null, dir.error());
                ReplicaInfo replica = dir.replicaInfos().get(partition);
                assertNotNull(replica, "replica of " + partition + " in " + dir);
                assertTrue(replica.size() > 0, replica.toString());
                assertFalse(replica.isFuture());
            }
        }
    }

    @Test
    void aPreferredElectionWhereThePreferredReplicaLeadsIsNotNeeded() throws Exception {
        try (Admin admin = Clients.admin()) {
            String topic = Topics.create(admin, "elect", 1);
            TopicPartition partition = new TopicPartition(topic, 0);
            Optional<Throwable> outcome = admin.electLeaders(ElectionType.PREFERRED, Set.of(partition))
                .partitions().get().get(partition);
            Throwable notNeeded = outcome.orElseThrow(() -> new AssertionError("an election took place"));
            assertInstanceOf(ElectionNotNeededException.class, notNeeded, notNeeded.toString());
        }
    }

    private static void assertRefused(Admin admin, NewTopic topic, Class<? extends Throwable> expected) {
        ExecutionException refused = assertThrows(ExecutionException.class,
            () -> admin.createTopics(List.of(topic)).all().get(), topic.toString());
        assertInstanceOf(expected, refused.getCause(), topic + ": " + refused.getCause());
    }

    private static Config describe(Admin admin, ConfigResource resource) throws Exception {
        return admin.describeConfigs(List.of(resource)).all().get().get(resource);
    }

    private static void alter(Admin admin, ConfigResource resource, AlterConfigOp... ops) throws Exception {
        admin.incrementalAlterConfigs(Map.of(resource, List.of(ops))).all().get();
    }

    private static ListOffsetsResultInfo listOffset(Admin admin, TopicPartition partition, OffsetSpec spec)
        throws Exception {
        return admin.listOffsets(Map.of(partition, spec)).partitionResult(partition).get();
    }

    @SuppressWarnings("deprecation") // listConsumerGroups: deprecated in 4.1 for listGroups, which 3.9 lacks
    private static Map<String, ConsumerGroupListing> listGroups(Admin admin) throws Exception {
        KafkaFuture<Collection<ConsumerGroupListing>> listed = admin.listConsumerGroups().all();
        return listed.get().stream().collect(Collectors.toMap(ConsumerGroupListing::groupId, g -> g));
    }
}
