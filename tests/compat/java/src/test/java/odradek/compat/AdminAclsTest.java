package odradek.compat;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.time.Duration;
import java.util.Collection;
import java.util.List;
import java.util.Set;

import odradek.compat.support.Clients;
import odradek.compat.support.Names;
import odradek.compat.support.Waits;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.common.acl.AccessControlEntry;
import org.apache.kafka.common.acl.AccessControlEntryFilter;
import org.apache.kafka.common.acl.AclBinding;
import org.apache.kafka.common.acl.AclBindingFilter;
import org.apache.kafka.common.acl.AclOperation;
import org.apache.kafka.common.acl.AclPermissionType;
import org.apache.kafka.common.resource.PatternType;
import org.apache.kafka.common.resource.ResourcePattern;
import org.apache.kafka.common.resource.ResourcePatternFilter;
import org.apache.kafka.common.resource.ResourceType;
import org.junit.jupiter.api.Test;

/**
 * createAcls, describeAcls and deleteAcls by the targets' super user (the PLAINTEXT principal of their
 * ACL authorizer, tests/support/java_security.py), as Kafka 3.9 in ZooKeeper mode answers. SecurityTest
 * has the refusals of principals not granted.
 */
class AdminAclsTest {

    @Test
    void aclsAreCreatedDescribedByFilterAndDeleted() throws Exception {
        String topic = Names.unique("acl");
        AclBinding read = new AclBinding(new ResourcePattern(ResourceType.TOPIC, topic, PatternType.LITERAL),
            new AccessControlEntry("User:alice", "*", AclOperation.READ, AclPermissionType.ALLOW));
        AclBinding prefixed = new AclBinding(new ResourcePattern(ResourceType.TOPIC, topic, PatternType.PREFIXED),
            new AccessControlEntry("User:bob", "*", AclOperation.WRITE, AclPermissionType.DENY));
        AclBindingFilter onTopic = new AclBindingFilter(
            new ResourcePatternFilter(ResourceType.TOPIC, topic, PatternType.ANY), AccessControlEntryFilter.ANY);
        try (Admin admin = Clients.admin()) {
            admin.createAcls(List.of(read, prefixed)).all().get();
            // In a cluster each broker learns a change through ZooKeeper: the describe may reach one that
            // has not yet (Kafka's brokers describe from their own cache too).
            Waits.until(Duration.ofSeconds(30), "both ACLs described",
                () -> Set.copyOf(describe(admin, onTopic)).equals(Set.of(read, prefixed)));
            AclBindingFilter onlyLiteral = new AclBindingFilter(
                new ResourcePatternFilter(ResourceType.TOPIC, topic, PatternType.LITERAL),
                AccessControlEntryFilter.ANY);
            assertEquals(List.of(read), List.copyOf(describe(admin, onlyLiteral)));
            // MATCH also takes wildcard ACLs other tests may hold: bob is this test's own.
            AclBindingFilter matching = new AclBindingFilter(
                new ResourcePatternFilter(ResourceType.TOPIC, topic + "-x", PatternType.MATCH),
                new AccessControlEntryFilter("User:bob", null, AclOperation.ANY, AclPermissionType.ANY));
            assertEquals(List.of(prefixed), List.copyOf(describe(admin, matching)), "the prefix matches");

            Collection<AclBinding> deleted = admin.deleteAcls(List.of(onTopic)).all().get();
            assertEquals(Set.of(read, prefixed), Set.copyOf(deleted));
            Waits.until(Duration.ofSeconds(30), "no ACL left on " + topic, () -> describe(admin, onTopic).isEmpty());
            assertEquals(List.of(), List.copyOf(admin.deleteAcls(List.of(onTopic)).all().get()),
                "deleting what is gone deletes nothing");
        }
    }

    private static Collection<AclBinding> describe(Admin admin, AclBindingFilter filter) throws Exception {
        return admin.describeAcls(filter).values().get();
    }
}
