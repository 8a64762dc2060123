package odradek.compat;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ExecutionException;

import odradek.compat.support.Clients;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.FeatureMetadata;
import org.apache.kafka.clients.admin.FeatureUpdate;
import org.apache.kafka.clients.admin.UpdateFeaturesOptions;
import org.apache.kafka.common.errors.InvalidRequestException;
import org.junit.jupiter.api.Test;

/**
 * describeFeatures and updateFeatures, as Kafka 3.9 in ZooKeeper mode answers: a ZooKeeper-mode broker
 * supports no feature flag (metadata.version and the rest are KRaft's), so none is finalized, at epoch 0,
 * and every update is refused.
 */
class AdminFeaturesTest {

    @Test
    void noFeatureIsSupportedOrFinalized() throws Exception {
        try (Admin admin = Clients.admin()) {
            FeatureMetadata features = admin.describeFeatures().featureMetadata().get();
            assertEquals(Map.of(), features.supportedFeatures(), features.toString());
            assertEquals(Map.of(), features.finalizedFeatures(), features.toString());
            assertEquals(Optional.of(0L), features.finalizedFeaturesEpoch(), features.toString());
        }
    }

    @Test
    void updatingAnyFeatureIsAnInvalidRequest() throws Exception {
        try (Admin admin = Clients.admin()) {
            for (String name : new String[] {"metadata.version", "group.version", "no.such.feature"}) {
                for (boolean validateOnly : new boolean[] {true, false}) {
                    ExecutionException refused = assertThrows(ExecutionException.class, () -> admin.updateFeatures(
                        Map.of(name, new FeatureUpdate((short) 1, FeatureUpdate.UpgradeType.UPGRADE)),
                        new UpdateFeaturesOptions().validateOnly(validateOnly)).all().get());
                    assertInstanceOf(InvalidRequestException.class, refused.getCause(), name + ": " + refused);
                }
            }
        }
    }
}
