"""The pipeline's checkpoint is bound to one cluster and one topic: resumed on them, refused elsewhere,
and restarted (with the earlier run's Parquet) only where the run owns it."""

from __future__ import annotations

from pathlib import Path

import pytest

from odradek.pipelines.checkpoint import (
    MARKER,
    CheckpointMismatch,
    StreamIdentity,
    claim_checkpoint,
    next_event_time,
    record_next_event_time,
)

THIS = StreamIdentity("cluster-a", "page-views", "topic-1")


def _earlier_run(tmp_path: Path, identity: StreamIdentity) -> tuple[Path, Path]:
    """A checkpoint and Parquet output as an earlier run on `identity` leaves them."""
    output = tmp_path / "out"
    checkpoint = output / "_checkpoints"
    assert claim_checkpoint(checkpoint, output, identity, run_owns_checkpoint=False) == "new"
    (checkpoint / "page_stats" / "offsets").mkdir(parents=True)
    (checkpoint / "page_stats" / "offsets" / "0").write_text('{"page-views":{"0":6667}}')
    (output / "metric=views_per_page").mkdir()
    (output / "metric=views_per_page" / "part-0.parquet").write_bytes(b"PAR1")
    (output / "_SUCCESS").write_bytes(b"")
    (output / "notes.txt").write_text("the user's")
    return checkpoint, output


def test_checkpoint_of_the_same_cluster_and_topic_is_resumed(tmp_path: Path) -> None:
    checkpoint, output = _earlier_run(tmp_path, THIS)
    assert claim_checkpoint(checkpoint, output, THIS, run_owns_checkpoint=False) == "resumed"
    assert (checkpoint / "page_stats" / "offsets" / "0").exists()


@pytest.mark.parametrize(
    "now",
    [
        StreamIdentity("cluster-b", "page-views", "topic-1"),
        StreamIdentity("cluster-a", "page-views", "topic-2"),  # the topic was deleted and created again
    ],
)
def test_checkpoint_of_another_cluster_or_topic_is_refused_on_a_given_broker(
    tmp_path: Path, now: StreamIdentity
) -> None:
    checkpoint, output = _earlier_run(tmp_path, THIS)
    with pytest.raises(CheckpointMismatch) as refused:
        claim_checkpoint(checkpoint, output, now, run_owns_checkpoint=False)
    assert str(checkpoint) in str(refused.value)
    assert THIS.describe() in str(refused.value) and now.describe() in str(refused.value)
    assert (checkpoint / "page_stats" / "offsets" / "0").exists(), "a refused checkpoint is left alone"


def test_checkpoint_of_an_earlier_temporary_broker_starts_fresh_with_its_output(tmp_path: Path) -> None:
    checkpoint, output = _earlier_run(tmp_path, THIS)
    now = StreamIdentity("cluster-b", "page-views", "topic-9")
    assert claim_checkpoint(checkpoint, output, now, run_owns_checkpoint=True) == "started fresh"
    assert sorted(p.name for p in checkpoint.iterdir()) == [MARKER]
    assert sorted(p.name for p in output.iterdir()) == ["_checkpoints", "notes.txt"]
    assert claim_checkpoint(checkpoint, output, now, run_owns_checkpoint=False) == "resumed"


def test_checkpoint_not_written_by_the_pipeline_is_refused_even_where_the_run_owns_the_broker(
    tmp_path: Path,
) -> None:
    checkpoint = tmp_path / "someone-elses"
    (checkpoint / "offsets").mkdir(parents=True)
    with pytest.raises(CheckpointMismatch, match="not written by odradek pipeline"):
        claim_checkpoint(checkpoint, tmp_path, THIS, run_owns_checkpoint=True)
    assert (checkpoint / "offsets").is_dir()


def test_the_marker_is_replaced_whole_so_a_crash_mid_write_cannot_leave_it_torn(tmp_path: Path) -> None:
    """The marker was rewritten in place (truncated, then written) at every watermark: a crash in
    between left it empty or cut, and the next run refused the checkpoint as not the pipeline's."""
    checkpoint, output = _earlier_run(tmp_path, THIS)
    with open(checkpoint / MARKER) as before:  # the file as a crash before the new one is whole leaves it
        record_next_event_time(checkpoint, 1_700_000_000_000)
        assert "next_event_time_ms" not in before.read()  # untouched: the new content is another file
    assert next_event_time(checkpoint) == 1_700_000_000_000
    assert claim_checkpoint(checkpoint, output, THIS, run_owns_checkpoint=False) == "resumed"
