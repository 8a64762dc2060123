"""Controlled shutdown: wire schema.

Drafted from Kafka's message files by tools/generate_definitions.py; check_specs proves they agree.
"""

from __future__ import annotations

from odradek.protocol.schema import Array, Int16, Int32, Int64, Request, Response, String, Struct


class RemainingPartition(Struct):
    topic_name: str = String()
    partition_index: int = Int32()


class ControlledShutdownRequest(Request, api_key=7, versions="0-3", flexible="3+"):
    broker_id: int = Int32()
    broker_epoch: int = Int64("2+", default=-1)


class ControlledShutdownResponse(Response, api_key=7, versions="0-3", flexible="3+"):
    error_code: int = Int16()
    remaining_partitions: list[RemainingPartition] = Array(RemainingPartition)
