package odradek.compat;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import java.util.stream.Collectors;

import odradek.compat.support.Clients;
import odradek.compat.support.Names;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ScramCredentialInfo;
import org.apache.kafka.clients.admin.ScramMechanism;
import org.apache.kafka.clients.admin.UserScramCredentialDeletion;
import org.apache.kafka.clients.admin.UserScramCredentialUpsertion;
import org.apache.kafka.clients.admin.UserScramCredentialsDescription;
import org.apache.kafka.common.errors.ResourceNotFoundException;
import org.apache.kafka.common.errors.UnacceptableCredentialException;
import org.junit.jupiter.api.Test;

/** describeUserScramCredentials and alterUserScramCredentials, as Kafka 3.9 in ZooKeeper mode answers. */
class AdminScramTest {

    @Test
    void credentialsAreUpsertedDescribedAndDeleted() throws Exception {
        String user = Names.unique("scram-user");
        try (Admin admin = Clients.admin()) {
            admin.alterUserScramCredentials(List.of(
                new UserScramCredentialUpsertion(user, new ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 8192),
                    "secret-256"),
                new UserScramCredentialUpsertion(user, new ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 4096),
                    "secret-512"))).all().get();
            assertEquals(Set.of(new ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 8192),
                new ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 4096)), described(admin, user));
            assertTrue(admin.describeUserScramCredentials().users().get().contains(user));

            admin.alterUserScramCredentials(List.of(
                new UserScramCredentialDeletion(user, ScramMechanism.SCRAM_SHA_256))).all().get();
            assertEquals(Set.of(new ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 4096)), described(admin, user));
            admin.alterUserScramCredentials(List.of(
                new UserScramCredentialDeletion(user, ScramMechanism.SCRAM_SHA_512))).all().get();
            assertFalse(admin.describeUserScramCredentials().users().get().contains(user));
            ExecutionException gone = assertThrows(ExecutionException.class,
                () -> admin.describeUserScramCredentials(List.of(user)).description(user).get());
            assertInstanceOf(ResourceNotFoundException.class, gone.getCause(), gone.toString());
        }
    }

    @Test
    void describingAnUnknownUserIsResourceNotFound() throws Exception {
        String user = Names.unique("no-such-user");
        try (Admin admin = Clients.admin()) {
            ExecutionException unknown = assertThrows(ExecutionException.class,
                () -> admin.describeUserScramCredentials(List.of(user)).description(user).get());
            assertInstanceOf(ResourceNotFoundException.class, unknown.getCause(), unknown.toString());
            assertFalse(admin.describeUserScramCredentials().users().get().contains(user));
        }
    }

    @Test
    void tooFewOrTooManyIterationsAreUnacceptableAndDeletingWhatIsNotThereIsResourceNotFound() throws Exception {
        String user = Names.unique("scram-refused");
        try (Admin admin = Clients.admin()) {
            for (int iterations : new int[] {4095, 16385}) {
                ExecutionException refused = assertThrows(ExecutionException.class,
                    () -> admin.alterUserScramCredentials(List.of(new UserScramCredentialUpsertion(user,
                        new ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, iterations), "pw"))).all().get());
                assertInstanceOf(UnacceptableCredentialException.class, refused.getCause(), refused.toString());
            }
            ExecutionException absent = assertThrows(ExecutionException.class,
                () -> admin.alterUserScramCredentials(List.of(
                    new UserScramCredentialDeletion(user, ScramMechanism.SCRAM_SHA_512))).all().get());
            assertInstanceOf(ResourceNotFoundException.class, absent.getCause(), absent.toString());
        }
    }

    private static Set<ScramCredentialInfo> described(Admin admin, String user) throws Exception {
        UserScramCredentialsDescription description =
            admin.describeUserScramCredentials(List.of(user)).description(user).get();
        assertEquals(user, description.name());
        return description.credentialInfos().stream().collect(Collectors.toSet());
    }
}
