package odradek.compat;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ExecutionException;

import odradek.compat.support.Clients;
import odradek.compat.support.Consume;
import odradek.compat.support.Names;
import odradek.compat.support.Produce;
import odradek.compat.support.Target;
import odradek.compat.support.Topics;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.ConsumerGroupState;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.GroupIdNotFoundException;
import org.apache.kafka.common.errors.GroupNotEmptyException;
import org.apache.kafka.common.errors.GroupSubscribedToTopicException;
import org.apache.kafka.common.errors.UnknownMemberIdException;
import org.junit.jupiter.api.Test;

/** The AdminClient on consumer groups: what Kafka 3.9 refuses, and with which exception. */
class AdminGroupsTest {

    @Test
    void aGroupThatDoesNotExistIsDescribedAsDeadOrNotFoundByVersion() throws Exception {
        String group = Names.unique("no-such-group");
        try (Admin admin = Clients.admin()) {
            if (Target.clientMajor() >= 4 && Target.isOdradek()) {
                // DescribeGroups v6 (Kafka 4.0, KIP-1043), which odradek serves and Kafka 3.9 does not,
                // answers GROUP_ID_NOT_FOUND: the 4.x client's answer from Kafka 4.x too.
                ExecutionException unknown = assertThrows(ExecutionException.class,
                    () -> admin.describeConsumerGroups(List.of(group)).describedGroups().get(group).get());
                assertInstanceOf(GroupIdNotFoundException.class, unknown.getCause(), unknown.toString());
                return;
            }
            // DescribeGroups up to v5 answers a group it does not know as Dead with no members, no error.
            ConsumerGroupDescription described = admin.describeConsumerGroups(List.of(group))
                .describedGroups().get(group).get();
            assertEquals(ConsumerGroupState.DEAD, described.state());
            assertTrue(described.members().isEmpty());
        }
    }

    @Test
    void deletingAGroupWithMembersOrNoneAtAllIsRefused() throws Exception {
        String topic = Topics.create("delete-group", 1);
        String group = Names.unique("delete-group");
        try (Admin admin = Clients.admin();
             KafkaConsumer<String, String> member = Clients.consumer("group.id", group)) {
            member.subscribe(List.of(topic));
            Produce.values(topic, 0, "r", 1);
            Consume.records(member, 1);
            ExecutionException notEmpty = assertThrows(ExecutionException.class,
                () -> admin.deleteConsumerGroups(List.of(group)).all().get());
            assertInstanceOf(GroupNotEmptyException.class, notEmpty.getCause(), notEmpty.toString());
            String absent = Names.unique("absent-group");
            ExecutionException unknown = assertThrows(ExecutionException.class,
                () -> admin.deleteConsumerGroups(List.of(absent)).all().get());
            assertInstanceOf(GroupIdNotFoundException.class, unknown.getCause(), unknown.toString());
        }
    }

    @Test
    void offsetsAreAlteredForAnEmptyGroupButNotUnderAnActiveMember() throws Exception {
        String topic = Topics.create("alter-offsets", 1);
        String group = Names.unique("alter-offsets");
        TopicPartition partition = new TopicPartition(topic, 0);
        Produce.values(topic, 0, "r", 5);
        try (Admin admin = Clients.admin()) {
            admin.alterConsumerGroupOffsets(group, Map.of(partition, new OffsetAndMetadata(3, "set"))).all().get();
            OffsetAndMetadata altered = admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get()
                .get(partition);
            assertEquals(3, altered.offset());
            assertEquals("set", altered.metadata());
            try (KafkaConsumer<String, String> member = Clients.consumer("group.id", group,
                    "enable.auto.commit", "false")) {
                member.subscribe(List.of(topic));
                assertEquals(List.of("r-3", "r-4"), Consume.values(Consume.records(member, 2)));
                ExecutionException active = assertThrows(ExecutionException.class, () -> admin
                    .alterConsumerGroupOffsets(group, Map.of(partition, new OffsetAndMetadata(0))).all().get());
                assertInstanceOf(UnknownMemberIdException.class, active.getCause(), active.toString());
                ExecutionException subscribed = assertThrows(ExecutionException.class, () -> admin
                    .deleteConsumerGroupOffsets(group, Set.of(partition)).all().get());
                assertInstanceOf(GroupSubscribedToTopicException.class, subscribed.getCause(), subscribed.toString());
            }
            admin.deleteConsumerGroupOffsets(group, Set.of(partition)).all().get();
            assertEquals(Map.of(), admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get());
        }
    }
}
