package odradek.compat;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.ExecutionException;

import odradek.compat.support.Clients;
import odradek.compat.support.Consume;
import odradek.compat.support.Names;
import odradek.compat.support.Secured;
import odradek.compat.support.Target;
import odradek.compat.support.Topics;
import odradek.compat.support.Waits;
import org.apache.kafka.clients.CommonClientConfigs;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.CreateDelegationTokenOptions;
import org.apache.kafka.clients.admin.DescribeDelegationTokenOptions;
import org.apache.kafka.clients.admin.ExpireDelegationTokenOptions;
import org.apache.kafka.clients.admin.RenewDelegationTokenOptions;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.acl.AclOperation;
import org.apache.kafka.common.config.SaslConfigs;
import org.apache.kafka.common.errors.DelegationTokenOwnerMismatchException;
import org.apache.kafka.common.errors.SaslAuthenticationException;
import org.apache.kafka.common.errors.UnsupportedByAuthenticationException;
import org.apache.kafka.common.resource.ResourceType;
import org.apache.kafka.common.security.auth.KafkaPrincipal;
import org.apache.kafka.common.security.token.delegation.DelegationToken;
import org.apache.kafka.common.security.token.delegation.TokenInformation;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Delegation tokens (KIP-48) through the AdminClient, and clients that log in with one (SCRAM with
 * {@code tokenauth=true}) over the target's SASL_SSL listener. Every broker of the target has the
 * same {@code delegation.token.secret.key} (tests/support/java_security.py). A token reaches the other
 * brokers of a cluster a moment later (through ZooKeeper, in Kafka too): logins with it are waited for.
 */
class DelegationTokenTest {
    private static final String OWNER = Names.unique("token-owner");
    private static final String RENEWER = Names.unique("token-renewer");
    private static final String STRANGER = Names.unique("token-stranger");
    private static final String PASSWORD = "java-suite-password";
    private static final Duration TOKEN_REACHES_EVERY_BROKER = Duration.ofSeconds(30);

    @BeforeAll
    static void createUsers() throws Exception {
        try (Admin admin = Clients.admin()) {
            Secured.createUsers(admin, OWNER, PASSWORD, RENEWER, PASSWORD, STRANGER, PASSWORD);
        }
    }

    @Test
    void aTokenProducesAndConsumesAsItsOwner() throws Exception {
        String principal = "User:" + OWNER;
        String topic;
        String group = Names.unique("token-group");
        try (Admin admin = Clients.admin()) {
            topic = Topics.create(admin, "token", 1);
            admin.createAcls(List.of(
                Secured.allow(principal, ResourceType.TOPIC, topic, AclOperation.WRITE),
                Secured.allow(principal, ResourceType.TOPIC, topic, AclOperation.READ),
                Secured.allow(principal, ResourceType.GROUP, group, AclOperation.READ))).all().get();
        }
        DelegationToken token = create(OWNER);
        TokenInformation info = token.tokenInfo();
        assertEquals(new KafkaPrincipal("User", OWNER), info.owner());
        assertTrue(info.expiryTimestamp() > info.issueTimestamp(), info.toString());
        awaitLoginsEverywhere(token);
        // the grants reach the other brokers a moment later too; a refused send writes nothing
        Waits.until(TOKEN_REACHES_EVERY_BROKER, "the token producing to " + topic, () -> {
            try (KafkaProducer<String, String> producer = Clients.producer(withToken(token))) {
                producer.send(new ProducerRecord<>(topic, 0, "k", "with-a-token")).get();
                return true;
            }
        });
        try (KafkaConsumer<String, String> consumer = Clients.consumer(withToken(token,
                ConsumerConfig.GROUP_ID_CONFIG, group))) {
            consumer.subscribe(List.of(topic));
            List<String> values = Consume.values(Consume.records(consumer, 1));
            assertEquals("with-a-token", values.get(0));
        }
    }

    @Test
    void onlyTheOwnerOrARenewerRenewsAndExpiresAndOthersDoNotSeeIt() throws Exception {
        DelegationToken token = create(OWNER, new KafkaPrincipal("User", RENEWER));
        byte[] hmac = token.hmac();
        try (Admin renewer = Clients.admin(Secured.scram(RENEWER, PASSWORD));
             Admin stranger = Clients.admin(Secured.scram(STRANGER, PASSWORD));
             Admin owner = Clients.admin(Secured.scram(OWNER, PASSWORD))) {
            long expiry = renewer.renewDelegationToken(hmac,
                new RenewDelegationTokenOptions().renewTimePeriodMs(3_600_000)).expiryTimestamp().get();
            assertTrue(expiry > System.currentTimeMillis(), String.valueOf(expiry));
            ExecutionException mismatch = assertThrows(ExecutionException.class, () -> stranger
                .renewDelegationToken(hmac).expiryTimestamp().get());
            assertInstanceOf(DelegationTokenOwnerMismatchException.class, mismatch.getCause(), mismatch.toString());
            List<String> seenByStranger = ids(stranger.describeDelegationToken().delegationTokens().get());
            assertTrue(!seenByStranger.contains(token.tokenInfo().tokenId()), seenByStranger.toString());
            List<String> seenByRenewer = ids(renewer.describeDelegationToken(new DescribeDelegationTokenOptions()
                .owners(List.of(new KafkaPrincipal("User", OWNER)))).delegationTokens().get());
            assertTrue(seenByRenewer.contains(token.tokenInfo().tokenId()), seenByRenewer.toString());

            owner.expireDelegationToken(hmac, new ExpireDelegationTokenOptions().expiryTimePeriodMs(-1))
                .expiryTimestamp().get();
            List<String> after = ids(owner.describeDelegationToken().delegationTokens().get());
            assertTrue(!after.contains(token.tokenInfo().tokenId()), after.toString());
        }
        Waits.until(TOKEN_REACHES_EVERY_BROKER, "the expired token refused on every broker", () -> {
            for (String broker : Target.saslSslBootstrap().split(",")) {
                try (Admin admin = Clients.admin(withToken(token, CommonClientConfigs.BOOTSTRAP_SERVERS_CONFIG,
                        broker))) {
                    ExecutionException refused = assertThrows(ExecutionException.class,
                        () -> admin.describeCluster().nodes().get());
                    if (!(refused.getCause() instanceof SaslAuthenticationException)) {
                        return false;
                    }
                }
            }
            return true;
        });
    }

    @Test
    void aTokenSessionAndPlaintextMayNotAskForTokens() throws Exception {
        DelegationToken token = create(OWNER);
        awaitLoginsEverywhere(token);
        try (Admin admin = Clients.admin(withToken(token))) {
            ExecutionException refused = assertThrows(ExecutionException.class,
                () -> admin.createDelegationToken().delegationToken().get());
            assertInstanceOf(UnsupportedByAuthenticationException.class, refused.getCause(), refused.toString());
        }
        try (Admin admin = Clients.admin()) {
            ExecutionException refused = assertThrows(ExecutionException.class,
                () -> admin.describeDelegationToken().delegationTokens().get());
            assertInstanceOf(UnsupportedByAuthenticationException.class, refused.getCause(), refused.toString());
        }
    }

    /** Waits until {@code token} logs in on every broker (it reaches the others through ZooKeeper). */
    private static void awaitLoginsEverywhere(DelegationToken token) throws InterruptedException {
        Waits.until(TOKEN_REACHES_EVERY_BROKER, "the token logging in on every broker", () -> {
            for (String broker : Target.saslSslBootstrap().split(",")) {
                try (Admin admin = Clients.admin(withToken(token, CommonClientConfigs.BOOTSTRAP_SERVERS_CONFIG,
                        broker))) {
                    admin.describeCluster().nodes().get();
                }
            }
            return true;
        });
    }

    private static DelegationToken create(String user, KafkaPrincipal... renewers) throws Exception {
        try (Admin admin = Clients.admin(Secured.scram(user, PASSWORD))) {
            return admin.createDelegationToken(new CreateDelegationTokenOptions().renewers(List.of(renewers)))
                .delegationToken().get();
        }
    }

    /** Settings of a client logging in with {@code token} over SASL_SSL (ScramLoginModule, tokenauth). */
    private static Object[] withToken(DelegationToken token, Object... more) {
        Object[] settings = Secured.scram(token.tokenInfo().tokenId(), token.hmacAsBase64String(), more);
        for (int i = 0; i < settings.length; i += 2) {
            if (SaslConfigs.SASL_JAAS_CONFIG.equals(settings[i])) {
                settings[i + 1] = "org.apache.kafka.common.security.scram.ScramLoginModule required username=\""
                    + token.tokenInfo().tokenId() + "\" password=\"" + token.hmacAsBase64String()
                    + "\" tokenauth=\"true\";";
            }
        }
        return settings;
    }

    private static List<String> ids(List<DelegationToken> tokens) {
        return tokens.stream().map(token -> token.tokenInfo().tokenId()).toList();
    }
}
