package odradek.compat;

import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.List;
import java.util.concurrent.ExecutionException;

import odradek.compat.support.Clients;
import odradek.compat.support.Names;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.common.acl.AccessControlEntry;
import org.apache.kafka.common.acl.AclBinding;
import org.apache.kafka.common.acl.AclBindingFilter;
import org.apache.kafka.common.acl.AclOperation;
import org.apache.kafka.common.acl.AclPermissionType;
import org.apache.kafka.common.errors.SecurityDisabledException;
import org.apache.kafka.common.resource.PatternType;
import org.apache.kafka.common.resource.ResourcePattern;
import org.apache.kafka.common.resource.ResourceType;
import org.junit.jupiter.api.Test;

/** The ACL methods on brokers without an authorizer (the suite's targets): Kafka refuses each. */
class AdminAclsTest {

    @Test
    void createDescribeAndDeleteAclsWithoutAnAuthorizerAreSecurityDisabled() throws Exception {
        AclBinding binding = new AclBinding(
            new ResourcePattern(ResourceType.TOPIC, Names.unique("acl"), PatternType.LITERAL),
            new AccessControlEntry("User:alice", "*", AclOperation.READ, AclPermissionType.ALLOW));
        try (Admin admin = Clients.admin()) {
            ExecutionException created = assertThrows(ExecutionException.class,
                () -> admin.createAcls(List.of(binding)).all().get());
            assertInstanceOf(SecurityDisabledException.class, created.getCause(), created.toString());
            ExecutionException described = assertThrows(ExecutionException.class,
                () -> admin.describeAcls(AclBindingFilter.ANY).values().get());
            assertInstanceOf(SecurityDisabledException.class, described.getCause(), described.toString());
            ExecutionException deleted = assertThrows(ExecutionException.class,
                () -> admin.deleteAcls(List.of(binding.toFilter())).all().get());
            assertInstanceOf(SecurityDisabledException.class, deleted.getCause(), deleted.toString());
        }
    }
}
