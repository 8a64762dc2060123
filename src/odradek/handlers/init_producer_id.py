"""InitProducerId (key 22): a producer id and epoch for an idempotent producer.

Version notes:
- Without a transactional id every call gets a fresh producer id with epoch 0 (as Kafka does for
  idempotent producers, KIP-360's epoch bump applies only to transactional ids).
- v2 flexible; v3 carries the caller's current id/epoch (used by transactional producers); v4-5 no
  wire change for this path. v6 (two-phase commit, unstable in Kafka 4.3) is not served.
- Transactional ids need the transaction coordinator, which odradek does not have yet: they are
  refused with TRANSACTIONAL_ID_AUTHORIZATION_FAILED (fatal in every client, see
  handlers/transactions.py), never answered with a made-up id. The response has no message field.
- With an authorizer (Kafka 3.x, KIP-679): an idempotent producer needs IDEMPOTENT_WRITE on the
  cluster or WRITE on at least one topic, else CLUSTER_AUTHORIZATION_FAILED; a transactional id needs
  WRITE on it (TRANSACTIONAL_ID_AUTHORIZATION_FAILED, the refusal's code either way).
"""

from __future__ import annotations

from odradek.handlers.authorization import authorize_cluster
from odradek.handlers.context import RequestContext
from odradek.handlers.registry import handles
from odradek.handlers.transactions import TRANSACTIONS_REFUSED
from odradek.protocol.api_keys import ApiKey
from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.messages.init_producer_id import InitProducerIdRequest, InitProducerIdResponse
from odradek.security.acl import AclOperation, ResourceType


@handles(ApiKey.INIT_PRODUCER_ID, 0, 5)
async def handle_init_producer_id(
    request: InitProducerIdRequest, context: RequestContext
) -> InitProducerIdResponse:
    if request.transactional_id is not None:
        return InitProducerIdResponse(error_code=TRANSACTIONS_REFUSED, producer_id=-1, producer_epoch=-1)
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
