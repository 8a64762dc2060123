package odradek.compat.support;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;

import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;

/** Writing a test's records and waiting for their acknowledgements. */
public final class Produce {
    private Produce() {
    }

    /** Sends "{prefix}-0".."{prefix}-{count-1}" to one partition with an idempotent producer, all acknowledged. */
    public static List<RecordMetadata> values(String topic, int partition, String prefix, int count)
        throws InterruptedException, ExecutionException {
        try (KafkaProducer<String, String> producer = Clients.producer()) {
            return send(producer, topic, partition, prefix, count);
        }
    }

    /** As {@link #values} with a producer of the caller's (it is not flushed or closed). */
    public static List<RecordMetadata> send(KafkaProducer<String, String> producer, String topic, int partition,
                                            String prefix, int count)
        throws InterruptedException, ExecutionException {
        List<Future<RecordMetadata>> sent = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            sent.add(producer.send(new ProducerRecord<>(topic, partition, null, prefix + "-" + i)));
        }
        List<RecordMetadata> acknowledged = new ArrayList<>();
        for (Future<RecordMetadata> future : sent) {
            acknowledged.add(future.get());
        }
        return acknowledged;
    }

    /** "{prefix}-0".."{prefix}-{count-1}". */
    public static List<String> expected(String prefix, int count) {
        List<String> values = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            values.add(prefix + "-" + i);
        }
        return values;
    }
}
