package odradek.compat.support;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.util.Properties;

import org.apache.kafka.clients.producer.KafkaProducer;

/**
 * The brokers under test and the client line running against them, as the pytest side passes them
 * (tests/support/java_suite.py): {@code -Dodradek.bootstrap=host:port,...} and {@code -Dodradek.brokers=N}.
 */
public final class Target {
    /**
     * A tag on what Kafka 3.9 serves only in KRaft mode: the runs against Apache Kafka in ZooKeeper mode
     * leave it out (tests/support/java_suite.py names it too).
     */
    public static final String NOT_IN_KAFKA_ZOOKEEPER_MODE = "not-in-kafka-zookeeper-mode";
    /**
     * A tag on the classes that SIGKILL brokers ({@link BrokerControl}): the pytest side runs them after
     * every other class, one client line after the other (tests/support/java_suite.py names it too).
     */
    public static final String KILLS_BROKERS = "kills-brokers";

    private Target() {
    }

    /** bootstrap.servers of the brokers under test. */
    public static String bootstrap() {
        String servers = System.getProperty("odradek.bootstrap");
        if (servers == null || servers.isBlank()) {
            throw new IllegalStateException("-Dodradek.bootstrap is not set: run the suite through pytest "
                + "(tests/compat/java/test_java_clients.py) or pass it by hand (docs/testing.md)");
        }
        return servers;
    }

    /**
     * Whether the brokers are odradek ({@code -Dodradek.broker=odradek}, the default) rather than Apache
     * Kafka 3.9 (the reference runs). odradek also serves the newer versions of some APIs that Kafka
     * 4.x added, and a 4.x client uses them: where a test's answer depends on that, it asks here.
     */
    public static boolean isOdradek() {
        return System.getProperty("odradek.broker", "odradek").equals("odradek");
    }

    /** bootstrap.servers of the brokers' SASL_SSL listeners (SCRAM-SHA-512 users). */
    public static String saslSslBootstrap() {
        return required("odradek.sasl.ssl.bootstrap");
    }

    /** bootstrap.servers of the brokers' SSL listeners, which require a client certificate. */
    public static String sslBootstrap() {
        return required("odradek.ssl.bootstrap");
    }

    /** The PKCS12 trust store holding the CA of the brokers' certificates. */
    public static String trustStore() {
        return required("odradek.ssl.truststore");
    }

    /** The PKCS12 key store holding the client certificate the brokers trust. */
    public static String keyStore() {
        return required("odradek.ssl.keystore");
    }

    /** The password of both stores. */
    public static String storePassword() {
        return required("odradek.ssl.password");
    }

    private static String required(String property) {
        String value = System.getProperty(property);
        if (value == null || value.isBlank()) {
            throw new IllegalStateException("-D" + property + " is not set: run the suite through pytest "
                + "(tests/support/java_suite.py passes it with the secured listeners it starts)");
        }
        return value;
    }

    /**
     * The base URL of the control channel that kills and restarts the target's brokers
     * ({@code -Dodradek.control}, tests/support/broker_control.py), or null: a single node has none.
     */
    public static String control() {
        String url = System.getProperty("odradek.control");
        return url == null || url.isBlank() ? null : url;
    }

    /**
     * The broker's metrics endpoint ({@code -Dodradek.metrics}, http://host:port/metrics), where odradek
     * serves the metrics clients push (KIP-714), or null: the other targets are not given one.
     */
    public static String metrics() {
        String url = System.getProperty("odradek.metrics");
        return url == null || url.isBlank() ? null : url;
    }

    /** How many brokers the target has: 1 for a single node, 3 for the ZooKeeper cluster. */
    public static int brokers() {
        return Integer.getInteger("odradek.brokers", 1);
    }

    /** The replication factor the tests give their topics: every broker holds every partition. */
    public static short replicationFactor() {
        return (short) Math.min(brokers(), 3);
    }

    /** The kafka-clients version on the class path, e.g. "4.4.0". */
    public static String clientVersion() {
        // The jar's own version file (what the clients log at start-up; the class that reads it moved
        // to an internal package in 4.x).
        try (InputStream in = KafkaProducer.class.getResourceAsStream("/kafka/kafka-version.properties")) {
            Properties version = new Properties();
            version.load(in);
            return version.getProperty("version");
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** The kafka-clients major version: 3 or 4. */
    public static int clientMajor() {
        return Integer.parseInt(clientVersion().split("\\.")[0]);
    }
}
