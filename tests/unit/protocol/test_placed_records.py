"""A records value that places itself in the output (partition/'s FileRecords: file regions the server
sends with sendfile) is the codec's `PlacedRecords`, a typed Protocol of protocol/ (once an `Any`): the
encoder hands it the output, and the frame's size counts what it placed."""

from __future__ import annotations

import struct

import pytest

from odradek.partition.file_records import FileRecords
from odradek.protocol.codec_error import CodecError
from odradek.protocol.frames import encode_response_into
from odradek.protocol.messages.fetch import FetchableTopicResponse, FetchResponse, PartitionData
from odradek.protocol.placed_records import PlacedRecords
from odradek.server.output import ResponseOutput


class _Region:
    """A file region as a fetch reads it: held for the answer, closed once sent."""

    def __init__(self, length: int) -> None:
        self.fd, self.position, self.length = -1, 0, length
        self.closed = False

    def hold(self) -> _Region:
        return self

    def __len__(self) -> int:
        return self.length

    def close(self) -> None:
        self.closed = True

    def read_failed(self, error: OSError) -> None:
        pass


def _fetch_response(records: object) -> FetchResponse:
    partition = PartitionData(partition_index=0, error_code=0, high_watermark=3, records=records)
    return FetchResponse(responses=[FetchableTopicResponse(topic="t", partitions=[partition])])


def test_file_records_are_placed_records_whose_regions_the_frame_counts() -> None:
    first, second = _Region(100), _Region(23)
    records = FileRecords([first, second])  # type: ignore[list-item]
    assert isinstance(records, PlacedRecords)
    out = ResponseOutput()
    encode_response_into(out, _fetch_response(records), 4, correlation_id=7)
    assert [region for _, region in out.regions] == [first, second]
    assert out.spliced_length == 123
    (size,) = struct.unpack_from(">i", out, 0)
    assert size == len(out) - 4 + 123


def test_file_records_encoded_into_an_output_that_takes_no_regions_are_refused_by_name() -> None:
    records = FileRecords([_Region(10)])  # type: ignore[list-item]
    with pytest.raises(CodecError, match="file regions"):
        encode_response_into(bytearray(), _fetch_response(records), 4, correlation_id=7)
