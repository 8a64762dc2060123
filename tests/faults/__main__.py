"""`python -m tests.faults`: one fault run, its report written as JSON; exit status 1 if not clean."""

from __future__ import annotations

import argparse
import faulthandler
import json
import signal
import sys
import tempfile
import threading
import time
from pathlib import Path
from types import FrameType

from tests.faults.runner import run


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.faults", description=__doc__)
    parser.add_argument("--brokers", type=int, default=3, help="3 to 5 brokers")
    parser.add_argument("--faults", type=int, default=50, help="how many faults to inject")
    parser.add_argument("--seed", type=int, default=int(time.time()), help="seed of the schedule")
    parser.add_argument("--report", type=Path, help="where to write the JSON report (stdout if absent)")
    parser.add_argument("--keep", action="store_true", help="keep the brokers' data and logs afterwards")
    args = parser.parse_args(argv)
    # SIGTERM ends the run like Ctrl-C: through the `finally` that stops every process and heals every cut.
    # Both are also remembered: a KeyboardInterrupt raised while the interpreter runs a finalizer is
    # printed and dropped ("Exception ignored"), and the run then went on to report success.
    signal.signal(signal.SIGTERM, _interrupt)
    signal.signal(signal.SIGINT, _interrupt)
    # `kill -USR1 <pid>` prints every thread's stack: where a long run is waiting
    faulthandler.register(signal.SIGUSR1, all_threads=True)
    base = Path(tempfile.mkdtemp(prefix="odradek-faults-"))
    print(f"brokers' data and logs in {base}", file=sys.stderr, flush=True)
    keep = args.keep
    try:
        report = run(
            base,
            args.brokers,
            args.faults,
            args.seed,
            log=lambda line: print(line, file=sys.stderr),
            interrupted=_interrupted.is_set,
        )
        # a run that lost, duplicated or reordered anything keeps its brokers' logs to find out why
        keep = keep or not report["anomalies"]["clean"]
    except Exception:
        _print_log_tails(base)  # a failed run's data is removed below: say what the brokers said
        raise
    finally:
        if not keep:
            import shutil

            shutil.rmtree(base, ignore_errors=True)
        else:
            print(f"data and logs kept in {base}", file=sys.stderr)
    text = json.dumps(report, indent=2, sort_keys=True)
    if args.report:
        args.report.parent.mkdir(parents=True, exist_ok=True)
        args.report.write_text(text + "\n")
    else:
        print(text)
    anomalies = report["anomalies"]
    print(f"{args.faults} faults in {report['duration_s']} s: {anomalies['counts']}", file=sys.stderr)
    # a run in which nothing was acknowledged proves nothing
    kept = anomalies["clean"] and report["not_enough_replicas"]["holds"]
    if _interrupted.is_set():
        return 128 + signal.SIGINT  # an interrupted run never reports success
    return 0 if kept and report["summary"]["acknowledged"] > 0 else 1


def _print_log_tails(base: Path, lines: int = 30) -> None:
    for broker_log in sorted(base.glob("*.log")):
        tail = broker_log.read_text(errors="replace").splitlines()[-lines:]
        print(f"--- last {len(tail)} lines of {broker_log.name}", file=sys.stderr)
        print("\n".join(tail), file=sys.stderr)


_interrupted = threading.Event()


def _interrupt(signum: int, frame: FrameType | None) -> None:
    _interrupted.set()
    raise KeyboardInterrupt


if __name__ == "__main__":
    sys.exit(main())
