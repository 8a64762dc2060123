"""Which query failures the run restarts from the checkpoint instead of ending on.

Spark starts the Python worker behind a Python streaming data source as a plain process and waits a
fixed 10 s (not a setting: PythonWorkerFactory.createSimpleWorker) for it to connect back. On a loaded
machine importing PySpark can take longer, and the query fails before reading anything. Restarting it
from its checkpoint is Structured Streaming's own recovery: no batch is lost or written twice."""

from __future__ import annotations

#: How many times one run restarts its query after such a failure before giving up on it.
MAX_WORKER_RESTARTS = 3

_CONNECT_BACK = "Python worker failed to connect back"


def worker_did_not_connect_back(failure: object) -> bool:
    return _CONNECT_BACK in str(failure)
