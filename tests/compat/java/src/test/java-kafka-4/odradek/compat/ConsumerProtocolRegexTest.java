package odradek.compat;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.List;
import java.util.Set;
import java.util.stream.Collectors;

import odradek.compat.support.Clients;
import odradek.compat.support.Groups;
import odradek.compat.support.Names;
import odradek.compat.support.Target;
import odradek.compat.support.Topics;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.SubscriptionPattern;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * KIP-848's regular expressions resolved by the coordinator (kafka-clients 4.x's SubscriptionPattern, RE2/J
 * syntax, sent as ConsumerGroupHeartbeat's SubscribedTopicRegex): the group follows topics created later
 * without the client refreshing its metadata. Only the 4.x API has it (src/test/java-kafka-4).
 */
@Tag(Target.NOT_IN_KAFKA_ZOOKEEPER_MODE)
class ConsumerProtocolRegexTest {

    @Test
    void aServerSideRegexSubscriptionFollowsATopicCreatedLater() throws Exception {
        String prefix = Names.unique("kip848-regex");
        String first = prefix + "-a";
        String second = prefix + "-b";
        String group = Names.unique("kip848-regex");
        try (Admin admin = Clients.admin()) {
            admin.createTopics(List.of(new NewTopic(first, 2, Target.replicationFactor()))).all().get();
            Topics.awaitLeaders(admin, first, 2);
            try (KafkaConsumer<String, String> consumer = ConsumerProtocolTest.member(group)) {
                // The unique names are letters, digits and dashes: nothing to quote.
                consumer.subscribe(new SubscriptionPattern(prefix + "-.*"));
                Groups.pollUntilBalanced(List.of(consumer), 2, 2);
                admin.createTopics(List.of(new NewTopic(second, 1, Target.replicationFactor()))).all().get();
                Topics.awaitLeaders(admin, second, 1);
                Groups.pollUntilBalanced(List.of(consumer), 3, 3);
                assertEquals(Set.of(first, second),
                    consumer.assignment().stream().map(TopicPartition::topic).collect(Collectors.toSet()));
            }
        }
    }

    @Test
    void aServerSideRegexInRe2jSyntaxIsAccepted() throws Exception {
        // \Q...\E quotes literal text in RE2/J, the syntax KIP-848 specifies (java.util.regex has it too).
        String topic = Topics.create("kip848-re2j.quoted", 2);
        String group = Names.unique("kip848-re2j");
        try (KafkaConsumer<String, String> consumer = ConsumerProtocolTest.member(group)) {
            consumer.subscribe(new SubscriptionPattern("\\Q" + topic + "\\E"));
            Groups.pollUntilBalanced(List.of(consumer), 2, 2);
            assertEquals(Groups.partitions(topic, 0, 1), consumer.assignment());
        }
    }
}
