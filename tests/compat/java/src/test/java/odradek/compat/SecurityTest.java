package odradek.compat;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ExecutionException;

import odradek.compat.support.Clients;
import odradek.compat.support.Consume;
import odradek.compat.support.Names;
import odradek.compat.support.Secured;
import odradek.compat.support.Topics;
import odradek.compat.support.Waits;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.DescribeTopicsOptions;
import org.apache.kafka.clients.admin.NewPartitions;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.RecordsToDelete;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.ElectionType;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.KafkaFuture;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.acl.AclBindingFilter;
import org.apache.kafka.common.acl.AclOperation;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.errors.ClusterAuthorizationException;
import org.apache.kafka.common.errors.GroupAuthorizationException;
import org.apache.kafka.common.errors.SaslAuthenticationException;
import org.apache.kafka.common.errors.SslAuthenticationException;
import org.apache.kafka.common.errors.TopicAuthorizationException;
import org.apache.kafka.common.errors.TransactionalIdAuthorizationException;
import org.apache.kafka.common.quota.ClientQuotaFilter;
import org.apache.kafka.common.resource.ResourceType;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The target's secured listeners and its ACL authorizer (tests/support/java_security.py): SCRAM-SHA-512
 * over SASL_SSL, mutual TLS, and the exceptions of operations the ACLs refuse. The users are made here
 * over PLAINTEXT, whose principal is a super user; the ACLs each test needs are granted by the test.
 * A grant reaches the other brokers of a cluster a moment later (through ZooKeeper, in Kafka too), so
 * what a grant allows is waited for; what no grant allows is asserted at once.
 */
class SecurityTest {
    /** A user who is granted, test by test, what it uses. */
    private static final String GRANTED = Names.unique("granted");
    /** A user with no ACL at all. */
    private static final String NOBODY = Names.unique("nobody");
    /** A user who may only describe topics, write none. */
    private static final String DESCRIBER = Names.unique("describer");
    private static final String PASSWORD = "java-suite-password";
    private static final Duration GRANT_REACHES_EVERY_BROKER = Duration.ofSeconds(30);

    @BeforeAll
    static void createUsers() throws Exception {
        try (Admin admin = Clients.admin()) {
            Secured.createUsers(admin, GRANTED, PASSWORD, NOBODY, PASSWORD, DESCRIBER, PASSWORD);
        }
    }

    @Test
    void aScramSha512UserProducesConsumesAndDescribesOverSaslSsl() throws Exception {
        String principal = "User:" + GRANTED;
        String topic;
        String group = Names.unique("sasl-group");
        try (Admin admin = Clients.admin()) {
            topic = Topics.create(admin, "sasl-ssl", 1);
            admin.createAcls(List.of(
                Secured.allow(principal, ResourceType.TOPIC, topic, AclOperation.WRITE),
                Secured.allow(principal, ResourceType.TOPIC, topic, AclOperation.READ),
                Secured.allow(principal, ResourceType.GROUP, group, AclOperation.READ))).all().get();
        }
        Waits.until(GRANT_REACHES_EVERY_BROKER, GRANTED + " producing to " + topic, () -> {
            try (KafkaProducer<String, String> producer = Clients.producer(Secured.scram(GRANTED, PASSWORD))) {
                producer.send(new ProducerRecord<>(topic, 0, "k", "over-sasl-ssl")).get();
                return true;
            }
        });
        try (KafkaConsumer<String, String> consumer = Clients.consumer(Secured.scram(GRANTED, PASSWORD,
                ConsumerConfig.GROUP_ID_CONFIG, group))) {
            consumer.subscribe(List.of(topic));
            assertEquals(List.of("over-sasl-ssl"), Consume.values(Consume.records(consumer, 1)));
            consumer.commitSync();
        }
        try (Admin admin = Clients.admin(Secured.scram(GRANTED, PASSWORD))) {
            Set<AclOperation> allowed = admin.describeTopics(List.of(topic),
                new DescribeTopicsOptions().includeAuthorizedOperations(true)).allTopicNames().get().get(topic)
                .authorizedOperations();
            // READ and WRITE each imply DESCRIBE
            assertEquals(Set.of(AclOperation.READ, AclOperation.WRITE, AclOperation.DESCRIBE), allowed);
            Map<TopicPartition, OffsetAndMetadata> committed =
                admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get();
            assertEquals(1, committed.get(new TopicPartition(topic, 0)).offset());
        }
    }

    @Test
    void aWrongPasswordIsASaslAuthenticationException() {
        try (Admin admin = Clients.admin(Secured.scram(GRANTED, PASSWORD + "-wrong"))) {
            ExecutionException refused = assertThrows(ExecutionException.class,
                () -> admin.describeCluster().nodes().get());
            assertInstanceOf(SaslAuthenticationException.class, refused.getCause(), refused.toString());
        }
    }

    @Test
    void aClientCertificatesPrincipalIsItsDistinguishedName() throws Exception {
        String principal = "User:" + Secured.certificateSubject();
        String topic;
        try (Admin admin = Clients.admin()) {
            topic = Topics.create(admin, "mutual-tls", 1);
            admin.createAcls(List.of(
                Secured.allow(principal, ResourceType.TOPIC, topic, AclOperation.WRITE),
                Secured.allow(principal, ResourceType.TOPIC, topic, AclOperation.READ))).all().get();
        }
        Waits.until(GRANT_REACHES_EVERY_BROKER, principal + " producing to " + topic, () -> {
            try (KafkaProducer<String, String> producer = Clients.producer(Secured.certificate())) {
                producer.send(new ProducerRecord<>(topic, 0, "k", "over-mutual-tls")).get();
                return true;
            }
        });
        try (KafkaConsumer<String, String> consumer = Clients.consumer(Secured.certificate())) {
            consumer.assign(List.of(new TopicPartition(topic, 0)));
            assertEquals(List.of("over-mutual-tls"), Consume.values(Consume.records(consumer, 1)));
        }
        try (Admin admin = Clients.admin(Secured.certificate())) {
            Set<AclOperation> allowed = admin.describeTopics(List.of(topic),
                new DescribeTopicsOptions().includeAuthorizedOperations(true)).allTopicNames().get().get(topic)
                .authorizedOperations();
            assertEquals(Set.of(AclOperation.READ, AclOperation.WRITE, AclOperation.DESCRIBE), allowed);
        }
    }

    @Test
    void aClientWithoutACertificateFailsTheHandshake() {
        try (Admin admin = Clients.admin(Secured.noCertificate())) {
            ExecutionException refused = assertThrows(ExecutionException.class,
                () -> admin.describeCluster().nodes().get());
            assertInstanceOf(SslAuthenticationException.class, refused.getCause(), refused.toString());
        }
    }

    @Test
    void producingToATopicNotGrantedIsTopicAuthorizationExceptionNamingIt() throws Exception {
        String topic = Topics.create("not-granted-produce", 1);
        try (KafkaProducer<String, String> producer = Clients.producer(Secured.scram(NOBODY, PASSWORD,
                ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, false))) {
            ExecutionException refused = assertThrows(ExecutionException.class,
                () -> producer.send(new ProducerRecord<>(topic, "k", "v")).get());
            TopicAuthorizationException topics =
                assertInstanceOf(TopicAuthorizationException.class, refused.getCause(), refused.toString());
            assertEquals(Set.of(topic), topics.unauthorizedTopics());
        }
    }

    @Test
    void consumingATopicNotGrantedIsTopicAuthorizationExceptionNamingIt() throws Exception {
        String topic = Topics.create("not-granted-consume", 1);
        try (KafkaConsumer<String, String> consumer = Clients.consumer(Secured.scram(NOBODY, PASSWORD))) {
            consumer.assign(List.of(new TopicPartition(topic, 0)));
            TopicAuthorizationException refused = assertThrows(TopicAuthorizationException.class, () -> {
                for (int polls = 0; polls < 100; polls++) {
                    consumer.poll(Duration.ofMillis(200));
                }
            });
            assertEquals(Set.of(topic), refused.unauthorizedTopics());
        }
    }

    @Test
    void topicsThePrincipalMayNotDescribeAreHiddenFromListTopicsAndDescribe() throws Exception {
        String principal = "User:" + GRANTED;
        String visible;
        String hidden;
        try (Admin admin = Clients.admin()) {
            visible = Topics.create(admin, "described", 1);
            hidden = Topics.create(admin, "hidden", 1);
            admin.createAcls(List.of(Secured.allow(principal, ResourceType.TOPIC, visible, AclOperation.DESCRIBE)))
                .all().get();
        }
        String absent = Names.unique("absent");
        try (Admin admin = Clients.admin(Secured.scram(GRANTED, PASSWORD))) {
            Waits.until(GRANT_REACHES_EVERY_BROKER, visible + " listed to " + principal,
                () -> admin.listTopics().names().get().contains(visible));
            assertFalse(admin.listTopics().names().get().contains(hidden));
            // an existing topic and one that does not exist are refused alike: nothing tells them apart
            for (String topic : List.of(hidden, absent)) {
                ExecutionException refused = assertThrows(ExecutionException.class,
                    () -> admin.describeTopics(List.of(topic)).allTopicNames().get());
                assertInstanceOf(TopicAuthorizationException.class, refused.getCause(), refused.toString());
            }
        }
        try (KafkaProducer<String, String> producer = Clients.producer(Secured.scram(NOBODY, PASSWORD,
                ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, false))) {
            TopicAuthorizationException refused =
                assertThrows(TopicAuthorizationException.class, () -> producer.partitionsFor(absent));
            assertEquals(Set.of(absent), refused.unauthorizedTopics());
        }
        try (Admin admin = Clients.admin()) {
            assertFalse(admin.listTopics().names().get().contains(absent), "not created by the refused lookup");
        }
    }

    @Test
    void aGroupNotGrantedIsGroupAuthorizationException() throws Exception {
        String group = Names.unique("not-granted-group");
        try (KafkaConsumer<String, String> consumer = Clients.consumer(Secured.scram(NOBODY, PASSWORD,
                ConsumerConfig.GROUP_ID_CONFIG, group))) {
            GroupAuthorizationException refused = assertThrows(GroupAuthorizationException.class,
                () -> consumer.commitSync(Map.of(new TopicPartition("any", 0), new OffsetAndMetadata(0))));
            assertEquals(group, refused.groupId());
        }
        try (Admin admin = Clients.admin(Secured.scram(NOBODY, PASSWORD))) {
            ExecutionException refused = assertThrows(ExecutionException.class,
                () -> admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get());
            assertInstanceOf(GroupAuthorizationException.class, refused.getCause(), refused.toString());
        }
    }

    @Test
    void aTransactionalIdNotGrantedIsTransactionalIdAuthorizationException() {
        try (KafkaProducer<String, String> producer = Clients.producer(Secured.scram(NOBODY, PASSWORD,
                ProducerConfig.TRANSACTIONAL_ID_CONFIG, Names.unique("not-granted-txn")))) {
            assertThrows(TransactionalIdAuthorizationException.class, producer::initTransactions);
        }
    }

    @Test
    void clusterOperationsNotGrantedAreClusterAuthorizationException() {
        try (Admin admin = Clients.admin(Secured.scram(NOBODY, PASSWORD))) {
            ExecutionException createAcls = assertThrows(ExecutionException.class, () -> admin.createAcls(List.of(
                Secured.allow("User:" + NOBODY, ResourceType.CLUSTER, "kafka-cluster", AclOperation.ALTER)))
                .all().get());
            assertInstanceOf(ClusterAuthorizationException.class, createAcls.getCause(), createAcls.toString());
            ConfigResource brokers = new ConfigResource(ConfigResource.Type.BROKER, "");
            AlterConfigOp op = new AlterConfigOp(new ConfigEntry("log.cleaner.threads", "2"),
                AlterConfigOp.OpType.SET);
            ExecutionException alterConfigs = assertThrows(ExecutionException.class,
                () -> admin.incrementalAlterConfigs(Map.of(brokers, List.of(op))).all().get());
            assertInstanceOf(ClusterAuthorizationException.class, alterConfigs.getCause(),
                alterConfigs.toString());
        }
    }

    @Test
    void adminOperationsNotGrantedRaiseTheAuthorizationExceptionOfTheirResource() throws Exception {
        String topic = Topics.create("admin-not-granted", 1);
        TopicPartition partition = new TopicPartition(topic, 0);
        String group = Names.unique("admin-not-granted-group");
        String transactionalId = Names.unique("admin-not-granted-txn");
        try (Admin admin = Clients.admin(Secured.scram(NOBODY, PASSWORD))) {
            refused(TopicAuthorizationException.class,
                admin.createTopics(List.of(new NewTopic(Names.unique("not-created"), 1, (short) 1))).all());
            refused(TopicAuthorizationException.class, admin.deleteTopics(List.of(topic)).all());
            refused(TopicAuthorizationException.class,
                admin.createPartitions(Map.of(topic, NewPartitions.increaseTo(2))).all());
            refused(TopicAuthorizationException.class, admin.describeConfigs(
                List.of(new ConfigResource(ConfigResource.Type.TOPIC, topic))).all());
            refused(TopicAuthorizationException.class,
                admin.deleteRecords(Map.of(partition, RecordsToDelete.beforeOffset(0))).all());
            refused(TopicAuthorizationException.class,
                admin.listOffsets(Map.of(partition, OffsetSpec.latest())).all());
            refused(TopicAuthorizationException.class, admin.describeProducers(List.of(partition)).all());
            refused(GroupAuthorizationException.class, admin.deleteConsumerGroups(List.of(group)).all());
            refused(GroupAuthorizationException.class, admin.describeConsumerGroups(List.of(group)).all());
            refused(TransactionalIdAuthorizationException.class,
                admin.describeTransactions(List.of(transactionalId)).all());
            refused(ClusterAuthorizationException.class, admin.describeAcls(AclBindingFilter.ANY).values());
            refused(ClusterAuthorizationException.class, admin.describeUserScramCredentials().all());
            refused(ClusterAuthorizationException.class, admin.describeClientQuotas(ClientQuotaFilter.all()).entities());
            refused(ClusterAuthorizationException.class, admin.listPartitionReassignments().reassignments());
            refused(ClusterAuthorizationException.class,
                admin.electLeaders(ElectionType.PREFERRED, Set.of(partition)).all());
            assertTrue(admin.listConsumerGroups().all().get().stream().noneMatch(g -> g.groupId().equals(group)));
        }
    }

    private static void refused(Class<? extends Throwable> expected, KafkaFuture<?> answer) {
        ExecutionException refused = assertThrows(ExecutionException.class, answer::get);
        assertInstanceOf(expected, refused.getCause(), refused.toString());
    }

    @Test
    void anIdempotentProducerWithNoWriteAnywhereIsClusterAuthorizationException() throws Exception {
        // DESCRIBE on the topic, so that its metadata is not what fails; no WRITE on any topic and no
        // IDEMPOTENT_WRITE on the cluster, so that InitProducerId is refused
        String topic;
        try (Admin admin = Clients.admin()) {
            topic = Topics.create(admin, "idempotent-not-granted", 1);
            admin.createAcls(List.of(
                Secured.allow("User:" + DESCRIBER, ResourceType.TOPIC, topic, AclOperation.DESCRIBE))).all().get();
        }
        Throwable[] outcome = new Throwable[1];
        Waits.until(GRANT_REACHES_EVERY_BROKER, DESCRIBER + " describing " + topic, () -> {
            try (KafkaProducer<String, String> producer = Clients.producer(Secured.scram(DESCRIBER, PASSWORD,
                    ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, true))) {
                producer.send(new ProducerRecord<>(topic, 0, "k", "v")).get();
                outcome[0] = null;
            } catch (ExecutionException refused) {
                outcome[0] = refused.getCause();
            } catch (RuntimeException refused) {
                // InitProducerId's refusal may come before send() or after it: before, send() throws the
                // producer's error state, "Cannot execute transactional method...", caused by it
                boolean errorState = refused.getClass() == KafkaException.class && refused.getCause() != null;
                outcome[0] = errorState ? refused.getCause() : refused;
            }
            return !(outcome[0] instanceof TopicAuthorizationException);
        });
        assertInstanceOf(ClusterAuthorizationException.class, outcome[0], String.valueOf(outcome[0]));
    }
}
