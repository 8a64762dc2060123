"""InitProducerId (key 22): a producer id and epoch for an idempotent or transactional producer.

Version notes:
- Without a transactional id every call gets a fresh producer id with epoch 0 (as Kafka does for
  idempotent producers, KIP-360's epoch bump applies only to transactional ids).
- With a transactional id the transaction coordinator answers (coordinator/txn_coordinator.py): a new
  producer id the first time, the epoch bumped on every later call (a new id once the epoch is
  exhausted), CONCURRENT_TRANSACTIONS while a previous instance's open transaction is being aborted,
  INVALID_TRANSACTION_TIMEOUT above `transaction.max.timeout.ms`.
- v2 flexible; v3 carries the caller's current id/epoch (KIP-360: a producer re-initialising after an
  error; a pair that is not the current one is fenced: PRODUCER_FENCED from v4, INVALID_PRODUCER_EPOCH
  before); v4-5 no wire change.
- v6 (KIP-939, two-phase commit; still marked unstable by Kafka 4.3, served here): `enable2Pc` makes the
  transaction wait for its external coordinator (never aborted by `transaction.timeout.ms`, whose
  bound `transaction.max.timeout.ms` then does not apply); it needs `transaction.two.phase.commit.enable`
  on the broker and, with an authorizer, TWO_PHASE_COMMIT on the transactional id, else
  TRANSACTIONAL_ID_AUTHORIZATION_FAILED. `keepPreparedTxn` keeps an ongoing transaction instead of
  aborting it: the answer's epoch is bumped (fencing the process that prepared it) and owns the
  transaction, to commit or abort with EndTxn; `ongoing_txn_producer_id/epoch` name the pair it had
  (-1 when no transaction was ongoing).
- With an authorizer (Kafka 3.x, KIP-679): an idempotent producer needs IDEMPOTENT_WRITE on the
  cluster or WRITE on at least one topic, else CLUSTER_AUTHORIZATION_FAILED; a transactional id needs
  WRITE on it, else TRANSACTIONAL_ID_AUTHORIZATION_FAILED.
- In a cluster the answer waits until the coordinator's `__transaction_state` record is on the ISR
  (coordinator/txn_log_replication.py).
"""

from __future__ import annotations

from odradek.handlers._common.authorization import authorize, authorize_cluster
from odradek.handlers._common.context import RequestContext
from odradek.handlers._common.coordinators import for_version, transaction_coordinator
from odradek.handlers._common.registry import handles
from odradek.protocol.api_keys import ApiKey
from odradek.protocol.error_codes import ErrorCode, KafkaError
from odradek.protocol.messages.init_producer_id import InitProducerIdRequest, InitProducerIdResponse
from odradek.security.acl import AclOperation, ResourceType


@handles(ApiKey.INIT_PRODUCER_ID, 0, 6)
async def handle_init_producer_id(
    request: InitProducerIdRequest, context: RequestContext
) -> InitProducerIdResponse:
    if request.transactional_id is not None:
        if not _may_use_transactional_id(context, request):
            return InitProducerIdResponse(
                error_code=ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
                producer_id=-1,
                producer_epoch=-1,
            )
        coordinator = transaction_coordinator(context)
        try:
            if request.keep_prepared_txn:
                answer = await coordinator.init_keeping_prepared_txn(
                    request.transactional_id,
                    request.transaction_timeout_ms,
                    request.producer_id,
                    request.producer_epoch,
                    two_phase_commit=request.enable2_pc,
                )
                return InitProducerIdResponse(
                    error_code=ErrorCode.NONE,
                    producer_id=answer.producer_id,
                    producer_epoch=answer.producer_epoch,
                    ongoing_txn_producer_id=answer.ongoing_txn_producer_id,
                    ongoing_txn_producer_epoch=answer.ongoing_txn_producer_epoch,
                )
            producer_id, epoch = await coordinator.init_producer_id(
                request.transactional_id,
                request.transaction_timeout_ms,
                request.producer_id,
                request.producer_epoch,
                two_phase_commit=request.enable2_pc,
            )
        except KafkaError as error:
            code = for_version(error.error_code, context.api_version, 4)
            return InitProducerIdResponse(error_code=code, producer_id=-1, producer_epoch=-1)
        return InitProducerIdResponse(
            error_code=ErrorCode.NONE, producer_id=producer_id, producer_epoch=epoch
        )
    if not _may_write_idempotently(context):
        return InitProducerIdResponse(
            error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED, producer_id=-1, producer_epoch=-1
        )
    producer_id = await context.services.producer_ids.generate()
    return InitProducerIdResponse(error_code=ErrorCode.NONE, producer_id=producer_id, producer_epoch=0)


def _may_write_idempotently(context: RequestContext) -> bool:
    authorizer = context.services.authorizer
    if authorizer is None or authorize_cluster(context, AclOperation.IDEMPOTENT_WRITE):
        return True
    return authorizer.authorize_by_resource_type(
        context.principal, context.client_host, AclOperation.WRITE, ResourceType.TOPIC
    )


def _may_use_transactional_id(context: RequestContext, request: InitProducerIdRequest) -> bool:
    """WRITE on the transactional id; for two-phase commit also the broker's consent and (KIP-939)
    TWO_PHASE_COMMIT on it."""
    assert request.transactional_id is not None
    name = request.transactional_id
    if not authorize(context, AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, name):
        return False
    if not request.enable2_pc:
        return True
    if not context.services.config.transaction_two_phase_commit_enable:
        return False
    return authorize(context, AclOperation.TWO_PHASE_COMMIT, ResourceType.TRANSACTIONAL_ID, name)
