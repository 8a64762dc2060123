package odradek.compat;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Semaphore;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

import odradek.compat.support.BrokerControl;
import odradek.compat.support.Clients;
import odradek.compat.support.Names;
import odradek.compat.support.Target;
import odradek.compat.support.Topics;
import odradek.compat.support.Waits;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.ElectionType;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.AuthorizationException;
import org.apache.kafka.common.errors.ElectionNotNeededException;
import org.apache.kafka.common.errors.ProducerFencedException;
import org.apache.kafka.common.errors.RetriableException;
import org.apache.kafka.common.errors.TimeoutException;
import org.apache.kafka.common.errors.UnsupportedVersionException;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.parallel.Isolated;

/**
 * An idempotent acks=all producer sending without pause to an RF=3, min.insync.replicas=2 topic while
 * the leader of one of its partitions is SIGKILLed and later started again: every acknowledged record
 * is in the log exactly once, at the offset acknowledged, in the order sent; and beside it, through the
 * same kill, a transactional one: a read_committed reader sees exactly the committed transactions'
 * records. Then the killed broker leads again and serves the same records. Runs on the cluster only,
 * alone (it kills a broker), and leaves every broker up and every ISR full.
 */
@Tag(Target.KILLS_BROKERS)
@Isolated
class ProducerFailoverTest {
    private static final int PARTITIONS = 3;
    /** Records acknowledged on the killed leader's partition between the steps. */
    private static final int ACKS_PER_STEP = 100;

    @Test
    @Timeout(300)
    void everyRecordAcknowledgedOrCommittedAcrossALeaderKillIsReadBackOnceInOrder() throws Exception {
        BrokerControl control = BrokerControl.require();
        String topic = Topics.create("leader-kill", PARTITIONS, Map.of("min.insync.replicas", "2"));
        int victim;
        try (Admin admin = Clients.admin()) {
            victim = BrokerControl.leader(admin, topic, PARTITIONS, 0);
        }
        // Both producers write to the same partitions through the same kill, their values told apart by
        // a prefix: one kill and one restart serve both.
        Sender idempotent = new Sender(topic);
        TransactionalSender transactional = new TransactionalSender(topic);
        Thread idempotentThread = new Thread(idempotent, "leader-kill-idempotent");
        Thread transactionalThread = new Thread(transactional, "leader-kill-transactional");
        control.runThenHeal(() -> {
            try {
                idempotentThread.start();
                transactionalThread.start();
                awaitBoth(idempotent, transactional);
                control.kill(victim); // partition 0 has to move to a new leader for the next step
                awaitBoth(idempotent, transactional);
                control.restart(victim);
                awaitBoth(idempotent, transactional);
            } finally {
                idempotent.stop.set(true);
                transactional.stop.set(true);
                idempotentThread.join(Clients.API_TIMEOUT_MS * 4L);
                transactionalThread.join(Clients.API_TIMEOUT_MS * 4L);
            }
        });
        assertTrue(idempotent.failure.get() == null, "the idempotent producer failed: " + idempotent.failure.get());
        assertTrue(transactional.failure.get() == null,
            "the transactional producer failed: " + transactional.failure.get());
        List<String> fatal = idempotent.errors.stream().filter(e -> !(e instanceof RetriableException))
            .map(Exception::toString).toList();
        assertEquals(List.of(), fatal, "no fatal error in the idempotent producer's callbacks");

        Map<Integer, List<ConsumerRecord<String, String>>> log = readCommitted(topic, PARTITIONS);
        for (int p = 0; p < PARTITIONS; p++) {
            List<ConsumerRecord<String, String>> ours = log.get(p).stream()
                .filter(r -> r.value().startsWith(Sender.PREFIX)).toList();
            List<Long> sequence = ours.stream().map(r -> Sender.number(r.value())).toList();
            for (int i = 1; i < sequence.size(); i++) {
                assertTrue(sequence.get(i - 1) < sequence.get(i),
                    "partition " + p + " holds the idempotent producer's records once each, in the order sent: "
                        + sequence.get(i - 1) + " then " + sequence.get(i) + " at offset " + ours.get(i).offset());
            }
            Map<Long, Long> stored = new HashMap<>();
            ours.forEach(r -> stored.put(Sender.number(r.value()), r.offset()));
            for (Map.Entry<Long, Long> acked : idempotent.acknowledged.get(p).entrySet()) {
                assertEquals(acked.getValue(), stored.get(acked.getKey()),
                    "record " + acked.getKey() + " is stored at the offset acknowledged, on partition " + p);
            }
            if (idempotent.errors.isEmpty()) { // nothing failed: the log is exactly what was sent
                assertEquals(idempotent.sent.get(p), sequence, "partition " + p + " holds exactly what was sent");
            }
            List<Long> committed = log.get(p).stream().filter(r -> r.value().startsWith(TransactionalSender.PREFIX))
                .map(r -> TransactionalSender.number(r.value())).toList();
            assertEquals(transactional.committed.get(p), committed,
                "partition " + p + " shows read_committed exactly the committed transactions' records, in order"
                    + " (aborted: " + transactional.aborts + ")");
        }
        assertEquals(offsetsAndValues(log), offsetsAndValues(readFromThePreferredLeaders(topic, victim)),
            "the restarted broker, leading again, holds the same records at the same offsets");
    }

    /** Until each producer has had ACKS_PER_STEP more records acknowledged (committed) on partition 0. */
    private static void awaitBoth(Sender idempotent, TransactionalSender transactional) throws InterruptedException {
        int acked = idempotent.acked(0);
        int committed = transactional.committedOnFirst();
        idempotent.awaitAcks(0, acked + ACKS_PER_STEP);
        transactional.awaitCommits(committed + ACKS_PER_STEP);
    }

    /**
     * Every partition read again once its preferred replica leads it: the killed broker (the first
     * leader of partition 0, so its preferred replica) then serves what it kept and fetched after its
     * restart, which must be what the other replicas served.
     */
    static Map<Integer, List<ConsumerRecord<String, String>>> readFromThePreferredLeaders(String topic, int victim)
        throws Exception {
        Set<TopicPartition> all = new HashSet<>();
        for (int p = 0; p < PARTITIONS; p++) {
            all.add(new TopicPartition(topic, p));
        }
        try (Admin admin = Clients.admin()) {
            try {
                admin.electLeaders(ElectionType.PREFERRED, all).all().get();
            } catch (ExecutionException e) {
                if (!(e.getCause() instanceof ElectionNotNeededException)) {
                    throw e;
                }
            }
            Waits.until(Duration.ofSeconds(60), "broker " + victim + " leading " + topic + "-0 again",
                () -> BrokerControl.leader(admin, topic, PARTITIONS, 0) == victim);
        }
        return readCommitted(topic, PARTITIONS);
    }

    static Map<Integer, List<String>> offsetsAndValues(Map<Integer, List<ConsumerRecord<String, String>>> log) {
        Map<Integer, List<String>> each = new HashMap<>();
        log.forEach((p, records) -> each.put(p, records.stream().map(r -> r.offset() + ":" + r.value()).toList()));
        return each;
    }

    /**
     * Transactions of 30 records round the partitions, one after the other, until stopped. A commit that
     * times out is retried (the producer resumes it); an abortable error aborts the transaction, whose
     * records then must not be read; anything else (fenced, a failed abort) ends the thread as a failure.
     */
    private static final class TransactionalSender implements Runnable {
        static final String PREFIX = "t";
        final String topic;
        final AtomicBoolean stop = new AtomicBoolean();
        final AtomicReference<Throwable> failure = new AtomicReference<>();
        /** Per partition: the values of committed transactions, in the order sent. */
        final Map<Integer, List<Long>> committed = new ConcurrentHashMap<>();
        final List<String> aborts = new CopyOnWriteArrayList<>();
        private final AtomicInteger onFirst = new AtomicInteger();

        TransactionalSender(String topic) {
            this.topic = topic;
            for (int p = 0; p < PARTITIONS; p++) {
                committed.put(p, new CopyOnWriteArrayList<>());
            }
        }

        @Override
        public void run() {
            try (KafkaProducer<String, String> producer = Clients.producer(
                    "transactional.id", Names.unique("leader-kill-txn"),
                    "delivery.timeout.ms", 120_000, "request.timeout.ms", 10_000, "max.block.ms", 60_000,
                    "transaction.timeout.ms", 120_000)) {
                producer.initTransactions();
                long n = 0;
                while (!stop.get()) {
                    producer.beginTransaction();
                    Map<Integer, List<Long>> sent = new HashMap<>();
                    try {
                        for (int i = 0; i < 30; i++, n++) {
                            int partition = (int) (n % PARTITIONS);
                            producer.send(new ProducerRecord<>(topic, partition, null, PREFIX + n));
                            sent.computeIfAbsent(partition, k -> new ArrayList<>()).add(n);
                        }
                    } catch (ProducerFencedException
                             | AuthorizationException fatal) {
                        throw fatal;
                    } catch (KafkaException abortable) {
                        // send() refuses once an earlier send of this transaction failed: abort it
                        aborts.add(abortable.toString());
                        producer.abortTransaction();
                        continue;
                    }
                    if (commit(producer)) {
                        sent.forEach((partition, values) -> committed.get(partition).addAll(values));
                        onFirst.addAndGet(sent.getOrDefault(0, List.of()).size());
                    }
                }
            } catch (Throwable t) {
                failure.set(t);
            }
        }

        /** Whether the transaction committed; false when it was aborted on an abortable error. */
        private boolean commit(KafkaProducer<String, String> producer) {
            for (int attempt = 1; ; attempt++) {
                try {
                    producer.commitTransaction();
                    return true;
                } catch (TimeoutException timedOut) {
                    if (attempt == 3) {
                        throw timedOut;
                    }
                } catch (ProducerFencedException
                         | UnsupportedVersionException
                         | AuthorizationException fatal) {
                    throw fatal;
                } catch (KafkaException abortable) {
                    aborts.add(abortable.toString());
                    producer.abortTransaction();
                    return false;
                }
            }
        }

        static long number(String value) {
            return Long.parseLong(value.substring(PREFIX.length()));
        }

        int committedOnFirst() {
            return onFirst.get();
        }

        void awaitCommits(int count) throws InterruptedException {
            Waits.until(Duration.ofSeconds(120), count + " committed records on partition 0", () -> {
                if (failure.get() != null) {
                    throw new AssertionError("the transactional producer failed", failure.get());
                }
                return committedOnFirst() >= count;
            });
        }
    }

    /** Sends 0, 1, 2... round the partitions, at most 200 unacknowledged at a time, until stopped. */
    private static final class Sender implements Runnable {
        static final String PREFIX = "i";
        final String topic;
        final AtomicBoolean stop = new AtomicBoolean();
        final AtomicReference<Throwable> failure = new AtomicReference<>();
        final ConcurrentLinkedQueue<Exception> errors = new ConcurrentLinkedQueue<>();
        /** Per partition: value -> acknowledged offset. */
        final Map<Integer, Map<Long, Long>> acknowledged = new ConcurrentHashMap<>();
        final Map<Integer, List<Long>> sent = new HashMap<>();
        private final Map<Integer, AtomicInteger> ackCounts = new ConcurrentHashMap<>();
        private final Semaphore inFlight = new Semaphore(200);

        Sender(String topic) {
            this.topic = topic;
            for (int p = 0; p < PARTITIONS; p++) {
                acknowledged.put(p, new ConcurrentHashMap<>());
                sent.put(p, new ArrayList<>());
                ackCounts.put(p, new AtomicInteger());
            }
        }

        @Override
        public void run() {
            try (KafkaProducer<String, String> producer = Clients.producer("acks", "all",
                    "enable.idempotence", "true", "delivery.timeout.ms", 120_000, "request.timeout.ms", 10_000,
                    "max.block.ms", 120_000, "linger.ms", 5)) {
                for (long n = 0; !stop.get(); n++) {
                    int partition = (int) (n % PARTITIONS);
                    long value = n;
                    inFlight.acquire();
                    if (n % 10 == 0) {
                        Thread.sleep(5); // at most ~2,000 records a second: enough to be sending at the kill
                    }
                    sent.get(partition).add(value);
                    producer.send(new ProducerRecord<>(topic, partition, null, PREFIX + value), (m, e) -> {
                        inFlight.release();
                        if (e != null) {
                            errors.add(e);
                        } else {
                            acknowledged.get(partition).put(value, m.offset());
                            ackCounts.get(partition).incrementAndGet();
                        }
                    });
                }
                producer.flush();
            } catch (Throwable t) {
                failure.set(t);
            }
        }

        static long number(String value) {
            return Long.parseLong(value.substring(PREFIX.length()));
        }

        int acked(int partition) {
            return ackCounts.get(partition).get();
        }

        void awaitAcks(int partition, int count) throws InterruptedException {
            Waits.until(Duration.ofSeconds(120), count + " acknowledgements on partition " + partition, () -> {
                if (failure.get() != null) {
                    throw new AssertionError("the producer thread failed", failure.get());
                }
                return acked(partition) >= count;
            });
        }
    }

    /** Every record of every partition, read_committed, from the start to the end offsets now. */
    static Map<Integer, List<ConsumerRecord<String, String>>> readCommitted(String topic, int partitions) {
        List<TopicPartition> all = new ArrayList<>();
        Map<Integer, List<ConsumerRecord<String, String>>> read = new HashMap<>();
        for (int p = 0; p < partitions; p++) {
            all.add(new TopicPartition(topic, p));
            read.put(p, new ArrayList<>());
        }
        try (KafkaConsumer<String, String> consumer = Clients.consumer("isolation.level", "read_committed")) {
            consumer.assign(all);
            consumer.seekToBeginning(all);
            Map<TopicPartition, Long> end = consumer.endOffsets(all);
            long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
            while (all.stream().anyMatch(tp -> consumer.position(tp) < end.get(tp))) {
                assertTrue(System.nanoTime() < deadline, "read every partition to " + end + " within 60 s");
                consumer.poll(Duration.ofMillis(200)).forEach(r -> read.get(r.partition()).add(r));
            }
        }
        return read;
    }
}
