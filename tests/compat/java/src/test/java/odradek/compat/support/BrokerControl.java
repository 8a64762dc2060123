package odradek.compat.support;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ListTopicsOptions;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.common.TopicPartitionInfo;
import org.junit.jupiter.api.Assumptions;

/**
 * SIGKILL a broker of the target and start it again, through the pytest side's control channel
 * ({@link Target#control()}, tests/support/broker_control.py). A class using it is tagged
 * {@link Target#KILLS_BROKERS} and {@code @Isolated}, and leaves the cluster whole ({@link #awaitWhole}).
 */
public final class BrokerControl {
    /** A restart waits for the broker to listen: a JVM broker on a loaded machine takes its time. */
    private static final Duration STEP_TIMEOUT = Duration.ofSeconds(150);
    /** How long the cluster may take to be whole again after a restart. */
    public static final Duration HEALING = Duration.ofSeconds(90);

    private final String base;
    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(10)).build();
    private final Set<Integer> killed = new HashSet<>();

    private BrokerControl(String base) {
        this.base = base;
    }

    /** The control channel, or an assumption failure (a skip) where there is none or too few brokers. */
    public static BrokerControl require() {
        Assumptions.assumeTrue(Target.brokers() >= 3 && Target.control() != null,
            "needs three brokers and the control channel that kills them (the cluster target)");
        return new BrokerControl(Target.control());
    }

    public void kill(int node) throws IOException, InterruptedException {
        step(node, "kill");
        killed.add(node);
    }

    public void restart(int node) throws IOException, InterruptedException {
        step(node, "restart");
        killed.remove(node);
    }

    /** What a test does to the brokers, which may throw. */
    @FunctionalInterface
    public interface Steps {
        void run() throws Exception;
    }

    /**
     * Runs {@code steps}, then, however they ended, starts every broker they killed and not restarted
     * and waits until the cluster is whole ({@link #awaitWhole}). A failure to heal is added to the
     * steps' own failure rather than hiding it.
     */
    public void runThenHeal(Steps steps) throws Exception {
        Throwable failure = null;
        try {
            steps.run();
        } catch (Exception | AssertionError e) {
            failure = e;
        }
        try {
            for (int node : List.copyOf(killed)) {
                restart(node);
            }
            try (Admin admin = Clients.admin()) {
                awaitWhole(admin);
            }
        } catch (Exception | AssertionError e) {
            if (failure == null) {
                throw e;
            }
            failure.addSuppressed(e);
        }
        if (failure instanceof Exception exception) {
            throw exception;
        }
        if (failure instanceof AssertionError error) {
            throw error;
        }
    }

    private void step(int node, String action) throws IOException, InterruptedException {
        HttpRequest request = HttpRequest.newBuilder(URI.create(base + "/brokers/" + node + "/" + action))
            .timeout(STEP_TIMEOUT).POST(HttpRequest.BodyPublishers.noBody()).build();
        HttpResponse<String> answer = http.send(request, HttpResponse.BodyHandlers.ofString());
        if (answer.statusCode() != 200) {
            throw new IllegalStateException(action + " broker " + node + ": " + answer.statusCode() + " "
                + answer.body());
        }
    }

    /**
     * The leader of {@code partition} of {@code topic} (of {@code partitions}), from the first description
     * that shows every partition led and in sync: a broker the controller has not told of a new topic
     * yet answers that it does not know it ({@link Topics#describeLed}).
     */
    public static int leader(Admin admin, String topic, int partitions, int partition) throws InterruptedException {
        return Topics.describeLed(admin, topic, partitions).partitions().get(partition).leader().id();
    }

    /**
     * Waits until every broker is registered again and every partition of every topic (the internal ones
     * too) has a leader and all its replicas in sync: what the next test may take for granted.
     */
    public static void awaitWhole(Admin admin) throws InterruptedException {
        Waits.until(HEALING, "every broker back and every partition's ISR full", () -> {
            if (admin.describeCluster().nodes().get().size() != Target.brokers()) {
                return false;
            }
            Set<String> names = admin.listTopics(new ListTopicsOptions().listInternal(true)).names().get();
            Map<String, TopicDescription> topics = admin.describeTopics(names).allTopicNames().get();
            for (TopicDescription topic : topics.values()) {
                for (TopicPartitionInfo p : topic.partitions()) {
                    if (p.leader() == null || p.isr().size() != p.replicas().size()) {
                        return false;
                    }
                }
            }
            return true;
        });
    }
}
