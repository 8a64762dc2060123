package odradek.compat;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;

import odradek.compat.support.Clients;
import odradek.compat.support.Consume;
import odradek.compat.support.Names;
import odradek.compat.support.Produce;
import odradek.compat.support.Topics;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.admin.ListConsumerGroupOffsetsSpec;
import org.apache.kafka.clients.admin.MemberToRemove;
import org.apache.kafka.clients.admin.RemoveMembersFromConsumerGroupOptions;
import org.apache.kafka.clients.admin.RemoveMembersFromConsumerGroupResult;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.ConsumerGroupState;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.UnknownMemberIdException;
import org.junit.jupiter.api.Test;

/** listConsumerGroupOffsets of several groups at once, and removeMembersFromConsumerGroup. */
class AdminGroupMembersTest {

    @Test
    void theOffsetsOfSeveralGroupsAreListedInOneCall() throws Exception {
        String topic = Topics.create("several-groups", 2);
        TopicPartition p0 = new TopicPartition(topic, 0);
        TopicPartition p1 = new TopicPartition(topic, 1);
        String first = Names.unique("offsets-a");
        String second = Names.unique("offsets-b");
        String none = Names.unique("offsets-none");
        try (Admin admin = Clients.admin()) {
            admin.alterConsumerGroupOffsets(first, Map.of(p0, new OffsetAndMetadata(0), p1, new OffsetAndMetadata(0)))
                .all().get();
            admin.alterConsumerGroupOffsets(second, Map.of(p1, new OffsetAndMetadata(0, "b"))).all().get();

            var listed = admin.listConsumerGroupOffsets(Map.of(
                first, new ListConsumerGroupOffsetsSpec().topicPartitions(List.of(p1)),
                second, new ListConsumerGroupOffsetsSpec(),
                none, new ListConsumerGroupOffsetsSpec()));
            Map<String, Map<TopicPartition, OffsetAndMetadata>> all = listed.all().get();
            assertEquals(Map.of(p1, 0L), offsets(all.get(first)), "only the partition asked for");
            assertEquals(Map.of(p1, 0L), offsets(all.get(second)));
            assertEquals("b", all.get(second).get(p1).metadata());
            assertEquals(Map.of(), all.get(none), "a group with no offsets");
        }
    }

    @Test
    void aStaticMemberIsRemovedByInstanceIdAndAnUnknownOneIsUnknownMemberId() throws Exception {
        String topic = Topics.create("remove-static", 1);
        String group = Names.unique("remove-static");
        Produce.values(topic, 0, "r", 1);
        try (Admin admin = Clients.admin();
             KafkaConsumer<String, String> member = Clients.consumer("group.id", group,
                 "group.instance.id", "static-1", "enable.auto.commit", "false")) {
            member.subscribe(List.of(topic));
            Consume.records(member, 1);
            assertEquals(1, describe(admin, group).members().size());

            MemberToRemove known = new MemberToRemove("static-1");
            MemberToRemove unknown = new MemberToRemove("static-absent");
            RemoveMembersFromConsumerGroupResult removed = admin.removeMembersFromConsumerGroup(group,
                new RemoveMembersFromConsumerGroupOptions(List.of(known, unknown)));
            removed.memberResult(known).get();
            ExecutionException absent = assertThrows(ExecutionException.class,
                () -> removed.memberResult(unknown).get());
            assertInstanceOf(UnknownMemberIdException.class, absent.getCause(), absent.toString());
            ExecutionException overall = assertThrows(ExecutionException.class, () -> removed.all().get());
            assertInstanceOf(UnknownMemberIdException.class, overall.getCause(), overall.toString());

            ConsumerGroupDescription after = describe(admin, group);
            assertTrue(after.members().isEmpty(), after.toString());
            assertEquals(ConsumerGroupState.EMPTY, after.state());
        }
    }

    @Test
    void removingWithNoMembersNamedRemovesEveryMember() throws Exception {
        String topic = Topics.create("remove-all", 1);
        String group = Names.unique("remove-all");
        Produce.values(topic, 0, "r", 1);
        try (Admin admin = Clients.admin();
             KafkaConsumer<String, String> member = Clients.consumer("group.id", group,
                 "enable.auto.commit", "false")) {
            member.subscribe(List.of(topic));
            Consume.records(member, 1);
            assertEquals(1, describe(admin, group).members().size());

            admin.removeMembersFromConsumerGroup(group, new RemoveMembersFromConsumerGroupOptions()).all().get();
            ConsumerGroupDescription after = describe(admin, group);
            assertTrue(after.members().isEmpty(), after.toString());
            assertEquals(ConsumerGroupState.EMPTY, after.state());
        }
    }

    private static ConsumerGroupDescription describe(Admin admin, String group) throws Exception {
        return admin.describeConsumerGroups(List.of(group)).describedGroups().get(group).get();
    }

    private static Map<TopicPartition, Long> offsets(Map<TopicPartition, OffsetAndMetadata> committed) {
        Map<TopicPartition, Long> plain = new java.util.HashMap<>();
        committed.forEach((partition, offset) -> plain.put(partition, offset.offset()));
        return plain;
    }
}
