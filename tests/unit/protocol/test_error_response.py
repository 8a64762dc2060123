"""The error response built from any served request, at every served version: it encodes, its error
codes carry the error, and each thing the request names comes back named (Kafka's getErrorResponse)."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

import odradek.handlers  # noqa: F401 - registers every handler
from odradek.handlers._common.registry import REGISTRY
from odradek.protocol.error_response import error_response
from odradek.protocol.frames import decode_response, encode_response
from odradek.protocol.messages import REQUESTS
from odradek.protocol.messages.alter_client_quotas import AlterClientQuotasRequest, EntityData, EntryData
from odradek.protocol.messages.alter_replica_log_dirs import (
    AlterReplicaLogDir,
    AlterReplicaLogDirsRequest,
    AlterReplicaLogDirTopic,
)
from odradek.protocol.messages.alter_user_scram_credentials import (
    AlterUserScramCredentialsRequest,
    ScramCredentialDeletion,
)
from odradek.protocol.messages.create_acls import AclCreation, CreateAclsRequest
from odradek.protocol.messages.delete_topics import DeleteTopicsRequest
from odradek.protocol.messages.describe_groups import DescribeGroupsRequest
from odradek.protocol.messages.list_groups import ListGroupsRequest
from odradek.protocol.messages.offset_fetch import OffsetFetchRequest, OffsetFetchRequestTopic
from odradek.protocol.schema import Struct

CODE = -1  # UNKNOWN_SERVER_ERROR
_VALUES: dict[str, Any] = {"int8": 1, "int16": 1, "int32": 7, "int64": 7, "string": "x", "uuid": uuid.uuid4()}


def _sample(struct: type[Struct], version: int) -> Any:
    """A request with one element in every array and every identity-like value set."""
    made = struct()
    for spec in struct.FIELDS:
        if not spec.present_in(version):
            continue
        if spec.kind == "array" and spec.struct is not None:
            setattr(made, spec.name, [_sample(spec.struct, version)])
        elif spec.kind == "array" and spec.element in _VALUES:
            setattr(made, spec.name, [_VALUES[spec.element]])
        elif spec.kind in _VALUES:
            setattr(made, spec.name, _VALUES[spec.kind])
    return made


def _error_codes(struct: Struct, version: int) -> list[int]:
    found = []
    for spec in type(struct).FIELDS:
        if not spec.present_in(version):
            continue
        value = getattr(struct, spec.name)
        if spec.name in ("error_code", "partition_error_code"):
            found.append(value)
        elif spec.kind == "array" and spec.struct is not None:
            for element in value or []:
                found.extend(_error_codes(element, version))
    return found


SERVED = [
    (api_key, version)
    for api_key, registration in sorted(REGISTRY.items())
    for version in range(registration.min_version, registration.max_version + 1)
]


@pytest.mark.parametrize(("api_key", "version"), SERVED)
def test_error_response_of_every_served_api_and_version_encodes_and_carries_the_error(
    api_key: int, version: int
) -> None:
    answer = error_response(_sample(REQUESTS[api_key], version), version, CODE)
    frame = encode_response(answer, version, 5)
    decoded = decode_response(frame[4:], api_key, version)[1]
    codes = _error_codes(decoded, version)
    if (api_key, version) in _NO_ERROR_FIELD:
        assert codes == [], decoded
        return
    assert codes and set(codes) == {CODE}, (api_key, version, decoded)


#: DescribeLogDirs before v3 has no error code but per log dir, and no log dir to name: as in Kafka,
#: the client gets an empty answer.
_NO_ERROR_FIELD = {(35, 0), (35, 1), (35, 2)}


def test_names_given_as_plain_values_come_back_each_with_the_error() -> None:
    answer = error_response(DescribeGroupsRequest(groups=["a", "b"]), 5, CODE)
    assert [(g.group_id, g.error_code) for g in answer.groups] == [("a", CODE), ("b", CODE)]
    answer = error_response(DeleteTopicsRequest(topic_names=["t"]), 5, CODE)
    assert [(t.name, t.error_code) for t in answer.responses] == [("t", CODE)]
    request = OffsetFetchRequest(
        group_id="g", topics=[OffsetFetchRequestTopic(name="t", partition_indexes=[4])]
    )
    answer = error_response(request, 7, CODE)
    assert answer.error_code == CODE
    assert [(p.partition_index, p.error_code) for p in answer.topics[0].partitions] == [(4, CODE)]


def test_filters_and_top_level_ids_are_not_taken_for_things_to_answer_for() -> None:
    # ListGroups' states filter names no group; a response's own member or producer id stays unknown.
    answer = error_response(ListGroupsRequest(states_filter=["Stable"]), 4, CODE)
    assert (answer.error_code, answer.groups) == (CODE, [])


def test_results_answered_by_position_or_under_another_field_name() -> None:
    creations = [AclCreation(resource_name="t"), AclCreation(resource_name="u")]
    answer = error_response(CreateAclsRequest(creations=creations), 3, CODE)
    assert [r.error_code for r in answer.results] == [CODE, CODE]
    request = AlterUserScramCredentialsRequest(deletions=[ScramCredentialDeletion(name="alice", mechanism=1)])
    answer = error_response(request, 0, CODE)
    assert [(r.user, r.error_code) for r in answer.results] == [("alice", CODE)]


def test_an_entity_named_by_nested_names_is_echoed_with_the_error() -> None:
    entity = [EntityData(entity_type="user", entity_name="alice")]
    answer = error_response(AlterClientQuotasRequest(entries=[EntryData(entity=entity, ops=[])]), 1, CODE)
    [entry] = answer.entries
    assert entry.error_code == CODE
    assert [(e.entity_type, e.entity_name) for e in entry.entity] == [("user", "alice")]


def test_topics_grouped_under_each_log_dir_are_each_answered() -> None:
    # AlterReplicaLogDirs names its topics under each destination directory: the error response was
    # empty (the directories name nothing a result is about), so the client learnt nothing of its topics.
    request = AlterReplicaLogDirsRequest(
        dirs=[
            AlterReplicaLogDir(path="/a", topics=[AlterReplicaLogDirTopic(name="t", partitions=[0, 2])]),
            AlterReplicaLogDir(path="/b", topics=[AlterReplicaLogDirTopic(name="u", partitions=[1])]),
        ]
    )
    answer = error_response(request, 2, CODE)
    assert [
        (r.topic_name, [(p.partition_index, p.error_code) for p in r.partitions]) for r in answer.results
    ] == [
        ("t", [(0, CODE), (2, CODE)]),
        ("u", [(1, CODE)]),
    ]
