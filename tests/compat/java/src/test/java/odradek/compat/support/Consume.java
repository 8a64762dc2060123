package odradek.compat.support;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import org.apache.kafka.clients.consumer.Consumer;
import org.apache.kafka.clients.consumer.ConsumerRecord;

/** Polling a consumer until it has read what a test expects. */
public final class Consume {
    /** How long a test waits for records it knows are there. */
    public static final Duration PATIENCE = Duration.ofSeconds(30);

    private Consume() {
    }

    /** Polls until {@code count} records have come (failing after PATIENCE); returns exactly those. */
    public static <K, V> List<ConsumerRecord<K, V>> records(Consumer<K, V> consumer, int count) {
        List<ConsumerRecord<K, V>> read = new ArrayList<>();
        long deadline = System.nanoTime() + PATIENCE.toNanos();
        while (read.size() < count) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("read " + read.size() + " of " + count + " records within "
                    + PATIENCE.toSeconds() + " s: " + read);
            }
            consumer.poll(Duration.ofMillis(200)).forEach(read::add);
        }
        if (read.size() > count) {
            throw new AssertionError("expected " + count + " records, read " + read.size() + ": " + read);
        }
        return read;
    }

    /** The values of {@code records}, in order. */
    public static <K, V> List<V> values(List<ConsumerRecord<K, V>> records) {
        return records.stream().map(ConsumerRecord::value).toList();
    }
}
