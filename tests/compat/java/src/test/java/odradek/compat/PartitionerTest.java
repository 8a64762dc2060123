package odradek.compat;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicReference;

import odradek.compat.support.Clients;
import odradek.compat.support.Consume;
import odradek.compat.support.Topics;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.Partitioner;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.clients.producer.RoundRobinPartitioner;
import org.apache.kafka.common.Cluster;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.utils.Utils;
import org.junit.jupiter.api.Test;

/**
 * Where KafkaProducer's partitioners put records, and that each record is stored on the partition its
 * acknowledgement names: keys by murmur2, keyless records sticky to one partition per batch, an explicit
 * partition, a partitioner class of the application's, RoundRobinPartitioner, partitioner.ignore.keys.
 */
class PartitionerTest {
    private static final int PARTITIONS = 6;

    @Test
    void aKeyedRecordLandsOnMurmur2OfItsKeyModuloThePartitions() throws Exception {
        String topic = Topics.create("partition-by-key", PARTITIONS);
        Map<String, Integer> expected = new HashMap<>();
        for (int i = 0; i < 60; i++) {
            expected.put("key-" + i, murmur2Partition("key-" + i, PARTITIONS));
        }
        assertEquals(PARTITIONS, new HashSet<>(expected.values()).size(), "the keys cover every partition");
        Map<String, Integer> acknowledged = new HashMap<>();
        try (KafkaProducer<String, String> producer = Clients.producer()) {
            Map<String, Future<RecordMetadata>> sent = new HashMap<>();
            expected.keySet().forEach(key -> sent.put(key, producer.send(new ProducerRecord<>(topic, key, key))));
            for (Map.Entry<String, Future<RecordMetadata>> each : sent.entrySet()) {
                acknowledged.put(each.getKey(), each.getValue().get().partition());
            }
        }
        assertEquals(expected, acknowledged);
        assertEquals(expected, storedPartitionByValue(topic, PARTITIONS, expected.size()));
    }

    @Test
    void keylessRecordsOfOneBatchStickToOnePartition() throws Exception {
        String topic = Topics.create("sticky", PARTITIONS);
        List<RecordMetadata> acknowledged = sendAndFlush(topic, 20, false, Clients.producer("linger.ms", 10_000));
        // The built-in partitioner keeps a partition until batch.size (16 KB) has gone to it: 20 small
        // records are one batch on one partition, at consecutive offsets.
        Set<Integer> used = new HashSet<>();
        acknowledged.forEach(m -> used.add(m.partition()));
        assertEquals(1, used.size(), "one partition for one batch: " + acknowledged);
        for (int i = 1; i < acknowledged.size(); i++) {
            assertEquals(acknowledged.get(0).offset() + i, acknowledged.get(i).offset());
        }
        Map<String, Integer> stored = storedPartitionByValue(topic, PARTITIONS, 20);
        assertEquals(Set.copyOf(used), Set.copyOf(stored.values()));
    }

    @Test
    void keylessRecordsMoveOnToAnotherPartitionOnceABatchIsFull() throws Exception {
        String topic = Topics.create("uniform-sticky", PARTITIONS);
        // batch.size 1 KB and 100-byte values: the partitioner moves on after about ten records. It picks
        // the next partition at random, so 200 records staying on one would take 19 draws of the same
        // partition in a row (1 in 6^19).
        String value = "x".repeat(100);
        List<RecordMetadata> acknowledged = new ArrayList<>();
        try (KafkaProducer<String, String> producer = Clients.producer("batch.size", 1024, "linger.ms", 10_000)) {
            List<Future<RecordMetadata>> sent = new ArrayList<>();
            for (int i = 0; i < 200; i++) {
                sent.add(producer.send(new ProducerRecord<>(topic, i + "-" + value)));
            }
            producer.flush();
            for (Future<RecordMetadata> future : sent) {
                acknowledged.add(future.get());
            }
        }
        Set<Integer> used = new HashSet<>();
        acknowledged.forEach(m -> used.add(m.partition()));
        assertTrue(used.size() > 1, "200 records of 100 bytes on more than one partition: " + used);
        Map<String, Integer> stored = storedPartitionByValue(topic, PARTITIONS, 200);
        for (int i = 0; i < 200; i++) {
            assertEquals(acknowledged.get(i).partition(), stored.get(i + "-" + value));
        }
    }

    @Test
    void anExplicitPartitionWinsOverTheKey() throws Exception {
        String topic = Topics.create("explicit-partition", PARTITIONS);
        String key = "key-0";
        int chosen = (murmur2Partition(key, PARTITIONS) + 1) % PARTITIONS;
        try (KafkaProducer<String, String> producer = Clients.producer()) {
            RecordMetadata metadata = producer.send(new ProducerRecord<>(topic, chosen, key, "explicit")).get();
            assertEquals(chosen, metadata.partition());
            assertEquals(0, metadata.offset());
        }
        assertEquals(Map.of("explicit", chosen), storedPartitionByValue(topic, PARTITIONS, 1));
    }

    @Test
    void aPartitionerClassOfTheApplicationsIsConfiguredAndDecides() throws Exception {
        String topic = Topics.create("custom-partitioner", PARTITIONS);
        List<RecordMetadata> acknowledged = new ArrayList<>();
        try (KafkaProducer<String, String> producer = Clients.producer(
                "partitioner.class", ValueModuloPartitioner.class.getName(), ValueModuloPartitioner.SHIFT, "2")) {
            for (int i = 0; i < 12; i++) {
                acknowledged.add(producer.send(new ProducerRecord<>(topic, "key", Integer.toString(i))).get());
            }
        }
        assertEquals("2", ValueModuloPartitioner.configured.get(), "configure() got the producer's settings");
        Map<String, Integer> stored = storedPartitionByValue(topic, PARTITIONS, 12);
        for (int i = 0; i < 12; i++) {
            int expected = (i + 2) % PARTITIONS;
            assertEquals(expected, acknowledged.get(i).partition());
            assertEquals(expected, stored.get(Integer.toString(i)));
        }
    }

    @Test
    void roundRobinPartitionerSpreadsRecordsEvenly() throws Exception {
        // 5 partitions, 10 records each acknowledged before the next is sent: every partition gets two.
        // (Each of these records opens a new batch, and the producer asks the partitioner again when one
        // does, so the counter steps by two; with an odd number of partitions that still visits each.)
        int partitions = 5;
        String topic = Topics.create("round-robin", partitions);
        Map<Integer, Integer> perPartition = new HashMap<>();
        Map<String, Integer> acknowledged = new HashMap<>();
        try (KafkaProducer<String, String> producer = Clients.producer(
                "partitioner.class", RoundRobinPartitioner.class.getName())) {
            for (int i = 0; i < 10; i++) {
                RecordMetadata metadata = producer.send(new ProducerRecord<>(topic, "same-key", "r" + i)).get();
                perPartition.merge(metadata.partition(), 1, Integer::sum);
                acknowledged.put("r" + i, metadata.partition());
            }
        }
        assertEquals(Map.of(0, 2, 1, 2, 2, 2, 3, 2, 4, 2), perPartition);
        assertEquals(acknowledged, storedPartitionByValue(topic, partitions, 10));
    }

    @Test
    void partitionerIgnoreKeysPlacesKeyedRecordsAsKeylessOnes() throws Exception {
        String topic = Topics.create("ignore-keys", PARTITIONS);
        Set<Integer> byKey = new HashSet<>();
        for (int i = 0; i < 20; i++) {
            byKey.add(murmur2Partition("key-" + i, PARTITIONS));
        }
        assertTrue(byKey.size() > 1, "the keys alone would spread");
        List<RecordMetadata> acknowledged = sendAndFlush(topic, 20, true,
            Clients.producer("partitioner.ignore.keys", "true", "linger.ms", 10_000));
        Set<Integer> used = new HashSet<>();
        acknowledged.forEach(m -> used.add(m.partition()));
        assertEquals(1, used.size(), "keys ignored: one sticky partition for one batch: " + acknowledged);
        assertEquals(used, Set.copyOf(storedPartitionByValue(topic, PARTITIONS, 20).values()));
    }

    /** Where the default partitioner sends a String key: murmur2 of its bytes, made positive, modulo. */
    static int murmur2Partition(String key, int partitions) {
        return Utils.toPositive(Utils.murmur2(key.getBytes(StandardCharsets.UTF_8))) % partitions;
    }

    /** Sends "v0".."v{count-1}" (keyed "key-i" when {@code keyed}), flushes, closes; their acknowledgements. */
    private static List<RecordMetadata> sendAndFlush(String topic, int count, boolean keyed,
                                                     KafkaProducer<String, String> producer) throws Exception {
        List<RecordMetadata> acknowledged = new ArrayList<>();
        try (producer) {
            List<Future<RecordMetadata>> sent = new ArrayList<>();
            for (int i = 0; i < count; i++) {
                sent.add(producer.send(new ProducerRecord<>(topic, keyed ? "key-" + i : null, "v" + i)));
            }
            producer.flush();
            for (Future<RecordMetadata> future : sent) {
                acknowledged.add(future.get());
            }
        }
        return acknowledged;
    }

    /** Every record of {@code topic} read back from the brokers: its value and the partition it is stored on. */
    private static Map<String, Integer> storedPartitionByValue(String topic, int partitions, int count) {
        List<TopicPartition> all = new ArrayList<>();
        for (int p = 0; p < partitions; p++) {
            all.add(new TopicPartition(topic, p));
        }
        Map<String, Integer> stored = new HashMap<>();
        try (KafkaConsumer<String, String> consumer = Clients.consumer()) {
            consumer.assign(all);
            consumer.seekToBeginning(all);
            for (ConsumerRecord<String, String> record : Consume.records(consumer, count)) {
                assertNotEquals(null, record.value());
                stored.put(record.value(), record.partition());
            }
            assertTrue(consumer.poll(Duration.ofMillis(200)).isEmpty(), "no more records than were sent");
        }
        return stored;
    }

    /** Partition = (the value as a number + the configured shift) modulo the partitions. */
    public static final class ValueModuloPartitioner implements Partitioner {
        static final String SHIFT = "odradek.test.partition.shift";
        static final AtomicReference<String> configured = new AtomicReference<>();
        private int shift;

        @Override
        public void configure(Map<String, ?> configs) {
            configured.set((String) configs.get(SHIFT));
            shift = Integer.parseInt((String) configs.get(SHIFT));
        }

        @Override
        public int partition(String topic, Object key, byte[] keyBytes, Object value, byte[] valueBytes,
                             Cluster cluster) {
            return (Integer.parseInt((String) value) + shift) % cluster.partitionsForTopic(topic).size();
        }

        @Override
        public void close() {
        }
    }
}
