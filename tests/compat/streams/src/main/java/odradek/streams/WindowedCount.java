package odradek.streams;

import java.time.Duration;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.kstream.TimeWindows;

/**
 * One instance of a Kafka Streams application: the records of the input topic (any key, a value naming
 * what to count) re-keyed by their value, so through a repartition topic, and counted per value in
 * tumbling event-time windows, in a windowed state store with its changelog; every update of a count
 * goes to the output topic as key {@code <value>@<window start ms>}, value the count in decimal.
 *
 * <p>Caching is off, so each input record makes exactly one update: the committed output of a
 * (value, window) is then 1, 2, ..., n, once each, which is what the test checks. The grace period is
 * long (an hour) so that no record is dropped as late, whatever order the repartition gives them.
 *
 * <p>Arguments: bootstrap servers, application id, state directory, input topic, output topic, window
 * size in ms. Runs until SIGTERM (a clean close) or SIGKILL; prints "RUNNING" once, on its first move
 * to RUNNING, and exits 1 if the application ends in ERROR.
 */
public final class WindowedCount {
    private WindowedCount() {}

    public static void main(final String[] args) throws InterruptedException {
        if (args.length != 6) {
            System.err.println("usage: WindowedCount BOOTSTRAP APPLICATION_ID STATE_DIR INPUT OUTPUT WINDOW_MS");
            System.exit(2);
        }
        final KafkaStreams streams = new KafkaStreams(
                topology(args[3], args[4], Duration.ofMillis(Long.parseLong(args[5]))),
                settings(args[0], args[1], args[2]));
        final CountDownLatch done = new CountDownLatch(1);
        final boolean[] failed = {false};
        final boolean[] announced = {false};
        streams.setStateListener((now, before) -> {
            if (now == KafkaStreams.State.RUNNING && !announced[0]) {
                announced[0] = true;
                System.out.println("RUNNING");
                System.out.flush();
            }
            if (now == KafkaStreams.State.ERROR) {
                failed[0] = true;
            }
            if (now == KafkaStreams.State.ERROR || now == KafkaStreams.State.NOT_RUNNING) {
                done.countDown();
            }
        });
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            streams.close(Duration.ofSeconds(30));
            done.countDown();
        }));
        streams.start();
        done.await();
        if (failed[0]) {
            System.err.println("the application ended in ERROR");
            Runtime.getRuntime().halt(1);
        }
    }

    static Topology topology(final String input, final String output, final Duration window) {
        final StreamsBuilder builder = new StreamsBuilder();
        builder.stream(input, Consumed.with(Serdes.String(), Serdes.String()))
                .groupBy((key, value) -> value, Grouped.with("by-value", Serdes.String(), Serdes.String()))
                .windowedBy(TimeWindows.ofSizeAndGrace(window, Duration.ofHours(1)))
                .count(Materialized.as("counts"))
                .toStream()
                .map((windowed, count) -> KeyValue.pair(
                        windowed.key() + "@" + windowed.window().start(), Long.toString(count)))
                .to(output, Produced.with(Serdes.String(), Serdes.String()));
        return builder.build();
    }

    static Properties settings(final String bootstrap, final String applicationId, final String stateDir) {
        final Properties settings = new Properties();
        settings.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        settings.put(StreamsConfig.APPLICATION_ID_CONFIG, applicationId);
        settings.put(StreamsConfig.STATE_DIR_CONFIG, stateDir);
        settings.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.EXACTLY_ONCE_V2);
        // the changelog and repartition topics Streams creates
        settings.put(StreamsConfig.REPLICATION_FACTOR_CONFIG, 3);
        settings.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, 1);
        settings.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, 0);
        // a killed instance's tasks move to the other within seconds, not the default 45
        settings.put(StreamsConfig.mainConsumerPrefix(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG), 6000);
        settings.put(StreamsConfig.mainConsumerPrefix(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG), 1500);
        return settings;
    }
}
