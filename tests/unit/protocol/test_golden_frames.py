"""Golden frames captured from real clients (bench/capture_golden.py) decode and re-encode byte for byte.

Each file in golden/<client>/ is one frame without its size prefix, named
`<api>-v<version>-<request|response>-<n>.bin`. Requests come from confluent-kafka (librdkafka),
kafka-python, aiokafka and kcat; responses are odradek's answers to them. A request decodes with
`frames.decode_request` and its header and body re-encode to the same bytes; a response decodes with
`frames.decode_response` and re-encodes with `frames.encode_response`. Record data inside (Produce
requests, Fetch responses) decodes with odradek.protocol.records, CRCs checked.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

from odradek.protocol.api_keys import ApiKey
from odradek.protocol.codec import encode_into_for
from odradek.protocol.frames import decode_request, decode_response, encode_response, request_header_version
from odradek.protocol.messages.request_header import RequestHeader
from odradek.protocol.records import (
    HEADER_SIZE,
    Compression,
    RecordBatch,
    RecordBatchHeader,
    decode_message_set,
    iter_batch_headers,
    iter_record_batches,
)

GOLDEN = Path(__file__).parent / "golden"
CLIENTS = ("confluent", "kafka_python", "aiokafka", "kcat")
_NAME = re.compile(r"^(?P<api>[a-z_]+)-v(?P<version>\d+)-(?P<direction>request|response)-\d+\.bin$")
#: librdkafka writes the topic count of an all-topics Metadata v9+ request as a 4-byte placeholder
#: where the compact count takes one byte; Kafka (and odradek) ignore bytes after the body.
_TRAILING_ALLOWED = {("confluent", ApiKey.METADATA), ("kcat", ApiKey.METADATA)}


@dataclass(frozen=True)
class Golden:
    path: Path
    client: str
    api_key: ApiKey
    version: int
    direction: str

    @property
    def frame(self) -> bytes:
        return self.path.read_bytes()

    def __str__(self) -> str:
        return f"{self.client}/{self.path.name}"


def _goldens() -> list[Golden]:
    found = []
    for path in sorted(GOLDEN.glob("*/*.bin")):
        match = _NAME.match(path.name)
        assert match is not None, f"unexpected golden file name {path}"
        api_key = ApiKey[match["api"].upper()]
        found.append(Golden(path, path.parent.name, api_key, int(match["version"]), match["direction"]))
    return found


GOLDENS = _goldens()
REQUESTS = [g for g in GOLDENS if g.direction == "request"]
RESPONSES = [g for g in GOLDENS if g.direction == "response"]


def test_every_client_was_captured_doing_the_core_apis_and_every_codec() -> None:
    manifest = json.loads((GOLDEN / "MANIFEST.json").read_text())
    core = {ApiKey.API_VERSIONS, ApiKey.METADATA, ApiKey.PRODUCE, ApiKey.FETCH, ApiKey.LIST_OFFSETS}
    for client in CLIENTS:
        assert client in manifest, f"{client} missing from MANIFEST.json"
        for direction in ("request", "response"):
            seen = {g.api_key for g in GOLDENS if g.client == client and g.direction == direction}
            assert core <= seen, f"{client} {direction}s lack {sorted(a.name for a in core - seen)}"
        produced: set[Compression] = set()
        for golden in REQUESTS:
            if golden.client == client and golden.api_key == ApiKey.PRODUCE:
                body = decode_request(golden.frame)[1]
                records = [p.records for t in body.topic_data for p in t.partition_data]
                produced |= {h.compression for data in records for h in iter_batch_headers(data)}
        assert produced == set(Compression), f"{client} produce requests carry only {sorted(produced)}"
    size = sum(g.path.stat().st_size for g in GOLDENS)
    assert size < 2 * 1024 * 1024, f"golden frames take {size} bytes; keep them under 2 MiB"


@pytest.mark.parametrize("golden", REQUESTS, ids=str)
def test_a_captured_request_decodes_and_reencodes_byte_identically(golden: Golden) -> None:
    frame = golden.frame
    header, body = decode_request(frame)
    assert (header.request_api_key, header.request_api_version) == (golden.api_key, golden.version)
    out = bytearray()
    encode_into_for(RequestHeader, request_header_version(golden.api_key, golden.version))(header, out)
    encode_into_for(type(body), golden.version)(body, out)
    if (golden.client, golden.api_key) in _TRAILING_ALLOWED and len(out) < len(frame):
        trailing = frame[len(out) :]
        assert frame.startswith(bytes(out)) and trailing == b"\0" * len(trailing) and len(trailing) <= 3
    else:
        assert bytes(out) == frame
    if golden.api_key == ApiKey.PRODUCE:
        for topic in body.topic_data:
            for partition in topic.partition_data:
                _check_produced_records(partition.records, golden.version)


@pytest.mark.parametrize("golden", RESPONSES, ids=str)
def test_a_captured_response_decodes_and_reencodes_byte_identically(golden: Golden) -> None:
    frame = golden.frame
    correlation_id, body = decode_response(frame, golden.api_key, golden.version)
    assert encode_response(body, golden.version, correlation_id)[4:] == frame
    if golden.api_key == ApiKey.FETCH:
        for topic in body.responses:
            for partition in topic.partitions:
                _check_fetched_records(partition.records or b"", golden.version)


def _check_produced_records(records: bytes | None, version: int) -> None:
    """A produce carries whole batches: every byte belongs to a batch that decodes with a valid CRC."""
    assert records
    if records[16] < 2:
        message_set = decode_message_set(records)
        assert not message_set.truncated and message_set.valid_bytes == len(records)
        assert message_set.records
        return
    batches = list(iter_record_batches(records))
    assert _batch_bytes(records) == len(records), "a produce request must not end in a partial batch"
    _check_batches(batches)


def _check_fetched_records(records: bytes, version: int) -> None:
    """Fetched data decodes: v4+ as record batches (the last may be partial), older as message sets."""
    if not records:
        return
    if version >= 4:
        batches = list(iter_record_batches(records))
        assert batches or RecordBatchHeader.read(records, 0).end > len(records), "no whole batch fetched"
        _check_batches(batches)
    else:
        assert decode_message_set(records).records


def _check_batches(batches: list[RecordBatch]) -> None:
    for batch in batches:
        if batch.is_control:
            continue
        assert len(batch.records) == batch.last_offset_delta + 1
        assert [r.offset for r in batch.records] == list(range(batch.base_offset, batch.next_offset))


def _batch_bytes(records: bytes) -> int:
    position = 0
    while position + HEADER_SIZE <= len(records):
        end = RecordBatchHeader.read(records, position).end
        if end > len(records):
            break
        position = end
    return position
