package odradek.compat;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.regex.Pattern;
import java.util.stream.Collectors;

import odradek.compat.support.Clients;
import odradek.compat.support.Consume;
import odradek.compat.support.Groups;
import odradek.compat.support.Names;
import odradek.compat.support.Produce;
import odradek.compat.support.Target;
import odradek.compat.support.Topics;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.CooperativeStickyAssignor;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.consumer.OffsetAndTimestamp;
import org.apache.kafka.clients.consumer.OffsetOutOfRangeException;
import org.apache.kafka.clients.consumer.RangeAssignor;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.record.TimestampType;
import org.junit.jupiter.api.Test;

/** KafkaConsumer with the classic group protocol (JoinGroup/SyncGroup), and partition-level reads. */
class ClassicConsumerTest {

    @Test
    void theRangeAssignorGivesTwoMembersTwoContiguousPartitionsEach() throws Exception {
        String topic = Topics.create("range", 4);
        String group = Names.unique("range-group");
        try (KafkaConsumer<String, String> first = member(group, RangeAssignor.class);
             KafkaConsumer<String, String> second = member(group, RangeAssignor.class)) {
            first.subscribe(List.of(topic));
            second.subscribe(List.of(topic));
            Groups.pollUntilBalanced(List.of(first, second), 2, 4);
            Set<Set<TopicPartition>> held = Set.of(first.assignment(), second.assignment());
            assertEquals(Set.of(Groups.partitions(topic, 0, 1), Groups.partitions(topic, 2, 3)), held);
        }
    }

    @Test
    void cooperativeStickyMovesOnlyThePartitionsTheNewMemberGets() throws Exception {
        String topic = Topics.create("cooperative", 4);
        String group = Names.unique("cooperative-group");
        Groups.Recorder firstEvents = new Groups.Recorder();
        try (KafkaConsumer<String, String> first = member(group, CooperativeStickyAssignor.class)) {
            first.subscribe(List.of(topic), firstEvents);
            Groups.pollUntilBalanced(List.of(first), 4, 4);
            try (KafkaConsumer<String, String> second = member(group, CooperativeStickyAssignor.class)) {
                second.subscribe(List.of(topic));
                Groups.pollUntilBalanced(List.of(first, second), 2, 4);
                Set<TopicPartition> moved = second.assignment();
                // Incremental: the first member gave up exactly what moved and kept the rest throughout.
                assertEquals(List.of(moved), firstEvents.revoked.stream().filter(r -> !r.isEmpty()).toList());
                assertEquals(List.of(), firstEvents.lost);
                Set<TopicPartition> kept = new HashSet<>(Groups.partitions(topic, 0, 1, 2, 3));
                kept.removeAll(moved);
                assertEquals(kept, first.assignment());
            }
        }
    }

    @Test
    void aStaticMemberThatRestartsWithinItsSessionGetsItsPartitionsBackWithoutARebalance() throws Exception {
        String topic = Topics.create("static", 4);
        String group = Names.unique("static-group");
        Groups.Recorder stayingEvents = new Groups.Recorder();
        try (KafkaConsumer<String, String> staying = staticMember(group, "staying")) {
            staying.subscribe(List.of(topic), stayingEvents);
            Set<TopicPartition> before;
            int generation;
            try (KafkaConsumer<String, String> restarting = staticMember(group, "restarting")) {
                restarting.subscribe(List.of(topic));
                Groups.pollUntilBalanced(List.of(staying, restarting), 2, 4);
                before = restarting.assignment();
                generation = staying.groupMetadata().generationId();
            }
            int callbacks = stayingEvents.assigned.size() + stayingEvents.revoked.size();
            // Closed without LeaveGroup (a static member): the group keeps its place for session.timeout.ms.
            try (KafkaConsumer<String, String> restarted = staticMember(group, "restarting")) {
                restarted.subscribe(List.of(topic));
                Groups.pollUntilBalanced(List.of(staying, restarted), 2, 4);
                assertEquals(before, restarted.assignment());
                assertEquals(generation, restarted.groupMetadata().generationId());
                assertEquals(generation, staying.groupMetadata().generationId());
                assertEquals(callbacks, stayingEvents.assigned.size() + stayingEvents.revoked.size(),
                    "the staying member saw no rebalance");
            }
        }
    }

    @Test
    void seekMovesThePositionAndAPositionPastTheEndIsOutOfRange() throws Exception {
        String topic = Topics.create("seek", 1);
        Produce.values(topic, 0, "r", 10);
        TopicPartition partition = new TopicPartition(topic, 0);
        try (KafkaConsumer<String, String> consumer = Clients.consumer("auto.offset.reset", "none")) {
            consumer.assign(List.of(partition));
            consumer.seek(partition, 5);
            assertEquals(Produce.expected("r", 10).subList(5, 10), Consume.values(Consume.records(consumer, 5)));
            consumer.seekToBeginning(List.of(partition));
            assertEquals(0, consumer.position(partition));
            consumer.seekToEnd(List.of(partition));
            assertEquals(10, consumer.position(partition));
            consumer.seek(partition, 100);
            OffsetOutOfRangeException outOfRange = assertThrows(OffsetOutOfRangeException.class, () -> {
                for (int i = 0; i < 100; i++) {
                    consumer.poll(Duration.ofMillis(200));
                }
            });
            assertEquals(Map.of(partition, 100L), outOfRange.offsetOutOfRangePartitions());
        }
    }

    @Test
    void offsetsForTimesFindsTheFirstRecordAtOrAfterEachTimestamp() throws Exception {
        String topic = Topics.create("offsets-for-times", 1);
        TopicPartition partition = new TopicPartition(topic, 0);
        long base = System.currentTimeMillis() - 3_600_000L;
        try (KafkaProducer<String, String> producer = Clients.producer()) {
            for (int i = 0; i < 5; i++) {
                producer.send(new ProducerRecord<>(topic, 0, base + i * 1000L, null, "t" + i)).get();
            }
        }
        try (KafkaConsumer<String, String> consumer = Clients.consumer()) {
            assertFound(0, base, consumer.offsetsForTimes(Map.of(partition, 0L)).get(partition));
            assertFound(2, base + 2000, consumer.offsetsForTimes(Map.of(partition, base + 1500)).get(partition));
            assertFound(4, base + 4000, consumer.offsetsForTimes(Map.of(partition, base + 4000)).get(partition));
            assertNull(consumer.offsetsForTimes(Map.of(partition, base + 4001)).get(partition));
            assertEquals(Map.of(partition, 0L), consumer.beginningOffsets(List.of(partition)));
            assertEquals(Map.of(partition, 5L), consumer.endOffsets(List.of(partition)));
        }
    }

    @Test
    void aPausedPartitionIsNotFetchedUntilResumed() throws Exception {
        String topic = Topics.create("pause", 2);
        TopicPartition paused = new TopicPartition(topic, 0);
        TopicPartition flowing = new TopicPartition(topic, 1);
        try (KafkaConsumer<String, String> consumer = Clients.consumer()) {
            consumer.assign(List.of(paused, flowing));
            consumer.pause(List.of(paused));
            Produce.values(topic, 0, "paused", 3);
            Produce.values(topic, 1, "flowing", 3);
            List<ConsumerRecord<String, String>> read = Consume.records(consumer, 3);
            assertEquals(Produce.expected("flowing", 3), Consume.values(read));
            assertEquals(Set.of(paused), consumer.paused());
            for (int i = 0; i < 3; i++) {
                assertTrue(consumer.poll(Duration.ofMillis(200)).isEmpty(), "a paused partition was fetched");
            }
            consumer.resume(List.of(paused));
            assertEquals(Produce.expected("paused", 3), Consume.values(Consume.records(consumer, 3)));
        }
    }

    @Test
    void committedOffsetsAndTheirMetadataAreReadBackByTheGroup() throws Exception {
        String topic = Topics.create("commit", 2);
        String group = Names.unique("commit-group");
        Produce.values(topic, 0, "r", 4);
        TopicPartition p0 = new TopicPartition(topic, 0);
        TopicPartition p1 = new TopicPartition(topic, 1);
        try (KafkaConsumer<String, String> consumer = Clients.consumer("group.id", group)) {
            consumer.subscribe(List.of(topic));
            Consume.records(consumer, 4);
            consumer.commitSync(Map.of(p0, new OffsetAndMetadata(4, "done")));
            Map<TopicPartition, OffsetAndMetadata> committed = consumer.committed(Set.of(p0, p1));
            assertEquals(4, committed.get(p0).offset());
            assertEquals("done", committed.get(p0).metadata());
            assertNull(committed.get(p1), "nothing committed for partition 1");
        }
        try (KafkaConsumer<String, String> restarted = Clients.consumer("group.id", group)) {
            restarted.subscribe(List.of(topic));
            Produce.values(topic, 0, "after", 1);
            assertEquals(List.of("after-0"), Consume.values(Consume.records(restarted, 1)));
        }
    }

    @Test
    void readCommittedStopsAtTheFirstOpenTransactionAndSkipsAbortedRecords() throws Exception {
        String topic = Topics.create("read-committed", 1);
        TopicPartition partition = new TopicPartition(topic, 0);
        try (KafkaProducer<String, String> producer = Clients.producer("transactional.id", Names.unique("rc"))) {
            producer.initTransactions();
            producer.beginTransaction();
            Produce.send(producer, topic, 0, "committed", 3); // offsets 0-2, marker at 3
            producer.commitTransaction();
            producer.beginTransaction();
            Produce.send(producer, topic, 0, "aborted", 2); // offsets 4-5, marker at 6
            producer.abortTransaction();
            producer.beginTransaction();
            Produce.send(producer, topic, 0, "open", 1); // offset 7, left open
            try (KafkaConsumer<String, String> committed = Clients.consumer("isolation.level", "read_committed");
                 KafkaConsumer<String, String> uncommitted = Clients.consumer("isolation.level", "read_uncommitted")) {
                committed.assign(List.of(partition));
                uncommitted.assign(List.of(partition));
                assertEquals(Map.of(partition, 7L), committed.endOffsets(List.of(partition)), "the last stable offset");
                assertEquals(Map.of(partition, 8L), uncommitted.endOffsets(List.of(partition)), "the high watermark");
                assertEquals(Produce.expected("committed", 3), Consume.values(Consume.records(committed, 3)));
                List<String> all = new ArrayList<>(Produce.expected("committed", 3));
                all.addAll(Produce.expected("aborted", 2));
                all.addAll(Produce.expected("open", 1));
                assertEquals(all, Consume.values(Consume.records(uncommitted, 6)));
                for (int i = 0; i < 3; i++) {
                    assertTrue(committed.poll(Duration.ofMillis(200)).isEmpty(), "read past the open transaction");
                }
                producer.commitTransaction();
                List<ConsumerRecord<String, String>> last = Consume.records(committed, 1);
                assertEquals("open-0", last.get(0).value());
                assertEquals(7, last.get(0).offset());
                assertEquals(9, committed.position(partition), "past the commit marker at 8");
            }
        }
    }

    @Test
    void aLogAppendTimeTopicStampsRecordsWithTheBrokersTimeAndTellsTheProducer() throws Exception {
        String topic = Topics.create("log-append-time", 1, Map.of("message.timestamp.type", "LogAppendTime"));
        long before = System.currentTimeMillis();
        RecordMetadata acknowledged;
        try (KafkaProducer<String, String> producer = Clients.producer()) {
            acknowledged = producer.send(new ProducerRecord<>(topic, 0, 1000L, null, "stamped")).get();
        }
        assertTrue(acknowledged.timestamp() >= before - 1000, "the broker's time, not the record's 1000: "
            + acknowledged.timestamp());
        try (KafkaConsumer<String, String> consumer = Clients.consumer()) {
            consumer.assign(List.of(new TopicPartition(topic, 0)));
            ConsumerRecord<String, String> read = Consume.records(consumer, 1).get(0);
            assertEquals(TimestampType.LOG_APPEND_TIME, read.timestampType());
            assertEquals(acknowledged.timestamp(), read.timestamp());
        }
    }

    @Test
    void aRecordLargerThanTheFetchLimitsIsStillReturned() throws Exception {
        String topic = Topics.create("large-record", 1);
        String large = "L".repeat(200_000);
        try (KafkaProducer<String, String> producer = Clients.producer("compression.type", "none")) {
            producer.send(new ProducerRecord<>(topic, 0, null, large)).get();
            producer.send(new ProducerRecord<>(topic, 0, null, "small")).get();
        }
        // KIP-74: the first batch is returned whole even above max.partition.fetch.bytes and
        // fetch.max.bytes, so that a consumer always makes progress.
        try (KafkaConsumer<String, String> consumer = Clients.consumer("max.partition.fetch.bytes", 1024,
                "fetch.max.bytes", 1024)) {
            consumer.assign(List.of(new TopicPartition(topic, 0)));
            assertEquals(List.of(large, "small"), Consume.values(Consume.records(consumer, 2)));
        }
    }

    @Test
    void aPatternSubscriptionFollowsATopicCreatedLater() throws Exception {
        // java.util.regex patterns are matched by the client against the topics its Metadata lists.
        String prefix = Names.unique("pattern");
        String group = Names.unique("pattern-group");
        try (Admin admin = Clients.admin()) {
            String first = prefix + "-a";
            admin.createTopics(List.of(new NewTopic(first, 2, Target.replicationFactor()))).all().get();
            Topics.awaitLeaders(admin, first, 2);
            try (KafkaConsumer<String, String> consumer = Clients.consumer("group.id", group,
                    "metadata.max.age.ms", 500)) {
                consumer.subscribe(Pattern.compile(Pattern.quote(prefix) + "-.*"));
                Groups.pollUntilBalanced(List.of(consumer), 2, 2);
                String second = prefix + "-b";
                admin.createTopics(List.of(new NewTopic(second, 1, Target.replicationFactor()))).all().get();
                Topics.awaitLeaders(admin, second, 1);
                Groups.pollUntilBalanced(List.of(consumer), 3, 3);
                assertEquals(Set.of(first, second),
                    consumer.assignment().stream().map(TopicPartition::topic).collect(Collectors.toSet()));
            }
        }
    }

    /** The record found for a timestamp, with the leader epoch it was written at (0: the first leader). */
    private static void assertFound(long offset, long timestamp, OffsetAndTimestamp found) {
        assertEquals(offset, found.offset(), found.toString());
        assertEquals(timestamp, found.timestamp(), found.toString());
        assertEquals(Optional.of(0), found.leaderEpoch(), found.toString());
    }

    private static KafkaConsumer<String, String> member(String group, Class<?> assignor) {
        return Clients.consumer("group.id", group, "partition.assignment.strategy", assignor.getName());
    }

    private static KafkaConsumer<String, String> staticMember(String group, String instance) {
        return Clients.consumer("group.id", group, "group.instance.id", instance,
            "session.timeout.ms", 45_000, "partition.assignment.strategy", RangeAssignor.class.getName());
    }
}
