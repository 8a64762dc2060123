package odradek.compat;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.BufferedReader;
import java.io.File;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.TimeUnit;

import odradek.compat.support.BrokerControl;
import odradek.compat.support.Clients;
import odradek.compat.support.Names;
import odradek.compat.support.Produce;
import odradek.compat.support.Target;
import odradek.compat.support.Topics;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.consumer.AcknowledgeType;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicIdPartition;
import org.apache.kafka.common.utils.Utils;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.parallel.Isolated;

/**
 * KIP-932 share groups across failures: the broker leading the share partition, or the share coordinator
 * keeping its state (the leader of the `__share_group_state` partition of the key
 * {@code group:topicId:partition}), is SIGKILLed while several KafkaShareConsumers read an RF=3 topic;
 * afterwards no acknowledged record comes again, every record not acknowledged comes, and a released
 * record's delivery count goes on from where it was. And a consumer JVM killed while holding records:
 * they come to another consumer (once their lock ran out, or, on Kafka 4.4, once the dead member's
 * connection closed). Kafka 3.9 has no share groups.
 */
@Tag(Target.KILLS_BROKERS)
@Tag(Target.NOT_IN_KAFKA_ZOOKEEPER_MODE)
@Isolated
class ShareGroupFailoverTest {
    private static final Duration POLL = Duration.ofMillis(200);
    private static final Duration DEADLINE = Duration.ofSeconds(150);
    private static final String STATE_TOPIC = "__share_group_state";
    private static final String RELEASED = "pre-0";

    @Test
    @Timeout(420)
    void noAcknowledgedRecordComesAgainAndNoneIsLostWhenThePartitionLeaderIsKilled() throws Exception {
        acrossAKill(false);
    }

    @Test
    @Timeout(420)
    void noAcknowledgedRecordComesAgainAndNoneIsLostWhenTheShareCoordinatorIsKilled() throws Exception {
        acrossAKill(true);
    }

    @Test
    @Timeout(300)
    void recordsAKilledConsumerJvmHeldGoToAnotherAfterTheirLock() throws Exception {
        BrokerControl.require();
        String topic = Topics.create("share-jvm-kill", 1);
        String group = Names.unique("share-jvm-kill");
        try (KafkaShareConsumer<String, String> other = ShareConsumerTest.shareConsumer(group, "explicit")) {
            other.subscribe(List.of(topic));
            ShareConsumerTest.warmUp(topic, List.of(other));
            Process holder = holdingJvm(group, topic);
            try {
                Produce.values(topic, 0, "held", 5);
                Set<String> held = new HashSet<>();
                try (BufferedReader out = new BufferedReader(
                        new InputStreamReader(holder.getInputStream(), StandardCharsets.UTF_8))) {
                    // the holder prints what it got, then "HOLDING"; the other consumer gets the rest meanwhile
                    for (String line = out.readLine(); line != null && !line.equals("HOLDING"); line = out.readLine()) {
                        held.add(line);
                    }
                    assertTrue(!held.isEmpty(), "the child JVM held nothing");
                    holder.destroyForcibly().waitFor(30, TimeUnit.SECONDS); // SIGKILL: no leave, no release
                    Map<String, Short> got = new HashMap<>();
                    long deadline = System.currentTimeMillis() + DEADLINE.toMillis();
                    while (!got.keySet().containsAll(Produce.expected("held", 5))
                        && System.currentTimeMillis() < deadline) {
                        for (ConsumerRecord<String, String> record : other.poll(POLL)) {
                            other.acknowledge(record, AcknowledgeType.ACCEPT);
                            got.put(record.value(), record.deliveryCount().orElseThrow());
                        }
                        other.commitSync();
                    }
                    // every record came, those the killed JVM held too; their delivery count is not
                    // asserted: Kafka 4.4 releases a dead member's records when its connection drops, and
                    // without counting that delivery, where odradek counts it when the lock runs out
                    assertEquals(Set.copyOf(Produce.expected("held", 5)), keysFrom(got, "held-"));
                    assertTrue(got.keySet().containsAll(held), "held " + held + ", came " + got.keySet());
                }
            } finally {
                holder.destroyForcibly();
            }
        }
    }

    private void acrossAKill(boolean coordinator) throws Exception {
        BrokerControl control = BrokerControl.require();
        try (Admin admin = Clients.admin()) {
            String topic = Topics.create(admin, coordinator ? "share-coord-kill" : "share-leader-kill", 1);
            String group = Names.unique(coordinator ? "share-coord-kill" : "share-leader-kill");
            List<KafkaShareConsumer<String, String>> consumers = new ArrayList<>();
            try {
                for (int i = 0; i < 3; i++) {
                    consumers.add(ShareConsumerTest.shareConsumer(group, "explicit"));
                    consumers.get(i).subscribe(List.of(topic));
                }
                ShareConsumerTest.warmUp(topic, consumers);
                Deliveries seen = new Deliveries();
                Produce.values(topic, 0, "pre", 10);
                seen.until(consumers, () -> seen.acknowledged.containsAll(Produce.expected("pre", 10).subList(1, 10))
                    && seen.released > 0, true);
                short releasedAt = seen.released;
                int victim = coordinator ? shareCoordinator(admin, group, topic) : BrokerControl.leader(admin, topic, 1, 0);
                control.runThenHeal(() -> {
                    control.kill(victim);
                    Produce.values(topic, 0, "post", 10);
                    seen.until(consumers, () -> seen.acknowledged.containsAll(Produce.expected("post", 10))
                        && seen.acknowledged.contains(RELEASED), false);
                });
                assertEquals(List.of(), seen.again, "acknowledged records delivered again");
                assertTrue(seen.lastCount.get(RELEASED) > releasedAt,
                    RELEASED + " was released at delivery " + releasedAt + " and came again as delivery "
                        + seen.lastCount.get(RELEASED));
            } finally {
                consumers.forEach(KafkaShareConsumer::close);
            }
        }
    }

    /** The broker whose share coordinator keeps the state of the group's partition 0 of topic. */
    private static int shareCoordinator(Admin admin, String group, String topic) throws Exception {
        String topicId = admin.describeTopics(List.of(topic)).allTopicNames().get().get(topic).topicId().toString();
        int partitions = admin.describeTopics(List.of(STATE_TOPIC)).allTopicNames().get().get(STATE_TOPIC)
            .partitions().size();
        // the coordinator key's partition, as the share coordinator picks it
        int partition = Utils.abs((group + ":" + topicId + ":0").hashCode()) % partitions;
        return BrokerControl.leader(admin, STATE_TOPIC, partitions, partition);
    }

    /** What the consumers got: each value's last delivery count, which acknowledged ones came again. */
    private static final class Deliveries {
        final Set<String> acknowledged = new HashSet<>();
        final Map<String, Short> lastCount = new HashMap<>();
        final List<String> again = new ArrayList<>();
        short released;

        /**
         * Polls the consumers in turn until {@code done}; every record is accepted, except {@value RELEASED}
         * while {@code release}. A record counts as acknowledged once its commit succeeded, and as
         * acknowledged again when it comes after that and its acceptance succeeds again.
         */
        void until(List<KafkaShareConsumer<String, String>> consumers, java.util.function.BooleanSupplier done,
                   boolean release) {
            long deadline = System.currentTimeMillis() + DEADLINE.toMillis();
            while (!done.getAsBoolean()) {
                assertTrue(System.currentTimeMillis() < deadline, "not done; acknowledged " + acknowledged);
                for (KafkaShareConsumer<String, String> consumer : consumers) {
                    List<String> accepted = new ArrayList<>();
                    List<String> repeated = new ArrayList<>();
                    boolean any = false;
                    for (ConsumerRecord<String, String> record : consumer.poll(POLL)) {
                        any = true;
                        String value = record.value();
                        if (acknowledged.contains(value)) {
                            repeated.add(value + " (delivery " + record.deliveryCount().orElseThrow() + ")");
                        }
                        lastCount.put(value, record.deliveryCount().orElseThrow());
                        if (release && value.equals(RELEASED)) {
                            consumer.acknowledge(record, AcknowledgeType.RELEASE);
                            released = record.deliveryCount().orElseThrow();
                        } else {
                            consumer.acknowledge(record, AcknowledgeType.ACCEPT);
                            accepted.add(value);
                        }
                    }
                    // An acknowledged record came again only if the broker gave it again: its acceptance
                    // succeeds. A copy the consumer fetched from a leader killed since may still come out of
                    // its poll after another consumer got and acknowledged the record from the new leader
                    // (acquisitions are not persisted, in Kafka 4.4 too); its acknowledgement fails.
                    if (any && committed(consumer)) {
                        acknowledged.addAll(accepted);
                        again.addAll(repeated);
                    }
                }
            }
        }

        private static boolean committed(KafkaShareConsumer<String, String> consumer) {
            try {
                Map<TopicIdPartition, Optional<KafkaException>> result = consumer.commitSync();
                return result.values().stream().allMatch(Optional::isEmpty);
            } catch (KafkaException e) {
                return false;
            }
        }
    }

    private static Set<String> keysFrom(Map<String, Short> got, String prefix) {
        Set<String> keys = new HashSet<>();
        got.keySet().stream().filter(value -> value.startsWith(prefix)).forEach(keys::add);
        return keys;
    }

    /** A child JVM running {@link Holder}: it joins the group, prints what it got, and holds it. */
    private static Process holdingJvm(String group, String topic) throws Exception {
        String java = System.getProperty("java.home") + File.separator + "bin" + File.separator + "java";
        ProcessBuilder builder = new ProcessBuilder(java, "-cp", System.getProperty("java.class.path"),
            "-Dodradek.bootstrap=" + Target.bootstrap(), Holder.class.getName(), group, topic);
        builder.redirectError(ProcessBuilder.Redirect.DISCARD);
        return builder.start();
    }

    /** The child JVM's main: acquires some "held-" records, never acknowledges them, waits to be killed. */
    public static final class Holder {
        private Holder() {
        }

        public static void main(String[] args) throws Exception {
            KafkaShareConsumer<String, String> consumer = ShareConsumerTest.shareConsumer(args[0], "explicit");
            consumer.subscribe(List.of(args[1]));
            while (true) {
                List<String> got = new ArrayList<>();
                for (ConsumerRecord<String, String> record : consumer.poll(POLL)) {
                    if (record.value().startsWith("held-")) {
                        got.add(record.value());
                    } else {
                        consumer.acknowledge(record, AcknowledgeType.ACCEPT);
                    }
                }
                if (!got.isEmpty()) {
                    got.forEach(System.out::println);
                    System.out.println("HOLDING");
                    System.out.flush();
                    Thread.sleep(Long.MAX_VALUE);
                }
            }
        }
    }
}
