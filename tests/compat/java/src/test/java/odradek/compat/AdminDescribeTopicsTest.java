package odradek.compat;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.List;
import java.util.Map;
import java.util.stream.IntStream;

import odradek.compat.support.Clients;
import odradek.compat.support.Topics;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.DescribeTopicsOptions;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.common.TopicPartitionInfo;
import org.junit.jupiter.api.Test;

/**
 * describeTopics of several topics with more partitions than one page. Kafka 3.9 in ZooKeeper mode does not
 * serve DescribeTopicPartitions (KRaft only in Kafka): the 4.x client, which asks for it in pages of
 * partitionSizeLimitPerResponse, falls back to Metadata there, which answers every partition at once;
 * odradek serves it, so against odradek the 4.x client pages (DescribeTopicPartitionsTest, 4.x only).
 */
class AdminDescribeTopicsTest {

    @Test
    void everyPartitionOfSeveralTopicsIsDescribedWhateverThePageSize() throws Exception {
        try (Admin admin = Clients.admin()) {
            String wide = Topics.create(admin, "describe-wide", 24);
            String narrow = Topics.create(admin, "describe-narrow", 3);
            Map<String, TopicDescription> described = admin.describeTopics(List.of(wide, narrow),
                new DescribeTopicsOptions().partitionSizeLimitPerResponse(5)).allTopicNames().get();
            assertEquals(IntStream.range(0, 24).boxed().toList(), numbers(described.get(wide)));
            assertEquals(List.of(0, 1, 2), numbers(described.get(narrow)));
        }
    }

    private static List<Integer> numbers(TopicDescription description) {
        return description.partitions().stream().map(TopicPartitionInfo::partition).toList();
    }
}
