package odradek.compat;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.Collection;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ExecutionException;

import odradek.compat.support.Clients;
import odradek.compat.support.Names;
import odradek.compat.support.Produce;
import odradek.compat.support.Topics;
import odradek.compat.support.Waits;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ProducerState;
import org.apache.kafka.clients.admin.TransactionDescription;
import org.apache.kafka.clients.admin.TransactionListing;
import org.apache.kafka.clients.admin.TransactionState;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.TransactionalIdNotFoundException;
import org.junit.jupiter.api.Test;

/** The AdminClient on transactions: listTransactions, describeTransactions, describeProducers. */
class AdminTransactionsTest {

    @Test
    void anOngoingTransactionIsListedAndDescribedThenCompletes() throws Exception {
        String topic = Topics.create("admin-txn", 1);
        String id = Names.unique("admin-txn");
        TopicPartition partition = new TopicPartition(topic, 0);
        try (Admin admin = Clients.admin();
             KafkaProducer<String, String> producer = Clients.producer("transactional.id", id,
                 "transaction.timeout.ms", 45_000)) {
            producer.initTransactions();
            producer.beginTransaction();
            long firstOffset = Produce.send(producer, topic, 0, "open", 2).get(0).offset();

            Collection<TransactionListing> listed = admin.listTransactions().all().get();
            TransactionListing listing = listed.stream().filter(t -> t.transactionalId().equals(id)).findFirst()
                .orElseThrow(() -> new AssertionError(id + " not among " + listed));
            assertEquals(TransactionState.ONGOING, listing.state());

            TransactionDescription ongoing = admin.describeTransactions(List.of(id)).description(id).get();
            assertEquals(TransactionState.ONGOING, ongoing.state());
            assertEquals(listing.producerId(), ongoing.producerId());
            assertEquals(45_000, ongoing.transactionTimeoutMs());
            assertTrue(ongoing.transactionStartTimeMs().isPresent());
            assertEquals(Set.of(partition), ongoing.topicPartitions());

            ProducerState state = admin.describeProducers(List.of(partition)).partitionResult(partition).get()
                .activeProducers().iterator().next();
            assertEquals(ongoing.producerId(), state.producerId());
            assertEquals(ongoing.producerEpoch(), state.producerEpoch());
            assertEquals(firstOffset, state.currentTransactionStartOffset().orElseThrow());

            producer.commitTransaction();
            // EndTxn is answered once PrepareCommit is written; CompleteCommit follows the markers.
            Waits.until(Duration.ofSeconds(30), "the transaction to complete", () -> {
                TransactionDescription after = admin.describeTransactions(List.of(id)).description(id).get();
                return after.state() == TransactionState.COMPLETE_COMMIT && after.topicPartitions().isEmpty();
            });
            assertTrue(admin.describeProducers(List.of(partition)).partitionResult(partition).get()
                .activeProducers().iterator().next().currentTransactionStartOffset().isEmpty());
        }
    }

    @Test
    void describingAnUnknownTransactionalIdIsTransactionalIdNotFound() throws Exception {
        String id = Names.unique("no-such-txn");
        try (Admin admin = Clients.admin()) {
            ExecutionException unknown = assertThrows(ExecutionException.class,
                () -> admin.describeTransactions(List.of(id)).description(id).get());
            assertInstanceOf(TransactionalIdNotFoundException.class, unknown.getCause(), unknown.toString());
        }
    }
}
