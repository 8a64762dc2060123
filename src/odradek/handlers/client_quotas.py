"""DescribeClientQuotas (key 48) and AlterClientQuotas (key 49): user and client-id quotas.

Version notes:
- v0 of both; v1 is the flexible version of the same fields. Quota values are doubles on the wire.
- Describe takes filter components (an entity type with match type EXACT name, DEFAULT or SPECIFIED,
  i.e. any name) and `strict` (only entities with no other parts). As Kafka's ZkAdminManager: an empty
  entity type or the same type twice is INVALID_REQUEST, a type other than user, client-id and ip
  UNSUPPORTED_VERSION, ip with user or client-id INVALID_REQUEST; answered are the entities with at
  least one quota.
- Alter applies each entry on its own: an entity that is empty, has an empty name, names an unknown
  type, an ip with a user or client id, or an ip that is no address and does not resolve, or an op with
  a key the entity does not have (users and client ids: producer_byte_rate, consumer_byte_rate,
  request_percentage; ips: connection_creation_rate), a value that is not positive (a connection rate
  may be 0), or a fractional byte or connection rate, is INVALID_REQUEST with nothing of it changed.
  Removing a key is always accepted. validate_only checks and changes nothing. Changes are persisted
  (the log dir, or ZooKeeper) before the answer; an entry whose change cannot be stored (a failing disk,
  ZooKeeper unreachable) answers UNKNOWN_SERVER_ERROR, logged, and the others still apply.
- With an authorizer: Describe needs DESCRIBE_CONFIGS on the cluster, Alter ALTER_CONFIGS on it, else
  CLUSTER_AUTHORIZATION_FAILED (Describe: top level; Alter: every entry).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Final

from odradek.handlers._common.authorization import authorize_cluster
from odradek.handlers._common.context import RequestContext
from odradek.handlers._common.registry import handles
from odradek.partition.errors import resource_failure
from odradek.protocol.api_keys import ApiKey
from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.messages.alter_client_quotas import (
    AlterClientQuotasRequest,
    AlterClientQuotasResponse,
    EntryData,
    EntryDataResult,
)
from odradek.protocol.messages.alter_client_quotas import EntityData as AlterEntityData
from odradek.protocol.messages.describe_client_quotas import (
    ComponentData,
    DescribeClientQuotasRequest,
    DescribeClientQuotasResponse,
    ValueData,
)
from odradek.protocol.messages.describe_client_quotas import EntityData as DescribeEntityData
from odradek.protocol.messages.describe_client_quotas import EntryData as DescribeEntryData
from odradek.security.acl import AclOperation
from odradek.security.quota_entities import (
    CLIENT_ID,
    DEFAULT,
    IP,
    USER,
    Name,
    QuotaEntity,
    QuotaRequestError,
    checked_value,
    entity_from_wire,
)

MATCH_EXACT: Final = 0
MATCH_DEFAULT: Final = 1
MATCH_SPECIFIED: Final = 2


class _UnsupportedEntityType(Exception):
    pass


@handles(ApiKey.DESCRIBE_CLIENT_QUOTAS, 0, 1)
async def handle_describe_client_quotas(
    request: DescribeClientQuotasRequest, context: RequestContext
) -> DescribeClientQuotasResponse:
    if not authorize_cluster(context, AclOperation.DESCRIBE_CONFIGS):
        denied = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
        return _describe_failed(denied, denied.message)
    try:
        matches = _filter(request.components, request.strict)
    except QuotaRequestError as error:
        return _describe_failed(ErrorCode.INVALID_REQUEST, str(error))
    except _UnsupportedEntityType as error:
        return _describe_failed(ErrorCode.UNSUPPORTED_VERSION, str(error))
    quotas = await context.services.client_quotas.stored_all()
    entries = [
        DescribeEntryData(
            entity=[DescribeEntityData(entity_type=kind, entity_name=name) for kind, name in entity.parts()],
            values=[ValueData(key=key, value=value) for key, value in sorted(values.items())],
        )
        for entity, values in quotas.items()
        if values and matches(entity)
    ]
    return DescribeClientQuotasResponse(
        throttle_time_ms=0, error_code=ErrorCode.NONE, error_message=None, entries=entries
    )


@handles(ApiKey.ALTER_CLIENT_QUOTAS, 0, 1)
async def handle_alter_client_quotas(
    request: AlterClientQuotasRequest, context: RequestContext
) -> AlterClientQuotasResponse:
    allowed = authorize_cluster(context, AclOperation.ALTER_CONFIGS)
    results = []
    for entry in request.entries:
        echoed = [AlterEntityData(entity_type=e.entity_type, entity_name=e.entity_name) for e in entry.entity]
        if not allowed:
            denied = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
            results.append(EntryDataResult(error_code=denied, error_message=denied.message, entity=echoed))
            continue
        code, message = await _alter_entry(entry, request.validate_only, context)
        results.append(EntryDataResult(error_code=code, error_message=message, entity=echoed))
    return AlterClientQuotasResponse(throttle_time_ms=0, entries=results)


async def _alter_entry(
    entry: EntryData, validate_only: bool, context: RequestContext
) -> tuple[ErrorCode, str | None]:
    """One entry's change, read and stored under the quotas' lock (another entry's write under way
    would otherwise be undone by this one's, computed from what was stored before it)."""
    quotas = context.services.client_quotas
    async with quotas.altering:
        try:
            entity = entity_from_wire([(e.entity_type, e.entity_name) for e in entry.entity])
            # where they are kept: another broker may have changed them, unnotified here yet
            current = await quotas.stored(entity)
            values = _altered(entry, entity, current)
        except QuotaRequestError as error:
            return ErrorCode.INVALID_REQUEST, str(error)
        except Exception as error:  # ZooKeeper unreachable: this entry fails, logged
            return resource_failure(error, context, "the client quotas")
        if not validate_only and values != dict(current):
            try:
                await quotas.alter(entity, values)
            except Exception as error:  # a disk or ZooKeeper failure: this entry fails, logged
                return resource_failure(error, context, f"the client quotas of {entity}")
    return ErrorCode.NONE, None


def _altered(entry: EntryData, entity: QuotaEntity, current: Mapping[str, float]) -> dict[str, float]:
    """The entity's quotas once the entry's ops are applied to `current`."""
    values = dict(current)
    for op in entry.ops:
        if op.remove:
            values.pop(op.key, None)
        else:
            values[op.key] = checked_value(entity, op.key, op.value)
    return values


def _filter(components: Iterable[ComponentData], strict: bool) -> Callable[[QuotaEntity], bool]:
    """A predicate on entities for the request's filter (raises for a filter Kafka refuses)."""
    by_type: dict[str, ComponentData] = {}
    for component in components:
        kind = component.entity_type
        if kind == "":
            raise QuotaRequestError("Unexpected empty filter component entity type")
        if kind not in (USER, CLIENT_ID, IP):
            raise _UnsupportedEntityType(f"Custom entity type '{kind}' not supported")
        if kind in by_type:
            what = "client" if kind == CLIENT_ID else kind
            raise QuotaRequestError(f"Duplicate {what} filter component entity type")
        if component.match_type not in (MATCH_EXACT, MATCH_DEFAULT, MATCH_SPECIFIED):
            raise QuotaRequestError(f"Unexpected match type: {component.match_type}")
        if component.match_type == MATCH_EXACT and component.match is None:
            raise QuotaRequestError(f"Exact match of {kind} needs a name")
        by_type[kind] = component
    if IP in by_type and (USER in by_type or CLIENT_ID in by_type):
        raise QuotaRequestError(
            "Invalid entity filter component combination, IP filter component should not be used with "
            "user or clientId filter component."
        )
    user, client, ip = by_type.get(USER), by_type.get(CLIENT_ID), by_type.get(IP)

    def matches(entity: QuotaEntity) -> bool:
        return (
            _matches(user, entity.user, strict)
            and _matches(client, entity.client_id, strict)
            and _matches(ip, entity.ip, strict)
        )

    return matches


def _matches(component: ComponentData | None, name: Name | None, strict: bool) -> bool:
    if component is None:
        return name is None or not strict
    if component.match_type == MATCH_SPECIFIED:
        return name is not None
    if component.match_type == MATCH_DEFAULT:
        return name is DEFAULT
    return name == component.match


def _describe_failed(code: ErrorCode, message: str) -> DescribeClientQuotasResponse:
    return DescribeClientQuotasResponse(
        throttle_time_ms=0, error_code=code, error_message=message, entries=None
    )
