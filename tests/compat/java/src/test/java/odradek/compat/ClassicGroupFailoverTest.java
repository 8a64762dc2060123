package odradek.compat;

import odradek.compat.support.GroupFailover;
import odradek.compat.support.Target;
import org.apache.kafka.clients.consumer.CooperativeStickyAssignor;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.parallel.Isolated;

/**
 * A classic consumer group (cooperative-sticky) consuming and committing while the broker coordinating
 * it is SIGKILLed (support/GroupFailover.java says what is asserted). Runs on the cluster only, alone,
 * and leaves every broker up and every ISR full.
 */
@Tag(Target.KILLS_BROKERS)
@Isolated
class ClassicGroupFailoverTest {

    @Test
    @Timeout(420)
    void aCooperativeStickyGroupMovesCoordinatorRebalancesAndCommitsAcrossTheCoordinatorsKill() throws Exception {
        GroupFailover.run("classic-coordinator-kill",
            "partition.assignment.strategy", CooperativeStickyAssignor.class.getName());
    }
}
