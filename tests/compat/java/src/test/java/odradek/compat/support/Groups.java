package odradek.compat.support;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

import org.apache.kafka.clients.consumer.Consumer;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.common.TopicPartition;

/** Members of one consumer group driven from one test thread. */
public final class Groups {
    /** How long a group may take to settle on a loaded machine. */
    public static final Duration PATIENCE = Duration.ofSeconds(60);

    private Groups() {
    }

    /**
     * Polls every member in turn (a member that is not polled cannot rejoin) until each holds exactly
     * {@code perMember} partitions and together they hold {@code total}, none twice. What poll throws
     * fails the test at once: poll throws only what the consumer cannot go on from.
     */
    public static void pollUntilBalanced(List<? extends Consumer<?, ?>> members, int perMember, int total) {
        long deadline = System.nanoTime() + PATIENCE.toNanos();
        while (!balanced(members, perMember, total)) {
            if (System.nanoTime() > deadline) {
                StringBuilder held = new StringBuilder();
                members.forEach(m -> held.append(' ').append(m.assignment()));
                throw new AssertionError("waited " + PATIENCE.toSeconds() + " s for each of " + members.size()
                    + " members to hold " + perMember + " of " + total + " partitions; they hold" + held);
            }
            for (Consumer<?, ?> member : members) {
                member.poll(Duration.ofMillis(100));
            }
        }
    }

    private static boolean balanced(List<? extends Consumer<?, ?>> members, int perMember, int total) {
        Set<TopicPartition> union = new HashSet<>();
        int sum = 0;
        for (Consumer<?, ?> member : members) {
            Set<TopicPartition> held = member.assignment();
            if (held.size() != perMember) {
                return false;
            }
            union.addAll(held);
            sum += held.size();
        }
        return union.size() == total && sum == total;
    }

    /** Records what a member's rebalance callbacks were given, in order. */
    public static final class Recorder implements ConsumerRebalanceListener {
        public final List<Set<TopicPartition>> assigned = new ArrayList<>();
        public final List<Set<TopicPartition>> revoked = new ArrayList<>();
        public final List<Set<TopicPartition>> lost = new ArrayList<>();

        @Override
        public void onPartitionsAssigned(Collection<TopicPartition> partitions) {
            assigned.add(Set.copyOf(partitions));
        }

        @Override
        public void onPartitionsRevoked(Collection<TopicPartition> partitions) {
            revoked.add(Set.copyOf(partitions));
        }

        @Override
        public void onPartitionsLost(Collection<TopicPartition> partitions) {
            lost.add(Set.copyOf(partitions));
        }
    }

    public static Set<TopicPartition> partitions(String topic, int... numbers) {
        Set<TopicPartition> set = new HashSet<>();
        for (int number : numbers) {
            set.add(new TopicPartition(topic, number));
        }
        return set;
    }
}
