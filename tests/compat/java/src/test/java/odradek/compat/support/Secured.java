package odradek.compat.support;

import java.io.FileInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.security.GeneralSecurityException;
import java.security.KeyStore;
import java.security.cert.X509Certificate;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;

import org.apache.kafka.clients.CommonClientConfigs;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ScramCredentialInfo;
import org.apache.kafka.clients.admin.ScramMechanism;
import org.apache.kafka.clients.admin.UserScramCredentialUpsertion;
import org.apache.kafka.common.acl.AccessControlEntry;
import org.apache.kafka.common.acl.AclBinding;
import org.apache.kafka.common.acl.AclOperation;
import org.apache.kafka.common.acl.AclPermissionType;
import org.apache.kafka.common.config.SaslConfigs;
import org.apache.kafka.common.config.SslConfigs;
import org.apache.kafka.common.resource.PatternType;
import org.apache.kafka.common.resource.ResourcePattern;
import org.apache.kafka.common.resource.ResourceType;

/**
 * Client settings for the target's secured listeners (support/Target.java names them), SCRAM users
 * and ACLs made over PLAINTEXT, whose principal is a super user of the target.
 */
public final class Secured {
    public static final String MECHANISM = "SCRAM-SHA-512";

    private Secured() {
    }

    /** Settings of a client logging in as {@code user} with SCRAM-SHA-512 over SASL_SSL. */
    public static Object[] scram(String user, String password, Object... more) {
        return concat(new Object[] {
            CommonClientConfigs.BOOTSTRAP_SERVERS_CONFIG, Target.saslSslBootstrap(),
            CommonClientConfigs.SECURITY_PROTOCOL_CONFIG, "SASL_SSL",
            SaslConfigs.SASL_MECHANISM, MECHANISM,
            SaslConfigs.SASL_JAAS_CONFIG, "org.apache.kafka.common.security.scram.ScramLoginModule required "
                + "username=\"" + user + "\" password=\"" + password + "\";",
        }, trusting(), more);
    }

    /** Settings of a client presenting the target's client certificate on the mutual-TLS listener. */
    public static Object[] certificate(Object... more) {
        return concat(new Object[] {
            CommonClientConfigs.BOOTSTRAP_SERVERS_CONFIG, Target.sslBootstrap(),
            CommonClientConfigs.SECURITY_PROTOCOL_CONFIG, "SSL",
            SslConfigs.SSL_KEYSTORE_TYPE_CONFIG, "PKCS12",
            SslConfigs.SSL_KEYSTORE_LOCATION_CONFIG, Target.keyStore(),
            SslConfigs.SSL_KEYSTORE_PASSWORD_CONFIG, Target.storePassword(),
        }, trusting(), more);
    }

    /** Settings of a client on the mutual-TLS listener with no certificate of its own. */
    public static Object[] noCertificate(Object... more) {
        return concat(new Object[] {
            CommonClientConfigs.BOOTSTRAP_SERVERS_CONFIG, Target.sslBootstrap(),
            CommonClientConfigs.SECURITY_PROTOCOL_CONFIG, "SSL",
        }, trusting(), more);
    }

    /** The subject of the client certificate as Java writes it (RFC 2253): the mutual-TLS principal's name. */
    public static String certificateSubject() throws IOException, GeneralSecurityException {
        KeyStore store = KeyStore.getInstance("PKCS12");
        try (InputStream in = new FileInputStream(Target.keyStore())) {
            store.load(in, Target.storePassword().toCharArray());
        }
        for (String alias : Collections.list(store.aliases())) {
            if (store.getCertificate(alias) instanceof X509Certificate certificate) {
                return certificate.getSubjectX500Principal().getName();
            }
        }
        throw new IllegalStateException(Target.keyStore() + " holds no certificate");
    }

    /** Creates SCRAM-SHA-512 {@code users} (name, password, name, password...) and waits until each logs in. */
    public static void createUsers(Admin admin, String... users) throws Exception {
        List<UserScramCredentialUpsertion> upsertions = new ArrayList<>();
        for (int i = 0; i < users.length; i += 2) {
            upsertions.add(new UserScramCredentialUpsertion(users[i],
                new ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 4096), users[i + 1]));
        }
        admin.alterUserScramCredentials(new ArrayList<>(upsertions)).all().get();
        // Each broker learns a new credential from ZooKeeper a moment later (in Kafka too).
        for (int i = 0; i < users.length; i += 2) {
            String user = users[i];
            String password = users[i + 1];
            Waits.until(Duration.ofSeconds(30), user + " logging in on every broker", () -> {
                for (String broker : Target.saslSslBootstrap().split(",")) {
                    try (Admin own = Clients.admin(scramAt(broker, user, password))) {
                        own.describeCluster().nodes().get();
                    }
                }
                return true;
            });
        }
    }

    private static Object[] scramAt(String broker, String user, String password) {
        return concat(scram(user, password), new Object[] {
            CommonClientConfigs.BOOTSTRAP_SERVERS_CONFIG, broker,
        });
    }

    /** An ACL allowing {@code principal} {@code operation} on the resource named {@code name}. */
    public static AclBinding allow(String principal, ResourceType type, String name, AclOperation operation) {
        return new AclBinding(new ResourcePattern(type, name, PatternType.LITERAL),
            new AccessControlEntry(principal, "*", operation, AclPermissionType.ALLOW));
    }

    private static Object[] trusting() {
        return new Object[] {
            SslConfigs.SSL_TRUSTSTORE_TYPE_CONFIG, "PKCS12",
            SslConfigs.SSL_TRUSTSTORE_LOCATION_CONFIG, Target.trustStore(),
            SslConfigs.SSL_TRUSTSTORE_PASSWORD_CONFIG, Target.storePassword(),
        };
    }

    private static Object[] concat(Object[]... parts) {
        return Arrays.stream(parts).flatMap(Arrays::stream).toArray();
    }
}
