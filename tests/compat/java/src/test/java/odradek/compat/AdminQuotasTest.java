package odradek.compat;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;

import odradek.compat.support.Clients;
import odradek.compat.support.Names;
import odradek.compat.support.Target;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterClientQuotasOptions;
import org.apache.kafka.common.errors.InvalidRequestException;
import org.apache.kafka.common.quota.ClientQuotaAlteration;
import org.apache.kafka.common.quota.ClientQuotaEntity;
import org.apache.kafka.common.quota.ClientQuotaFilter;
import org.apache.kafka.common.quota.ClientQuotaFilterComponent;
import org.junit.jupiter.api.Test;

/** describeClientQuotas and alterClientQuotas, as Kafka 3.9 in ZooKeeper mode answers. */
class AdminQuotasTest {

    @Test
    void quotasOfAUserAClientIdAndBothAreSetDescribedByEachMatchKindAndRemoved() throws Exception {
        String user = Names.unique("quota-user");
        String client = Names.unique("quota-client");
        ClientQuotaEntity ofUser = entity(ClientQuotaEntity.USER, user);
        ClientQuotaEntity ofClient = entity(ClientQuotaEntity.CLIENT_ID, client);
        ClientQuotaEntity ofBoth = entity(ClientQuotaEntity.USER, user, ClientQuotaEntity.CLIENT_ID, client);
        try (Admin admin = Clients.admin()) {
            admin.alterClientQuotas(List.of(
                set(ofUser, "producer_byte_rate", 1024.0),
                set(ofClient, "consumer_byte_rate", 2048.0),
                set(ofBoth, "request_percentage", 50.0))).all().get();

            ClientQuotaFilterComponent exactUser = ClientQuotaFilterComponent.ofEntity(ClientQuotaEntity.USER, user);
            ClientQuotaFilterComponent exactClient =
                ClientQuotaFilterComponent.ofEntity(ClientQuotaEntity.CLIENT_ID, client);
            assertEquals(Map.of(ofUser, Map.of("producer_byte_rate", 1024.0)),
                describe(admin, ClientQuotaFilter.containsOnly(List.of(exactUser))));
            assertEquals(Map.of(ofClient, Map.of("consumer_byte_rate", 2048.0)),
                describe(admin, ClientQuotaFilter.containsOnly(List.of(exactClient))));
            assertEquals(Map.of(ofBoth, Map.of("request_percentage", 50.0)),
                describe(admin, ClientQuotaFilter.containsOnly(List.of(exactUser, exactClient))));
            assertEquals(Map.of(ofUser, Map.of("producer_byte_rate", 1024.0),
                    ofBoth, Map.of("request_percentage", 50.0)),
                describe(admin, ClientQuotaFilter.contains(List.of(exactUser))), "user, and user with any client");
            Map<ClientQuotaEntity, Map<String, Double>> anyClientOfUser = describe(admin, ClientQuotaFilter.contains(
                List.of(exactUser, ClientQuotaFilterComponent.ofEntityType(ClientQuotaEntity.CLIENT_ID))));
            assertEquals(Map.of(ofBoth, Map.of("request_percentage", 50.0)), anyClientOfUser);
            assertEquals(Map.of(ofUser, Map.of("producer_byte_rate", 1024.0),
                    ofClient, Map.of("consumer_byte_rate", 2048.0), ofBoth, Map.of("request_percentage", 50.0)),
                ours(describe(admin, ClientQuotaFilter.all()), user, client));

            admin.alterClientQuotas(List.of(
                remove(ofUser, "producer_byte_rate"),
                remove(ofClient, "consumer_byte_rate"),
                remove(ofBoth, "request_percentage"))).all().get();
            assertEquals(Map.of(), ours(describe(admin, ClientQuotaFilter.all()), user, client));
        }
    }

    @Test
    void defaultQuotasAreTheirOwnEntitiesAndMatchedByDefaultComponents() throws Exception {
        // The two lines run side by side, and each default is one ZooKeeper node that Kafka rewrites whole:
        // each line sets a default of its own (the user's on the 4.x line, the client id's on 3.9's).
        String type = Target.clientMajor() == 4 ? ClientQuotaEntity.USER : ClientQuotaEntity.CLIENT_ID;
        ClientQuotaEntity byDefault = entity(type, null);
        try (Admin admin = Clients.admin()) {
            admin.alterClientQuotas(List.of(set(byDefault, "producer_byte_rate", 4096.0))).all().get();
            try {
                Map<ClientQuotaEntity, Map<String, Double>> found = describe(admin,
                    ClientQuotaFilter.containsOnly(List.of(ClientQuotaFilterComponent.ofDefaultEntity(type))));
                assertEquals(Map.of(byDefault, Map.of("producer_byte_rate", 4096.0)), found);
            } finally {
                admin.alterClientQuotas(List.of(remove(byDefault, "producer_byte_rate"))).all().get();
            }
            assertFalse(describe(admin, ClientQuotaFilter.all()).containsKey(byDefault));
        }
    }

    @Test
    void validateOnlyChangesNothingAndAnUnknownKeyOrEntityIsInvalidRequest() throws Exception {
        ClientQuotaEntity ofUser = entity(ClientQuotaEntity.USER, Names.unique("quota-validate"));
        try (Admin admin = Clients.admin()) {
            admin.alterClientQuotas(List.of(set(ofUser, "producer_byte_rate", 1.0)),
                new AlterClientQuotasOptions().validateOnly(true)).all().get();
            assertFalse(describe(admin, ClientQuotaFilter.all()).containsKey(ofUser));

            ExecutionException unknownKey = assertThrows(ExecutionException.class,
                () -> admin.alterClientQuotas(List.of(set(ofUser, "no_such_quota", 1.0))).all().get());
            assertInstanceOf(InvalidRequestException.class, unknownKey.getCause(), unknownKey.toString());
            ExecutionException notAnInteger = assertThrows(ExecutionException.class,
                () -> admin.alterClientQuotas(List.of(set(ofUser, "producer_byte_rate", 1.5))).all().get());
            assertInstanceOf(InvalidRequestException.class, notAnInteger.getCause(), notAnInteger.toString());
            ExecutionException noEntity = assertThrows(ExecutionException.class,
                () -> admin.alterClientQuotas(List.of(set(new ClientQuotaEntity(Map.of()), "producer_byte_rate",
                    1.0))).all().get());
            assertInstanceOf(InvalidRequestException.class, noEntity.getCause(), noEntity.toString());
            assertFalse(describe(admin, ClientQuotaFilter.all()).containsKey(ofUser));
        }
    }

    private static ClientQuotaEntity entity(String... typeAndName) {
        Map<String, String> entries = new HashMap<>();
        for (int i = 0; i < typeAndName.length; i += 2) {
            entries.put(typeAndName[i], typeAndName[i + 1]);
        }
        return new ClientQuotaEntity(entries);
    }

    private static ClientQuotaAlteration set(ClientQuotaEntity entity, String key, double value) {
        return new ClientQuotaAlteration(entity, List.of(new ClientQuotaAlteration.Op(key, value)));
    }

    private static ClientQuotaAlteration remove(ClientQuotaEntity entity, String key) {
        return new ClientQuotaAlteration(entity, List.of(new ClientQuotaAlteration.Op(key, null)));
    }

    private static Map<ClientQuotaEntity, Map<String, Double>> describe(Admin admin, ClientQuotaFilter filter)
        throws Exception {
        return admin.describeClientQuotas(filter).entities().get();
    }

    /** The entities among {@code all} that name {@code user} or {@code client}: other tests set quotas too. */
    private static Map<ClientQuotaEntity, Map<String, Double>> ours(Map<ClientQuotaEntity, Map<String, Double>> all,
                                                                   String user, String client) {
        Map<ClientQuotaEntity, Map<String, Double>> mine = new HashMap<>();
        all.forEach((entity, quotas) -> {
            if (entity.entries().containsValue(user) || entity.entries().containsValue(client)) {
                mine.put(entity, quotas);
            }
        });
        return mine;
    }
}
