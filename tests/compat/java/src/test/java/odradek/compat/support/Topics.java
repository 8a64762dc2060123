package odradek.compat.support;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.common.TopicPartitionInfo;

/** Topics made for one test, replicated to every broker of the target, waited for until led. */
public final class Topics {
    private Topics() {
    }

    /** A new topic named after {@code what}, with {@code partitions} partitions and {@code configs}. */
    public static String create(Admin admin, String what, int partitions, Map<String, String> configs)
        throws InterruptedException, ExecutionException {
        String name = Names.unique(what);
        NewTopic topic = new NewTopic(name, partitions, Target.replicationFactor()).configs(configs);
        admin.createTopics(List.of(topic)).all().get();
        awaitLeaders(admin, name, partitions);
        return name;
    }

    public static String create(Admin admin, String what, int partitions)
        throws InterruptedException, ExecutionException {
        return create(admin, what, partitions, Map.of());
    }

    /** A new topic, made with a short-lived admin client of its own. */
    public static String create(String what, int partitions, Map<String, String> configs)
        throws InterruptedException, ExecutionException {
        try (Admin admin = Clients.admin()) {
            return create(admin, what, partitions, configs);
        }
    }

    public static String create(String what, int partitions) throws InterruptedException, ExecutionException {
        return create(what, partitions, Map.of());
    }

    /**
     * Waits until the admin client sees every partition of {@code topic} with a leader and every replica
     * in sync: in the cluster, CreateTopics answers once ZooKeeper has the topic, before the controller
     * has told the brokers.
     */
    public static void awaitLeaders(Admin admin, String topic, int partitions) throws InterruptedException {
        describeLed(admin, topic, partitions);
    }

    /**
     * The first description of {@code topic} that shows every partition led and in sync. Each answer
     * may come from another broker, one the controller's UpdateMetadata has not reached yet, so a test
     * that asserts on leaders asserts on this description rather than describing again.
     */
    public static TopicDescription describeLed(Admin admin, String topic, int partitions)
        throws InterruptedException {
        TopicDescription[] found = new TopicDescription[1];
        Waits.until(Duration.ofSeconds(60), "leaders for every partition of " + topic, () -> {
            TopicDescription described;
            try {
                described = admin.describeTopics(List.of(topic)).allTopicNames().get().get(topic);
            } catch (ExecutionException unknownYet) {
                return false;
            }
            List<TopicPartitionInfo> each = described.partitions();
            found[0] = described;
            return each.size() == partitions && each.stream().allMatch(p -> p.leader() != null
                && p.isr().size() == p.replicas().size());
        });
        return found[0];
    }
}
