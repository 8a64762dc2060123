package odradek.compat;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

import odradek.compat.support.Clients;
import odradek.compat.support.Names;
import odradek.compat.support.Target;
import odradek.compat.support.Topics;
import odradek.compat.support.Waits;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.FeatureMetadata;
import org.apache.kafka.clients.admin.FinalizedVersionRange;
import org.apache.kafka.clients.admin.ShareGroupDescription;
import org.apache.kafka.clients.admin.SupportedVersionRange;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * Share groups as a Kafka 4.4 broker serves them by default: the share.version feature supported and
 * finalized (with nothing set on the broker), and the simple assignor spreading partitions over the
 * members, a partition shared only when the members outnumber the partitions.
 */
@Tag(Target.NOT_IN_KAFKA_ZOOKEEPER_MODE)
class ShareGroupAssignmentTest {
    private static final Duration BOUND = Duration.ofSeconds(60);
    private static final Duration POLL = Duration.ofMillis(100);

    @Test
    void theShareVersionFeatureIsSupportedAndFinalizedAtOneOrMore() throws Exception {
        try (Admin admin = Clients.admin()) {
            FeatureMetadata features = admin.describeFeatures().featureMetadata().get();
            SupportedVersionRange supported = features.supportedFeatures().get("share.version");
            FinalizedVersionRange finalized = features.finalizedFeatures().get("share.version");
            assertTrue(supported != null && supported.minVersion() == 0 && supported.maxVersion() >= 1,
                features.toString());
            assertTrue(finalized != null && finalized.maxVersionLevel() >= 1
                && finalized.maxVersionLevel() <= supported.maxVersion(), features.toString());
        }
    }

    @Test
    void twoMembersSplitFourPartitionsTwoEach() throws Exception {
        Map<String, Set<TopicPartition>> assigned = settle("share-assign-split", 4, 2,
            members -> members.values().stream().allMatch(p -> p.size() == 2));
        Set<TopicPartition> union = new java.util.HashSet<>();
        assigned.values().forEach(union::addAll);
        assertEquals(4, union.size(), assigned.toString());
    }

    @Test
    void threeMembersShareTwoPartitionsEachPartitionHeldByTwo() throws Exception {
        Map<String, Set<TopicPartition>> assigned = settle("share-assign-shared", 2, 3,
            members -> members.values().stream().allMatch(p -> !p.isEmpty()) && holders(members).values().stream()
                .allMatch(count -> count == 2));
        Map<TopicPartition, Integer> holders = holders(assigned);
        assertEquals(2, holders.size(), assigned.toString());
        assertTrue(holders.values().stream().allMatch(count -> count == 2), assigned.toString());
    }

    interface Settled {
        boolean test(Map<String, Set<TopicPartition>> members);
    }

    /** Polls `count` share consumers of a new group until the described assignment satisfies `settled`. */
    private static Map<String, Set<TopicPartition>> settle(String what, int partitions, int count, Settled settled)
        throws Exception {
        String topic = Topics.create(what, partitions);
        String group = Names.unique(what);
        List<KafkaShareConsumer<String, String>> consumers = new ArrayList<>();
        Map<String, Set<TopicPartition>> last = new HashMap<>();
        try (Admin admin = Clients.admin()) {
            for (int i = 0; i < count; i++) {
                consumers.add(ShareConsumerTest.shareConsumer(group, "implicit"));
                consumers.get(i).subscribe(List.of(topic));
            }
            Waits.until(BOUND, what + ": " + count + " members and the assignment settled", () -> {
                for (KafkaShareConsumer<String, String> consumer : consumers) {
                    consumer.poll(POLL);
                }
                ShareGroupDescription described = admin.describeShareGroups(List.of(group)).describedGroups()
                    .get(group).get();
                last.clear();
                described.members().forEach(m -> last.put(m.consumerId(), m.assignment().topicPartitions()));
                return last.size() == count && settled.test(last);
            });
            return Map.copyOf(last);
        } finally {
            for (KafkaShareConsumer<String, String> consumer : consumers) {
                consumer.close();
            }
        }
    }

    private static Map<TopicPartition, Integer> holders(Map<String, Set<TopicPartition>> members) {
        Map<TopicPartition, Integer> holders = new HashMap<>();
        Collection<Set<TopicPartition>> assignments = members.values();
        assignments.forEach(partitions -> partitions.forEach(p -> holders.merge(p, 1, Integer::sum)));
        return holders;
    }
}
