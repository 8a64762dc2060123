"""Writes docs/compatibility.md from the codec's registry of messages and the broker's handler registry.

    .venv/bin/python tools/write_compatibility.py          # rewrite docs/compatibility.md
    .venv/bin/python tools/write_compatibility.py --check  # exit 1 if the file is out of date

Every API key with the versions the codec covers, the first flexible version and the versions Kafka
marks unstable, from `odradek.protocol.messages`, and the versions the broker serves, from its handler
registry (the same registry ApiVersions is answered from); and the introduction's account of what is
served, by area (AREAS: every API key in one), from that registry too, so it cannot drift from the code;
and the client table, from the client test suites (tools/compatibility_clients.py).
"""

from __future__ import annotations

import argparse
import sys
import textwrap
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests.support.java_suite (client table)
sys.path.insert(0, str(Path(__file__).resolve().parent))

from compatibility_clients import clients_section

import odradek.handlers  # noqa: F401 - registers every handler
from odradek.cluster.metadata import BrokerMode
from odradek.handlers._common.registry import REGISTRY, Registration
from odradek.protocol.api_keys import ApiKey
from odradek.protocol.messages import OTHER_SCHEMAS, REQUESTS, RESPONSES
from odradek.protocol.schema import Message, Versions

DOC = Path(__file__).resolve().parents[1] / "docs" / "compatibility.md"
NOT_SERVED = "-"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--check", action="store_true", help="only check that the file is up to date")
    args = parser.parse_args(argv)
    text = render()
    if args.check:
        if not DOC.exists() or DOC.read_text() != text:
            print(f"{DOC} is out of date: run tools/write_compatibility.py", file=sys.stderr)
            return 1
        return 0
    DOC.write_text(text)
    print(f"wrote {DOC}")
    return 0


def render() -> str:
    sections = [introduction(), *_api_table(), OTHER_SCHEMAS_TEXT, *_other_schemas(), RECORD_FORMATS]
    return "\n".join([*sections, clients_section()])


INTRODUCTION_HEAD = f"""\
# Compatibility

<!-- Written by tools/write_compatibility.py from the codec and the handler registry; do not edit. -->

## API keys

**codec** is every version the protocol codec (`odradek.protocol`) can decode and encode, request
and response alike: Kafka 3.9's versions and Kafka 4.3's, merged, so the old versions Kafka 4.0
dropped (KIP-896) are still read and written. **flexible from** is the first version with compact
types and tagged fields (request header v2, response header v1). **unstable** are versions Kafka
marks as not yet released; a broker must not advertise them.

**served** is what the broker answers, from its handler registry: each handler registers its API
key and version range, and ApiVersions is answered from that same registry, so nothing is advertised
that is not served. "{NOT_SERVED}" means the broker does not serve that API: a request for it closes the
connection, as Apache Kafka does for an API it does not know.
"""


@dataclass(frozen=True)
class Area:
    """APIs that together make one thing a broker offers, named as Kafka's documentation names it."""

    name: str
    api_keys: tuple[ApiKey, ...]
    #: Why the area is not served, said only while none of it is.
    why_not: str = ""


K = ApiKey
#: Every API key in one area: the introduction says, from the registry, which areas are served.
AREAS = (
    Area(
        "producing and fetching",
        (
            K.PRODUCE,
            K.FETCH,
            K.LIST_OFFSETS,
            K.METADATA,
            K.OFFSET_FOR_LEADER_EPOCH,
            K.DELETE_RECORDS,
            K.DESCRIBE_PRODUCERS,
        ),
    ),
    Area("ApiVersions and SASL authentication", (K.API_VERSIONS, K.SASL_HANDSHAKE, K.SASL_AUTHENTICATE)),
    Area(
        "consumer groups and committed offsets (classic and KIP-848)",
        (
            K.FIND_COORDINATOR,
            K.JOIN_GROUP,
            K.HEARTBEAT,
            K.LEAVE_GROUP,
            K.SYNC_GROUP,
            K.DESCRIBE_GROUPS,
            K.LIST_GROUPS,
            K.DELETE_GROUPS,
            K.OFFSET_COMMIT,
            K.OFFSET_FETCH,
            K.OFFSET_DELETE,
            K.CONSUMER_GROUP_HEARTBEAT,
            K.CONSUMER_GROUP_DESCRIBE,
        ),
    ),
    Area(
        "transactions",
        (
            K.INIT_PRODUCER_ID,
            K.ADD_PARTITIONS_TO_TXN,
            K.ADD_OFFSETS_TO_TXN,
            K.END_TXN,
            K.WRITE_TXN_MARKERS,
            K.TXN_OFFSET_COMMIT,
            K.DESCRIBE_TRANSACTIONS,
            K.LIST_TRANSACTIONS,
        ),
    ),
    Area(
        "topic administration",
        (K.CREATE_TOPICS, K.DELETE_TOPICS, K.CREATE_PARTITIONS, K.DESCRIBE_TOPIC_PARTITIONS),
    ),
    Area(
        "configs",
        (K.DESCRIBE_CONFIGS, K.ALTER_CONFIGS, K.INCREMENTAL_ALTER_CONFIGS, K.LIST_CONFIG_RESOURCES),
    ),
    Area("log directories", (K.DESCRIBE_LOG_DIRS, K.ALTER_REPLICA_LOG_DIRS)),
    Area("ACL administration", (K.DESCRIBE_ACLS, K.CREATE_ACLS, K.DELETE_ACLS)),
    Area("SCRAM users", (K.DESCRIBE_USER_SCRAM_CREDENTIALS, K.ALTER_USER_SCRAM_CREDENTIALS)),
    Area("client quotas", (K.DESCRIBE_CLIENT_QUOTAS, K.ALTER_CLIENT_QUOTAS)),
    Area("cluster description", (K.DESCRIBE_CLUSTER,)),
    Area(
        "the ZooKeeper-mode controller and brokers' requests to each other",
        (
            K.LEADER_AND_ISR,
            K.STOP_REPLICA,
            K.UPDATE_METADATA,
            K.CONTROLLED_SHUTDOWN,
            K.ALTER_PARTITION,
            K.ALLOCATE_PRODUCER_IDS,
        ),
    ),
    Area(
        "leader elections and partition reassignment",
        (K.ELECT_LEADERS, K.ALTER_PARTITION_REASSIGNMENTS, K.LIST_PARTITION_REASSIGNMENTS),
    ),
    Area("feature flags", (K.UPDATE_FEATURES,)),
    Area(
        "the KRaft controller and quorum",
        (
            K.VOTE,
            K.BEGIN_QUORUM_EPOCH,
            K.END_QUORUM_EPOCH,
            K.DESCRIBE_QUORUM,
            K.ENVELOPE,
            K.FETCH_SNAPSHOT,
            K.BROKER_REGISTRATION,
            K.BROKER_HEARTBEAT,
            K.UNREGISTER_BROKER,
            K.CONTROLLER_REGISTRATION,
            K.ASSIGN_REPLICAS_TO_DIRS,
            K.ADD_RAFT_VOTER,
            K.REMOVE_RAFT_VOTER,
            K.UPDATE_RAFT_VOTER,
        ),
        why_not="odradek's cluster mode is ZooKeeper-based",
    ),
    Area(
        "delegation tokens",
        (
            K.CREATE_DELEGATION_TOKEN,
            K.RENEW_DELEGATION_TOKEN,
            K.EXPIRE_DELEGATION_TOKEN,
            K.DESCRIBE_DELEGATION_TOKEN,
        ),
    ),
    Area("client telemetry (KIP-714)", (K.GET_TELEMETRY_SUBSCRIPTIONS, K.PUSH_TELEMETRY)),
    Area(
        "share groups (KIP-932)",
        (
            K.SHARE_GROUP_HEARTBEAT,
            K.SHARE_GROUP_DESCRIBE,
            K.SHARE_FETCH,
            K.SHARE_ACKNOWLEDGE,
            K.INITIALIZE_SHARE_GROUP_STATE,
            K.READ_SHARE_GROUP_STATE,
            K.WRITE_SHARE_GROUP_STATE,
            K.DELETE_SHARE_GROUP_STATE,
            K.READ_SHARE_GROUP_STATE_SUMMARY,
            K.DESCRIBE_SHARE_GROUP_OFFSETS,
            K.ALTER_SHARE_GROUP_OFFSETS,
            K.DELETE_SHARE_GROUP_OFFSETS,
        ),
    ),
    Area("streams groups (KIP-1071)", (K.STREAMS_GROUP_HEARTBEAT, K.STREAMS_GROUP_DESCRIBE)),
)


def introduction(registry: Mapping[int, Registration] = REGISTRY) -> str:
    """The head, then what is served by area and what only a cluster member serves, from `registry`."""
    served: list[str] = []
    partly: list[str] = []
    not_served: list[str] = []
    for area in AREAS:
        missing = [key for key in area.api_keys if key not in registry]
        if not missing:
            served.append(area.name)
        elif len(missing) == len(area.api_keys):
            not_served.append(f"{area.name}, as {area.why_not}" if area.why_not else area.name)
        else:
            partly.append(f"{area.name} (all but {_names(missing)})")
    unplaced = sorted(
        key for key in set(REQUESTS) | set(RESPONSES) if not any(key in a.api_keys for a in AREAS)
    )
    if unplaced:
        raise ValueError(f"API keys in no area of tools/write_compatibility.py: {unplaced}")
    cluster_only = [
        key
        for key, registration in sorted(registry.items())
        if not registration.served_in(BrokerMode.SINGLE_NODE)
    ]
    paragraphs = [
        f"**Served**, by area: {_listing(served)}."
        + (f" **Partly served**: {_listing(partly)}." if partly else "")
        + (f" **Not served**: {_listing(not_served)}." if not_served else ""),
        '"(cluster member only)" marks what a broker serves, and lists in ApiVersions, only as a member of'
        f" a ZooKeeper cluster ({_names(cluster_only)}); a single node treats them as unknown.",
    ]
    return INTRODUCTION_HEAD + "".join("\n" + textwrap.fill(p, 100) + "\n" for p in paragraphs)


def _names(api_keys: Sequence[int]) -> str:
    return ", ".join(_api_name(key, REQUESTS.get(key) or RESPONSES.get(key)) for key in api_keys)


def _listing(items: list[str]) -> str:
    return "; ".join(items)


OTHER_SCHEMAS_TEXT = """\
## Headers and other schemas

Request header v0 (ControlledShutdown v0 only: no client id), v1, v2 (flexible requests: tagged
fields; the client id stays a classic string). Response header v0, v1 (flexible responses), except
ApiVersions, whose response header is always v0. An ApiVersions request newer than the codec knows
is read with a v2 header, so that the broker can answer it. Unknown tagged fields are kept and
re-encoded in tag order.
"""

RECORD_FORMATS = """\
## Record formats

Records travel inside Produce requests, Fetch responses and a few others as opaque `records`
fields; the codec above does not look inside them. `odradek.protocol.records` reads and writes
them:

- **MessageSet v0 and v1** (magic 0 and 1), the formats before Kafka 0.11, including compressed
  wrapper messages;
- **RecordBatch v2** (magic 2): the batch header view with in-place patches (base offset, leader
  epoch, log-append time), CRC-32C, records with headers, control batches and transaction markers;
- **compression codecs**: gzip, snappy (raw and xerial-framed), lz4 (frame format, with the Kafka
  0.8/0.9 header-checksum quirk for magic 0) and zstd (RecordBatch v2 only), with bounded
  decompression, and KIP-390's levels; a v2 batch rewritten in another codec (a topic's
  `compression.type`) has its records read first, as Kafka's LogValidator reads them, and keeps its
  header and records' bytes but for offset deltas out of order and its max timestamp;
- **conversion**: MessageSet v0/v1 up to RecordBatch v2 (old producers) and down again (old
  fetchers).
"""


def _api_table() -> list[str]:
    lines = [
        "| key | API | codec | flexible from | unstable | served |",
        "| ---: | --- | --- | --- | --- | --- |",
    ]
    for api_key in sorted(set(REQUESTS) | set(RESPONSES)):
        request = REQUESTS.get(api_key)
        response = RESPONSES.get(api_key)
        name = _api_name(api_key, request or response)
        lines.append(
            f"| {api_key} | {name} | {_versions_of(request, response)} | {_flexible_from(request, response)} "
            f"| {_unstable(request, response)} | {_served(api_key)} |"
        )
    lines.append("")
    return lines


def _served(api_key: int) -> str:
    registration = REGISTRY.get(api_key)
    if registration is None:
        return NOT_SERVED
    low, high = registration.min_version, registration.max_version
    served = str(low) if low == high else f"{low}-{high}"
    if not registration.served_in(BrokerMode.SINGLE_NODE):
        served += " (cluster member only)"
    return served


def _api_name(api_key: int, message: type[Message] | None) -> str:
    if message is not None:
        return message.__name__.removesuffix("Request").removesuffix("Response")
    return ApiKey(api_key).name


def _versions_of(request: type[Message] | None, response: type[Message] | None) -> str:
    if request is None or response is None:
        only = request or response
        assert only is not None
        return f"{only.VERSIONS} ({only.KIND} only)"
    if request.VERSIONS != response.VERSIONS:
        return f"request {request.VERSIONS}, response {response.VERSIONS}"
    return str(request.VERSIONS)


def _flexible_from(request: type[Message] | None, response: type[Message] | None) -> str:
    values = {_first_flexible(m.FLEXIBLE) for m in (request, response) if m is not None}
    return " / ".join(sorted(values))


def _first_flexible(flexible: Versions) -> str:
    return "—" if flexible.empty else str(flexible.low)


def _unstable(request: type[Message] | None, response: type[Message] | None) -> str:
    values = {str(m.UNSTABLE) for m in (request, response) if m is not None and not m.UNSTABLE.empty}
    return " / ".join(sorted(values))


def _other_schemas() -> list[str]:
    lines = [
        "| schema | versions | flexible from |",
        "| --- | --- | --- |",
    ]
    for name, message in sorted(OTHER_SCHEMAS.items()):
        lines.append(f"| {name} | {message.VERSIONS} | {_first_flexible(message.FLEXIBLE)} |")
    lines.append("")
    return lines


if __name__ == "__main__":
    sys.exit(main())
