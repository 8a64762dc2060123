"""One broker with a listener of each security protocol (PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL, and
MTLS: SSL requiring client certificates), shared by the security interop tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.security import SecureBroker, start_secure_broker


@pytest.fixture(scope="session")
def secure_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SecureBroker]:
    broker = start_secure_broker(tmp_path_factory.mktemp("security"))
    try:
        yield broker
    finally:
        broker.process.stop()
