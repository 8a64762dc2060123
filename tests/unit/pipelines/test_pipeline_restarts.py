"""A query Spark fails because its Python worker did not connect back within Spark's fixed 10 s (a loaded
machine: CI saw it) is restarted from its checkpoint, a bounded number of times; any other failure
ends the run at once, as before."""

from __future__ import annotations

from typing import Any

import pytest

from odradek.pipelines import run as run_module
from odradek.pipelines.errors import PipelineError
from odradek.pipelines.job import JobSettings
from odradek.pipelines.restarts import MAX_WORKER_RESTARTS, worker_did_not_connect_back
from odradek.pipelines.run import PipelineRun, _run, _StopRequest

CONNECT_BACK = (
    "[STREAM_FAILED] Query terminated with exception: Python worker failed to connect back. SQLSTATE: XXKST"
)


class _FailingQuery:
    """A query that failed before its first batch with the given error."""

    def __init__(self, failure: str) -> None:
        self.id = id(self)
        self.name = "page_stats"
        self.failure = failure
        self.isActive = True

    def awaitTermination(self, _timeout: float) -> bool:
        self.isActive = False
        raise RuntimeError(self.failure)

    def exception(self) -> object:
        return self.failure


class _DoneQuery:
    """A query that stops when asked, after a batch that read nothing."""

    def __init__(self) -> None:
        self.id = id(self)
        self.name = "page_stats"
        self.isActive = True
        self.lastProgress = {"numInputRows": 0, "timestamp": "2999-01-01T00:00:00.000Z", "batchId": 1}

    def awaitTermination(self, _timeout: float) -> bool:
        return False

    def stop(self) -> None:
        self.isActive = False

    def exception(self) -> object:
        return None


def _pipeline(monkeypatch: pytest.MonkeyPatch, tmp_path: Any, queries: list[Any]) -> list[str]:
    started: list[Any] = []

    def start(_session: Any, _settings: Any, _tally: Any) -> list[Any]:
        query = queries[len(started)]
        started.append(query)
        return [query]

    monkeypatch.setattr(run_module, "start", start)
    monkeypatch.setattr(run_module, "produce_page_views", lambda *a, **k: 0)
    monkeypatch.setattr(run_module, "next_event_time", lambda _checkpoint: None)
    said: list[str] = []
    settings = JobSettings(
        bootstrap="127.0.0.1:1",
        input_topic="in",
        output_topic="out",
        output_dir=str(tmp_path / "out"),
        checkpoint_dir=str(tmp_path / "checkpoint"),
        trigger="1 second",
    )
    _run(PipelineRun(settings, events=0, progress_every_s=1), object(), _StopRequest(), said.append)
    return said


def test_a_query_whose_python_worker_did_not_connect_back_is_restarted_from_its_checkpoint(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    said = _pipeline(monkeypatch, tmp_path, [_FailingQuery(CONNECT_BACK), _DoneQuery()])
    restarts = [line for line in said if "restarting it from its checkpoint" in line]
    assert len(restarts) == 1, said
    assert said[-1].startswith("done:")


def test_the_restarts_are_bounded(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    failing = [_FailingQuery(CONNECT_BACK) for _ in range(MAX_WORKER_RESTARTS + 1)]
    with pytest.raises(PipelineError, match="failed to connect back"):
        _pipeline(monkeypatch, tmp_path, failing)


def test_any_other_failure_ends_the_run(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    with pytest.raises(PipelineError, match="Division by zero"):
        _pipeline(monkeypatch, tmp_path, [_FailingQuery("Division by zero"), _DoneQuery()])


def test_only_the_connect_back_failure_is_recognised() -> None:
    assert worker_did_not_connect_back(RuntimeError(CONNECT_BACK))
    assert not worker_did_not_connect_back(RuntimeError("TRANSACTIONAL_ID_AUTHORIZATION_FAILED"))
