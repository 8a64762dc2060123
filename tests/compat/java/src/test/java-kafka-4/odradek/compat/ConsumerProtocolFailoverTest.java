package odradek.compat;

import odradek.compat.support.GroupFailover;
import odradek.compat.support.Target;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.parallel.Isolated;

/**
 * A KIP-848 consumer group ({@code group.protocol=consumer}) consuming and committing while the broker
 * coordinating it is SIGKILLed (support/GroupFailover.java says what is asserted). The 4.x line only
 * (3.9's KIP-848 client was a preview); Kafka 3.9 serves KIP-848 only in KRaft mode, so the reference
 * runs leave it out, as ConsumerProtocolTest.
 */
@Tag(Target.KILLS_BROKERS)
@Tag(Target.NOT_IN_KAFKA_ZOOKEEPER_MODE)
@Isolated
class ConsumerProtocolFailoverTest {

    @Test
    @Timeout(420)
    void aConsumerProtocolGroupMovesCoordinatorRebalancesAndCommitsAcrossTheCoordinatorsKill() throws Exception {
        GroupFailover.run("kip848-coordinator-kill", "group.protocol", "consumer");
    }
}
