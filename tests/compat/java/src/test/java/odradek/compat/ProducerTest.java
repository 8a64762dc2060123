package odradek.compat;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;

import odradek.compat.support.Clients;
import odradek.compat.support.Consume;
import odradek.compat.support.RecordSizes;
import odradek.compat.support.Topics;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ProducerState;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.Metric;
import org.apache.kafka.common.MetricName;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.RecordTooLargeException;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** KafkaProducer: acknowledgements, idempotence, compression, headers, sizes and batching. */
class ProducerTest {

    @ParameterizedTest
    @ValueSource(strings = {"1", "all", "-1"})
    void acksOneAndAllAnswerEachRecordWithItsOffset(String acks) throws Exception {
        String topic = Topics.create("acks", 1);
        List<RecordMetadata> acknowledged = new ArrayList<>();
        try (KafkaProducer<String, String> producer = Clients.producer("acks", acks, "enable.idempotence",
                acks.equals("1") ? "false" : "true")) {
            for (int i = 0; i < 5; i++) {
                acknowledged.add(producer.send(new ProducerRecord<>(topic, "k" + i, "v" + i)).get());
            }
        }
        for (int i = 0; i < 5; i++) {
            assertTrue(acknowledged.get(i).hasOffset());
            assertEquals(i, acknowledged.get(i).offset());
        }
        assertEquals(List.of("v0", "v1", "v2", "v3", "v4"), readAll(topic, 0, 5));
    }

    @Test
    void acksZeroDeliversWithoutAnOffset() throws Exception {
        String topic = Topics.create("acks0", 1);
        // A record its leader refuses is lost with acks=0 (the broker closes the connection, as Kafka's):
        // the leader must have the partition before the first send, and the admin's description may
        // come from a broker the controller told before it told the leader. ListOffsets is the leader's
        // alone, and the consumer retries it until the leader answers.
        try (KafkaConsumer<String, String> consumer = Clients.consumer()) {
            consumer.endOffsets(List.of(new TopicPartition(topic, 0)));
        }
        List<RecordMetadata> sent = new ArrayList<>();
        try (KafkaProducer<String, String> producer = Clients.producer("acks", "0", "enable.idempotence", "false")) {
            for (int i = 0; i < 5; i++) {
                sent.add(producer.send(new ProducerRecord<>(topic, "v" + i)).get());
            }
            producer.flush();
        }
        for (RecordMetadata metadata : sent) {
            assertFalse(metadata.hasOffset(), "acks=0 has no answer to take an offset from");
            assertEquals(-1, metadata.offset());
        }
        assertEquals(List.of("v0", "v1", "v2", "v3", "v4"), readAll(topic, 0, 5));
    }

    @Test
    void idempotenceIsOnByDefaultAndTheBrokerKeepsTheProducersSequence() throws Exception {
        String topic = Topics.create("idempotent", 1);
        try (KafkaProducer<String, String> producer = Clients.producer();
             Admin admin = Clients.admin()) {
            for (int i = 0; i < 7; i++) {
                producer.send(new ProducerRecord<>(topic, "v" + i)).get();
            }
            TopicPartition partition = new TopicPartition(topic, 0);
            Collection<ProducerState> states = admin.describeProducers(List.of(partition))
                .partitionResult(partition).get().activeProducers();
            assertEquals(1, states.size(), states.toString());
            ProducerState state = states.iterator().next();
            assertTrue(state.producerId() >= 0, state.toString());
            assertEquals(0, state.producerEpoch(), state.toString());
            assertEquals(6, state.lastSequence(), state.toString());
            assertTrue(state.currentTransactionStartOffset().isEmpty(), state.toString());
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"none", "gzip", "snappy", "lz4", "zstd"})
    void everyCompressionTypeRoundTrips(String compression) throws Exception {
        String topic = Topics.create("compression-" + compression, 2);
        List<String> values = new ArrayList<>();
        try (KafkaProducer<String, String> producer = Clients.producer("compression.type", compression,
                "linger.ms", 50)) {
            List<Future<RecordMetadata>> sent = new ArrayList<>();
            for (int i = 0; i < 200; i++) {
                String value = "compressible " + "abcdefgh".repeat(i % 40) + " #" + i;
                values.add(value);
                sent.add(producer.send(new ProducerRecord<>(topic, i % 2, "k" + i, value)));
            }
            for (Future<RecordMetadata> future : sent) {
                future.get();
            }
        }
        List<String> partition0 = new ArrayList<>();
        List<String> partition1 = new ArrayList<>();
        for (int i = 0; i < values.size(); i++) {
            (i % 2 == 0 ? partition0 : partition1).add(values.get(i));
        }
        assertEquals(partition0, readAll(topic, 0, 100));
        assertEquals(partition1, readAll(topic, 1, 100));
    }

    @Test
    void headersRoundTripInOrderWithRepeatedKeysAndNullValues() throws Exception {
        String topic = Topics.create("headers", 1);
        List<Header> headers = List.of(
            new RecordHeader("trace", "t-1".getBytes(StandardCharsets.UTF_8)),
            new RecordHeader("dup", "1".getBytes(StandardCharsets.UTF_8)),
            new RecordHeader("dup", "2".getBytes(StandardCharsets.UTF_8)),
            new RecordHeader("empty", new byte[0]),
            new RecordHeader("null", (byte[]) null),
            new RecordHeader("ünïcødé", new byte[] {0, -1, 127}));
        try (KafkaProducer<String, String> producer = Clients.producer()) {
            producer.send(new ProducerRecord<>(topic, 0, "key", "value", headers)).get();
            producer.send(new ProducerRecord<>(topic, 0, "key", "no headers")).get();
        }
        try (KafkaConsumer<String, String> consumer = Clients.consumer()) {
            consumer.assign(List.of(new TopicPartition(topic, 0)));
            List<ConsumerRecord<String, String>> read = Consume.records(consumer, 2);
            assertEquals(headers, List.of(read.get(0).headers().toArray()));
            assertEquals(0, read.get(1).headers().toArray().length);
        }
    }

    @Test
    void aBatchOfExactlyMaxMessageBytesIsAcceptedAndOneByteMoreIsRecordTooLarge() throws Exception {
        int maxMessageBytes = 100_000;
        String topic = Topics.create("max-message-bytes", 1,
            Map.of("max.message.bytes", String.valueOf(maxMessageBytes)));
        // One record with no key or headers per batch, uncompressed: the batch is its header plus the
        // record, and max.message.bytes bounds the batch (equal is allowed).
        int overhead = RecordSizes.batchOfOneValue(maxMessageBytes) - maxMessageBytes;
        String fits = "x".repeat(maxMessageBytes - overhead);
        String tooLarge = "x".repeat(maxMessageBytes - overhead + 1);
        try (KafkaProducer<String, String> producer = Clients.producer("compression.type", "none",
                "max.request.size", 10 * maxMessageBytes)) {
            RecordMetadata accepted = producer.send(new ProducerRecord<>(topic, 0, null, fits)).get();
            assertEquals(0, accepted.offset());
            ExecutionException refused = assertThrows(ExecutionException.class,
                () -> producer.send(new ProducerRecord<>(topic, 0, null, tooLarge)).get());
            assertInstanceOf(RecordTooLargeException.class, refused.getCause());
            RecordMetadata after = producer.send(new ProducerRecord<>(topic, 0, null, "small")).get();
            assertEquals(1, after.offset(), "the refused batch took no offset");
        }
        assertEquals(List.of(fits, "small"), readAll(topic, 0, 2));
    }

    @Test
    void lingerGathersRecordsIntoBatchesWithConsecutiveOffsets() throws Exception {
        String topic = Topics.create("linger", 1);
        int count = 300;
        List<Future<RecordMetadata>> sent = new ArrayList<>();
        double recordsPerRequest;
        try (KafkaProducer<String, String> producer = Clients.producer("linger.ms", 500,
                "batch.size", 4096)) {
            for (int i = 0; i < count; i++) {
                sent.add(producer.send(new ProducerRecord<>(topic, "record-" + i)));
            }
            for (int i = 0; i < count; i++) {
                assertEquals(i, sent.get(i).get().offset(), "offset of record " + i);
            }
            recordsPerRequest = metric(producer.metrics(), "records-per-request-avg");
        }
        // Several batches (batch.size is 4 KiB) went in few requests: the broker assigned each batch's
        // offsets from its base, in the order the producer sent them.
        assertTrue(recordsPerRequest > 10, "records per request " + recordsPerRequest);
        List<String> expected = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            expected.add("record-" + i);
        }
        assertEquals(expected, readAll(topic, 0, count));
    }

    static double metric(Map<MetricName, ? extends Metric> metrics, String name) {
        return metrics.entrySet().stream()
            .filter(e -> e.getKey().name().equals(name) && e.getKey().group().equals("producer-metrics"))
            .map(e -> ((Number) e.getValue().metricValue()).doubleValue())
            .findFirst().orElseThrow(() -> new AssertionError("no producer metric " + name));
    }

    /** The values of the first {@code count} records of one partition, read from offset 0. */
    static List<String> readAll(String topic, int partition, int count) {
        try (KafkaConsumer<String, String> consumer = Clients.consumer()) {
            TopicPartition assigned = new TopicPartition(topic, partition);
            consumer.assign(List.of(assigned));
            consumer.seekToBeginning(List.of(assigned));
            return Consume.values(Consume.records(consumer, count));
        }
    }
}
