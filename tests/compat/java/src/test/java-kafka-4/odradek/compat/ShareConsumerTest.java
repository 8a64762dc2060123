package odradek.compat;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.function.Function;
import java.util.stream.Collectors;

import odradek.compat.support.Clients;
import odradek.compat.support.Names;
import odradek.compat.support.Produce;
import odradek.compat.support.Target;
import odradek.compat.support.Topics;
import org.apache.kafka.clients.consumer.AcknowledgeType;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * KIP-932 share groups with kafka-clients 4.x's KafkaShareConsumer: several consumers read one partition
 * and each record goes to one of them at a time; rejected records are not delivered again, released ones
 * are (with their delivery count), a record released as often as the delivery limit allows is archived,
 * and what a consumer held when it closed goes to another. A share group starts at the partition's end
 * (share.auto.offset.reset=latest, the default): each test first sends "warm-up" records until one is
 * delivered, so that the records it counts come after the group's start. Only the 4.x API has it.
 */
@Tag(Target.NOT_IN_KAFKA_ZOOKEEPER_MODE)
class ShareConsumerTest {
    private static final Duration POLL = Duration.ofMillis(200);
    private static final long DEADLINE_MS = 60_000;
    /** group.share.delivery.count.limit's default. */
    private static final int DELIVERY_LIMIT = 5;

    @Test
    void everyRecordGoesToOneOfSeveralShareConsumers() throws Exception {
        String topic = Topics.create("share-spread", 1);
        String group = Names.unique("share-spread");
        List<KafkaShareConsumer<String, String>> consumers = new ArrayList<>();
        try {
            for (int i = 0; i < 3; i++) {
                consumers.add(shareConsumer(group, "implicit"));
                consumers.get(i).subscribe(List.of(topic));
            }
            warmUp(topic, consumers);
            Produce.values(topic, 0, "v", 30);
            Map<String, Integer> deliveries = new HashMap<>();
            long deadline = System.currentTimeMillis() + DEADLINE_MS;
            while (countOf(deliveries, "v-") < 30 && System.currentTimeMillis() < deadline) {
                for (KafkaShareConsumer<String, String> consumer : consumers) {
                    for (ConsumerRecord<String, String> record : consumer.poll(POLL)) {
                        deliveries.merge(record.value(), 1, Integer::sum);
                    }
                }
            }
            Set<String> expected = new HashSet<>(Produce.expected("v", 30));
            Map<String, Integer> counted = new HashMap<>(deliveries);
            counted.keySet().retainAll(expected);
            assertEquals(expected, counted.keySet());
            counted.forEach((value, times) -> assertEquals(1, times, value + " was delivered " + times + " times"));
        } finally {
            consumers.forEach(KafkaShareConsumer::close);
        }
    }

    @Test
    void aRejectedRecordIsNotDeliveredAgainAndAReleasedOneIs() throws Exception {
        String topic = Topics.create("share-reject", 1);
        try (KafkaShareConsumer<String, String> consumer = shareConsumer(Names.unique("share-reject"), "explicit")) {
            consumer.subscribe(List.of(topic));
            warmUp(topic, List.of(consumer));
            send(topic, "keep", "drop");
            // drop is rejected, keep released each time it comes, until both came
            List<ConsumerRecord<String, String>> first = new ArrayList<>();
            long deadline = System.currentTimeMillis() + DEADLINE_MS;
            while (first.stream().map(ConsumerRecord::value).distinct().count() < 2
                && System.currentTimeMillis() < deadline) {
                first.addAll(pollFor(consumer, 1, Duration.ofMillis(DEADLINE_MS),
                    record -> record.value().equals("drop") ? AcknowledgeType.REJECT : AcknowledgeType.RELEASE));
            }
            long keptDeliveries = first.stream().filter(record -> record.value().equals("keep")).count();
            List<ConsumerRecord<String, String>> again = pollFor(consumer, 2, Duration.ofSeconds(3),
                record -> AcknowledgeType.ACCEPT);
            assertEquals(List.of("keep"), again.stream().map(ConsumerRecord::value).toList());
            assertEquals((short) (keptDeliveries + 1), again.get(0).deliveryCount().orElseThrow());
        }
    }

    @Test
    void aRecordReleasedUpToTheDeliveryLimitIsArchived() throws Exception {
        String topic = Topics.create("share-limit", 1);
        try (KafkaShareConsumer<String, String> consumer = shareConsumer(Names.unique("share-limit"), "explicit")) {
            consumer.subscribe(List.of(topic));
            warmUp(topic, List.of(consumer));
            send(topic, "again");
            List<Short> counts = new ArrayList<>();
            for (int delivery = 1; delivery <= DELIVERY_LIMIT; delivery++) {
                List<ConsumerRecord<String, String>> got = pollFor(consumer, 1, Duration.ofMillis(DEADLINE_MS),
                    record -> AcknowledgeType.RELEASE);
                assertEquals(1, got.size(), "delivery " + delivery);
                counts.add(got.get(0).deliveryCount().orElseThrow());
            }
            assertEquals(List.of((short) 1, (short) 2, (short) 3, (short) 4, (short) 5), counts);
            assertEquals(List.of(), pollFor(consumer, 1, Duration.ofSeconds(3), record -> AcknowledgeType.RELEASE));
        }
    }

    @Test
    void recordsAConsumerHeldWhenItClosedGoToAnother() throws Exception {
        String topic = Topics.create("share-close", 1);
        String group = Names.unique("share-close");
        List<ConsumerRecord<String, String>> held;
        try (KafkaShareConsumer<String, String> other = shareConsumer(group, "explicit")) {
            other.subscribe(List.of(topic));
            try (KafkaShareConsumer<String, String> first = shareConsumer(group, "explicit")) {
                first.subscribe(List.of(topic));
                warmUp(topic, List.of(first, other));
                send(topic, "held-0", "held-1");
                held = pollOnce(first);
                assertTrue(!held.isEmpty(), "the first consumer got nothing");
                // closed without acknowledging what it holds: released for the others
            }
            Set<String> heldValues = held.stream().map(ConsumerRecord::value).collect(Collectors.toSet());
            List<ConsumerRecord<String, String>> got = pollFor(other, 2, Duration.ofMillis(DEADLINE_MS),
                record -> AcknowledgeType.ACCEPT);
            assertEquals(Set.of("held-0", "held-1"), got.stream().map(ConsumerRecord::value).collect(Collectors.toSet()));
            for (ConsumerRecord<String, String> record : got) {
                short expected = heldValues.contains(record.value()) ? (short) 2 : (short) 1;
                assertEquals(expected, record.deliveryCount().orElseThrow(), record.value());
            }
        }
    }

    @Test
    void inRecordLimitModeNoPollReturnsMoreThanMaxPollRecordsOfOneBatch() throws Exception {
        // KIP-1206 (ShareFetch v2's ShareAcquireMode): the broker acquires at most MaxRecords, splitting
        // a batch; in batch-optimized mode (and from a broker without v2) a poll returns the whole batch
        String topic = Topics.create("share-record-limit", 1);
        try (KafkaShareConsumer<String, String> consumer = shareConsumer(Names.unique("share-record-limit"), "implicit",
                 ConsumerConfig.SHARE_ACQUIRE_MODE_CONFIG, "record_limit", ConsumerConfig.MAX_POLL_RECORDS_CONFIG, "2")) {
            consumer.subscribe(List.of(topic));
            warmUp(topic, List.of(consumer));
            try (KafkaProducer<String, String> producer = Clients.producer("linger.ms", "5000",
                     "delivery.timeout.ms", "120000")) {
                for (int i = 0; i < 6; i++) {
                    producer.send(new ProducerRecord<>(topic, 0, null, "limited-" + i));
                }
                producer.flush(); // the six in one batch
            }
            Set<String> got = new HashSet<>();
            long deadline = System.currentTimeMillis() + DEADLINE_MS;
            while (got.size() < 6 && System.currentTimeMillis() < deadline) {
                List<String> polled = new ArrayList<>();
                consumer.poll(POLL).forEach(record -> polled.add(record.value()));
                assertTrue(polled.size() <= 2, "one poll returned " + polled);
                polled.stream().filter(value -> value.startsWith("limited-")).forEach(got::add);
            }
            assertEquals(new HashSet<>(Produce.expected("limited", 6)), got);
        }
    }

    @Test
    void aRenewedRecordIsStillTheConsumersToAcknowledge() throws Exception {
        // KIP-1222 (ShareAcknowledge/ShareFetch v2): RENEW keeps a record under a fresh acquisition lock
        String topic = Topics.create("share-renew", 1);
        try (KafkaShareConsumer<String, String> consumer = shareConsumer(Names.unique("share-renew"), "explicit")) {
            consumer.subscribe(List.of(topic));
            warmUp(topic, List.of(consumer));
            send(topic, "renewed");
            List<ConsumerRecord<String, String>> got = pollFor(consumer, 1, Duration.ofMillis(DEADLINE_MS),
                record -> AcknowledgeType.RENEW);
            assertEquals(List.of("renewed"), got.stream().map(ConsumerRecord::value).toList());
            // a renewed record comes back to the consumer that holds it, not delivered once more
            List<ConsumerRecord<String, String>> again = pollFor(consumer, 1, Duration.ofMillis(DEADLINE_MS),
                record -> AcknowledgeType.ACCEPT);
            assertEquals(List.of("renewed"), again.stream().map(ConsumerRecord::value).toList());
            assertEquals((short) 1, again.get(0).deliveryCount().orElseThrow());
            assertEquals(List.of(), pollFor(consumer, 1, Duration.ofSeconds(3), record -> AcknowledgeType.ACCEPT));
        }
    }

    static KafkaShareConsumer<String, String> shareConsumer(String group, String acknowledgementMode,
                                                            String... settings) {
        Properties props = new Properties();
        props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, Target.bootstrap());
        props.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        props.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        props.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        props.put(ConsumerConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, Clients.API_TIMEOUT_MS);
        props.put("share.acknowledgement.mode", acknowledgementMode);
        for (int i = 0; i + 1 < settings.length; i += 2) {
            props.put(settings[i], settings[i + 1]);
        }
        return new KafkaShareConsumer<>(props);
    }

    /**
     * Sends warm-up records until one of the consumers gets one (accepting every warm-up it gets): the
     * share group's start offset is then behind what the test sends next.
     */
    static void warmUp(String topic, List<KafkaShareConsumer<String, String>> consumers) throws Exception {
        long deadline = System.currentTimeMillis() + DEADLINE_MS;
        try (KafkaProducer<String, String> producer = Clients.producer()) {
            for (int i = 0; System.currentTimeMillis() < deadline; i++) {
                producer.send(new ProducerRecord<>(topic, 0, null, "warm-up-" + i)).get();
                boolean delivered = false;
                for (KafkaShareConsumer<String, String> consumer : consumers) {
                    for (ConsumerRecord<String, String> record : consumer.poll(POLL)) {
                        delivered = true;
                        acceptIfExplicit(consumer, record);
                    }
                }
                if (delivered) {
                    for (KafkaShareConsumer<String, String> consumer : consumers) {
                        drainWarmUps(consumer);
                    }
                    return;
                }
            }
        }
        throw new AssertionError("no warm-up record was delivered within " + DEADLINE_MS + " ms");
    }

    private static void drainWarmUps(KafkaShareConsumer<String, String> consumer) {
        for (ConsumerRecord<String, String> record : consumer.poll(POLL)) {
            acceptIfExplicit(consumer, record);
        }
        try {
            consumer.commitSync();
        } catch (IllegalStateException implicit) {
            // implicit acknowledgement: the next poll acknowledges
        }
    }

    private static void acceptIfExplicit(KafkaShareConsumer<String, String> consumer, ConsumerRecord<String, String> record) {
        try {
            consumer.acknowledge(record, AcknowledgeType.ACCEPT);
        } catch (IllegalStateException implicit) {
            // implicit acknowledgement mode
        }
    }

    private static void send(String topic, String... values) throws Exception {
        try (KafkaProducer<String, String> producer = Clients.producer()) {
            for (String value : values) {
                producer.send(new ProducerRecord<>(topic, 0, null, value)).get();
            }
        }
    }

    /**
     * Polls until `count` records that are not warm-ups came, or `within` ran out; each record is
     * acknowledged as `decide` says as soon as it comes (warm-ups are accepted), and committed.
     */
    private static List<ConsumerRecord<String, String>> pollFor(KafkaShareConsumer<String, String> consumer, int count,
                                                                Duration within,
                                                                Function<ConsumerRecord<String, String>, AcknowledgeType> decide) {
        List<ConsumerRecord<String, String>> got = new ArrayList<>();
        long deadline = System.currentTimeMillis() + within.toMillis();
        while (got.size() < count && System.currentTimeMillis() < deadline) {
            boolean any = false;
            for (ConsumerRecord<String, String> record : consumer.poll(POLL)) {
                any = true;
                if (record.value().startsWith("warm-up-")) {
                    consumer.acknowledge(record, AcknowledgeType.ACCEPT);
                } else {
                    got.add(record);
                    consumer.acknowledge(record, decide.apply(record));
                }
            }
            if (any) {
                consumer.commitSync();
            }
        }
        return got;
    }

    /** The first non-empty poll's records that are not warm-ups, none acknowledged (warm-ups aside). */
    private static List<ConsumerRecord<String, String>> pollOnce(KafkaShareConsumer<String, String> consumer) {
        long deadline = System.currentTimeMillis() + DEADLINE_MS;
        while (System.currentTimeMillis() < deadline) {
            List<ConsumerRecord<String, String>> got = new ArrayList<>();
            for (ConsumerRecord<String, String> record : consumer.poll(POLL)) {
                if (record.value().startsWith("warm-up-")) {
                    consumer.acknowledge(record, AcknowledgeType.ACCEPT);
                } else {
                    got.add(record);
                }
            }
            if (!got.isEmpty()) {
                return got;
            }
        }
        return List.of();
    }

    private static int countOf(Map<String, Integer> deliveries, String prefix) {
        return (int) deliveries.keySet().stream().filter(value -> value.startsWith(prefix)).count();
    }
}
