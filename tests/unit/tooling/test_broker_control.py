"""tests/support/broker_control.py: the Java suite's channel for killing and restarting brokers."""

from __future__ import annotations

import threading
import urllib.error
import urllib.request

import pytest

from tests.support.broker_control import BrokerControl, serving


def _post(url: str) -> tuple[int, str]:
    request = urllib.request.Request(url, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def test_a_kill_and_a_restart_reach_the_broker_named() -> None:
    steps: list[tuple[str, int]] = []
    control = BrokerControl(
        [1, 2, 3], lambda n: steps.append(("kill", n)), lambda n: steps.append(("restart", n))
    )
    with serving(control) as url:
        assert _post(f"{url}/brokers/2/kill") == (200, "ok")
        assert _post(f"{url}/brokers/2/restart") == (200, "ok")
    assert steps == [("kill", 2), ("restart", 2)] == control.done


def test_every_step_runs_on_one_thread_that_outlives_the_request() -> None:
    # A broker is started with PR_SET_PDEATHSIG, which fires when the thread that started it ends: a
    # broker restarted from the request's own thread died as soon as the answer was sent.
    threads: list[threading.Thread] = []
    control = BrokerControl([1], lambda n: threads.append(threading.current_thread()), lambda n: None)
    with serving(control) as url:
        _post(f"{url}/brokers/1/kill")
        _post(f"{url}/brokers/1/kill")
        assert threads[0] is threads[1]
        assert threads[0].is_alive()


@pytest.mark.parametrize("path", ["/brokers/4/kill", "/brokers/1/stop", "/brokers/x/kill", "/other"])
def test_an_unknown_node_or_step_is_not_found_and_nothing_is_done(path: str) -> None:
    control = BrokerControl([1, 2, 3], lambda n: pytest.fail("killed"), lambda n: pytest.fail("restarted"))
    with serving(control) as url:
        status, _ = _post(url + path)
    assert status == 404
    assert control.done == []


def test_a_failed_step_answers_500_with_why_and_the_next_step_is_served() -> None:
    def kill(node: int) -> None:
        raise RuntimeError(f"broker {node} is not running")

    control = BrokerControl([1], kill, lambda n: None)
    with serving(control) as url:
        status, body = _post(f"{url}/brokers/1/kill")
        assert (status, "broker 1 is not running" in body) == (500, True)
        assert _post(f"{url}/brokers/1/restart") == (200, "ok")
