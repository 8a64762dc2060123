"""`odradek broker` with a TLS listener whose JKS or PKCS12 store cannot be opened exits non-zero with
one line on stderr naming the setting, and never the password."""

from __future__ import annotations

from pathlib import Path

import pytest
import trustme

from tests.integration.test_broker_startup_errors import assert_refused_in_one_line, config_file, run_broker
from tests.support.broker_process import free_port
from tests.support.java_stores import key_store, trust_store

pytestmark = pytest.mark.timeout(60)


def _tls_broker(tmp_path: Path, store_type: str, **settings: str) -> list[str]:
    ca = trustme.CA()
    stores = {
        "listeners": f"SSL://127.0.0.1:{free_port()}",
        "log.dirs": str(tmp_path / "data"),
        "ssl.keystore.type": store_type,
        "ssl.keystore.location": str(
            key_store(ca.issue_cert("127.0.0.1"), tmp_path / "k", store_type, "store-pw")
        ),
        "ssl.keystore.password": "store-pw",
        "ssl.truststore.type": store_type,
        "ssl.truststore.location": str(trust_store(ca, tmp_path / "t", store_type, "trust-pw")),
        "ssl.truststore.password": "trust-pw",
        **settings,
    }
    return config_file(tmp_path / "server.properties", stores)


@pytest.mark.parametrize("store_type", ["JKS", "PKCS12"])
@pytest.mark.parametrize(
    ("setting", "named"),
    [
        ("ssl.keystore.password", "ssl.keystore.location"),
        ("ssl.truststore.password", "ssl.truststore.location"),
        ("ssl.key.password", "ssl.keystore.location"),
    ],
)
def test_a_wrong_store_password_refuses_to_start_in_one_line(
    tmp_path: Path, store_type: str, setting: str, named: str
) -> None:
    result = run_broker(*_tls_broker(tmp_path, store_type, **{setting: "wrong-pw"}))
    line = assert_refused_in_one_line(result, named, "cannot be loaded")
    assert "wrong-pw" not in result.stderr + result.stdout
    assert line.startswith("odradek broker: ")
