"""Whose checkpoint is this? A streaming checkpoint holds offsets of one topic on one cluster; against a
recreated topic or another cluster it silently skips whatever lies below those offsets. The pipeline
writes the cluster id and topic id next to its checkpoint and compares them before Spark reads it.

A checkpoint of another cluster or topic is refused, except when the run owns it: the pipeline started
its own temporary broker (so no checkpoint from before can belong to it) and the checkpoint carries the
pipeline's marker (so it is one an earlier `odradek pipeline` wrote). The run then starts fresh, removing
that checkpoint and the Parquet the earlier run wrote.
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import asdict, dataclass
from pathlib import Path

from odradek.pipelines.errors import PipelineError

MARKER = "odradek-pipeline.json"


class CheckpointMismatch(PipelineError):
    """The checkpoint belongs to another cluster or topic and this run may not discard it."""


@dataclass(frozen=True)
class StreamIdentity:
    """What a checkpoint's offsets are offsets of."""

    cluster_id: str
    topic: str
    topic_id: str

    def describe(self) -> str:
        return f"topic {self.topic} (id {self.topic_id}) of cluster {self.cluster_id}"


def claim_checkpoint(
    checkpoint_dir: Path,
    output_dir: Path,
    identity: StreamIdentity,
    *,
    run_owns_checkpoint: bool,
    connector: str = "odradek",
) -> str:
    """Make `checkpoint_dir` usable for `identity` read through `connector`; returns what was done, in
    words: "new", "resumed" or "started fresh". Raises CheckpointMismatch when the checkpoint is another
    stream's and is not ours to discard, or was written through the other connector (each source keeps
    its own offsets and metadata in the checkpoint; one is not resumed from the other's)."""
    marker = checkpoint_dir / MARKER
    if not _has_content(checkpoint_dir):
        _write_marker(marker, identity, connector)
        return "new"
    previous = _read_marker(marker)
    if previous == identity:
        used = _read_connector(marker)
        if used != connector:
            raise CheckpointMismatch(
                f"checkpoint {checkpoint_dir} was written through the {used} connector, not {connector}: "
                f"run with --connector {used}, or delete it (and the output in {output_dir}) or choose "
                "another --checkpoint-dir"
            )
        return "resumed"
    if previous is None:
        raise CheckpointMismatch(
            f"checkpoint {checkpoint_dir} was not written by odradek pipeline (no {MARKER}), so its offsets "
            f"may be of another topic or cluster; delete it or choose another --checkpoint-dir"
        )
    if not run_owns_checkpoint:
        raise CheckpointMismatch(
            f"checkpoint {checkpoint_dir} holds offsets of {previous.describe()}, not of "
            f"{identity.describe()}; resuming it would skip records. Delete it (and the output in "
            f"{output_dir}) to start over, or choose another --checkpoint-dir"
        )
    shutil.rmtree(checkpoint_dir)
    _remove_parquet_output(output_dir)
    _write_marker(marker, identity, connector)
    return "started fresh"


def next_event_time(checkpoint_dir: Path) -> int | None:
    """Where the event times of a resumed run start: past the watermark the checkpoint has reached.
    A resumed run that generated the same event times again would find them all late and output
    nothing."""
    try:
        value = json.loads((checkpoint_dir / MARKER).read_text()).get("next_event_time_ms")
    except (OSError, ValueError, AttributeError):
        return None
    return int(value) if isinstance(value, int) else None


def record_next_event_time(checkpoint_dir: Path, event_time_ms: int) -> None:
    marker = checkpoint_dir / MARKER
    fields = json.loads(marker.read_text())
    fields["next_event_time_ms"] = event_time_ms
    _replace(marker, fields)


def _has_content(directory: Path) -> bool:
    return directory.is_dir() and any(directory.iterdir())


def _read_marker(marker: Path) -> StreamIdentity | None:
    try:
        fields = json.loads(marker.read_text())
        return StreamIdentity(str(fields["cluster_id"]), str(fields["topic"]), str(fields["topic_id"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _read_connector(marker: Path) -> str:
    """The connector the checkpoint was written through; markers from before the choice existed were
    written through odradek's."""
    try:
        return str(json.loads(marker.read_text()).get("connector", "odradek"))
    except (OSError, ValueError, AttributeError):
        return "odradek"


def _write_marker(marker: Path, identity: StreamIdentity, connector: str) -> None:
    marker.parent.mkdir(parents=True, exist_ok=True)
    _replace(marker, {**asdict(identity), "connector": connector})


def _replace(marker: Path, fields: dict[str, object]) -> None:
    """Written aside, fsynced and renamed over, the rename fsynced too: a crash leaves the old marker
    or the new one, never a torn one (which the next run would refuse as not the pipeline's). Its own
    few lines, not the broker storage's atomic_write: the pipeline is a client of any Kafka cluster."""
    aside = marker.with_name(marker.name + ".tmp")
    with open(aside, "wb") as file:
        file.write((json.dumps(fields, indent=2) + "\n").encode())
        file.flush()
        os.fsync(file.fileno())
    os.replace(aside, marker)
    directory = os.open(marker.parent, os.O_RDONLY)
    try:
        os.fsync(directory)
    finally:
        os.close(directory)


def _remove_parquet_output(output_dir: Path) -> None:
    """Only what the job writes there: `metric=...` partitions and Spark's `_SUCCESS` marker."""
    if not output_dir.is_dir():
        return
    for entry in output_dir.iterdir():
        if entry.is_dir() and entry.name.startswith("metric="):
            shutil.rmtree(entry)
        elif entry.name in ("_SUCCESS", "._SUCCESS.crc"):
            entry.unlink()
