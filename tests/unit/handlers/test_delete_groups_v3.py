"""DeleteGroups v3 (the 4.4 client's): a per-group ErrorMessage, which Kafka 4.4 fills only for a Kafka
Streams group's topology (odradek has no Streams groups); every other answer carries none."""

from __future__ import annotations

from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.messages.delete_groups import DeleteGroupsRequest
from tests.support.handler_services import HandlerBroker


async def test_delete_groups_v3_is_served_and_answers_as_v2_with_no_error_message(
    handler_broker: HandlerBroker,
) -> None:
    request = DeleteGroupsRequest(groups_names=["no-such-group", ""])
    v2 = await handler_broker.call(request, 2)
    v3 = await handler_broker.call(request, 3)
    assert [(r.group_id, r.error_code) for r in v3.results] == [
        (r.group_id, r.error_code) for r in v2.results
    ]
    assert all(r.error_code != ErrorCode.NONE for r in v3.results)
    assert [r.error_message for r in v3.results] == [None, None]
