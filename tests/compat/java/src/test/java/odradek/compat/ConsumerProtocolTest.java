package odradek.compat;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Map;
import java.util.Set;

import odradek.compat.support.Clients;
import odradek.compat.support.Consume;
import odradek.compat.support.Groups;
import odradek.compat.support.Names;
import odradek.compat.support.Produce;
import odradek.compat.support.Target;
import odradek.compat.support.Topics;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.GroupType;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * KafkaConsumer with {@code group.protocol=consumer} (KIP-848): the coordinator assigns partitions itself
 * through ConsumerGroupHeartbeat. Kafka 3.9 serves this only in KRaft mode; odradek serves it in both, so
 * the runs against Apache Kafka in ZooKeeper mode (tests/support/java_reference.py) leave it out.
 */
@Tag(Target.NOT_IN_KAFKA_ZOOKEEPER_MODE)
class ConsumerProtocolTest {

    @Test
    void theServerSideUniformAssignorSharesPartitionsAndALeavingMembersGoToTheOther() throws Exception {
        String topic = Topics.create("kip848-uniform", 4);
        String group = Names.unique("kip848-uniform");
        try (KafkaConsumer<String, String> first = member(group)) {
            first.subscribe(List.of(topic));
            try (KafkaConsumer<String, String> second = member(group)) {
                second.subscribe(List.of(topic));
                Groups.pollUntilBalanced(List.of(first, second), 2, 4);
            }
            Groups.pollUntilBalanced(List.of(first), 4, 4);
        }
    }

    @Test
    void theServerSideRangeAssignorGivesContiguousPartitions() throws Exception {
        String topic = Topics.create("kip848-range", 4);
        String group = Names.unique("kip848-range");
        try (KafkaConsumer<String, String> first = member(group, "group.remote.assignor", "range");
             KafkaConsumer<String, String> second = member(group, "group.remote.assignor", "range")) {
            first.subscribe(List.of(topic));
            second.subscribe(List.of(topic));
            Groups.pollUntilBalanced(List.of(first, second), 2, 4);
            assertEquals(Set.of(Groups.partitions(topic, 0, 1), Groups.partitions(topic, 2, 3)),
                Set.of(first.assignment(), second.assignment()));
            try (Admin admin = Clients.admin()) {
                ConsumerGroupDescription described = admin.describeConsumerGroups(List.of(group))
                    .describedGroups().get(group).get();
                assertEquals(GroupType.CONSUMER, described.type());
                assertEquals("range", described.partitionAssignor());
                assertEquals(2, described.members().size());
            }
        }
    }

    @Test
    void offsetsCommittedByAConsumerProtocolMemberAreReadByTheNextOne() throws Exception {
        String topic = Topics.create("kip848-commit", 1);
        String group = Names.unique("kip848-commit");
        TopicPartition partition = new TopicPartition(topic, 0);
        Produce.values(topic, 0, "r", 5);
        try (KafkaConsumer<String, String> consumer = member(group, "enable.auto.commit", "false")) {
            consumer.subscribe(List.of(topic));
            assertEquals(Produce.expected("r", 5), Consume.values(Consume.records(consumer, 5)));
            consumer.commitSync(Map.of(partition, new OffsetAndMetadata(3, "three")));
            OffsetAndMetadata committed = consumer.committed(Set.of(partition)).get(partition);
            assertEquals(3, committed.offset());
            assertEquals("three", committed.metadata());
        }
        try (KafkaConsumer<String, String> next = member(group)) {
            next.subscribe(List.of(topic));
            List<String> read = Consume.values(Consume.records(next, 2));
            assertEquals(List.of("r-3", "r-4"), read);
            assertTrue(next.groupMetadata().generationId() > 0, next.groupMetadata().toString());
        }
    }

    static KafkaConsumer<String, String> member(String group, Object... settings) {
        Object[] all = new Object[settings.length + 4];
        all[0] = "group.id";
        all[1] = group;
        all[2] = "group.protocol";
        all[3] = "consumer";
        System.arraycopy(settings, 0, all, 4, settings.length);
        return Clients.consumer(all);
    }
}
