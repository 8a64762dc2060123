"""Two AlterClientQuotas at once on a single node failed one of them with UNKNOWN_SERVER_ERROR: each
change wrote the whole quota file from a worker thread of its own, both through the same temporary
file, so one renamed it away under the other (FileNotFoundError), and the shared entity map was
changed while another thread read it. The file could also end with an older snapshot than the last
acknowledged change. Found by the Java suite's AdminQuotasTest, whose two client lines alter quotas
side by side. Writes of the store are now one at a time, each of everything acknowledged before it.
"""

from __future__ import annotations

import threading
from pathlib import Path

from odradek.cluster.metadata.client_quotas import LocalQuotaStore
from odradek.security.quota_entities import QuotaEntity

WRITERS = 8
WRITES_EACH = 25


def test_concurrent_writes_of_the_quota_store_all_succeed_and_all_persist(tmp_path: Path) -> None:
    store = LocalQuotaStore(tmp_path)
    start = threading.Barrier(WRITERS)
    failures: list[BaseException] = []

    def write(writer: int) -> None:
        start.wait()
        for n in range(WRITES_EACH):
            try:
                store.write_file(QuotaEntity(user=f"user-{writer}-{n}"), {"producer_byte_rate": 1024.0 + n})
            except Exception as error:  # every failure is the finding
                failures.append(error)

    threads = [threading.Thread(target=write, args=(w,)) for w in range(WRITERS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert failures == []
    reloaded = LocalQuotaStore(tmp_path).load()
    assert len(reloaded) == WRITERS * WRITES_EACH
    assert reloaded[QuotaEntity(user="user-3-7")] == {"producer_byte_rate": 1031.0}
