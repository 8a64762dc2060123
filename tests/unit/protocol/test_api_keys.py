"""ApiKey against Kafka's own message schemas (../shared/kafka-specs beside the repo; required in CI)."""

from __future__ import annotations

import json
from pathlib import Path

from odradek.protocol.api_keys import ApiKey
from tests.support.requirements import require

SPECS = Path(__file__).resolve().parents[3].parent / "shared" / "kafka-specs"
SPEC_DIRS = [SPECS / "3.9", SPECS / "4.3"]


def _request_schemas() -> list[tuple[str, int]]:
    """(message name, api key) of every request schema in both Kafka versions."""
    require(all(d.is_dir() for d in SPEC_DIRS), f"{SPECS} (3.9 and 4.3) is not present")
    found: list[tuple[str, int]] = []
    for spec_dir in SPEC_DIRS:
        for path in sorted(spec_dir.glob("*Request.json")):
            # Kafka's schema files carry // comment lines, which JSON does not allow.
            lines = [line for line in path.read_text().splitlines() if not line.lstrip().startswith("//")]
            schema = json.loads("\n".join(lines))
            found.append((schema["name"], schema["apiKey"]))
    return found


def test_every_request_schema_has_its_key() -> None:
    schemas = _request_schemas()
    assert schemas
    for name, api_key in schemas:
        assert ApiKey.from_message_name(name) == api_key, name


def test_no_key_without_a_schema() -> None:
    assert {api_key for _, api_key in _request_schemas()} == {int(member) for member in ApiKey}


def test_names_follow_the_message_names() -> None:
    assert ApiKey(0) is ApiKey.PRODUCE
    assert ApiKey(4) is ApiKey.LEADER_AND_ISR
    assert ApiKey(32) is ApiKey.DESCRIBE_CONFIGS
    assert ApiKey(68) is ApiKey.CONSUMER_GROUP_HEARTBEAT
    assert ApiKey.from_message_name("OffsetForLeaderEpochRequest") is ApiKey.OFFSET_FOR_LEADER_EPOCH
    assert ApiKey.LEADER_AND_ISR.message_name == "LeaderAndIsr"


def test_keys_are_contiguous_and_renamed_key_is_an_alias() -> None:
    assert [int(member) for member in ApiKey] == list(range(len(ApiKey)))
    assert ApiKey["LIST_CLIENT_METRICS_RESOURCES"] is ApiKey.LIST_CONFIG_RESOURCES
    assert ApiKey.from_message_name("ListClientMetricsResourcesRequest") is ApiKey.LIST_CONFIG_RESOURCES
