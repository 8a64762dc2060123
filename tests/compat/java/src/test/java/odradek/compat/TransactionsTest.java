package odradek.compat;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ExecutionException;

import odradek.compat.support.Clients;
import odradek.compat.support.Consume;
import odradek.compat.support.Names;
import odradek.compat.support.Produce;
import odradek.compat.support.Topics;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.InvalidProducerEpochException;
import org.apache.kafka.common.errors.ProducerFencedException;
import org.junit.jupiter.api.Test;

/** Transactional KafkaProducer: commit, abort, offsets in a transaction, fencing. */
class TransactionsTest {

    @Test
    void aCommittedTransactionOverSeveralPartitionsIsReadCommittedWhole() throws Exception {
        String topic = Topics.create("txn-commit", 3);
        try (KafkaProducer<String, String> producer = transactional(Names.unique("commit"))) {
            producer.beginTransaction();
            for (int partition = 0; partition < 3; partition++) {
                Produce.send(producer, topic, partition, "p" + partition, 2);
            }
            producer.commitTransaction();
        }
        try (KafkaConsumer<String, String> consumer = readCommitted()) {
            consumer.assign(List.of(new TopicPartition(topic, 0), new TopicPartition(topic, 1),
                new TopicPartition(topic, 2)));
            List<String> read = new ArrayList<>(Consume.values(Consume.records(consumer, 6)));
            read.sort(null);
            assertEquals(List.of("p0-0", "p0-1", "p1-0", "p1-1", "p2-0", "p2-1"), read);
        }
    }

    @Test
    void anAbortedTransactionIsSkippedByReadCommittedAndItsOffsetsStayTaken() throws Exception {
        String topic = Topics.create("txn-abort", 1);
        TopicPartition partition = new TopicPartition(topic, 0);
        try (KafkaProducer<String, String> producer = transactional(Names.unique("abort"))) {
            producer.beginTransaction();
            Produce.send(producer, topic, 0, "aborted", 3); // offsets 0-2, marker at 3
            producer.abortTransaction();
            producer.beginTransaction();
            Produce.send(producer, topic, 0, "committed", 1); // offset 4, marker at 5
            producer.commitTransaction();
        }
        try (KafkaConsumer<String, String> consumer = readCommitted()) {
            consumer.assign(List.of(partition));
            List<ConsumerRecord<String, String>> read = Consume.records(consumer, 1);
            assertEquals("committed-0", read.get(0).value());
            assertEquals(4, read.get(0).offset());
            assertEquals(Map.of(partition, 6L), consumer.endOffsets(List.of(partition)));
        }
    }

    @Test
    void offsetsSentToATransactionAreCommittedWithItAndDroppedWithAnAbort() throws Exception {
        String input = Topics.create("txn-input", 1);
        String output = Topics.create("txn-output", 1);
        String group = Names.unique("txn-group");
        TopicPartition in = new TopicPartition(input, 0);
        Produce.values(input, 0, "in", 6);
        try (KafkaProducer<String, String> producer = transactional(Names.unique("copy"));
             KafkaConsumer<String, String> consumer = Clients.consumer("group.id", group,
                 "enable.auto.commit", "false", "isolation.level", "read_committed");
             Admin admin = Clients.admin()) {
            consumer.subscribe(List.of(input));
            // Copy the first three records, with their offsets, in one committed transaction.
            List<ConsumerRecord<String, String>> first = Consume.records(consumer, 6).subList(0, 3);
            producer.beginTransaction();
            for (ConsumerRecord<String, String> record : first) {
                producer.send(new ProducerRecord<>(output, 0, null, record.value())).get();
            }
            producer.sendOffsetsToTransaction(Map.of(in, new OffsetAndMetadata(3, "copied")),
                consumer.groupMetadata());
            producer.commitTransaction();
            Map<TopicPartition, OffsetAndMetadata> committed = consumer.committed(Set.of(in));
            assertEquals(3, committed.get(in).offset());
            assertEquals("copied", committed.get(in).metadata());
            // The next three, aborted: neither the records nor the offsets count.
            producer.beginTransaction();
            producer.send(new ProducerRecord<>(output, 0, null, "in-3")).get();
            producer.sendOffsetsToTransaction(Map.of(in, new OffsetAndMetadata(6)), consumer.groupMetadata());
            producer.abortTransaction();
            assertEquals(3, consumer.committed(Set.of(in)).get(in).offset());
            assertEquals(3, admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get()
                .get(in).offset());
        }
        try (KafkaConsumer<String, String> check = readCommitted()) {
            check.assign(List.of(new TopicPartition(output, 0)));
            assertEquals(List.of("in-0", "in-1", "in-2"), Consume.values(Consume.records(check, 3)));
        }
    }

    @Test
    void aSecondProducerWithTheSameTransactionalIdFencesTheFirstAndAbortsItsTransaction() throws Exception {
        String topic = Topics.create("txn-fence", 1);
        String id = Names.unique("fenced");
        try (KafkaProducer<String, String> first = transactional(id)) {
            first.beginTransaction();
            Produce.send(first, topic, 0, "first", 2);
            try (KafkaProducer<String, String> second = transactional(id)) {
                // initTransactions aborted the first producer's open transaction and bumped the epoch.
                KafkaException onCommit = assertThrows(KafkaException.class, first::commitTransaction);
                assertInstanceOf(ProducerFencedException.class, onCommit, onCommit.toString());
                second.beginTransaction();
                Produce.send(second, topic, 0, "second", 1);
                second.commitTransaction();
            }
        }
        try (KafkaConsumer<String, String> consumer = readCommitted()) {
            consumer.assign(List.of(new TopicPartition(topic, 0)));
            assertEquals(List.of("second-0"), Consume.values(Consume.records(consumer, 1)));
        }
    }

    @Test
    void aFencedProducersNextSendFailsWithInvalidProducerEpoch() throws Exception {
        String topic = Topics.create("txn-fence-send", 1);
        String id = Names.unique("fenced-send");
        try (KafkaProducer<String, String> first = transactional(id)) {
            first.beginTransaction();
            Produce.send(first, topic, 0, "first", 1);
            try (KafkaProducer<String, String> second = transactional(id)) {
                ExecutionException onSend = assertThrows(ExecutionException.class,
                    () -> first.send(new ProducerRecord<>(topic, 0, null, "late")).get());
                // Produce answers INVALID_PRODUCER_EPOCH (KIP-588): abortable, unlike EndTxn's PRODUCER_FENCED.
                assertInstanceOf(InvalidProducerEpochException.class, onSend.getCause(), onSend.toString());
            }
        }
    }

    private static KafkaProducer<String, String> transactional(String id) {
        KafkaProducer<String, String> producer = Clients.producer("transactional.id", id);
        producer.initTransactions();
        return producer;
    }

    private static KafkaConsumer<String, String> readCommitted() {
        return Clients.consumer("isolation.level", "read_committed");
    }
}
