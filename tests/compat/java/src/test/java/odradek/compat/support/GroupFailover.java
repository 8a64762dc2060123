package odradek.compat.support;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.BooleanSupplier;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.consumer.CommitFailedException;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.RebalanceInProgressException;
import org.apache.kafka.common.errors.RetriableException;

/**
 * A consumer group at work while the broker coordinating it is SIGKILLed (tests of the classic and the
 * KIP-848 protocol share it). A producer writes to six partitions throughout; two members consume and
 * commit after each poll that gave them records. Then:
 * <ol>
 * <li>the coordinator is killed: commits must succeed again (on the new coordinator);</li>
 * <li>a third member joins: the group rebalances to two partitions each, coordinated elsewhere;</li>
 * <li>the killed broker starts again and the first member leaves: the two left share the six;</li>
 * <li>the producer stops; the members consume to the end and commit.</li>
 * </ol>
 * What is asserted (at-least-once, as an application committing after processing gets): every offset of
 * every partition up to its end was delivered to some member; the group's committed offsets are the end
 * offsets; while a member holds a partition it gets its records one offset after the other (no gap, no
 * record twice), so a record is delivered again only to a member newly given its partition, from the
 * group's committed offset; and the producer saw no fatal error.
 */
public final class GroupFailover {
    private static final int PARTITIONS = 6;
    private static final Duration STEP = Duration.ofSeconds(90);

    private GroupFailover() {
    }

    public static void run(String what, Object... memberSettings) throws Exception {
        BrokerControl control = BrokerControl.require();
        String group = Names.unique(what);
        String topic;
        try (Admin admin = Clients.admin()) {
            topic = Topics.create(admin, what, PARTITIONS, Map.of("min.insync.replicas", "2"));
        }
        Producing producing = new Producing(topic);
        Thread producer = new Thread(producing, "group-failover-producer");
        Run run = new Run(group, topic, memberSettings);
        control.runThenHeal(() -> {
            try (Admin admin = Clients.admin()) {
                producer.start();
                run.join();
                run.join();
                run.pumpUntil("two members with three partitions each, committing", () ->
                    run.balanced(3) && run.members.stream().allMatch(m -> m.commits > 0));

                int victim = coordinator(admin, group);
                control.kill(victim);
                int committedBefore = run.commits();
                run.pumpUntil("commits to succeed after the coordinator's kill",
                    () -> run.commits() >= committedBefore + 3);
                run.join();
                run.pumpUntil("three members with two partitions each", () -> run.balanced(2));
                assertNotEquals(victim, coordinator(admin, group), "the group moved off the killed coordinator");

                control.restart(victim);
                run.leave(0);
                run.pumpUntil("the two members left with three partitions each", () -> run.balanced(3));

                producing.stop.set(true);
                producer.join(Clients.API_TIMEOUT_MS * 4L);
                run.end = endOffsets(admin, topic);
                run.pumpUntil("every record consumed and committed", () -> run.consumedTo(run.end));
                run.committed = committed(admin, group);
            } finally {
                producing.stop.set(true);
                producer.join(Clients.API_TIMEOUT_MS * 4L);
                run.close();
            }
        });

        assertTrue(producing.failure.get() == null, "the producer failed: " + producing.failure.get());
        List<String> fatal = producing.errors.stream().filter(e -> !(e instanceof RetriableException))
            .map(Exception::toString).toList();
        assertEquals(List.of(), fatal, "no fatal error in the producer's callbacks");
        assertEquals(List.of(), run.outOfSequence, "each member reads a partition it holds one offset after the other");
        for (TopicPartition partition : run.end.keySet()) {
            Set<Long> missing = new TreeSet<>();
            Set<Long> delivered = run.delivered.getOrDefault(partition, Set.of());
            for (long offset = 0; offset < run.end.get(partition); offset++) {
                if (!delivered.contains(offset)) {
                    missing.add(offset);
                }
            }
            assertEquals(Set.of(), missing, "offsets of " + partition + " no member was given");
        }
        assertEquals(run.end, run.committed, "the group's committed offsets are the end offsets");
    }

    private static Map<TopicPartition, Long> committed(Admin admin, String group) throws Exception {
        Map<TopicPartition, Long> committed = new HashMap<>();
        admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get()
            .forEach((tp, offset) -> committed.put(tp, offset.offset()));
        return committed;
    }

    private static int coordinator(Admin admin, String group) throws Exception {
        return admin.describeConsumerGroups(List.of(group)).describedGroups().get(group).get().coordinator().id();
    }

    private static Map<TopicPartition, Long> endOffsets(Admin admin, String topic) throws Exception {
        Map<TopicPartition, OffsetSpec> latest = new HashMap<>();
        for (int p = 0; p < PARTITIONS; p++) {
            latest.put(new TopicPartition(topic, p), OffsetSpec.latest());
        }
        Map<TopicPartition, Long> end = new HashMap<>();
        admin.listOffsets(latest).all().get().forEach((tp, info) -> end.put(tp, info.offset()));
        return end;
    }

    /** The members, driven in turn from the test's thread (a member not polled cannot rebalance). */
    private static final class Run {
        final String group;
        final String topic;
        final Object[] settings;
        final List<Member> members = new ArrayList<>();
        final List<Member> left = new ArrayList<>();
        final Map<TopicPartition, Set<Long>> delivered = new HashMap<>();
        final List<String> outOfSequence = new ArrayList<>();
        Map<TopicPartition, Long> end = Map.of();
        Map<TopicPartition, Long> committed = Map.of();

        Run(String group, String topic, Object[] settings) {
            this.group = group;
            this.topic = topic;
            this.settings = settings;
        }

        void join() {
            Object[] all = new Object[settings.length + 4];
            System.arraycopy(settings, 0, all, 0, settings.length);
            all[settings.length] = "group.id";
            all[settings.length + 1] = group;
            all[settings.length + 2] = "enable.auto.commit";
            all[settings.length + 3] = "false";
            Member member = new Member(members.size() + left.size(), Clients.consumer(all));
            member.consumer.subscribe(List.of(topic), member);
            members.add(member);
        }

        void leave(int index) {
            Member member = members.remove(index);
            member.consumer.close();
            left.add(member);
        }

        int commits() {
            int sum = 0;
            for (Member member : members) {
                sum += member.commits;
            }
            for (Member member : left) {
                sum += member.commits;
            }
            return sum;
        }

        boolean balanced(int perMember) {
            Set<TopicPartition> union = new HashSet<>();
            for (Member member : members) {
                if (member.consumer.assignment().size() != perMember) {
                    return false;
                }
                union.addAll(member.consumer.assignment());
            }
            return union.size() == PARTITIONS && perMember * members.size() == PARTITIONS;
        }

        boolean consumedTo(Map<TopicPartition, Long> end) {
            for (Map.Entry<TopicPartition, Long> each : end.entrySet()) {
                Set<Long> got = delivered.getOrDefault(each.getKey(), Set.of());
                if (each.getValue() > 0 && !got.contains(each.getValue() - 1)) {
                    return false;
                }
            }
            return balanced(PARTITIONS / members.size()) && members.stream().noneMatch(m -> m.dirty)
                && members.stream().allMatch(m -> m.consumer.assignment().stream()
                    .allMatch(tp -> m.consumer.position(tp) >= end.get(tp)));
        }

        void pumpUntil(String what, BooleanSupplier done) {
            long deadline = System.nanoTime() + STEP.toNanos();
            while (!done.getAsBoolean()) {
                if (System.nanoTime() > deadline) {
                    StringBuilder state = new StringBuilder();
                    members.forEach(m -> state.append(" member ").append(m.index).append(' ')
                        .append(m.consumer.assignment()).append(" commits ").append(m.commits)
                        .append(" failed ").append(m.commitErrors));
                    throw new AssertionError("waited " + STEP.toSeconds() + " s for " + what + ":" + state);
                }
                for (Member member : members) {
                    member.pollAndCommit();
                }
            }
        }

        void close() {
            for (Member member : members) {
                member.consumer.close(Duration.ofSeconds(10));
                left.add(member);
            }
            members.clear();
        }

        /** One consumer: what it was given, in order, checked as it comes. */
        private final class Member implements ConsumerRebalanceListener {
            final int index;
            final KafkaConsumer<String, String> consumer;
            final Map<TopicPartition, Long> lastOffset = new HashMap<>();
            final List<String> commitErrors = new ArrayList<>();
            int commits;
            boolean dirty;

            Member(int index, KafkaConsumer<String, String> consumer) {
                this.index = index;
                this.consumer = consumer;
            }

            void pollAndCommit() {
                for (ConsumerRecord<String, String> record : consumer.poll(Duration.ofMillis(50))) {
                    TopicPartition partition = new TopicPartition(record.topic(), record.partition());
                    Long last = lastOffset.put(partition, record.offset());
                    if (last != null && record.offset() != last + 1) {
                        outOfSequence.add("member " + index + " read " + partition + " at " + record.offset()
                            + " after " + last);
                    }
                    delivered.computeIfAbsent(partition, p -> new HashSet<>()).add(record.offset());
                    dirty = true;
                }
                if (!dirty) {
                    return;
                }
                try {
                    consumer.commitSync(Duration.ofSeconds(10));
                    commits++;
                    dirty = false;
                } catch (RetriableException | RebalanceInProgressException | CommitFailedException e) {
                    // at-least-once: what was not committed is delivered again to whoever holds it next
                    commitErrors.add(e.getClass().getSimpleName());
                }
            }

            @Override
            public void onPartitionsAssigned(Collection<TopicPartition> partitions) {
                partitions.forEach(lastOffset::remove);
            }

            @Override
            public void onPartitionsRevoked(Collection<TopicPartition> partitions) {
                partitions.forEach(lastOffset::remove);
            }

            @Override
            public void onPartitionsLost(Collection<TopicPartition> partitions) {
                partitions.forEach(lastOffset::remove);
            }
        }
    }

    /** Writes to every partition in turn, about 500 records a second, until stopped. */
    private static final class Producing implements Runnable {
        final String topic;
        final AtomicBoolean stop = new AtomicBoolean();
        final AtomicReference<Throwable> failure = new AtomicReference<>();
        final ConcurrentLinkedQueue<Exception> errors = new ConcurrentLinkedQueue<>();

        Producing(String topic) {
            this.topic = topic;
        }

        @Override
        public void run() {
            try (KafkaProducer<String, String> producer = Clients.producer("acks", "all",
                    "delivery.timeout.ms", 120_000, "request.timeout.ms", 10_000, "max.block.ms", 120_000)) {
                for (long n = 0; !stop.get(); n++) {
                    producer.send(new ProducerRecord<>(topic, (int) (n % PARTITIONS), null, Long.toString(n)),
                        (metadata, e) -> {
                            if (e != null) {
                                errors.add(e);
                            }
                        });
                    if (n % 5 == 4) {
                        Thread.sleep(10);
                    }
                }
                producer.flush();
            } catch (Throwable t) {
                failure.set(t);
            }
        }
    }
}
