package odradek.compat;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

import odradek.compat.support.Clients;
import odradek.compat.support.Names;
import odradek.compat.support.Target;
import odradek.compat.support.Topics;
import odradek.compat.support.Waits;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewPartitionReassignment;
import org.apache.kafka.common.ElectionType;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.TopicPartitionInfo;
import org.apache.kafka.common.errors.ElectionNotNeededException;
import org.apache.kafka.common.errors.UnknownTopicOrPartitionException;
import org.junit.jupiter.api.Test;

/** electLeaders, preferred and unclean, as Kafka 3.9 in ZooKeeper mode answers. */
class AdminElectionTest {

    @Test
    void aPreferredElectionMovesLeadershipToTheFirstReplicaOnceTheOrderChanges() throws Exception {
        assumeTrue(Target.brokers() > 1, "a preferred replica other than the leader needs a second broker");
        try (Admin admin = Clients.admin()) {
            String topic = Topics.create(admin, "elect-preferred", 1);
            TopicPartition partition = new TopicPartition(topic, 0);
            TopicPartitionInfo before = Topics.describeLed(admin, topic, 1).partitions().get(0);
            int leader = before.leader().id();
            List<Integer> reordered = new ArrayList<>(before.replicas().stream().map(Node::id).toList());
            reordered.remove(Integer.valueOf(leader));
            reordered.add(leader);
            // Reordering the replicas keeps the leader (it stays among them) and makes another preferred.
            admin.alterPartitionReassignments(Map.of(partition,
                Optional.of(new NewPartitionReassignment(reordered)))).all().get();
            Waits.until(Duration.ofSeconds(60), "the replicas reordered to " + reordered, () -> {
                TopicPartitionInfo info = describe(admin, topic);
                return admin.listPartitionReassignments(Set.of(partition)).reassignments().get().isEmpty()
                    && info.replicas().stream().map(Node::id).toList().equals(reordered);
            });
            assertEquals(leader, describe(admin, topic).leader().id(), "a reordering alone moves no leadership");

            Map<TopicPartition, Optional<Throwable>> elected =
                admin.electLeaders(ElectionType.PREFERRED, Set.of(partition)).partitions().get();
            assertEquals(Optional.empty(), elected.get(partition));
            Waits.until(Duration.ofSeconds(30), "broker " + reordered.get(0) + " to lead",
                () -> describe(admin, topic).leader().id() == reordered.get(0));
        }
    }

    @Test
    void anUncleanElectionOfALedPartitionIsNotNeededAndAnUnknownPartitionIsUnknown() throws Exception {
        try (Admin admin = Clients.admin()) {
            String topic = Topics.create(admin, "elect-unclean", 1);
            TopicPartition partition = new TopicPartition(topic, 0);
            Throwable notNeeded = admin.electLeaders(ElectionType.UNCLEAN, Set.of(partition)).partitions().get()
                .get(partition).orElseThrow(() -> new AssertionError("an unclean election took place"));
            assertInstanceOf(ElectionNotNeededException.class, notNeeded, notNeeded.toString());

            TopicPartition absent = new TopicPartition(Names.unique("absent"), 0);
            for (ElectionType type : ElectionType.values()) {
                Optional<Throwable> outcome = admin.electLeaders(type, Set.of(absent)).partitions().get().get(absent);
                assertTrue(outcome.isPresent(), type.toString());
                assertInstanceOf(UnknownTopicOrPartitionException.class, outcome.get(), type + ": " + outcome);
            }
        }
    }

    private static TopicPartitionInfo describe(Admin admin, String topic) throws Exception {
        return admin.describeTopics(List.of(topic)).allTopicNames().get().get(topic).partitions().get(0);
    }
}
