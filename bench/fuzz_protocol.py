"""Hostile-input fuzzer for the protocol codec: random and mutated frames into every decoder.

    .venv/bin/python bench/fuzz_protocol.py                      # 2,000,000 cases
    .venv/bin/python bench/fuzz_protocol.py --cases 100000 --seed 7
    .venv/bin/python bench/fuzz_protocol.py --seconds 600        # as many cases as fit in ten minutes

Seeds are valid frames of every request (through `frames.decode_request`) and every response (through
`frames.decode_response` with the api key and version the seed was written at), built from random
messages at every version. Each case mutates a seed (bit flips, truncation, length fields set to
2^31-1 / -1 / -2, huge and overlong varints, spliced frames, random bytes) and decodes it. A case passes
when the decoder raises CodecError, or returns a message that encodes again (and whose re-encoding is
stable); anything else is a failure. Two more bounds are checked:

- time: every case runs under a CPU-time alarm (`--case-seconds`), and the slowest case is reported;
- memory: every `--memory-every`-th case runs under tracemalloc, and the peak it allocates must stay
  below MEMORY_FACTOR x the frame's size + MEMORY_CONSTANT, so no length or count field can make the
  decoder allocate beyond what the frame holds.

The exit status is 1 if any case failed. `tests/unit/protocol/test_fuzz_smoke.py` runs 10,000 cases.
"""

from __future__ import annotations

import argparse
import contextlib
import random
import signal
import struct
import sys
import time
import traceback
import tracemalloc
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from types import FrameType
from typing import Any

from odradek.protocol.codec_error import CodecError
from odradek.protocol.frames import decode_request, decode_response, encode_request, encode_response
from odradek.protocol.messages import REQUESTS, RESPONSES
from odradek.protocol.schema import FieldSpec, Message, Struct

#: Python objects cost tens of bytes each and every one decoded needs at least one byte of frame, so the
#: bound is generous per byte; what it rules out is an allocation driven by a length field.
MEMORY_FACTOR = 64
MEMORY_CONSTANT = 64 * 1024
#: Below this size the constant part of a peak (exceptions, small objects) dominates any ratio.
RATIO_MIN_FRAME = 1024
DEFAULT_CASES = 2_000_000
DEFAULT_CASE_SECONDS = 1.0


@dataclass(frozen=True)
class Seed:
    """A valid frame (without its size prefix) and how to decode it."""

    kind: str  # "request" or "response"
    api_key: int
    version: int
    frame: bytes


@dataclass
class Failure:
    seed: Seed
    mutation: str
    frame: bytes
    problem: str

    def describe(self) -> str:
        return (
            f"{self.seed.kind} api_key={self.seed.api_key} v{self.seed.version} via {self.mutation}: "
            f"{self.problem}\n  frame ({len(self.frame)} bytes): {self.frame[:256].hex()}"
        )


@dataclass
class FuzzReport:
    cases: int = 0
    decoded: int = 0
    rejected: int = 0
    failures: list[Failure] = field(default_factory=list)
    mutations: Counter[str] = field(default_factory=Counter)
    errors: Counter[str] = field(default_factory=Counter)
    slowest_case_seconds: float = 0.0  # wall clock: includes waiting for a busy machine
    slowest_case_cpu_seconds: float = 0.0
    memory_checked: int = 0
    largest_peak_bytes: int = 0
    largest_peak_frame_bytes: int = 0
    largest_ratio: float = 0.0  # peak / frame size, among frames of at least RATIO_MIN_FRAME bytes
    elapsed_seconds: float = 0.0
    seeds: int = 0

    def summary(self) -> str:
        rate = self.cases / self.elapsed_seconds if self.elapsed_seconds else 0.0
        lines = [
            f"cases: {self.cases:,} in {self.elapsed_seconds:.1f} s ({rate:,.0f}/s), {self.seeds:,} seeds",
            f"decoded: {self.decoded:,}  rejected with CodecError: {self.rejected:,}  "
            f"failures: {len(self.failures):,}",
            f"slowest case: {self.slowest_case_cpu_seconds * 1e3:.2f} ms CPU, "
            f"{self.slowest_case_seconds * 1e3:.2f} ms wall",
            f"memory-checked cases: {self.memory_checked:,}; largest peak {self.largest_peak_bytes:,} B "
            f"for a {self.largest_peak_frame_bytes:,} B frame; largest peak/frame ratio "
            f"{self.largest_ratio:.1f} for frames >= {RATIO_MIN_FRAME} B "
            f"(bound {MEMORY_FACTOR} x frame + {MEMORY_CONSTANT:,} B)",
            "mutations: " + ", ".join(f"{name} {count:,}" for name, count in sorted(self.mutations.items())),
            "errors: " + ", ".join(f"{name} {count:,}" for name, count in self.errors.most_common()),
        ]
        lines += [failure.describe() for failure in self.failures[:20]]
        return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--cases", type=int, default=None, help=f"number of cases (default {DEFAULT_CASES:,})"
    )
    parser.add_argument("--seconds", type=float, default=None, help="stop after this long")
    parser.add_argument("--seed", type=int, default=None, help="random seed (default: random, printed)")
    parser.add_argument("--memory-every", type=int, default=20, help="tracemalloc every N-th case")
    parser.add_argument("--case-seconds", type=float, default=DEFAULT_CASE_SECONDS, help="CPU bound per case")
    args = parser.parse_args(argv)
    cases = args.cases if args.cases is not None else (None if args.seconds else DEFAULT_CASES)
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(2**32)
    print(f"seed {seed}", flush=True)
    report = fuzz(
        cases=cases,
        seconds=args.seconds,
        seed=seed,
        memory_every=args.memory_every,
        case_seconds=args.case_seconds,
        progress=True,
    )
    print(report.summary())
    return 1 if report.failures else 0


# ----- the fuzzing loop -------------------------------------------------------------------------------


class CaseTimeout(Exception):
    """Raised from the CPU-time alarm inside a case that took too long."""


def fuzz(
    cases: int | None = 10_000,
    seconds: float | None = None,
    seed: int = 0,
    memory_every: int = 20,
    case_seconds: float = DEFAULT_CASE_SECONDS,
    progress: bool = False,
    warm_up: bool = True,
) -> FuzzReport:
    """Run `cases` cases (or until `seconds` pass); never raises for a bad case, reports it instead."""
    rng = random.Random(seed)
    corpus = seed_corpus(rng)
    if warm_up:
        # Compile every decoder first, so that compiling is not counted as a case's time or memory. A seed
        # that does not decode is not stopped here: the "valid" cases will report it.
        for seed_frame in corpus:
            with contextlib.suppress(Exception):
                decode_seed(seed_frame, seed_frame.frame)
    report = FuzzReport(seeds=len(corpus))
    started = time.perf_counter()
    deadline = started + seconds if seconds is not None else None
    previous = signal.signal(signal.SIGPROF, _on_alarm)
    next_progress = started + 10
    try:
        while cases is None or report.cases < cases:
            if deadline is not None and report.cases % 256 == 0 and time.perf_counter() > deadline:
                break
            target = rng.choice(corpus)
            mutation, frame = mutate(target, rng, corpus)
            check_memory = memory_every > 0 and report.cases % memory_every == 0
            run_case(report, target, mutation, frame, case_seconds, check_memory)
            if progress and report.cases % 4096 == 0 and time.perf_counter() > next_progress:
                next_progress += 10
                elapsed = time.perf_counter() - started
                print(
                    f"  {report.cases:,} cases, {elapsed:.0f} s, {len(report.failures)} failures", flush=True
                )
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.signal(signal.SIGPROF, previous)
    report.elapsed_seconds = time.perf_counter() - started
    return report


def _on_alarm(signum: int, frame: FrameType | None) -> None:
    raise CaseTimeout


def run_case(
    report: FuzzReport, target: Seed, mutation: str, frame: bytes, case_seconds: float, check_memory: bool
) -> None:
    report.cases += 1
    report.mutations[mutation] += 1
    problem = None
    if check_memory:
        tracemalloc.start()
    signal.setitimer(signal.ITIMER_PROF, case_seconds)
    start = time.perf_counter()
    start_cpu = time.process_time()
    try:
        decoded = decode_seed(target, frame)
        report.decoded += 1
        problem = reencode_problem(target, decoded)
    except CaseTimeout:
        problem = f"took more than {case_seconds} s of CPU"
    except CodecError as error:
        report.rejected += 1
        report.errors[type(error).__name__] += 1
    except Exception as error:
        problem = "".join(traceback.format_exception_only(error)).strip()
        problem += "\n" + "".join(traceback.format_tb(error.__traceback__)[-3:])
    finally:
        elapsed_cpu = time.process_time() - start_cpu
        elapsed = time.perf_counter() - start
        signal.setitimer(signal.ITIMER_PROF, 0)
    report.slowest_case_seconds = max(report.slowest_case_seconds, elapsed)
    report.slowest_case_cpu_seconds = max(report.slowest_case_cpu_seconds, elapsed_cpu)
    if check_memory:
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        report.memory_checked += 1
        if len(frame) >= RATIO_MIN_FRAME:
            report.largest_ratio = max(report.largest_ratio, peak / len(frame))
        if peak > report.largest_peak_bytes:
            report.largest_peak_bytes = peak
            report.largest_peak_frame_bytes = len(frame)
        if peak > MEMORY_FACTOR * len(frame) + MEMORY_CONSTANT and problem is None:
            problem = f"allocated {peak:,} bytes for a {len(frame):,}-byte frame"
    if problem is not None:
        report.failures.append(Failure(target, mutation, frame, problem))


def decode_seed(target: Seed, frame: bytes) -> Any:
    if target.kind == "request":
        return decode_request(frame)
    return decode_response(frame, target.api_key, target.version)


def reencode_problem(target: Seed, decoded: Any) -> str | None:
    """What the decoder accepted must encode again, and encoding what that decodes to is stable."""
    if target.kind == "request":
        header, body = decoded
        cls: type[Message] = REQUESTS[header.request_api_key]
        version = header.request_api_version
    else:
        _, body = decoded
        cls, version = RESPONSES[target.api_key], target.version
    try:
        first = body.encode(version)
        second = cls.decode(first, version).encode(version)
    except CodecError as error:
        return f"decoded, but then {type(error).__name__}: {error}"
    if first != second:
        return "encode(decode(encode(message))) differs from encode(message)"
    return None


# ----- seeds: valid frames of every request and response at every version -----------------------------


def seed_corpus(rng: random.Random, per_version: int = 2) -> list[Seed]:
    corpus = []
    for registry in (REQUESTS, RESPONSES):
        for cls in registry.values():
            for version in range(cls.VERSIONS.low, cls.VERSIONS.high + 1):
                for _ in range(per_version):
                    message = random_message(cls, version, rng)
                    correlation_id = rng.randrange(-(2**31), 2**31)
                    if cls.KIND == "request":
                        client_id = rng.choice([None, "", "fuzz", random_text(rng)])
                        frame = encode_request(message, version, correlation_id, client_id)  # type: ignore[arg-type]
                    else:
                        frame = encode_response(message, version, correlation_id)  # type: ignore[arg-type]
                    corpus.append(Seed(cls.KIND, cls.API_KEY, version, frame[4:]))
    return corpus


_INTEGER_RANGES = {
    "int8": (-(2**7), 2**7 - 1),
    "int16": (-(2**15), 2**15 - 1),
    "int32": (-(2**31), 2**31 - 1),
    "int64": (-(2**63), 2**63 - 1),
    "uint16": (0, 2**16 - 1),
    "uint32": (0, 2**32 - 1),
}


def random_message(cls: type[Message], version: int, rng: random.Random) -> Message:
    """A message with random values at every field present at `version` (unknown tags included)."""
    message: Message = _random_struct(cls, version, version in cls.FLEXIBLE, rng, depth=0)
    return message


def _random_struct(cls: type[Struct], version: int, flexible: bool, rng: random.Random, depth: int) -> Struct:
    values = {}
    for spec in cls.FIELDS:
        if spec.present_in(version) and not (spec.is_tagged_in(version) and rng.random() < 0.5):
            values[spec.name] = _random_value(spec, version, flexible, rng, depth)
    struct_value = cls(**values)
    if flexible and rng.random() < 0.2:
        known = {s.tag for s in cls.FIELDS if s.is_tagged_in(version)}
        tags = {rng.choice([rng.randrange(16), rng.randrange(2**31)]) for _ in range(rng.randrange(1, 3))}
        struct_value.unknown_tagged_fields = {
            t: rng.randbytes(rng.randrange(6)) for t in tags - known
        } or None
    return struct_value


def _random_value(spec: FieldSpec, version: int, flexible: bool, rng: random.Random, depth: int) -> Any:
    if version in spec.nullable and rng.random() < 0.15:
        return None
    if spec.kind == "struct":
        assert spec.struct is not None
        return _random_struct(spec.struct, version, flexible, rng, depth + 1)
    if spec.kind == "array":
        if depth == 0 and rng.random() < 0.1:
            count = rng.randrange(20, 60)  # now and then a large frame, where memory bounds matter most
        else:
            count = rng.choice([0, 1, 1, 2, 3]) if depth < 3 else rng.choice([0, 1])
        if spec.struct is not None:
            return [_random_struct(spec.struct, version, flexible, rng, depth + 1) for _ in range(count)]
        assert spec.element is not None
        return [_random_primitive(spec.element, rng) for _ in range(count)]
    return _random_primitive(spec.kind, rng)


def _random_primitive(kind: str, rng: random.Random) -> Any:
    if kind in _INTEGER_RANGES:
        low, high = _INTEGER_RANGES[kind]
        return rng.choice(
            [0, max(low, -1), low, high, rng.randint(low, high), rng.randint(max(low, -300), min(high, 300))]
        )
    if kind == "bool":
        return rng.random() < 0.5
    if kind == "float64":
        return rng.choice([0.0, -1.5, rng.uniform(-1e300, 1e300), float("inf")])
    if kind == "uuid":
        return uuid.UUID(int=rng.choice([0, rng.getrandbits(128)]))
    if kind == "string":
        return random_text(rng)
    if kind in ("bytes", "records"):
        return rng.randbytes(rng.choice([0, 1, 8, 61, 200]))
    raise AssertionError(kind)


def random_text(rng: random.Random) -> str:
    length = rng.choice([0, 1, 3, 10, 40])
    points = []
    for _ in range(length):
        point = rng.choice(
            [rng.randrange(0x20, 0x7F), rng.randrange(0x80, 0xD800), rng.randrange(0xE000, 0x110000)]
        )
        points.append(chr(point))
    return "".join(points)


# ----- mutations -----------------------------------------------------------------------------------------

_INT32_POISON = [2**31 - 1, -1, -2, -(2**31), 0x10000, 0x7FFFFF]
_INT16_POISON = [2**15 - 1, -1, -2, -(2**15)]
_VARINT_POISON = [
    b"\xff\xff\xff\xff\x0f",  # 2^32 - 1
    b"\xff\xff\xff\xff\x07",  # 2^31 - 1
    b"\x80\x80\x80\x80\x08",  # 2^31
    b"\xfe\xff\xff\xff\x0f",  # 2^32 - 2
    b"\xff\xff\xff\xff\xff\x01",  # six bytes: longer than any 32-bit varint
    b"\xff" * 12,
    b"\x00",  # compact null / count 0
    b"\x80\x01",  # 128, minimal
    b"\x81\x00",  # 1, overlong
]


def _flip_bits(frame: bytes, rng: random.Random) -> bytes:
    if not frame:
        return frame
    out = bytearray(frame)
    for _ in range(rng.randrange(1, 5)):
        out[rng.randrange(len(out))] ^= 1 << rng.randrange(8)
    return bytes(out)


def _truncate(frame: bytes, rng: random.Random) -> bytes:
    return frame[: rng.randrange(len(frame) + 1)]


def _extend(frame: bytes, rng: random.Random) -> bytes:
    return frame + rng.randbytes(rng.randrange(1, 17))


def _poison_int32(frame: bytes, rng: random.Random) -> bytes:
    if len(frame) < 4:
        return frame
    out = bytearray(frame)
    struct.pack_into(">i", out, rng.randrange(len(out) - 3), rng.choice(_INT32_POISON))
    return bytes(out)


def _poison_int16(frame: bytes, rng: random.Random) -> bytes:
    if len(frame) < 2:
        return frame
    out = bytearray(frame)
    struct.pack_into(">h", out, rng.randrange(len(out) - 1), rng.choice(_INT16_POISON))
    return bytes(out)


def _poison_varint(frame: bytes, rng: random.Random) -> bytes:
    at = rng.randrange(len(frame) + 1)
    poison = rng.choice(_VARINT_POISON)
    replaced = rng.choice([0, 1, len(poison)])  # insert, overwrite one byte, or overwrite as many
    return frame[:at] + poison + frame[at + replaced :]


def _set_byte(frame: bytes, rng: random.Random) -> bytes:
    if not frame:
        return frame
    at = rng.randrange(len(frame))
    return frame[:at] + bytes([rng.choice([0x00, 0x01, 0x7F, 0x80, 0xFE, 0xFF])]) + frame[at + 1 :]


def _delete_run(frame: bytes, rng: random.Random) -> bytes:
    at = rng.randrange(len(frame) + 1)
    return frame[:at] + frame[at + rng.randrange(1, 9) :]


def _duplicate_run(frame: bytes, rng: random.Random) -> bytes:
    at = rng.randrange(len(frame) + 1)
    run = frame[at : at + rng.randrange(1, 33)]
    return frame[:at] + run + frame[at:]


MUTATORS: dict[str, Callable[[bytes, random.Random], bytes]] = {
    "flip_bits": _flip_bits,
    "truncate": _truncate,
    "extend": _extend,
    "poison_int32": _poison_int32,
    "poison_int16": _poison_int16,
    "poison_varint": _poison_varint,
    "set_byte": _set_byte,
    "delete_run": _delete_run,
    "duplicate_run": _duplicate_run,
}
_MUTATOR_NAMES = list(MUTATORS)


def mutate(target: Seed, rng: random.Random, corpus: list[Seed]) -> tuple[str, bytes]:
    """(what was done, the frame to decode) for one case."""
    roll = rng.random()
    if roll < 0.02:
        return "valid", target.frame
    if roll < 0.08:
        return "random_bytes", _random_frame(target, rng)
    if roll < 0.12:
        other = rng.choice(corpus).frame
        return "splice", target.frame[: rng.randrange(len(target.frame) + 1)] + other[
            rng.randrange(len(other) + 1) :
        ]
    frame = target.frame
    names = []
    for _ in range(rng.choice([1, 1, 1, 2, 3])):
        name = rng.choice(_MUTATOR_NAMES)
        names.append(name)
        frame = MUTATORS[name](frame, rng)
    return "+".join(names) if len(names) == 1 else "stacked", frame


def _random_frame(target: Seed, rng: random.Random) -> bytes:
    body = rng.randbytes(rng.randrange(64))
    if target.kind == "request" and rng.random() < 0.7:
        # Keep a plausible header so the random bytes reach a body decoder.
        return target.frame[:4] + body
    return body


def iter_seeds(seed: int = 0) -> Iterator[Seed]:
    """The seed corpus for `seed` (for tests that want valid frames)."""
    yield from seed_corpus(random.Random(seed))


if __name__ == "__main__":
    sys.exit(main())
