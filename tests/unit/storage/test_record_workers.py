"""The record workers: jobs queued per owner (a client connection) and taken in turns, an owner running
one job at a time when there are two threads; a shutdown fails queued jobs and stops running ones at
their next checkpoint, so a broker told to stop waits for no rewrite under way."""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest

from odradek.storage.record_workers import Checkpoint, RecordWorkers, WorkStopped

pytestmark = pytest.mark.timeout(30)

WAIT = 10  # seconds: only ever reached when the workers are broken


class Jobs:
    """Jobs that say when they start and run until the test releases them."""

    def __init__(self) -> None:
        self.started: list[str] = []
        self._changed = threading.Condition()
        self._released: set[str] = set()

    def job(self, name: str) -> Callable[[Checkpoint], str]:
        def work(checkpoint: Checkpoint) -> str:
            with self._changed:
                self.started.append(name)
                self._changed.notify_all()
                while name not in self._released:
                    self._changed.wait(0.01)
                    checkpoint()
            return name

        return work

    def release(self, name: str) -> None:
        with self._changed:
            self._released.add(name)
            self._changed.notify_all()

    def wait_started(self, count: int) -> list[str]:
        with self._changed:
            assert self._changed.wait_for(lambda: len(self.started) >= count, WAIT)
            return list(self.started)


@pytest.fixture
def jobs() -> Jobs:
    return Jobs()


def test_an_owner_runs_one_job_at_a_time_and_leaves_the_other_thread_to_other_owners(jobs: Jobs) -> None:
    workers = RecordWorkers(2)
    try:
        first = workers.submit("busy", jobs.job("busy-1"))
        workers.submit("busy", jobs.job("busy-2"))
        other = workers.submit("other", jobs.job("other-1"))
        assert set(jobs.wait_started(2)) == {"busy-1", "other-1"}
        jobs.release("other-1")
        assert other.future.result(WAIT) == "other-1"
        jobs.release("busy-1")
        assert first.future.result(WAIT) == "busy-1"
        assert jobs.wait_started(3)[-1] == "busy-2"
        jobs.release("busy-2")
    finally:
        workers.shutdown()


def test_owners_take_turns_so_a_late_owner_does_not_wait_for_all_that_was_queued_before(jobs: Jobs) -> None:
    workers = RecordWorkers(1)
    try:
        for index in range(1, 4):
            workers.submit("early", jobs.job(f"early-{index}"))
        workers.submit("late", jobs.job("late-1"))
        started: list[str] = []
        while "late-1" not in started:  # run the jobs one by one, in the order the thread takes them
            started = jobs.wait_started(len(started) + 1)
            jobs.release(started[-1])
        assert "early-3" not in started
        jobs.release("early-2")
        jobs.release("early-3")
    finally:
        workers.shutdown()


def test_a_shutdown_fails_queued_jobs_and_stops_a_running_one_at_its_next_checkpoint(jobs: Jobs) -> None:
    workers = RecordWorkers(1)
    running = workers.submit("a", jobs.job("never released"))
    queued = workers.submit("b", jobs.job("never started"))
    jobs.wait_started(1)
    workers.shutdown()
    with pytest.raises(WorkStopped):
        queued.future.result(WAIT)
    with pytest.raises(WorkStopped):
        running.future.result(WAIT)
    assert jobs.started == ["never released"]
    with pytest.raises(WorkStopped):
        workers.submit("c", jobs.job("after")).future.result(WAIT)


def test_an_abandoned_job_stops_at_its_next_checkpoint_and_a_queued_one_never_runs(jobs: Jobs) -> None:
    workers = RecordWorkers(1)
    try:
        running = workers.submit("a", jobs.job("abandoned while running"))
        queued = workers.submit("a", jobs.job("abandoned while queued"))
        follower = workers.submit("b", jobs.job("next"))
        jobs.wait_started(1)
        workers.abandon(queued)
        workers.abandon(running)
        with pytest.raises(WorkStopped):
            running.future.result(WAIT)
        assert jobs.wait_started(2) == ["abandoned while running", "next"]
        jobs.release("next")
        assert follower.future.result(WAIT) == "next"
        assert queued.future.cancelled()
    finally:
        workers.shutdown()
