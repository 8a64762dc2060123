package odradek.compat;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

import odradek.compat.support.Clients;
import odradek.compat.support.Names;
import odradek.compat.support.Produce;
import odradek.compat.support.Target;
import odradek.compat.support.Topics;
import odradek.compat.support.Waits;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.GroupListing;
import org.apache.kafka.clients.admin.ListGroupsOptions;
import org.apache.kafka.clients.admin.ListShareGroupOffsetsSpec;
import org.apache.kafka.clients.admin.ShareGroupDescription;
import org.apache.kafka.clients.admin.SharePartitionOffsetInfo;
import org.apache.kafka.clients.consumer.AcknowledgeType;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.common.GroupState;
import org.apache.kafka.common.GroupType;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * KIP-932 share groups through kafka-clients 4.x's Admin: listed by type, described with their members
 * and assignments, their start offsets listed, altered and deleted while empty, and the group deleted.
 * Only the 4.x API has it.
 */
@Tag(Target.NOT_IN_KAFKA_ZOOKEEPER_MODE)
class AdminShareGroupsTest {
    private static final Duration BOUND = Duration.ofSeconds(60);

    @Test
    void aShareGroupIsListedAndDescribedWithItsMemberAndAssignment() throws Exception {
        String topic = Topics.create("share-admin-describe", 2);
        String group = Names.unique("share-admin-describe");
        try (Admin admin = Clients.admin();
             KafkaShareConsumer<String, String> consumer = ShareConsumerTest.shareConsumer(group, "implicit")) {
            consumer.subscribe(List.of(topic));
            Set<TopicPartition> all = Set.of(new TopicPartition(topic, 0), new TopicPartition(topic, 1));
            Waits.until(BOUND, "the member is assigned both partitions", () -> {
                consumer.poll(Duration.ofMillis(100));
                ShareGroupDescription described = admin.describeShareGroups(List.of(group)).describedGroups()
                    .get(group).get();
                return described.members().size() == 1
                    && described.members().iterator().next().assignment().topicPartitions().equals(all);
            });
            ShareGroupDescription described = admin.describeShareGroups(List.of(group)).describedGroups().get(group).get();
            assertEquals(GroupState.STABLE, described.groupState());
            assertTrue(described.groupEpoch() > 0);
            GroupListing listed = admin.listGroups(ListGroupsOptions.forShareGroups()).all().get().stream()
                .filter(g -> g.groupId().equals(group)).findFirst().orElseThrow();
            assertEquals(GroupType.SHARE, listed.type().orElseThrow());
            assertFalse(admin.listGroups(ListGroupsOptions.forConsumerGroups()).all().get().stream()
                .anyMatch(g -> g.groupId().equals(group)));
        }
    }

    @Test
    void anEmptyShareGroupsOffsetsAreListedAlteredAndDeletedAndTheGroupDeleted() throws Exception {
        String topic = Topics.create("share-admin-offsets", 1);
        String group = Names.unique("share-admin-offsets");
        TopicPartition partition = new TopicPartition(topic, 0);
        try (Admin admin = Clients.admin()) {
            try (KafkaShareConsumer<String, String> consumer = ShareConsumerTest.shareConsumer(group, "implicit")) {
                consumer.subscribe(List.of(topic));
                ShareConsumerTest.warmUp(topic, List.of(consumer));
                consumer.poll(Duration.ofMillis(100)); // acknowledges what the warm-up delivered
            }
            Waits.until(BOUND, "the group is empty", () -> admin.describeShareGroups(List.of(group))
                .describedGroups().get(group).get().groupState() == GroupState.EMPTY);
            Waits.until(BOUND, "the start offset is known", () -> startOffset(admin, group, partition) > 0);
            admin.alterShareGroupOffsets(group, Map.of(partition, 0L)).all().get();
            Waits.until(BOUND, "the start offset is reset", () -> startOffset(admin, group, partition) == 0);
            admin.deleteShareGroupOffsets(group, Set.of(topic)).all().get();
            admin.deleteShareGroups(List.of(group)).all().get();
            assertFalse(admin.listGroups(ListGroupsOptions.forShareGroups()).all().get().stream()
                .anyMatch(g -> g.groupId().equals(group)));
        }
    }

    @Test
    void aShareGroupsLagCountsTheRecordsNotYetDeliveredForGood() throws Exception {
        // KIP-1226 (DescribeShareGroupOffsets v1): the partition's end less the start offset and the
        // records past it acknowledged or archived
        String topic = Topics.create("share-admin-lag", 1);
        String group = Names.unique("share-admin-lag");
        TopicPartition partition = new TopicPartition(topic, 0);
        try (Admin admin = Clients.admin()) {
            try (KafkaShareConsumer<String, String> consumer = ShareConsumerTest.shareConsumer(group, "explicit")) {
                consumer.subscribe(List.of(topic));
                ShareConsumerTest.warmUp(topic, List.of(consumer));
                Produce.values(topic, 0, "lag", 4);
                Set<String> settled = new HashSet<>();
                Waits.until(BOUND, "the four records came", () -> {
                    for (ConsumerRecord<String, String> record : consumer.poll(Duration.ofMillis(100))) {
                        // the first is released (it stays to be delivered), the others accepted
                        boolean first = record.value().equals("lag-0");
                        consumer.acknowledge(record, first ? AcknowledgeType.RELEASE : AcknowledgeType.ACCEPT);
                        settled.add(record.value());
                    }
                    consumer.commitSync();
                    return settled.containsAll(Produce.expected("lag", 4));
                });
            }
            Waits.until(BOUND, "the lag is the released record", () -> lag(admin, group, partition) == 1L);
            Produce.values(topic, 0, "more", 3);
            Waits.until(BOUND, "the lag counts the new records", () -> lag(admin, group, partition) == 4L);
        }
    }

    private static long lag(Admin admin, String group, TopicPartition partition) throws Exception {
        SharePartitionOffsetInfo info = admin
            .listShareGroupOffsets(Map.of(group, new ListShareGroupOffsetsSpec().topicPartitions(List.of(partition))))
            .partitionsToOffsetInfo(group).get().get(partition);
        return info == null ? -1 : info.lag().orElse(-1L);
    }

    private static long startOffset(Admin admin, String group, TopicPartition partition) throws Exception {
        Map<TopicPartition, SharePartitionOffsetInfo> offsets = admin
            .listShareGroupOffsets(Map.of(group, new ListShareGroupOffsetsSpec().topicPartitions(List.of(partition))))
            .partitionsToOffsetInfo(group).get();
        SharePartitionOffsetInfo info = offsets.get(partition);
        return info == null ? -1 : info.startOffset();
    }
}
