"""10,000 hostile frames through every request and response decoder (bench/fuzz_protocol.py, small).

The full run (`.venv/bin/python bench/fuzz_protocol.py`, two million cases) is not part of the suite.
Set ODRADEK_FUZZ_SEED to replay a seed printed by a failing run.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import time
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

REPO_ROOT = Path(__file__).resolve().parents[3]
SEED = int(os.environ.get("ODRADEK_FUZZ_SEED", "20240611"))


def _load_fuzz_module() -> ModuleType:
    path = REPO_ROOT / "bench" / "fuzz_protocol.py"
    spec = importlib.util.spec_from_file_location("fuzz_protocol", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["fuzz_protocol"] = module  # dataclasses look their module up while the class is built
    spec.loader.exec_module(module)
    return module


fuzz_protocol = _load_fuzz_module()


def test_ten_thousand_hostile_frames() -> None:
    report = fuzz_protocol.fuzz(cases=10_000, seed=SEED, memory_every=3, case_seconds=1.0)
    print(report.summary())
    assert report.failures == [], report.summary()
    assert report.cases == 10_000
    # Both outcomes happen: mutated frames are not all rejected at the first byte.
    assert report.decoded > 100
    assert report.rejected > 5_000
    assert report.memory_checked > 3_000
    assert report.slowest_case_cpu_seconds < 1.0


def test_every_seed_decodes() -> None:
    for seed in fuzz_protocol.iter_seeds(SEED):
        fuzz_protocol.decode_seed(seed, seed.frame)


def test_the_memory_bound_catches_a_length_driven_allocation(monkeypatch: pytest.MonkeyPatch) -> None:
    decode_request, decode_response = fuzz_protocol.decode_request, fuzz_protocol.decode_response

    def allocating_request_decoder(frame: bytes) -> Any:
        allocated = bytearray(2**24)
        return decode_request(frame) if allocated else None

    def allocating_response_decoder(frame: bytes, api_key: int, version: int) -> Any:
        allocated = bytearray(2**24)
        return decode_response(frame, api_key, version) if allocated else None

    monkeypatch.setattr(fuzz_protocol, "decode_request", allocating_request_decoder)
    monkeypatch.setattr(fuzz_protocol, "decode_response", allocating_response_decoder)
    report = fuzz_protocol.fuzz(cases=20, seed=SEED, memory_every=1, warm_up=False)
    assert len(report.failures) == 20
    assert "allocated" in report.failures[0].problem


@pytest.mark.timeout(30)
def test_the_time_bound_catches_a_hang(monkeypatch: pytest.MonkeyPatch) -> None:
    def hanging_decoder(frame: bytes, *args: Any) -> Any:
        total = 0
        for step in range(10**10):  # minutes of pure CPU, unless the alarm stops it
            total += step

    monkeypatch.setattr(fuzz_protocol, "decode_request", hanging_decoder)
    monkeypatch.setattr(fuzz_protocol, "decode_response", hanging_decoder)
    started = time.perf_counter()
    report = fuzz_protocol.fuzz(cases=3, seed=SEED, memory_every=0, case_seconds=0.05, warm_up=False)
    assert time.perf_counter() - started < 4
    assert [failure.problem for failure in report.failures] == ["took more than 0.05 s of CPU"] * 3


def test_a_message_that_cannot_be_encoded_again_is_a_failure(monkeypatch: pytest.MonkeyPatch) -> None:
    decode_request, decode_response = fuzz_protocol.decode_request, fuzz_protocol.decode_response

    def spoil(decoded: Any) -> Any:
        for value in vars(type(decoded[1])).get("__slots__", ()):
            setattr(decoded[1], value, object())  # no field encodes an object()
        return decoded

    monkeypatch.setattr(fuzz_protocol, "decode_request", lambda frame: spoil(decode_request(frame)))
    monkeypatch.setattr(fuzz_protocol, "decode_response", lambda *args: spoil(decode_response(*args)))
    report = fuzz_protocol.fuzz(cases=300, seed=SEED, memory_every=0)
    # Every decoded message is spoiled, but one with no field at its version still encodes.
    assert 0 < len(report.failures) <= report.decoded
    assert all("decoded, but then CodecError" in failure.problem for failure in report.failures)


def test_a_non_codec_exception_is_a_failure(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken_decoder(frame: bytes, *args: Any) -> Any:
        raise KeyError("oops")

    monkeypatch.setattr(fuzz_protocol, "decode_request", broken_decoder)
    monkeypatch.setattr(fuzz_protocol, "decode_response", broken_decoder)
    report = fuzz_protocol.fuzz(cases=5, seed=SEED, memory_every=0, warm_up=False)
    assert len(report.failures) == 5
    assert "KeyError" in report.failures[0].problem
