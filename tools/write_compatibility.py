"""Writes docs/compatibility.md from the codec's registry of messages.

    .venv/bin/python tools/write_compatibility.py          # rewrite docs/compatibility.md
    .venv/bin/python tools/write_compatibility.py --check  # exit 1 if the file is out of date

Every API key with the versions the codec covers, the first flexible version and the versions Kafka
marks unstable, from `odradek.protocol.messages`, and the versions the broker serves, from its handler
registry (the same registry ApiVersions is answered from).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

import odradek.handlers  # noqa: F401 - registers every handler
from odradek.cluster.metadata import BrokerMode
from odradek.handlers.registry import REGISTRY
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
    return "\n".join([INTRODUCTION, *_api_table(), OTHER_SCHEMAS_TEXT, *_other_schemas(), RECORD_FORMATS])


INTRODUCTION = f"""\
# Compatibility

<!-- Written by tools/write_compatibility.py from odradek.protocol.messages; do not edit. -->

## API keys

**codec** is every version the protocol codec (`odradek.protocol`) can decode and encode, request
and response alike: Kafka 3.9's versions and Kafka 4.3's, merged, so the old versions Kafka 4.0
dropped (KIP-896) are still read and written. **flexible from** is the first version with compact
types and tagged fields (request header v2, response header v1). **unstable** are versions Kafka
marks as not yet released; a broker must not advertise them.

**served** is what the broker answers, from its handler registry: each handler registers its API
key and version range, and ApiVersions is answered from that same registry, so nothing is advertised
that is not served. "{NOT_SERVED}" means the broker does not serve that API: a request for it closes the
connection, as Apache Kafka does for an API it does not know. "(cluster member only)" marks the
controller's requests to brokers (LeaderAndIsr, StopReplica, UpdateMetadata): served, and listed in
ApiVersions, only by a broker in a ZooKeeper cluster; a single node treats them as unknown.
Not served today: the KRaft controller
and quorum APIs (odradek's cluster mode is ZooKeeper-based), share groups, streams groups, client
telemetry, delegation tokens, ACL administration and transactions: InitProducerId answers
idempotent producers, while a transactional id (FindCoordinator key type 1, InitProducerId) and a
Produce carrying a transactional batch get TRANSACTIONAL_ID_AUTHORIZATION_FAILED, which clients
report at once as fatal (as against a Kafka whose authorizer grants no transactional id); nothing
transactional is appended.
"""

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
  decompression;
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
