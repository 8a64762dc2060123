package odradek.compat;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.time.Duration;
import java.util.List;

import odradek.compat.support.Clients;
import odradek.compat.support.Consume;
import odradek.compat.support.Names;
import odradek.compat.support.Produce;
import odradek.compat.support.Target;
import odradek.compat.support.Topics;
import odradek.compat.support.Waits;
import org.apache.kafka.clients.admin.AbortTransactionSpec;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.DescribeProducersOptions;
import org.apache.kafka.clients.admin.ProducerState;
import org.apache.kafka.clients.admin.TransactionDescription;
import org.apache.kafka.clients.admin.TransactionState;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.TopicPartitionInfo;
import org.apache.kafka.common.errors.ProducerFencedException;
import org.junit.jupiter.api.Test;

/** describeProducers on a follower, fenceProducers and abortTransaction, as Kafka 3.9 answers. */
class AdminProducersTest {

    @Test
    void aFollowerDescribesTheSameActiveProducerAsTheLeader() throws Exception {
        assumeTrue(Target.brokers() > 1, "a follower needs a second broker");
        try (Admin admin = Clients.admin()) {
            String topic = Topics.create(admin, "producers-follower", 1);
            TopicPartition partition = new TopicPartition(topic, 0);
            Produce.values(topic, 0, "r", 3); // idempotent, acks=all: every replica has appended them
            TopicPartitionInfo info = Topics.describeLed(admin, topic, 1).partitions().get(0);
            ProducerState onLeader = only(admin, partition, info.leader().id());
            assertEquals(2, onLeader.lastSequence());
            assertTrue(onLeader.currentTransactionStartOffset().isEmpty());
            for (Node replica : info.replicas()) {
                ProducerState onReplica = only(admin, partition, replica.id());
                assertEquals(onLeader.producerId(), onReplica.producerId(), "broker " + replica.id());
                assertEquals(onLeader.producerEpoch(), onReplica.producerEpoch(), "broker " + replica.id());
                assertEquals(onLeader.lastSequence(), onReplica.lastSequence(), "broker " + replica.id());
            }
        }
    }

    @Test
    void fencingATransactionalIdAbortsItsTransactionAndFencesItsProducer() throws Exception {
        String topic = Topics.create("fence-producers", 1);
        String id = Names.unique("fenced");
        try (Admin admin = Clients.admin();
             KafkaProducer<String, String> producer = Clients.producer("transactional.id", id)) {
            producer.initTransactions();
            producer.beginTransaction();
            Produce.send(producer, topic, 0, "fenced", 2);
            int epoch = admin.describeTransactions(List.of(id)).description(id).get().producerEpoch();

            admin.fenceProducers(List.of(id)).all().get();
            Waits.until(Duration.ofSeconds(30), "the transaction aborted and the epoch bumped for the fencer", () -> {
                TransactionDescription after = admin.describeTransactions(List.of(id)).description(id).get();
                return after.state() == TransactionState.EMPTY && after.producerEpoch() > epoch;
            });
            assertThrows(ProducerFencedException.class, producer::commitTransaction);
        }
        try (KafkaConsumer<String, String> consumer = Clients.consumer("isolation.level", "read_committed")) {
            consumer.assign(List.of(new TopicPartition(topic, 0)));
            Produce.values(topic, 0, "after", 1);
            assertEquals(List.of("after-0"), Consume.values(Consume.records(consumer, 1)));
        }
    }

    @Test
    void abortTransactionWritesTheAbortMarkerOfAHangingTransaction() throws Exception {
        String topic = Topics.create("abort-transaction", 1);
        TopicPartition partition = new TopicPartition(topic, 0);
        String id = Names.unique("hanging");
        try (Admin admin = Clients.admin();
             KafkaProducer<String, String> producer = Clients.producer("transactional.id", id)) {
            producer.initTransactions();
            producer.beginTransaction();
            Produce.send(producer, topic, 0, "hanging", 2);
            ProducerState open = admin.describeProducers(List.of(partition)).partitionResult(partition).get()
                .activeProducers().iterator().next();
            assertEquals(0, open.currentTransactionStartOffset().orElseThrow());

            // A partition learns the coordinator's epoch from its first marker: none yet (as kafka-transactions).
            assertTrue(open.coordinatorEpoch().isEmpty(), open.toString());
            admin.abortTransaction(new AbortTransactionSpec(partition, open.producerId(), (short) open.producerEpoch(),
                0)).all().get();
            ProducerState closed = admin.describeProducers(List.of(partition)).partitionResult(partition).get()
                .activeProducers().iterator().next();
            assertTrue(closed.currentTransactionStartOffset().isEmpty(), closed.toString());
            try (KafkaConsumer<String, String> consumer = Clients.consumer("isolation.level", "read_committed")) {
                consumer.assign(List.of(partition));
                Produce.values(topic, 0, "after", 1);
                assertEquals(List.of("after-0"), Consume.values(Consume.records(consumer, 1)),
                    "the aborted records are skipped and the last stable offset has moved past them");
            }
        }
    }

    private static ProducerState only(Admin admin, TopicPartition partition, int broker) throws Exception {
        List<ProducerState> states = List.copyOf(admin.describeProducers(List.of(partition),
            new DescribeProducersOptions().brokerId(broker)).partitionResult(partition).get().activeProducers());
        assertEquals(1, states.size(), "broker " + broker + ": " + states);
        return states.get(0);
    }
}
