package odradek.compat.load;

import java.io.IOException;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.Future;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.AuthorizationException;
import org.apache.kafka.common.errors.OutOfOrderSequenceException;
import org.apache.kafka.common.errors.ProducerFencedException;
import org.apache.kafka.common.errors.TimeoutException;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * Load clients of a mixed cluster (tests/support/mixed_load.py runs them; issue #27): not a test, a
 * program. {@code LoadClient STOP_FILE ROLE [+ ROLE]...} runs each role in a thread of one JVM (JVMs are
 * heavy on the test machine); each writes one line per outcome to its output file, flushed at once, so
 * what a killed or stopped client said is on disk. They end cleanly when STOP_FILE appears. The roles:
 *
 * <pre>
 * idempotent    BOOTSTRAP TOPIC PARTITIONS OUTPUT TAG RATE            -> "ack P OFFSET VALUE", "error TEXT"
 * transactional BOOTSTRAP TOPIC PARTITIONS OUTPUT TAG RATE TXN_ID K   -> "commit P VALUE", "abort P VALUE"
 * consume       BOOTSTRAP TOPIC GROUP OUTPUT                          -> "read P OFFSET VALUE", "committed P OFFSET"
 * </pre>
 * Values are TAG-i, record i going to partition i % PARTITIONS; every third transaction is aborted on
 * purpose. RATE is records a second at most (the machine is small and shared).
 */
public final class LoadClient {
    /** Long enough to ride out a leader's SIGKILL, its ZooKeeper session and a restart. */
    private static final int DELIVERY_TIMEOUT_MS = 120_000;

    private final PrintWriter out;
    private final Path stop;

    private LoadClient(Path output, Path stop) throws IOException {
        this.out = new PrintWriter(Files.newBufferedWriter(output, StandardCharsets.UTF_8), false);
        this.stop = stop;
    }

    public static void main(String[] args) throws Exception {
        Path stop = Path.of(args[0]);
        List<Thread> roles = new ArrayList<>();
        List<String> role = new ArrayList<>();
        for (int i = 1; i <= args.length; i++) {
            if (i < args.length && !args[i].equals("+")) {
                role.add(args[i]);
                continue;
            }
            String[] given = role.toArray(new String[0]);
            LoadClient client = new LoadClient(Path.of(given[4]), stop);
            roles.add(new Thread(() -> client.run(given), given[0] + "-" + given[4]));
            role.clear();
        }
        roles.forEach(Thread::start);
        for (Thread thread : roles) {
            thread.join();
        }
    }

    private void run(String[] args) {
        try {
            switch (args[0]) {
                case "idempotent" -> idempotent(args[1], args[2], Integer.parseInt(args[3]), args[5],
                        Integer.parseInt(args[6]));
                case "transactional" -> transactional(args[1], args[2], Integer.parseInt(args[3]),
                        args[5], Integer.parseInt(args[6]), args[7], Integer.parseInt(args[8]));
                case "consume" -> consume(args[1], args[2], args[3]);
                default -> throw new IllegalArgumentException("unknown role " + args[0]);
            }
            say("done");
        } catch (Exception failed) {
            say("error fatal " + failed);
        } finally {
            out.close();
        }
    }

    private synchronized void say(String line) {
        out.println(line);
        out.flush();
    }

    private boolean stopping() {
        return Files.exists(stop);
    }

    private static Properties producerSettings(String bootstrap) {
        Properties props = new Properties();
        props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        props.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        props.put(ProducerConfig.ACKS_CONFIG, "all");
        props.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, true);
        props.put(ProducerConfig.LINGER_MS_CONFIG, 5);
        props.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, DELIVERY_TIMEOUT_MS);
        props.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, 30_000);
        props.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, DELIVERY_TIMEOUT_MS);
        return props;
    }

    private static void pace(long started, long sent, int rate) throws InterruptedException {
        long due = started + sent * 1000L / rate;
        long now = System.currentTimeMillis();
        if (due > now) {
            Thread.sleep(due - now);
        }
    }

    private void idempotent(String bootstrap, String topic, int partitions, String tag, int rate)
            throws InterruptedException {
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(producerSettings(bootstrap))) {
            long started = System.currentTimeMillis();
            for (long i = 0; !stopping(); i++) {
                String value = tag + "-" + i;
                int partition = (int) (i % partitions);
                producer.send(new ProducerRecord<>(topic, partition, null, value), (metadata, error) -> {
                    if (error != null) {
                        say("error " + value + " " + error);
                    } else {
                        say("ack " + metadata.partition() + " " + metadata.offset() + " " + value);
                    }
                });
                pace(started, i + 1, rate);
            }
            producer.flush();
        }
    }

    private void transactional(String bootstrap, String topic, int partitions, String tag, int rate,
            String transactionalId, int perTransaction) throws InterruptedException {
        Properties props = producerSettings(bootstrap);
        props.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, transactionalId);
        props.put(ProducerConfig.TRANSACTION_TIMEOUT_CONFIG, DELIVERY_TIMEOUT_MS);
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(props)) {
            producer.initTransactions();
            long started = System.currentTimeMillis();
            long i = 0;
            for (long transaction = 0; !stopping(); transaction++) {
                boolean abort = transaction % 3 == 2;
                List<String> values = new ArrayList<>();
                List<Future<RecordMetadata>> sent = new ArrayList<>();
                try {
                    producer.beginTransaction();
                    for (int n = 0; n < perTransaction; n++, i++) {
                        String value = tag + "-" + i;
                        values.add(value);
                        sent.add(producer.send(new ProducerRecord<>(topic, (int) (i % partitions), null, value)));
                        pace(started, i + 1, rate);
                    }
                    if (abort) {
                        producer.abortTransaction();
                    } else {
                        commit(producer);
                    }
                } catch (ProducerFencedException | OutOfOrderSequenceException | AuthorizationException fatal) {
                    say("error fatal " + fatal);
                    return;
                } catch (KafkaException abortable) {
                    say("error abortable " + abortable);
                    abort = true;
                    producer.abortTransaction();
                }
                String outcome = abort ? "abort " : "commit ";
                for (int n = 0; n < values.size(); n++) {
                    say(outcome + partitionOf(values.get(n), partitions) + " " + values.get(n));
                }
            }
        }
    }

    /** A commit that timed out is asked again (KIP-691 allows it): its outcome is not known until then. */
    private void commit(KafkaProducer<String, String> producer) {
        while (true) {
            try {
                producer.commitTransaction();
                return;
            } catch (TimeoutException timedOut) {
                say("error commit timed out, again: " + timedOut);
            }
        }
    }

    private static int partitionOf(String value, int partitions) {
        return (int) (Long.parseLong(value.substring(value.lastIndexOf('-') + 1)) % partitions);
    }

    private void consume(String bootstrap, String topic, String group) {
        Properties props = new Properties();
        props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        props.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        props.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        props.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
        props.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        props.put(ConsumerConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, 60_000);
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(props)) {
            consumer.subscribe(List.of(topic));
            while (!stopping()) {
                ConsumerRecords<String, String> records = consumer.poll(Duration.ofMillis(200));
                for (ConsumerRecord<String, String> record : records) {
                    say("read " + record.partition() + " " + record.offset() + " " + record.value());
                }
                if (records.isEmpty()) {
                    continue;
                }
                Map<TopicPartition, OffsetAndMetadata> positions = new java.util.HashMap<>();
                for (TopicPartition partition : records.partitions()) {
                    List<ConsumerRecord<String, String>> of = records.records(partition);
                    positions.put(partition, new OffsetAndMetadata(of.get(of.size() - 1).offset() + 1));
                }
                try {
                    consumer.commitSync(positions);
                    positions.forEach((p, o) -> say("committed " + p.partition() + " " + o.offset()));
                } catch (KafkaException failed) {
                    // a rebalance or a coordinator moving: the next poll carries on from what was committed
                    say("error commit " + failed);
                }
            }
        }
    }
}
