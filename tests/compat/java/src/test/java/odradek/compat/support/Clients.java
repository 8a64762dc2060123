package odradek.compat.support;

import java.util.HashMap;
import java.util.Map;
import java.util.Properties;

import org.apache.kafka.clients.CommonClientConfigs;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * Producers, consumers and admin clients on the target, with String keys and values and timeouts short
 * enough that a broker that never answers fails the test well inside JUnit's own timeout. Every other
 * setting is the client's default, as an application would have it, unless the test passes it.
 */
public final class Clients {
    /** delivery.timeout.ms and default.api.timeout.ms: long enough for a loaded 2-core machine. */
    public static final int API_TIMEOUT_MS = 30_000;

    private Clients() {
    }

    public static KafkaProducer<String, String> producer(Object... settings) {
        Properties props = common();
        props.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        props.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        props.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, API_TIMEOUT_MS);
        props.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, API_TIMEOUT_MS / 2);
        props.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, API_TIMEOUT_MS);
        props.putAll(pairs(settings));
        return new KafkaProducer<>(props);
    }

    public static KafkaConsumer<String, String> consumer(Object... settings) {
        Properties props = common();
        props.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        props.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        props.put(ConsumerConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, API_TIMEOUT_MS);
        props.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        props.putAll(pairs(settings));
        return new KafkaConsumer<>(props);
    }

    public static Admin admin(Object... settings) {
        Properties props = common();
        props.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, API_TIMEOUT_MS);
        props.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, API_TIMEOUT_MS / 2);
        props.putAll(pairs(settings));
        return Admin.create(props);
    }

    private static Properties common() {
        Properties props = new Properties();
        props.put(CommonClientConfigs.BOOTSTRAP_SERVERS_CONFIG, Target.bootstrap());
        return props;
    }

    /** "key", value, "key", value... as a map (so a call reads like the config it sets). */
    static Map<String, Object> pairs(Object... settings) {
        if (settings.length % 2 != 0) {
            throw new IllegalArgumentException("settings come in key, value pairs");
        }
        Map<String, Object> map = new HashMap<>();
        for (int i = 0; i < settings.length; i += 2) {
            map.put((String) settings[i], settings[i + 1]);
        }
        return map;
    }
}
