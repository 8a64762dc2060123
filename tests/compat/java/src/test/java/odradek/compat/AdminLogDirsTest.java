package odradek.compat;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;

import odradek.compat.support.Clients;
import odradek.compat.support.Names;
import odradek.compat.support.Produce;
import odradek.compat.support.Topics;
import odradek.compat.support.Waits;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.DescribeReplicaLogDirsResult.ReplicaLogDirInfo;
import org.apache.kafka.clients.admin.LogDirDescription;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.TopicPartitionReplica;
import org.apache.kafka.common.errors.LogDirNotFoundException;
import org.apache.kafka.common.errors.UnknownTopicOrPartitionException;
import org.junit.jupiter.api.Test;

/** describeReplicaLogDirs and alterReplicaLogDirs on brokers with one log directory each, as Kafka 3.9 answers. */
class AdminLogDirsTest {

    @Test
    void eachReplicaIsDescribedInItsBrokersOnlyLogDirWithNoFutureDir() throws Exception {
        try (Admin admin = Clients.admin()) {
            String topic = Topics.create(admin, "replica-log-dirs", 1);
            Produce.values(topic, 0, "r", 3);
            for (Node broker : admin.describeCluster().nodes().get()) {
                TopicPartitionReplica replica = new TopicPartitionReplica(topic, 0, broker.id());
                ReplicaLogDirInfo info = admin.describeReplicaLogDirs(List.of(replica)).values().get(replica).get();
                assertEquals(onlyLogDir(admin, broker.id()), info.getCurrentReplicaLogDir(), info.toString());
                assertNull(info.getFutureReplicaLogDir(), info.toString());
                assertEquals(-1, info.getFutureReplicaOffsetLag(), info.toString());
            }
            TopicPartitionReplica absent = new TopicPartitionReplica(Names.unique("absent"), 0,
                admin.describeCluster().nodes().get().iterator().next().id());
            ReplicaLogDirInfo none = admin.describeReplicaLogDirs(List.of(absent)).values().get(absent).get();
            assertNull(none.getCurrentReplicaLogDir(), "a replica the broker does not hold: " + none);
            assertNull(none.getFutureReplicaLogDir(), none.toString());
        }
    }

    @Test
    void movingAReplicaToTheDirItIsInDoesNothingAndToAnyOtherPathIsLogDirNotFound() throws Exception {
        try (Admin admin = Clients.admin()) {
            String topic = Topics.create(admin, "alter-log-dirs", 1);
            Node broker = admin.describeCluster().nodes().get().iterator().next();
            TopicPartitionReplica replica = new TopicPartitionReplica(topic, 0, broker.id());
            String dir = onlyLogDir(admin, broker.id());
            // In a cluster a broker holds its replica once the controller's LeaderAndIsr has reached it.
            Waits.until(Duration.ofSeconds(30), "broker " + broker.id() + " to hold " + replica, () -> dir.equals(
                admin.describeReplicaLogDirs(List.of(replica)).values().get(replica).get().getCurrentReplicaLogDir()));

            admin.alterReplicaLogDirs(Map.of(replica, dir)).all().get();
            ReplicaLogDirInfo info = admin.describeReplicaLogDirs(List.of(replica)).values().get(replica).get();
            assertEquals(dir, info.getCurrentReplicaLogDir());
            assertNull(info.getFutureReplicaLogDir());

            ExecutionException elsewhere = assertThrows(ExecutionException.class,
                () -> admin.alterReplicaLogDirs(Map.of(replica, dir + "-elsewhere")).all().get());
            assertInstanceOf(LogDirNotFoundException.class, elsewhere.getCause(), elsewhere.toString());

            TopicPartitionReplica absent = new TopicPartitionReplica(Names.unique("absent"), 0, broker.id());
            ExecutionException notHere = assertThrows(ExecutionException.class,
                () -> admin.alterReplicaLogDirs(Map.of(absent, dir)).all().get());
            assertInstanceOf(UnknownTopicOrPartitionException.class, notHere.getCause(), notHere.toString());
        }
    }

    private static String onlyLogDir(Admin admin, int broker) throws Exception {
        Map<String, LogDirDescription> dirs =
            admin.describeLogDirs(List.of(broker)).allDescriptions().get().get(broker);
        assertEquals(1, dirs.size(), dirs.toString());
        String dir = dirs.keySet().iterator().next();
        assertNotNull(dir);
        assertTrue(dir.startsWith("/"), dir);
        return dir;
    }
}
